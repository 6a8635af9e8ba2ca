/* backends.c: the backends a source can be: what each needs of the process's capabilities, and
 * source_new() that picks one */
#include <linux/capability.h>

#include "observe/backends.h"
#include "observe/source-bpf.h"
#include "observe/source-ptrace.h"

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

int source_new(const SourceOptions *o, Source **ret) {
        switch (o->backend) {
        case BACKEND_BPF:
                return source_bpf_new(o, ret);
        case BACKEND_PTRACE:
                return source_ptrace_new(o, ret);
        default:
                return -EINVAL;
        }
}
