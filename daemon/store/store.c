/* store.c: the state database (SQLite) opened: connected, checked, put in WAL mode, migrated, its
 * statements prepared. The live tables are kept equal to the daemon's view of the kernel with
 * prepared statements only (store-rows.c, store-write.c).
 *
 * Errors of every store file: negative errno, logged where they arise with SQLite's message. Besides the obvious ones:
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

#include "store/state-dir.h"
#include "store/store-db-internal.h"
#include "store/store-migrate.h"
#include "store/store-read.h"
#include "store/store.h"

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

/* Connection settings that need no transaction: WAL (readers never block the daemon);
 * synchronous=NORMAL, which in WAL mode keeps the file consistent across crashes and skips an
 * fsync per commit (the next start reconciles anyway); a page cache that holds a machine's
 * state (the default 2 MiB makes a full reconciliation re-read pages) and in-memory temporary
 * structures. The cache is bounded at 16 MiB: under sustained churn the database grows with its
 * history (about 60 MB after 5 minutes at 500 filters/s) and a cache of 32 MiB filled with it,
 * taking the daemon past 64 MiB resident (sectree-bench --only=memory --long). It does not spill
 * dirty pages into the log in the middle of a transaction: a full pass larger than the cache
 * would otherwise write its pages to the log again and again (a log of 200 MiB with 8 MiB). */
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
                          "; PRAGMA temp_store = MEMORY; PRAGMA cache_spill = false", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "set the connection's pragmas");
        return 0;
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
        /* SQLite opens the database without following a symlink anywhere in its path
         * (SQLITE_OPEN_NOFOLLOW): the directory by its real path, which may be reached through
         * one (a symlinked /var/lib/sectree is the administrator's to make; the database file and
         * its companions themselves may not be symlinks, state_dir_secure() checked). */
        _cleanup_free_ char *real = realpath(state_dir, NULL);
        if (!real)
                return log_error_errno(-errno, "Failed to resolve the state directory %s: %m", state_dir);
        if (asprintf(&s->path, "%s/%s", real, STORE_FILE_NAME) < 0) {
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
        store_finalize(s);
        if (s->db) {
                if (!sqlite3_get_autocommit(s->db))
                        (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
                int rc = sqlite3_close(s->db);
                if (rc != SQLITE_OK)
                        (void) store_error(s, rc, "close the database");
        }
        free(s->path);
        free(s->unfinished);
        free(s);
        return NULL;
}
