/* policy-filters.h: real filters for the policy tests: a container runtime's default profile
 * (containers-common's seccomp.json), systemd's SystemCallFilter= sets built the way systemd
 * builds them, and the filters firejail and bubblewrap install, captured from running sandboxes */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy-check.h"

#define CONTAINERS_SECCOMP_JSON "/usr/share/containers/seccomp.json"
#define BWRAP_EXAMPLE_FILTER "/usr/share/doc/bubblewrap/examples/flatpak.bpf"

/* ERRNO(1) for ptrace, everything else allowed; and ptrace allowed for PTRACE_TRACEME (arg0 == 0)
 * only, killed otherwise (x86_64 numbers, no architecture check). */
extern const struct sock_filter tests_prog_no_ptrace[4];
extern const struct sock_filter tests_prog_traceme_only[8];

/* The capabilities podman gives a container by default. */
extern const char *const tests_podman_caps[];

/* containers-common's default profile for podman's default capabilities, loaded as runc loads it. */
TestProg tests_prog_container_profile(void);

/* systemd's SystemCallFilter=SETS: one filter per local architecture (x86, x32, x86_64 on
 * x86_64; the native one last), each built as systemd builds it (default action, bad-architecture
 * action ALLOW, rules added for the architecture where they exist). sets is a list of syscall
 * names and @groups as systemd-analyze syscall-filter expands them; deny is the "~" form
 * (default ALLOW, KILL_PROCESS for the listed), else an allow list (default KILL_PROCESS).
 * Returns the number of filters in out, oldest first. */
size_t tests_progs_systemd(const char *const *sets, bool deny, TestProg *out, size_t max);

/* A sandbox that runs "sleep" under its tool's filters: bwrap with the filter of its flatpak
 * example, or firejail --seccomp with its default filter. The pid is of the sleeping process
 * (the sandbox's innermost one); stop it with tests_sandbox_stop(). Fails the test when the tool
 * cannot start it. */
typedef struct TestSandbox {
        pid_t tool; /* the process we started */
        pid_t sleeper;
} TestSandbox;
void tests_sandbox_start_bwrap(TestSandbox *s);
void tests_sandbox_start_firejail(TestSandbox *s);
void tests_sandbox_stop(TestSandbox *s);
