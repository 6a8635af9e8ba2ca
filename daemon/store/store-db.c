/* store-db.c: the state database's connection: its prepared statements (the one table of their
 * SQL), the helpers that run them and log SQLite's errors, transactions and savepoints, the
 * commit hook */
#include <sqlite3.h>

#include "core/sqlite-util.h"
#include "store/store-db-internal.h"

static const char *const statement_sql[_STMT_MAX] = {
        [STMT_BEGIN] = "BEGIN IMMEDIATE",
        [STMT_COMMIT] = "COMMIT",
        [STMT_ROLLBACK] = "ROLLBACK",
        [STMT_SAVEPOINT] = "SAVEPOINT store_step",
        [STMT_RELEASE] = "RELEASE store_step",
        [STMT_ROLLBACK_TO] = "ROLLBACK TO store_step",
        [STMT_FOREIGN_KEY_CHECK] = "PRAGMA foreign_key_check",
        [STMT_MAX_FILTER_ID] =
                "SELECT max(max_filter_id, coalesce((SELECT max(id) FROM filters), 0), "
                "coalesce((SELECT max(id) FROM history), 0)) FROM meta",
        [STMT_GET_INSTALLER] =
                "SELECT installer_tid, installer_tgid, installer_comm, installer_exe, first_seen_usec "
                "FROM filters WHERE id = ?1 AND installer_tid IS NOT NULL",
        [STMT_RAISE_MAX_FILTER_ID] = "UPDATE meta SET max_filter_id = ?1 WHERE max_filter_id < ?1",
        [STMT_NEXT_GENERATION] =
                "UPDATE meta SET generation = generation + 1, last_full_scan_usec = ?1 RETURNING generation",
        /* A filter's first_seen and installer stay as they were first stored. No row is written
         * when the id is in history (ids are never reused): the caller sees no change. */
        [STMT_PUT_FILTER] =
                "INSERT INTO filters (" FILTER_COLUMNS ", generation) "
                "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13, ?14, ?15, ?16, ?17 "
                "WHERE NOT EXISTS (SELECT 1 FROM history WHERE id = ?1) "
                "ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, length = excluded.length, "
                "digest = excluded.digest, program = excluded.program, log = excluded.log, "
                "wait_killable_recv = excluded.wait_killable_recv, has_listener = excluded.has_listener, "
                "identity = excluded.identity, refs = excluded.refs, users = excluded.users, "
                "last_seen_usec = excluded.last_seen_usec, "
                "installer_tid = coalesce(installer_tid, excluded.installer_tid), "
                "installer_tgid = coalesce(installer_tgid, excluded.installer_tgid), "
                "installer_comm = coalesce(installer_comm, excluded.installer_comm), "
                "installer_exe = coalesce(installer_exe, excluded.installer_exe), "
                "generation = excluded.generation",
        /* The fast path of a full scan: when the row is stored as it is, only mark it seen. */
        [STMT_TOUCH_FILTER] =
                "UPDATE filters SET last_seen_usec = ?12, generation = ?17, refs = ?10, users = ?11 "
                "WHERE id = ?1 AND parent IS ?2 AND length = ?3 AND digest = ?4 AND log = ?6 "
                "AND wait_killable_recv = ?7 AND has_listener = ?8 AND identity = ?9 AND length(program) = ?18",
        /* The whole row, as the live forest has it. An unknown exe (NULL) keeps the stored one only
         * if this is the same process (same start time). */
        [STMT_PUT_PROCESS] =
                "INSERT INTO processes (pid, ppid, start_time, comm, exe, uid, gid, no_new_privs, generation) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
                "ON CONFLICT (pid) DO UPDATE SET ppid = excluded.ppid, "
                "exe = coalesce(excluded.exe, CASE WHEN start_time IS excluded.start_time THEN exe END), "
                "start_time = excluded.start_time, comm = excluded.comm, uid = excluded.uid, "
                "gid = excluded.gid, no_new_privs = excluded.no_new_privs, generation = excluded.generation",
        [STMT_TOUCH_PROCESS] =
                "UPDATE processes SET generation = ?9 WHERE pid = ?1 AND ppid = ?2 AND start_time IS ?3 "
                "AND comm = ?4 AND exe IS ?5 AND uid = ?6 AND gid = ?7 AND no_new_privs = ?8",
        [STMT_PUT_TASK] =
                "INSERT INTO tasks (tid, tgid, start_time, mode, filter, last_seen_usec, generation) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                "ON CONFLICT (tid) DO UPDATE SET tgid = excluded.tgid, start_time = excluded.start_time, "
                "mode = excluded.mode, filter = excluded.filter, last_seen_usec = excluded.last_seen_usec, "
                "generation = excluded.generation",
        [STMT_TOUCH_TASK] =
                "UPDATE tasks SET last_seen_usec = ?6, generation = ?7 "
                "WHERE tid = ?1 AND tgid = ?2 AND start_time = ?3 AND mode = ?4 AND filter IS ?5",
        [STMT_DELETE_HOLDERS] = "DELETE FROM listener_holders",
        [STMT_DELETE_LISTENERS] = "DELETE FROM listeners",
        [STMT_PUT_LISTENER] = "INSERT INTO listeners (id, filter, identity) VALUES (?1, ?2, ?3)",
        [STMT_PUT_HOLDER] = "INSERT OR IGNORE INTO listener_holders (listener, pid, fd) VALUES (?1, ?2, ?3)",
        [STMT_SWEEP_TASKS] = "DELETE FROM tasks WHERE generation <> ?1",
        [STMT_SWEEP_PROCESSES] = "DELETE FROM processes WHERE generation <> ?1",
        [STMT_ARCHIVE_STALE_FILTERS] =
                "INSERT INTO history (" FILTER_COLUMNS ", gone_usec) "
                "SELECT " FILTER_COLUMNS ", ?2 FROM filters WHERE generation <> ?1",
        [STMT_SWEEP_FILTERS] = "DELETE FROM filters WHERE generation <> ?1",
        [STMT_REMOVE_TASK] = "DELETE FROM tasks WHERE tid = ?1 RETURNING tgid",
        [STMT_REMOVE_EMPTY_PROCESS] =
                "DELETE FROM processes WHERE pid = ?1 AND NOT EXISTS (SELECT 1 FROM tasks WHERE tgid = ?1)",
        [STMT_FILTER_USE] =
                "SELECT EXISTS (SELECT 1 FROM filters WHERE id = ?1), "
                "EXISTS (SELECT 1 FROM filters WHERE parent = ?1) OR EXISTS (SELECT 1 FROM tasks WHERE filter = ?1)",
        [STMT_ARCHIVE_FILTER] =
                "INSERT INTO history (" FILTER_COLUMNS ", gone_usec) "
                "SELECT " FILTER_COLUMNS ", ?2 FROM filters WHERE id = ?1",
        [STMT_DELETE_FILTER] = "DELETE FROM filters WHERE id = ?1",
        /* A retired filter found live again (events were lost) is the same filter: its row comes
         * back from history with its first_seen and installer; STMT_PUT_FILTER then sets the rest
         * (parent included: the one in history may be gone). */
        [STMT_REVIVE_FILTER] =
                "INSERT INTO filters (" FILTER_COLUMNS ", generation) "
                "SELECT id, NULL, length, digest, program, log, wait_killable_recv, has_listener, identity, "
                "refs, users, first_seen_usec, last_seen_usec, installer_tid, installer_tgid, installer_comm, "
                "installer_exe, 0 FROM history WHERE id = ?1",
        [STMT_FORGET_HISTORY_ROW] = "DELETE FROM history WHERE id = ?1",
        /* History is bounded: the rows gone longest ago go first (index history_by_gone), once
         * max_filter_id remembers that their ids were used. */
        [STMT_REMEMBER_HISTORY_IDS] =
                "UPDATE meta SET max_filter_id = (SELECT max(id) FROM history) "
                "WHERE max_filter_id < (SELECT coalesce(max(id), 0) FROM history)",
        [STMT_DELETE_TASK] = "DELETE FROM tasks WHERE tid = ?1",
        [STMT_DELETE_PROCESS] = "DELETE FROM processes WHERE pid = ?1",
        [STMT_PRUNE_HISTORY] =
                "DELETE FROM history WHERE id IN (SELECT id FROM history ORDER BY gone_usec, id "
                "LIMIT min(?2, max(0, (SELECT count(*) FROM history) - ?1)))",
};

int store_error(Store *s, int rc, const char *what) {
        int r = sqlite_errno(s->db, rc);

        if (r == 0)
                r = -EIO;
        if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
                return log_debug_errno(r, "Failed to %s in %s: %s", what, s->path, sqlite3_errmsg(s->db));
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return store_log_errno(s, LOG_LEVEL_WARNING, r, "Failed to %s in %s: %s", what, s->path,
                                       sqlite3_errmsg(s->db));
        if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB)
                return store_log_errno(s, LOG_LEVEL_ERR, r,
                                       "Failed to %s in %s: %s. The file is damaged, and sectreed leaves it as it "
                                       "is: to start afresh, stop sectreed and move the file aside (the snapshots "
                                       "stored in it go with it).",
                                       what, s->path, sqlite3_errmsg(s->db));
        if (((rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_CANTOPEN) && r != -EIO)
                /* SQLite says "disk I/O error" for a full disk too: the system's errno says which */
                return store_log_errno(s, LOG_LEVEL_ERR, r, "Failed to %s in %s: %m (%s)", what, s->path,
                                       sqlite3_errmsg(s->db));
        return store_log_errno(s, LOG_LEVEL_ERR, r, "Failed to %s in %s: %s", what, s->path, sqlite3_errmsg(s->db));
}

int store_prepare(Store *s) {
        for (size_t i = 0; i < _STMT_MAX; i++) {
                int rc = sqlite3_prepare_v3(s->db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                            &s->statements[i], NULL);
                if (rc != SQLITE_OK)
                        return store_error(s, rc, "prepare a statement");
        }
        return 0;
}

void store_finalize(Store *s) {
        for (size_t i = 0; i < _STMT_MAX; i++)
                sqlite3_finalize(s->statements[i]);
}

sqlite3_stmt *store_statement(Store *s, StoreStatement i) {
        return s->statements[i];
}

int store_run(Store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        int r = rc == SQLITE_DONE ? 0 : store_error(s, rc, what);

        sqlite3_reset(st);
        return r;
}

int store_step_row(Store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        int r;

        if (rc == SQLITE_ROW)
                return 1;
        r = rc == SQLITE_DONE ? 0 : store_error(s, rc, what);
        sqlite3_reset(st);
        return r;
}

int store_run_plain(Store *s, StoreStatement i, const char *what) {
        return store_run(s, store_statement(s, i), what);
}

/* Through the C API, not PRAGMA foreign_keys: a prepared PRAGMA changes the flag when it is
 * compiled, not when it runs. Changing it expires the prepared statements, which SQLite then
 * compiles again on their next use. */
int store_enforce_foreign_keys(Store *s, bool enforce) {
        int rc = sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_FKEY, (int) enforce, NULL);

        if (rc != SQLITE_OK)
                return store_error(s, rc, enforce ? "enable foreign keys" : "disable foreign keys");
        return 0;
}

int store_exec(Store *s, const char *sql, const char *what) {
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : store_error(s, rc, what);
}

int store_run_by_id(Store *s, StoreStatement which, int64_t id, const char *what) {
        sqlite3_stmt *st = store_statement(s, which);
        sqlite3_bind_int64(st, 1, id);
        return store_run(s, st, what);
}

/* Transactions */

int store_begin(Store *s) {
        if (!sqlite3_get_autocommit(s->db))
                return log_error_errno(-EBUSY, "Failed to start a transaction in %s: one is already open.", s->path);
        return store_run_plain(s, STMT_BEGIN, "start a transaction");
}

int store_commit(Store *s) {
        return store_run_plain(s, STMT_COMMIT, "commit");
}

void store_rollback(Store *s) {
        if (sqlite3_get_autocommit(s->db))
                return; /* nothing open (SQLite may have rolled back by itself after an error) */
        (void) store_run_plain(s, STMT_ROLLBACK, "roll back");
}

int store_atomically(Store *s, int (*fn)(Store *s, const void *arg), const void *arg) {
        int r = store_run_plain(s, STMT_SAVEPOINT, "open a savepoint");

        if (r < 0)
                return r;
        r = fn(s, arg);
        if (r < 0)
                (void) store_run_plain(s, STMT_ROLLBACK_TO, "roll back to a savepoint");
        int k = store_run_plain(s, STMT_RELEASE, "release a savepoint");
        return r < 0 ? r : k < 0 ? k : r;
}

const char *store_path(const Store *s) {
        return s->path;
}

void store_unfinished_remember(Store *s, uint64_t id) {
        if (GROW(s->unfinished, s->n_unfinished_allocated, s->n_unfinished + 1) >= 0)
                s->unfinished[s->n_unfinished++] = id; /* else the next start deletes it */
}

bool store_unfinished_take(Store *s, uint64_t *ret) {
        if (s->n_unfinished == 0)
                return false;
        *ret = s->unfinished[--s->n_unfinished];
        return true;
}

static int on_wal_commit(void *userdata, sqlite3 *db, const char *name, int log_pages) {
        Store *s = userdata;
        s->commit_hook(s->commit_hook_userdata, log_pages > 0 ? (unsigned) log_pages : 0);
        return SQLITE_OK;
}

void store_set_commit_hook(Store *s, StoreCommitHook hook, void *userdata) {
        s->commit_hook = hook;
        s->commit_hook_userdata = userdata;
        if (hook)
                (void) sqlite3_wal_hook(s->db, on_wal_commit, s);
        else
                (void) sqlite3_wal_autocheckpoint(s->db, 1000); /* SQLite's default */
}

void store_release_memory(Store *s) {
        (void) sqlite3_db_release_memory(s->db);
}

sqlite3 *store_database(Store *s) {
        return s->db;
}

int store_sqlite_error(Store *s, int rc, const char *what) {
        return store_error(s, rc, what);
}
