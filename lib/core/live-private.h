/* live-private.h: the fields of the live forest, for lib/core/live*.c only */
#pragma once

#include <stdbool.h>

#include "core/budget.h"
#include "core/hashmap.h"
#include "core/live-event.h"

/* The processes that have one parent. */
typedef struct ChildList {
        pid_t *pids;
        size_t n, allocated;
} ChildList;

struct Live {
        Forest *forest;
        size_t n_threads;
        Hashmap children; /* ppid -> ChildList */
        /* What keeps each filter alive: threads heading it, child filters, listeners. A filter whose
         * count drops to 0 (or starts there) is a candidate; retiring takes the candidates still at
         * 0, which drops their parents' counts in turn. That is the set a walk of every chain
         * would find unreachable, at the cost of what changed. Counted again from the forest after
         * a replace or a rollback, or when keeping the counts failed (no memory). */
        Hashmap uses;
        bool uses_valid;
        bool uses_broken; /* a thread or filter names a filter the forest lacks */
        uint64_t *candidates;
        size_t n_candidates, n_candidates_allocated;
        unsigned n_uses_rebuilds;
        Budget budget; /* whose filters keep their instructions */
};
