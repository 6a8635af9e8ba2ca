/* floor.h: the counters the pointer-only iterator floor (floor.bpf.c) leaves in its .bss */
#pragma once

#include <linux/types.h>

struct floor_counts {
        __u64 tasks;     /* tasks the iterator visited */
        __u64 filters;   /* filter pointers followed, summed over every task's chain */
        __u64 truncated; /* chains longer than the walk bound (never on a real kernel) */
};
