/* test-sectreectl-snapshot.c: sectreectl's snapshot verbs. Offline (no daemon: the bus address
 * points nowhere): validate, show/tree/graph/chain/check --file and diff on files written here
 * with lib/, held to what lib/ itself reads from them. On a private bus with the real sectreed:
 * snapshot, snapshots, export (file and stdout, both formats), import (file and stdin), diff of
 * an id with a file, rm, and the snapshot signals of monitor. */
#include <jansson.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bus-fixture.h"
#include "core/disasm.h"
#include "core/forest-print.h"
#include "core/prog.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot-diff.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot.h"
#include "tests-json.h"
#include "core/escape.h"
#include "tests-util.h"

#define NO_BUS_ADDRESS "unix:path=/nonexistent/sectree-test/system_bus_socket"
#define WAIT_MS 5000

/* ---- temporary files ---- */

typedef struct TempDir {
        char *path;
} TempDir;

static void temp_dir_init(TempDir *t) {
        g_autoptr(GError) error = NULL;
        t->path = g_dir_make_tmp("sectreectl-snapshot-XXXXXX", &error);
        g_assert_no_error(error);
        g_assert_cmpint(chmod(t->path, 0755), ==, 0);
}

static gint cmp_names(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in the directory, sorted, joined by spaces. */
static char *temp_dir_list(const TempDir *t) {
        g_autoptr(GDir) d = g_dir_open(t->path, 0, NULL);
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        const char *n;
        while (d && (n = g_dir_read_name(d)))
                g_ptr_array_add(names, g_strdup(n));
        g_ptr_array_sort(names, cmp_names);
        g_ptr_array_add(names, NULL);
        return g_strjoinv(" ", (char **) names->pdata);
}

static void temp_dir_done(TempDir *t) {
        tests_remove_dir(t->path);
        g_clear_pointer(&t->path, g_free);
}

static char *write_forest(const TempDir *t, const char *name, const Forest *f, SnapshotFormat format) {
        char *path = g_build_filename(t->path, name, NULL);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(snapshot_write_fd(f, format, fd), ==, 0);
        g_assert_cmpint(close(fd), ==, 0);
        return path;
}

static char *write_sample(const TempDir *t, const char *name, SampleKind kind, SnapshotFormat format) {
        g_autoptr(Forest) f = sample_forest(kind);
        g_assert_nonnull(f);
        return write_forest(t, name, f, format);
}

static char *write_text(const TempDir *t, const char *name, const void *data, size_t size) {
        char *path = g_build_filename(t->path, name, NULL);
        g_autoptr(GError) error = NULL;
        g_assert_true(g_file_set_contents(path, data, (gssize) size, &error));
        return path;
}

/* What lib/ reads from the file: the reference sectreectl is held to. */
static Forest *read_reference(const char *path) {
        Forest *f = NULL;
        g_autofree char *error = NULL;
        if (snapshot_read_path(path, &f, &error) < 0)
                g_error("lib/ cannot read %s: %s", path, error ? error : "?");
        return f;
}

/* ---- running sectreectl ---- */

/* sectreectl ARGS... in this process's environment; returns the exit status. */
static int ctlv(char **out, char **err, const char *const *args) {
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), args);
        g_autofree char *o = NULL, *e = NULL;
        int status = tests_run_capture((char **) argv->pdata, &o, &e);
        g_assert_cmpint(status, >=, 0);
        if (out)
                *out = g_steal_pointer(&o);
        if (err)
                *err = g_steal_pointer(&e);
        return status;
}

#define ARGS(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* Must exit 0 with nothing on stderr; returns stdout. */
#define CTL_OK(...) ctl_ok(ARGS(__VA_ARGS__))
static char *ctl_ok(const char *const *args) {
        g_autofree char *out = NULL, *err = NULL, *cmd = g_strjoinv(" ", (char **) args);
        int status = ctlv(&out, &err, args);
        if (status != 0 || !streq(err, ""))
                g_error("sectreectl %s: exit %d, stderr: %s", cmd, status, err);
        return g_steal_pointer(&out);
}

#define CTL_JSON(...) ctl_json(ARGS("--json", __VA_ARGS__))
static json_t *ctl_json(const char *const *args) {
        g_autofree char *out = ctl_ok(args), *cmd = g_strjoinv(" ", (char **) args);
        return tests_json_parse_document(out, cmd);
}

/* Exits with status, nothing on stdout, and exactly one line on stderr that starts with
 * "sectreectl: " + prefix; returns that line (without its newline). */
#define CTL_FAILS(status, prefix, ...) ctl_fails((status), (prefix), ARGS(__VA_ARGS__))
static char *ctl_fails(int want, const char *prefix, const char *const *args) {
        g_autofree char *out = NULL, *err = NULL, *cmd = g_strjoinv(" ", (char **) args);
        int status = ctlv(&out, &err, args);
        g_autofree char *full = g_strdup_printf("sectreectl: %s", prefix);
        if (status != want || !streq(out, "") || !g_str_has_prefix(err, full) || !g_str_has_suffix(err, "\n") ||
            strchr(err, '\n') != err + strlen(err) - 1)
                g_error("sectreectl %s: expected exit %d and one line '%s...', got exit %d, stdout '%s', stderr '%s'", cmd,
                        want, full, status, out, err);
        err[strlen(err) - 1] = 0;
        return g_steal_pointer(&err);
}

/* ---- what lib/ says about a forest ---- */

typedef struct Counts {
        size_t processes, threads, filters, listeners, holders;
} Counts;

static Counts counts_of(const Forest *f) {
        Counts n = { .processes = f->n_processes, .filters = f->n_filters, .listeners = f->n_listeners };
        for (size_t i = 0; i < f->n_processes; i++)
                n.threads += f->processes[i]->n_threads;
        for (size_t i = 0; i < f->n_listeners; i++)
                n.holders += f->listeners[i]->n_holders;
        return n;
}

static char *valid_line(const Forest *f) {
        Counts n = counts_of(f);
        return g_strdup_printf("valid: %zu process%s, %zu thread%s, %zu filter%s\n", n.processes,
                               n.processes == 1 ? "" : "es", n.threads, n.threads == 1 ? "" : "s", n.filters,
                               n.filters == 1 ? "" : "s");
}

static char *tree_text(const Forest *f) {
        char *buf = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&buf, &size);
        g_assert_nonnull(out);
        g_assert_cmpint(forest_print_tree(f, out, 0), ==, 0);
        g_assert_cmpint(fclose(out), ==, 0);
        return buf;
}

static uint64_t head_id(const Forest *f, pid_t tid) {
        const Task *t = forest_find_task(f, tid, NULL);
        g_assert_nonnull(t);
        return t->filter ? t->filter->id : 0;
}

/* The id of the filter at position pos (0 = head) of tid's chain. */
static uint64_t chain_id(const Forest *f, pid_t tid, size_t pos) {
        const Task *t = forest_find_task(f, tid, NULL);
        const Filter *chain[64];
        g_assert_nonnull(t);
        size_t n = filter_chain(t->filter, chain, G_N_ELEMENTS(chain));
        g_assert_cmpuint(pos, <, n);
        return chain[pos]->id;
}

/* ---- offline: validate ---- */

static const char *const format_names[] = { [SNAPSHOT_FORMAT_JSON] = "json", [SNAPSHOT_FORMAT_SQLITE] = "sqlite" };

static void test_validate_good(void) {
        TempDir t;
        temp_dir_init(&t);
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++)
                for (SnapshotFormat fmt = 0; fmt < _SNAPSHOT_FORMAT_MAX; fmt++) {
                        g_autofree char *name = g_strdup_printf("%s.%s", sample_kind_to_string(k), format_names[fmt]);
                        g_autofree char *path = write_sample(&t, name, k, fmt);
                        g_autoptr(Forest) ref = read_reference(path);
                        g_autofree char *out = CTL_OK("validate", path), *want = valid_line(ref);
                        g_assert_cmpstr(out, ==, want);

                        json_auto_t *doc = CTL_JSON("validate", path);
                        Counts n = counts_of(ref);
                        ASSERT_KEYS(doc, "file", "valid", "format", "processes", "threads", "filters", "listeners");
                        g_assert_true(json_is_true(jget(doc, "valid")));
                        g_assert_cmpstr(jstr(doc, "file"), ==, path);
                        g_assert_cmpstr(jstr(doc, "format"), ==, format_names[fmt]);
                        g_assert_cmpint(jint(doc, "processes"), ==, (json_int_t) n.processes);
                        g_assert_cmpint(jint(doc, "threads"), ==, (json_int_t) n.threads);
                        g_assert_cmpint(jint(doc, "filters"), ==, (json_int_t) n.filters);
                        g_assert_cmpint(jint(doc, "listeners"), ==, (json_int_t) n.listeners);
                }
        /* The sample is what the test thinks it is. */
        g_autofree char *basic = write_sample(&t, "b.json", SAMPLE_BASIC, SNAPSHOT_FORMAT_JSON);
        g_autofree char *out = CTL_OK("validate", basic);
        g_assert_cmpstr(out, ==, "valid: 3 processes, 5 threads, 4 filters\n");
        temp_dir_done(&t);
}

/* The basic sample as a JSON value, to break in one place. */
static json_t *basic_json(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        g_autofree char *text = NULL;
        json_error_t error;
        g_assert_nonnull(f);
        g_assert_cmpint(snapshot_json_format(f, 0, &text), ==, 0);
        json_t *doc = json_loads(text, 0, &error);
        g_assert_nonnull(doc);
        return doc;
}

static json_t *jpath(json_t *doc, const char *array, size_t i) {
        json_t *a = jarr(doc, array), *x = json_array_get(a, i);
        g_assert_nonnull(x);
        return x;
}

typedef void (*Breaker)(json_t *doc);

static void break_format(json_t *doc) {
        json_object_set_new(doc, "format", json_string("not-a-snapshot"));
}
static void break_version(json_t *doc) {
        json_object_set_new(doc, "version", json_integer(3));
}
static void break_parent(json_t *doc) {
        json_object_set_new(jpath(doc, "filters", 2), "parent", json_integer(99));
}
static void break_digest(json_t *doc) {
        json_object_set_new(jpath(doc, "filters", 1), "digest",
                            json_string("sha256:0000000000000000000000000000000000000000000000000000000000000000"));
}
static void break_thread_filter(json_t *doc) {
        json_t *threads = jarr(jpath(doc, "processes", 0), "threads");
        json_object_set_new(json_array_get(threads, 0), "filter", json_integer(77));
}
static void break_duplicate_pid(json_t *doc) {
        json_object_set_new(jpath(doc, "processes", 1), "pid", json_integer(100));
}
static void break_mode(json_t *doc) {
        json_t *threads = jarr(jpath(doc, "processes", 0), "threads");
        json_object_set_new(json_array_get(threads, 1), "mode", json_string("sometimes"));
}

/* One bad file: exit 1, one line naming the snapshot and the field; --json says the same. */
static void assert_invalid(const char *path, const char *const *mentions) {
        g_autofree char *prefix = g_strdup_printf("Invalid snapshot %s: ", path);
        g_autofree char *line = CTL_FAILS(1, prefix, "validate", path);
        for (const char *const *m = mentions; *m; m++)
                if (!strstr(line, *m))
                        g_error("validate %s: '%s' does not mention '%s'", path, line, *m);

        g_autofree char *out = NULL, *err = NULL;
        g_assert_cmpint(ctlv(&out, &err, ARGS("--json", "validate", path)), ==, 1);
        json_auto_t *doc = tests_json_parse_document(out, "validate --json");
        ASSERT_KEYS(doc, "file", "valid", "error");
        g_assert_true(json_is_false(jget(doc, "valid")));
        g_assert_cmpstr(jstr(doc, "error"), ==, line + strlen("sectreectl: ") + strlen(prefix));
        g_assert_true(g_str_has_prefix(err, line));

        /* The other offline verbs refuse it the same way. */
        g_autofree char *show = CTL_FAILS(1, prefix, "show", "--file", path);
        g_assert_cmpstr(show, ==, line);
        g_autofree char *tree = CTL_FAILS(1, prefix, "tree", "--file", path);
        g_assert_cmpstr(tree, ==, line);
        g_autofree char *check = CTL_FAILS(1, prefix, "check", "--file", path, "100", "getpid");
        g_assert_cmpstr(check, ==, line);
}

static void test_validate_bad(void) {
        static const struct {
                const char *name;
                Breaker breaker;
                const char *mentions[3];
        } cases[] = {
                { "format", break_format, { "format" } },
                { "version", break_version, { "version" } },
                { "parent", break_parent, { "filters[2]", "parent" } },
                { "digest", break_digest, { "filters[1]", "digest" } },
                { "thread-filter", break_thread_filter, { "processes[0].threads[0]", "filter" } },
                { "duplicate-pid", break_duplicate_pid, { "processes[1]", "pid" } },
                { "mode", break_mode, { "processes[0].threads[1].mode" } },
        };
        TempDir t;
        temp_dir_init(&t);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                json_auto_t *doc = basic_json();
                cases[i].breaker(doc);
                g_autofree char *text = json_dumps(doc, JSON_COMPACT);
                g_autofree char *name = g_strdup_printf("%s.json", cases[i].name);
                g_autofree char *path = write_text(&t, name, text, strlen(text));
                g_test_message("case %s", cases[i].name);
                assert_invalid(path, cases[i].mentions);
        }

        g_autofree char *garbage = write_text(&t, "garbage.json", "not json at all", 15);
        assert_invalid(garbage, ARGS("snapshot"));

        /* SQLite: truncated (the header's page count says more), and another application_id. */
        g_autofree char *good = write_sample(&t, "good.sqlite", SAMPLE_BASIC, SNAPSHOT_FORMAT_SQLITE);
        g_autofree char *bytes = NULL;
        gsize size;
        g_assert_true(g_file_get_contents(good, &bytes, &size, NULL));
        g_assert_cmpuint(size, >, 4096);
        g_autofree char *truncated = write_text(&t, "truncated.sqlite", bytes, size - 4096);
        assert_invalid(truncated, ARGS("page"));

        g_autofree char *other = write_text(&t, "other.sqlite", bytes, size);
        sqlite3 *db;
        g_assert_cmpint(sqlite3_open(other, &db), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_exec(db, "PRAGMA application_id = 1234", NULL, NULL, NULL), ==, SQLITE_OK);
        sqlite3_close(db);
        assert_invalid(other, ARGS("application_id"));

        /* Not there, or not readable: a failure to read, not an invalid snapshot. */
        g_autofree char *missing = g_build_filename(t.path, "missing.json", NULL);
        g_autofree char *line = CTL_FAILS(1, "Failed to read ", "validate", missing);
        g_assert_nonnull(strstr(line, "No such file or directory"));
        temp_dir_done(&t);
}

/* ---- offline: show --file ---- */

static bool has_line(char **lines, const char *want) {
        for (char **l = lines; *l; l++)
                if (streq(*l, want))
                        return true;
        return false;
}

#define ASSERT_LINE(lines, ...)                                                         \
        do {                                                                            \
                g_autofree char *_want = g_strdup_printf(__VA_ARGS__);                  \
                if (!has_line((lines), _want))                                          \
                        g_error("no line '%s' in the output", _want);                   \
        } while (0)

static void assert_metadata_text(const char *path, const Forest *ref, SnapshotFormat fmt) {
        g_autofree char *out = CTL_OK("show", "--file", path);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        Counts n = counts_of(ref);
        struct stat st;
        g_assert_cmpint(stat(path, &st), ==, 0);
        ASSERT_LINE(lines, "       File: %s (%s, %jd bytes)", path, format_names[fmt], (intmax_t) st.st_size);
        /* the client runs in the C locale here: beyond ASCII, each byte is escaped */
        escape_set_ascii_only(true);
        g_autofree char *name = ref->snapshot.name ? str_escape(ref->snapshot.name) : g_strdup("(none)");
        escape_set_ascii_only(false);
        ASSERT_LINE(lines, "       Name: %s", name);
        ASSERT_LINE(lines, "   Taken by: uid %" PRIu32, ref->snapshot.taken_by_uid);
        ASSERT_LINE(lines, "       Host: %s (kernel %s, %s)", ref->host.hostname, ref->host.kernel, ref->host.arch);
        ASSERT_LINE(lines, "    Backend: %s", ref->backend);
        ASSERT_LINE(lines, "   Identity: %s", identity_kind_to_string(ref->identity));
        ASSERT_LINE(lines, "  Processes: %zu", n.processes);
        ASSERT_LINE(lines, "    Threads: %zu", n.threads);
        ASSERT_LINE(lines, "    Filters: %zu", n.filters);
        ASSERT_LINE(lines, "  Listeners: %zu (%zu holder%s)", n.listeners, n.holders, n.holders == 1 ? "" : "s");
        g_assert_true(g_str_has_prefix(lines[2], "      Taken: 2025-12-03 07:00:49 UTC ("));
        g_autofree char *consistency = g_strdup_printf("Consistency: %s (",
                                                       snapshot_consistency_to_string(ref->snapshot.consistency));
        g_assert_true(g_str_has_prefix(lines[7], consistency));
        if (ref->root == 0)
                ASSERT_LINE(lines, "       Root: the whole machine");
        else
                ASSERT_LINE(lines, "       Root: process %d (%s)", ref->root, forest_find_process(ref, ref->root)->comm);
        g_assert_cmpuint(g_strv_length(lines), ==, 14); /* 13 lines and the empty string after the last newline */
}

static void assert_metadata_json(const char *path, const Forest *ref, SnapshotFormat fmt) {
        json_auto_t *doc = CTL_JSON("show", "--file", path);
        Counts n = counts_of(ref);
        ASSERT_KEYS(doc, "file", "format", "size", "name", "created", "created_usec", "taken_by_uid", "host", "backend",
                    "identity", "consistency", "root", "processes", "threads", "filters", "listeners", "holders",
                    "version", "units");
        g_assert_cmpstr(jstr(doc, "format"), ==, format_names[fmt]);
        g_assert_cmpint(jint(doc, "version"), ==, 1); /* no units recorded: format version 1 */
        g_assert_cmpuint(json_array_size(jget(doc, "units")), ==, 0);
        if (ref->snapshot.name)
                g_assert_cmpstr(jstr(doc, "name"), ==, ref->snapshot.name);
        else
                g_assert_true(json_is_null(jget(doc, "name")));
        g_assert_cmpstr(jstr(doc, "created"), ==, "2025-12-03T07:00:49.123456Z");
        g_assert_cmpint(jint(doc, "created_usec"), ==, (json_int_t) ref->created_at_usec);
        g_assert_cmpint(jint(doc, "taken_by_uid"), ==, (json_int_t) ref->snapshot.taken_by_uid);
        json_t *host = jget(doc, "host");
        ASSERT_KEYS(host, "kernel", "arch", "hostname");
        g_assert_cmpstr(jstr(host, "hostname"), ==, "sample-host");
        g_assert_cmpstr(jstr(doc, "backend"), ==, ref->backend);
        g_assert_cmpstr(jstr(doc, "identity"), ==, identity_kind_to_string(ref->identity));
        g_assert_cmpstr(jstr(doc, "consistency"), ==, snapshot_consistency_to_string(ref->snapshot.consistency));
        g_assert_cmpint(jint(doc, "root"), ==, ref->root);
        g_assert_cmpint(jint(doc, "processes"), ==, (json_int_t) n.processes);
        g_assert_cmpint(jint(doc, "threads"), ==, (json_int_t) n.threads);
        g_assert_cmpint(jint(doc, "filters"), ==, (json_int_t) n.filters);
        g_assert_cmpint(jint(doc, "listeners"), ==, (json_int_t) n.listeners);
        g_assert_cmpint(jint(doc, "holders"), ==, (json_int_t) n.holders);
}

static const char *filter_flags_text(const Filter *x, char *buf, size_t len) {
        snprintf(buf, len, "%s%s%s", x->log ? "log " : "", x->wait_killable_recv ? "wait_killable_recv " : "",
                 x->has_listener || x->listener_id ? "listener " : "");
        size_t l = strlen(buf);
        if (l == 0)
                snprintf(buf, len, "none");
        else
                buf[l - 1] = 0;
        return buf;
}

/* show --file F FILTER prints what the live show prints, from the file's filter. */
static void assert_show_filter(const char *path, const Filter *x) {
        char id[24], digest[PROG_DIGEST_STRING_MAX], flags[64], parent[64];
        snprintf(id, sizeof(id), "%" PRIu64, x->id);
        if (x->parent_id)
                snprintf(parent, sizeof(parent), "%" PRIu64, x->parent_id);
        else
                snprintf(parent, sizeof(parent), "none (a first filter)");
        g_autofree char *disasm = prog_disassemble(x->insns, x->len);
        g_autofree char *want = g_strdup_printf(
                "Filter %s\n    Parent: %s\n    Length: %zu instruction%s\n    Digest: %s\n     Flags: %s\n"
                "     Tasks: %zu\n  Identity: %s\n\n%s",
                id, parent, x->len, x->len == 1 ? "" : "s", prog_digest_to_string(x->digest, digest),
                filter_flags_text(x, flags, sizeof(flags)), x->n_tasks, identity_kind_to_string(x->identity), disasm);
        g_autofree char *out = CTL_OK("show", "--file", path, id);
        g_assert_cmpstr(out, ==, want);

        json_auto_t *doc = CTL_JSON("show", "--file", path, id);
        ASSERT_KEYS(doc, "id", "parent", "length", "digest", "tasks", "flags", "identity", "program", "disassembly");
        g_assert_cmpint(jint(doc, "id"), ==, (json_int_t) x->id);
        g_assert_cmpstr(jstr(doc, "digest"), ==, digest);
        g_assert_cmpint(jint(doc, "tasks"), ==, (json_int_t) x->n_tasks);
        json_t *program = jarr(doc, "program");
        g_assert_cmpuint(json_array_size(program), ==, x->len);
        for (size_t i = 0; i < x->len; i++) {
                json_t *insn = json_array_get(program, i);
                g_assert_cmpint(json_integer_value(json_array_get(insn, 0)), ==, x->insns[i].code);
                g_assert_cmpint(json_integer_value(json_array_get(insn, 3)), ==, x->insns[i].k);
        }
}

static void test_show_file(void) {
        TempDir t;
        temp_dir_init(&t);
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++)
                for (SnapshotFormat fmt = 0; fmt < _SNAPSHOT_FORMAT_MAX; fmt++) {
                        g_autofree char *name = g_strdup_printf("%s.%s", sample_kind_to_string(k), format_names[fmt]);
                        g_autofree char *path = write_sample(&t, name, k, fmt);
                        g_autoptr(Forest) ref = read_reference(path);
                        g_test_message("%s", name);
                        assert_metadata_text(path, ref, fmt);
                        assert_metadata_json(path, ref, fmt);
                        for (size_t i = 0; i < ref->n_filters; i++)
                                assert_show_filter(path, ref->filters[i]);
                }
        g_autofree char *path = write_sample(&t, "basic.json", SAMPLE_BASIC, SNAPSHOT_FORMAT_JSON);
        g_autofree char *line = CTL_FAILS(1, "No filter 99 in snapshot ", "show", "--file", path, "99");
        g_autofree char *usage = CTL_FAILS(2, "Invalid filter id 'x'", "show", "--file", path, "x");

        /* --pid: thread 101's chain 4 <- 3 <- 1, head first, each filter as show prints it */
        g_autofree char *chain = CTL_OK("show", "--file", path, "--pid=101");
        g_autofree char *f4 = CTL_OK("show", "--file", path, "4"), *f3 = CTL_OK("show", "--file", path, "3"),
                        *f1 = CTL_OK("show", "--file", path, "1");
        g_autofree char *want = g_strdup_printf("Task 101: 3 filters, the head (evaluated first) first\n"
                                                "\n--- position 0 of 3 (the head) ---\n%s"
                                                "\n--- position 1 of 3 ---\n%s"
                                                "\n--- position 2 of 3 ---\n%s", f4, f3, f1);
        g_assert_cmpstr(chain, ==, want);
        g_autofree char *no_task = CTL_FAILS(1, "No task 999 in snapshot ", "show", "--file", path, "--pid=999");

        /* The subtree sample names its root; stdin works as a file. */
        g_autofree char *sub = write_sample(&t, "subtree.sqlite", SAMPLE_SUBTREE, SNAPSHOT_FORMAT_SQLITE);
        char *argv[] = { "/bin/sh", "-c", "exec \"$0\" show --file - < \"$1\"", (char *) g_getenv("SECTREECTL"), sub,
                         NULL };
        g_autofree char *out = NULL, *err = NULL;
        g_assert_cmpint(tests_run_capture(argv, &out, &err), ==, 0);
        g_assert_cmpstr(err, ==, "");
        g_assert_nonnull(strstr(out, "       File: (stdin) (sqlite, "));
        g_assert_nonnull(strstr(out, "\n       Root: process 100 (sandboxed)\n"));
        temp_dir_done(&t);
}

/* ---- offline: tree, graph, chain --file ---- */

static void test_tree_file(void) {
        TempDir t;
        temp_dir_init(&t);
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++)
                for (SnapshotFormat fmt = 0; fmt < _SNAPSHOT_FORMAT_MAX; fmt++) {
                        g_autofree char *name = g_strdup_printf("%s.%s", sample_kind_to_string(k), format_names[fmt]);
                        g_autofree char *path = write_sample(&t, name, k, fmt);
                        g_autoptr(Forest) ref = read_reference(path);
                        g_autofree char *want = tree_text(ref), *out = CTL_OK("tree", "--file", path);
                        g_assert_cmpstr(out, ==, want);

                        json_auto_t *doc = CTL_JSON("tree", "--file", path);
                        ASSERT_KEYS(doc, "backend", "identity", "root", "filters", "processes", "listeners");
                        g_assert_cmpuint(json_array_size(jarr(doc, "listeners")), ==, ref->n_listeners);
                        g_assert_cmpuint(json_array_size(jarr(doc, "filters")), ==, ref->n_filters);
                        g_assert_cmpuint(json_array_size(jarr(doc, "processes")), ==, ref->n_processes);
                        for (size_t i = 0; i < ref->n_processes; i++)
                                g_assert_cmpint(jint(json_array_get(jarr(doc, "processes"), i), "pid"), ==,
                                                ref->processes[i]->pid);

                        g_autofree char *dot = CTL_OK("graph", "--file", path);
                        g_assert_true(g_str_has_prefix(dot, "digraph"));
                }

        /* The listener's holders, by name, pid and fd, under its filter; and in JSON. */
        g_autofree char *subtree = write_sample(&t, "holders.json", SAMPLE_SUBTREE, SNAPSHOT_FORMAT_JSON);
        g_autofree char *holders = CTL_OK("tree", "--file", subtree);
        g_assert_nonnull(strstr(holders, "  listener 1  [head of 1, in the chains of 1 task]\n"
                                         "  |- listener 1 held by worker \"1\"[101] fd 5, supervisor[50] fd 9\n"));
        g_assert_nonnull(strstr(holders, "filter 1  4 insns  sha256:8b076e6cbdab  [head of 3, in the chains of 5 tasks]\n"));
        json_auto_t *hdoc = CTL_JSON("tree", "--file", subtree);
        json_t *l = json_array_get(jarr(hdoc, "listeners"), 0);
        g_assert_cmpint(jint(l, "id"), ==, 1);
        g_assert_cmpint(jint(l, "filter"), ==, 3);
        g_assert_cmpint(jint(json_array_get(jarr(l, "holders"), 1), "pid"), ==, 50);
        g_assert_cmpint(jint(json_array_get(jarr(l, "holders"), 1), "fd"), ==, 9);
        g_assert_cmpint(jint(json_array_get(jarr(hdoc, "filters"), 0), "chain_tasks"), ==, 5);
        g_assert_cmpint(jint(json_array_get(jarr(hdoc, "filters"), 0), "tasks"), ==, 3);
        /* the graph draws the listener, its filter and its holders, the one without filters too;
         * Graphviz reads it */
        g_autofree char *dot = CTL_OK("graph", "--file", subtree);
        g_assert_nonnull(strstr(dot, "        l1 [shape=diamond, label=\"listener 1\"];\n"));
        g_assert_nonnull(strstr(dot, "        l1 -> f3 [style=dashed];\n"));
        g_assert_nonnull(strstr(dot, "        p50 [shape=ellipse, label=\"supervisor[50]\"];\n"));
        g_assert_nonnull(strstr(dot, "        p50 -> l1 [label=\"fd 9\", style=dashed];\n"));
        g_assert_nonnull(strstr(dot, "        p101 -> l1 [label=\"fd 5\", style=dashed];\n"));
        char *dot_argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "\"$0\" graph --file \"$1\" | dot -Tsvg",
                             (char *) g_getenv("SECTREECTL"), subtree, NULL };
        g_autofree char *svg = NULL, *dot_err = NULL;
        g_assert_cmpint(tests_run_capture(dot_argv, &svg, &dot_err), ==, 0);
        g_assert_cmpstr(dot_err, ==, "");
        g_assert_nonnull(strstr(svg, "<svg"));

        /* A subtree: the same as lib/'s restriction; a thread id stands for its process. */
        g_autofree char *path = write_sample(&t, "basic.sqlite", SAMPLE_BASIC, SNAPSHOT_FORMAT_SQLITE);
        g_autoptr(Forest) sub = read_reference(path);
        g_assert_cmpint(forest_restrict_to_subtree(sub, 200), ==, 0);
        g_autofree char *want = tree_text(sub);
        g_autofree char *out = CTL_OK("tree", "--file", path, "200");
        g_autofree char *out_tid = CTL_OK("tree", "--file", path, "201");
        g_assert_cmpstr(out, ==, want);
        g_assert_cmpstr(out_tid, ==, want);
        g_assert_nonnull(strstr(out, "subtree of process 200"));
        g_autofree char *whole = CTL_OK("tree", "--file", path);
        g_assert_cmpstr(out, !=, whole);
        g_autofree char *line = CTL_FAILS(1, "No process 999 in snapshot ", "tree", "--file", path, "999");

        /* chain --file: the thread's filters, head first. */
        g_autoptr(Forest) ref = read_reference(path);
        json_auto_t *doc = CTL_JSON("chain", "--file", path, "101");
        json_t *filters = jarr(doc, "filters");
        g_assert_cmpint(jint(doc, "tid"), ==, 101);
        g_assert_cmpuint(json_array_size(filters), ==, 3);
        for (size_t i = 0; i < 3; i++)
                g_assert_cmpint(jint(json_array_get(filters, i), "id"), ==, (json_int_t) chain_id(ref, 101, i));
        json_auto_t *none = CTL_JSON("chain", "--file", path, "300");
        g_assert_cmpuint(json_array_size(jarr(none, "filters")), ==, 0);
        g_autofree char *missing = CTL_FAILS(1, "No task 999 in snapshot ", "chain", "--file", path, "999");
        temp_dir_done(&t);
}

/* ---- offline: check --file ---- */

typedef struct CheckCase {
        pid_t tid;
        const char *syscall;
        const char *action;
        int decided_pos; /* position in the chain of the deciding filter; -1: every filter allows / none */
        size_t chain_length;
        const char *mode;
} CheckCase;

static char *check_expected_text(const Forest *ref, const CheckCase *c) {
        /* the text names the errno: ERRNO(1: EPERM) */
        int e;
        g_autofree char *action = sscanf(c->action, "ERRNO(%d)", &e) == 1
                                          ? g_strdup_printf("ERRNO(%d: %s)", e, strerrorname_np(e))
                                          : g_strdup(c->action);
        if (c->chain_length == 0)
                return g_strdup_printf("%s - task %d has no filter%s\n", action, c->tid,
                                       streq(c->mode, "strict") ? " (strict mode)" : "");
        if (c->decided_pos < 0)
                return g_strdup_printf("%s - every filter allows it (%zu filter%s)\n", action, c->chain_length,
                                       c->chain_length == 1 ? "" : "s");
        return g_strdup_printf("%s - decided by filter %" PRIu64 " (position %d of %zu)\n", action,
                               chain_id(ref, c->tid, (size_t) c->decided_pos), c->decided_pos, c->chain_length);
}

static void test_check_file(void) {
        /* The basic sample: 100 on 3 <- 1, 101 on 4 <- 3 <- 1, 200 on 2, 201 strict, 300 disabled.
         * 1 allows, 2 is ERRNO(1) for getpid, 3 USER_NOTIF for openat, 4 LOG for everything. */
        static const CheckCase cases[] = {
                { 100, "getpid", "ALLOW", -1, 2, "filter" },
                { 100, "openat", "USER_NOTIF", 0, 2, "filter" },
                { 101, "openat", "USER_NOTIF", 1, 3, "filter" }, /* USER_NOTIF beats 4's LOG */
                { 101, "getpid", "LOG", 0, 3, "filter" },
                { 200, "getpid", "ERRNO(1)", 0, 1, "filter" },
                { 200, "getppid", "ALLOW", -1, 1, "filter" },
                { 201, "read", "ALLOW", -1, 0, "strict" },
                { 201, "getpid", "KILL_THREAD", -1, 0, "strict" },
                { 300, "getpid", "ALLOW", -1, 0, "disabled" },
        };
        TempDir t;
        temp_dir_init(&t);
        for (SnapshotFormat fmt = 0; fmt < _SNAPSHOT_FORMAT_MAX; fmt++) {
                g_autofree char *name = g_strdup_printf("basic.%s", format_names[fmt]);
                g_autofree char *path = write_sample(&t, name, SAMPLE_BASIC, fmt);
                g_autoptr(Forest) ref = read_reference(path);
                for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                        const CheckCase *c = &cases[i];
                        char tid[16];
                        snprintf(tid, sizeof(tid), "%d", c->tid);
                        g_autofree char *want = check_expected_text(ref, c);
                        g_autofree char *out = CTL_OK("check", "--file", path, tid, c->syscall);
                        g_assert_cmpstr(out, ==, want);

                        json_auto_t *doc = CTL_JSON("check", "--file", path, tid, c->syscall);
                        g_assert_cmpint(jint(doc, "tid"), ==, c->tid);
                        g_assert_cmpstr(jstr(doc, "action"), ==, c->action);
                        g_assert_cmpstr(jstr(doc, "mode"), ==, c->mode);
                        g_assert_cmpint(jint(doc, "chain_length"), ==, (json_int_t) c->chain_length);
                        json_t *decided = jget(doc, "decided_by");
                        if (c->decided_pos < 0 || c->chain_length == 0)
                                g_assert_true(json_is_null(decided));
                        else {
                                g_assert_cmpint(jint(decided, "position"), ==, c->decided_pos);
                                g_assert_cmpint(jint(decided, "id"), ==,
                                                (json_int_t) chain_id(ref, c->tid, (size_t) c->decided_pos));
                        }
                        g_assert_cmpuint(json_array_size(jarr(doc, "filters")), ==, c->chain_length);
                }
                g_assert_cmpuint(head_id(ref, 200), >, 0);
                g_autofree char *line = CTL_FAILS(1, "No task 999 in snapshot ", "check", "--file", path, "999", "read");
                g_autofree char *usage = CTL_FAILS(2, "Unknown system call 'nope'", "check", "--file", path, "100", "nope");
        }
        temp_dir_done(&t);
}

/* ---- offline: diff ---- */

static char *diff_text(const Forest *a, const Forest *b) {
        char *text = sample_diff_text(a, b);
        g_assert_nonnull(text);
        return text;
}

static json_t *find_change(json_t *a, const char *change, const char *key, json_int_t value) {
        size_t i;
        json_t *x;
        json_array_foreach(a, i, x)
                if (streq(jstr(x, "change"), change) && jint(x, key) == value)
                        return x;
        return NULL;
}

static void test_diff_files(void) {
        TempDir t;
        temp_dir_init(&t);
        g_autoptr(Forest) fa = sample_forest(SAMPLE_BASIC);
        g_autoptr(Forest) fb = sample_forest_variant(VARIANT_PROGRAM | VARIANT_NEW_PROCESS | VARIANT_NO_300 |
                                                     VARIANT_STRICT_101);
        g_assert_nonnull(fa);
        g_assert_nonnull(fb);
        g_autofree char *a_json = write_forest(&t, "a.json", fa, SNAPSHOT_FORMAT_JSON);
        g_autofree char *a_sqlite = write_forest(&t, "a.sqlite", fa, SNAPSHOT_FORMAT_SQLITE);
        g_autofree char *b_sqlite = write_forest(&t, "b.sqlite", fb, SNAPSHOT_FORMAT_SQLITE);

        /* The same snapshot in both formats: no differences, exit 0. */
        g_autofree char *same = CTL_OK("diff", a_json, a_sqlite);
        g_assert_cmpstr(same, ==, "no differences\n");
        json_auto_t *same_doc = CTL_JSON("diff", a_sqlite, a_json);
        g_assert_true(json_is_true(jget(same_doc, "identical")));

        /* Different: exit 1, lib/'s rendering of lib/'s diff. */
        g_autofree char *out = NULL, *err = NULL;
        g_assert_cmpint(ctlv(&out, &err, ARGS("diff", a_json, b_sqlite)), ==, 1);
        g_assert_cmpstr(err, ==, "");
        g_autoptr(Forest) ra = read_reference(a_json);
        g_autoptr(Forest) rb = read_reference(b_sqlite);
        g_autofree char *want = diff_text(ra, rb);
        g_assert_cmpstr(out, ==, want);
        /* Filter 4 has other bytes and 5 is new beside it on 3: two added, one removed. */
        g_assert_true(g_str_has_prefix(out, "filters: 2 added, 1 removed, 0 changed\n"));
        g_assert_nonnull(strstr(out, "processes: 1 added, 1 removed\n"));

        g_autofree char *jout = NULL;
        g_assert_cmpint(ctlv(&jout, NULL, ARGS("--json", "diff", a_json, b_sqlite)), ==, 1);
        json_auto_t *doc = tests_json_parse_document(jout, "diff --json");
        ASSERT_KEYS(doc, "identical", "filters", "processes", "tasks");
        g_assert_true(json_is_false(jget(doc, "identical")));
        g_assert_nonnull(find_change(jarr(doc, "processes"), "added", "pid", 400));
        g_assert_nonnull(find_change(jarr(doc, "processes"), "removed", "pid", 300));
        g_assert_nonnull(find_change(jarr(doc, "tasks"), "changed", "tid", 101));
        g_assert_cmpuint(json_array_size(jarr(doc, "filters")), ==, 3);
        g_assert_cmpuint(json_array_size(jarr(doc, "tasks")), ==, 1);

        /* A filter that only starts logging is changed in place, with what changed. */
        g_autoptr(Forest) fc = sample_forest_variant(VARIANT_LOG);
        g_autofree char *c_json = write_forest(&t, "c.json", fc, SNAPSHOT_FORMAT_JSON);
        g_autofree char *cout = NULL;
        g_assert_cmpint(ctlv(&cout, NULL, ARGS("diff", a_sqlite, c_json)), ==, 1);
        g_assert_true(g_str_has_prefix(cout, "filters: 0 added, 0 removed, 1 changed\n"));
        g_autofree char *cjout = NULL;
        g_assert_cmpint(ctlv(&cjout, NULL, ARGS("--json", "diff", a_sqlite, c_json)), ==, 1);
        json_auto_t *cdoc = tests_json_parse_document(cjout, "diff --json");
        json_t *changed = json_array_get(jarr(cdoc, "filters"), 0);
        g_assert_cmpuint(json_array_size(jarr(cdoc, "filters")), ==, 1);
        g_assert_cmpstr(jstr(changed, "change"), ==, "changed");
        g_assert_cmpuint(json_array_size(jarr(changed, "what")), ==, 1);
        g_assert_cmpstr(json_string_value(json_array_get(jarr(changed, "what"), 0)), ==, "log");
        g_assert_cmpuint(json_array_size(jarr(cdoc, "processes")), ==, 0);

        /* Trouble: exit 2, one line. */
        g_autofree char *missing = g_build_filename(t.path, "missing.json", NULL);
        g_autofree char *l1 = CTL_FAILS(2, "Failed to read ", "diff", a_json, missing);
        g_autofree char *bad = write_text(&t, "bad.json", "{}", 2);
        g_autofree char *l2 = CTL_FAILS(2, "Invalid snapshot ", "diff", bad, a_json);
        g_autofree char *l3 = CTL_FAILS(2, "Only one of the two", "diff", "-", "-");
        /* An id is asked of the daemon: there is none here. */
        g_autofree char *l4 = CTL_FAILS(2, "Failed to connect to the system bus", "diff", "12345", a_json);
        g_autofree char *listing = temp_dir_list(&t);
        g_assert_cmpstr(listing, ==, "a.json a.sqlite b.sqlite bad.json c.json");
        temp_dir_done(&t);
}

/* ---- offline: usage ---- */

static void test_usage(void) {
        static const struct {
                const char *args[8];
                const char *says;
        } cases[] = {
                { { "ps", "--file", "x", NULL }, "'ps' does not take --file" },
                { { "status", "--file", "x", NULL }, "'status' does not take --file" },
                { { "tree", "--name", "n", NULL }, "'tree' does not take --name" },
                { { "snapshot", "--format", "json", NULL }, "'snapshot' does not take --format" },
                { { "export", "1", "f", "--no-argv", NULL }, "'export' does not take --no-argv" },
                { { "tree", "--file", NULL }, "needs an argument" },
                { { "show", NULL }, "Too few arguments for 'show'" },
                { { "show", "--file", "f", "1", "2", NULL }, "Too many arguments for 'show'" },
                { { "check", "--file", "f", "1", NULL }, "Too few arguments for 'check'" },
                { { "snapshot", "0", NULL }, "Invalid process id '0'" },
                { { "snapshot", "1", "2", NULL }, "Too many arguments" },
                { { "snapshots", "1", NULL }, "Too many arguments" },
                { { "export", "1", NULL }, "Too few arguments" },
                { { "export", "0", "f", NULL }, "Invalid snapshot id '0'" },
                { { "export", "1", "f", "--format", "xml", NULL }, "Invalid format 'xml'" },
                { { "import", NULL }, "Too few arguments" },
                { { "rm", "x", NULL }, "Invalid snapshot id 'x'" },
                { { "rm", NULL }, "Too few arguments" },
                { { "validate", NULL }, "Too few arguments" },
                { { "diff", "a", NULL }, "Too few arguments" },
                { { "diff", "a", "b", "c", NULL }, "Too many arguments" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *out = NULL, *err = NULL;
                int status = ctlv(&out, &err, cases[i].args);
                g_test_message("case %zu: exit %d, stderr: %s", i, status, err);
                g_assert_cmpint(status, ==, 2);
                g_assert_cmpstr(out, ==, "");
                g_assert_true(g_str_has_prefix(err, "sectreectl: "));
                g_assert_nonnull(strstr(err, cases[i].says));
                g_assert_true(g_str_has_suffix(err, "\n") && strchr(err, '\n') == err + strlen(err) - 1);
        }

        g_autofree char *help = CTL_OK("--help");
        static const char *const verbs[] = { "snapshot [PID]", "snapshots", "export ID FILE", "import FILE",
                                             "rm ID", "validate FILE", "diff A B", "show|", "tree|", "--file=FILE" };
        for (size_t i = 0; i < G_N_ELEMENTS(verbs); i++)
                if (!strstr(help, verbs[i]))
                        g_error("--help does not mention '%s'", verbs[i]);
        static const char *const options[][2] = {
                { "snapshot", "--name=NAME" }, { "snapshot", "--no-argv" }, { "export", "--format=FORMAT" },
                { "show", "--file=FILE" }, { "tree", "--file=FILE" }, { "chain", "--file=FILE" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(options); i++) {
                g_autofree char *verb_help = CTL_OK("help", options[i][0]);
                if (!strstr(verb_help, options[i][1]))
                        g_error("help %s does not mention '%s'", options[i][0], options[i][1]);
        }

        /* Valid bus verbs get as far as connecting (exit 1, one line). */
        static const char *const bus_cases[][6] = {
                { "snapshot" }, { "snapshot", "1", "--name", "x", "--no-argv" }, { "snapshots" }, { "export", "1", "-" },
                { "rm", "1" }, { "--json", "snapshots" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bus_cases); i++) {
                g_autofree char *line = ctl_fails(1, "Failed to connect to the system bus: ", bus_cases[i]);
        }
}

/* ---- on a private bus, with the daemon ---- */

typedef struct Fixture {
        bool ok;
        BusFixture b;
        Scenario *s;
        ScenarioTask root, a, a1, c;
        TempDir t;
} Fixture;

/* a's and c's filters are long, so that an export is more than a pipe holds (64 KiB): the client must read
 * while the daemon writes. */
#define BIG_PAD 4000

/* root (unfiltered) -> a (getpriority ERRNO 1) -> a1 (same, forked: shares it) and c (its own
 * filter on top). */
static void build_scenario(Fixture *fx) {
        struct sock_filter f[8 + BIG_PAD];
        g_assert_cmpint(scenario_new(&fx->s), ==, 0);
        fx->root = scenario_root(fx->s);
        fx->a = scenario_fork(fx->s, fx->root);
        size_t n = scenario_filter_errno(f, SYS_getpriority, 1, BIG_PAD);
        g_assert_cmpint(scenario_install(fx->s, fx->a, f, n, 0), >=, 0);
        fx->a1 = scenario_fork(fx->s, fx->a);
        fx->c = scenario_fork(fx->s, fx->a);
        n = scenario_filter_errno(f, SYS_setpriority, 2, BIG_PAD);
        g_assert_cmpint(scenario_install(fx->s, fx->c, f, n, 0), >=, 0);
        g_assert_cmpint(fx->a1, >=, 0);
        g_assert_cmpint(fx->c, >=, 0);
}

static pid_t pid_of(const Fixture *fx, ScenarioTask x) {
        return scenario_task(fx->s, x)->tid;
}

/* The daemon lists the scenario's filtered tasks (its first scan is done). */
static bool scenario_listed(void *userdata) {
        Fixture *fx = userdata;
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", pid_of(fx, fx->c));
        g_autofree char *out = NULL;
        return ctlv(&out, NULL, ARGS("chain", "--no-legend", pid)) == 0 && out && strlen(out) > 0;
}

static void fixture_setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) {};
        if (!tests_require_root())
                return;
        tests_ensure_tracefs();
        temp_dir_init(&fx->t);
        build_scenario(fx);
        bus_fixture_start_bus(&fx->b);
        bus_fixture_start_daemon(&fx->b, NULL, NULL, 30);
        if (!tests_wait_for(scenario_listed, fx, WAIT_MS))
                g_error("the daemon does not list the scenario within %d ms", WAIT_MS);
        fx->ok = true;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        scenario_free(fx->s);
        if (fx->b.dir)
                bus_fixture_stop(&fx->b);
        temp_dir_done(&fx->t);
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS_ADDRESS, true);
}

/* An id printed alone on a line. */
static uint64_t parse_id_line(const char *out) {
        uint64_t id;
        g_assert_true(g_str_has_suffix(out, "\n"));
        g_autofree char *s = g_strndup(out, strlen(out) - 1);
        g_assert_cmpuint(strspn(s, "0123456789"), ==, strlen(s));
        g_assert_cmpint(safe_atou64(s, &id), ==, 0);
        g_assert_cmpuint(id, >, 0);
        return id;
}

static uint64_t ctl_snapshot(const char *const *args) {
        g_autofree char *out = ctl_ok(args);
        return parse_id_line(out);
}

static json_t *listed_snapshot(uint64_t id) {
        json_auto_t *doc = CTL_JSON("snapshots");
        size_t i;
        json_t *x;
        json_array_foreach(jarr(doc, "snapshots"), i, x)
                if ((uint64_t) jint(x, "id") == id)
                        return json_incref(x);
        return NULL;
}

/* Run a shell command line with $0 = sectreectl and $1, $2 as given; returns the exit status. */
static int sh(const char *script, const char *a1, const char *a2, char **out, char **err) {
        char *argv[] = { "/bin/sh", "-c", (char *) script, (char *) g_getenv("SECTREECTL"), (char *) a1,
                         (char *) a2, NULL };
        g_autofree char *o = NULL, *e = NULL;
        int status = tests_run_capture(argv, &o, &e);
        if (out)
                *out = g_steal_pointer(&o);
        if (err)
                *err = g_steal_pointer(&e);
        return status;
}

/* processes[pid].argv of snapshot id, exported as JSON to stdout (borrowed from a document kept
 * until the next call). */
static json_t *exported_argv(Fixture *fx, uint64_t id, pid_t pid) {
        static json_t *doc;
        char ids[24];
        snprintf(ids, sizeof(ids), "%" PRIu64, id);
        g_autofree char *out = CTL_OK("export", "--format", "json", ids, "-");
        json_decref(doc);
        doc = tests_json_parse_document(out, "export -");
        size_t i;
        json_t *x;
        json_array_foreach(jarr(doc, "processes"), i, x)
                if (jint(x, "pid") == pid)
                        return jarr(x, "argv");
        g_error("process %d is not in snapshot %" PRIu64, pid, id);
}

static void test_snapshot_list(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        char root[16];
        snprintf(root, sizeof(root), "%d", pid_of(fx, fx->a));

        uint64_t whole = ctl_snapshot(ARGS("snapshot", "--name", "whole machine"));
        json_auto_t *jid = CTL_JSON("snapshot", "--name", "json");
        ASSERT_KEYS(jid, "id");
        uint64_t third = (uint64_t) jint(jid, "id");
        g_assert_cmpuint(third, >, whole);
        uint64_t sub = ctl_snapshot(ARGS("snapshot", root, "--no-argv"));
        g_assert_cmpuint(whole, !=, sub);

        /* a thread id stands for its process, as for tree */
        ScenarioTask thread = scenario_thread(fx->s, fx->a);
        g_assert_cmpint(thread, >=, 0);
        char tid[16];
        snprintf(tid, sizeof(tid), "%d", scenario_task(fx->s, thread)->tid);
        for (int i = 0; i < 500; i++) { /* until the daemon lists the thread */
                json_auto_t *ps = CTL_JSON("ps", tid);
                if (json_array_size(jarr(ps, "tasks")) == 1)
                        break;
                g_usleep(10000);
        }
        uint64_t by_tid = ctl_snapshot(ARGS("snapshot", tid));
        json_auto_t *t = listed_snapshot(by_tid);
        g_assert_cmpint(jint(t, "root"), ==, pid_of(fx, fx->a));
        g_assert_cmpint(jint(t, "threads"), ==, 4); /* a and its thread, a1, c */
        snprintf(tid, sizeof(tid), "%" PRIu64, by_tid);
        g_autofree char *rm_tid = CTL_OK("rm", tid);

        json_auto_t *w = listed_snapshot(whole), *s = listed_snapshot(sub);
        g_assert_nonnull(w);
        g_assert_nonnull(s);
        ASSERT_KEYS(w, "id", "name", "created", "created_usec", "owner_uid", "root", "processes", "threads",
                    "filters", "backend", "identity");
        g_assert_cmpstr(jstr(w, "name"), ==, "whole machine");
        g_assert_true(json_is_null(jget(s, "name")));
        g_assert_cmpint(jint(w, "root"), ==, 0);
        g_assert_cmpint(jint(s, "root"), ==, pid_of(fx, fx->a));
        g_assert_cmpint(jint(w, "owner_uid"), ==, 0);
        g_assert_cmpint(jint(s, "processes"), ==, 3); /* a, a1, c */
        g_assert_cmpint(jint(s, "filters"), ==, 2);
        g_assert_cmpint(jint(w, "processes"), >=, 3);
        g_assert_cmpint(jint(w, "filters"), >=, 2);
        uint64_t now = (uint64_t) g_get_real_time();
        g_assert_cmpuint((uint64_t) jint(w, "created_usec"), <=, now);
        g_assert_cmpuint((uint64_t) jint(w, "created_usec"), >, now - 60 * G_USEC_PER_SEC);

        /* --no-argv leaves the command lines out; they are there by default. */
        g_assert_cmpuint(json_array_size(exported_argv(fx, whole, pid_of(fx, fx->a))), >, 0);
        g_assert_cmpuint(json_array_size(exported_argv(fx, sub, pid_of(fx, fx->a))), ==, 0);

        /* The table: a header, one row per snapshot with the name, and the footer. */
        g_autofree char *table = CTL_OK("snapshots");
        g_auto(GStrv) lines = g_strsplit(table, "\n", -1);
        g_assert_true(g_str_has_prefix(lines[0], "ID"));
        for (const char *const *h = ARGS("NAME", "CREATED", "OWNER", "ROOT", "PROCS", "THREADS", "FILTERS",
                                         "BACKEND", "IDENTITY"); *h; h++)
                g_assert_nonnull(strstr(lines[0], *h));
        g_autofree char *whole_row = g_strdup_printf("%" PRIu64 "  whole machine  ", whole);
        bool found = false;
        for (char **l = lines; *l; l++)
                found |= g_str_has_prefix(g_strchug(*l), whole_row);
        g_assert_true(found);
        g_assert_nonnull(strstr(table, "\n3 snapshots listed.\n"));

        /* rm: gone from the list; a second rm is NoSuchSnapshot. */
        char id[24];
        snprintf(id, sizeof(id), "%" PRIu64, sub);
        g_autofree char *rm = CTL_OK("rm", id);
        g_assert_cmpstr(rm, ==, "");
        json_auto_t *gone = listed_snapshot(sub);
        g_assert_null(gone);
        g_autofree char *gone_line = g_strdup_printf("Failed to delete the snapshot: No snapshot with id %s.", id);
        g_autofree char *again = CTL_FAILS(1, gone_line, "rm", id);
        g_autofree char *nosuch = CTL_FAILS(1, "Failed to take the snapshot: No process with pid 4194000.", "snapshot", "4194000");
}

static void test_export_import(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        uint64_t id = ctl_snapshot(ARGS("snapshot", "--name", "to export"));
        char ids[24];
        snprintf(ids, sizeof(ids), "%" PRIu64, id);
        g_autofree char *json = g_build_filename(fx->t.path, "s.json", NULL);
        g_autofree char *sqlite = g_build_filename(fx->t.path, "s.sqlite", NULL);
        g_autofree char *db = g_build_filename(fx->t.path, "s.db", NULL);
        g_autofree char *forced = g_build_filename(fx->t.path, "forced.json", NULL);

        /* Formats from the extension, or --format; nothing else left in the directory. */
        g_autofree char *o1 = CTL_OK("export", ids, json);
        g_autofree char *o2 = CTL_OK("export", ids, sqlite);
        g_autofree char *o3 = CTL_OK("export", ids, db);
        g_autofree char *o4 = CTL_OK("export", "--format", "sqlite", ids, forced);
        g_assert_cmpstr(o1, ==, "");
        g_autofree char *listing = temp_dir_list(&fx->t);
        g_assert_cmpstr(listing, ==, "forced.json s.db s.json s.sqlite");
        const struct {
                const char *path, *format;
        } files[] = { { json, "json" }, { sqlite, "sqlite" }, { db, "sqlite" }, { forced, "sqlite" } };
        for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
                json_auto_t *v = CTL_JSON("validate", files[i].path);
                g_assert_true(json_is_true(jget(v, "valid")));
                g_assert_cmpstr(jstr(v, "format"), ==, files[i].format);
                json_auto_t *m = CTL_JSON("show", "--file", files[i].path);
                g_assert_cmpstr(jstr(m, "name"), ==, "to export");
                g_assert_cmpint(jint(m, "root"), ==, 0);
        }
        /* The file is the caller's alone, whatever the umask (it was 0666 & ~umask: 0644, every
         * user reading the command lines of the snapshot's processes): 0600 & ~umask. */
        struct stat st;
        g_assert_cmpint(stat(json, &st), ==, 0);
        mode_t mask = umask(0);
        umask(mask);
        g_assert_cmpint(st.st_mode & 0777, ==, 0600 & ~mask);
        g_assert_cmpint(st.st_uid, ==, getuid());

        /* The files hold the scenario: c's chain, evaluated offline, is its filters'. */
        char c[16];
        snprintf(c, sizeof(c), "%d", pid_of(fx, fx->c));
        g_autofree char *chk = CTL_OK("check", "--file", sqlite, c, "getpriority");
        g_assert_true(g_str_has_prefix(chk, "ERRNO(1: EPERM) - decided by filter "));
        g_assert_nonnull(strstr(chk, "(position 1 of 2)"));

        /* Export to stdout through a pipe: the same document as the file, more than a pipe holds. */
        g_autofree char *stdout_json = CTL_OK("export", "--format", "json", ids, "-");
        g_assert_cmpuint(strlen(stdout_json), >, 65536);
        g_autofree char *file_json = NULL;
        g_assert_true(g_file_get_contents(json, &file_json, NULL, NULL));
        json_auto_t *from_pipe = tests_json_parse_document(stdout_json, "export -");
        json_auto_t *from_file = json_loads(file_json, 0, NULL);
        g_assert_true(json_equal(from_pipe, from_file));
        g_autofree char *piped = g_build_filename(fx->t.path, "piped.sqlite", NULL);
        g_autofree char *err = NULL;
        g_assert_cmpint(sh("exec \"$0\" export \"$1\" - > \"$2\"", ids, piped, NULL, &err), ==, 0);
        g_assert_cmpstr(err, ==, "");
        g_autofree char *pv = CTL_OK("validate", piped);
        g_assert_true(g_str_has_prefix(pv, "valid: "));

        /* A failed export leaves no file behind. */
        g_autofree char *nothing = g_build_filename(fx->t.path, "nothing.json", NULL);
        g_autofree char *l1 = CTL_FAILS(1, "Failed to export the snapshot: No snapshot with id 999999.", "export", "999999", nothing);
        g_assert_false(g_file_test(nothing, G_FILE_TEST_EXISTS));
        /* An existing file is replaced whole, and left as it was by a failed export. */
        g_autofree char *old = write_text(&fx->t, "old.json", "old", 3);
        g_autofree char *l5 = CTL_FAILS(1, "Failed to export the snapshot: No snapshot with id 999999.", "export", "999999", old);
        g_autofree char *kept = NULL;
        g_assert_true(g_file_get_contents(old, &kept, NULL, NULL));
        g_assert_cmpstr(kept, ==, "old");
        g_autofree char *o6 = CTL_OK("export", ids, old);
        g_autofree char *replaced = NULL;
        g_assert_true(g_file_get_contents(old, &replaced, NULL, NULL));
        g_assert_cmpstr(replaced, ==, file_json);
        g_assert_cmpint(unlink(old), ==, 0);
        /* A file it replaces keeps its mode and owner, and a symlink to it stays a symlink. */
        g_autofree char *secret = write_text(&fx->t, "secret.json", "old", 3);
        g_assert_cmpint(chmod(secret, 0600), ==, 0);
        g_assert_cmpint(chown(secret, 65534, 65534), ==, 0);
        g_autofree char *link = g_build_filename(fx->t.path, "link.json", NULL);
        g_assert_cmpint(symlink("secret.json", link), ==, 0);
        g_autofree char *o7 = CTL_OK("export", ids, link);
        g_assert_cmpint(lstat(link, &st), ==, 0);
        g_assert_true(S_ISLNK(st.st_mode));
        g_assert_cmpint(stat(secret, &st), ==, 0);
        g_assert_cmpint(st.st_mode & 07777, ==, 0600);
        g_assert_cmpint(st.st_uid, ==, 65534);
        g_autofree char *through = NULL;
        g_assert_true(g_file_get_contents(secret, &through, NULL, NULL));
        g_assert_cmpstr(through, ==, file_json);
        g_assert_cmpint(unlink(link), ==, 0);
        g_assert_cmpint(unlink(secret), ==, 0);
        /* What is not a regular file is never replaced: a FIFO, a device, a symlink to nowhere. */
        g_autofree char *fifo = g_build_filename(fx->t.path, "fifo", NULL);
        g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
        g_autofree char *l8 = CTL_FAILS(1, "", "export", ids, fifo);
        g_assert_nonnull(strstr(l8, "fifo exists and is not a regular file; an export writes regular files (- writes "
                                    "to standard output)."));
        g_assert_cmpint(lstat(fifo, &st), ==, 0);
        g_assert_true(S_ISFIFO(st.st_mode));
        g_assert_cmpint(unlink(fifo), ==, 0);
        g_autofree char *l9 = CTL_FAILS(1, "", "export", ids, "/dev/null");
        g_assert_cmpint(stat("/dev/null", &st), ==, 0);
        g_assert_true(S_ISCHR(st.st_mode));
        g_autofree char *nowhere = g_build_filename(fx->t.path, "nowhere.json", NULL);
        g_assert_cmpint(symlink("missing.json", nowhere), ==, 0);
        g_autofree char *l10 = CTL_FAILS(1, "", "export", ids, nowhere);
        g_assert_nonnull(strstr(l10, "is a symlink that leads nowhere"));
        g_assert_cmpint(unlink(nowhere), ==, 0);
        g_autofree char *l11 = CTL_FAILS(2, "export: FILE is empty", "export", ids, "");
        g_autofree char *listing2 = temp_dir_list(&fx->t);
        g_assert_cmpstr(listing2, ==, "forced.json piped.sqlite s.db s.json s.sqlite");

        /* Import from a file and from stdin: new ids, the same content. */
        uint64_t from_json = ctl_snapshot(ARGS("import", json));
        g_autofree char *sout = NULL;
        g_assert_cmpint(sh("exec \"$0\" import - < \"$1\"", sqlite, NULL, &sout, NULL), ==, 0);
        uint64_t from_stdin = parse_id_line(sout);
        g_assert_cmpuint(from_json, !=, id);
        g_assert_cmpuint(from_stdin, !=, id);
        g_assert_cmpuint(from_stdin, !=, from_json);
        g_autofree char *pout = NULL, *perr = NULL;
        g_assert_cmpint(sh("set -e; \"$0\" export \"$1\" - | \"$0\" import -", ids, NULL, &pout, &perr), ==, 0);
        g_assert_cmpstr(perr, ==, "");
        uint64_t from_pipe_id = parse_id_line(pout);
        g_assert_cmpuint(from_pipe_id, >, from_stdin);
        json_auto_t *imported = listed_snapshot(from_json);
        g_assert_nonnull(imported);
        json_auto_t *original = listed_snapshot(id);
        g_assert_cmpint(jint(imported, "processes"), ==, jint(original, "processes"));
        g_assert_cmpint(jint(imported, "filters"), ==, jint(original, "filters"));

        /* diff of an id with a file, and of two ids. */
        char imp[24];
        snprintf(imp, sizeof(imp), "%" PRIu64, from_stdin);
        g_autofree char *d1 = CTL_OK("diff", ids, json);
        g_assert_cmpstr(d1, ==, "no differences\n");
        g_autofree char *d2 = CTL_OK("diff", imp, ids);
        g_assert_cmpstr(d2, ==, "no differences\n");
        /* A new filter in a1 after a snapshot of a's subtree (not the whole machine: other
         * programs' filters come and go): the next one differs in a1's chain (exit 1). */
        char a[16], befores[24], laters[24];
        snprintf(a, sizeof(a), "%d", pid_of(fx, fx->a));
        snprintf(befores, sizeof(befores), "%" PRIu64, ctl_snapshot(ARGS("snapshot", a)));
        g_autofree char *sub = g_build_filename(fx->t.path, "sub.sqlite", NULL);
        g_autofree char *o5 = CTL_OK("export", befores, sub);
        struct sock_filter f[16];
        size_t n = scenario_filter_errno(f, SYS_setpriority, 5, 2);
        g_assert_cmpint(scenario_install(fx->s, fx->a1, f, n, 0), >=, 0);
        snprintf(laters, sizeof(laters), "%" PRIu64, ctl_snapshot(ARGS("snapshot", a)));
        g_autofree char *dout = NULL;
        g_assert_cmpint(ctlv(&dout, NULL, ARGS("--json", "diff", befores, laters)), ==, 1);
        json_auto_t *ddoc = tests_json_parse_document(dout, "diff --json");
        g_assert_true(json_is_false(jget(ddoc, "identical")));
        g_assert_nonnull(find_change(jarr(ddoc, "tasks"), "changed", "tid", pid_of(fx, fx->a1)));
        json_t *added = json_array_get(jarr(ddoc, "filters"), 0);
        g_assert_nonnull(added);
        g_assert_cmpstr(jstr(added, "change"), ==, "added");
        g_assert_cmpuint(json_array_size(jarr(ddoc, "filters")), ==, 1);
        g_autofree char *dtext = NULL;
        g_assert_cmpint(ctlv(&dtext, NULL, ARGS("diff", sub, laters)), ==, 1);
        g_assert_true(g_str_has_prefix(dtext, "filters: 1 added, 0 removed, 0 changed\n"));
        g_autofree char *l2 = CTL_FAILS(2, "Failed to export the snapshot: No snapshot with id 999999.", "diff", "999999", json);

        /* A hostile file is refused by the daemon, which keeps serving. */
        g_autofree char *bad = write_text(&fx->t, "bad.json", "{\"format\":\"sectree-snapshot\"}", 29);
        g_autofree char *l3 = CTL_FAILS(1, "Failed to import the snapshot: ", "import", bad);
        g_autofree char *l4 = CTL_FAILS(1, "Failed to open ", "import", nothing);
        json_auto_t *still = listed_snapshot(id);
        g_assert_nonnull(still);
}

/* monitor prints SnapshotCreated and SnapshotDeleted. */
/* The next line of out that decodes as the signal named, within the bound; NULL if none. */
static json_t *next_signal(int fd, GString *buf, const char *signal) {
        gint64 deadline = g_get_monotonic_time() + WAIT_MS * 1000;
        for (;;) {
                g_autofree char *line = tests_read_line(fd, buf, deadline);
                if (!line)
                        return NULL;
                json_t *o = json_loads(line, 0, NULL);
                g_assert_nonnull(o);
                if (streq(jstr(o, "signal"), signal))
                        return o;
                json_decref(o);
        }
}

static void test_monitor(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        const char *argv[] = { g_getenv("SECTREECTL"), "--json", "monitor", NULL };
        g_autoptr(GError) error = NULL;
        GPid pid;
        int out, err;
        if (!g_spawn_async_with_pipes(NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, tests_die_with_parent, NULL, &pid,
                                      NULL, &out, &err, &error))
                g_error("starting sectreectl monitor: %s", error->message);
        g_autoptr(GString) errbuf = g_string_new(NULL), outbuf = g_string_new(NULL);
        g_autofree char *first = tests_read_line(err, errbuf, g_get_monotonic_time() + WAIT_MS * 1000);
        g_assert_nonnull(first);
        g_assert_true(g_str_has_prefix(first, "Monitoring org.sectree1; "));

        uint64_t id = ctl_snapshot(ARGS("snapshot", "--name", "watched"));
        json_auto_t *created = next_signal(out, outbuf, "SnapshotCreated");
        g_assert_nonnull(created);
        g_assert_cmpint(jint(created, "id"), ==, (json_int_t) id);
        g_assert_cmpstr(jstr(created, "name"), ==, "watched");
        g_assert_cmpint(jint(created, "owner_uid"), ==, 0);
        char ids[24];
        snprintf(ids, sizeof(ids), "%" PRIu64, id);
        g_autofree char *rm = CTL_OK("rm", ids);
        json_auto_t *deleted = next_signal(out, outbuf, "SnapshotDeleted");
        g_assert_nonnull(deleted);
        g_assert_cmpint(jint(deleted, "id"), ==, (json_int_t) id);
        /* without a name: null, as everywhere "none" is */
        uint64_t unnamed = ctl_snapshot(ARGS("snapshot"));
        json_auto_t *created2 = next_signal(out, outbuf, "SnapshotCreated");
        g_assert_nonnull(created2);
        g_assert_cmpint(jint(created2, "id"), ==, (json_int_t) unnamed);
        g_assert_true(json_is_null(json_object_get(created2, "name")));

        kill(pid, SIGTERM);
        int status;
        gint64 end = g_get_monotonic_time() + WAIT_MS * 1000;
        pid_t r;
        while ((r = waitpid(pid, &status, WNOHANG)) == 0 && g_get_monotonic_time() < end)
                g_usleep(5000);
        if (r != pid) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        close(out);
        close(err);
        g_assert_cmpint(r, ==, pid);
}

/* nobody: cannot snapshot root's processes, nor see, export or delete root's snapshots; it can
 * take and export its own. */
static int ctl_as_nobody(Fixture *fx, char **out, char **err, const char *const *args) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) g_getenv("SECTREECTL"));
        for (const char *const *a = args; *a; a++)
                g_ptr_array_add(argv, (char *) *a);
        g_ptr_array_add(argv, NULL);
        return bus_fixture_run(&fx->b, true, (char **) argv->pdata, out, err);
}

/* Refused with exit status (1; diff's trouble is 2) and one line saying what failed and why: not
 * nobody's to see or, for a snapshot nobody may not know of, no such snapshot. */
static void assert_nobody_refused(Fixture *fx, int want, const char *const *args) {
        g_autofree char *out = NULL, *err = NULL, *cmd = g_strjoinv(" ", (char **) args);
        int status = ctl_as_nobody(fx, &out, &err, args);
        bool named = g_str_has_prefix(err, "sectreectl: Failed to ") &&
                     (g_str_has_suffix(err, " is not one you could trace.\n") || strstr(err, ": No snapshot with id ") ||
                      strstr(err, ": Only the snapshot's owner or root may "));
        if (status != want || !streq(out, "") || !named || strchr(err, '\n') != err + strlen(err) - 1)
                g_error("sectreectl %s as nobody: exit %d, stdout '%s', stderr '%s'", cmd, status, out, err);
}

static bool chain_listed(void *userdata) {
        g_autofree char *out = NULL;
        return ctlv(&out, NULL, ARGS("chain", "--no-legend", (const char *) userdata)) == 0 && out && *out;
}

static void test_unprivileged(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        uint64_t id = ctl_snapshot(ARGS("snapshot", "--name", "root's"));
        char ids[24];
        snprintf(ids, sizeof(ids), "%" PRIu64, id);
        g_autofree char *file = g_build_filename(fx->t.path, "nobody.json", NULL);
        g_assert_cmpint(chmod(fx->t.path, 01777), ==, 0); /* nobody may write its exports here */

        assert_nobody_refused(fx, 1, ARGS("snapshot", "1"));
        assert_nobody_refused(fx, 1, ARGS("export", ids, file));
        assert_nobody_refused(fx, 1, ARGS("export", ids, "-"));
        assert_nobody_refused(fx, 1, ARGS("rm", ids));
        assert_nobody_refused(fx, 2, ARGS("diff", ids, ids));
        g_assert_false(g_file_test(file, G_FILE_TEST_EXISTS));
        g_autofree char *out = NULL, *err = NULL;
        g_assert_cmpint(ctl_as_nobody(fx, &out, &err, ARGS("--json", "snapshots")), ==, 0);
        json_auto_t *doc = tests_json_parse_document(out, "snapshots as nobody");
        size_t i;
        json_t *x;
        json_array_foreach(jarr(doc, "snapshots"), i, x)
                g_assert_cmpint(jint(x, "owner_uid"), ==, 65534);
        json_auto_t *still = listed_snapshot(id);
        g_assert_nonnull(still);

        /* Its own process: snapshot, list, export, check offline, delete. */
        pid_t mine = tests_spawn_nobody(NULL, false);
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", mine);
        if (!tests_wait_for(chain_listed, pid, WAIT_MS))
                g_error("the daemon does not list nobody's process %d within %d ms", mine, WAIT_MS);
        g_autofree char *sout = NULL, *serr = NULL;
        g_assert_cmpint(ctl_as_nobody(fx, &sout, &serr, ARGS("snapshot", pid, "--name", "mine")), ==, 0);
        g_assert_cmpstr(serr, ==, "");
        uint64_t own = parse_id_line(sout);
        char owns[24];
        snprintf(owns, sizeof(owns), "%" PRIu64, own);
        g_autofree char *lout = NULL;
        g_assert_cmpint(ctl_as_nobody(fx, &lout, NULL, ARGS("--json", "snapshots")), ==, 0);
        json_auto_t *listed = tests_json_parse_document(lout, "snapshots as nobody");
        g_assert_cmpuint(json_array_size(jarr(listed, "snapshots")), ==, 1);
        g_assert_cmpint(jint(json_array_get(jarr(listed, "snapshots"), 0), "id"), ==, (json_int_t) own);
        g_assert_cmpint(ctl_as_nobody(fx, NULL, NULL, ARGS("export", owns, file)), ==, 0);
        struct stat st;
        g_assert_cmpint(stat(file, &st), ==, 0);
        g_assert_cmpint(st.st_uid, ==, 65534);
        g_autofree char *chk = CTL_OK("check", "--file", file, pid, "acct");
        g_assert_true(g_str_has_prefix(chk, "ERRNO(3: ESRCH) - decided by filter "));
        g_assert_cmpint(ctl_as_nobody(fx, NULL, NULL, ARGS("rm", owns)), ==, 0);
        json_auto_t *gone = listed_snapshot(own);
        g_assert_null(gone);
        kill(mine, SIGKILL);
        waitpid(mine, NULL, 0);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        /* Fixed output: ASCII dashes, times in UTC. */
        g_setenv("LC_ALL", "C", true);
        g_setenv("TZ", "UTC", true);
        /* The offline tests prove they need no daemon: any connection attempt fails. */
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS_ADDRESS, true);
        g_test_add_func("/sectreectl-snapshot/validate-good", test_validate_good);
        g_test_add_func("/sectreectl-snapshot/validate-bad", test_validate_bad);
        g_test_add_func("/sectreectl-snapshot/show-file", test_show_file);
        g_test_add_func("/sectreectl-snapshot/tree-file", test_tree_file);
        g_test_add_func("/sectreectl-snapshot/check-file", test_check_file);
        g_test_add_func("/sectreectl-snapshot/diff-files", test_diff_files);
        g_test_add_func("/sectreectl-snapshot/usage", test_usage);
#define ADD(name, fn) g_test_add("/sectreectl-snapshot/" name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD("snapshot-list-rm", test_snapshot_list);
        ADD("export-import-diff", test_export_import);
        ADD("monitor", test_monitor);
        ADD("unprivileged", test_unprivileged);
        return g_test_run();
}
