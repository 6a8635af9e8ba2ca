/* test-ctl-display.c: how sectreectl's text meets a terminal, on snapshot files (no daemon): the
 * pager as systemctl's (only on a terminal, $SYSTEMD_PAGER before $PAGER, LESS=FRSXMK), identical
 * processes collapsed on a terminal and all listed into a pipe, --no-legend without tree headers,
 * the tree laid out by libsmartcols (its glyphs, cut to the width in display cells); output that
 * cannot be written named by its cause */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <pty.h>
#include <sys/wait.h>

#include "core/prog.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot.h"
#include "tests-util.h"

typedef struct Fixture {
        char *dir, *file; /* 20 unfiltered processes named "argv", pids 100..119 */
} Fixture;

static void fixture_setup(Fixture *fx, gconstpointer data) {
        fx->dir = g_dir_make_tmp("sectree-display-XXXXXX", NULL);
        g_assert_nonnull(fx->dir);
        fx->file = g_build_filename(fx->dir, "argv.json", NULL);
        g_autoptr(Forest) f = sample_forest_long_argv(20, 64);
        g_assert_nonnull(f);
        int fd = open(fx->file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(snapshot_write_fd(f, SNAPSHOT_FORMAT_JSON, fd), ==, 0);
        g_assert_cmpint(close(fd), ==, 0);
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", fx->dir);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(fx->file);
        g_free(fx->dir);
}

static char *ctl_pipe(const char *const *args) {
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), args);
        char *out = NULL;
        g_autofree char *err = NULL;
        int status = tests_run_capture((char **) argv->pdata, &out, &err);
        if (status != 0)
                g_error("sectreectl: exit %d; stderr: %s", status, err);
        return out;
}

/* sectreectl args with a terminal as stdin, stdout and stderr, $SYSTEMD_PAGER set to pager (NULL:
 * unset) and $PAGER to plain_pager; what reached the terminal. */
static char *ctl_tty(const char *pager, const char *plain_pager, const char *const *args) {
        int master;
        struct winsize ws = { .ws_row = 40, .ws_col = 100 };
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), args);
        pid_t pid = forkpty(&master, NULL, NULL, &ws);
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                if (pager)
                        setenv("SYSTEMD_PAGER", pager, true);
                else
                        unsetenv("SYSTEMD_PAGER");
                setenv("PAGER", plain_pager, true);
                unsetenv("LESS");
                unsetenv("COLUMNS");
                setenv("LC_ALL", "C.UTF-8", true);
                execv(argv->pdata[0], (char **) argv->pdata);
                _exit(127);
        }
        g_autoptr(GString) out = g_string_new(NULL);
        char buf[4096];
        ssize_t n;
        while ((n = read(master, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
                if (n > 0)
                        g_string_append_len(out, buf, n);
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        close(master);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        return g_string_free(g_steal_pointer(&out), false);
}

static char *read_file(const char *path) {
        char *s = NULL;
        g_assert_true(g_file_get_contents(path, &s, NULL, NULL));
        return s;
}

/* On a terminal the tree goes through the pager, with LESS=FRSXMK, and alike processes share a line. */
static void test_pager(Fixture *fx, gconstpointer data) {
        g_autofree char *paged = g_build_filename(fx->dir, "paged", NULL), *env = g_build_filename(fx->dir, "env", NULL);
        g_autofree char *pager = g_strdup_printf("env > '%s'; cat > '%s'", env, paged);
        g_autofree char *screen = ctl_tty(pager, "false", (const char *const[]) { "tree", "--file", fx->file, NULL });
        g_autofree char *text = read_file(paged), *environ_text = read_file(env);
        g_assert_null(strstr(screen, "Seccomp filter forest")); /* all of it went to the pager */
        g_assert_true(g_str_has_prefix(text, "Seccomp filter forest of "));
        g_assert_nonnull(strstr(text, "without a filter:\n└─ 20*[argv]\n")); /* box drawing: it is for a terminal */
        g_assert_nonnull(strstr(environ_text, "\nLESS=FRSXMK\n"));
        g_assert_nonnull(strstr(environ_text, "\nCOLUMNS=100\n"));
        /* $PAGER when $SYSTEMD_PAGER is unset */
        g_assert_cmpint(unlink(paged), ==, 0);
        g_autofree char *screen2 = ctl_tty(NULL, pager, (const char *const[]) { "tree", "--file", fx->file, NULL });
        g_autofree char *text2 = read_file(paged);
        g_assert_nonnull(strstr(text2, "20*[argv]"));
        /* "" or cat: no pager, the terminal gets it */
        g_autofree char *direct = ctl_tty("", pager, (const char *const[]) { "tree", "--file", fx->file, NULL });
        g_assert_nonnull(strstr(direct, "20*[argv]"));
        g_autofree char *direct_cat = ctl_tty("cat", pager, (const char *const[]) { "tree", "--file", fx->file, NULL });
        g_assert_nonnull(strstr(direct_cat, "20*[argv]"));
        /* a pager that cannot run: the output is not lost, and the shell says why */
        g_autofree char *missing = ctl_tty("/nonexistent/pager", pager, (const char *const[]) { "tree", "--file", fx->file, NULL });
        g_assert_nonnull(strstr(missing, "/nonexistent/pager: not found"));
        g_assert_nonnull(strstr(missing, "20*[argv]"));
        g_autofree char *failing = ctl_tty("false", pager, (const char *const[]) { "tree", "--file", fx->file, NULL });
        g_assert_nonnull(strstr(failing, "20*[argv]"));
}

/* Into a pipe: no pager, and every process on its own line (a script reads the pids). */
static void test_pipe(Fixture *fx, gconstpointer data) {
        g_autofree char *paged = g_build_filename(fx->dir, "paged", NULL);
        g_autofree char *pager = g_strdup_printf("cat > '%s'", paged);
        g_setenv("SYSTEMD_PAGER", pager, true);
        g_autofree char *out = ctl_pipe((const char *const[]) { "tree", "--file", fx->file, NULL });
        g_unsetenv("SYSTEMD_PAGER");
        g_assert_false(g_file_test(paged, G_FILE_TEST_EXISTS));
        for (int pid = 100; pid < 120; pid++) {
                g_autofree char *line = g_strdup_printf("- argv[%d]\n", pid);
                g_assert_nonnull(strstr(out, line));
        }
        g_assert_null(strstr(out, "*["));
}

/* --no-legend: no header lines over the tree either. */
static void test_no_legend(Fixture *fx, gconstpointer data) {
        g_autofree char *with = ctl_pipe((const char *const[]) { "tree", "--file", fx->file, NULL });
        g_autofree char *without = ctl_pipe((const char *const[]) { "--no-legend", "tree", "--file", fx->file, NULL });
        g_assert_true(g_str_has_prefix(with, "Seccomp filter forest of "));
        g_assert_true(g_str_has_prefix(without, "without a filter:\n|- argv[100]\n"));
        g_assert_null(strstr(without, "Seccomp filter forest"));
        g_assert_true(g_str_has_suffix(with, without));
}

static void write_snapshot(const Forest *f, const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(snapshot_write_fd(f, SNAPSHOT_FORMAT_JSON, fd), ==, 0);
        g_assert_cmpint(close(fd), ==, 0);
}

/* graph: 12 groups of byte-identical filters get 12 fill colours (the scheme has nine). */
static void test_graph_colours(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest_many_filters(24);
        g_assert_nonnull(f);
        for (size_t i = 0; i < f->n_filters; i++) { /* filters i and i + 12 alike */
                Filter *x = f->filters[i];
                x->insns[0].k = SECCOMP_RET_ERRNO | (uint32_t) (i % 12 + 1);
                prog_digest(x->insns, x->len, x->digest);
        }
        g_autofree char *path = g_build_filename(fx->dir, "copies.json", NULL);
        write_snapshot(f, path);
        g_autofree char *out = ctl_pipe((const char *const[]) { "graph", "--file", path, NULL });
        g_autoptr(GHashTable) colours = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        size_t filled = 0;
        for (const char *p = out; (p = strstr(p, "fillcolor=\"")); filled++) {
                p += strlen("fillcolor=\"");
                g_hash_table_add(colours, g_strndup(p, strcspn(p, "\"")));
        }
        g_assert_cmpuint(filled, ==, 24);
        g_assert_cmpuint(g_hash_table_size(colours), ==, 12);
}

/* Display cells of a line: a wide character takes two. */
static size_t display_width(const char *line) {
        size_t n = 0;
        for (const char *p = line; *p; p = g_utf8_next_char(p))
                n += g_unichar_iswide(g_utf8_get_char(p)) ? 2 : 1;
        return n;
}

/* SAMPLE_BASIC (filters 1 <- 3 <- 4 and 2, a listener on 3) with its process 100 named 中文名. */
static char *write_wide_sample(const Fixture *fx) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        g_assert_nonnull(f);
        Process *p = forest_find_process(f, 100);
        if (!p)
                g_error("SAMPLE_BASIC has no process 100");
        g_strlcpy(p->comm, "中文名", sizeof(p->comm));
        char *path = g_build_filename(fx->dir, "wide.json", NULL);
        write_snapshot(f, path);
        return path;
}

/* The tree is a libsmartcols tree: two columns of glyphs a level, the listener's holders on a line
 * under its filter. */
static void test_tree_layout(Fixture *fx, gconstpointer data) {
        g_autofree char *path = write_wide_sample(fx);
        g_autofree char *out = ctl_pipe((const char *const[]) { "--no-legend", "tree", "--file", path, NULL });
        g_assert_true(g_str_has_prefix(out, "filter 1  1 insns  "));
        g_assert_nonnull(strstr(out, "\n`- filter 3  7 insns  "));
        g_assert_nonnull(strstr(out, "]\n  |- listener 1 held by 中文名[100] fd 3, child[200] fd 4\n"
                                     "  |- 中文名[100] 1/2 threads: 100\n"
                                     "  `- filter 4  2 insns  "));
        g_assert_nonnull(strstr(out, "]\n    `- 中文名[100] 1/2 threads: 101\n\nfilter 2  "));
        g_assert_true(g_str_has_suffix(out, "\n\nwithout a filter:\n|- child[200] 1/2 threads: 201 (strict)\n`- idle[300]\n"));
        g_assert_nonnull(strstr(out, "[head of 1, in the chains of 2 tasks]\n")); /* a pipe: nothing cut */
        /* on a UTF-8 terminal, box drawing */
        g_autofree char *screen = ctl_tty("", "cat", (const char *const[]) { "--no-legend", "tree", "--file", path, NULL });
        g_assert_true(strstr(screen, "\n  ├─ 中文名[100] 1/2 threads: 100\r\n  └─ filter 4  2 insns  ") != NULL);
}

/* $COLUMNS (or the terminal) cuts the tree's lines to its width in display cells: 中 takes two. */
static void test_tree_width(Fixture *fx, gconstpointer data) {
        g_autofree char *path = write_wide_sample(fx);
        g_setenv("COLUMNS", "40", true);
        g_autofree char *out = ctl_pipe((const char *const[]) { "--no-legend", "tree", "--file", path, NULL });
        g_unsetenv("COLUMNS");
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        for (char **l = lines; *l; l++)
                if (display_width(*l) > 40)
                        g_error("a line of %zu cells in 40: '%s'", display_width(*l), *l);
        g_assert_nonnull(strstr(out, "\n  |- 中文名[100] 1/2 threads: 100\n")); /* 34 cells: whole */
        g_assert_nonnull(strstr(out, "\n`- filter 3  7 insns  sha256:98ac775")); /* cut */
        g_assert_null(strstr(out, "[head of 1, in the chains of 2 tasks]"));
}

/* who-can goes through the pager on a terminal, as the other verbs. */
static void test_who_can_pager(Fixture *fx, gconstpointer data) {
        g_autofree char *path = write_wide_sample(fx);
        g_autofree char *paged = g_build_filename(fx->dir, "paged", NULL);
        g_autofree char *pager = g_strdup_printf("cat > '%s'", paged);
        g_autofree char *screen = ctl_tty(pager, "false", (const char *const[]) { "who-can", "--file", path, "read", NULL });
        g_autofree char *text = read_file(paged);
        g_assert_true(g_str_has_prefix(text, "read (x86_64 0)"));
        g_assert_null(strstr(screen, "read (x86_64 0)"));
        /* --no-pager: the terminal gets it */
        g_autofree char *direct = ctl_tty(pager, "false", (const char *const[]) { "--no-pager", "who-can", "--file", path, "read", NULL });
        g_assert_nonnull(strstr(direct, "read (x86_64 0)"));
}

/* Output to a full device: exit 1 and one line naming the device's error, not an input/output
 * error, nor silence (a table larger than stdout's buffer used to fail without a word), for the
 * tree, JSON and tables. */
static void test_full_device(Fixture *fx, gconstpointer data) {
        g_autofree char *many = g_build_filename(fx->dir, "many.json", NULL);
        g_autoptr(Forest) f = sample_forest_long_argv(400, 8);
        g_assert_nonnull(f);
        write_snapshot(f, many);
        const char *const *cases[] = {
                (const char *const[]) { "who-can", "--file", many, "getpid", NULL },
                (const char *const[]) { "tree", "--file", fx->file, NULL },
                (const char *const[]) { "tree", "--json", "--file", fx->file, NULL },
                (const char *const[]) { "chain", "--file", fx->file, "100", NULL },
                (const char *const[]) { "chain", "--json", "--file", fx->file, "100", NULL },
                (const char *const[]) { "--version", NULL, NULL },
                (const char *const[]) { "--help", NULL, NULL },
                (const char *const[]) { "help", "ps", NULL },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), cases[i]);
                g_autofree char *err = NULL;
                int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
                g_assert_cmpint(full, >=, 0);
                int status = tests_run_to_fd((const char *const *) argv->pdata, full, &err);
                close(full);
                g_test_message("%s %s: status %d, stderr: %s", cases[i][0], cases[i][1], status, err);
                g_assert_cmpint(status, ==, 1);
                g_assert_true(g_str_has_suffix(err, ": No space left on device\n"));
                g_assert_cmpuint(strchr(err, '\n') - err + 1, ==, strlen(err)); /* one line */
        }
}

/* A column --output names that the table lacks is bad usage: exit status 2 and one line naming
 * the table's columns, also where a verb prints several tables. */
static void test_output_unknown(Fixture *fx, gconstpointer data) {
        const char *const *cases[] = {
                (const char *const[]) { "chain", "--file", fx->file, "100", "--output=bogus", NULL },
                (const char *const[]) { "who-can", "--file", fx->file, "getpid", "--output=bogus", NULL },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), cases[i]);
                g_autofree char *out = NULL, *err = NULL;
                int status = tests_run_capture((char **) argv->pdata, &out, &err);
                g_test_message("%s: status %d, stderr %s", cases[i][0], status, err);
                g_assert_cmpint(status, ==, 2);
                g_assert_true(g_str_has_prefix(err, "sectreectl: Unknown column 'bogus' in --output; this table has "));
                g_assert_cmpuint(strchr(err, '\n') - err + 1, ==, strlen(err));
        }
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/ctl-display/pager", Fixture, NULL, fixture_setup, test_pager, fixture_teardown);
        g_test_add("/ctl-display/pipe", Fixture, NULL, fixture_setup, test_pipe, fixture_teardown);
        g_test_add("/ctl-display/no-legend", Fixture, NULL, fixture_setup, test_no_legend, fixture_teardown);
        g_test_add("/ctl-display/graph-colours", Fixture, NULL, fixture_setup, test_graph_colours, fixture_teardown);
        g_test_add("/ctl-display/tree-layout", Fixture, NULL, fixture_setup, test_tree_layout, fixture_teardown);
        g_test_add("/ctl-display/tree-width", Fixture, NULL, fixture_setup, test_tree_width, fixture_teardown);
        g_test_add("/ctl-display/who-can-pager", Fixture, NULL, fixture_setup, test_who_can_pager, fixture_teardown);
        g_test_add("/ctl-display/full-device", Fixture, NULL, fixture_setup, test_full_device, fixture_teardown);
        g_test_add("/ctl-display/output-unknown", Fixture, NULL, fixture_setup, test_output_unknown, fixture_teardown);
        return g_test_run();
}
