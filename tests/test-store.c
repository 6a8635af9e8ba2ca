/* test-store.c: unit tests of the state database on real SQLite files: schema and format checks,
 * full reconciliation into history, incremental batches, the admin views, and timing */
#include <glib/gstdio.h>
#include <linux/seccomp.h>
#include <sqlite3.h>
#include <time.h>

#include "core/sqlite-util.h"
#include "store/state-migrations.h"
#include "store/store-checkpoint.h"
#include "store/store.h"
#include "tests-util.h"

#define APPLICATION_ID 0x53454354 /* "SECT", documented in docs/database.md */

DEFINE_CLEANUP(sqlite3 *, sqlite3_close)

typedef struct Fixture {
        char *dir;
        char *path;
        Store *store; /* TEST_OPEN: the state database opened, and a raw connection to it */
        sqlite3 *db;
} Fixture;

static void fixture_setup(Fixture *fx, gconstpointer data) {
        g_autoptr(GError) error = NULL;

        fx->dir = g_dir_make_tmp("test-store-XXXXXX", &error);
        g_assert_no_error(error);
        fx->path = g_build_filename(fx->dir, STORE_FILE_NAME, NULL);
}

static Store *open_ok(const Fixture *fx);
static sqlite3 *raw_open(const char *path);

static void fixture_setup_open(Fixture *fx, gconstpointer data) {
        fixture_setup(fx, data);
        fx->store = open_ok(fx);
        fx->db = raw_open(fx->path);
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        sqlite3_close(fx->db);
        store_free(fx->store);
        g_autoptr(GDir) d = g_dir_open(fx->dir, 0, NULL);
        const char *name;

        while (d && (name = g_dir_read_name(d))) {
                g_autofree char *p = g_build_filename(fx->dir, name, NULL);
                g_assert_cmpint(g_unlink(p), ==, 0);
        }
        g_assert_cmpint(g_rmdir(fx->dir), ==, 0);
        g_free(fx->path);
        g_free(fx->dir);
}

#define TEST(name, fn) g_test_add(name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
#define TEST_OPEN(name, fn) g_test_add(name, Fixture, NULL, fixture_setup_open, fn, fixture_teardown)

/* Direct SQLite access, as an admin would have it. */

static sqlite3 *raw_open(const char *path) {
        sqlite3 *db = NULL;

        g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), ==, SQLITE_OK);
        return db;
}

static void raw_exec(sqlite3 *db, const char *sql) {
        char *err = NULL;

        if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
                g_error("%s: %s", sql, err);
}

/* Every row of a query, columns joined by ',' and rows by ';' (NULL as "NULL"). */
static char *raw_rows(sqlite3 *db, const char *sql) {
        GString *out = g_string_new(NULL);
        sqlite3_stmt *st = NULL;
        int rc;

        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                g_error("%s: %s", sql, sqlite3_errmsg(db));
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (out->len > 0)
                        g_string_append_c(out, ';');
                for (int i = 0; i < sqlite3_column_count(st); i++) {
                        const char *v = (const char *) sqlite3_column_text(st, i);
                        g_string_append_printf(out, "%s%s", i > 0 ? "," : "", v ?: "NULL");
                }
        }
        if (rc != SQLITE_DONE)
                g_error("%s: %s", sql, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return g_string_free(out, false);
}

static int64_t raw_int(sqlite3 *db, const char *sql) {
        g_autofree char *v = raw_rows(db, sql);
        return g_ascii_strtoll(v, NULL, 10);
}

#define assert_rows(db, sql, expected)                          \
        do {                                                    \
                g_autofree char *_v = raw_rows((db), (sql));    \
                g_assert_cmpstr(_v, ==, (expected));            \
        } while (0)

static Store *open_ok(const Fixture *fx) {
        Store *s = NULL;

        g_assert_cmpint(store_open(fx->dir, &s), ==, 0);
        g_assert_nonnull(s);
        return s;
}

static GBytes *file_bytes(const char *path) {
        g_autoptr(GError) error = NULL;
        char *data = NULL;
        size_t n = 0;

        g_assert_true(g_file_get_contents(path, &data, &n, &error));
        g_assert_no_error(error);
        return g_bytes_new_take(data, n);
}

/* Forest building */

typedef struct FSpec {
        uint64_t id, parent;
        const struct sock_filter *insns;
        size_t len;
        bool log, listener;
} FSpec;

#define PROG(p) (p), ELEMENTSOF(p)

typedef struct TSpec {
        pid_t pid, tid, ppid;
        uint64_t filter; /* 0: mode below */
        TaskMode mode;
        const char *comm;
} TSpec;

static void add_thread(Forest *f, const TSpec *s) {
        Process *p = forest_find_process(f, s->pid);
        Task *t = NULL;

        if (!p) {
                g_autofree char *exe = g_strdup_printf("/usr/bin/%s", s->comm);
                g_assert_cmpint(forest_add_process(f, s->pid, &p), ==, 0);
                snprintf(p->comm, sizeof(p->comm), "%s", s->comm);
                g_assert_cmpint(process_set_exe(p, exe), ==, 0);
                p->ppid = s->ppid;
                p->start_time = 1000 + s->pid;
                p->uid = 1000;
                p->gid = 100;
        }
        g_assert_cmpint(process_add_thread(p, s->tid, &t), ==, 0);
        t->filter_id = s->filter;
        t->mode = s->filter ? TASK_MODE_FILTER : s->mode;
        t->start_time = 1000 + s->tid;
}

static Forest *build(const FSpec *fs, size_t nf, const TSpec *ts, size_t nt) {
        _cleanup_free_ char *error = NULL;
        Forest *f = forest_new();

        g_assert_nonnull(f);
        f->identity = IDENTITY_EXACT;
        for (size_t i = 0; i < nf; i++) {
                Filter *flt = NULL;
                g_assert_cmpint(forest_add_filter(f, fs[i].id, fs[i].parent, fs[i].insns, fs[i].len, &flt), ==, 0);
                flt->log = fs[i].log;
                flt->has_listener = fs[i].listener;
        }
        for (size_t i = 0; i < nt; i++)
                add_thread(f, &ts[i]);
        if (forest_link(f, &error) < 0)
                g_error("forest_link: %s", error);
        return f;
}

#define BUILD(fs, ts) build((fs), ELEMENTSOF(fs), (ts), ELEMENTSOF(ts))

/* Forest A: two roots; 1 has children 2 and 3; 4 has a listener held by process 200. */
static const FSpec forest_a_filters[] = {
        { 1, 0, PROG(tests_prog_allow), false, false },
        { 2, 1, PROG(tests_prog_errno), false, false },
        { 3, 1, PROG(tests_prog_log), true, false },
        { 4, 0, PROG(tests_prog_allow), false, true },
};
static const TSpec forest_a_tasks[] = {
        { 100, 100, 1, 2, 0, "alpha" },
        { 100, 101, 1, 3, 0, "alpha" },
        { 200, 200, 100, 4, 0, "beta" },
        { 300, 300, 200, 0, TASK_MODE_STRICT, "gamma" },
        { 300, 301, 200, 0, TASK_MODE_DISABLED, "gamma" },
};

static Forest *forest_a(void) {
        Forest *f = BUILD(forest_a_filters, forest_a_tasks);
        Listener *l = NULL;
        _cleanup_free_ char *error = NULL;

        g_assert_cmpint(forest_add_listener(f, 1, 4, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 200, 7), ==, 0);
        if (forest_link(f, &error) < 0)
                g_error("forest_link: %s", error);
        return f;
}

/* Forest B: A later: 3 and 4 are gone (with processes 200 and 300), 5 was stacked on 2. */
static const FSpec forest_b_filters[] = {
        { 1, 0, PROG(tests_prog_allow), false, false },
        { 2, 1, PROG(tests_prog_errno), false, false },
        { 5, 2, PROG(tests_prog_allow), false, false },
};
static const TSpec forest_b_tasks[] = {
        { 100, 100, 1, 5, 0, "alpha" },
        { 100, 102, 1, 2, 0, "alpha" },
};

/* Open */

static void test_open_creates_schema(Fixture *fx, gconstpointer data) {
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        uint64_t max_id = 99;

        g_assert_cmpint(raw_int(db, "PRAGMA user_version"), ==, STATE_MIGRATIONS_COUNT);
        g_assert_cmpint(raw_int(db, "PRAGMA application_id"), ==, APPLICATION_ID);
        assert_rows(db, "PRAGMA journal_mode", "wal");
        assert_rows(db,
                    "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
                    "ORDER BY type, name",
                    "table,filters;table,history;table,listener_holders;table,listeners;table,meta;"
                    "table,processes;table,snapshot_filters;table,snapshot_holders;table,snapshot_listeners;"
                    "table,snapshot_processes;table,snapshot_threads;table,snapshots;table,tasks;"
                    "view,filter_task_counts;view,filter_tree;view,process_tree;view,snapshot_task_chains;"
                    "view,task_chains");
        g_assert_cmpint(store_max_filter_id(s, &max_id), ==, 0);
        g_assert_cmpuint(max_id, ==, 0);
        assert_rows(db, "PRAGMA integrity_check", "ok");
}

static void test_open_again(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *f = forest_a();
        g_autofree char *schema = NULL;
        Store *s = open_ok(fx);

        g_assert_cmpint(store_replace_all(s, f, 1000), ==, 0);
        store_free(s);
        {
                _cleanup_(sqlite3_closep) sqlite3 *db = raw_open(fx->path);
                schema = raw_rows(db, "SELECT type, name, sql FROM sqlite_master ORDER BY name");
        }

        /* Twice at once (another sectreed, or the same one restarting), then again alone. */
        Store *s1 = open_ok(fx), *s2 = open_ok(fx);
        store_free(s2);
        store_free(s1);
        s = open_ok(fx);

        _cleanup_(sqlite3_closep) sqlite3 *db = raw_open(fx->path);
        assert_rows(db, "SELECT type, name, sql FROM sqlite_master ORDER BY name", schema);
        g_assert_cmpint(raw_int(db, "PRAGMA user_version"), ==, STATE_MIGRATIONS_COUNT);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM filters"), ==, 4);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM tasks"), ==, 5);
        store_free(s);
}

static void assert_refused_untouched(const Fixture *fx, int expected) {
        g_autoptr(GBytes) before = file_bytes(fx->path);
        g_autofree char *wal = g_strconcat(fx->path, "-wal", NULL);
        Store *s = NULL;

        g_assert_cmpint(store_open(fx->dir, &s), ==, expected);
        g_assert_null(s);
        g_autoptr(GBytes) after = file_bytes(fx->path);
        g_assert_true(g_bytes_equal(before, after));
        g_assert_false(g_file_test(wal, G_FILE_TEST_EXISTS));
}

static void test_open_other_application(Fixture *fx, gconstpointer data) {
        {
                _cleanup_(sqlite3_closep) sqlite3 *db = raw_open(fx->path);
                raw_exec(db, "PRAGMA application_id = 1234; CREATE TABLE mine (x); INSERT INTO mine VALUES (42);");
        }
        assert_refused_untouched(fx, -EMEDIUMTYPE);
}

static void test_open_no_application_id(Fixture *fx, gconstpointer data) {
        {
                _cleanup_(sqlite3_closep) sqlite3 *db = raw_open(fx->path);
                raw_exec(db, "CREATE TABLE filters (id); INSERT INTO filters VALUES (1);");
        }
        assert_refused_untouched(fx, -EMEDIUMTYPE);
}

static void test_open_not_sqlite(Fixture *fx, gconstpointer data) {
        g_autoptr(GError) error = NULL;
        g_autofree char *junk = g_strnfill(8192, 'x');

        g_assert_true(g_file_set_contents(fx->path, junk, -1, &error));
        assert_refused_untouched(fx, -EMEDIUMTYPE);
}

static void test_open_newer_version(Fixture *fx, gconstpointer data) {
        g_autofree char *sql = g_strdup_printf("PRAGMA user_version = %d", STATE_MIGRATIONS_COUNT + 1);

        store_free(open_ok(fx));
        {
                _cleanup_(sqlite3_closep) sqlite3 *db = raw_open(fx->path);
                raw_exec(db, sql);
                raw_exec(db, "PRAGMA journal_mode = DELETE"); /* so the file holds everything */
        }
        assert_refused_untouched(fx, -EPROTONOSUPPORT);
}

/* A database of schema version 4 with a stored snapshot: migration 5 makes snapshot_threads anew
 * (its mode is checked without an IN list), keeps every row and the view that reads them, and the
 * check still refuses a mode that is none. */
static void test_migrate_005(Fixture *fx, gconstpointer data) {
        {
                _cleanup_(sqlite3_closep) sqlite3 *db = raw_open(fx->path);
                g_autofree char *app = g_strdup_printf("PRAGMA application_id = %d", APPLICATION_ID);
                raw_exec(db, app);
                for (int v = 0; v < 4; v++)
                        raw_exec(db, state_migrations[v]);
                raw_exec(db, "INSERT INTO snapshots (id, created_usec, stored_usec, origin, owner_uid, taken_by_uid, "
                             "root_pid, backend, identity, consistency, processes, threads, filters, listeners, "
                             "instructions) VALUES (7, 1, 2, 'created', 0, 0, 100, 'bpf', 'exact', 'iterator', 1, 3, "
                             "2, 0, 2)");
                raw_exec(db, "INSERT INTO snapshot_filters (snapshot, id, parent, length, digest, program, log, "
                             "wait_killable_recv, identity) VALUES (7, 1, NULL, 1, 'sha256:a', x'0600000000000000', 0, "
                             "0, 'exact'), (7, 2, 1, 1, 'sha256:b', x'0600000000000000', 0, 0, 'exact')");
                raw_exec(db, "INSERT INTO snapshot_processes (snapshot, pid, ppid, start_time, comm, argv, uid, gid, "
                             "no_new_privs) VALUES (7, 100, 1, 5, 'alpha', '[]', 0, 0, 0)");
                raw_exec(db, "INSERT INTO snapshot_threads (snapshot, tid, pid, mode, filter) VALUES "
                             "(7, 100, 100, 'filter', 2), (7, 101, 100, 'disabled', NULL), (7, 102, 100, 'strict', NULL)");
                g_assert_cmpint(raw_int(db, "PRAGMA user_version"), ==, 4);
        }
        store_free(open_ok(fx));

        _cleanup_(sqlite3_closep) sqlite3 *db = raw_open(fx->path);
        g_assert_cmpint(raw_int(db, "PRAGMA user_version"), ==, STATE_MIGRATIONS_COUNT);
        assert_rows(db, "SELECT snapshot, tid, pid, mode, filter FROM snapshot_threads ORDER BY tid",
                    "7,100,100,filter,2;7,101,100,disabled,NULL;7,102,100,strict,NULL");
        assert_rows(db, "SELECT tid, position, filter FROM snapshot_task_chains ORDER BY tid, position",
                    "100,0,2;100,1,1");
        assert_rows(db, "SELECT count(*) FROM sqlite_master WHERE name = 'snapshot_threads' AND sql LIKE '% IN (%'",
                    "0");
        g_assert_cmpint(sqlite3_exec(db, "INSERT INTO snapshot_threads (snapshot, tid, pid, mode) VALUES (7, 103, 100, 'frozen')",
                                     NULL, NULL, NULL), ==, SQLITE_CONSTRAINT);
        raw_exec(db, "PRAGMA foreign_keys = ON; DELETE FROM snapshots WHERE id = 7");
        assert_rows(db, "SELECT count(*) FROM snapshot_threads", "0");
        assert_rows(db, "PRAGMA integrity_check", "ok");
}

/* Full reconciliation */

static void test_replace_all(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a(), *b = BUILD(forest_b_filters, forest_b_tasks);
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        char digest[PROG_DIGEST_STRING_MAX], sql[256];
        uint64_t max_id = 0;

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);
        assert_rows(db,
                    "SELECT id, parent, length, log, has_listener, identity, first_seen_usec, last_seen_usec "
                    "FROM filters ORDER BY id",
                    "1,NULL,1,0,0,exact,1000,1000;2,1,1,0,0,exact,1000,1000;3,1,2,1,0,exact,1000,1000;"
                    "4,NULL,1,0,1,exact,1000,1000");
        /* The program is stored as the kernel's 8-byte records, little endian. */
        assert_rows(db, "SELECT hex(program) FROM filters WHERE id = 3", "2000000004000000060000000000FC7F");
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM filters WHERE id = 3 AND digest = '%s'",
                 prog_digest_to_string(forest_find_filter(a, 3)->digest, digest));
        g_assert_cmpint(raw_int(db, sql), ==, 1);
        assert_rows(db, "SELECT pid, ppid, start_time, comm, exe, uid, gid FROM processes ORDER BY pid",
                    "100,1,1100,alpha,/usr/bin/alpha,1000,100;200,100,1200,beta,/usr/bin/beta,1000,100;"
                    "300,200,1300,gamma,/usr/bin/gamma,1000,100");
        assert_rows(db, "SELECT tid, tgid, start_time, mode, filter FROM tasks ORDER BY tid",
                    "100,100,1100,filter,2;101,100,1101,filter,3;200,200,1200,filter,4;"
                    "300,300,1300,strict,NULL;301,300,1301,disabled,NULL");
        assert_rows(db,
                    "SELECT l.id, l.filter, l.identity, h.pid, h.fd "
                    "FROM listeners l JOIN listener_holders h ON h.listener = l.id",
                    "1,4,exact,200,7");
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM history"), ==, 0);

        g_assert_cmpint(store_replace_all(s, b, 2000), ==, 0);
        assert_rows(db, "SELECT id, parent, first_seen_usec, last_seen_usec FROM filters ORDER BY id",
                    "1,NULL,1000,2000;2,1,1000,2000;5,2,2000,2000");
        assert_rows(db,
                    "SELECT id, parent, log, has_listener, first_seen_usec, last_seen_usec, gone_usec "
                    "FROM history ORDER BY id",
                    "3,1,1,0,1000,1000,2000;4,NULL,0,1,1000,1000,2000");
        assert_rows(db, "SELECT count(*) FROM history WHERE program = (SELECT program FROM filters WHERE id = 1)",
                    "1");
        assert_rows(db, "SELECT pid FROM processes ORDER BY pid", "100");
        assert_rows(db, "SELECT tid, filter, last_seen_usec FROM tasks ORDER BY tid", "100,5,2000;102,2,2000");
        assert_rows(db, "SELECT count(*) FROM listeners", "0");
        assert_rows(db, "SELECT count(*) FROM listener_holders", "0");
        assert_rows(db, "SELECT generation, last_full_scan_usec FROM meta", "2,2000");
        g_assert_cmpint(store_max_filter_id(s, &max_id), ==, 0);
        g_assert_cmpuint(max_id, ==, 5);

        /* The same forest again changes nothing but the times. */
        g_assert_cmpint(store_replace_all(s, b, 3000), ==, 0);
        assert_rows(db, "SELECT id, first_seen_usec, last_seen_usec FROM filters ORDER BY id",
                    "1,1000,3000;2,1000,3000;5,2000,3000");
        assert_rows(db, "SELECT count(*) FROM history", "2");
        assert_rows(db, "PRAGMA integrity_check", "ok");
        assert_rows(db, "PRAGMA foreign_key_check", "");
}

/* A filter retired while a task the daemon did not hear of still held it (lost events) is found
 * by the next full pass: the same id is the same kernel object, so it comes back from history with
 * its first_seen and installer, and the pass succeeds (it used to fail, and every retry with it). */
static const FSpec retired_live_again[] = {
        { 1, 0, PROG(tests_prog_allow), false, false },
        { 3, 1, PROG(tests_prog_errno), false, false }, /* 3 went to history with forest B */
};
static const TSpec retired_live_again_tasks[] = { { 100, 100, 1, 3, 0, "alpha" } };

static void assert_revived(sqlite3 *db, Store *s) {
        uint64_t max_id = 0;

        assert_rows(db, "SELECT id, parent, length, first_seen_usec, installer_tid, installer_comm "
                        "FROM filters ORDER BY id",
                    "1,NULL,1,1000,NULL,NULL;3,1,1,1000,101,alpha");
        assert_rows(db, "SELECT last_seen_usec, generation = (SELECT generation FROM meta) FROM filters WHERE id = 3",
                    "3000,1");
        assert_rows(db, "SELECT id FROM history ORDER BY id", "2;4;5");
        assert_rows(db, "SELECT tid, filter FROM tasks ORDER BY tid", "100,3");
        g_assert_cmpint(store_max_filter_id(s, &max_id), ==, 0);
        g_assert_cmpuint(max_id, ==, 5);
        assert_rows(db, "PRAGMA integrity_check", "ok");
        assert_rows(db, "PRAGMA foreign_key_check", "");
}

static void test_replace_all_revives_retired(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a(), *b = BUILD(forest_b_filters, forest_b_tasks),
                                       *c = BUILD(retired_live_again, retired_live_again_tasks);
        Store *s = fx->store;
        sqlite3 *db = fx->db;

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);
        g_assert_cmpint(store_replace_all(s, b, 2000), ==, 0);
        raw_exec(db, "UPDATE history SET installer_tid = 101, installer_tgid = 100, installer_comm = 'alpha' "
                     "WHERE id = 3");
        g_assert_cmpint(store_replace_all(s, c, 3000), ==, 0);
        assert_revived(db, s);
        /* The next pass finds it stored as it is. */
        g_assert_cmpint(store_replace_all(s, c, 4000), ==, 0);
        assert_rows(db, "SELECT id, first_seen_usec, last_seen_usec FROM filters ORDER BY id", "1,1000,4000;3,1000,4000");
}

/* The live forest replaced by pass, and its changes written at now (and cleared). */
static void live_pass_stored(Store *s, Live *l, Forest *pass, uint64_t now, LiveChanges *c) {
        g_assert_cmpint(live_replace(l, pass, false, c), ==, 0);
        g_assert_cmpint(store_write_changes(s, live_forest(l), c, now), ==, 0);
        live_changes_clear(c);
}

/* The same through the live forest: it retired 3 and 4 (a pass without them, written as its
 * differences), and the next pass, written as its differences too, holds 3 again. */
static void test_pass_revives_retired(Fixture *fx, gconstpointer data) {
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        _cleanup_(live_freep) Live *l = NULL;
        LiveChanges c = {};

        g_assert_cmpint(live_new(NULL, &l), ==, 0);
        live_pass_stored(s, l, forest_a(), 1000, &c);
        live_pass_stored(s, l, BUILD(forest_b_filters, forest_b_tasks), 2000, &c);
        assert_rows(db, "SELECT id FROM history ORDER BY id", "3;4");
        raw_exec(db, "UPDATE history SET installer_tid = 101, installer_tgid = 100, installer_comm = 'alpha' "
                     "WHERE id = 3");
        live_pass_stored(s, l, BUILD(retired_live_again, retired_live_again_tasks), 3000, &c);
        live_changes_done(&c);
        assert_revived(db, s);
}

/* history keeps only its newest rows; the ids of the dropped ones stay used. */
static void test_history_limit(Fixture *fx, gconstpointer data) {
        static const FSpec only_root[] = { { 1, 0, PROG(tests_prog_allow), false, false } };
        static const TSpec tasks[] = { { 100, 100, 1, 1, 0, "alpha" } };
        _cleanup_(forest_freep) Forest *a = forest_a(), *b = BUILD(forest_b_filters, forest_b_tasks),
                                       *c = BUILD(only_root, tasks);
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        uint64_t max_id = 0;

        store_set_history_limit(s, 2);
        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);
        g_assert_cmpint(store_replace_all(s, b, 2000), ==, 0); /* 3 and 4 gone */
        assert_rows(db, "SELECT id FROM history ORDER BY id", "3;4");
        g_assert_cmpint(store_replace_all(s, c, 3000), ==, 0); /* 2 and 5 gone: 3 and 4 are dropped */
        assert_rows(db, "SELECT id, gone_usec FROM history ORDER BY id", "2,3000;5,3000");
        store_set_history_limit(s, 0);
        g_assert_cmpint(store_replace_all(s, c, 4000), ==, 0);
        assert_rows(db, "SELECT count(*) FROM history", "0");
        g_assert_cmpint(store_max_filter_id(s, &max_id), ==, 0);
        g_assert_cmpuint(max_id, ==, 5);
        assert_rows(db, "SELECT max_filter_id FROM meta", "5");
}

static void test_replace_all_updates(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a(), *changed = forest_a();
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        Process *p = NULL;

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);

        /* Same ids, other facts: a new comm and exe, reference counts, a thread gone strict. */
        p = forest_find_process(changed, 100);
        snprintf(p->comm, sizeof(p->comm), "alpha2");
        g_assert_cmpint(process_set_exe(p, "/usr/bin/alpha2"), ==, 0);
        forest_find_filter(changed, 1)->refs = 7;
        forest_find_task(changed, 301, NULL)->mode = TASK_MODE_STRICT;
        g_assert_cmpint(store_replace_all(s, changed, 2000), ==, 0);

        assert_rows(db, "SELECT comm, exe FROM processes WHERE pid = 100", "alpha2,/usr/bin/alpha2");
        assert_rows(db, "SELECT id, refs, first_seen_usec, last_seen_usec FROM filters ORDER BY id",
                    "1,7,1000,2000;2,NULL,1000,2000;3,NULL,1000,2000;4,NULL,1000,2000");
        assert_rows(db, "SELECT tid, mode, last_seen_usec FROM tasks WHERE tgid = 300 ORDER BY tid",
                    "300,strict,2000;301,strict,2000");
        assert_rows(db, "SELECT count(*) FROM history", "0");
        assert_rows(db, "SELECT count(*) FROM listener_holders", "1");
}

static void test_replace_all_refusals(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a();
        Store *s = fx->store;
        sqlite3 *db = fx->db;

        g_assert_cmpint(store_begin(s), ==, 0);
        g_assert_cmpint(store_replace_all(s, a, 1000), ==, -EBUSY);
        store_rollback(s);

        g_assert_cmpint(forest_add_filter(a, 9, 0, PROG(tests_prog_allow), NULL), ==, 0); /* unlinks */
        g_assert_cmpint(store_replace_all(s, a, 1000), ==, -EINVAL);
        assert_rows(db, "SELECT count(*) FROM filters", "0");
        assert_rows(db, "SELECT generation FROM meta", "0");
}

/* Incremental changes */

/* A filter as the live forest hands it to the store (its digest computed where it came in). */
static Filter filter_of(uint64_t id, uint64_t parent, const struct sock_filter *insns, size_t len, bool log) {
        Filter f = { .id = id, .parent_id = parent, .insns = (struct sock_filter *) insns, .len = len, .log = log,
                     .identity = IDENTITY_EXACT };
        prog_digest(insns, len, f.digest);
        return f;
}

static Process process_of(pid_t pid, const char *comm, const char *exe, uint64_t start_time) {
        Process p = { .pid = pid, .ppid = 1, .start_time = start_time, .exe = (char *) exe, .no_new_privs = true };
        snprintf(p.comm, sizeof(p.comm), "%s", comm);
        return p;
}

static Task thread_of(pid_t tid, uint64_t filter) {
        return (Task) { .tid = tid, .start_time = 5000 + (uint64_t) tid,
                        .mode = filter ? TASK_MODE_FILTER : TASK_MODE_STRICT, .filter_id = filter };
}

static void test_incremental(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a();
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        const StoreInstaller installer = { .tid = 101, .tgid = 100, .comm = "alpha", .exe = "/usr/bin/alpha" };
        Filter f10 = filter_of(10, 3, PROG(tests_prog_errno), true), f11 = filter_of(11, 10, PROG(tests_prog_allow), false);
        Process p100 = process_of(100, "alpha", "/usr/bin/alpha", 1100);
        Task t;
        uint64_t max_id = 0;

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);

        /* A batch: thread 101 stacks filter 10 on its filter 3. */
        g_assert_cmpint(store_begin(s), ==, 0);
        g_assert_cmpint(store_begin(s), ==, -EBUSY);
        g_assert_cmpint(store_put_filter(s, &f10, &installer, 1500), ==, 0);
        t = thread_of(101, 10);
        g_assert_cmpint(store_put_thread(s, &p100, &t, 1500), ==, 0);
        g_assert_cmpint(store_commit(s), ==, 0);
        assert_rows(db,
                    "SELECT parent, log, identity, first_seen_usec, installer_tid, installer_tgid, installer_comm, "
                    "installer_exe FROM filters WHERE id = 10",
                    "3,1,exact,1500,101,100,alpha,/usr/bin/alpha");
        assert_rows(db, "SELECT tgid, start_time, mode, filter, last_seen_usec FROM tasks WHERE tid = 101",
                    "100,5101,filter,10,1500");
        /* The digest is the one the filter came with: the store does not hash programs again. */
        char digest[PROG_DIGEST_STRING_MAX], sql[128];
        snprintf(sql, sizeof(sql), "SELECT digest = '%s' FROM filters WHERE id = 10",
                 prog_digest_to_string(f10.digest, digest));
        g_assert_cmpint(raw_int(db, sql), ==, 1);
        /* Re-put of a filter keeps its installer and first_seen. */
        g_assert_cmpint(store_put_filter(s, forest_find_filter(a, 3), NULL, 1600), ==, 0);
        g_assert_cmpint(store_put_filter(s, &f10, NULL, 1700), ==, 0);
        assert_rows(db, "SELECT first_seen_usec, last_seen_usec, installer_comm FROM filters WHERE id = 10",
                    "1500,1700,alpha");

        /* A batch rolled back leaves nothing behind. */
        g_assert_cmpint(store_begin(s), ==, 0);
        g_assert_cmpint(store_put_filter(s, &f11, &installer, 1800), ==, 0);
        Process p500 = process_of(500, "delta", "/usr/bin/delta", 1500);
        t = thread_of(500, 11);
        g_assert_cmpint(store_put_process(s, &p500), ==, 0);
        g_assert_cmpint(store_put_thread(s, &p500, &t, 1800), ==, 0);
        store_rollback(s);
        store_rollback(s); /* nothing open: a no-op */
        assert_rows(db, "SELECT count(*) FROM filters WHERE id = 11", "0");
        assert_rows(db, "SELECT count(*) FROM tasks WHERE tid = 500", "0");
        assert_rows(db, "SELECT count(*) FROM processes WHERE pid = 500", "0");
        g_assert_cmpint(store_max_filter_id(s, &max_id), ==, 0);
        g_assert_cmpuint(max_id, ==, 10);

        /* A process renamed (exec); an unknown exe keeps the known one of the same process. */
        Process p200 = process_of(200, "beta-new", NULL, 1200);
        g_assert_cmpint(store_put_process(s, &p200), ==, 0);
        assert_rows(db, "SELECT comm, exe, uid, no_new_privs FROM processes WHERE pid = 200",
                    "beta-new,/usr/bin/beta,0,1");
        p200.exe = (char *) "/usr/bin/beta2";
        g_assert_cmpint(store_put_process(s, &p200), ==, 0);
        assert_rows(db, "SELECT exe FROM processes WHERE pid = 200", "/usr/bin/beta2");

        /* Unknown references are refused. */
        t = thread_of(101, 999);
        g_assert_cmpint(store_put_thread(s, &p100, &t, 2000), ==, -ENOENT);
        Filter f12 = filter_of(12, 998, PROG(tests_prog_allow), false);
        g_assert_cmpint(store_put_filter(s, &f12, NULL, 2000), ==, -ENOENT);

        /* Exits and retiring. */
        g_assert_cmpint(store_retire_filter(s, 10, 2100), ==, -EBUSY); /* thread 101 runs under it */
        g_assert_cmpint(store_remove_task(s, 101), ==, 1);
        g_assert_cmpint(store_remove_task(s, 101), ==, 0);
        assert_rows(db, "SELECT pid FROM processes WHERE pid = 100", "100"); /* 100 lives on */
        g_assert_cmpint(store_retire_filter(s, 10, 2100), ==, 0);
        g_assert_cmpint(store_retire_filter(s, 10, 2100), ==, -ENOENT);
        assert_rows(db, "SELECT id, parent, installer_comm, first_seen_usec, gone_usec FROM history ORDER BY id",
                    "10,3,alpha,1500,2100");
        g_assert_cmpint(store_retire_filter(s, 1, 2100), ==, -EBUSY); /* children 2 and 3 */

        /* The last thread takes its process, and its listener fds, along. */
        g_assert_cmpint(store_remove_task(s, 200), ==, 1);
        assert_rows(db, "SELECT count(*) FROM processes WHERE pid = 200", "0");
        assert_rows(db, "SELECT count(*) FROM listener_holders", "0");
        assert_rows(db, "SELECT count(*) FROM listeners", "1");
        g_assert_cmpint(store_retire_filter(s, 4, 2200), ==, 0);
        assert_rows(db, "SELECT count(*) FROM listeners", "0");
        assert_rows(db, "SELECT id FROM history ORDER BY id", "4;10");

        /* An id from history is the same filter: it comes back, as it was first seen and installed. */
        Filter again = filter_of(10, 3, PROG(tests_prog_allow), false);
        g_assert_cmpint(store_put_filter(s, &again, NULL, 2300), ==, 0);
        assert_rows(db, "SELECT id, parent, installer_comm, first_seen_usec, last_seen_usec FROM filters WHERE id = 10",
                    "10,3,alpha,1500,2300");
        assert_rows(db, "SELECT id FROM history ORDER BY id", "4");
        g_assert_cmpint(store_max_filter_id(s, &max_id), ==, 0);
        g_assert_cmpuint(max_id, ==, 10);
        g_assert_cmpint(store_retire_filter(s, 10, 2400), ==, 0);

        /* History pruned by an admin: the high-water mark stays. */
        raw_exec(db, "DELETE FROM history");
        g_assert_cmpint(store_max_filter_id(s, &max_id), ==, 0);
        g_assert_cmpuint(max_id, ==, 10);

        assert_rows(db, "PRAGMA integrity_check", "ok");
        assert_rows(db, "PRAGMA foreign_key_check", "");
}

/* What the stored live tables hold, as text: filters, processes, threads (ids sorted). */
static char *stored_state(sqlite3 *db) {
        g_autofree char *f = raw_rows(db, "SELECT id, coalesce(parent, 0), digest, log FROM filters ORDER BY id");
        g_autofree char *p = raw_rows(db, "SELECT pid, ppid, comm, coalesce(exe, '-') FROM processes ORDER BY pid");
        g_autofree char *t = raw_rows(db, "SELECT tid, tgid, mode, coalesce(filter, 0) FROM tasks ORDER BY tid");
        return g_strdup_printf("filters %s\nprocesses %s\ntasks %s", f, p, t);
}

/* The same of a forest. */
static char *forest_state(const Forest *f) {
        g_autoptr(GString) fl = g_string_new(NULL), pl = g_string_new(NULL), tl = g_string_new(NULL);
        for (uint64_t id = 1; id < 1000; id++) {
                const Filter *x = forest_find_filter(f, id);
                char d[PROG_DIGEST_STRING_MAX];
                if (x)
                        g_string_append_printf(fl, "%s%" PRIu64 ",%" PRIu64 ",%s,%d", fl->len ? ";" : "", x->id,
                                               x->parent_id, prog_digest_to_string(x->digest, d), x->log);
        }
        for (pid_t pid = 1; pid < 1000; pid++) {
                const Process *p = forest_find_process(f, pid);
                if (p)
                        g_string_append_printf(pl, "%s%d,%d,%.16s,%s", pl->len ? ";" : "", p->pid, p->ppid, p->comm,
                                               p->exe ?: "-");
        }
        for (pid_t tid = 1; tid < 1000; tid++) {
                Process *p = NULL;
                const Task *t = forest_find_task(f, tid, &p);
                if (t)
                        g_string_append_printf(tl, "%s%d,%d,%s,%" PRIu64, tl->len ? ";" : "", t->tid, p->pid,
                                               task_mode_to_string(t->mode), t->filter_id);
        }
        return g_strdup_printf("filters %s\nprocesses %s\ntasks %s", fl->str, pl->str, tl->str);
}

static LiveEvent event_of(LiveEventType type, pid_t tid, pid_t tgid, uint64_t head) {
        LiveEvent e = { .type = type, .task = { .tid = tid, .tgid = tgid, .ppid = 1, .start_time = 1000 + (uint64_t) tid,
                                                .mode = head ? TASK_MODE_FILTER : TASK_MODE_STRICT, .filter_id = head } };
        snprintf(e.task.comm, sizeof(e.task.comm), "p%d", tgid);
        return e;
}

static LiveEvent filter_event(pid_t tid, pid_t tgid, uint64_t id, uint64_t parent, const struct sock_filter *insns,
                              size_t len) {
        LiveEvent e = event_of(LIVE_EVENT_FILTER, tid, tgid, 0);
        e.filter = (LiveFilter) { .id = id, .parent_id = parent, .insns = insns, .len = len, .identity = IDENTITY_EXACT };
        return e;
}

/* A batch's changes written as the live forest has them after it; and when the database refuses
 * one of them, nothing of the batch is written, and rolling the live forest back makes the two
 * agree again. */
/* pass, with process 100's leader under a new filter 20 (LOG, 2 instructions) on filter 1: what the
 * triggers of the refusal tests refuse. */
static Forest *with_filter_20(Forest *pass) {
        g_assert_cmpint(forest_add_filter(pass, 20, 1, PROG(tests_prog_log), NULL), ==, 0);
        process_find_thread(forest_find_process(pass, 100), 100)->filter_id = 20;
        g_assert_cmpint(forest_link(pass, NULL), ==, 0);
        return pass;
}

static void test_write_changes(Fixture *fx, gconstpointer data) {
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        _cleanup_(live_freep) Live *l = NULL;
        LiveChanges c = {};

        g_assert_cmpint(live_new(forest_a(), &l), ==, 0);
        g_assert_cmpint(store_replace_all(s, live_forest(l), 1000), ==, 0);
        LiveEvent batch[] = {
                filter_event(101, 100, 10, 3, PROG(tests_prog_errno)), /* 101 stacks a filter */
                event_of(LIVE_EVENT_TASK, 102, 100, 10),                /* a thread of its own chain */
                event_of(LIVE_EVENT_TASK, 400, 400, 2),                 /* a new process */
                event_of(LIVE_EVENT_EXIT, 200, 200, 0),                 /* 200 leaves: its listener keeps 4 */
                event_of(LIVE_EVENT_EXIT, 101, 100, 0),
        };
        g_assert_cmpint(live_apply(l, batch, ELEMENTSOF(batch), &c), ==, 0);
        g_assert_cmpint(store_write_changes(s, live_forest(l), &c, 2000), ==, 0);
        live_changes_clear(&c);
        g_autofree char *want = forest_state(live_forest(l)), *got = stored_state(db);
        g_assert_cmpstr(got, ==, want);
        assert_rows(db, "SELECT count(*) FROM history", "0");
        assert_rows(db, "SELECT count(*) FROM processes WHERE pid = 200", "0");

        /* The database refuses filters of 2 instructions from now on. */
        raw_exec(db, "CREATE TRIGGER refuse BEFORE INSERT ON filters WHEN NEW.length = 2 "
                     "BEGIN SELECT RAISE(ABORT, 'refused'); END");
        LiveEvent refused[] = {
                event_of(LIVE_EVENT_TASK, 103, 100, 10),
                event_of(LIVE_EVENT_EXIT, 400, 400, 0),
                filter_event(103, 100, 11, 10, PROG(tests_prog_log)),
        };
        g_autofree char *before = stored_state(db);
        g_assert_cmpint(live_apply(l, refused, ELEMENTSOF(refused), &c), ==, 0);
        g_assert_cmpint(store_write_changes(s, live_forest(l), &c, 3000), <, 0);
        g_autofree char *after = stored_state(db);
        g_assert_cmpstr(after, ==, before);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        g_autofree char *live_after = forest_state(live_forest(l));
        g_assert_cmpstr(live_after, ==, after);
        /* A full pass that holds the refused filter is refused as a whole too. */
        g_assert_cmpint(live_replace(l, with_filter_20(forest_a()), false, &c), ==, 0);
        g_assert_cmpint(store_write_changes(s, live_forest(l), &c, 4000), <, 0);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        g_autofree char *after_pass = stored_state(db), *live_after_pass = forest_state(live_forest(l));
        g_assert_cmpstr(after_pass, ==, before);
        g_assert_cmpstr(live_after_pass, ==, before);
        live_changes_done(&c);
        assert_rows(db, "PRAGMA foreign_key_check", "");
}


/* Filters retired by events go to history, and the batches prune it too, a slice at a time: it never
 * holds more than its limit and a slice, however long no full pass comes (before, only passes
 * pruned it, all at once). */
#define RETIRING_BATCHES (3 * STORE_PRUNE_SLICE)
static void test_history_pruned_by_batches(Fixture *fx, gconstpointer data) {
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        _cleanup_(live_freep) Live *l = NULL;
        LiveChanges c = {};
        int64_t most = 0;

        store_set_history_limit(s, 10);
        g_assert_cmpint(live_new(forest_a(), &l), ==, 0);
        g_assert_cmpint(store_replace_all(s, live_forest(l), 1000), ==, 0);
        for (unsigned i = 0; i < RETIRING_BATCHES; i++) {
                pid_t tid = 1000 + (pid_t) i;
                LiveEvent batch[] = {
                        event_of(LIVE_EVENT_TASK, tid, tid, 1),
                        filter_event(tid, tid, 100 + i, 1, PROG(tests_prog_errno)),
                        event_of(LIVE_EVENT_EXIT, tid, tid, 0), /* its filter is retired with it */
                };
                g_assert_cmpint(live_apply(l, batch, ELEMENTSOF(batch), &c), ==, 0);
                g_assert_cmpint(store_write_changes(s, live_forest(l), &c, 2000 + i), ==, 0);
                live_changes_clear(&c);
                most = MAX(most, raw_int(db, "SELECT count(*) FROM history"));
        }
        live_changes_done(&c);
        g_test_message("history held at most %" PRId64 " rows over %u retired filters", most, RETIRING_BATCHES);
        g_assert_cmpint(most, <=, 10 + STORE_PRUNE_SLICE);
        g_assert_cmpint(most, >, 10); /* in slices, not one by one */
        g_autofree char *sql = g_strdup_printf("SELECT max_filter_id >= %u FROM meta", 100 + RETIRING_BATCHES - 1);
        assert_rows(db, sql, "1"); /* the ids pruned are remembered as used */
}

/* What the store logs while fn(s, arg) runs, at warning level and above. */
static char *store_log_of(Store *s, void (*fn)(Store *s, void *arg), void *arg) {
        g_autofree char *path = g_build_filename(g_get_tmp_dir(), "test-store-log-XXXXXX", NULL);
        int fd = g_mkstemp(path);
        int saved = dup(STDERR_FILENO);
        LogLevel level = log_get_max_level();
        char *text = NULL;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
        log_set_max_level(LOG_LEVEL_WARNING);
        fn(s, arg);
        log_set_max_level(level);
        g_assert_cmpint(dup2(saved, STDERR_FILENO), ==, STDERR_FILENO);
        close(saved);
        close(fd);
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        (void) g_unlink(path);
        return text;
}

typedef struct RefusedWrite {
        Live *live;
        LiveChanges *changes;
        Forest *pass;
} RefusedWrite;

static void write_refused_batch(Store *s, void *arg) {
        RefusedWrite *w = arg;
        g_assert_cmpint(store_write_changes(s, live_forest(w->live), w->changes, 3000), <, 0);
}

static void replace_refused(Store *s, void *arg) {
        RefusedWrite *w = arg;
        g_assert_cmpint(store_replace_all(s, w->pass, 3000), <, 0);
}

/* store_write_changes() and store_load_live() leave logging their failures to their caller (the
 * manager logs each once, where it knows what follows): a refused batch logs nothing at warning
 * level or above, while the same refusal through store_replace_all(), whose callers do not log,
 * is still logged by the store. */
static void test_write_changes_caller_logs(Fixture *fx, gconstpointer data) {
        _cleanup_(live_freep) Live *l = NULL;
        _cleanup_(forest_freep) Forest *pass = with_filter_20(forest_a());
        LiveChanges c = {};
        RefusedWrite w = { .changes = &c, .pass = pass };

        g_assert_cmpint(live_new(forest_a(), &l), ==, 0);
        w.live = l;
        g_assert_cmpint(store_replace_all(fx->store, live_forest(l), 1000), ==, 0);
        raw_exec(fx->db, "CREATE TRIGGER refuse BEFORE INSERT ON filters WHEN NEW.length = 2 "
                         "BEGIN SELECT RAISE(ABORT, 'refused'); END");
        LiveEvent refused[] = { filter_event(101, 100, 10, 3, PROG(tests_prog_log)) };
        g_assert_cmpint(live_apply(l, refused, ELEMENTSOF(refused), &c), ==, 0);
        g_autofree char *batch_log = store_log_of(fx->store, write_refused_batch, &w);
        g_assert_cmpstr(batch_log, ==, "");
        g_autofree char *replace_log = store_log_of(fx->store, replace_refused, &w);
        g_assert_nonnull(strstr(replace_log, "refused"));
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        live_changes_done(&c);
}

/* A full pass after a full pass and batches writes only what differs, and leaves the tables as a
 * full reconciliation would: the rows it did not change keep their last_seen, the filters gone go
 * to history, and a pass whose store failed is followed by a full reconciliation. */
static void test_pass_writes_differences(Fixture *fx, gconstpointer data) {
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        _cleanup_(live_freep) Live *l = NULL;
        LiveChanges c = {};

        g_assert_cmpint(live_new(NULL, &l), ==, 0);
        live_pass_stored(s, l, forest_a(), 1000, &c); /* reconciled in full */
        LiveEvent batch[] = { filter_event(101, 100, 10, 3, PROG(tests_prog_errno)) };
        g_assert_cmpint(live_apply(l, batch, ELEMENTSOF(batch), &c), ==, 0);
        g_assert_cmpint(store_write_changes(s, live_forest(l), &c, 1500), ==, 0);
        live_changes_clear(&c);

        /* b: 1 and 2 stay as they are, 5 is new, 3, 4 and 10 are gone; so are processes 200, 300 */
        _cleanup_(forest_freep) Forest *b = BUILD(forest_b_filters, forest_b_tasks);
        live_pass_stored(s, l, BUILD(forest_b_filters, forest_b_tasks), 2000, &c);
        g_autofree char *want = forest_state(b), *got = stored_state(db);
        g_assert_cmpstr(got, ==, want);
        /* unchanged rows were not written: they keep the time they were last written */
        assert_rows(db, "SELECT id, last_seen_usec FROM filters ORDER BY id", "1,1000;2,1000;5,2000");
        assert_rows(db, "SELECT id, gone_usec FROM history ORDER BY id", "3,2000;4,2000;10,2000");
        assert_rows(db, "PRAGMA foreign_key_check", "");

        /* a pass that fails to be stored: the next one reconciles in full (it touches every row) */
        raw_exec(db, "CREATE TRIGGER refuse BEFORE INSERT ON filters WHEN NEW.id = 20 "
                     "BEGIN SELECT RAISE(ABORT, 'refused'); END");
        g_assert_cmpint(live_replace(l, with_filter_20(BUILD(forest_b_filters, forest_b_tasks)), false, &c), ==, 0);
        g_assert_cmpint(store_write_changes(s, live_forest(l), &c, 3000), <, 0);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        raw_exec(db, "DROP TRIGGER refuse");
        live_pass_stored(s, l, BUILD(forest_b_filters, forest_b_tasks), 4000, &c);
        live_changes_done(&c);
        assert_rows(db, "SELECT id, last_seen_usec FROM filters ORDER BY id", "1,4000;2,4000;5,4000");
        g_autofree char *again = stored_state(db);
        g_assert_cmpstr(again, ==, want);
}

/* What was stored reads back as the forest it was. */
static void test_load_live(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a(), *back = NULL;
        _cleanup_(store_freep) Store *s = open_ok(fx);

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);
        g_assert_cmpint(store_load_live(s, &back), ==, 0);
        g_assert_cmpint(forest_link(back, NULL), ==, 0);
        g_autofree char *want = forest_state(a), *got = forest_state(back);
        g_assert_cmpstr(got, ==, want);
        g_assert_cmpuint(back->n_listeners, ==, 1);
        g_assert_cmpuint(back->listeners[0]->filter_id, ==, 4);
        g_assert_cmpuint(back->listeners[0]->n_holders, ==, 1);
        g_assert_cmpint(forest_find_process(back, 100)->start_time, ==, 1100);
        g_assert_cmpuint(forest_find_task(back, 101, NULL)->start_time, ==, 1101);
        g_assert_true(forest_find_filter(back, 3)->log);
        g_assert_cmpint(memcmp(forest_find_filter(back, 3)->digest, forest_find_filter(a, 3)->digest, PROG_DIGEST_SIZE), ==, 0);
}

/* Views */

static void test_views(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a();
        Store *s = fx->store;
        sqlite3 *db = fx->db;
        char digest[PROG_DIGEST_STRING_MAX], sql[256];

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);

        assert_rows(db, "SELECT tid, tgid, position, filter, length FROM task_chains ORDER BY tid, position",
                    "100,100,0,2,1;100,100,1,1,1;101,100,0,3,2;101,100,1,1,1;200,200,0,4,1");
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM task_chains WHERE tid = 101 AND position = 0 AND digest = '%s'",
                 prog_digest_to_string(forest_find_filter(a, 3)->digest, digest));
        g_assert_cmpint(raw_int(db, sql), ==, 1);
        assert_rows(db, "SELECT filter, head_tasks, tasks, processes FROM filter_task_counts ORDER BY filter",
                    "1,0,2,1;2,1,1,1;3,1,1,1;4,1,1,1");
        assert_rows(db, "SELECT id, parent, depth, path FROM filter_tree ORDER BY path",
                    "1,NULL,1,1;2,1,2,1/2;3,1,2,1/3;4,NULL,1,4");
        assert_rows(db, "SELECT pid, ppid, depth, path, comm FROM process_tree ORDER BY path",
                    "100,1,0,100,alpha;200,100,1,100/200,beta;300,200,2,100/200/300,gamma");

        /* Deeper: 5 on 2 on 1, run by 102. */
        Filter f5 = filter_of(5, 2, PROG(tests_prog_allow), false);
        g_assert_cmpint(store_put_filter(s, &f5, NULL, 1100), ==, 0);
        Task t = thread_of(102, 5);
        g_assert_cmpint(store_put_thread(s, forest_find_process(a, 100), &t, 1100), ==, 0);
        assert_rows(db, "SELECT position, filter FROM task_chains WHERE tid = 102 ORDER BY position", "0,5;1,2;2,1");
        assert_rows(db, "SELECT depth, path FROM filter_tree WHERE id = 5", "3,1/2/5");
        assert_rows(db, "SELECT head_tasks, tasks, processes FROM filter_task_counts WHERE filter = 1", "0,3,1");
}

/* Timing: a machine-sized forest. Figures are printed, not asserted. */

#define PERF_FILTERS 5000
#define PERF_PROCESSES 2500
#define PERF_THREADS 4
#define PERF_PROG_MAX 64

/* Filter i (1-based) of a forest in which filters from 'changed' on have ids shifted by 'shift'
 * (new filters) and processes from 'changed_procs' on have pids shifted (new processes). */
typedef struct PerfShape {
        uint64_t changed, shift;
        size_t changed_procs;
} PerfShape;

static uint64_t perf_id(const PerfShape *sh, uint64_t i) {
        return i >= sh->changed ? i + sh->shift : i;
}

static void perf_add_filters(Forest *f, const PerfShape *sh) {
        struct sock_filter prog[PERF_PROG_MAX];

        for (uint64_t i = 1; i <= PERF_FILTERS; i++) {
                size_t len = 8 + i % (PERF_PROG_MAX - 8);
                for (size_t j = 0; j + 1 < len; j++)
                        prog[j] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) (i * 100 + j),
                                                                0, 0);
                prog[len - 1] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
                uint64_t parent = i > 100 ? perf_id(sh, i / 2) : 0;
                Filter *flt = NULL;
                g_assert_cmpint(forest_add_filter(f, perf_id(sh, i), parent, prog, len, &flt), ==, 0);
                flt->has_listener = i % 100 == 0;
        }
}

static void perf_add_processes(Forest *f, const PerfShape *sh) {
        for (size_t i = 0; i < PERF_PROCESSES; i++) {
                pid_t pid = 1000 + (pid_t) (i * PERF_THREADS) + (i >= sh->changed_procs ? 100000 : 0);
                Process *p = NULL;
                char exe[64];

                g_assert_cmpint(forest_add_process(f, pid, &p), ==, 0);
                snprintf(p->comm, sizeof(p->comm), "proc%zu", i);
                snprintf(exe, sizeof(exe), "/usr/bin/program-%zu", i % 50);
                g_assert_cmpint(process_set_exe(p, exe), ==, 0);
                p->ppid = i > 0 ? 1000 + (pid_t) ((i / 2) * PERF_THREADS) : 1;
                p->start_time = (uint64_t) pid * 3;
                for (pid_t k = 0; k < PERF_THREADS; k++) {
                        Task *t = NULL;
                        g_assert_cmpint(process_add_thread(p, pid + k, &t), ==, 0);
                        t->mode = TASK_MODE_FILTER;
                        t->filter_id = perf_id(sh, 1 + ((uint64_t) (pid + k) * 7919) % PERF_FILTERS);
                        t->start_time = (uint64_t) (pid + k) * 3;
                }
        }
}

static Forest *perf_forest(const PerfShape *sh) {
        _cleanup_free_ char *error = NULL;
        Forest *f = forest_new();
        uint64_t lid = 1;

        f->identity = IDENTITY_EXACT;
        perf_add_filters(f, sh);
        perf_add_processes(f, sh);
        for (uint64_t i = 100; i <= PERF_FILTERS; i += 100) {
                Listener *l = NULL;
                g_assert_cmpint(forest_add_listener(f, lid++, perf_id(sh, i), &l), ==, 0);
                g_assert_cmpint(listener_add_holder(l, f->processes[i / 100]->pid, 3), ==, 0);
        }
        if (forest_link(f, &error) < 0)
                g_error("forest_link: %s", error);
        return f;
}

static double cpu_ms(void) {
        struct timespec ts;

        g_assert_cmpint(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), ==, 0);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* Wall time is what the daemon's loop feels; CPU time is what the machine's load cannot inflate. */
static double perf_replace(Store *s, const Forest *f, uint64_t now, const char *what) {
        int64_t t0 = g_get_monotonic_time();
        double c0 = cpu_ms();

        g_assert_cmpint(store_replace_all(s, f, now), ==, 0);
        double ms = (double) (g_get_monotonic_time() - t0) / 1000.0;
        g_test_message("store_replace_all, %s: %zu filters, %zu threads, %zu processes: %.1f ms (CPU %.1f ms)", what,
                       f->n_filters, f->n_tasks, f->n_processes, ms, cpu_ms() - c0);
        return ms;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* The machine may be busy: print the best and the median of a few passes. */
static void perf_replace_repeated(Store *s, const Forest *f, uint64_t now, const char *what) {
        double ms[5];

        for (size_t i = 0; i < ELEMENTSOF(ms); i++)
                ms[i] = perf_replace(s, f, now + i, what);
        qsort(ms, ELEMENTSOF(ms), sizeof(double), cmp_double);
        g_test_message("store_replace_all, %s: best %.1f ms, median %.1f ms of %zu", what, ms[0],
                       ms[ELEMENTSOF(ms) / 2], ELEMENTSOF(ms));
}

static void perf_incremental(Store *s, uint64_t first_filter_id, uint64_t now) {
        int64_t t0 = g_get_monotonic_time();

        g_assert_cmpint(store_begin(s), ==, 0);
        for (pid_t i = 0; i < 1000; i++) {
                Process p = process_of(900000 + i / 4 * 4, "burst", NULL, 1);
                Task t = thread_of(900000 + i, first_filter_id + (uint64_t) i);
                g_assert_cmpint(store_put_process(s, &p), ==, 0);
                g_assert_cmpint(store_put_thread(s, &p, &t, now), ==, 0);
        }
        g_assert_cmpint(store_commit(s), ==, 0);
        g_test_message("1000 threads (and their processes) put in one batch: %.1f ms",
                       (double) (g_get_monotonic_time() - t0) / 1000.0);

        t0 = g_get_monotonic_time();
        for (pid_t i = 0; i < 1000; i++)
                g_assert_cmpint(store_remove_task(s, 900000 + i), ==, 1);
        g_test_message("1000 store_remove_task, one transaction each: %.1f ms",
                       (double) (g_get_monotonic_time() - t0) / 1000.0);
}

static void test_perf(Fixture *fx, gconstpointer data) {
        const PerfShape same = { .changed = UINT64_MAX, .changed_procs = SIZE_MAX };
        const PerfShape changed = { .changed = PERF_FILTERS - PERF_FILTERS / 10 + 1, .shift = 10000,
                                    .changed_procs = PERF_PROCESSES - PERF_PROCESSES / 10 };
        /* A restarted daemon numbers every filter anew (above store_max_filter_id). */
        const PerfShape renumbered = { .changed = 1, .shift = 20000,
                                       .changed_procs = PERF_PROCESSES - PERF_PROCESSES / 10 };
        _cleanup_(forest_freep) Forest *f1 = perf_forest(&same), *f2 = perf_forest(&changed),
                                       *f3 = perf_forest(&renumbered);
        int64_t t0 = g_get_monotonic_time();
        _cleanup_(store_freep) Store *s = open_ok(fx);
        _cleanup_(sqlite3_closep) sqlite3 *db = NULL;

        g_test_message("store_open, new database: %.1f ms", (double) (g_get_monotonic_time() - t0) / 1000.0);
        g_assert_cmpuint(f1->n_tasks, ==, PERF_PROCESSES * PERF_THREADS);

        perf_replace(s, f1, 1000, "into an empty database");
        perf_replace_repeated(s, f1, 2000, "unchanged");
        perf_replace(s, f2, 3000, "10% of filters and processes replaced");
        perf_replace_repeated(s, f2, 4000, "unchanged");
        perf_replace(s, f3, 5000, "every filter renumbered (a daemon restart)");
        perf_incremental(s, perf_id(&renumbered, 1), 6000);

        db = raw_open(fx->path);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM filters"), ==, PERF_FILTERS);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM tasks"), ==, PERF_PROCESSES * PERF_THREADS);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM processes"), ==, PERF_PROCESSES);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM history"), ==, PERF_FILTERS + PERF_FILTERS / 10);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM history WHERE first_seen_usec = 1000"), ==, PERF_FILTERS);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM listeners"), ==, PERF_FILTERS / 100);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM filters WHERE first_seen_usec = 5000"), ==, PERF_FILTERS);
        g_assert_cmpint(raw_int(db, "SELECT max_filter_id FROM meta"), ==, PERF_FILTERS + 20000);

        t0 = g_get_monotonic_time();
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM task_chains"), >, PERF_PROCESSES * PERF_THREADS);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM filter_task_counts"), ==, PERF_FILTERS);
        g_assert_cmpint(raw_int(db, "SELECT count(*) FROM process_tree"), ==, PERF_PROCESSES);
        g_test_message("task_chains + filter_task_counts + process_tree over the whole forest: %.1f ms",
                       (double) (g_get_monotonic_time() - t0) / 1000.0);
        assert_rows(db, "PRAGMA integrity_check", "ok");
        assert_rows(db, "PRAGMA foreign_key_check", "");
}

/* One transaction, one new thread row: a page or more of the log. */
static void put_one_thread(Store *s, pid_t tid) {
        Process p = process_of(100, "alpha", "/usr/bin/alpha", 1100);
        Task t = thread_of(tid, 3);
        g_assert_cmpint(store_begin(s), ==, 0);
        g_assert_cmpint(store_put_thread(s, &p, &t, 2000), ==, 0);
        g_assert_cmpint(store_commit(s), ==, 0);
}

static off_t wal_size(const Fixture *fx) {
        g_autofree char *wal = g_strconcat(fx->path, "-wal", NULL);
        struct stat st;
        g_assert_cmpint(stat(wal, &st), ==, 0);
        return st.st_size;
}

/* Whether the database file itself (not its log) holds the thread: what a checkpoint copied. */
static bool in_database_file(const Fixture *fx, pid_t tid) {
        g_autofree char *uri = g_strconcat("file:", fx->path, "?immutable=1", NULL);
        _cleanup_(sqlite3_closep) sqlite3 *db = NULL;
        char sql[64];
        g_assert_cmpint(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL), ==, SQLITE_OK);
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM tasks WHERE tid = %d", (int) tid);
        return raw_int(db, sql) == 1;
}

/* With a checkpointer, commits never copy the log into the database themselves (SQLite's automatic
 * checkpoint would, past 1,000 pages): the log grows to STORE_CHECKPOINT_PAGES, then the thread
 * copies it. Without one again, the connection's own checkpoints are back. Counted in commits,
 * not in time: the thread is waited for only once it has been asked. */
static void test_checkpoint_thread(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a();
        _cleanup_(store_freep) Store *s = open_ok(fx);
        _cleanup_(store_checkpointer_freep) StoreCheckpointer *c = NULL;
        pid_t tid = 200000;

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);
        g_assert_cmpint(store_checkpointer_new(s, &c), ==, 0);
        off_t asked = (off_t) STORE_CHECKPOINT_PAGES * (4096 + 24); /* the page size, and a frame's header */
        off_t largest = 0;
        for (unsigned i = 0; store_checkpointer_pages_copied(c) == 0; i++) {
                g_assert_cmpuint(i, <, 100000);
                put_one_thread(s, ++tid);
                largest = MAX(largest, wal_size(fx));
                if (wal_size(fx) >= asked)
                        g_usleep(1000);
        }
        /* Nothing copied it before the thread was asked to: the log grew to the checkpoint size (once
         * the thread has copied all of it, it starts the log again and cuts its file back). */
        g_assert_cmpint(largest, >=, asked);
        g_assert_true(in_database_file(fx, 200001));

        c = store_checkpointer_free(c);
        pid_t last = ++tid;
        put_one_thread(s, last);
        for (unsigned i = 0; !in_database_file(fx, last); i++) {
                g_assert_cmpuint(i, <, 2 * STORE_CHECKPOINT_PAGES);
                put_one_thread(s, ++tid);
        }
}

/* A large transaction (a full pass of a large machine) grows the log past the checkpoint size;
 * once a checkpoint has copied it all, the log starts again and its file is cut back to
 * STORE_WAL_LIMIT_BYTES: it does not keep the size of the largest transaction for good. */
static void test_checkpoint_wal_bounded(Fixture *fx, gconstpointer data) {
        _cleanup_(forest_freep) Forest *a = forest_a();
        _cleanup_(store_freep) Store *s = open_ok(fx);
        _cleanup_(store_checkpointer_freep) StoreCheckpointer *c = NULL;
        pid_t tid = 300000;

        g_assert_cmpint(store_replace_all(s, a, 1000), ==, 0);
        g_assert_cmpint(store_checkpointer_new(s, &c), ==, 0);
        /* About 2.5 times the limit of log pages in one transaction, then gone again. */
        g_assert_cmpint(sqlite3_exec(store_database(s),
                                     "CREATE TABLE junk(b); "
                                     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) "
                                     "INSERT INTO junk SELECT randomblob(3500) FROM n; "
                                     "DROP TABLE junk",
                                     NULL, NULL, NULL), ==, SQLITE_OK);
        g_assert_cmpint(wal_size(fx), >, (off_t) (2 * STORE_WAL_LIMIT_BYTES));
        /* Small commits with pauses: the thread copies the log, a commit starts it again. */
        for (unsigned i = 0; wal_size(fx) > (off_t) STORE_WAL_LIMIT_BYTES; i++) {
                g_assert_cmpuint(i, <, 5000);
                put_one_thread(s, ++tid);
                g_usleep(2000);
        }
}

/* Commits back to back, as the event path makes them under churn (a few pages every fraction of a
 * millisecond, for longer than a checkpoint takes): the checkpoints catch up with them, the log
 * starts again from its start, and its file stays near the checkpoint size instead of growing with
 * every commit. */
#define BUSY_COMMITS 8000
static void test_checkpoint_wal_bounded_busy(Fixture *fx, gconstpointer data) {
        _cleanup_(store_freep) Store *s = open_ok(fx);
        _cleanup_(store_checkpointer_freep) StoreCheckpointer *c = NULL;
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *insert = NULL;
        off_t largest = 0;

        g_assert_cmpint(store_checkpointer_new(s, &c), ==, 0);
        sqlite3 *db = store_database(s);
        g_assert_cmpint(sqlite3_exec(db, "CREATE TABLE junk(b)", NULL, NULL, NULL), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_prepare_v2(db, "INSERT INTO junk VALUES (randomblob(6000))", -1, &insert, NULL), ==,
                        SQLITE_OK);
        for (unsigned i = 0; i < BUSY_COMMITS; i++) {
                g_assert_cmpint(sqlite3_step(insert), ==, SQLITE_DONE); /* one commit of about 3 pages */
                g_assert_cmpint(sqlite3_reset(insert), ==, SQLITE_OK);
                if (i >= BUSY_COMMITS / 4)
                        largest = MAX(largest, wal_size(fx));
                g_usleep(200);
        }
        g_test_message("largest log after the first quarter: %.1f MiB (limit %.1f MiB), %" PRIu64 " pages copied",
                       (double) largest / (1 << 20), (double) STORE_WAL_LIMIT_BYTES / (1 << 20),
                       store_checkpointer_pages_copied(c));
        g_assert_cmpint(largest, <=, (off_t) (STORE_WAL_LIMIT_BYTES * 3 / 2));
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        log_set_max_level(g_test_verbose() ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERR);

        TEST_OPEN("/store/open/schema", test_open_creates_schema);
        TEST("/store/open/again", test_open_again);
        TEST("/store/open/other-application", test_open_other_application);
        TEST("/store/open/no-application-id", test_open_no_application_id);
        TEST("/store/open/not-sqlite", test_open_not_sqlite);
        TEST("/store/open/newer-version", test_open_newer_version);
        TEST("/store/migrate/005", test_migrate_005);
        TEST_OPEN("/store/replace-all", test_replace_all);
        TEST_OPEN("/store/replace-all/updates", test_replace_all_updates);
        TEST_OPEN("/store/replace-all/revives-retired", test_replace_all_revives_retired);
        TEST_OPEN("/store/pass-revives-retired", test_pass_revives_retired);
        TEST_OPEN("/store/replace-all/refusals", test_replace_all_refusals);
        TEST_OPEN("/store/history-limit", test_history_limit);
        TEST_OPEN("/store/history/pruned-by-batches", test_history_pruned_by_batches);
        TEST_OPEN("/store/incremental", test_incremental);
        TEST_OPEN("/store/write-changes", test_write_changes);
        TEST_OPEN("/store/write-changes/caller-logs", test_write_changes_caller_logs);
        TEST_OPEN("/store/pass-writes-differences", test_pass_writes_differences);
        TEST("/store/load-live", test_load_live);
        TEST_OPEN("/store/views", test_views);
        TEST("/store/checkpoint-thread", test_checkpoint_thread);
        TEST("/store/checkpoint/wal-bounded", test_checkpoint_wal_bounded);
        TEST("/store/checkpoint/wal-bounded-busy", test_checkpoint_wal_bounded_busy);
        TEST("/store/perf", test_perf);
        return g_test_run();
}
