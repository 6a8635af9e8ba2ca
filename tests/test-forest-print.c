/* test-forest-print.c: the tree's text (lib/core/forest-print.c): identical sibling processes on one
 * line as pstree does ("200*[sleep]"), and no header lines for --no-legend */
#include "core/forest-print.h"
#include "core/forest.h"
#include "tests-util.h"

static void add_process(Forest *f, pid_t pid, const char *comm, uint64_t filter, size_t n_threads) {
        Process *p = NULL;
        g_assert_cmpint(forest_add_process(f, pid, &p), ==, 0);
        snprintf(p->comm, sizeof(p->comm), "%s", comm);
        for (size_t i = 0; i < n_threads; i++) {
                Task *t = NULL;
                g_assert_cmpint(process_add_thread(p, pid + (pid_t) i, &t), ==, 0);
                t->filter_id = filter;
                t->mode = filter ? TASK_MODE_FILTER : TASK_MODE_DISABLED;
        }
}

/* Filter 1 with 200 sleeps, a shell and a two-threaded sleep; 3 unfiltered cats and a strict one. */
static Forest *sample_forest(void) {
        Forest *f = forest_new();
        g_assert_nonnull(f);
        g_assert_cmpint(forest_add_filter(f, 1, 0, tests_prog_allow, ELEMENTSOF(tests_prog_allow), NULL), ==, 0);
        add_process(f, 100, "sh", 1, 1);
        for (pid_t i = 0; i < 200; i++)
                add_process(f, 1000 + i * 2, "sleep", 1, 1);
        add_process(f, 5000, "sleep", 1, 2); /* its line says more than its name: not collapsed */
        for (pid_t i = 0; i < 3; i++)
                add_process(f, 6000 + i, "cat", 0, 1);
        add_process(f, 7000, "cat", 0, 1);
        forest_find_process(f, 7000)->threads[0].mode = TASK_MODE_STRICT;
        _cleanup_free_ char *error = NULL;
        g_assert_cmpint(forest_link(f, &error), ==, 0);
        return f;
}

static char *print_tree(const Forest *f, ForestPrintFlags flags) {
        char *buf = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&buf, &size);
        g_assert_nonnull(out);
        g_assert_cmpint(forest_print_tree(f, out, flags), ==, 0);
        g_assert_cmpint(fclose(out), ==, 0);
        return buf;
}

static size_t count_lines(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static void test_collapse(void) {
        _cleanup_(forest_freep) Forest *f = sample_forest();
        g_autofree char *all = print_tree(f, 0), *collapsed = print_tree(f, FOREST_PRINT_COLLAPSE);
        g_assert_nonnull(strstr(all, "|- sleep[1000]\n"));
        g_assert_nonnull(strstr(all, "|- sleep[1398]\n"));
        g_assert_cmpuint(count_lines(all), >, 200);
        /* under filter 1: sh, the 200 sleeps on one line, the two-threaded one on its own */
        g_assert_nonnull(strstr(collapsed, "|- sh[100]\n|- 200*[sleep]\n`- sleep[5000] 2/2 threads: 5000 5001\n"));
        g_assert_null(strstr(collapsed, "sleep[1000]"));
        /* without a filter: the three cats, and the strict one apart */
        g_assert_nonnull(strstr(collapsed, "without a filter:\n|- 3*[cat]\n`- cat[7000] (strict)\n"));
        g_assert_cmpuint(count_lines(collapsed), <, 15);
}

static void test_no_header(void) {
        _cleanup_(forest_freep) Forest *f = sample_forest();
        g_autofree char *with = print_tree(f, FOREST_PRINT_COLLAPSE),
                        *without = print_tree(f, FOREST_PRINT_COLLAPSE | FOREST_PRINT_NO_HEADER);
        g_assert_true(g_str_has_prefix(with, "Seccomp filter forest of "));
        g_assert_true(g_str_has_prefix(without, "filter 1  "));
        g_assert_null(strstr(without, "Seccomp filter forest"));
        g_assert_null(strstr(without, " processes, "));
        g_assert_true(g_str_has_suffix(with, without)); /* the rest is the same */
}

/* A root filter with many entries, as a machine of sandboxes has: 3,000 processes and 2,000
 * filters stacked on it, one process under each, added in order (the index then finds the slot
 * sorted and does not sort it). The text is every line in order, with its glyphs. */
static void test_large_slot(void) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        g_assert_nonnull(f);
        g_assert_cmpint(forest_add_filter(f, 1, 0, tests_prog_allow, ELEMENTSOF(tests_prog_allow), NULL), ==, 0);
        for (pid_t i = 0; i < 3000; i++)
                add_process(f, 1000 + i, "p", 1, 1);
        for (uint64_t k = 2; k <= 2001; k++) {
                g_assert_cmpint(forest_add_filter(f, k, 1, tests_prog_errno, ELEMENTSOF(tests_prog_errno), NULL), ==, 0);
                add_process(f, 10000 + (pid_t) k, "q", k, 1);
        }
        _cleanup_free_ char *error = NULL;
        g_assert_cmpint(forest_link(f, &error), ==, 0);

        g_autofree char *text = print_tree(f, FOREST_PRINT_NO_HEADER);
        g_autoptr(GString) want = g_string_new(NULL);
        char digest1[PROG_DIGEST_STRING_MAX], digest2[PROG_DIGEST_STRING_MAX];
        prog_digest_to_string(forest_find_filter(f, 1)->digest, digest1);
        prog_digest_to_string(forest_find_filter(f, 2)->digest, digest2);
        g_string_append_printf(want, "filter 1  1 insns  %.19s  [head of 3000, in the chains of 5000 tasks]\n", digest1);
        for (pid_t i = 0; i < 3000; i++)
                g_string_append_printf(want, "|- p[%d]\n", 1000 + i);
        for (uint64_t k = 2; k <= 2001; k++) {
                bool last = k == 2001;
                g_string_append_printf(want, "%s filter %" PRIu64 "  1 insns  %.19s  [head of 1, in the chains of 1 task]\n",
                                       last ? "`-" : "|-", k, digest2);
                g_string_append_printf(want, "%s `- q[%d]\n", last ? " " : "|", 10000 + (int) k);
        }
        size_t at = 0; /* the first byte that differs, and the line around it */
        while (text[at] && text[at] == want->str[at])
                at++;
        if (text[at] || want->str[at])
                g_error("the tree differs at byte %zu: \"%.60s\" where \"%.60s\" was wanted", at, text + at,
                        want->str + at);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/forest-print/collapse", test_collapse);
        g_test_add_func("/forest-print/no-header", test_no_header);
        g_test_add_func("/forest-print/large-slot", test_large_slot);
        return g_test_run();
}
