/* backends.c: the backends a source can be, and what each needs of the process's capabilities
 * (source_new(), which picks one, is in source.c: `sectreed scan` links this file and no source) */
#include <linux/capability.h>

#include "observe/backends.h"

#define CAP(c) (UINT64_C(1) << (c))

static const SourceCapabilities capabilities[_BACKEND_MAX] = {
        [BACKEND_BPF] = {
                /* BPF iterators and tracepoints; CAP_SYS_ADMIN alone still covers what CAP_BPF and
                 * CAP_PERFMON split off from it */
                .needed = CAP(CAP_BPF) | CAP(CAP_PERFMON) | CAP(CAP_SYS_ADMIN),
                .enough = CAP(CAP_SYS_ADMIN),
                .needed_for = "to load its BPF programs",
                .remedy = "run sectreed as root (its unit does)",
        },
        [BACKEND_PTRACE] = {
                .needed = CAP(CAP_SYS_ADMIN),
                .needed_for = "to read filters (PTRACE_SECCOMP_GET_FILTER)",
                .remedy = "run sectreed as root",
                /* another user's tasks cannot be seized without it */
                .wanted = CAP(CAP_SYS_PTRACE),
                .without = "only this user's own processes can be read",
        },
};

const SourceCapabilities *source_capabilities(Backend b) {
        return b >= 0 && b < _BACKEND_MAX && capabilities[b].needed_for ? &capabilities[b] : NULL;
}
