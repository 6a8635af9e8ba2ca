/* test-store-snapshot.c: snapshots in the state database (daemon/store/store-snapshot.c): every sample
 * stored and read back equal, listing, quotas (bytes too), deletes that take every row, ids never
 * reused, strings that are not UTF-8, writing in steps (invisible until finished, taken back
 * when abandoned or left by a stopped daemon), and reading through a connection of its own */
#include <glib/gstdio.h>
#include <jansson.h>
#include <sqlite3.h>

#include "snapshot-samples.h"
#include "snapshot/snapshot-json.h"
#include "store/state-migrations.h"
#include "store/store-snapshot.h"
#include "tests-util.h"

typedef struct Fixture {
        char *dir;
        Store *store;
} Fixture;

static void fixture_setup(Fixture *fx, gconstpointer data) {
        fx->dir = g_dir_make_tmp("test-store-snapshot-XXXXXX", NULL);
        g_assert_nonnull(fx->dir);
        g_assert_cmpint(store_open(fx->dir, &fx->store), ==, 0);
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        store_free(fx->store);
        const char *names[] = { "state.db", "state.db-wal", "state.db-shm" };
        for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
                g_autofree char *p = g_build_filename(fx->dir, names[i], NULL);
                (void) g_unlink(p);
        }
        g_assert_cmpint(g_rmdir(fx->dir), ==, 0);
        g_free(fx->dir);
}

#define TEST(name, fn) g_test_add(name, Fixture, NULL, fixture_setup, fn, fixture_teardown)

static char *as_json(const Forest *f) {
        char *s = NULL;
        g_assert_cmpint(snapshot_json_format(f, SNAPSHOT_JSON_PRETTY, &s), ==, 0);
        return s;
}

static uint64_t put(Fixture *fx, const Forest *f, uid_t owner, const StoreSnapshotQuota *q, int want) {
        uint64_t id = 0;
        g_assert_cmpint(store_snapshot_put(fx->store, f, owner, false, q, 1000, &id), ==, want);
        return id;
}

/* A thread's own no_new_privs (it is per thread) is stored and read back. */
static void test_thread_no_new_privs(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        Process *p = f->processes[0];
        task_set_no_new_privs(&p->threads[0], !p->no_new_privs);
        uint64_t id = put(fx, f, 7, NULL, 0);
        g_autoptr(Forest) back = NULL;
        g_assert_cmpint(store_snapshot_load(fx->store, id, &back), ==, 0);
        g_assert_true(task_no_new_privs_differs(back->processes[0], &back->processes[0]->threads[0]));
        g_autofree char *want = as_json(f), *got = as_json(back);
        g_assert_cmpstr(want, ==, got);
}

/* A leader that exited: its mode and number of filters are stored and read back. */
static void test_exited_leader(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        Process *p = f->processes[0];
        pid_t pid = p->pid;
        g_assert_cmpint(process_add_thread(p, pid + 5000, NULL), ==, 0);
        p->threads[p->n_threads - 1].mode = TASK_MODE_DISABLED;
        if (process_find_thread(p, pid))
                g_assert_cmpint(forest_remove_thread(f, pid, pid), ==, 0);
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        g_assert_cmpint(forest_drop_unreachable_filters(f, NULL, NULL), ==, 0);
        process_set_exited_leader(p, TASK_MODE_FILTER, 2);
        uint64_t id = put(fx, f, 7, NULL, 0);
        g_autoptr(Forest) back = NULL;
        g_assert_cmpint(store_snapshot_load(fx->store, id, &back), ==, 0);
        g_autofree char *want = as_json(f), *got = as_json(back);
        g_assert_cmpstr(want, ==, got);
        g_assert_true(forest_find_process(back, pid)->has_exited_leader);
        g_assert_cmpuint(forest_find_process(back, pid)->exited_leader.filter_count, ==, 2);
}

static void test_samples(Fixture *fx, gconstpointer data) {
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                g_autoptr(Forest) f = sample_forest(k);
                g_assert_nonnull(f);
                snapshot_info_set_name(&f->snapshot, "sample");
                f->snapshot.taken_by_uid = 42;
                f->snapshot.consistency = SNAPSHOT_CONSISTENCY_FROZEN;
                uint64_t id = put(fx, f, 7, NULL, 0);
                g_autoptr(Forest) back = NULL;
                g_assert_cmpint(store_snapshot_load(fx->store, id, &back), ==, 0);
                g_autofree char *want = as_json(f), *got = as_json(back);
                if (!streq(want, got))
                        g_error("sample %s read back differs:\n%s\n%s", sample_kind_to_string(k), want, got);

                StoredSnapshot row;
                g_assert_cmpint(store_snapshot_get(fx->store, id, &row), ==, 0);
                g_assert_cmpstr(row.name, ==, "sample");
                g_assert_cmpuint(row.owner_uid, ==, 7);
                g_assert_cmpuint(row.taken_by_uid, ==, 42);
                g_assert_cmpstr(row.consistency, ==, "frozen");
                g_assert_cmpuint(row.processes, ==, f->n_processes);
                g_assert_cmpuint(row.filters, ==, f->n_filters);
                g_assert_cmpuint(row.listeners, ==, f->n_listeners);
                g_assert_false(row.imported);
                stored_snapshot_done(&row);
        }
        StoredSnapshot *l;
        size_t n;
        g_assert_cmpint(store_snapshot_list(fx->store, &l, &n), ==, 0);
        g_assert_cmpuint(n, ==, _SAMPLE_MAX);
        for (size_t i = 1; i < n; i++)
                g_assert_cmpuint(l[i - 1].id, <, l[i].id);
        stored_snapshots_free(l, n);
}

static int count_rows(Fixture *fx, uint64_t id) {
        g_autofree char *path = g_build_filename(fx->dir, "state.db", NULL);
        sqlite3 *db;
        sqlite3_stmt *st;
        g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
        g_autofree char *sql = g_strdup_printf(
                "SELECT (SELECT count(*) FROM snapshots WHERE id = %1$" PRIu64 ") + "
                "(SELECT count(*) FROM snapshot_filters WHERE snapshot = %1$" PRIu64 ") + "
                "(SELECT count(*) FROM snapshot_processes WHERE snapshot = %1$" PRIu64 ") + "
                "(SELECT count(*) FROM snapshot_threads WHERE snapshot = %1$" PRIu64 ") + "
                "(SELECT count(*) FROM snapshot_listeners WHERE snapshot = %1$" PRIu64 ") + "
                "(SELECT count(*) FROM snapshot_holders WHERE snapshot = %1$" PRIu64 ")",
                id);
        g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &st, NULL), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
        int n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

static void test_delete(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        uint64_t a = put(fx, f, 0, NULL, 0), b = put(fx, f, 0, NULL, 0);
        g_assert_cmpint(count_rows(fx, a), >, 10);
        g_assert_cmpint(store_snapshot_delete(fx->store, a), ==, 1);
        g_assert_cmpint(store_snapshot_delete(fx->store, a), ==, 0);
        g_assert_cmpint(count_rows(fx, a), ==, 0);
        g_assert_cmpint(count_rows(fx, b), >, 10);
        g_autoptr(Forest) gone = NULL;
        g_assert_cmpint(store_snapshot_load(fx->store, a, &gone), ==, -ENOENT);
        StoredSnapshot row;
        g_assert_cmpint(store_snapshot_get(fx->store, a, &row), ==, -ENOENT);
        /* the highest id deleted is not handed out again */
        g_assert_cmpint(store_snapshot_delete(fx->store, b), ==, 1);
        g_assert_cmpuint(put(fx, f, 0, NULL, 0), >, b);
}

static void test_quota(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        StoreSnapshotQuota two = { .snapshots = 2 };
        put(fx, f, 5, &two, 0);
        put(fx, f, 5, &two, 0);
        put(fx, f, 5, &two, -EDQUOT);
        put(fx, f, 6, &two, 0); /* per owner */
        size_t insns = 0;
        for (size_t i = 0; i < f->n_filters; i++)
                insns += f->filters[i]->len;
        StoreSnapshotQuota small = { .instructions = insns * 2 + insns / 2 };
        put(fx, f, 6, &small, 0);
        put(fx, f, 6, &small, -EDQUOT);
        StoreSnapshotQuota threads = { .threads = 1 };
        put(fx, f, 8, &threads, -EDQUOT);
        StoreSnapshotQuota bytes = { .bytes = 2 * store_snapshot_bytes(f) };
        put(fx, f, 9, &bytes, 0);
        put(fx, f, 9, &bytes, 0);
        put(fx, f, 9, &bytes, -EDQUOT);
        StoredSnapshot *l;
        size_t n;
        g_assert_cmpint(store_snapshot_list(fx->store, &l, &n), ==, 0);
        g_assert_cmpuint(n, ==, 6); /* refused ones left nothing */
        stored_snapshots_free(l, n);
}

static int64_t query_int(Fixture *fx, const char *sql) {
        sqlite3_stmt *st;
        g_assert_cmpint(sqlite3_prepare_v2(store_database(fx->store), sql, -1, &st, NULL), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
        int64_t n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return n;
}

static int64_t element_rows(Fixture *fx) {
        return query_int(fx, "SELECT (SELECT count(*) FROM snapshot_filters) + (SELECT count(*) FROM "
                              "snapshot_processes) + (SELECT count(*) FROM snapshot_threads) + (SELECT count(*) FROM "
                              "snapshot_listeners) + (SELECT count(*) FROM snapshot_holders)");
}

/* A snapshot written one row at a time is nowhere to be seen until it is finished, yet counts for
 * its owner's quota; abandoned, it takes its rows with it. */
static void test_steps(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_SUBTREE);
        StoreSnapshotQuota one = { .snapshots = 1 };
        StoreSnapshotWriter *w = NULL;
        StoredSnapshot row;
        StoredSnapshot *l;
        size_t n;
        g_assert_cmpint(store_snapshot_writer_new(fx->store, f, 3, true, &one, 1000, &w), ==, 0);
        int steps = 0, r;
        while ((r = store_snapshot_writer_step(w, 1)) == 0) {
                steps++;
                g_assert_cmpint(store_snapshot_list(fx->store, &l, &n), ==, 0);
                g_assert_cmpuint(n, ==, 0);
                stored_snapshots_free(l, n);
                g_assert_cmpint(store_snapshot_get(fx->store, 1, &row), ==, -ENOENT);
                g_assert_cmpint(store_snapshot_delete(fx->store, 1), ==, 0);
                g_autoptr(Forest) none = NULL;
                g_assert_cmpint(store_snapshot_load(fx->store, 1, &none), ==, -ENOENT);
                put(fx, f, 3, &one, -EDQUOT); /* the place is taken */
        }
        g_assert_cmpint(r, ==, 1);
        g_assert_cmpint(steps + 1, ==, element_rows(fx)); /* one row per step */
        uint64_t id;
        g_assert_cmpint(store_snapshot_writer_finish(w, &id), ==, 0);
        store_snapshot_writer_free(w);
        g_autoptr(Forest) back = NULL;
        g_assert_cmpint(store_snapshot_load(fx->store, id, &back), ==, 0);
        g_autofree char *want = as_json(f), *got = as_json(back);
        g_assert_cmpstr(want, ==, got);
        g_assert_cmpint(store_snapshot_get(fx->store, id, &row), ==, 0);
        g_assert_true(row.imported);
        stored_snapshot_done(&row);

        /* abandoned half-way */
        g_assert_cmpint(store_snapshot_writer_new(fx->store, f, 4, false, NULL, 1000, &w), ==, 0);
        g_assert_cmpint(store_snapshot_writer_step(w, 3), ==, 0);
        g_assert_cmpint(element_rows(fx), ==, 2 * steps + 2 - (steps + 1) + 3);
        store_snapshot_writer_free(w);
        g_assert_cmpint(element_rows(fx), ==, steps + 1);
        g_assert_cmpint(query_int(fx, "SELECT count(*) FROM snapshots"), ==, 1);
}

/* A writer that fails when the database also refuses its row's deletion (a full disk) leaves the
 * row: the next writer deletes it before it counts its owner's quota (it used to count until the
 * daemon restarted, and showed nowhere). */
static void test_unfinished_left(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        StoreSnapshotQuota one = { .snapshots = 1 };
        StoreSnapshotWriter *w = NULL;
        sqlite3 *db = store_database(fx->store);
        g_assert_cmpint(store_snapshot_writer_new(fx->store, f, 7, false, &one, 1000, &w), ==, 0);
        g_assert_cmpint(store_snapshot_writer_step(w, 1), ==, 0);
        g_assert_cmpint(sqlite3_exec(db, "CREATE TRIGGER keep BEFORE DELETE ON snapshots BEGIN SELECT RAISE(ABORT, "
                                         "'refused by the test'); END", NULL, NULL, NULL), ==, SQLITE_OK);
        store_snapshot_writer_free(w); /* abandoned; its row stays */
        g_assert_cmpint(query_int(fx, "SELECT count(*) FROM snapshots WHERE NOT complete"), ==, 1);
        g_assert_cmpint(sqlite3_exec(db, "DROP TRIGGER keep", NULL, NULL, NULL), ==, SQLITE_OK);
        uint64_t id = put(fx, f, 7, &one, 0); /* the quota of one has room again */
        g_assert_cmpuint(id, !=, 0);
        g_assert_cmpint(query_int(fx, "SELECT count(*) FROM snapshots"), ==, 1);
}

/* What a daemon that stopped half-way left is deleted at the next start, with all its rows. */
static void test_discard_incomplete(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        uint64_t kept = put(fx, f, 0, NULL, 0), left = put(fx, f, 0, NULL, 0);
        char sql[128];
        snprintf(sql, sizeof(sql), "UPDATE snapshots SET complete = 0 WHERE id = %" PRIu64, left);
        g_assert_cmpint(sqlite3_exec(store_database(fx->store), sql, NULL, NULL, NULL), ==, SQLITE_OK);
        int64_t rows = element_rows(fx);
        g_assert_cmpint(store_snapshot_discard_incomplete(fx->store), ==, 0);
        g_assert_cmpint(element_rows(fx), ==, rows / 2);
        g_assert_cmpint(query_int(fx, "SELECT count(*) FROM snapshots"), ==, 1);
        StoredSnapshot row;
        g_assert_cmpint(store_snapshot_get(fx->store, kept, &row), ==, 0);
        stored_snapshot_done(&row);
}

/* A worker's own read-only connection reads what the Store wrote (and not what is unfinished). */
static void test_load_path(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_INFERRED);
        uint64_t id = put(fx, f, 0, NULL, 0);
        g_autofree char *path = g_build_filename(fx->dir, "state.db", NULL);
        g_autoptr(Forest) back = NULL, none = NULL;
        g_assert_cmpint(store_snapshot_load_path(path, id, &back), ==, 0);
        g_autofree char *want = as_json(f), *got = as_json(back);
        g_assert_cmpstr(want, ==, got);
        g_assert_cmpint(store_snapshot_load_path(path, id + 1, &none), ==, -ENOENT);
}

/* The bytes a stored snapshot counts for: what store_snapshot_bytes() says, and what
 * schema/state-004.sql computes for the snapshots stored before it. */
static void test_bytes(Fixture *fx, gconstpointer data) {
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                g_autoptr(Forest) f = sample_forest(k);
                uint64_t id = put(fx, f, 0, NULL, 0);
                char sql[128];
                snprintf(sql, sizeof(sql), "SELECT bytes FROM snapshots WHERE id = %" PRIu64, id);
                g_assert_cmpint(query_int(fx, sql), ==, (int64_t) store_snapshot_bytes(f));
        }
        /* the migration's UPDATE, run again over the stored rows, counts within a few bytes per
         * process (argv as stored JSON, against its estimate) */
        const char *update = strstr(state_migrations[3], "UPDATE snapshots SET bytes");
        g_assert_nonnull(update);
        int64_t before = query_int(fx, "SELECT sum(bytes) FROM snapshots");
        g_assert_cmpint(sqlite3_exec(store_database(fx->store), update, NULL, NULL, NULL), ==, SQLITE_OK);
        int64_t after = query_int(fx, "SELECT sum(bytes) FROM snapshots");
        g_assert_cmpint(after, >=, before - 16);
        g_assert_cmpint(after, <=, before + 16);
}

static void test_strings(Fixture *fx, gconstpointer data) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_SUBTREE);
        Process *p = f->processes[0];
        memcpy(p->comm, "a\xff" "b", 4);
        char *argv[] = { (char *) "x\"y\\z\n", (char *) "\xc3(", (char *) "", NULL };
        g_assert_cmpint(process_set_argv(p, argv), ==, 0);
        uint64_t id = put(fx, f, 0, NULL, 0);
        g_autoptr(Forest) back = NULL;
        g_assert_cmpint(store_snapshot_load(fx->store, id, &back), ==, 0);
        Process *q = forest_find_process(back, p->pid);
        g_assert_cmpstr(q->comm, ==, "a\xef\xbf\xbd" "b");
        g_assert_cmpstr(q->argv[0], ==, "x\"y\\z\n");
        g_assert_cmpstr(q->argv[1], ==, "\xef\xbf\xbd(");
        g_assert_cmpstr(q->argv[2], ==, "");
        g_assert_null(q->argv[3]);
        /* and what the JSON writer makes of both is the same */
        g_autofree char *want = as_json(f), *got = as_json(back);
        g_assert_cmpstr(want, ==, got);
}

/* argv is stored as the JSON text jansson's compact dump made of it before the writer made it
 * itself: byte for byte the same, for every byte a string can hold (invalid UTF-8 sanitized the
 * same way first), and for none. */
static char *stored_argv(Fixture *fx, uint64_t id, pid_t pid) {
        sqlite3_stmt *st;
        g_assert_cmpint(sqlite3_prepare_v2(store_database(fx->store),
                                           "SELECT argv FROM snapshot_processes WHERE snapshot = ?1 AND pid = ?2", -1,
                                           &st, NULL), ==, SQLITE_OK);
        sqlite3_bind_int64(st, 1, (int64_t) id);
        sqlite3_bind_int64(st, 2, pid);
        g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
        char *text = g_strdup((const char *) sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        return text;
}

static char *jansson_argv(char * const *argv) {
        json_t *a = json_array();
        for (size_t i = 0; argv && argv[i]; i++) {
                g_autofree char *valid = snapshot_utf8_sanitize(argv[i]);
                g_assert_cmpint(json_array_append_new(a, json_string(valid)), ==, 0);
        }
        char *text = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        g_assert_nonnull(text);
        return text;
}

static void test_argv_json(Fixture *fx, gconstpointer data) {
        char every_byte[256], high[129];
        for (int c = 1; c < 256; c++)
                every_byte[c - 1] = (char) c;
        every_byte[255] = 0;
        for (int c = 0x80; c < 0x100; c++)
                high[c - 0x80] = (char) c;
        high[128] = 0;
        char *argvs[][6] = {
                { every_byte, high, (char *) "", (char *) "\xe2\x80\xa8 \xf0\x9f\x98\x80 \xc3\xa9", (char *) "/usr/bin/x", NULL },
                { (char *) "", NULL },
                { NULL },
        };
        for (size_t k = 0; k <= G_N_ELEMENTS(argvs); k++) {
                g_autoptr(Forest) f = sample_forest(SAMPLE_SUBTREE);
                Process *p = f->processes[0];
                g_assert_cmpint(process_set_argv(p, k < G_N_ELEMENTS(argvs) ? argvs[k] : NULL), ==, 0);
                uint64_t id = put(fx, f, 0, NULL, 0);
                g_autofree char *got = stored_argv(fx, id, p->pid), *want = jansson_argv(p->argv);
                g_assert_cmpstr(got, ==, want);
        }
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        TEST("/store-snapshot/samples", test_samples);
        TEST("/store-snapshot/delete", test_delete);
        TEST("/store-snapshot/quota", test_quota);
        TEST("/store-snapshot/strings", test_strings);
        TEST("/store-snapshot/argv-json", test_argv_json);
        TEST("/store-snapshot/steps", test_steps);
        TEST("/store-snapshot/discard-incomplete", test_discard_incomplete);
        TEST("/store-snapshot/unfinished-left", test_unfinished_left);
        TEST("/store-snapshot/load-path", test_load_path);
        TEST("/store-snapshot/bytes", test_bytes);
        TEST("/store-snapshot/thread-no-new-privs", test_thread_no_new_privs);
        TEST("/store-snapshot/exited-leader", test_exited_leader);
        return g_test_run();
}
