/* policy-arch.h: the architectures a seccomp filter can tell apart, and the system calls
 * libseccomp names for each */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/eval.h"

typedef struct PolicyArch {
        uint32_t arch;   /* SCMP_ARCH_* */
        const char *name; /* libseccomp's: "x86_64", "x86", "x32", "aarch64", ... */
        uint32_t token;  /* what the kernel reports in seccomp_data.arch (x32: AUDIT_ARCH_X86_64) */
        uint32_t nr_lo, nr_hi; /* the numbers that belong to it under that token */
} PolicyArch;

const PolicyArch *policy_arch_lookup(uint32_t arch);
const PolicyArch *policy_arch_from_name(const char *name);
const PolicyArch *policy_arch_native(void);

typedef struct PolicySyscallName {
        const char *name; /* static for the life of the process */
        int32_t nr;
} PolicySyscallName;

/* Every system call libseccomp names for arch, by number. The list is built once per process and
 * shared (thread-safe); -ENOMEM. */
int policy_arch_syscalls(const PolicyArch *a, const PolicySyscallName **ret, size_t *ret_n);

/* The architectures whose calls reach the chain: the native one first, the ABIs a kernel of the
 * native architecture also runs (x86 and x32 on x86_64, arm on aarch64, ...), and every one whose
 * token the programs compare anything with. Into ret (room for all known ones), returns the
 * count. */
size_t policy_chain_arches(const ChainProgram *chain, size_t n, const PolicyArch **ret, size_t max);
#define POLICY_ARCH_MAX 20

/* Does some program of the chain compare the architecture word with an architecture's token? */
bool policy_chain_checks_arch(const ChainProgram *chain, size_t n);

/* Strict mode (SECCOMP_SET_MODE_STRICT): ALLOW for read, write, exit and rt_sigreturn (sigreturn
 * on the compat ABIs x86 and arm) in the ABI's numbers, KILL_THREAD for anything else (the
 * kernel's __secure_computing_strict()). On x32 everything is killed: the kernel compares x32
 * numbers with the i386 ones, which they never equal. */
uint32_t policy_arch_strict_verdict(const PolicyArch *a, int32_t nr);
/* The same on kernel (a KERNEL_VERSION; 0: the running one): what it exempts from seccomp
 * (seccomp_kernel_exempts()) runs in strict mode too. policy_arch_strict_verdict() is this for
 * the running kernel. */
uint32_t policy_arch_strict_verdict_kernel(const PolicyArch *a, int32_t nr, uint32_t kernel);

/* Strict mode as a classic-BPF program, for the native architecture and its compat ABIs (what
 * policy_arch_strict_verdict() says for each), so that it can be summarized as a chain. At most
 * POLICY_STRICT_PROGRAM_MAX instructions into out; returns the count. */
#define POLICY_STRICT_PROGRAM_MAX 64
size_t policy_strict_program(struct sock_filter *out);
