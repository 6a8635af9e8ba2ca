/* test-table.c: client/table.c's layout: display widths of wide characters, the terminal's width,
 * --output's choice and order of columns, no limit on a pipe */
#include <locale.h>
#include <wchar.h>

#include "ctl-args.h"
#include "table.h"
#include "tests-util.h"

/* Display cells of a UTF-8 line (中 takes two). */
static size_t display_width(const char *s, size_t len) {
        g_autofree char *copy = g_strndup(s, len);
        size_t n = mbstowcs(NULL, copy, 0);
        g_assert_cmpuint(n, !=, (size_t) -1);
        g_autofree wchar_t *w = g_new0(wchar_t, n + 1);
        mbstowcs(w, copy, n + 1);
        int cells = wcswidth(w, n);
        g_assert_cmpint(cells, >=, 0);
        return (size_t) cells;
}

/* The table printed into a string, with $COLUMNS set to columns (NULL: unset). */
static char *print_table(const Table *t, const char *columns, bool legend, int *ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        g_assert_nonnull(f);
        if (columns)
                g_setenv("COLUMNS", columns, true);
        else
                g_unsetenv("COLUMNS");
        *ret = table_print(t, f, legend);
        g_assert_cmpint(fclose(f), ==, 0);
        return buf;
}

static Table *sample_table(const char *long_cell) {
        static const char *const headers[] = { "TID", "COMM", "MODE", "DIGEST" };
        Table *t = table_new(headers, 4, TABLE_COLUMN(0));
        g_assert_nonnull(t);
        g_assert_cmpint(table_add_row(t, (const char *const[]) { "1", "中文名", "filter", long_cell }), ==, 0);
        g_assert_cmpint(table_add_row(t, (const char *const[]) { "22", "sshd", "strict", "abc" }), ==, 0);
        return t;
}

/* The display column where needle starts in line. */
static size_t column_of(const char *line, const char *needle) {
        const char *p = strstr(line, needle);
        g_assert_nonnull(p);
        return display_width(line, (size_t) (p - line));
}

static void test_wide_characters(void) {
        _cleanup_(table_freep) Table *t = sample_table("0123456789abcdef");
        int r;
        g_autofree char *out = print_table(t, "80", true, &r);
        g_assert_cmpint(r, ==, 0);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        g_assert_cmpuint(g_strv_length(lines), ==, 4); /* header, two rows, "" after the last newline */
        /* MODE starts at one display column in every line, though 中文名 is 3 code points and 6 cells */
        size_t mode = column_of(lines[0], "MODE");
        g_assert_cmpuint(column_of(lines[1], "filter"), ==, mode);
        g_assert_cmpuint(column_of(lines[2], "strict"), ==, mode);
        g_assert_cmpuint(column_of(lines[1], "中文名"), ==, column_of(lines[0], "COMM"));
        g_assert_cmpstr(lines[3], ==, "");
}

static void test_fits_width(void) {
        g_autofree char *long_cell = g_strnfill(120, 'x');
        _cleanup_(table_freep) Table *t = sample_table(long_cell);
        int r;
        g_autofree char *out = print_table(t, "40", true, &r);
        g_assert_cmpint(r, ==, 0);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        for (size_t i = 0; lines[i] && lines[i][0]; i++)
                g_assert_cmpuint(display_width(lines[i], strlen(lines[i])), <=, 40);
        g_assert_nonnull(strstr(lines[1], "中文名")); /* short cells are not the ones cut */
        /* a pipe without $COLUMNS has no width: nothing is cut */
        g_autofree char *piped = print_table(t, NULL, true, &r);
        g_assert_nonnull(strstr(piped, long_cell));
}

static void test_output_columns(void) {
        _cleanup_(table_freep) Table *t = sample_table("d1");
        int r;
        table_set_output("comm,TID");
        g_autofree char *out = print_table(t, "80", true, &r);
        g_assert_cmpint(r, ==, 0);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        g_assert_true(g_str_has_prefix(lines[0], "COMM"));
        g_assert_true(g_str_has_suffix(lines[0], "TID"));
        g_assert_null(strstr(out, "MODE"));
        g_assert_null(strstr(out, "filter"));
        g_assert_nonnull(strstr(lines[2], "sshd"));
        g_assert_true(g_str_has_suffix(lines[2], "22"));
        /* a name the table lacks is a usage error (exit status 2), and nothing is printed */
        table_set_output("comm,nosuch");
        g_autofree char *bad = print_table(t, "80", true, &r);
        g_assert_cmpint(r, ==, ERR_USAGE);
        g_assert_cmpstr(bad, ==, "");
        table_set_output(NULL);
}

static void test_no_legend(void) {
        _cleanup_(table_freep) Table *t = sample_table("d1");
        int r;
        g_autofree char *out = print_table(t, "80", false, &r);
        g_assert_cmpint(r, ==, 0);
        g_assert_null(strstr(out, "COMM"));
        g_assert_true(g_str_has_prefix(out, "  1  中文名  filter  d1\n"));
}

/* A table without rows still shows its header line (libsmartcols alone prints nothing). */
static void test_empty(void) {
        static const char *const headers[] = { "TID", "COMM" };
        _cleanup_(table_freep) Table *t = table_new(headers, 2, TABLE_COLUMN(0));
        int r;
        g_autofree char *out = print_table(t, "80", true, &r);
        g_assert_cmpint(r, ==, 0);
        g_assert_cmpstr(out, ==, "TID  COMM\n");
        g_autofree char *bare = print_table(t, "80", false, &r);
        g_assert_cmpstr(bare, ==, "");
}

/* A control character is escaped once, by the table (escape.h), not again by libsmartcols. */
static void test_escaped_once(void) {
        static const char *const headers[] = { "TID", "COMM" };
        _cleanup_(table_freep) Table *t = table_new(headers, 2, TABLE_COLUMN(0));
        g_assert_cmpint(table_add_row(t, (const char *const[]) { "7", "\033[2Ja\\b" }), ==, 0);
        int r;
        g_autofree char *out = print_table(t, "80", false, &r);
        g_assert_cmpstr(out, ==, "  7  \\e[2Ja\\\\b\n");
}

int main(int argc, char *argv[]) {
        g_assert_nonnull(setlocale(LC_ALL, "C.UTF-8"));
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/table/wide-characters", test_wide_characters);
        g_test_add_func("/table/fits-width", test_fits_width);
        g_test_add_func("/table/output-columns", test_output_columns);
        g_test_add_func("/table/no-legend", test_no_legend);
        g_test_add_func("/table/empty", test_empty);
        g_test_add_func("/table/escaped-once", test_escaped_once);
        return g_test_run();
}
