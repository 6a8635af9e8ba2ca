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

struct chain_walk {
        struct seccomp_filter *f; /* the next filter, NULL past the root */
        __u64 n;
};

/* One step up a chain, as bpf_loop() calls it: 1 ends the loop. */
static long chain_walk_step(__u64 index, void *ctx) {
        struct chain_walk *w = ctx;
        struct seccomp_filter *f = w->f;

        if (!f)
                return 1;
        w->n++;
        w->f = f->prev;
        return 0;
}

SEC("iter/task")
int floor_tasks(struct bpf_iter__task *ctx) {
        struct task_struct *t = ctx->task;
        struct chain_walk w = {};

        if (!t)
                return 0;

        /* Plain loads (CO-RE relocated) through the trusted task pointer and the filters it
         * reaches: the cheapest reads BPF has. The walk is a bpf_loop(), as in scan.bpf.c: the
         * verifier checks its body once, where a plain bounded loop is walked MAX_CHAIN_WALK times
         * and makes the load itself cost tens of milliseconds. An open-coded iterator
         * (bpf_iter_num_*) is checked once too, but its three kfuncs are each looked up by name
         * in the kernel's BTF when the program loads, a walk over half of its 126,000 types:
         * 0.8 ms of a load of 2.5 ms. */
        w.f = t->seccomp.filter;
        bpf_loop(MAX_CHAIN_WALK, chain_walk_step, &w, 0);
        if (w.f)
                counts.truncated++;

        counts.tasks++;
        counts.filters += w.n;
        return 0;
}
