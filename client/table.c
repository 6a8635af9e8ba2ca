/* table.c: column output for list verbs: a header line, aligned cells, right-aligned numbers */
#include "table.h"

#include "core/escape.h"

struct Table {
        size_t n_columns;
        unsigned right_aligned;
        char **cells; /* row-major; row 0 is the header */
        size_t n_cells, n_cells_allocated;
        size_t *widths;
};

Table *table_new(const char *const *headers, size_t n_columns, unsigned right_aligned) {
        Table *t = calloc(1, sizeof(Table));
        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->right_aligned = right_aligned;
        t->widths = calloc(n_columns, sizeof(size_t));
        if (!t->widths || table_add_row(t, headers) < 0)
                return table_free(t);
        return t;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->widths);
        free(t);
        return NULL;
}

/* Display width of a UTF-8 string: code points, not bytes (comm may hold any byte). */
static size_t utf8_width(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += ((unsigned char) *s & 0xc0) != 0x80;
        return n;
}

int table_add_row(Table *t, const char *const *cells) {
        if (GROW(t->cells, t->n_cells_allocated, t->n_cells + t->n_columns) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_columns; i++) {
                char *c = str_escape(cells[i] ? cells[i] : ""); /* cells may hold what a process chose */
                if (!c)
                        return -ENOMEM; /* the row stays partial; the table is only freed after this */
                t->cells[t->n_cells++] = c;
                size_t w = utf8_width(c);
                if (w > t->widths[i])
                        t->widths[i] = w;
        }
        return 0;
}

static void print_cell(const Table *t, const char *cell, size_t column, FILE *out) {
        size_t pad = t->widths[column] - utf8_width(cell);
        bool last = column + 1 == t->n_columns, right = t->right_aligned & (1u << column);
        if (right)
                fprintf(out, "%*s", (int) pad, "");
        fputs(cell, out);
        if (!right && !last)
                fprintf(out, "%*s", (int) pad, "");
        fputs(last ? "\n" : "  ", out);
}

int table_print(const Table *t, FILE *out, bool legend) {
        for (size_t i = legend ? 0 : t->n_columns; i + t->n_columns <= t->n_cells; i += t->n_columns)
                for (size_t c = 0; c < t->n_columns; c++)
                        print_cell(t, t->cells[i + c], c, out);
        return ferror(out) ? -EIO : 0;
}
