/* floor-walk.bpf.h: the pointer-only floor's chain walk, shared by its two forms (floor.bpf.c,
 * floor-oc.bpf.c) */
#pragma once

#include "observe/bpf/kernel.h"

#include <bpf/bpf_helpers.h>

#include "floor.h"

/* As in scan.bpf.c: no chain is deeper than 32768 / 5 filters. */
#define MAX_CHAIN_WALK 8192

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

/* Count t and the filters of its chain into c: the chain walk is a bpf_loop(), as in scan.bpf.c:
 * the verifier checks its body once, where a plain bounded loop is walked MAX_CHAIN_WALK times and
 * makes the load itself cost tens of milliseconds. An open-coded iterator (bpf_iter_num_*) is
 * checked once too, but its three kfuncs are each looked up by name in the kernel's BTF when the
 * program loads, a walk over half of its 126,000 types: 0.8 ms of a load of 2.5 ms. */
static __always_inline void floor_count(struct floor_counts *c, struct task_struct *t) {
        struct chain_walk w = {};

        /* Plain loads (CO-RE relocated) through the trusted task pointer and the filters it
         * reaches: the cheapest reads BPF has. */
        w.f = t->seccomp.filter;
        bpf_loop(MAX_CHAIN_WALK, chain_walk_step, &w, 0);
        if (w.f)
                c->truncated++;
        c->tasks++;
        c->filters += w.n;
}
