/* floor.bpf.c: the pointer-only iterator floor: an iter/task program that walks each task's
 * seccomp filter chain (task->seccomp.filter, then ->prev) and only counts the filters. It reads
 * no instructions, names nothing and sends no records: what a full scan cannot go below. */
#include "observe/bpf/kernel.h"

#include <bpf/bpf_helpers.h>

#include "floor.h"

char LICENSE[] SEC("license") = "GPL";

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/* As in scan.bpf.c: no chain is deeper than 32768 / 5 filters. */
#define MAX_CHAIN_WALK 8192

struct floor_counts counts;

SEC("iter/task")
int floor_tasks(struct bpf_iter__task *ctx) {
        struct task_struct *t = ctx->task;
        struct seccomp_filter *f;
        struct bpf_iter_num it;
        __u64 n = 0;

        if (!t)
                return 0;

        /* Plain loads (CO-RE relocated) through the trusted task pointer and the filters it
         * reaches: the cheapest reads BPF has. The walk is an open-coded iterator loop, as in
         * scan.bpf.c: the verifier checks its body once, where a plain bounded loop is walked
         * MAX_CHAIN_WALK times and makes the load itself cost tens of milliseconds. */
        f = t->seccomp.filter;
        bpf_iter_num_new(&it, 0, MAX_CHAIN_WALK);
        while (f && bpf_iter_num_next(&it)) {
                n++;
                f = f->prev;
        }
        bpf_iter_num_destroy(&it);
        if (f)
                counts.truncated++;

        counts.tasks++;
        counts.filters += n;
        return 0;
}
