/* tree-table.h: the forest as sectreectl prints it: a libsmartcols tree of filters, the processes
 * under each and the processes without one, fitted to the terminal */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "core/forest-print.h"

typedef struct TreeTableOptions {
        bool legend;   /* the header lines over the tree */
        bool unicode;  /* box drawing rather than ASCII */
        bool collapse; /* identical sibling processes on one line, "200*[sleep]" */
        unsigned width; /* the width to cut lines to; 0: none */
} TreeTableOptions;

/* Print f's tree (forest_tree_walk()'s lines) to out: the header unless !legend, a blank line
 * before each root filter and before the processes without a filter (but the first thing printed),
 * each line under its parent with libsmartcols' tree glyphs. -ENOMEM, -EIO, or the walk's. */
int tree_table_print(const Forest *f, FILE *out, const TreeTableOptions *o);
