/* floor.bpf.c: the pointer-only iterator floor: an iter/task program that walks each task's
 * seccomp filter chain (task->seccomp.filter, then ->prev) and only counts the filters. It reads
 * no instructions, names nothing and sends no records: what a full scan cannot go below. */
#include "observe/bpf/kernel.h"

#include <bpf/bpf_helpers.h>

#include "floor.h"

char LICENSE[] SEC("license") = "GPL";

/* As in scan.bpf.c: no chain is deeper than 32768 / 5 filters. */
#define MAX_CHAIN_WALK 8192

struct floor_counts counts;

SEC("iter/task")
int floor_tasks(struct bpf_iter__task *ctx) {
        struct task_struct *t = ctx->task;
        struct seccomp_filter *f;
        __u64 n = 0;

        if (!t)
                return 0;

        /* Plain loads (CO-RE relocated) through the trusted task pointer and the filters it
         * reaches: the cheapest reads BPF has. */
        f = t->seccomp.filter;
        for (int i = 0; i < MAX_CHAIN_WALK && f; i++) {
                n++;
                f = f->prev;
        }
        if (f)
                counts.truncated++;

        counts.tasks++;
        counts.filters += n;
        return 0;
}
