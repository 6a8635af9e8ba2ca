/* backends.c: the backends a source can be, and source_new() that picks one */
#include "source-backend.h"

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
