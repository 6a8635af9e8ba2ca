/* store.c: the state database (SQLite): schema migrations, and the live tables kept equal to the
 * daemon's view of the kernel with prepared statements only
 *
 * Errors: negative errno, logged here with SQLite's message. Besides the obvious ones:
 *   -EMEDIUMTYPE      the file is not a sectree state database (another application_id, or not
 *                     SQLite at all); it is left untouched;
 *   -EPROTONOSUPPORT  its schema is newer than this build;
 *   -ENOENT           a filter or thread names a parent or head filter the database does not
 *                     hold (missed events: resynchronise), or store_retire_filter() of an
 *                     unknown id;
 *   -EBUSY            store_retire_filter() of a filter a thread or a child filter still uses,
 *                     or a transaction is already open where one must be started
 *                     (store_begin() twice, store_replace_all() inside a batch);
 * A filter stored with an id that is in history is brought back from history, keeping its
 * first_seen and installer: the same id is the same kernel object (ids are never reused).
 * store_remove_task() returns 1 if the thread was stored, 0 if it was not. Every change made
 * outside a batch is atomic on its own (a savepoint). */
#include <sqlite3.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/prog.h"
#include "core/sqlite-util.h"
#include "store/state-dir.h"
#include "store/state-migrations.h"
#include "store/store.h"

/* PRAGMA application_id of a state database: 0x53454354, "SECT" in ASCII (decimal for the
 * PRAGMA). */
#define STORE_APPLICATION_ID 1397048148
#define STORE_BUSY_TIMEOUT_MSEC 1000
#define STORE_CACHE_KIB 32768 /* an upper bound: pages are allocated as they are used */

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

typedef enum StoreStatement {
        STMT_BEGIN,
        STMT_COMMIT,
        STMT_ROLLBACK,
        STMT_SAVEPOINT,
        STMT_RELEASE,
        STMT_ROLLBACK_TO,
        STMT_FOREIGN_KEY_CHECK,
        STMT_MAX_FILTER_ID,
        STMT_GET_INSTALLER,
        STMT_RAISE_MAX_FILTER_ID,
        STMT_NEXT_GENERATION,
        STMT_PUT_FILTER,
        STMT_TOUCH_FILTER,
        STMT_PUT_PROCESS,
        STMT_TOUCH_PROCESS,
        STMT_PUT_TASK,
        STMT_TOUCH_TASK,
        STMT_DELETE_HOLDERS,
        STMT_DELETE_LISTENERS,
        STMT_PUT_LISTENER,
        STMT_PUT_HOLDER,
        STMT_SWEEP_TASKS,
        STMT_SWEEP_PROCESSES,
        STMT_ARCHIVE_STALE_FILTERS,
        STMT_SWEEP_FILTERS,
        STMT_REMOVE_TASK,
        STMT_REMOVE_EMPTY_PROCESS,
        STMT_FILTER_USE,
        STMT_ARCHIVE_FILTER,
        STMT_DELETE_FILTER,
        STMT_REVIVE_FILTER,
        STMT_FORGET_HISTORY_ROW,
        STMT_REMEMBER_HISTORY_IDS,
        STMT_PRUNE_HISTORY,
        STMT_DELETE_TASK,
        STMT_DELETE_PROCESS,
        _STMT_MAX,
} StoreStatement;

#define FILTER_COLUMNS                                                                      \
        "id, parent, length, digest, program, log, wait_killable_recv, has_listener, identity, " \
        "refs, users, first_seen_usec, last_seen_usec, installer_tid, installer_tgid, "         \
        "installer_comm, installer_exe"

/* Parameter positions of STMT_PUT_FILTER and STMT_TOUCH_FILTER. */
enum {
        PF_ID = 1,
        PF_PARENT,
        PF_LENGTH,
        PF_DIGEST,
        PF_PROGRAM,
        PF_LOG,
        PF_WAIT_KILLABLE_RECV,
        PF_HAS_LISTENER,
        PF_IDENTITY,
        PF_REFS,
        PF_USERS,
        PF_NOW,
        PF_INSTALLER_TID,
        PF_INSTALLER_TGID,
        PF_INSTALLER_COMM,
        PF_INSTALLER_EXE,
        PF_GENERATION,
        PF_PROGRAM_SIZE, /* STMT_TOUCH_FILTER only */
};

/* Parameter positions of STMT_PUT_PROCESS and STMT_TOUCH_PROCESS. */
enum { PP_PID = 1, PP_PPID, PP_START_TIME, PP_COMM, PP_EXE, PP_UID, PP_GID, PP_NO_NEW_PRIVS, PP_GENERATION };

/* Parameter positions of STMT_PUT_TASK and STMT_TOUCH_TASK. */
enum { PT_TID = 1, PT_TGID, PT_START_TIME, PT_MODE, PT_FILTER, PT_NOW, PT_GENERATION };

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
                "LIMIT max(0, (SELECT count(*) FROM history) - ?1))",
};

struct Store {
        sqlite3 *db;
        char *path;
        sqlite3_stmt *statements[_STMT_MAX];
        int64_t generation; /* meta.generation: stamped on every row written */
        bool mirrors_live;  /* the live tables are what the last full pass and the batches after it
                             * wrote, all committed: the next full pass may write only its
                             * differences */
        uint64_t archived; /* filters moved to history since it was last pruned */
        uint64_t history_limit; /* rows kept in history */
        uint8_t program[PROG_MAX_INSNS * 8]; /* scratch: a program in its stored encoding */
        StoreCommitHook commit_hook;
        void *commit_hook_userdata;
};

/* Errors */

/* Log a failed SQLite call with its message and return it as a negative errno. Constraint
 * violations are the caller's data, not the database's fault: they are warnings, and a missing
 * referent (which the callers name) only a debug message. */
static int store_error(Store *s, int rc, const char *what) {
        int r = sqlite_errno(s->db, rc);

        if (r == 0)
                r = -EIO;
        if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
                return log_debug_errno(r, "Failed to %s in %s: %s", what, s->path, sqlite3_errmsg(s->db));
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return log_warning_errno(r, "Failed to %s in %s: %s", what, s->path, sqlite3_errmsg(s->db));
        return log_error_errno(r, "Failed to %s in %s: %s", what, s->path, sqlite3_errmsg(s->db));
}

/* Statements */

static int store_prepare(Store *s) {
        for (size_t i = 0; i < _STMT_MAX; i++) {
                int rc = sqlite3_prepare_v3(s->db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                            &s->statements[i], NULL);
                if (rc != SQLITE_OK)
                        return store_error(s, rc, "prepare a statement");
        }
        return 0;
}

static sqlite3_stmt *store_statement(Store *s, StoreStatement i) {
        return s->statements[i];
}

/* Run a prepared statement that returns no row and reset it. */
static int store_run(Store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        int r = rc == SQLITE_DONE ? 0 : store_error(s, rc, what);

        sqlite3_reset(st);
        return r;
}

/* Step a prepared statement expected to return a row: returns 1 with one (the caller reads its
 * columns, then resets it), 0 without (reset already). */
static int store_step_row(Store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        int r;

        if (rc == SQLITE_ROW)
                return 1;
        r = rc == SQLITE_DONE ? 0 : store_error(s, rc, what);
        sqlite3_reset(st);
        return r;
}

static int store_run_plain(Store *s, StoreStatement i, const char *what) {
        return store_run(s, store_statement(s, i), what);
}

/* Open and format checks */

/* Through the C API, not PRAGMA foreign_keys: a prepared PRAGMA changes the flag when it is
 * compiled, not when it runs. Changing it expires the prepared statements, which SQLite then
 * compiles again on their next use. */
static int store_enforce_foreign_keys(Store *s, bool enforce) {
        int rc = sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_FKEY, (int) enforce, NULL);

        if (rc != SQLITE_OK)
                return store_error(s, rc, enforce ? "enable foreign keys" : "disable foreign keys");
        return 0;
}

static int store_connect(Store *s) {
        int rc = sqlite3_open_v2(s->path, &s->db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
                                         SQLITE_OPEN_EXRESCODE,
                                 NULL);
        if (rc != SQLITE_OK) {
                if (!s->db)
                        return log_oom();
                return store_error(s, rc, "open the database");
        }
        sqlite3_extended_result_codes(s->db, 1);
        rc = sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MSEC);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "set the busy timeout");
        return store_enforce_foreign_keys(s, true);
}

typedef struct StoreHeader {
        int64_t application_id;
        int64_t user_version;
        int64_t n_objects; /* tables, indexes, views, triggers */
} StoreHeader;

static int store_header_error(Store *s, int rc) {
        if ((rc & 0xff) == SQLITE_NOTADB)
                return log_error_errno(-EMEDIUMTYPE, "%s is not an SQLite database, refusing to touch it.", s->path);
        return store_error(s, rc, "read the database header");
}

/* A one-shot statement (not kept): reads the header fields without writing anything. */
static int store_read_header(Store *s, StoreHeader *ret) {
        static const char sql[] =
                "SELECT (SELECT application_id FROM pragma_application_id), "
                "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)";
        sqlite3_stmt *st = NULL;
        int r, rc;

        rc = sqlite3_prepare_v3(s->db, sql, -1, 0, &st, NULL);
        if (rc != SQLITE_OK)
                return store_header_error(s, rc);
        rc = sqlite3_step(st);
        r = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : store_header_error(s, rc);
        if (r > 0) {
                *ret = (StoreHeader) {
                        .application_id = sqlite3_column_int64(st, 0),
                        .user_version = sqlite3_column_int64(st, 1),
                        .n_objects = sqlite3_column_int64(st, 2),
                };
                r = 0;
        } else if (r == 0)
                r = log_error_errno(-EIO, "Failed to read the database header of %s: no row.", s->path);
        sqlite3_finalize(st);
        return r;
}

static int store_check_header(Store *s, const StoreHeader *h) {
        bool fresh = h->application_id == 0 && h->user_version == 0 && h->n_objects == 0;

        if (h->application_id != STORE_APPLICATION_ID && !fresh)
                return log_error_errno(-EMEDIUMTYPE,
                                       "%s is not a sectree state database (application_id 0x%08" PRIx32
                                       ", expected 0x%08x), refusing to touch it.",
                                       s->path, (uint32_t) h->application_id, STORE_APPLICATION_ID);
        if (h->user_version > STATE_MIGRATIONS_COUNT)
                return log_error_errno(-EPROTONOSUPPORT,
                                       "%s has schema version %" PRIi64 ", newer than this sectreed knows (%d).",
                                       s->path, h->user_version, STATE_MIGRATIONS_COUNT);
        if (h->user_version < 0)
                return log_error_errno(-EPROTONOSUPPORT, "%s has an invalid schema version %" PRIi64 ".",
                                       s->path, h->user_version);
        return 0;
}

static int store_check_format(Store *s) {
        StoreHeader h;
        int r = store_read_header(s, &h);

        if (r < 0)
                return r;
        return store_check_header(s, &h);
}

/* Connection settings that need no transaction: WAL (readers never block the daemon);
 * synchronous=NORMAL, which in WAL mode keeps the file consistent across crashes and skips an
 * fsync per commit (the next start reconciles anyway); a page cache that holds a machine's
 * state (the default 2 MiB makes a full reconciliation re-read pages) and in-memory temporary
 * structures. */
static int store_set_journal(Store *s) {
        sqlite3_stmt *st = NULL;
        int r, rc;

        rc = sqlite3_prepare_v3(s->db, "PRAGMA journal_mode = WAL", -1, 0, &st, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "enable WAL mode");
        r = store_step_row(s, st, "enable WAL mode");
        if (r > 0) {
                const char *mode = (const char *) sqlite3_column_text(st, 0);
                if (!mode || strcasecmp(mode, "wal") != 0)
                        log_warning("Could not put %s in WAL mode (journal mode is %s), continuing.", s->path,
                                    mode ?: "unknown");
                r = 0;
        }
        sqlite3_finalize(st);
        if (r < 0)
                return r;

        rc = sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -" STRINGIFY(STORE_CACHE_KIB)
                          "; PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "set the connection's pragmas");
        return 0;
}

/* Migrations */

static int store_exec(Store *s, const char *sql, const char *what) {
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : store_error(s, rc, what);
}

static int store_apply_migrations(Store *s) {
        StoreHeader h;
        int r;

        /* Read again under the write lock: another process may have migrated meanwhile. */
        r = store_read_header(s, &h);
        if (r < 0)
                return r;
        r = store_check_header(s, &h);
        if (r < 0)
                return r;
        if (h.user_version == 0) {
                r = store_exec(s, "PRAGMA application_id = " STRINGIFY(STORE_APPLICATION_ID),
                               "set the application id");
                if (r < 0)
                        return r;
        }
        for (int64_t v = h.user_version; v < STATE_MIGRATIONS_COUNT; v++) {
                r = store_exec(s, state_migrations[v], "apply a schema migration");
                if (r < 0)
                        return log_error_errno(r, "Failed to migrate %s to schema version %" PRIi64 ".", s->path,
                                               v + 1);
                log_debug("Migrated %s to schema version %" PRIi64 ".", s->path, v + 1);
        }
        return 0;
}

static int store_migrate(Store *s) {
        StoreHeader h;
        int r = store_read_header(s, &h);

        if (r < 0)
                return r;
        if (h.user_version == STATE_MIGRATIONS_COUNT)
                return 0;

        r = store_exec(s, "BEGIN IMMEDIATE", "start the migration transaction");
        if (r < 0)
                return r;
        r = store_apply_migrations(s);
        if (r >= 0)
                r = store_exec(s, "COMMIT", "commit the migrations");
        if (r < 0)
                (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

static int store_load_generation(Store *s) {
        sqlite3_stmt *st = NULL;
        int r, rc;

        rc = sqlite3_prepare_v3(s->db, "SELECT generation FROM meta", -1, 0, &st, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "read the generation");
        r = store_step_row(s, st, "read the generation");
        if (r > 0)
                s->generation = sqlite3_column_int64(st, 0);
        else if (r == 0)
                r = log_error_errno(-EBADMSG, "%s has no meta row.", s->path);
        sqlite3_finalize(st);
        return r < 0 ? r : 0;
}

int store_open(const char *state_dir, Store **ret) {
        _cleanup_(store_freep) Store *s = NULL;
        int r;

        r = state_dir_secure(state_dir, STORE_FILE_NAME);
        if (r < 0)
                return r;

        s = calloc(1, sizeof(Store));
        if (!s)
                return log_oom();
        s->history_limit = STORE_HISTORY_LIMIT_DEFAULT;
        if (asprintf(&s->path, "%s/%s", state_dir, STORE_FILE_NAME) < 0) {
                s->path = NULL;
                return log_oom();
        }

        r = store_connect(s);
        if (r < 0)
                return r;
        r = store_check_format(s);
        if (r < 0)
                return r;
        r = store_set_journal(s);
        if (r < 0)
                return r;
        r = store_migrate(s);
        if (r < 0)
                return r;
        r = store_prepare(s);
        if (r < 0)
                return r;
        r = store_load_generation(s);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}

Store *store_free(Store *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < _STMT_MAX; i++)
                sqlite3_finalize(s->statements[i]);
        if (s->db) {
                if (!sqlite3_get_autocommit(s->db))
                        (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
                int rc = sqlite3_close(s->db);
                if (rc != SQLITE_OK)
                        (void) store_error(s, rc, "close the database");
        }
        free(s->path);
        free(s);
        return NULL;
}

int store_max_filter_id(Store *s, uint64_t *ret) {
        sqlite3_stmt *st = store_statement(s, STMT_MAX_FILTER_ID);
        int r = store_step_row(s, st, "read the highest filter id");

        if (r < 0)
                return r;
        *ret = r > 0 ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        return 0;
}

int store_get_installer(Store *s, uint64_t id, StoreInstalled *ret) {
        sqlite3_stmt *st = store_statement(s, STMT_GET_INSTALLER);
        sqlite3_bind_int64(st, 1, (sqlite3_int64) id);
        int r = store_step_row(s, st, "read a filter's installer");
        if (r <= 0)
                return r;
        const char *comm = (const char *) sqlite3_column_text(st, 2), *exe = (const char *) sqlite3_column_text(st, 3);
        *ret = (StoreInstalled) {
                .tid = (pid_t) sqlite3_column_int64(st, 0),
                .tgid = (pid_t) sqlite3_column_int64(st, 1),
                .comm = strdup(comm ?: ""),
                .exe = strdup(exe ?: ""),
                .usec = (uint64_t) sqlite3_column_int64(st, 4),
        };
        sqlite3_reset(st);
        if (!ret->comm || !ret->exe) {
                store_installed_done(ret);
                return -ENOMEM;
        }
        return 1;
}

void store_installed_done(StoreInstalled *x) {
        free(x->comm);
        free(x->exe);
        x->comm = x->exe = NULL;
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

/* A savepoint makes a multi-statement change atomic whether or not a batch is open. */
static int store_atomically(Store *s, int (*fn)(Store *s, const void *arg), const void *arg) {
        int r = store_run_plain(s, STMT_SAVEPOINT, "open a savepoint");

        if (r < 0)
                return r;
        r = fn(s, arg);
        if (r < 0)
                (void) store_run_plain(s, STMT_ROLLBACK_TO, "roll back to a savepoint");
        int k = store_run_plain(s, STMT_RELEASE, "release a savepoint");
        return r < 0 ? r : k < 0 ? k : r;
}

/* Filters */

typedef struct FilterRow {
        uint64_t id, parent_id;
        const struct sock_filter *insns;
        size_t len;
        char digest[PROG_DIGEST_STRING_MAX];
        bool log, wait_killable_recv, has_listener;
        bool over_budget; /* its instructions were not kept: an empty program is stored */
        const char *identity;
        uint32_t refs, users; /* 0 = unknown */
        const StoreInstaller *installer;
} FilterRow;

static int filter_row_init(FilterRow *row, const Filter *flt, const StoreInstaller *installer) {
        *row = (FilterRow) {
                .id = flt->id,
                .parent_id = flt->parent_id,
                .insns = flt->insns,
                .len = flt->len,
                .log = flt->log,
                .wait_killable_recv = flt->wait_killable_recv,
                .has_listener = flt->has_listener,
                .over_budget = flt->over_budget && !flt->insns,
                .identity = identity_kind_to_string(flt->identity),
                .refs = flt->refs,
                .users = flt->users,
                .installer = installer,
        };
        prog_digest_to_string(flt->digest, row->digest);
        if (row->id == 0 || row->len > PROG_MAX_INSNS || (row->len > 0 && !row->insns && !row->over_budget) ||
            !row->identity)
                return log_error_errno(-EINVAL, "Refusing to store filter %" PRIu64 ": invalid id, length or identity.",
                                       row->id);
        return 0;
}

static void bind_installer(sqlite3_stmt *st, const StoreInstaller *in) {
        if (in && in->tid > 0)
                sqlite3_bind_int64(st, PF_INSTALLER_TID, in->tid);
        else
                sqlite3_bind_null(st, PF_INSTALLER_TID);
        if (in && in->tgid > 0)
                sqlite3_bind_int64(st, PF_INSTALLER_TGID, in->tgid);
        else
                sqlite3_bind_null(st, PF_INSTALLER_TGID);
        bind_text_or_null(st, PF_INSTALLER_COMM, in ? in->comm : NULL);
        bind_text_or_null(st, PF_INSTALLER_EXE, in ? in->exe : NULL);
}

/* What STMT_PUT_FILTER and STMT_TOUCH_FILTER share. */
static void bind_filter_row(Store *s, sqlite3_stmt *st, const FilterRow *f, uint64_t now_usec) {
        bind_u64(st, PF_ID, f->id);
        bind_id_or_null(st, PF_PARENT, f->parent_id);
        sqlite3_bind_int64(st, PF_LENGTH, (sqlite3_int64) f->len);
        sqlite3_bind_text(st, PF_DIGEST, f->digest, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, PF_LOG, f->log);
        sqlite3_bind_int(st, PF_WAIT_KILLABLE_RECV, f->wait_killable_recv);
        sqlite3_bind_int(st, PF_HAS_LISTENER, f->has_listener);
        sqlite3_bind_text(st, PF_IDENTITY, f->identity, -1, SQLITE_STATIC);
        bind_id_or_null(st, PF_REFS, f->refs);
        bind_id_or_null(st, PF_USERS, f->users);
        bind_u64(st, PF_NOW, now_usec);
        sqlite3_bind_int64(st, PF_GENERATION, s->generation);
}

static int store_raise_max_filter_id(Store *s, uint64_t id) {
        sqlite3_stmt *st = store_statement(s, STMT_RAISE_MAX_FILTER_ID);

        bind_u64(st, 1, id);
        return store_run(s, st, "record the highest filter id");
}

/* The program in its stored encoding, in s->program: empty for a filter over budget. */
static size_t program_wire_size(Store *s, const FilterRow *f) {
        return f->over_budget ? 0 : prog_to_wire(f->insns, f->len, s->program);
}

static int store_run_by_id(Store *s, StoreStatement which, int64_t id, const char *what) {
        sqlite3_stmt *st = store_statement(s, which);
        sqlite3_bind_int64(st, 1, id);
        return store_run(s, st, what);
}

/* Returns 1 when the row was written, 0 when its id is in history (nothing written). */
static int store_put_filter_once(Store *s, const FilterRow *f, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, STMT_PUT_FILTER);
        int r;

        bind_filter_row(s, st, f, now_usec);
        sqlite3_bind_blob(st, PF_PROGRAM, s->program, (int) program_wire_size(s, f), SQLITE_STATIC);
        bind_installer(st, f->installer);
        r = store_run(s, st, "store a filter");
        if (r == -ENOENT)
                return log_warning_errno(r, "Filter %" PRIu64 " names parent %" PRIu64 ", which is not stored.", f->id,
                                         f->parent_id);
        if (r < 0)
                return r;
        return sqlite3_changes(s->db) > 0;
}

typedef struct ReviveArgs {
        const FilterRow *row;
        uint64_t now_usec;
} ReviveArgs;

static int store_revive_filter_steps(Store *s, const void *arg) {
        const ReviveArgs *a = arg;
        int r = store_run_by_id(s, STMT_REVIVE_FILTER, (int64_t) a->row->id, "bring a filter back from history");

        if (r >= 0)
                r = store_run_by_id(s, STMT_FORGET_HISTORY_ROW, (int64_t) a->row->id, "delete a history row");
        if (r >= 0)
                r = store_put_filter_once(s, a->row, a->now_usec);
        if (r == 0)
                r = log_warning_errno(-EEXIST, "Filter %" PRIu64 " is still in history after it was brought back.",
                                      a->row->id);
        return r < 0 ? r : 0;
}

/* A filter whose id is in history was retired while something still held it (events were lost):
 * the same id is the same kernel object, so it comes back, and keeps its first_seen and installer. */
static int store_put_filter_row(Store *s, const FilterRow *f, uint64_t now_usec) {
        int r = store_put_filter_once(s, f, now_usec);

        if (r != 0)
                return r < 0 ? r : 0;
        log_info("Filter %" PRIu64 " was retired but is live: bringing it back from history.", f->id);
        return store_atomically(s, store_revive_filter_steps, &(ReviveArgs) { .row = f, .now_usec = now_usec });
}

/* A full scan mostly finds filters that are stored already: then only mark them seen. */
static int store_touch_or_put_filter_row(Store *s, const FilterRow *f, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, STMT_TOUCH_FILTER);
        int r;

        bind_filter_row(s, st, f, now_usec);
        sqlite3_bind_int64(st, PF_PROGRAM_SIZE, (sqlite3_int64) (f->over_budget ? 0 : f->len * PROG_INSN_WIRE_SIZE));
        r = store_run(s, st, "mark a filter seen");
        if (r >= 0 && sqlite3_changes(s->db) == 0)
                r = store_put_filter_row(s, f, now_usec);
        return r;
}

int store_put_filter(Store *s, const Filter *flt, const StoreInstaller *installer, uint64_t now_usec) {
        FilterRow row;
        int r = filter_row_init(&row, flt, installer);

        if (r < 0)
                return r;
        r = store_put_filter_row(s, &row, now_usec);
        if (r < 0)
                return r;
        return store_raise_max_filter_id(s, row.id);
}

typedef struct RetireArgs {
        uint64_t id, now_usec;
} RetireArgs;

static int store_check_unused(Store *s, uint64_t id) {
        sqlite3_stmt *st = store_statement(s, STMT_FILTER_USE);
        bool exists, used;
        int r;

        bind_u64(st, 1, id);
        r = store_step_row(s, st, "check whether a filter is in use");
        if (r < 0)
                return r;
        exists = r > 0 && sqlite3_column_int(st, 0);
        used = r > 0 && sqlite3_column_int(st, 1);
        sqlite3_reset(st);
        if (!exists)
                return log_debug_errno(-ENOENT, "Filter %" PRIu64 " is not stored, nothing to retire.", id);
        if (used)
                return log_warning_errno(-EBUSY, "Not retiring filter %" PRIu64 ": a task or a child filter uses it.",
                                         id);
        return 0;
}

static int store_retire_filter_steps(Store *s, const void *arg) {
        const RetireArgs *a = arg;
        sqlite3_stmt *st = store_statement(s, STMT_ARCHIVE_FILTER);
        int r;

        bind_u64(st, 1, a->id);
        bind_u64(st, 2, a->now_usec);
        r = store_run(s, st, "move a filter to history");
        if (r < 0)
                return r;
        s->archived++; /* an overcount when rolled back: one prune too many */
        st = store_statement(s, STMT_DELETE_FILTER);
        bind_u64(st, 1, a->id);
        return store_run(s, st, "delete a filter"); /* its listeners go with it (ON DELETE CASCADE) */
}

int store_retire_filter(Store *s, uint64_t id, uint64_t now_usec) {
        int r = store_check_unused(s, id);

        if (r < 0)
                return r;
        return store_atomically(s, store_retire_filter_steps, &(RetireArgs) { .id = id, .now_usec = now_usec });
}

/* Processes and tasks */

typedef struct ProcessRow {
        pid_t pid, ppid;
        uint64_t start_time; /* 0 = unknown */
        const char *comm, *exe;
        uid_t uid;
        gid_t gid;
        bool no_new_privs;
} ProcessRow;

/* Binds every parameter of STMT_PUT_PROCESS and STMT_TOUCH_PROCESS. */
static int store_run_process_row(Store *s, StoreStatement which, const ProcessRow *p) {
        sqlite3_stmt *st = store_statement(s, which);

        sqlite3_bind_int64(st, PP_PID, p->pid);
        sqlite3_bind_int64(st, PP_PPID, p->ppid > 0 ? p->ppid : 0);
        bind_id_or_null(st, PP_START_TIME, p->start_time);
        sqlite3_bind_text(st, PP_COMM, p->comm, -1, SQLITE_STATIC);
        bind_text_or_null(st, PP_EXE, p->exe);
        sqlite3_bind_int64(st, PP_UID, p->uid);
        sqlite3_bind_int64(st, PP_GID, p->gid);
        sqlite3_bind_int(st, PP_NO_NEW_PRIVS, p->no_new_privs);
        sqlite3_bind_int64(st, PP_GENERATION, s->generation);
        return store_run(s, st, "store a process");
}

typedef struct TaskRow {
        pid_t tid, tgid;
        uint64_t start_time;
        const char *mode;
        uint64_t filter_id;
} TaskRow;

static int task_row_init(TaskRow *row, pid_t tid, pid_t tgid, uint64_t start_time, TaskMode mode, uint64_t filter_id) {
        *row = (TaskRow) {
                .tid = tid,
                .tgid = tgid,
                .start_time = start_time,
                .mode = task_mode_to_string(mode),
                .filter_id = filter_id,
        };
        if (tid <= 0 || tgid <= 0 || !row->mode)
                return log_error_errno(-EINVAL, "Refusing to store thread %d of process %d: invalid ids or mode %d.",
                                       tid, tgid, mode);
        return 0;
}

/* Binds every parameter of STMT_PUT_TASK and STMT_TOUCH_TASK. */
static int store_run_task_row(Store *s, StoreStatement which, const TaskRow *t, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, which);
        int r;

        sqlite3_bind_int64(st, PT_TID, t->tid);
        sqlite3_bind_int64(st, PT_TGID, t->tgid);
        bind_u64(st, PT_START_TIME, t->start_time);
        sqlite3_bind_text(st, PT_MODE, t->mode, -1, SQLITE_STATIC);
        bind_id_or_null(st, PT_FILTER, t->filter_id);
        bind_u64(st, PT_NOW, now_usec);
        sqlite3_bind_int64(st, PT_GENERATION, s->generation);
        r = store_run(s, st, "store a thread");
        if (r == -ENOENT)
                return log_warning_errno(r, "Thread %d names filter %" PRIu64 ", which is not stored.", t->tid,
                                         t->filter_id);
        return r;
}

static void process_row_init(ProcessRow *row, const Process *p) {
        *row = (ProcessRow) {
                .pid = p->pid,
                .ppid = p->ppid,
                .start_time = p->start_time,
                .comm = p->comm,
                .exe = p->exe,
                .uid = p->uid,
                .gid = p->gid,
                .no_new_privs = p->no_new_privs,
        };
}

int store_put_process(Store *s, const Process *p) {
        ProcessRow row;

        process_row_init(&row, p);
        return store_run_process_row(s, STMT_PUT_PROCESS, &row);
}

int store_put_thread(Store *s, const Process *p, const Task *t, uint64_t now_usec) {
        TaskRow row;
        int r = task_row_init(&row, t->tid, p->pid, t->start_time, t->mode, t->filter_id);

        if (r < 0)
                return r;
        return store_run_task_row(s, STMT_PUT_TASK, &row, now_usec);
}

/* Delete the thread, and its process once no thread is left. Returns 1 if it was stored. */
static int store_remove_task_steps(Store *s, const void *arg) {
        pid_t tid = *(const pid_t *) arg;
        sqlite3_stmt *st = store_statement(s, STMT_REMOVE_TASK);
        int64_t tgid;
        int r;

        sqlite3_bind_int64(st, 1, tid);
        r = store_step_row(s, st, "delete a thread");
        if (r <= 0)
                return r;
        tgid = sqlite3_column_int64(st, 0);
        r = store_run(s, st, "delete a thread"); /* finish the DELETE ... RETURNING */
        if (r < 0)
                return r;

        st = store_statement(s, STMT_REMOVE_EMPTY_PROCESS);
        sqlite3_bind_int64(st, 1, tgid);
        r = store_run(s, st, "delete an empty process");
        return r < 0 ? r : 1;
}

int store_remove_task(Store *s, pid_t tid) {
        return store_atomically(s, store_remove_task_steps, &tid);
}

/* Full reconciliation: mark and sweep. Every row of the forest is stamped with a new
 * generation, either by a cheap "touch" when the stored row is equal, or by an upsert; rows left
 * with an older generation are gone. */

static int store_next_generation(Store *s, uint64_t now_usec) {
        sqlite3_stmt *st = store_statement(s, STMT_NEXT_GENERATION);
        int r;

        bind_u64(st, 1, now_usec);
        r = store_step_row(s, st, "start a new generation");
        if (r < 0)
                return r;
        if (r == 0)
                return log_error_errno(-EBADMSG, "%s has no meta row.", s->path);
        s->generation = sqlite3_column_int64(st, 0);
        return store_run(s, st, "start a new generation");
}

static int store_reconcile_filters(Store *s, const Forest *f, uint64_t now_usec) {
        uint64_t max_id = 0;

        for (size_t i = 0; i < f->n_filters; i++) {
                FilterRow row;
                int r = filter_row_init(&row, f->filters[i], NULL);
                if (r < 0)
                        return r;
                r = store_touch_or_put_filter_row(s, &row, now_usec);
                if (r < 0)
                        return r;
                if (row.id > max_id)
                        max_id = row.id;
        }
        return store_raise_max_filter_id(s, max_id);
}

static int store_reconcile_process(Store *s, const Process *p, uint64_t now_usec) {
        ProcessRow prow;
        int r;

        process_row_init(&prow, p);
        r = store_run_process_row(s, STMT_TOUCH_PROCESS, &prow);
        if (r >= 0 && sqlite3_changes(s->db) == 0)
                r = store_run_process_row(s, STMT_PUT_PROCESS, &prow);
        if (r < 0)
                return r;

        for (size_t i = 0; i < p->n_threads; i++) {
                const Task *t = &p->threads[i];
                TaskRow trow;
                r = task_row_init(&trow, t->tid, p->pid, t->start_time, t->mode, t->filter_id);
                if (r < 0)
                        return r;
                r = store_run_task_row(s, STMT_TOUCH_TASK, &trow, now_usec);
                if (r >= 0 && sqlite3_changes(s->db) == 0)
                        r = store_run_task_row(s, STMT_PUT_TASK, &trow, now_usec);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int store_reconcile_processes(Store *s, const Forest *f, uint64_t now_usec) {
        for (size_t i = 0; i < f->n_processes; i++) {
                int r = store_reconcile_process(s, f->processes[i], now_usec);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int store_put_listener(Store *s, const Listener *l) {
        sqlite3_stmt *st = store_statement(s, STMT_PUT_LISTENER);
        const char *identity = identity_kind_to_string(l->identity);
        int r;

        if (!identity)
                return log_error_errno(-EINVAL, "Refusing to store listener %" PRIu64 ": invalid identity.", l->id);
        bind_u64(st, 1, l->id);
        bind_u64(st, 2, l->filter_id);
        sqlite3_bind_text(st, 3, identity, -1, SQLITE_STATIC);
        r = store_run(s, st, "store a listener");
        if (r < 0)
                return r;

        st = store_statement(s, STMT_PUT_HOLDER);
        for (size_t i = 0; i < l->n_holders; i++) {
                bind_u64(st, 1, l->id);
                sqlite3_bind_int64(st, 2, l->holders[i].pid);
                sqlite3_bind_int(st, 3, l->holders[i].fd);
                r = store_run(s, st, "store a listener holder");
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Listener ids are local to a scan: the tables are rewritten, not merged. */
static int store_reconcile_listeners(Store *s, const Forest *f) {
        int r;

        r = store_run_plain(s, STMT_DELETE_HOLDERS, "delete the listener holders");
        if (r < 0)
                return r;
        r = store_run_plain(s, STMT_DELETE_LISTENERS, "delete the listeners");
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_listeners; i++) {
                r = store_put_listener(s, f->listeners[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int store_sweep_statement(Store *s, StoreStatement which, uint64_t now_usec, const char *what) {
        sqlite3_stmt *st = store_statement(s, which);

        sqlite3_bind_int64(st, 1, s->generation);
        if (which == STMT_ARCHIVE_STALE_FILTERS)
                bind_u64(st, 2, now_usec);
        return store_run(s, st, what);
}

/* Rows the new generation did not touch are gone: threads, then processes, then filters (into
 * history). Returns the number of filters gone. */
static int store_sweep(Store *s, uint64_t now_usec) {
        int r, gone;

        r = store_sweep_statement(s, STMT_SWEEP_TASKS, now_usec, "delete gone threads");
        if (r < 0)
                return r;
        r = store_sweep_statement(s, STMT_SWEEP_PROCESSES, now_usec, "delete gone processes");
        if (r < 0)
                return r;
        r = store_sweep_statement(s, STMT_ARCHIVE_STALE_FILTERS, now_usec, "move gone filters to history");
        if (r < 0)
                return r;
        gone = sqlite3_changes(s->db);
        r = store_sweep_statement(s, STMT_SWEEP_FILTERS, now_usec, "delete gone filters");
        return r < 0 ? r : gone;
}

/* Foreign keys are not enforced row by row during a reconciliation (that would triple its
 * cost); instead the whole result is checked once before it is committed. */
static int store_check_foreign_keys(Store *s) {
        sqlite3_stmt *st = store_statement(s, STMT_FOREIGN_KEY_CHECK);
        int r = store_step_row(s, st, "check foreign keys");

        if (r <= 0)
                return r;
        r = log_error_errno(-ENOENT, "Refusing to store the scan: %s row %" PRIi64 " refers to a missing %s row.",
                            (const char *) sqlite3_column_text(st, 0), (int64_t) sqlite3_column_int64(st, 1),
                            (const char *) sqlite3_column_text(st, 2));
        sqlite3_reset(st);
        return r;
}

/* Keep the newest history_limit rows of history. */
static int store_prune_history(Store *s) {
        int r = store_run_plain(s, STMT_REMEMBER_HISTORY_IDS, "remember the ids in history");
        if (r < 0)
                return r;
        sqlite3_stmt *st = store_statement(s, STMT_PRUNE_HISTORY);
        bind_u64(st, 1, s->history_limit);
        r = store_run(s, st, "prune history");
        if (r < 0)
                return r;
        int n = sqlite3_changes(s->db);
        if (n > 0)
                log_debug("Pruned %d filters from history (it keeps %" PRIu64 ").", n, s->history_limit);
        s->archived = 0;
        return 0;
}

void store_set_history_limit(Store *s, uint64_t rows) {
        s->history_limit = rows;
}

static int store_reconcile(Store *s, const Forest *f, uint64_t now_usec) {
        int r, gone;

        r = store_next_generation(s, now_usec);
        if (r < 0)
                return r;
        r = store_reconcile_filters(s, f, now_usec);
        if (r < 0)
                return r;
        r = store_reconcile_processes(s, f, now_usec);
        if (r < 0)
                return r;
        r = store_reconcile_listeners(s, f);
        if (r < 0)
                return r;
        gone = store_sweep(s, now_usec);
        if (gone < 0)
                return gone;
        r = store_prune_history(s);
        if (r < 0)
                return r;
        r = store_check_foreign_keys(s);
        if (r < 0)
                return r;
        log_debug("Stored %zu filters (%d gone), %zu processes, %zu threads, %zu listeners in %s.", f->n_filters, gone,
                  f->n_processes, f->n_tasks, f->n_listeners, s->path);
        return 0;
}

typedef int (*PassSteps)(Store *s, const Forest *old, const Forest *f, uint64_t now_usec);

/* A full pass's writes in one transaction: rolled back on failure, with the generation it started
 * as it was. */
static int store_pass_transaction(Store *s, PassSteps steps, const Forest *old, const Forest *f, uint64_t now_usec) {
        int64_t generation = s->generation;
        int r = store_begin(s);

        if (r < 0)
                return r;
        r = steps(s, old, f, now_usec);
        if (r >= 0)
                r = store_commit(s);
        if (r < 0) {
                store_rollback(s);
                s->generation = generation;
        }
        return r;
}

static int store_reconcile_steps(Store *s, const Forest *old, const Forest *f, uint64_t now_usec) {
        return store_reconcile(s, f, now_usec);
}

static int store_replace_all_transaction(Store *s, const Forest *f, uint64_t now_usec) {
        return store_pass_transaction(s, store_reconcile_steps, NULL, f, now_usec);
}

int store_replace_all(Store *s, const Forest *f, uint64_t now_usec) {
        int r, k;

        if (!f->linked)
                return log_error_errno(-EINVAL, "Refusing to store a forest that is not linked.");
        if (!sqlite3_get_autocommit(s->db))
                return log_error_errno(-EBUSY, "Refusing to replace %s inside an open batch.", s->path);

        r = store_enforce_foreign_keys(s, false);
        if (r < 0)
                return r;
        r = store_replace_all_transaction(s, f, now_usec);
        k = store_enforce_foreign_keys(s, true);
        return r < 0 ? r : k;
}

/* Batches: what a live batch changed, net of what it changed back */

/* The installer the kernel named; an inferred filter's is not known. */
static int store_put_attached(Store *s, const LiveChange *x, uint64_t now_usec) {
        StoreInstaller in = { .tid = x->tid, .tgid = x->tgid, .comm = x->comm, .exe = x->installer_exe };
        bool exact = x->filter->identity == IDENTITY_EXACT;

        return store_put_filter(s, x->filter, exact ? &in : NULL, now_usec);
}

typedef struct Touched {
        Hashmap threads;   /* tid -> (void *) tgid of its last change */
        Hashmap processes; /* tgid -> (void *) 1 */
} Touched;

static void touched_deinit(Touched *t) {
        hashmap_deinit(&t->threads);
        hashmap_deinit(&t->processes);
}

static int touched_collect(Touched *t, const LiveChanges *c) {
        for (size_t i = 0; i < c->n; i++) {
                const LiveChange *x = &c->changes[i];
                int r = 0;
                switch (x->type) {
                case LIVE_TASK_ADDED:
                case LIVE_TASK_UPDATED:
                case LIVE_TASK_EXITED:
                        r = hashmap_replace(&t->threads, (uint64_t) x->tid, (void *) (uintptr_t) x->tgid);
                        break;
                case LIVE_PROCESS_ADDED:
                case LIVE_PROCESS_UPDATED:
                case LIVE_PROCESS_REMOVED:
                        r = hashmap_replace(&t->processes, (uint64_t) x->tgid, (void *) 1);
                        break;
                default:
                        break;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static const Task *live_thread(const Forest *live, pid_t tgid, pid_t tid) {
        return process_find_thread(forest_find_process(live, tgid), tid);
}

/* Threads gone: their rows, and their process's once it has none left. */
static int store_write_removals(Store *s, const Forest *live, const Touched *t) {
        uint64_t tid;
        void *tgid;
        for (size_t i = 0; hashmap_next(&t->threads, &i, &tid, &tgid);)
                if (!live_thread(live, (pid_t) (uintptr_t) tgid, (pid_t) tid)) {
                        int r = store_remove_task(s, (pid_t) tid);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Processes, then threads, as the live forest has them now. A thread's process row is written too:
 * removing another thread may have taken it. */
static int store_write_puts(Store *s, const Forest *live, Touched *t, uint64_t now_usec) {
        uint64_t key;
        void *value;
        int r;

        for (size_t i = 0; hashmap_next(&t->threads, &i, &key, &value);)
                if (live_thread(live, (pid_t) (uintptr_t) value, (pid_t) key) &&
                    (r = hashmap_replace(&t->processes, (uint64_t) (uintptr_t) value, (void *) 1)) < 0)
                        return r;
        for (size_t i = 0; hashmap_next(&t->processes, &i, &key, NULL);) {
                const Process *p = forest_find_process(live, (pid_t) key);
                if (p && (r = store_put_process(s, p)) < 0)
                        return r;
        }
        for (size_t i = 0; hashmap_next(&t->threads, &i, &key, &value);) {
                const Process *p = forest_find_process(live, (pid_t) (uintptr_t) value);
                const Task *th = process_find_thread(p, (pid_t) key);
                if (th && (r = store_put_thread(s, p, th, now_usec)) < 0)
                        return r;
        }
        return 0;
}

/* Listeners that events made, changed or ended: their filters' flags, and the listener tables as
 * the live forest has them (a few rows: rewritten whole). */
static int store_write_listeners(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        bool any = false;
        for (size_t i = 0; i < c->n; i++) {
                if (c->changes[i].type != LIVE_LISTENER_CHANGED)
                        continue;
                const Filter *flt = forest_find_filter(live, c->changes[i].filter_id);
                int r = flt ? store_put_filter(s, flt, NULL, now_usec) : 0;
                if (r < 0)
                        return r;
                any = true;
        }
        return any ? store_reconcile_listeners(s, live) : 0;
}

/* Filters first (a thread's row names its head), then threads gone, then what is, then the
 * listeners, then the filters retired (children before parents, as the changes have them). */
static int store_write_batch(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        _cleanup_(touched_deinit) Touched t = {};
        int r = touched_collect(&t, c);

        for (size_t i = 0; r >= 0 && i < c->n; i++)
                if (c->changes[i].type == LIVE_FILTER_ATTACHED && c->changes[i].new_filter)
                        r = store_put_attached(s, &c->changes[i], now_usec);
        if (r >= 0)
                r = store_write_removals(s, live, &t);
        if (r >= 0)
                r = store_write_puts(s, live, &t, now_usec);
        if (r >= 0)
                r = store_write_listeners(s, live, c, now_usec);
        for (size_t i = 0; r >= 0 && i < c->n; i++)
                if (c->changes[i].type == LIVE_FILTER_RETIRED)
                        r = store_retire_filter(s, c->changes[i].filter_id, now_usec);
        return r;
}

/* A full pass when the live tables hold the forest it replaced: only what differs is written. */

static bool filter_row_same(const Filter *a, const Filter *b) {
        return a->parent_id == b->parent_id && a->len == b->len && memcmp(a->digest, b->digest, sizeof(a->digest)) == 0 &&
               a->log == b->log && a->wait_killable_recv == b->wait_killable_recv &&
               a->has_listener == b->has_listener && a->identity == b->identity && a->refs == b->refs &&
               a->users == b->users && (a->over_budget && !a->insns) == (b->over_budget && !b->insns);
}

static bool process_row_same(const Process *a, const Process *b) {
        return a->ppid == b->ppid && a->start_time == b->start_time && memcmp(a->comm, b->comm, sizeof(a->comm)) == 0 &&
               streq_ptr(a->exe, b->exe) && a->uid == b->uid && a->gid == b->gid && a->no_new_privs == b->no_new_privs;
}

static bool task_row_same(const Task *a, const Task *b) {
        return a->start_time == b->start_time && a->mode == b->mode && a->filter_id == b->filter_id;
}

static int store_diff_filters(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        uint64_t max_id = 0;
        int r;

        for (size_t i = 0; i < new->n_filters; i++) {
                const Filter *x = new->filters[i], *was = forest_find_filter(old, x->id);
                FilterRow row;
                if (x->id > max_id)
                        max_id = x->id;
                if (was && filter_row_same(was, x))
                        continue;
                r = filter_row_init(&row, x, NULL);
                if (r >= 0)
                        r = store_put_filter_row(s, &row, now_usec);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < old->n_filters; i++)
                if (!forest_find_filter(new, old->filters[i]->id) &&
                    (r = store_retire_filter_steps(s, &(RetireArgs) { .id = old->filters[i]->id, .now_usec = now_usec })) < 0)
                        return r;
        return store_raise_max_filter_id(s, max_id);
}

static int store_diff_tasks(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        int r;

        /* gone first: a pid or tid may be another process's or thread's now */
        for (size_t i = 0; i < old->n_processes; i++) {
                const Process *p = old->processes[i], *now = forest_find_process(new, p->pid);
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j], *still = now ? process_find_thread(now, t->tid) : NULL;
                        if (!still && (r = store_run_by_id(s, STMT_DELETE_TASK, t->tid, "delete a thread")) < 0)
                                return r;
                }
                if (!now && (r = store_run_by_id(s, STMT_DELETE_PROCESS, p->pid, "delete a process")) < 0)
                        return r;
        }
        for (size_t i = 0; i < new->n_processes; i++) {
                const Process *p = new->processes[i], *was = forest_find_process(old, p->pid);
                if ((!was || !process_row_same(was, p)) && (r = store_put_process(s, p)) < 0)
                        return r;
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j], *before = was ? process_find_thread(was, t->tid) : NULL;
                        if ((!before || !task_row_same(before, t)) && (r = store_put_thread(s, p, t, now_usec)) < 0)
                                return r;
                }
        }
        return 0;
}

/* Foreign keys are enforced for the rows written, at the commit (deferred: the order of the
 * writes does not matter), instead of checked over all rows; history is pruned only when filters
 * went to it. */
static int store_replace_diff_steps(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        int r = store_exec(s, "PRAGMA defer_foreign_keys = ON", "defer foreign key checks");
        if (r >= 0)
                r = store_next_generation(s, now_usec);
        if (r >= 0)
                r = store_diff_filters(s, old, new, now_usec);
        if (r >= 0)
                r = store_diff_tasks(s, old, new, now_usec);
        if (r >= 0)
                r = store_reconcile_listeners(s, new);
        if (r >= 0 && s->archived > 0)
                r = store_prune_history(s);
        return r;
}

static int store_replace_diff(Store *s, const Forest *old, const Forest *new, uint64_t now_usec) {
        if (!new->linked)
                return log_error_errno(-EINVAL, "Refusing to store a forest that is not linked.");
        return store_pass_transaction(s, store_replace_diff_steps, old, new, now_usec);
}

int store_write_changes(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec) {
        int r;

        if (c->replaced) {
                /* The first change holds the forest the pass replaced: when the tables hold it
                 * too, its differences are all there is to write. */
                const Forest *old = c->n > 0 && c->changes[0].type == LIVE_REPLACED ? c->changes[0].old_forest : NULL;
                bool mirrors = s->mirrors_live && old;
                s->mirrors_live = false;
                r = mirrors ? store_replace_diff(s, old, live, now_usec) : store_replace_all(s, live, now_usec);
                s->mirrors_live = r >= 0;
                return r;
        }
        if (c->n == 0)
                return 0;
        bool mirrors = s->mirrors_live;
        s->mirrors_live = false; /* until it is committed */
        r = store_begin(s);
        if (r < 0)
                return r;
        r = store_write_batch(s, live, c, now_usec);
        if (r >= 0)
                r = store_commit(s);
        if (r < 0)
                store_rollback(s);
        else
                s->mirrors_live = mirrors;
        return r;
}

/* Reading the live tables back */

static int store_query(Store *s, const char *sql, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v3(s->db, sql, -1, 0, ret, NULL);
        return rc == SQLITE_OK ? 0 : store_error(s, rc, "prepare a query");
}

static const char *column_text(sqlite3_stmt *st, int i) {
        return (const char *) sqlite3_column_text(st, i);
}

static int load_filter(Forest *f, sqlite3_stmt *st) {
        uint8_t digest[PROG_DIGEST_SIZE];
        int n = sqlite3_column_bytes(st, 2);
        size_t len = (size_t) n / PROG_INSN_WIRE_SIZE;
        /* An empty program of a filter with instructions: they were over budget, not kept. */
        bool over_budget = n == 0 && sqlite3_column_int64(st, 8) > 0;
        _cleanup_free_ struct sock_filter *insns = calloc(len + 1, sizeof(struct sock_filter));
        Filter *x;

        if (over_budget)
                len = (size_t) sqlite3_column_int64(st, 8);
        if (!insns)
                return -ENOMEM;
        if (len > PROG_MAX_INSNS || prog_digest_from_string(column_text(st, 7), digest) < 0)
                return -EBADMSG;
        if (!over_budget)
                prog_from_wire(sqlite3_column_blob(st, 2), len, insns);
        int r = forest_add_filter_with_digest(f, (uint64_t) sqlite3_column_int64(st, 0),
                                              (uint64_t) sqlite3_column_int64(st, 1), over_budget ? NULL : insns,
                                              len, digest, &x);
        if (r < 0)
                return r;
        x->over_budget = over_budget;
        x->log = sqlite3_column_int(st, 3);
        x->wait_killable_recv = sqlite3_column_int(st, 4);
        x->has_listener = sqlite3_column_int(st, 5);
        x->identity = identity_kind_from_string(column_text(st, 6));
        return x->identity < 0 ? -EBADMSG : 0;
}

static int load_process(Forest *f, sqlite3_stmt *st) {
        Process *p;
        int r = forest_add_process(f, (pid_t) sqlite3_column_int64(st, 0), &p);
        if (r < 0)
                return r;
        p->ppid = (pid_t) sqlite3_column_int64(st, 1);
        p->start_time = (uint64_t) sqlite3_column_int64(st, 2);
        snprintf(p->comm, sizeof(p->comm), "%s", column_text(st, 3) ?: "");
        p->uid = (uid_t) sqlite3_column_int64(st, 5);
        p->gid = (gid_t) sqlite3_column_int64(st, 6);
        p->no_new_privs = sqlite3_column_int(st, 7);
        return process_set_exe(p, column_text(st, 4));
}

static int load_task(Forest *f, sqlite3_stmt *st) {
        Process *p = forest_find_process(f, (pid_t) sqlite3_column_int64(st, 1));
        Task *t;
        if (!p)
                return -EBADMSG;
        int r = process_append_thread(p, (pid_t) sqlite3_column_int64(st, 0), &t);
        if (r < 0)
                return r;
        t->start_time = (uint64_t) sqlite3_column_int64(st, 2);
        t->mode = task_mode_from_string(column_text(st, 3));
        t->filter_id = (uint64_t) sqlite3_column_int64(st, 4);
        return t->mode < 0 ? -EBADMSG : 0;
}

static int load_listener(Forest *f, sqlite3_stmt *st) {
        Listener *l;
        int r = forest_append_listener(f, (uint64_t) sqlite3_column_int64(st, 0), (uint64_t) sqlite3_column_int64(st, 1), &l);
        if (r < 0)
                return r;
        l->identity = identity_kind_from_string(column_text(st, 2));
        return l->identity < 0 ? -EBADMSG : 0;
}

static int load_holder(Forest *f, sqlite3_stmt *st) {
        Listener *l = forest_find_listener(f, (uint64_t) sqlite3_column_int64(st, 0));
        return l ? listener_append_holder(l, (pid_t) sqlite3_column_int64(st, 1), sqlite3_column_int(st, 2)) : -EBADMSG;
}

static int store_load_rows(Store *s, Forest *f, const char *sql, int (*load)(Forest *f, sqlite3_stmt *st)) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_query(s, sql, &st);
        while (r >= 0 && (r = store_step_row(s, st, "read the live state")) > 0)
                if ((r = load(f, st)) < 0)
                        return log_error_errno(r, "Failed to read the live state of %s: a row is invalid: %m", s->path);
        return r;
}

int store_load_live(Store *s, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        int r;

        if (!f)
                return log_oom();
        r = store_load_rows(s, f, "SELECT id, coalesce(parent, 0), program, log, wait_killable_recv, has_listener, "
                                  "identity, digest, length FROM filters", load_filter);
        if (r >= 0)
                r = store_load_rows(s, f, "SELECT pid, ppid, coalesce(start_time, 0), comm, exe, uid, gid, no_new_privs "
                                          "FROM processes", load_process);
        if (r >= 0)
                r = store_load_rows(s, f, "SELECT tid, tgid, start_time, mode, coalesce(filter, 0) FROM tasks", load_task);
        if (r >= 0)
                r = store_load_rows(s, f, "SELECT id, filter, identity FROM listeners", load_listener);
        if (r >= 0)
                r = store_load_rows(s, f, "SELECT listener, pid, fd FROM listener_holders", load_holder);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

const char *store_path(const Store *s) {
        return s->path;
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

/* For store-snapshot.c */

void store_release_memory(Store *s) {
        (void) sqlite3_db_release_memory(s->db);
}

sqlite3 *store_database(Store *s) {
        return s->db;
}

int store_sqlite_error(Store *s, int rc, const char *what) {
        return store_error(s, rc, what);
}
