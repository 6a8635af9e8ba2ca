/* forest-print.h: the readable forest: filters nested under their parents, tasks under each */
#pragma once

#include <stdio.h>

#include "core/forest.h"

typedef enum ForestPrintFlags {
        FOREST_PRINT_UNICODE = 1 << 0,   /* box drawing characters instead of ASCII */
        FOREST_PRINT_NO_HEADER = 1 << 1, /* without the header lines (--no-legend) */
        FOREST_PRINT_COLLAPSE = 1 << 2,  /* identical sibling processes on one line, "200*[sleep]", as pstree */
} ForestPrintFlags;

/* The tree, as `sectreectl tree` and `sectreed scan` print it: a header (host, subtree, kernel,
 * backend, identity; counts) unless FOREST_PRINT_NO_HEADER, then each root filter with what was stacked on it and the processes
 * whose threads run under each filter ("head of N, in the chains of M tasks"), the holders of each
 * listener, and the processes without a filter. Strings of the forest are escaped (escape.h). */
int forest_print_tree(const Forest *f, FILE *out, ForestPrintFlags flags);

/* For each filter (by Filter.index), the threads whose chain holds it: its own head tasks and
 * those of every filter stacked on it, directly or not. ret has f->n_filters entries; the forest
 * must be linked. */
void forest_count_chain_tasks(const Forest *f, size_t *ret);

/* The filters in the order the tree prints them (a root, then what was stacked on it, depth
 * first; siblings by the lowest pid running under them, then by id). ret has f->n_filters
 * entries. -ENOMEM, or -EINVAL for a forest that is not linked. */
int forest_display_order(const Forest *f, const Filter **ret);
