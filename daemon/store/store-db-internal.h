/* store-db-internal.h: the inside of the state database's connection (store-db.c), for the store's files: the
 * Store object, its prepared statements and the helpers every store file runs them with */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/prog.h"
#include "core/util.h"
#include "core/forest.h"
#include "store/store-db.h"

/* PRAGMA application_id of a state database: 0x53454354, "SECT" in ASCII (decimal for the
 * PRAGMA). */
#define STORE_APPLICATION_ID 1397048148
#define STORE_BUSY_TIMEOUT_MSEC 1000
#define STORE_CACHE_KIB 16384 /* an upper bound: pages are allocated as they are used */

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
        unsigned caller_logs; /* > 0 while an entry point runs whose callers log its failures */
        /* Snapshot rows left unfinished by a writer whose failure (a full disk) also kept their
         * deletion from going through: deleted before the next writer checks its owner's quota. */
        uint64_t *unfinished;
        size_t n_unfinished, n_unfinished_allocated;
};

/* The store's own failures are logged at their level, except while an entry point runs whose every
 * caller logs its failure (store_write_changes(), store_load_live()): then at debug level, so that
 * each failure is logged once, where it is handled, and its precise cause stays in the debug log. */
static inline LogLevel store_log_level(const Store *s, LogLevel level) {
        return s->caller_logs > 0 ? LOG_LEVEL_DEBUG : level;
}
#define store_log_errno(s, level, e, ...) log_internal(store_log_level((s), (level)), (e), __VA_ARGS__)

/* Log a failed SQLite call with its message and return it as a negative errno. Constraint
 * violations are the caller's data, not the database's fault: they are warnings, and a missing
 * referent (which the callers name) only a debug message. */
int store_error(Store *s, int rc, const char *what);
/* Every statement of the table prepared, kept for the connection's life. */
int store_prepare(Store *s);
void store_finalize(Store *s);
sqlite3_stmt *store_statement(Store *s, StoreStatement i);
/* Run a prepared statement that returns no row and reset it. */
int store_run(Store *s, sqlite3_stmt *st, const char *what);
/* Step a prepared statement expected to return a row: returns 1 with one (the caller reads its
 * columns, then resets it), 0 without (reset already). */
int store_step_row(Store *s, sqlite3_stmt *st, const char *what);
int store_run_plain(Store *s, StoreStatement i, const char *what);
int store_run_by_id(Store *s, StoreStatement which, int64_t id, const char *what);
/* SQL of no prepared statement (migrations, transactions of their own). */
int store_exec(Store *s, const char *sql, const char *what);
int store_enforce_foreign_keys(Store *s, bool enforce);
/* A savepoint makes a multi-statement change atomic whether or not a batch is open. */
int store_atomically(Store *s, int (*fn)(Store *s, const void *arg), const void *arg);
