/* store-checkpoint.c: see store-checkpoint.h
 *
 * With SQLite's automatic checkpoint, the commit that fills the log past its threshold copies it
 * into the database and syncs both files before it returns: on the event loop, the events that
 * arrive meanwhile wait for it (10-15 ms on the project's machines). Here the store's connection
 * only says after each commit how long the log is; past STORE_CHECKPOINT_PAGES a thread makes a
 * PASSIVE checkpoint on its own connection, which never takes the write lock: commits go on while
 * it runs. Once a checkpoint has copied all of the log, the thread starts the log again from its
 * start (checkpoint_restart()). */
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "core/sqlite-util.h"
#include "store/store-checkpoint.h"
#include "store/store-db.h"

struct StoreCheckpointer {
        Store *store;
        sqlite3 *db;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool wanted, stop, running; /* under lock, but running (the thread exists) */
        bool failing;               /* the thread's: the last checkpoint failed (logged once) */
        uint64_t pages_copied;      /* under lock */
};

/* One PASSIVE checkpoint: whether it copied the whole log (*ret_complete), -1 when it failed. */
static int checkpoint_round(StoreCheckpointer *c, bool *ret_complete, int *ret_copied) {
        int log_pages = 0, copied = 0;
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
                if (!c->failing)
                        log_warning("Checkpoint of %s failed, the log grows until one succeeds: %s",
                                    store_path(c->store), sqlite3_errmsg(c->db));
                c->failing = true;
                return -1;
        }
        c->failing = false;
        log_debug("Checkpoint: %d of %d log pages copied in %" PRIu64 " us.", copied, log_pages,
                  now_usec(CLOCK_MONOTONIC) - start);
        *ret_complete = rc == SQLITE_OK && copied >= log_pages;
        *ret_copied = copied;
        return 0;
}

/* Once all of the log is in the database, start it again from its start: a RESTART checkpoint,
 * which takes the write lock only to reset the log's header (nothing is left to copy; a commit
 * that came meanwhile adds a few pages), so that commits overwrite the file from its start
 * instead of growing it. A file larger than WAL_CUT_BYTES (after a large transaction: commits made
 * during a checkpoint take it only a little past STORE_WAL_LIMIT_BYTES) is cut back to nothing
 * with a TRUNCATE checkpoint instead, which holds the lock for the truncation
 * (7-10 ms here). The store's connection waits for either with its busy timeout; this connection
 * has none: while a commit holds the lock, it tries again a little later, RESTART_TRIES times. */
#define RESTART_TRIES 20
#define RESTART_RETRY_USEC 500
#define WAL_CUT_BYTES (STORE_WAL_LIMIT_BYTES * 3 / 2)
static bool wal_file_large(StoreCheckpointer *c) {
        _cleanup_free_ char *wal = NULL;
        struct stat st;
        if (asprintf(&wal, "%s-wal", store_path(c->store)) < 0)
                return false;
        return stat(wal, &st) >= 0 && (uint64_t) st.st_size > WAL_CUT_BYTES;
}

static void checkpoint_restart(StoreCheckpointer *c) {
        int mode = wal_file_large(c) ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_RESTART;
        for (unsigned i = 0; i < RESTART_TRIES; i++) {
                int log_pages = 0, copied = 0;
                int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, mode, &log_pages, &copied);
                if (rc == SQLITE_OK) {
                        log_debug("Checkpoint: the log started again (%d pages copied last).", copied);
                        return;
                }
                if (rc != SQLITE_BUSY)
                        return;
                (void) usleep(RESTART_RETRY_USEC);
        }
}

/* A commit can start the log again too, the first after a checkpoint that copied all of it. Commits go on while one runs, so that under steady commits a single checkpoint is never
 * complete, and the log would grow with every commit: round after round copies what came during
 * the one before (less each time), until one finds nothing new (or CHECKPOINT_ROUNDS, or a round
 * that cannot copy more: a reader holds the rest). */
#define CHECKPOINT_ROUNDS 32
static void checkpoint_once(StoreCheckpointer *c) {
        bool complete = false;
        int copied = 0, before = -1;
        for (unsigned i = 0; i < CHECKPOINT_ROUNDS && !complete && copied != before; i++) {
                before = copied;
                if (checkpoint_round(c, &complete, &copied) < 0)
                        return;
        }
        (void) pthread_mutex_lock(&c->lock);
        c->pages_copied += copied > 0 ? (uint64_t) copied : 0;
        (void) pthread_mutex_unlock(&c->lock);
        if (complete)
                checkpoint_restart(c);
}

uint64_t store_checkpointer_pages_copied(StoreCheckpointer *c) {
        (void) pthread_mutex_lock(&c->lock);
        uint64_t n = c->pages_copied;
        (void) pthread_mutex_unlock(&c->lock);
        return n;
}

/* Returns false when asked to stop. */
static bool checkpointer_wait(StoreCheckpointer *c) {
        (void) pthread_mutex_lock(&c->lock);
        while (!c->wanted && !c->stop)
                (void) pthread_cond_wait(&c->wake, &c->lock);
        bool go = !c->stop;
        c->wanted = false;
        (void) pthread_mutex_unlock(&c->lock);
        return go;
}

static void *checkpointer_thread(void *userdata) {
        StoreCheckpointer *c = userdata;
        while (checkpointer_wait(c))
                checkpoint_once(c);
        return NULL;
}

/* After every commit of the store's connection, on the loop: only a signal to the thread. */
static void on_commit(void *userdata, unsigned log_pages) {
        StoreCheckpointer *c = userdata;
        if (log_pages < STORE_CHECKPOINT_PAGES)
                return;
        (void) pthread_mutex_lock(&c->lock);
        c->wanted = true;
        (void) pthread_cond_signal(&c->wake);
        (void) pthread_mutex_unlock(&c->lock);
}

static int checkpointer_connect(StoreCheckpointer *c) {
        int rc = sqlite3_open_v2(store_path(c->store), &c->db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(c->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                return 0;
        if (!c->db)
                return log_oom();
        return log_error_errno(sqlite_errno(c->db, rc) ?: -EIO, "Failed to open %s for its checkpoints: %s",
                               store_path(c->store), sqlite3_errmsg(c->db));
}

/* With every signal blocked: the thread may start before the daemon blocks SIGTERM to read it from
 * the loop, and a signal the thread took would get its default action. */
static int checkpointer_start_thread(StoreCheckpointer *c) {
        sigset_t all, old;
        (void) sigfillset(&all);
        int r = -pthread_sigmask(SIG_SETMASK, &all, &old);
        if (r < 0)
                return r;
        r = -pthread_create(&c->thread, NULL, checkpointer_thread, c);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}

int store_checkpointer_new(Store *s, StoreCheckpointer **ret) {
        _cleanup_(store_checkpointer_freep) StoreCheckpointer *c = calloc(1, sizeof(StoreCheckpointer));
        if (!c)
                return log_oom();
        c->store = s;
        (void) pthread_mutex_init(&c->lock, NULL);
        (void) pthread_cond_init(&c->wake, NULL);
        int r = checkpointer_connect(c);
        if (r < 0)
                return r;
        /* The store's connection restarts the log after a complete checkpoint, and cuts the file
         * back then. */
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %" PRIu64, STORE_WAL_LIMIT_BYTES);
        int rc = sqlite3_exec(store_database(s), sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                log_debug("Could not limit the log of %s: %s", store_path(s), sqlite3_errmsg(store_database(s)));
        r = checkpointer_start_thread(c);
        if (r < 0)
                return log_error_errno(r, "Failed to start the checkpoint thread: %m");
        c->running = true;
        store_set_commit_hook(s, on_commit, c);
        *ret = TAKE_PTR(c);
        return 0;
}

StoreCheckpointer *store_checkpointer_free(StoreCheckpointer *c) {
        if (!c)
                return NULL;
        if (c->running) {
                store_set_commit_hook(c->store, NULL, NULL);
                (void) pthread_mutex_lock(&c->lock);
                c->stop = true;
                (void) pthread_cond_signal(&c->wake);
                (void) pthread_mutex_unlock(&c->lock);
                (void) pthread_join(c->thread, NULL);
        }
        sqlite3_close(c->db);
        (void) pthread_cond_destroy(&c->wake);
        (void) pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}
