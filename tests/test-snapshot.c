/* test-snapshot.c: the snapshot formats: JSON and SQLite round trips, the validator's rejection
 * classes in both formats (one table), hostile SQLite files, reading any fd, and the diff */
#include <fcntl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "core/forest-iso.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot-diff.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite-read.h"
#include "snapshot/snapshot-sqlite.h"
#include "snapshot/snapshot-validate.h"
#include "plan/plan-like.h"
#include "snapshot/snapshot.h"
#include "tests-util.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SnapshotDiff, snapshot_diff_free)

static char *format_json(const Forest *f) {
        char *s = NULL;
        g_assert_cmpint(snapshot_json_format(f, 0, &s), ==, 0);
        return s;
}

static char *tmp_dir(void) {
        GError *e = NULL;
        char *d = g_dir_make_tmp("test-snapshot-XXXXXX", &e);
        g_assert_no_error(e);
        return d;
}

static void rm_rf(const char *dir) {
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        for (const char *n; d && (n = g_dir_read_name(d));) {
                g_autofree char *p = g_build_filename(dir, n, NULL);
                g_assert_cmpint(unlink(p), ==, 0);
        }
        g_assert_cmpint(rmdir(dir), ==, 0);
}

/* Round trips */

static void test_json_round_trip(void) {
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                g_autoptr(Forest) f = sample_forest(k);
                g_assert_nonnull(f);
                g_autofree char *first = format_json(f);
                g_autoptr(Forest) g = NULL;
                g_autofree char *error = NULL;
                int r = snapshot_json_read(first, strlen(first), &g, &error);
                if (r < 0)
                        g_error("sample %s: %s", sample_kind_to_string(k), error);
                g_assert_true(g->linked);
                g_autofree char *second = format_json(g);
                g_assert_cmpstr(first, ==, second);
                g_assert_cmpint(forest_isomorphic(f, g, NULL, 0, NULL), ==, 1);

                /* Pretty-printed input reads the same. */
                g_autofree char *pretty = NULL;
                g_autoptr(Forest) h = NULL;
                g_assert_cmpint(snapshot_json_format(f, SNAPSHOT_JSON_PRETTY, &pretty), ==, 0);
                g_assert_cmpint(snapshot_json_read(pretty, strlen(pretty), &h, NULL), ==, 0);
                g_autofree char *third = format_json(h);
                g_assert_cmpstr(first, ==, third);
        }
}

static void test_sqlite_round_trip(void) {
        g_autofree char *dir = tmp_dir();
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                g_autoptr(Forest) f = sample_forest(k);
                g_autofree char *path = g_strdup_printf("%s/%s.sectree", dir, sample_kind_to_string(k));
                g_autofree char *json = format_json(f), *error = NULL;
                g_autoptr(Forest) g = NULL;

                g_assert_cmpint(snapshot_sqlite_write(f, path), ==, 0);
                int r = snapshot_sqlite_read(path, &g, &error);
                if (r < 0)
                        g_error("sample %s: %s", sample_kind_to_string(k), error);
                g_autofree char *again = format_json(g);
                g_assert_cmpstr(json, ==, again);

                /* The in-memory form reads the same, and so does a rewrite over the old file. */
                g_autofree void *image = NULL;
                size_t size;
                g_autoptr(Forest) h = NULL;
                g_assert_cmpint(snapshot_sqlite_format(g, &image, &size), ==, 0);
                g_assert_cmpint(snapshot_sqlite_read_data(image, size, &h, NULL), ==, 0);
                g_autofree char *third = format_json(h);
                g_assert_cmpstr(json, ==, third);
                g_assert_cmpint(snapshot_sqlite_write(h, path), ==, 0);
        }
        /* Only the files themselves: no temporary file was left behind. */
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        for (const char *n; (n = g_dir_read_name(d));)
                g_assert_false(n[0] == '.');
        rm_rf(dir);
}

/* no_new_privs is per thread: a thread whose bit differs from its process's keeps it through
 * both formats; every other snapshot is written exactly as before (no field, no column). */
static void test_thread_no_new_privs(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        g_autofree char *plain = format_json(f);
        g_assert_null(strstr(plain, "\"threads\":[{\"tid\":100,\"mode\":\"filter\",\"filter\":3,\"no_new_privs\""));
        g_autofree void *plain_image = NULL;
        size_t plain_size;
        g_assert_cmpint(snapshot_sqlite_format(f, &plain_image, &plain_size), ==, 0);

        Process *p = f->processes[0];
        g_assert_cmpuint(p->n_threads, >=, 1);
        task_set_no_new_privs(&p->threads[0], !p->no_new_privs);
        g_assert_true(task_no_new_privs_differs(p, &p->threads[0]));
        g_autofree char *json = format_json(f), *error = NULL;
        g_assert_nonnull(strstr(json, "\"no_new_privs\":"));

        g_autoptr(Forest) g = NULL;
        g_assert_cmpint(snapshot_json_read(json, strlen(json), &g, &error), ==, 0);
        g_assert_cmpint(task_no_new_privs(g->processes[0], &g->processes[0]->threads[0]), ==, !p->no_new_privs);
        g_assert_cmpint(g->processes[0]->no_new_privs, ==, p->no_new_privs);

        g_autofree void *image = NULL;
        size_t size;
        g_autoptr(Forest) h = NULL;
        g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
        if (snapshot_sqlite_read_data(image, size, &h, &error) < 0)
                g_error("sqlite: %s", error);
        g_assert_cmpint(task_no_new_privs(h->processes[0], &h->processes[0]->threads[0]), ==, !p->no_new_privs);
        g_autofree char *again = format_json(h);
        g_assert_cmpstr(json, ==, again);

        /* an unknown own bit is written as nothing: the process's */
        g_autoptr(Forest) k = NULL;
        g_assert_cmpint(snapshot_sqlite_read_data(plain_image, plain_size, &k, NULL), ==, 0);
        g_autofree char *plain_again = format_json(k);
        g_assert_cmpstr(plain, ==, plain_again);
}

/* run --like a thread of a process whose leader exited: the one-task snapshot makes the thread its
 * leader, and keeps no exited leader beside it (it used to, and such a snapshot was refused:
 * "exited_leader: its leader N is one of its threads"). */
static void test_keep_task_of_exited_leader(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        Process *p = f->processes[0];
        pid_t pid = p->pid;
        g_autofree char *error = NULL;
        const Task *kept = NULL;
        for (size_t i = 0; i < p->n_threads && !kept; i++)
                if (p->threads[i].mode == TASK_MODE_FILTER && p->threads[i].tid != pid)
                        kept = &p->threads[i];
        if (!kept) { /* a filtered thread besides the leader */
                g_assert_cmpint(process_add_thread(p, pid + 5000, NULL), ==, 0);
                Task *t = &p->threads[p->n_threads - 1];
                const Task *leader = process_find_thread(p, pid);
                g_assert_nonnull(leader);
                t->mode = leader->mode;
                t->filter_id = leader->filter_id;
                t->filter_count = leader->filter_count;
                kept = t;
        }
        pid_t tid = kept->tid;
        g_assert_cmpint(kept->mode, ==, TASK_MODE_FILTER);
        if (process_find_thread(p, pid))
                g_assert_cmpint(forest_remove_thread(f, pid, pid), ==, 0);
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        process_set_exited_leader(p, TASK_MODE_FILTER, 1);
        if (plan_snapshot_keep_task(f, tid, &error) < 0)
                g_error("keep task %d: %s", tid, error);
        g_assert_false(p->has_exited_leader);
        g_assert_cmpuint(p->n_threads, ==, 1);
        if (snapshot_validate(f, &error) < 0)
                g_error("the one-task snapshot: %s", error);
        g_autofree char *json = format_json(f);
        g_autoptr(Forest) g = NULL;
        if (snapshot_json_read(json, strlen(json), &g, &error) < 0)
                g_error("read back: %s", error);
}

/* A leader that exited while its threads live on: its mode and number of filters (what
 * /proc/PID/status keeps showing) go through both formats; other snapshots are written as before. */
static void test_exited_leader(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        Process *p = f->processes[0];
        pid_t pid = p->pid;
        g_autofree char *error = NULL;

        /* its leader exits, a thread it made lives on */
        g_assert_cmpint(process_add_thread(p, pid + 5000, NULL), ==, 0);
        p->threads[p->n_threads - 1].mode = TASK_MODE_DISABLED;
        if (process_find_thread(p, pid))
                g_assert_cmpint(forest_remove_thread(f, pid, pid), ==, 0);
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        g_assert_cmpint(forest_drop_unreachable_filters(f, NULL, NULL), ==, 0);
        process_set_exited_leader(p, TASK_MODE_FILTER, 3);
        g_autofree char *json = format_json(f);
        g_assert_nonnull(strstr(json, "\"exited_leader\":{\"mode\":\"filter\",\"filters\":3}"));

        g_autoptr(Forest) g = NULL;
        if (snapshot_json_read(json, strlen(json), &g, &error) < 0)
                g_error("json: %s", error);
        const Process *q = forest_find_process(g, p->pid);
        g_assert_true(q->has_exited_leader);
        g_assert_cmpint(q->exited_leader.mode, ==, TASK_MODE_FILTER);
        g_assert_cmpuint(q->exited_leader.filter_count, ==, 3);

        g_autofree void *image = NULL;
        size_t size;
        g_autoptr(Forest) h = NULL;
        g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
        if (snapshot_sqlite_read_data(image, size, &h, &error) < 0)
                g_error("sqlite: %s", error);
        g_autofree char *again = format_json(h);
        g_assert_cmpstr(json, ==, again);

        /* mode filter needs filters, the others none; the leader cannot also be a thread */
        const char *bad = strstr(json, "\"filters\":3");
        g_autofree char *zero = g_strdup(json);
        zero[bad - json + strlen("\"filters\":")] = '0';
        g_autoptr(Forest) z = NULL;
        g_autofree char *why = NULL;
        g_assert_cmpint(snapshot_json_read(zero, strlen(zero), &z, &why), ==, -EINVAL);
        g_assert_nonnull(strstr(why, "exited_leader: mode filter with 0 filters"));
}

static void test_sqlite_file_header(void) {
        g_autofree char *dir = tmp_dir();
        g_autofree char *path = g_build_filename(dir, "s.db", NULL);
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        mode_t old = umask(022);
        g_assert_cmpint(snapshot_sqlite_write(f, path), ==, 0);
        umask(old);

        struct stat st;
        g_assert_cmpint(stat(path, &st), ==, 0);
        g_assert_cmpint(st.st_mode & 0777, ==, 0644);

        sqlite3 *db;
        sqlite3_stmt *s;
        g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_prepare_v2(db, "SELECT (SELECT application_id FROM pragma_application_id), "
                                           "(SELECT user_version FROM pragma_user_version), "
                                           "(SELECT journal_mode FROM pragma_journal_mode)", -1, &s, NULL), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_step(s), ==, SQLITE_ROW);
        g_assert_cmpint(sqlite3_column_int(s, 0), ==, SNAPSHOT_SQLITE_APPLICATION_ID);
        g_assert_cmpint(sqlite3_column_int(s, 1), ==, SNAPSHOT_FORMAT_VERSION_1); /* nothing of version 2 in it */
        g_assert_cmpstr((const char *) sqlite3_column_text(s, 2), ==, "delete");
        sqlite3_finalize(s);
        sqlite3_close(db);

        /* Writing into a directory that does not exist fails and leaves nothing. */
        g_autofree char *bad = g_build_filename(dir, "no", "such.db", NULL);
        g_assert_cmpint(snapshot_sqlite_write(f, bad), ==, -ENOENT);
        rm_rf(dir);
}

/* Non-UTF-8 bytes from the kernel are written as U+FFFD, in both formats alike. */
static void test_non_utf8_strings(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        Process *p = forest_find_process(f, 100);
        char *argv[] = { (char *) "ok", (char *) "bad\xff\xfe", NULL };
        strcpy(p->comm, "x\xc3");
        g_assert_cmpint(process_set_argv(p, argv), ==, 0);
        g_assert_cmpint(process_set_exe(p, "/bin/\xed\xa0\x80"), ==, 0); /* a surrogate */

        g_autofree char *json = format_json(f);
        g_autoptr(Forest) g = NULL, h = NULL;
        g_assert_cmpint(snapshot_json_read(json, strlen(json), &g, NULL), ==, 0);
        p = forest_find_process(g, 100);
        g_assert_cmpstr(p->comm, ==, "x\xef\xbf\xbd");
        g_assert_cmpstr(p->argv[1], ==, "bad\xef\xbf\xbd\xef\xbf\xbd");
        g_assert_cmpstr(p->exe, ==, "/bin/\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");

        g_autofree void *image = NULL;
        size_t size;
        g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
        g_assert_cmpint(snapshot_sqlite_read_data(image, size, &h, NULL), ==, 0);
        g_autofree char *a = format_json(g), *b = format_json(h);
        g_assert_cmpstr(a, ==, b);
}

typedef struct PipeWriter {
        const Forest *forest;
        SnapshotFormat format;
        int fd;
} PipeWriter;

static void *pipe_writer(void *userdata) {
        PipeWriter *w = userdata;
        int r = snapshot_write_fd(w->forest, w->format, w->fd);
        close(w->fd);
        return GINT_TO_POINTER(r);
}

static void test_read_any(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_INFERRED);
        g_autofree char *json = format_json(f);
        for (SnapshotFormat fmt = 0; fmt < _SNAPSHOT_FORMAT_MAX; fmt++) {
                /* Through a pipe: the reader cannot seek back after detecting the format. The
                 * writer is a thread: a pipe may hold less than a snapshot (as little as one page
                 * when the user's pipe pages are used up). */
                int p[2];
                g_assert_cmpint(pipe(p), ==, 0);
                PipeWriter w = { .forest = f, .format = fmt, .fd = p[1] };
                GThread *writer = g_thread_new("pipe-writer", pipe_writer, &w);
                g_autoptr(Forest) g = NULL;
                g_autofree char *error = NULL;
                int r = snapshot_read_any(p[0], &g, &error);
                close(p[0]);
                g_assert_cmpint(GPOINTER_TO_INT(g_thread_join(writer)), ==, 0);
                if (r < 0)
                        g_error("%s: %s", snapshot_format_to_string(fmt), error);
                g_autofree char *again = format_json(g);
                g_assert_cmpstr(json, ==, again);
        }
        g_assert_cmpint(snapshot_format_from_string("sqlite"), ==, SNAPSHOT_FORMAT_SQLITE);
        g_assert_cmpint(snapshot_format_from_string("xml"), ==, -EINVAL);
        g_assert_cmpint(snapshot_detect_format("SQLite format 3", 16), ==, SNAPSHOT_FORMAT_SQLITE);
        g_assert_cmpint(snapshot_detect_format("SQLite format 3", 15), ==, SNAPSHOT_FORMAT_JSON);
        g_assert_cmpint(snapshot_read_path("/nonexistent/snapshot", &f, NULL), ==, -ENOENT);
}

/* The committed fuzz seeds are valid snapshots (but for the SQL of the SQLite target's SQL mode). */
static void test_fuzz_corpus(void) {
        static const char *const dirs[] = { "corpus-json", "corpus-sqlite" };
        for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
                g_autofree char *dir = g_build_filename(SECTREE_SOURCE_DIR, "tests", "fuzz", dirs[i], NULL);
                g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
                size_t n = 0;
                g_assert_nonnull(d);
                for (const char *name; (name = g_dir_read_name(d));) {
                        g_autofree char *path = g_build_filename(dir, name, NULL), *error = NULL;
                        g_autoptr(Forest) f = NULL;
                        if (g_str_has_suffix(name, ".sql"))
                                continue; /* SQL for fuzz-snapshot-sqlite's SQL mode */
                        n++;
                        if (snapshot_read_path(path, &f, &error) < 0)
                                g_error("%s: %s", path, error);
                }
                g_assert_cmpuint(n, >=, 3);
        }
}

/* Times and UTF-8 */

static void test_times(void) {
        char buf[SNAPSHOT_TIME_MAX];
        uint64_t t;
        g_assert_cmpint(snapshot_format_time(1764745249123456ULL, buf, sizeof(buf)), ==, 0);
        g_assert_cmpstr(buf, ==, "2025-12-03T07:00:49.123456Z");
        g_assert_cmpint(snapshot_parse_time(buf, &t), ==, 0);
        g_assert_cmpuint(t, ==, 1764745249123456ULL);
        g_assert_cmpint(snapshot_parse_time("2024-02-29T00:00:00Z", &t), ==, 0);
        g_assert_cmpint(snapshot_parse_time("2025-12-03T07:00:49.123456789Z", &t), ==, 0);
        g_assert_cmpuint(t, ==, 1764745249123456ULL);
        g_assert_cmpint(snapshot_parse_time("1970-01-01T00:00:00.5Z", &t), ==, 0);
        g_assert_cmpuint(t, ==, 500000);
        static const char *const bad[] = {
                "2025-02-29T00:00:00Z", "2025-12-03T07:00:49", "2025-12-03T07:00:49+01:00", "2025-12-03 07:00:49Z",
                "1969-12-31T23:59:59Z", "2025-13-01T00:00:00Z", "2025-12-03T24:00:00Z", "2025-12-03T07:00:60Z",
                "2025-12-03T07:00:49.Z", "2025-12-03T07:00:49.1234567890Z", "", "2025-12-03T07:00:49ZZ",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
                if (snapshot_parse_time(bad[i], &t) != -EINVAL)
                        g_error("parsed \"%s\"", bad[i]);
        g_assert_cmpint(snapshot_format_time(UINT64_MAX, buf, sizeof(buf)), <, 0);
}

static void test_utf8(void) {
        static const char *const good[] = { "", "abc", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf" };
        static const char *const bad[] = { "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff", "\xc3",
                                           "\xe2\x82", "\x80" };
        for (size_t i = 0; i < G_N_ELEMENTS(good); i++)
                g_assert_true(snapshot_utf8_valid(good[i]));
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_assert_false(snapshot_utf8_valid(bad[i]));
                g_autofree char *s = snapshot_utf8_sanitize(bad[i]);
                g_assert_true(snapshot_utf8_valid(s));
                g_assert_nonnull(strstr(s, "\xef\xbf\xbd"));
        }
}

/* Rejections: one table, every case a mutation of SAMPLE_BASIC in JSON (edits of the document)
 * and/or SQLite (SQL run on the file). */

typedef struct JsonEdit {
        const char *path;  /* "filters[1].parent"; an index one past the end appends */
        const char *value; /* JSON text; NULL deletes */
} JsonEdit;

typedef struct RejectCase {
        const char *name;
        JsonEdit json[3];
        void (*json_fn)(json_t *doc);
        const char *sql;
        const char *expect;      /* in the message of both formats */
        const char *expect_sql;  /* instead, for SQLite */
} RejectCase;

#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"
#define ZERO_DIGEST "\"sha256:" ZEROS "\""
#define SNAPSHOT_NAME_100 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SNAPSHOT_NAME_300 SNAPSHOT_NAME_100 SNAPSHOT_NAME_100 SNAPSHOT_NAME_100

static void swap_filters_2_3(json_t *doc) {
        json_t *filters = json_object_get(doc, "filters"), *x = json_incref(json_array_get(filters, 2));
        json_array_set(filters, 2, json_array_get(filters, 3));
        json_array_set_new(filters, 3, x);
}

static void too_many_threads(json_t *doc) {
        json_t *threads = json_object_get(json_array_get(json_object_get(doc, "processes"), 2), "threads");
        for (int i = 0; i < SNAPSHOT_MAX_TASKS; i++)
                json_array_append_new(threads, json_pack("{s:i, s:s, s:n}", "tid", 10000 + i, "mode", "disabled", "filter"));
}

static void long_program(json_t *doc) {
        json_t *f = json_array_get(json_object_get(doc, "filters"), 0), *program = json_object_get(f, "program");
        for (int i = 0; i < SNAPSHOT_MAX_FILTER_INSNS; i++)
                json_array_insert_new(program, 0, json_pack("[iiii]", BPF_LD | BPF_W | BPF_ABS, 0, 0, 0));
        json_object_set_new(f, "length", json_integer(SNAPSHOT_MAX_FILTER_INSNS + 1));
}

static const RejectCase reject_cases[] = {
        /* format and version */
        { "format", { { "format", "\"other\"" } }, NULL, "UPDATE meta SET format = 'other'",
          "format: expected \"sectree-snapshot\"" },
        { "format-missing", { { "format", NULL } }, NULL, NULL, "format: expected \"sectree-snapshot\"" },
        { "version", { { "version", "3" } }, NULL, "UPDATE meta SET version = 3", "version: 3 is not supported",
          "meta.version: 3 is not the file's user_version 1" },
        { "version-type", { { "version", "\"1\"" } }, NULL, "UPDATE meta SET version = 'one'",
          "version: expected an integer" },
        { "user-version", {}, NULL, "PRAGMA user_version = 3", NULL, "user_version 3 is not a format version" },
        { "user-version-2", {}, NULL, "PRAGMA user_version = 2", NULL, "SQLite schema: missing table \"units\"" },
        { "application-id", {}, NULL, "PRAGMA application_id = 42",
          NULL, "application_id is 0x0000002a, not 0x53454353" },
        /* snapshot metadata */
        { "snapshot-missing", { { "snapshot", NULL } }, NULL, "ALTER TABLE meta DROP COLUMN snapshot_consistency",
          "snapshot: missing", "table \"meta\" has 11 columns, fewer than expected" },
        { "snapshot-type", { { "snapshot", "[]" } }, NULL, NULL, "snapshot: expected an object, got an array" },
        { "snapshot-unknown-field", { { "snapshot.by", "\"me\"" } }, NULL, NULL, "snapshot: unknown field \"by\"" },
        { "snapshot-name-type", { { "snapshot.name", "5" } }, NULL, "UPDATE meta SET snapshot_name = x'35'",
          "snapshot.name: expected a string or null, got an integer",
          "meta.snapshot_name: expected text or null, got a blob" },
        { "snapshot-name-long", { { "snapshot.name", "\"" SNAPSHOT_NAME_300 "\"" } }, NULL,
          "UPDATE meta SET snapshot_name = replace(hex(zeroblob(150)), '0', 'a')",
          "snapshot.name: 300 bytes, more than the limit of 256", "meta.snapshot_name: 300 bytes, more than the limit of 256" },
        { "snapshot-name-utf8", {}, NULL, "UPDATE meta SET snapshot_name = CAST(x'78c328' AS TEXT)", NULL,
          "snapshot.name: not valid UTF-8" },
        { "snapshot-name-nul", {}, NULL, "UPDATE meta SET snapshot_name = CAST(x'610062' AS TEXT)", NULL,
          "meta.snapshot_name: contains a NUL byte" },
        { "snapshot-uid-range", { { "snapshot.taken_by_uid", "4294967295" } }, NULL,
          "UPDATE meta SET snapshot_taken_by_uid = 4294967295",
          "taken_by_uid: 4294967295 is out of range 0..4294967294" },
        { "snapshot-uid-negative", { { "snapshot.taken_by_uid", "-1" } }, NULL,
          "UPDATE meta SET snapshot_taken_by_uid = -1", "taken_by_uid: -1 is out of range 0..4294967294" },
        { "snapshot-uid-type", { { "snapshot.taken_by_uid", "\"root\"" } }, NULL,
          "UPDATE meta SET snapshot_taken_by_uid = 'root'", "snapshot.taken_by_uid: expected an integer, got a string",
          "meta.snapshot_taken_by_uid: expected an integer, got text" },
        { "snapshot-uid-null", { { "snapshot.taken_by_uid", "null" } }, NULL, NULL,
          "snapshot.taken_by_uid: expected an integer, got null" },
        { "snapshot-consistency", { { "snapshot.consistency", "\"atomic\"" } }, NULL,
          "UPDATE meta SET snapshot_consistency = 'atomic'", "consistency: expected one of none, iterator, frozen" },
        { "snapshot-consistency-backend", { { "snapshot.consistency", "\"frozen\"" } }, NULL,
          "UPDATE meta SET snapshot_consistency = 'frozen'",
          "snapshot.consistency: frozen is only for source.backend ptrace, not bpf" },
        /* missing or mistyped fields */
        { "missing-digest", { { "filters[1].digest", NULL } }, NULL, "ALTER TABLE filters DROP COLUMN digest",
          "filters[1].digest: missing",
          "table \"filters\" column 5 is not \"digest TEXT NOT NULL\"" },
        { "missing-threads", { { "processes[0].threads", NULL } }, NULL, NULL, "processes[0].threads: missing" },
        { "unknown-field", { { "filters[0].extra", "1" } }, NULL, "ALTER TABLE filters ADD COLUMN extra INTEGER",
          "filters[0]: unknown field \"extra\"", "table \"filters\" has more columns than the 10 expected" },
        { "length-type", { { "filters[1].length", "\"four\"" } }, NULL,
          "UPDATE filters SET length = 'four' WHERE position = 1", "filters[1].length: expected an integer, got " },
        { "length-real", { { "filters[1].length", "4.0" } }, NULL, "UPDATE filters SET length = 4.5 WHERE position = 1",
          "filters[1].length: expected an integer, got a real number" },
        { "log-type", { { "filters[1].log", "1" } }, NULL, "UPDATE filters SET log = 2 WHERE position = 1",
          "filters[1].log: expected a boolean, got an integer", "filters[1].log: 2 is out of range 0..1" },
        { "program-type", { { "filters[0].program", "[[6, 0, 0]]" } }, NULL,
          "UPDATE filters SET program = 'six' WHERE position = 0", "filters[0].program[0]: expected [code, jt, jf, k]",
          "filters[0].program: expected a blob, got text" },
        { "program-range", { { "filters[0].program", "[[6, 256, 0, 0]]" } }, NULL,
          "UPDATE filters SET program = x'06000000000000' WHERE position = 0",
          "filters[0].program[0][1]: 256 is out of range 0..255", "filters[0].program: 7 bytes, not a whole number" },
        { "mode", { { "processes[0].threads[1].mode", "\"bogus\"" } }, NULL,
          "UPDATE threads SET mode = 'bogus' WHERE process = 0 AND position = 1",
          "processes[0].threads[1].mode: expected one of disabled, strict, filter" },
        { "identity", { { "source.identity", "\"maybe\"" } }, NULL, "UPDATE meta SET source_identity = 'maybe'",
          "identity: expected one of exact, inferred" },
        { "filter-identity", { { "filters[2].identity", "\"maybe\"" } }, NULL,
          "UPDATE filters SET identity = 'maybe' WHERE position = 2", "filters[2].identity: expected one of exact, inferred" },
        { "backend", { { "source.backend", "\"magic\"" } }, NULL, "UPDATE meta SET source_backend = 'magic'",
          "source.backend: expected one of bpf, ptrace" },
        { "created-at", { { "created_at", "\"yesterday\"" } }, NULL, "UPDATE meta SET created_at = 'yesterday'",
          "created_at: expected an RFC 3339 UTC time" },
        { "host-type", { { "host.kernel", "6" } }, NULL, "UPDATE meta SET host_kernel = x'36'",
          "kernel: expected a string or null, got an integer", "meta.host_kernel: expected text or null, got a blob" },
        { "pid-range", { { "processes[0].pid", "5000000" } }, NULL, "UPDATE processes SET pid = 5000000 WHERE position = 0",
          "processes[0].pid: 5000000 is out of range 1..4194304" },
        { "uid-real", { { "processes[0].uid", "1.5" } }, NULL, "UPDATE processes SET uid = 1.5 WHERE position = 0",
          "processes[0].uid: expected an integer, got a real number" },
        { "comm-long", { { "processes[0].comm", "\"a-very-long-command-name\"" } }, NULL,
          "UPDATE processes SET comm = 'a-very-long-command-name' WHERE position = 0",
          "processes[0] (pid 100).comm: 24 bytes, longer than the kernel's 15" },
        { "comm-utf8", {}, NULL, "UPDATE processes SET comm = CAST(x'78c328' AS TEXT) WHERE position = 0", NULL,
          "processes[0] (pid 100).comm: not valid UTF-8" },
        { "exe-nul", {}, NULL, "UPDATE processes SET exe = CAST(x'2f62696e002f7368' AS TEXT) WHERE position = 0", NULL,
          "processes[0].exe: contains a NUL byte" },
        { "argv-type", { { "processes[0].argv", "[1]" } }, NULL, "UPDATE processes SET argv = x'61' WHERE position = 0",
          "processes[0].argv[0]: expected a string, got an integer", "processes[0].argv: does not end in a NUL byte" },
        { "not-object", { { "processes[1]", "[]" } }, NULL, NULL, "processes[1]: expected an object, got an array" },
        /* duplicates */
        { "duplicate-filter-id", { { "filters[1].id", "1" } }, NULL, "UPDATE filters SET id = 1 WHERE position = 1",
          "filters[1] (id 1): duplicate id" },
        { "duplicate-pid", { { "processes[1].pid", "100" } }, NULL, "UPDATE processes SET pid = 100 WHERE position = 1",
          "processes[1] (pid 100): duplicate pid" },
        { "duplicate-tid", { { "processes[1].threads[0].tid", "101" } }, NULL,
          "UPDATE threads SET tid = 101 WHERE process = 1 AND position = 0",
          "processes[1].threads[0] (tid 101): duplicate tid (also processes[0].threads[1])" },
        { "duplicate-tid-same-process", { { "processes[0].threads[1].tid", "100" } }, NULL,
          "UPDATE threads SET tid = 100 WHERE process = 0 AND position = 1",
          "processes[0].threads[1] (tid 100): duplicate tid (also processes[0].threads[0])" },
        { "duplicate-listener-id", { { "listeners[1]", "{\"id\": 1, \"filter\": 2, \"holders\": []}" } }, NULL,
          "INSERT INTO listeners VALUES (1, 1, 2)", "listeners[1] (id 1): duplicate id (also listeners[0])" },
        { "duplicate-holder", { { "listeners[0].holders[1]", "{\"pid\": 100, \"fd\": 3}" } }, NULL,
          "UPDATE holders SET pid = 100, fd = 3 WHERE position = 1", "listeners[0].holders[1]: duplicate holder" },
        /* filters: parents, order, budget, programs, digests, listeners */
        { "parent-missing", { { "filters[2].parent", "12" } }, NULL, "UPDATE filters SET parent = 12 WHERE position = 2",
          "filters[2] (id 3): parent 12 does not exist" },
        { "parent-cycle", { { "filters[0].parent", "4" } }, NULL, "UPDATE filters SET parent = 4 WHERE position = 0",
          "parent links form a cycle" },
        { "parent-self", { { "filters[1].parent", "2" } }, NULL, "UPDATE filters SET parent = 2 WHERE position = 1",
          "filters[1] (id 2): parent links form a cycle" },
        { "parents-first", {}, swap_filters_2_3,
          "UPDATE filters SET position = 100 WHERE position = 2; UPDATE filters SET position = 2 WHERE position = 3; "
          "UPDATE filters SET position = 3 WHERE position = 100",
          "filters[2] (id 4): parent 3 is listed after it (filters[3]); filters must list parents first" },
        { "program-invalid", { { "filters[0].program", "[[32, 0, 0, 66], [6, 0, 0, 2147418112]]" },
                               { "filters[0].length", "2" } }, NULL,
          "UPDATE filters SET program = x'2000000042000000060000000000ff7f', length = 2 WHERE position = 0",
          "filters[0] (id 1): program: insn 0: load from offset 66 is not 4-byte aligned" },
        { "program-empty", { { "filters[0].program", "[]" }, { "filters[0].length", "0" } }, NULL,
          "UPDATE filters SET program = x'', length = 0 WHERE position = 0", "filters[0] (id 1): program: program is empty" },
        { "program-long", {}, long_program,
          "UPDATE filters SET program = zeroblob(8 * 4097), length = 4097 WHERE position = 0",
          "filters[0].program: 4097 instructions, more than the limit of 4096",
          "filters[0].program: 32776 bytes, more than the limit of 32768" },
        { "length-mismatch", { { "filters[1].length", "5" } }, NULL, "UPDATE filters SET length = 5 WHERE position = 1",
          "filters[1] (id 2): length 5 but the program has 4 instructions" },
        { "digest-mismatch", { { "filters[1].digest", ZERO_DIGEST } }, NULL,
          "UPDATE filters SET digest = 'sha256:" ZEROS "' WHERE position = 1",
          "filters[1] (id 2): the digest does not match the program" },
        { "digest-malformed", { { "filters[1].digest", "\"sha256:xyz\"" } }, NULL,
          "UPDATE filters SET digest = 'md5:0' WHERE position = 1",
          "filters[1].digest: expected \"sha256:\" and 64 hex digits" },
        { "filter-listener-missing", { { "filters[2].listener", "7" } }, NULL,
          "UPDATE filters SET listener = 7 WHERE position = 2", "filters[2] (id 3): listener 7 does not exist" },
        { "filter-listener-other", { { "filters[3].listener", "1" } }, NULL,
          "UPDATE filters SET listener = 1 WHERE position = 3", "filters[3] (id 4): listener 1 belongs to filter 3" },
        /* threads, listeners, holders */
        { "thread-filter-missing", { { "processes[0].threads[0].filter", "9" } }, NULL,
          "UPDATE threads SET filter = 9 WHERE process = 0 AND position = 0",
          "processes[0].threads[0] (tid 100): filter 9 does not exist" },
        { "thread-mode-filter", { { "processes[1].threads[1].filter", "2" } }, NULL,
          "UPDATE threads SET filter = 2 WHERE process = 1 AND position = 1",
          "processes[1].threads[1] (tid 201): mode strict with filter 2" },
        { "thread-filter-mode", { { "processes[0].threads[0].filter", "null" } }, NULL,
          "UPDATE threads SET filter = NULL WHERE process = 0 AND position = 0",
          "processes[0].threads[0] (tid 100): mode filter without a filter" },
        { "listener-nowhere", { { "listeners[0].filter", "9" }, { "filters[2].listener", "null" } }, NULL,
          "UPDATE listeners SET filter = 9; UPDATE filters SET listener = NULL WHERE position = 2",
          "listeners[0] (id 1): filter 9 does not exist" },
        { "listener-unnamed", { { "filters[2].listener", "null" } }, NULL,
          "UPDATE filters SET listener = NULL WHERE position = 2",
          "listeners[0] (id 1): filter 3 does not name it as its listener" },
        { "holder-outside", { { "listeners[0].holders[0].pid", "999" } }, NULL,
          "UPDATE holders SET pid = 999 WHERE position = 0",
          "listeners[0].holders[0]: pid 999 is not a process of the snapshot" },
        { "holder-fd", { { "listeners[0].holders[0].fd", "-1" } }, NULL, "UPDATE holders SET fd = -1 WHERE position = 0",
          "listeners[0].holders[0].fd: -1 is out of range 0..2147483647" },
        /* processes: tree shape */
        { "ppid-cycle", { { "processes[0].ppid", "200" } }, NULL, "UPDATE processes SET ppid = 200 WHERE position = 0",
          "ppid links form a cycle" },
        /* 100 holds a listener: outside the subtree of 200 it stays; 300 does not */
        { "subtree-outside", { { "root", "200" } }, NULL, "UPDATE meta SET root = 200",
          "processes[2] (pid 300): not in the subtree of root 200 (ppid 100) and not a listener holder" },
        { "subtree-root-missing", { { "root", "999" } }, NULL, "UPDATE meta SET root = 999",
          "root: process 999 is not in the snapshot" },
        /* sizes */
        { "too-many-threads", {}, too_many_threads,
          "WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 99999) "
          "INSERT INTO threads SELECT 2, x + 1, 10000 + x, 'disabled', NULL FROM c",
          "more than the limit of 100000 threads in all processes", "threads: 100005 rows, more than the limit of 100000" },
        /* SQLite rows */
        { "meta-rows", {}, NULL, "INSERT INTO meta SELECT * FROM meta", NULL, "meta: more than one row" },
        { "meta-empty", {}, NULL, "DELETE FROM meta", NULL, "meta: no row" },
        { "position-gap", {}, NULL, "UPDATE filters SET position = 7 WHERE position = 3", NULL,
          "filters: position 7 where 3 was expected" },
        { "thread-position-gap", {}, NULL, "UPDATE threads SET position = 5 WHERE process = 0 AND position = 1", NULL,
          "processes[0].threads: position 5 where 1 was expected" },
        { "thread-process", {}, NULL, "UPDATE threads SET process = 9 WHERE process = 2", NULL,
          "threads: row for processes 9, which is not a position in processes" },
        { "holder-listener", {}, NULL, "UPDATE holders SET listener = 4 WHERE position = 1", NULL,
          "holders: row for listeners 4, which is not a position in listeners" },
};

/* Walk "a.b[2][0].c" to the container of its last step. */
static json_t *json_walk(json_t *doc, const char *path, char **ret_key, ssize_t *ret_index) {
        g_autofree char *copy = g_strdup(path);
        json_t *cur = doc;
        char *p = copy;
        for (;;) {
                char *key = p;
                ssize_t index = -1;
                p += strcspn(p, ".[");
                bool more = *p != 0;
                if (*p == '[') {
                        *p++ = 0;
                        index = strtol(p, &p, 10);
                        g_assert_cmpint(*p++, ==, ']');
                        more = *p != 0;
                        if (*p == '.')
                                p++;
                } else if (*p == '.')
                        *p++ = 0;
                if (!more) {
                        if (index >= 0) {
                                cur = *key ? json_object_get(cur, key) : cur;
                                *ret_key = NULL;
                        } else
                                *ret_key = g_strdup(key);
                        *ret_index = index;
                        return cur;
                }
                if (*key)
                        cur = json_object_get(cur, key);
                if (index >= 0)
                        cur = json_array_get(cur, (size_t) index);
                g_assert_nonnull(cur);
                /* A path like "a[1][2]" continues with another index. */
                while (*p == '[') {
                        index = strtol(p + 1, &p, 10);
                        g_assert_cmpint(*p++, ==, ']');
                        cur = json_array_get(cur, (size_t) index);
                }
                if (*p == '.')
                        p++;
        }
}

static void json_edit(json_t *doc, const JsonEdit *e) {
        g_autofree char *key = NULL;
        ssize_t index;
        json_t *container = json_walk(doc, e->path, &key, &index);
        json_t *value = NULL;
        if (e->value) {
                json_error_t err;
                value = json_loads(e->value, JSON_DECODE_ANY, &err);
                if (!value)
                        g_error("bad test value %s: %s", e->value, err.text);
        }
        g_assert_nonnull(container);
        if (key && value)
                g_assert_cmpint(json_object_set_new(container, key, value), ==, 0);
        else if (key)
                g_assert_cmpint(json_object_del(container, key), ==, 0);
        else if (value && (size_t) index == json_array_size(container))
                g_assert_cmpint(json_array_append_new(container, value), ==, 0);
        else if (value)
                g_assert_cmpint(json_array_set_new(container, (size_t) index, value), ==, 0);
        else
                g_assert_cmpint(json_array_remove(container, (size_t) index), ==, 0);
}

static void assert_rejected(int r, const char *error, const char *expect, const char *what) {
        if (r >= 0)
                g_error("%s: accepted, expected \"%s\"", what, expect);
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_nonnull(error);
        if (!strstr(error, expect))
                g_error("%s: message \"%s\" does not contain \"%s\"", what, error, expect);
        g_autofree char *w = g_strescape(what, NULL), *e = g_strescape(error, NULL);
        g_test_message("%s: %s", w, e);
}

static void test_reject_json(const void *data) {
        const RejectCase *c = data;
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        g_autofree char *text = format_json(f), *error = NULL;
        json_t *doc = json_loads(text, 0, NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(c->json) && c->json[i].path; i++)
                json_edit(doc, &c->json[i]);
        if (c->json_fn)
                c->json_fn(doc);
        g_autofree char *mutated = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        g_autoptr(Forest) g = NULL;
        int r = snapshot_json_read(mutated, strlen(mutated), &g, &error);
        assert_rejected(r, error, c->expect, c->name);
        g_assert_null(g);
}

/* A valid snapshot file, changed with SQL as a hostile writer could, and read back as bytes. */
static void *sqlite_mutate(const char *sql, size_t *ret_size) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        return tests_snapshot_sqlite_mutated(f, sql, ret_size);
}

static void test_reject_sqlite(const void *data) {
        const RejectCase *c = data;
        g_autofree char *error = NULL;
        g_autoptr(Forest) g = NULL;
        size_t size;
        g_autofree void *image = sqlite_mutate(c->sql, &size);
        int r = snapshot_sqlite_read_data(image, size, &g, &error);
        assert_rejected(r, error, c->expect_sql ? c->expect_sql : c->expect, c->name);
        g_assert_null(g);
}

/* The kernel's budget: a chain of filters counts len + 4 for every filter below the newest. */
static void test_reject_chain_budget(void) {
        g_autofree struct sock_filter *big = g_new0(struct sock_filter, SNAPSHOT_MAX_FILTER_INSNS);
        for (size_t i = 0; i < SNAPSHOT_MAX_FILTER_INSNS; i++)
                big[i] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, 0x7fff0000);
        for (int n = 8; n <= 9; n++) {
                g_autoptr(Forest) f = forest_new();
                Process *p;
                Task *t;
                f->backend = g_strdup("bpf");
                for (int i = 1; i <= n; i++)
                        g_assert_cmpint(forest_add_filter(f, i, i - 1, big, i == n && n == 8 ? 68 : SNAPSHOT_MAX_FILTER_INSNS, NULL), ==, 0);
                g_assert_cmpint(forest_add_process(f, 1, &p), ==, 0);
                g_assert_cmpint(process_add_thread(p, 1, &t), ==, 0);
                t->mode = TASK_MODE_FILTER, t->filter_id = n;
                g_assert_cmpint(forest_link(f, NULL), ==, 0);
                g_autofree char *json = format_json(f), *error = NULL;
                g_autoptr(Forest) g = NULL;
                int r = snapshot_json_read(json, strlen(json), &g, &error);
                if (n == 8) {
                        /* 68 + 7 * 4100 = 28768: fits. */
                        g_assert_cmpint(r, ==, 0);
                        continue;
                }
                /* The 8th filter of 4096 is the first that does not fit: 4096 + 7 * 4100. */
                assert_rejected(r, error, "filters[7] (id 8): its chain counts 32796 instructions", "chain budget");
        }
}

static void test_reject_file_size(void) {
        size_t size = SNAPSHOT_MAX_FILE_SIZE + 1;
        g_autofree char *big = g_malloc(size);
        memset(big, ' ', size);
        g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;
        Forest *f = NULL;
        int r = snapshot_json_read(big, size, &f, &e1);
        assert_rejected(r, e1, "more than the limit of 67108864", "json size");
        memcpy(big, "SQLite format 3", 16);
        r = snapshot_sqlite_read_data(big, size, &f, &e2);
        assert_rejected(r, e2, "more than the limit of 67108864", "sqlite size");
        r = snapshot_read_data(big, size, &f, &e3);
        assert_rejected(r, e3, "more than the limit of 67108864", "any size");
        g_assert_null(f);
}

/* jansson holds a whole document, "[{},{},...]" at 80 times its size: parsing has a budget. */
static void test_reject_json_memory(void) {
        GString *doc = g_string_new("{\"format\": \"sectree-snapshot\", \"version\": 1, \"x\": [{}");
        for (int i = 0; i < 10000; i++)
                g_string_append(doc, ",{}");
        g_string_append(doc, "]}");
        g_autofree char *error = NULL, *text = g_string_free(doc, false);
        Forest *f = NULL;

        snapshot_json_set_max_memory(512 * 1024);
        int r = snapshot_json_read(text, strlen(text), &f, &error);
        assert_rejected(r, error, "JSON: parsing needs more than the limit of 512 KiB of memory", "memory");
        /* A real snapshot of that size fits. */
        g_autoptr(Forest) g = sample_forest(SAMPLE_BASIC), h = NULL;
        g_autofree char *json = format_json(g);
        g_assert_cmpint(snapshot_json_read(json, strlen(json), &h, NULL), ==, 0);
        snapshot_json_set_max_memory(0);
}

static void test_reject_json_syntax(void) {
        static const struct {
                const char *text, *expect;
        } cases[] = {
                { "{\"format\": \"sectree-snapshot\", \"format\": \"sectree-snapshot\"}", "a key that appears twice in one object" },
                { "{\"format\": \"sectree-snapshot\", \"version\": 1", "JSON: line 1" },
                { "[]", "snapshot: expected an object, got an array" },
                { "", "JSON: line 1" },
                { "{\"format\": \"sectree-snapshot\", \"version\": 1, \"x\": \"\\u0000\"}", "a NUL character" },
                { "{\"format\": \"sectree-\xff\"}", "not valid UTF-8" },
                { "{\"format\": \"sectree-snapshot\", \"version\": 99999999999999999999}", "a number out of range" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *error = NULL;
                Forest *f = NULL;
                int r = snapshot_json_read(cases[i].text, strlen(cases[i].text), &f, &error);
                assert_rejected(r, error, cases[i].expect, cases[i].text);
        }
}

/* Hostile SQLite files */

typedef struct HostileCase {
        const char *name, *sql, *expect;
} HostileCase;

static const HostileCase hostile_cases[] = {
        { "extra-table", "CREATE TABLE evil (x)", "SQLite schema: unexpected table \"evil\"" },
        { "view", "CREATE VIEW v AS SELECT * FROM filters", "SQLite schema: unexpected view \"v\"" },
        { "trigger", "CREATE TRIGGER t AFTER INSERT ON filters BEGIN SELECT 1; END",
          "SQLite schema: unexpected trigger \"t\"" },
        { "index", "CREATE INDEX i ON filters (id)", "SQLite schema: unexpected index \"i\"" },
        { "missing-table", "DROP TABLE holders", "SQLite schema: missing table \"holders\"" },
        { "column-type", "ALTER TABLE listeners RENAME COLUMN filter TO f",
          "table \"listeners\" column 2 is not \"filter INTEGER NOT NULL\"" },
        { "generated-column", "ALTER TABLE listeners ADD COLUMN g INTEGER GENERATED ALWAYS AS (id + 1)",
          "table \"listeners\" has more columns than the 3 expected" },
        { "wal", "PRAGMA journal_mode = WAL", "not WAL" },
};

static void test_hostile_schema(const void *data) {
        const HostileCase *c = data;
        g_autofree char *error = NULL;
        g_autoptr(Forest) g = NULL;
        size_t size;
        g_autofree void *image = sqlite_mutate(c->sql, &size);
        int r = snapshot_sqlite_read_data(image, size, &g, &error);
        assert_rejected(r, error, c->expect, c->name);
}

static void *valid_image(size_t *size) {
        return sqlite_mutate("SELECT 1", size);
}

static uint32_t root_page(const char *table) {
        g_autofree char *dir = tmp_dir();
        g_autofree char *path = g_build_filename(dir, "s.db", NULL);
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        sqlite3 *db;
        sqlite3_stmt *st;
        g_assert_cmpint(snapshot_sqlite_write(f, path), ==, 0);
        g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE name = ?1", -1, &st, NULL), ==, 0);
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
        uint32_t page = (uint32_t) sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        rm_rf(dir);
        return page;
}

static void test_hostile_corrupt_page(void) {
        size_t size;
        g_autofree uint8_t *image = valid_image(&size);
        uint32_t page_size = (uint32_t) image[16] << 8 | image[17];
        uint32_t page = root_page("filters");
        g_autofree char *error = NULL;
        Forest *f = NULL;

        /* The b-tree page header of the filters table: page type, freeblock, cell count. */
        memset(image + (size_t) (page - 1) * page_size, 0xff, 8);
        int r = snapshot_sqlite_read_data(image, size, &f, &error);
        assert_rejected(r, error, "SQLite: quick_check failed", "corrupt page");
}

/* The daemon reads a caller's file with its own credentials and sends the message back: no message
 * quotes the file's bytes (a value, a token near a syntax error, a name that is not an identifier),
 * only field names and positions. Every input below carries the marker. */
#define MARKER "s3cr3t-50000"
static void assert_no_echo(int r, const char *error, const char *what) {
        if (r != -EINVAL || !error)
                g_error("%s: not refused with a message (%d)", what, r);
        if (strstr(error, "s3cr3t") || strstr(error, "50000"))
                g_error("%s: the message quotes the file: %s", what, error);
}

static void test_errors_echo_nothing(void) {
        g_autoptr(Forest) g = sample_forest(SAMPLE_BASIC);
        g_autofree char *json = format_json(g);
        g_autofree char *extra_key = g_strdup_printf("{\"" MARKER "\": 1, %s", json + 1);
        g_autofree char *dup_key = g_strdup_printf("{\"" MARKER "\": 1, \"" MARKER "\": 2, %s", json + 1);
        const char *const texts[] = {
                "50000\n", MARKER "\n", "\"" MARKER "\"", "[\"" MARKER "\"]", "{\"format\": \"" MARKER "\"}",
                "{\"format\": \"sectree-snapshot\", \"version\": \"" MARKER "\"}",
                "{\"format\": \"sectree-snapshot\", \"version\": 1, " MARKER "}", extra_key, dup_key,
        };
        for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
                g_autofree char *error = NULL;
                Forest *f = NULL;
                int r = snapshot_read_data(texts[i], strlen(texts[i]), &f, &error);
                assert_no_echo(r, error, texts[i]);
        }
        static const char *const sql[] = {
                "CREATE TABLE \"" MARKER "\" (x)", "ALTER TABLE listeners RENAME COLUMN filter TO \"" MARKER "\"",
                "CREATE INDEX \"" MARKER "\" ON filters (id)",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(sql); i++) {
                g_autofree char *error = NULL;
                g_autoptr(Forest) h = NULL;
                size_t size;
                g_autofree void *image = sqlite_mutate(sql[i], &size);
                int r = snapshot_sqlite_read_data(image, size, &h, &error);
                assert_no_echo(r, error, sql[i]);
        }
}

/* Flip bytes all over the file, one position at a time: refused or (for bytes nothing reads)
 * accepted, never a crash, never an unexplained failure. */
static void test_hostile_flips(void) {
        size_t size, accepted = 0;
        g_autofree uint8_t *image = valid_image(&size);
        g_autoptr(GRand) rnd = g_rand_new_with_seed(4711);
        for (int i = 0; i < 2000; i++) {
                size_t at = i < 100 ? (size_t) i : (size_t) g_rand_int_range(rnd, 0, (gint32) size);
                uint8_t mask = i < 100 ? 0xff : (uint8_t) (1u << g_rand_int_range(rnd, 0, 8));
                g_autofree char *error = NULL;
                g_autoptr(Forest) f = NULL;
                image[at] ^= mask;
                int r = snapshot_sqlite_read_data(image, size, &f, &error);
                image[at] ^= mask;
                if (r == 0) {
                        accepted++;
                        continue;
                }
                if (r != -EINVAL || !error)
                        g_error("flip at %zu: %s (%s)", at, g_strerror(-r), error ? error : "no message");
        }
        g_test_message("%zu of 2000 flips were accepted (bytes no query reads)", accepted);
}

static void test_hostile_truncated(void) {
        size_t size;
        g_autofree uint8_t *image = valid_image(&size);
        uint32_t page_size = (uint32_t) image[16] << 8 | image[17];
        static const struct {
                size_t keep_pages, extra;
                const char *expect;
        } cases[] = {
                { 0, 50, "less than the 100-byte header" },
                { 1, 100, "is not a whole number of" },
                { 2, 0, "file is truncated: its header counts" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *error = NULL;
                Forest *f = NULL;
                size_t n = cases[i].keep_pages * page_size + cases[i].extra;
                int r = snapshot_sqlite_read_data(image, n, &f, &error);
                assert_rejected(r, error, cases[i].expect, cases[i].expect);
        }
        /* Cut anywhere: never a crash. */
        for (size_t n = 0; n < size; n += 97) {
                g_autofree char *error = NULL;
                Forest *f = NULL;
                g_assert_cmpint(snapshot_sqlite_read_data(image, n, &f, &error), ==, -EINVAL);
        }
}

static void test_hostile_not_snapshot(void) {
        g_autofree char *error = NULL, *error2 = NULL;
        Forest *f = NULL;
        static const char json[] = "{\"format\": \"sectree-snapshot\"}";
        int r = snapshot_sqlite_read_data(json, sizeof(json), &f, &error);
        assert_rejected(r, error, "not an SQLite file", "json");

        /* The daemon's state database is SQLite too, with another application id. */
        size_t size;
        g_autofree uint8_t *image = sqlite_mutate("PRAGMA application_id = 1397048148", &size);
        r = snapshot_read_data(image, size, &f, &error2);
        assert_rejected(r, error2, "application_id is 0x53454354", "state db");
}

/* What makes a forest a snapshot (name, who took it, how consistent) comes back from both
 * formats as it went in. */
static void assert_same_info(const Forest *a, const Forest *b, const char *what) {
        if (g_strcmp0(a->snapshot.name, b->snapshot.name) != 0 || a->snapshot.taken_by_uid != b->snapshot.taken_by_uid ||
            a->snapshot.consistency != b->snapshot.consistency)
                g_error("%s: snapshot info (%s, %u, %d) came back as (%s, %u, %d)", what, a->snapshot.name,
                        a->snapshot.taken_by_uid, a->snapshot.consistency, b->snapshot.name, b->snapshot.taken_by_uid,
                        b->snapshot.consistency);
}

static void test_snapshot_info(void) {
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                g_autoptr(Forest) f = sample_forest(k), g = NULL, h = NULL;
                g_autofree char *json = format_json(f);
                g_autofree void *image = NULL;
                size_t size;

                g_assert_cmpint(snapshot_json_read(json, strlen(json), &g, NULL), ==, 0);
                assert_same_info(f, g, "json");
                g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
                g_assert_cmpint(snapshot_sqlite_read_data(image, size, &h, NULL), ==, 0);
                assert_same_info(f, h, "sqlite");
        }

        /* Every value the fields can take, in both formats. */
        static const struct {
                const char *name;
                uint32_t uid;
                SnapshotConsistency consistency;
                const char *backend;
        } cases[] = {
                { NULL, 0, SNAPSHOT_CONSISTENCY_NONE, "bpf" },
                { "", 4294967294u, SNAPSHOT_CONSISTENCY_ITERATOR, "bpf" },
                { "nobody's \xc3\xa9t\xc3\xa9", 65534, SNAPSHOT_CONSISTENCY_FROZEN, "ptrace" },
                { SNAPSHOT_NAME_100 SNAPSHOT_NAME_100 "1234567890123456789012345678901234567890123456789012345", 1,
                  SNAPSHOT_CONSISTENCY_NONE, "ptrace" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(Forest) f = sample_forest(SAMPLE_EMPTY), g = NULL, h = NULL;
                g_autofree char *json = NULL, *error = NULL;
                g_autofree void *image = NULL;
                size_t size;

                g_assert_cmpint(snapshot_info_set_name(&f->snapshot, cases[i].name), ==, 0);
                f->snapshot.taken_by_uid = cases[i].uid;
                f->snapshot.consistency = cases[i].consistency;
                g_free(f->backend);
                f->backend = g_strdup(cases[i].backend);
                json = format_json(f);
                if (snapshot_json_read(json, strlen(json), &g, &error) < 0)
                        g_error("case %zu: %s", i, error);
                assert_same_info(f, g, "json");
                g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
                if (snapshot_sqlite_read_data(image, size, &h, &error) < 0)
                        g_error("case %zu: %s", i, error);
                assert_same_info(f, h, "sqlite");
        }

        /* A name one byte over the limit is refused, by the validator too. */
        g_autoptr(Forest) f = sample_forest(SAMPLE_EMPTY);
        g_autofree char *error = NULL, *name = g_strnfill(SNAPSHOT_MAX_NAME + 1, 'n');
        g_assert_cmpint(snapshot_info_set_name(&f->snapshot, name), ==, 0);
        g_assert_cmpint(snapshot_validate(f, &error), ==, -EINVAL);
        g_assert_cmpstr(error, ==, "snapshot.name: 257 bytes, more than the limit of 256");
}

/* A listener holder outside the subtree is part of a subtree snapshot; a process outside that
 * holds nothing is not, and neither is a holder that is not a process of the snapshot. */
static void test_subtree_holders(void) {
        static const struct {
                const char *sql;
                const char *expect;
        } cases[] = {
                { "DELETE FROM holders WHERE pid = 50",
                  "processes[0] (pid 50): not in the subtree of root 100 (ppid 1) and not a listener holder" },
                { "DELETE FROM threads WHERE process = 0; DELETE FROM processes WHERE position = 0; "
                  "UPDATE processes SET position = position - 1; UPDATE threads SET process = process - 1",
                  "listeners[0].holders[1]: pid 50 is not a process of the snapshot" },
        };
        g_autoptr(Forest) f = sample_forest(SAMPLE_SUBTREE);
        g_autofree char *dir = tmp_dir();
        g_autofree char *path = g_build_filename(dir, "s.db", NULL);
        g_autofree char *error = NULL;

        g_assert_cmpint(snapshot_validate(f, &error), ==, 0);
        g_assert_nonnull(forest_find_process(f, 50));
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(Forest) g = NULL;
                g_autofree char *e = NULL;
                gchar *data;
                gsize size;
                sqlite3 *db;

                g_assert_cmpint(snapshot_sqlite_write(f, path), ==, 0);
                g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
                g_assert_cmpint(sqlite3_exec(db, cases[i].sql, NULL, NULL, NULL), ==, SQLITE_OK);
                g_assert_cmpint(sqlite3_close(db), ==, SQLITE_OK);
                g_assert_true(g_file_get_contents(path, &data, &size, NULL));
                int r = snapshot_sqlite_read_data(data, size, &g, &e);
                g_free(data);
                assert_rejected(r, e, cases[i].expect, cases[i].sql);

                /* The same change in JSON. */
                g_autoptr(Forest) h = NULL;
                g_autofree char *json = format_json(f), *e2 = NULL;
                json_t *doc = json_loads(json, 0, NULL);
                json_t *holders = json_object_get(json_array_get(json_object_get(doc, "listeners"), 0), "holders");
                if (i == 0)
                        json_array_remove(holders, 1);
                else
                        json_array_remove(json_object_get(doc, "processes"), 0);
                g_autofree char *mutated = json_dumps(doc, JSON_COMPACT);
                json_decref(doc);
                r = snapshot_json_read(mutated, strlen(mutated), &h, &e2);
                assert_rejected(r, e2, cases[i].expect, "json");
        }
        g_assert_cmpint(unlink(path), ==, 0);
        rm_rf(dir);
}

/* Diff */

static SnapshotDiff *diff_variant(unsigned va, unsigned vb, Forest **ret_a, Forest **ret_b) {
        SnapshotDiff *d = NULL;
        *ret_a = sample_forest_variant(va);
        *ret_b = sample_forest_variant(vb);
        g_assert_cmpint(snapshot_diff(*ret_a, *ret_b, &d), ==, 0);
        return d;
}

static json_t *diff_json(const SnapshotDiff *d) {
        g_autofree char *s = NULL;
        g_assert_cmpint(snapshot_diff_format_json(d, &s), ==, 0);
        json_t *doc = json_loads(s, 0, NULL);
        g_assert_nonnull(doc);
        return doc;
}

static char *diff_text(const SnapshotDiff *d) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        g_assert_cmpint(snapshot_diff_print(d, f), ==, 0);
        fclose(f);
        return buf;
}

static void test_diff_identical(void) {
        g_autoptr(Forest) a = NULL, b = NULL;
        g_autoptr(SnapshotDiff) d = diff_variant(VARIANT_NONE, VARIANT_NONE, &a, &b);
        g_assert_true(snapshot_diff_is_empty(d));
        g_autofree char *text = diff_text(d);
        g_assert_cmpstr(text, ==, "no differences\n");
        json_t *doc = diff_json(d);
        g_assert_true(json_is_true(json_object_get(doc, "identical")));
        json_decref(doc);
}

/* Metadata is not the forest: another name, taker or consistency is no difference. */
static void test_diff_metadata(void) {
        g_autoptr(Forest) a = sample_forest(SAMPLE_BASIC), b = sample_forest(SAMPLE_BASIC);
        g_autoptr(SnapshotDiff) d = NULL;
        g_assert_cmpint(snapshot_info_set_name(&b->snapshot, "another"), ==, 0);
        b->snapshot.taken_by_uid = 1000;
        b->snapshot.consistency = SNAPSHOT_CONSISTENCY_NONE;
        b->created_at_usec += 3600 * 1000000ULL;
        g_assert_cmpint(snapshot_diff(a, b, &d), ==, 0);
        g_assert_true(snapshot_diff_is_empty(d));
}

static void test_diff_program(void) {
        g_autoptr(Forest) a = NULL, b = NULL;
        g_autoptr(SnapshotDiff) d = diff_variant(VARIANT_NONE, VARIANT_PROGRAM, &a, &b);
        /* Filter 4 is the only child of filter 3 on both sides: changed, not removed and added. */
        g_assert_cmpuint(d->n_filters, ==, 1);
        g_assert_cmpint(d->filters[0].kind, ==, DIFF_CHANGED);
        g_assert_cmpuint(d->filters[0].a->id, ==, 4);
        g_assert_cmpuint(d->filters[0].b->id, ==, 4);
        g_assert_cmpuint(d->filters[0].changes, ==, FILTER_CHANGE_PROGRAM);
        /* Thread 101 runs on it. */
        g_assert_cmpuint(d->n_tasks, ==, 1);
        g_assert_cmpint(d->tasks[0].kind, ==, DIFF_CHANGED);
        g_assert_cmpint(d->tasks[0].a->tid, ==, 101);
        g_assert_cmpuint(d->n_processes, ==, 0);

        json_t *doc = diff_json(d), *x = json_array_get(json_object_get(doc, "filters"), 0);
        g_assert_cmpstr(json_string_value(json_object_get(x, "change")), ==, "changed");
        g_assert_cmpstr(json_string_value(json_array_get(json_object_get(x, "what"), 0)), ==, "program");
        /* Its position: the digests of filters 1, 3 and itself. */
        json_t *path = json_object_get(json_object_get(x, "b"), "path");
        g_assert_cmpuint(json_array_size(path), ==, 3);
        char digest[PROG_DIGEST_STRING_MAX];
        g_assert_cmpstr(json_string_value(json_array_get(path, 0)), ==,
                        prog_digest_to_string(forest_find_filter(a, 1)->digest, digest));
        g_assert_cmpstr(json_string_value(json_array_get(path, 2)), ==,
                        prog_digest_to_string(forest_find_filter(b, 4)->digest, digest));
        json_decref(doc);

        g_autofree char *text = diff_text(d);
        g_assert_nonnull(strstr(text, "filters: 0 added, 0 removed, 1 changed\n"));
        g_assert_nonnull(strstr(text, "  ~ thread 101 of process 100"));
}

static void test_diff_flags(void) {
        g_autoptr(Forest) a = NULL, b = NULL;
        g_autoptr(SnapshotDiff) d = diff_variant(VARIANT_NONE, VARIANT_LOG, &a, &b);
        g_assert_cmpuint(d->n_filters, ==, 1);
        g_assert_cmpuint(d->filters[0].changes, ==, FILTER_CHANGE_LOG);
        /* Threads 100 and 101 have filter 1 in their chains. */
        g_assert_cmpuint(d->n_tasks, ==, 2);
}

static void test_diff_processes(void) {
        g_autoptr(Forest) a = NULL, b = NULL;
        g_autoptr(SnapshotDiff) d = diff_variant(VARIANT_NO_300, VARIANT_NEW_PROCESS | VARIANT_RESTART_200, &a, &b);
        /* Filter 5 on filter 3 is new. */
        g_assert_cmpuint(d->n_filters, ==, 1);
        g_assert_cmpint(d->filters[0].kind, ==, DIFF_ADDED);
        g_assert_cmpuint(d->filters[0].b->id, ==, 5);
        /* 200 restarted (removed and added), 300 and 400 added. */
        g_assert_cmpuint(d->n_processes, ==, 4);
        g_assert_cmpint(d->processes[0].kind, ==, DIFF_REMOVED);
        g_assert_cmpint(d->processes[0].a->pid, ==, 200);
        g_assert_cmpint(d->processes[1].kind, ==, DIFF_ADDED);
        g_assert_cmpint(d->processes[1].b->pid, ==, 200);
        g_assert_cmpint(d->processes[2].b->pid, ==, 300);
        g_assert_cmpint(d->processes[3].b->pid, ==, 400);
        g_assert_cmpuint(d->n_tasks, ==, 0);
        json_t *doc = diff_json(d);
        g_assert_cmpuint(json_array_size(json_object_get(doc, "processes")), ==, 4);
        json_decref(doc);
}

static void test_diff_reverse_and_mode(void) {
        g_autoptr(Forest) a = NULL, b = NULL;
        g_autoptr(SnapshotDiff) d = diff_variant(VARIANT_NEW_PROCESS | VARIANT_STRICT_101, VARIANT_NONE, &a, &b);
        g_assert_cmpuint(d->n_filters, ==, 1);
        g_assert_cmpint(d->filters[0].kind, ==, DIFF_REMOVED);
        g_assert_cmpuint(d->n_processes, ==, 1);
        g_assert_cmpint(d->processes[0].kind, ==, DIFF_REMOVED);
        g_assert_cmpint(d->processes[0].a->pid, ==, 400);
        g_assert_cmpuint(d->n_tasks, ==, 1);
        g_assert_cmpint(d->tasks[0].a->mode, ==, TASK_MODE_STRICT);
        g_assert_cmpint(d->tasks[0].b->mode, ==, TASK_MODE_FILTER);
        g_autofree char *text = diff_text(d);
        g_assert_nonnull(strstr(text, "strict -> filter, chain of 3 ending in "));
}

/* Siblings with the same bytes are distinct filters: one of two going is one removal. */
static void test_diff_twins(void) {
        static const struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, 0x7fff0000) };
        Forest *f[2];
        for (int k = 0; k < 2; k++) {
                f[k] = forest_new();
                f[k]->backend = g_strdup("bpf");
                for (int i = 1; i <= 2 + k; i++)
                        g_assert_cmpint(forest_add_filter(f[k], i, 0, allow, 1, NULL), ==, 0);
                g_assert_cmpint(forest_link(f[k], NULL), ==, 0);
        }
        g_autoptr(SnapshotDiff) d = NULL;
        g_assert_cmpint(snapshot_diff(f[0], f[1], &d), ==, 0);
        g_assert_cmpuint(d->n_filters, ==, 1);
        g_assert_cmpint(d->filters[0].kind, ==, DIFF_ADDED);
        g_assert_cmpuint(d->filters[0].b->id, ==, 3);
        snapshot_diff_free(g_steal_pointer(&d));
        forest_free(f[0]);
        forest_free(f[1]);
}

/* At the limits in every dimension that costs time: 100,000 processes in one ppid chain under
 * root, a chain of filters as deep as the kernel's budget allows, a listener on every filter.
 * Every step is linear: this finishes in seconds, not hours. */
static Forest *make_large(void) {
        static const struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, 0x7fff0000) };
        const int n_filters = (SNAPSHOT_MAX_PATH_INSNS + SNAPSHOT_PATH_INSN_PENALTY) / (1 + SNAPSHOT_PATH_INSN_PENALTY);
        Forest *f = forest_new();
        f->backend = g_strdup("bpf");
        f->root = 1;
        for (int i = 1; i <= n_filters; i++) {
                Listener *l;
                g_assert_cmpint(forest_add_filter(f, i, i - 1, allow, 1, NULL), ==, 0);
                g_assert_cmpint(forest_append_listener(f, i, i, &l), ==, 0);
                g_assert_cmpint(listener_append_holder(l, 1 + i, 3), ==, 0);
        }
        for (int pid = 1; pid <= SNAPSHOT_MAX_TASKS; pid++) {
                Process *p;
                Task *t;
                g_assert_cmpint(forest_add_process(f, pid, &p), ==, 0);
                p->ppid = pid - 1;
                strcpy(p->comm, "chain");
                g_assert_cmpint(process_append_thread(p, pid, &t), ==, 0);
                t->mode = TASK_MODE_FILTER;
                t->filter_id = 1 + (uint64_t) pid % n_filters;
        }
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        return f;
}

static void test_large(void) {
        g_autoptr(Forest) f = make_large(), g = NULL, h = NULL;
        g_autofree char *json = format_json(f), *error = NULL;
        g_autofree void *image = NULL;
        size_t size;

        int r = snapshot_json_read(json, strlen(json), &g, &error);
        if (r < 0)
                g_error("%s", error);
        g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
        r = snapshot_sqlite_read_data(image, size, &h, &error);
        if (r < 0)
                g_error("%s", error);
        g_autofree char *again = format_json(h);
        g_assert_cmpstr(json, ==, again);
        g_autoptr(SnapshotDiff) d = NULL;
        g_assert_cmpint(snapshot_diff(g, h, &d), ==, 0);
        g_assert_true(snapshot_diff_is_empty(d));

        /* One filter more does not fit the budget. */
        static const struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, 0x7fff0000) };
        g_autoptr(Forest) k = NULL;
        g_autofree char *error2 = NULL;
        g_assert_cmpint(forest_add_filter(f, f->n_filters + 1, f->n_filters, allow, 1, NULL), ==, 0);
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        g_autofree char *deeper = format_json(f);
        r = snapshot_json_read(deeper, strlen(deeper), &k, &error2);
        assert_rejected(r, error2, "more than the kernel's 32768", "budget");
}

/* The compact writer joins pieces that jansson dumped, and writes the programs itself: its
 * output is exactly jansson's dump of the whole document, and the pretty form is the same one. */
static void test_json_compact(void) {
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                g_autoptr(Forest) f = sample_forest(k);
                g_autofree char *compact = NULL, *pretty = NULL;
                g_assert_cmpint(snapshot_json_format(f, 0, &compact), ==, 0);
                g_assert_cmpint(snapshot_json_format(f, SNAPSHOT_JSON_PRETTY, &pretty), ==, 0);
                for (int i = 0; i < 2; i++) {
                        json_error_t e;
                        json_t *doc = json_loads(i ? pretty : compact, 0, &e);
                        if (!doc)
                                g_error("%s: %s", sample_kind_to_string(k), e.text);
                        g_autofree char *again = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
                        json_decref(doc);
                        g_assert_cmpstr(compact, ==, again);
                }
        }
}

/* What an import's worker uses when its transfer is gone: a JSON read gives up. */
static void test_json_cancel(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC), g = NULL;
        g_autofree char *json = NULL, *error = NULL;
        g_assert_cmpint(snapshot_json_format(f, 0, &json), ==, 0);
        atomic_bool cancel = true;
        snapshot_json_set_cancel(&cancel);
        g_assert_cmpint(snapshot_json_read(json, strlen(json), &g, &error), ==, -ECANCELED);
        g_assert_null(g);
        atomic_store(&cancel, false);
        g_assert_cmpint(snapshot_json_read(json, strlen(json), &g, &error), ==, 0);
        snapshot_json_set_cancel(NULL);
        g_assert_cmpint(forest_isomorphic(f, g, NULL, 0, NULL), ==, 1);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/snapshot/json/round-trip", test_json_round_trip);
        g_test_add_func("/snapshot/sqlite/round-trip", test_sqlite_round_trip);
        g_test_add_func("/snapshot/sqlite/file-header", test_sqlite_file_header);
        g_test_add_func("/snapshot/thread-no-new-privs", test_thread_no_new_privs);
        g_test_add_func("/snapshot/exited-leader", test_exited_leader);
        g_test_add_func("/snapshot/keep-task-of-exited-leader", test_keep_task_of_exited_leader);
        g_test_add_func("/snapshot/info", test_snapshot_info);
        g_test_add_func("/snapshot/json/compact", test_json_compact);
        g_test_add_func("/snapshot/json/cancel", test_json_cancel);
        g_test_add_func("/snapshot/subtree-holders", test_subtree_holders);
        g_test_add_func("/snapshot/non-utf8", test_non_utf8_strings);
        g_test_add_func("/snapshot/read-any", test_read_any);
        g_test_add_func("/snapshot/fuzz-corpus", test_fuzz_corpus);
        g_test_add_func("/snapshot/times", test_times);
        g_test_add_func("/snapshot/utf8", test_utf8);
        for (size_t i = 0; i < G_N_ELEMENTS(reject_cases); i++) {
                const RejectCase *c = &reject_cases[i];
                if (c->json[0].path || c->json_fn) {
                        g_autofree char *name = g_strdup_printf("/snapshot/reject/json/%s", c->name);
                        g_test_add_data_func(name, c, test_reject_json);
                }
                if (c->sql) {
                        g_autofree char *name = g_strdup_printf("/snapshot/reject/sqlite/%s", c->name);
                        g_test_add_data_func(name, c, test_reject_sqlite);
                }
        }
        g_test_add_func("/snapshot/reject/chain-budget", test_reject_chain_budget);
        g_test_add_func("/snapshot/reject/file-size", test_reject_file_size);
        g_test_add_func("/snapshot/reject/json-syntax", test_reject_json_syntax);
        g_test_add_func("/snapshot/reject/json-memory", test_reject_json_memory);
        for (size_t i = 0; i < G_N_ELEMENTS(hostile_cases); i++) {
                g_autofree char *name = g_strdup_printf("/snapshot/hostile/%s", hostile_cases[i].name);
                g_test_add_data_func(name, &hostile_cases[i], test_hostile_schema);
        }
        g_test_add_func("/snapshot/hostile/corrupt-page", test_hostile_corrupt_page);
        g_test_add_func("/snapshot/hostile/errors-echo-nothing", test_errors_echo_nothing);
        g_test_add_func("/snapshot/hostile/flips", test_hostile_flips);
        g_test_add_func("/snapshot/hostile/truncated", test_hostile_truncated);
        g_test_add_func("/snapshot/hostile/not-snapshot", test_hostile_not_snapshot);
        g_test_add_func("/snapshot/large", test_large);
        g_test_add_func("/snapshot/diff/identical", test_diff_identical);
        g_test_add_func("/snapshot/diff/metadata", test_diff_metadata);
        g_test_add_func("/snapshot/diff/program", test_diff_program);
        g_test_add_func("/snapshot/diff/flags", test_diff_flags);
        g_test_add_func("/snapshot/diff/processes", test_diff_processes);
        g_test_add_func("/snapshot/diff/reverse-and-mode", test_diff_reverse_and_mode);
        g_test_add_func("/snapshot/diff/twins", test_diff_twins);
        return g_test_run();
}
