/* table.h: column output for list verbs, laid out by libsmartcols: a header line, aligned cells,
 * right-aligned numbers, wide characters, the terminal's width and a choice of columns */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/util.h"

typedef struct Table Table;

#define TABLE_COLUMN(i) (1u << (i))

/* A table with n_columns columns named by headers; the columns in right_aligned (a mask of
 * TABLE_COLUMN(i)) are right-aligned, for numbers. */
Table *table_new(const char *const *headers, size_t n_columns, unsigned right_aligned);
Table *table_free(Table *t);
DEFINE_CLEANUP(Table *, table_free);

/* Add one row: exactly n_columns cells, copied with control characters escaped (escape.h). */
int table_add_row(Table *t, const char *const *cells);

/* Print with two spaces between columns; the header line when legend is set. The last column
 * is not padded. Widths are display cells (中 takes two); the text columns are cut to fit
 * table_width(). ERR_USAGE (said) when --output names a column this table lacks, -ENOMEM (logged);
 * a write that fails is left to the stream, for output_flush() to say. */
int table_print(const Table *t, FILE *out, bool legend);

/* --output=COLS for every table printed after: header names (any case), comma-separated, in the
 * order to print; NULL for all. The string must outlive the printing (argv does). */
void table_set_output(const char *columns);

/* The width output must fit: $COLUMNS when set, else the terminal's when out is one; 0 (no
 * limit) for a pipe or a file. */
unsigned table_width(FILE *out);
