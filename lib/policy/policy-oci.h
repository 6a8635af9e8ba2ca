/* policy-oci.h: a chain's effective policy as an OCI runtime-spec linux.seccomp object, the
 * profile container runtimes load through libseccomp */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "policy/policy-summary.h"

/* The profile of s: defaultAction (and defaultErrnoRet), architectures, and syscalls rules with
 * names, action, errnoRet and args (one comparison per argument and rule; ranges and masks as
 * SCMP_CMP_MASKED_EQ where no single comparison states them). Loaded through libseccomp it
 * decides every syscall of the listed architectures as the chain does.
 *
 * What the format cannot state exactly is listed in *ret_problems (a strv, each naming the
 * syscall or architecture, e.g. "ptrace: a condition on the instruction pointer"): conditions on
 * the instruction pointer or beyond the one-word forms, values computed from the arguments, TRAP
 * data, unknown actions, architectures that decide a name differently, an architecture the
 * chain refuses with something else than libseccomp's bad-architecture action (KILL_THREAD),
 * and numbers libseccomp does not name decided by number. Then, unless approximate, it fails
 * with -EDOM and gives no profile; with approximate such a syscall gets the most restrictive of
 * its actions for every argument, a differing architecture the native one's decisions, and a
 * refused architecture is left out. Every profile given has been loaded through libseccomp and
 * compared with the chain: the rules are tried in several orders (libseccomp refuses or loses
 * some overlapping rules in one order and not in another), and one libseccomp refuses in every
 * order is never given, even with approximate (-EDOM). An errno is stated as the kernel returns
 * it (capped at 4095), and at most 4094, what libseccomp takes: a larger one is a problem.
 * -ENOMEM. */
int policy_oci_profile(const PolicySummary *s, bool approximate, json_t **ret, char ***ret_problems);

/* The profile as JSON text (json_dumps() flags): numbers above INT64_MAX, which jansson's integers
 * cannot hold, written as the plain numbers OCI runtimes read. malloc'ed; NULL on OOM. */
char *policy_oci_dumps(const json_t *profile, size_t flags);
