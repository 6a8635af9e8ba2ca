/* test-escape.c: what a process or a snapshot file names itself cannot drive the terminal: the
 * escaping of lib/core/escape.c, and every offline text view of sectreectl on a snapshot file whose
 * strings carry terminal escapes (JSON keeps them exact) */
#include <fcntl.h>
#include <jansson.h>

#include "core/escape.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot.h"
#include "tests-json.h"
#include "tests-util.h"

/* ESC ] 0 ; PWN BEL (set the window title) ESC [ 2 J (clear the screen): 11 bytes, fits comm */
#define EVIL "\033]0;PWN\a\033[2J"
#define EVIL_ESCAPED "\\e]0;PWN\\x07\\e[2J"

static void test_escape_strings(void) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "", "" },
                { "sshd", "sshd" },
                { EVIL, EVIL_ESCAPED },
                { "a\\e", "a\\\\e" },             /* a backslash in a name cannot pose as an escape */
                { "tab\there\n\r", "tab\\there\\n\\r" },
                { "\x7f\x01", "\\x7f\\x01" },
                { "h\xc3\xa9llo \xe2\x94\x9c", "h\xc3\xa9llo \xe2\x94\x9c" }, /* UTF-8 stays */
                { "\xc2\x9b" "31m", "\\xc2\\x9b31m" },                      /* C1 CSI, as UTF-8 */
                { "\x9b" "31m", "\\x9b31m" },                                /* C1 CSI, a raw byte */
                { "\xff\xfe", "\\xff\\xfe" },
                { "\xe2\x94", "\\xe2\\x94" },                                /* cut UTF-8 */
                { "\xc0\xaf", "\\xc0\\xaf" },                                /* overlong */
                { "\xed\xa0\x80", "\\xed\\xa0\\x80" },                       /* a surrogate */
                { "a\xe2\x80\xae" "b", "a\\xe2\\x80\\xaeb" },                  /* U+202E RIGHT-TO-LEFT OVERRIDE */
                { "\xe2\x81\xa6x\xe2\x81\xa9", "\\xe2\\x81\\xa6x\\xe2\\x81\\xa9" }, /* U+2066 .. U+2069 */
                { "\xe2\x80\xa9", "\xe2\x80\xa9" },                             /* U+2029: no control of order */
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *e = str_escape(cases[i].in);
                g_assert_cmpstr(e, ==, cases[i].out);
                g_assert_cmpint(str_needs_escape(cases[i].in), ==, !streq(cases[i].in, cases[i].out));
        }
        g_assert_null(str_escape(NULL));

        /* in a locale that is not UTF-8, every byte above 0x7f */
        escape_set_ascii_only(true);
        g_autofree char *ascii = str_escape("h\xc3\xa9llo \xe2\x94\x9c");
        escape_set_ascii_only(false);
        g_assert_cmpstr(ascii, ==, "h\\xc3\\xa9llo \\xe2\\x94\\x9c");

        /* a short buffer cuts at a whole escape, never inside one */
        char buf[8];
        g_assert_cmpstr(str_escape_buf(EVIL, buf, sizeof(buf)), ==, "\\e]0;PW");
        g_assert_cmpstr(str_escape_buf("ab\033c", buf, 4), ==, "ab");
        char comm[COMM_ESCAPED_MAX];
        g_assert_cmpstr(str_escape_buf("\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12", comm,
                                       sizeof(comm)),
                        ==, "\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x0b\\x0c\\x0e\\x0f\\x10\\x11\\x12");

        g_autofree char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        g_assert_cmpint(fputs_escaped(EVIL " ok", f), ==, 0);
        g_assert_cmpint(fclose(f), ==, 0);
        g_assert_cmpstr(text, ==, EVIL_ESCAPED " ok");
}

/* ---- sectreectl on a hostile snapshot file ---- */

/* Nothing a terminal acts on: valid UTF-8 without a C0 control but newline, DEL, a C1 control or
 * a bidirectional control. */
static void assert_terminal_safe(const char *out, const char *what) {
        const char *end;
        if (!g_utf8_validate(out, -1, &end))
                g_error("%s: not UTF-8 at offset %td:\n%s", what, end - out, out);
        for (const char *p = out; *p; p = g_utf8_next_char(p)) {
                gunichar c = g_utf8_get_char(p);
                if ((c < 0x20 && c != '\n') || (c >= 0x7f && c < 0xa0) || (c >= 0x202a && c <= 0x202e) ||
                    (c >= 0x2066 && c <= 0x2069))
                        g_error("%s: U+%04X at offset %td reaches the terminal:\n%s", what, c, p - out, out);
        }
}

static char *write_forest(const char *dir, const char *name, const Forest *f, SnapshotFormat format) {
        char *path = g_build_filename(dir, name, NULL);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(snapshot_write_fd(f, format, fd), ==, 0);
        g_assert_cmpint(close(fd), ==, 0);
        return path;
}

/* A sample with terminal escapes in every string a file can carry. */
static Forest *make_hostile(Forest *f, const char *comm) {
        g_assert_nonnull(f);
        g_assert_cmpint(snapshot_info_set_name(&f->snapshot, "name" EVIL), ==, 0);
        g_assert_cmpint(host_info_set(&f->host, "6.18" EVIL, "x86_64" EVIL, "host" EVIL), ==, 0);
        for (size_t i = 0; i < f->n_processes; i++) {
                Process *p = f->processes[i];
                char *argv[] = { (char *) "/bin/x" EVIL, NULL };
                snprintf(p->comm, sizeof(p->comm), "%s", comm);
                g_assert_cmpint(process_set_exe(p, "/usr/bin/" EVIL), ==, 0);
                g_assert_cmpint(process_set_argv(p, argv), ==, 0);
        }
        return f;
}

static char *ctl(const char *const *args, int want_status) {
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), args);
        g_autofree char *cmd = g_strjoinv(" ", (char **) args);
        char *out = NULL;
        g_autofree char *err = NULL;
        int status = tests_run_capture((char **) argv->pdata, &out, &err);
        if (status != want_status)
                g_error("sectreectl %s: exit %d, want %d; stderr: %s", cmd, status, want_status, err);
        assert_terminal_safe(err, cmd);
        assert_terminal_safe(out, cmd);
        return out;
}

#define CTL(status, ...) ctl((const char *const[]) { __VA_ARGS__, NULL }, (status))

static void test_snapshot_file_views(void) {
        g_autofree char *dir = g_dir_make_tmp("sectree-escape-XXXXXX", NULL);
        g_autoptr(Forest) a = make_hostile(sample_forest(SAMPLE_SUBTREE), EVIL);
        g_autoptr(Forest) b = make_hostile(sample_forest(SAMPLE_SUBTREE), "o" EVIL);
        g_assert_nonnull(dir);
        Process *p = a->processes[0];
        char tid[16], comm_line[64];
        snprintf(tid, sizeof(tid), "%d", p->threads[0].tid);
        snprintf(comm_line, sizeof(comm_line), EVIL_ESCAPED "[%d]", p->pid);

        for (SnapshotFormat fmt = 0; fmt < _SNAPSHOT_FORMAT_MAX; fmt++) {
                g_autofree char *fa = write_forest(dir, fmt == SNAPSHOT_FORMAT_JSON ? "a.json" : "a.sqlite", a, fmt);
                g_autofree char *fb = write_forest(dir, fmt == SNAPSHOT_FORMAT_JSON ? "b.json" : "b.sqlite", b, fmt);

                g_autofree char *show = CTL(0, "show", "--file", fa);
                g_assert_nonnull(strstr(show, "name" EVIL_ESCAPED));
                g_assert_nonnull(strstr(show, "host" EVIL_ESCAPED " (kernel 6.18" EVIL_ESCAPED ", x86_64" EVIL_ESCAPED ")"));
                g_autofree char *tree = CTL(0, "tree", "--file", fa);
                g_assert_nonnull(strstr(tree, comm_line));
                g_assert_nonnull(strstr(tree, "host" EVIL_ESCAPED));
                g_autofree char *graph = CTL(0, "graph", "--file", fa);
                g_assert_nonnull(strstr(graph, "\\\\e]0;PWN\\\\x07\\\\e[2J"));
                g_autofree char *chain = CTL(0, "chain", "--file", fa, tid);
                g_autofree char *check = CTL(0, "check", "--file", fa, tid, "openat");
                g_autofree char *validate = CTL(0, "validate", fa);
                /* every process differs by name only: diff names none, but must stay safe */
                g_autofree char *diff = CTL(0, "diff", fa, fb);

                /* JSON carries the exact strings */
                g_autofree char *json = CTL(0, "--json", "show", "--file", fa);
                json_t *doc = tests_json_parse_document(json, "show --file --json");
                g_assert_cmpstr(jstr(doc, "name"), ==, "name" EVIL);
                g_assert_cmpstr(jstr(json_object_get(doc, "host"), "hostname"), ==, "host" EVIL);
                json_decref(doc);
                g_autofree char *tree_json = CTL(0, "--json", "tree", "--file", fa);
                doc = tests_json_parse_document(tree_json, "tree --file --json");
                g_assert_cmpstr(jstr(json_array_get(jarr(doc, "processes"), 0), "comm"), ==, EVIL);
                json_decref(doc);
        }

        /* a process that is only in one of them is named by diff */
        g_autoptr(Forest) c = make_hostile(sample_forest(SAMPLE_BASIC), EVIL);
        g_autoptr(Forest) e = make_hostile(sample_forest_variant(VARIANT_NO_300 | VARIANT_NEW_PROCESS), "o" EVIL);
        g_autofree char *fc = write_forest(dir, "c.json", c, SNAPSHOT_FORMAT_JSON);
        g_autofree char *fe = write_forest(dir, "e.sqlite", e, SNAPSHOT_FORMAT_SQLITE);
        g_autofree char *diff = CTL(1, "diff", fc, fe);
        g_assert_nonnull(strstr(diff, "comm \"" EVIL_ESCAPED "\""));
        g_assert_nonnull(strstr(diff, "comm \"o" EVIL_ESCAPED "\""));

        tests_remove_dir(dir);
}

/* In the C locale (cron, a bare service, LANG unset) names beyond ASCII are escaped byte by byte,
 * and the tables of libsmartcols, which looped forever measuring them there, end. */
static void test_c_locale(void) {
        g_autofree char *dir = g_dir_make_tmp("sectree-escape-XXXXXX", NULL);
        g_autoptr(Forest) f = make_hostile(sample_forest(SAMPLE_SUBTREE), "\xc3\xbcn\xc3\xaf" "code\xe5\x90\x8d");
        g_autofree char *path = write_forest(dir, "u.json", f, SNAPSHOT_FORMAT_JSON);
        char tid[16];
        snprintf(tid, sizeof(tid), "%d", f->processes[0]->threads[0].tid);
        const char *const *cases[] = {
                (const char *const[]) { "tree", "--file", path, NULL },
                (const char *const[]) { "chain", "--file", path, tid, NULL },
                (const char *const[]) { "who-can", "--file", path, "getpid", NULL },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(GPtrArray) argv = g_ptr_array_new();
                g_ptr_array_add(argv, (char *) "timeout");
                g_ptr_array_add(argv, (char *) "30");
                g_ptr_array_add(argv, (char *) g_getenv("SECTREECTL"));
                for (const char *const *a = cases[i]; *a; a++)
                        g_ptr_array_add(argv, (char *) *a);
                g_ptr_array_add(argv, NULL);
                g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "LC_ALL", "C", true);
                g_autofree char *out = NULL, *err = NULL;
                g_autoptr(GError) error = NULL;
                int status;
                g_assert_true(g_spawn_sync(NULL, (char **) argv->pdata, env, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                                           &status, &error));
                g_test_message("%s: status %d, stderr %s", cases[i][0], status, err);
                g_assert_true(WIFEXITED(status));
                g_assert_cmpint(WEXITSTATUS(status), ==, 0); /* timeout(1) says 124 */
                for (const char *p = out; *p; p++)
                        g_assert_cmpint((unsigned char) *p, <, 0x80);
                if (i == 0)
                        g_assert_nonnull(strstr(out, "\\xc3\\xbcn\\xc3\\xafcode\\xe5\\x90\\x8d["));
        }
        tests_remove_dir(dir);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/escape/strings", test_escape_strings);
        g_test_add_func("/escape/snapshot-file-views", test_snapshot_file_views);
        g_test_add_func("/escape/c-locale", test_c_locale);
        return g_test_run();
}
