/* table.c: column output for list verbs, laid out by libsmartcols: a header line, aligned cells,
 * right-aligned numbers, wide characters, the terminal's width and a choice of columns */
#include "table.h"

#include <libsmartcols.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "core/escape.h"
#include "ctl-args.h"
#include "ctl-log.h"

struct Table {
        size_t n_columns;
        unsigned right_aligned;
        char **cells; /* row-major; row 0 is the header */
        size_t n_cells, n_cells_allocated;
};

/* --output=COLS, for every table this process prints (as --json is): NULL for all columns. */
static const char *table_output_columns;

void table_set_output(const char *columns) {
        table_output_columns = columns;
}

Table *table_new(const char *const *headers, size_t n_columns, unsigned right_aligned) {
        Table *t = calloc(1, sizeof(Table));
        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->right_aligned = right_aligned;
        if (table_add_row(t, headers) < 0)
                return table_free(t);
        return t;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
        return NULL;
}

int table_add_row(Table *t, const char *const *cells) {
        if (GROW(t->cells, t->n_cells_allocated, t->n_cells + t->n_columns) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_columns; i++) {
                char *c = str_escape(cells[i] ? cells[i] : ""); /* cells may hold what a process chose */
                if (!c)
                        return -ENOMEM; /* the row stays partial; the table is only freed after this */
                t->cells[t->n_cells++] = c;
        }
        return 0;
}

/* The column whose header is name (any case), or -ENOENT. */
static ssize_t table_find_column(const Table *t, const char *name, size_t len) {
        for (size_t i = 0; i < t->n_columns; i++)
                if (strlen(t->cells[i]) == len && strncasecmp(t->cells[i], name, len) == 0)
                        return (ssize_t) i;
        return -ENOENT;
}

static int table_unknown_column(const Table *t, const char *name, size_t len) {
        char known[256] = "";
        for (size_t i = 0, k = 0; i < t->n_columns; i++)
                k += snprintf(known + k, k < sizeof(known) ? sizeof(known) - k : 0, "%s%s", i ? "," : "",
                              t->cells[i]);
        return usage_error_full("Unknown column '%.*s' in --output; this table has %s", (int) len, name, known);
}

/* The columns to print, in order: those of --output, or all of them. */
static int table_columns(const Table *t, size_t *order, size_t *ret_n) {
        const char *s = table_output_columns;
        size_t n = 0;
        if (!s) {
                for (; n < t->n_columns; n++)
                        order[n] = n;
                *ret_n = n;
                return 0;
        }
        while (*s) {
                size_t len = strcspn(s, ",");
                ssize_t c = table_find_column(t, s, len);
                if (c < 0)
                        return table_unknown_column(t, s, len);
                if (n < t->n_columns)
                        order[n++] = (size_t) c;
                s += len + (s[len] == ',');
        }
        if (n == 0)
                return table_unknown_column(t, "", 0);
        *ret_n = n;
        return 0;
}

/* The width to fit: $COLUMNS when set (as systemd's tools), else the terminal's when out is one;
 * 0 where nothing limits it (a pipe or a file). */
unsigned table_width(FILE *out) {
        const char *e = getenv("COLUMNS");
        uint64_t w;
        if (e && safe_atou64(e, &w) >= 0 && w > 0 && w < 100000)
                return (unsigned) w;
        struct winsize ws;
        if (isatty(fileno(out)) && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                return ws.ws_col;
        return 0;
}

/* Display cells of a cell (中 takes two, in a UTF-8 locale); code points where it does not decode. */
static size_t cell_width(const char *s) {
        size_t n = 0;
        mbstate_t st = {};
        for (size_t len = strlen(s); len > 0;) {
                wchar_t wc;
                size_t k = mbrtowc(&wc, s, len, &st);
                if (k == (size_t) -1 || k == (size_t) -2 || k == 0)
                        return n + len;
                int w = wcwidth(wc);
                n += w > 0 ? (size_t) w : 0;
                s += k, len -= k;
        }
        return n;
}

static size_t column_width(const Table *t, size_t column) {
        size_t w = 0;
        for (size_t i = column; i < t->n_cells; i += t->n_columns)
                w = MAX(w, cell_width(t->cells[i]));
        return w;
}

/* Which columns may be cut to fit width: the widest text columns, as few as make the rest fit
 * (numbers are never cut). A cut column keeps at least its header's width. */
static unsigned table_columns_to_cut(const Table *t, const size_t *order, size_t n, unsigned width) {
        size_t widths[n], total = 2 * (n - 1);
        unsigned cut = 0;
        for (size_t i = 0; i < n; i++)
                total += widths[i] = column_width(t, order[i]);
        while (width > 0 && total > width) {
                ssize_t widest = -1;
                for (size_t i = 0; i < n; i++)
                        if (!(cut & (1u << i)) && !(t->right_aligned & (1u << order[i])) &&
                            (widest < 0 || widths[i] > widths[widest]))
                                widest = (ssize_t) i;
                if (widest < 0)
                        break;
                cut |= 1u << widest;
                total -= widths[widest] - MIN(widths[widest], cell_width(t->cells[order[widest]]));
        }
        return cut;
}

static int table_add_scols_columns(const Table *t, struct libscols_table *tb, const size_t *order, size_t n,
                                   unsigned width) {
        unsigned cut = table_columns_to_cut(t, order, n, width);
        for (size_t i = 0; i < n; i++) {
                int flags = (t->right_aligned & (1u << order[i]) ? SCOLS_FL_RIGHT : 0) |
                            (cut & (1u << i) ? SCOLS_FL_TRUNC : 0);
                if (!scols_table_new_column(tb, t->cells[order[i]], 0, flags))
                        return -ENOMEM;
        }
        return 0;
}

static int table_add_scols_lines(const Table *t, struct libscols_table *tb, const size_t *order, size_t n) {
        for (size_t row = t->n_columns; row + t->n_columns <= t->n_cells; row += t->n_columns) {
                struct libscols_line *ln = scols_table_new_line(tb, NULL);
                if (!ln)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        if (scols_line_set_data(ln, i, t->cells[row + order[i]]) < 0)
                                return -ENOMEM;
        }
        return 0;
}

static void table_print_headers(const Table *t, const size_t *order, size_t n, FILE *out) {
        for (size_t i = 0; i < n; i++)
                fprintf(out, "%s%s", t->cells[order[i]], i + 1 < n ? "  " : "\n");
}

static void scols_unref_tablep(struct libscols_table **tb) {
        scols_unref_table(*tb);
}

int table_print(const Table *t, FILE *out, bool legend) {
        _cleanup_free_ size_t *order = calloc(t->n_columns ? t->n_columns : 1, sizeof(size_t));
        __attribute__((cleanup(scols_unref_tablep))) struct libscols_table *tb = scols_new_table();
        size_t n = 0;
        if (!order || !tb)
                return log_oom();
        int r = table_columns(t, order, &n);
        if (r < 0)
                return r; /* said which column */
        unsigned width = table_width(out);
        scols_table_set_stream(tb, out);
        scols_table_enable_noheadings(tb, !legend);
        scols_table_enable_noencoding(tb, true); /* cells are escaped already, by str_escape() */
        scols_table_set_column_separator(tb, "  ");
        scols_table_set_termforce(tb, width ? SCOLS_TERMFORCE_ALWAYS : SCOLS_TERMFORCE_NEVER);
        if (width)
                scols_table_set_termwidth(tb, width);
        r = table_add_scols_columns(t, tb, order, n, width);
        if (r >= 0)
                r = table_add_scols_lines(t, tb, order, n);
        if (r < 0)
                return log_oom();
        if (t->n_cells > t->n_columns)
                scols_print_table(tb);
        else if (legend) /* libsmartcols prints nothing for a table without lines */
                table_print_headers(t, order, n, out);
        return 0; /* a failed write is left to the stream: output_flush() says it, once */
}
