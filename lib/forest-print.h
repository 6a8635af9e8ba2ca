/* forest-print.h: the readable forest: filters nested under their parents, tasks under each */
#pragma once

#include <stdio.h>

#include "forest.h"

typedef enum ForestPrintFlags {
        FOREST_PRINT_UNICODE = 1 << 0, /* box drawing characters instead of ASCII */
} ForestPrintFlags;

int forest_print_tree(const Forest *f, FILE *out, ForestPrintFlags flags);
