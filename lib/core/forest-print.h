/* forest-print.h: the readable forest: filters nested under their parents, tasks under each */
#pragma once

#include <stdio.h>

#include "core/forest.h"

typedef enum ForestPrintFlags {
        FOREST_PRINT_UNICODE = 1 << 0,   /* box drawing characters instead of ASCII */
        FOREST_PRINT_NO_HEADER = 1 << 1, /* without the header lines (--no-legend) */
        FOREST_PRINT_COLLAPSE = 1 << 2,  /* identical sibling processes on one line, "200*[sleep]", as pstree */
} ForestPrintFlags;

/* One line of the tree, as forest_tree_walk() hands it on. */
typedef enum ForestTreeLineKind {
        FOREST_TREE_FILTER,     /* "filter 4  12 insns  sha256:...  [head of 1, in the chains of 3 tasks]" */
        FOREST_TREE_LISTENER,   /* "listener 1 held by worker[101] fd 5": continues the filter line before it */
        FOREST_TREE_PROCESS,    /* "sleep[100]", "200*[sleep]" when collapsed */
        FOREST_TREE_UNFILTERED, /* "without a filter:", over the processes without one */
} ForestTreeLineKind;

typedef struct ForestTreeLine {
        ForestTreeLineKind kind;
        unsigned depth;    /* 0: a root filter or the title of the unfiltered processes; a listener
                            * line has its filter's */
        bool last;         /* the last of its siblings (a listener line: its filter's) */
        bool has_children; /* lines below it (a listener line: its filter's) */
        const char *text;  /* without a newline; the forest's strings escaped (escape.h); valid
                            * during the call only */
} ForestTreeLine;

typedef int (*ForestTreeLineFn)(const ForestTreeLine *line, void *userdata);

/* The tree's lines in order, each after its parent (depth first): each root filter, what was
 * stacked on it and the processes whose threads run under each filter (processes first, then
 * filters), the holders of each listener, then the processes without a filter; identical plain
 * siblings on one line with FOREST_PRINT_COLLAPSE. A negative return of fn ends the walk with it.
 * -EINVAL for a forest that is not linked, -ENOMEM. */
int forest_tree_walk(const Forest *f, ForestPrintFlags flags, ForestTreeLineFn fn, void *userdata);

/* The two header lines: host, subtree, kernel, backend, identity; then the counts. */
void forest_print_header(const Forest *f, FILE *out);

/* The tree as text, as `sectreed scan` prints it: the header unless FOREST_PRINT_NO_HEADER, then
 * forest_tree_walk()'s lines, each root filter and the processes without a filter after a blank
 * line, drawn as libsmartcols draws trees (sectreectl prints them with it): two columns a level. */
int forest_print_tree(const Forest *f, FILE *out, ForestPrintFlags flags);

/* For each filter (by Filter.index), the threads whose chain holds it: its own head tasks and
 * those of every filter stacked on it, directly or not. ret has f->n_filters entries; the forest
 * must be linked. */
void forest_count_chain_tasks(const Forest *f, size_t *ret);

/* The filters in the order the tree prints them (a root, then what was stacked on it, depth
 * first; siblings by the lowest pid running under them, then by id). ret has f->n_filters
 * entries. -ENOMEM, or -EINVAL for a forest that is not linked. */
int forest_display_order(const Forest *f, const Filter **ret);
