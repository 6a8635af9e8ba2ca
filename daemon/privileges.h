/* privileges.h: what sectreed needs of its credentials, said in one line when it lacks it, and one
 * summary of the threads a ptrace scan could not read */
#pragma once

#include "scan.h"

/* The capabilities a backend needs in the effective set: bpf: CAP_BPF, CAP_PERFMON and
 * CAP_SYS_ADMIN (BPF iterators and tracepoints); ptrace: CAP_SYS_ADMIN (PTRACE_SECCOMP_GET_FILTER)
 * and, for other users' processes, CAP_SYS_PTRACE. Returns 0, or -EPERM after one line naming
 * what is missing and what to do. A missing CAP_SYS_PTRACE alone is a warning: the caller's own
 * processes can still be read. */
int privileges_check(Backend backend);

/* One line about the threads a ptrace scan could not read, by reason (each thread at debug
 * level); nothing when there are none. */
void unreadable_report(const UnreadableTask *bad, size_t n_bad);
