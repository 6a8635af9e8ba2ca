/* eval.h: run seccomp classic-BPF programs and whole chains the way the kernel does */
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Run one program against data (assumed valid per prog_validate); returns the 32-bit value of
 * the RET that ended it. A run that would fault in the kernel (cannot happen on a validated
 * program) returns SECCOMP_RET_KILL_PROCESS. As in the kernel (checked against it by
 * test-eval): A and X start at 0, division by X == 0 ends the run returning 0 (KILL_THREAD),
 * shifts by X use X & 31, and "ld #len" / "ldx #len" give sizeof(struct seccomp_data). */
uint32_t prog_run(const struct sock_filter *insns, size_t n, const struct seccomp_data *data);

/* What a program can return when some words of the data are unknown (could be anything): a value
 * computed from one is unknown too, a jump that depends on one goes both ways, a RET of an unknown
 * A can return anything, and a division by an unknown X can return 0. */
typedef struct ProgOutcomes {
        uint32_t worst, best; /* the most and the least restrictive value some run returns
                               * (action_outranks()); KILL_PROCESS and ALLOW on overflow */
        bool overflow;        /* more than max_paths ways through it: anything is possible */
} ProgOutcomes;
/* unknown_words: bit i set when the 32-bit word at offset 4 * i of the data is unknown. prog_run()
 * is this with none unknown (one way through). */
void prog_run_unknown(const struct sock_filter *insns, size_t n, const struct seccomp_data *data,
                      uint32_t unknown_words, size_t max_paths, ProgOutcomes *ret);

typedef struct ChainProgram {
        const struct sock_filter *insns;
        size_t len;
} ChainProgram;

typedef struct EvalResult {
        uint32_t ret;      /* the full action value the kernel acts on (action | data) */
        size_t decided_by; /* index into the chain array (0 = newest) of the filter whose value won */
} EvalResult;

/* The kernel's precedence between the values of two filters of a chain: does cur, returned by a
 * filter walked after the one that returned best (walking goes newest first), replace it? Only a
 * strictly more restrictive action does (see chain_evaluate()). */
bool action_outranks(uint32_t cur, uint32_t best);

/* A kernel version as KERNEL_VERSION(major, minor, patch) from a release string ("6.18.4-amd64"):
 * 0 when it does not start with "MAJOR.MINOR". */
uint32_t kernel_version_parse(const char *release);
/* The running kernel's (uname(2)), read once. */
uint32_t kernel_version_running(void);

/* The system calls the kernel runs without consulting seccomp at all (seccomp_uprobe_exception():
 * the filters and strict mode alike): on x86_64, in the native ABI only, uretprobe (335) from
 * Linux 6.14 and uprobe (336) from Linux 6.18. kernel: a KERNEL_VERSION, 0 for the running one. */
#define SECCOMP_NR_URETPROBE_X86_64 335
#define SECCOMP_NR_UPROBE_X86_64 336
bool seccomp_kernel_exempts(uint32_t kernel, const struct seccomp_data *data);

/* Evaluate a chain, chain[0] being the newest filter (the task's head) and chain[n-1] the oldest,
 * with the kernel's precedence (seccomp_run_filters): every filter runs, the most restrictive
 * action wins (KILL_PROCESS > KILL_THREAD > TRAP > ERRNO > USER_NOTIF > TRACE > LOG > ALLOW),
 * and among equal actions the first filter walked (the newest) wins, with its data.
 * n == 0 yields ALLOW with decided_by = 0. As in the kernel, a chain where every filter allows
 * yields exactly SECCOMP_RET_ALLOW (any data bits dropped), decided_by = 0. */
EvalResult chain_evaluate(const ChainProgram *chain, size_t n, const struct seccomp_data *data);
/* chain_evaluate() as kernel (a KERNEL_VERSION; 0: the running one) does it: a call it exempts
 * (seccomp_kernel_exempts()) yields SECCOMP_RET_ALLOW, decided_by = 0, whatever the filters say.
 * chain_evaluate() is this for the running kernel. */
EvalResult chain_evaluate_kernel(const ChainProgram *chain, size_t n, const struct seccomp_data *data, uint32_t kernel);

/* Fill a seccomp_data for the native architecture from a syscall name or number and up to 6
 * arguments. Returns 0, or -EINVAL if the syscall is unknown to libseccomp. arch is an
 * AUDIT_ARCH_* value; 0 means the native one. SCMP_ARCH_X32 selects x32: the data then says
 * AUDIT_ARCH_X86_64, as the kernel does, with __X32_SYSCALL_BIT set in nr (also added to a
 * decimal number given without it). uretprobe and uprobe are known on x86_64 even where
 * libseccomp does not name them. */
int seccomp_data_from_syscall(const char *syscall, uint32_t arch, const uint64_t *args, size_t n_args,
                              struct seccomp_data *ret);
