/* bench-sqlite.c: the SQLite helpers of the store figure */
#include "bench-sqlite.h"

int bench_sqlite_fail(sqlite3 *db, int rc, const char *what) {
        return log_error_errno(-EIO, "Failed to %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

int bench_sqlite_open(const char *path, sqlite3 **ret) {
        int rc = sqlite3_open_v2(path, ret, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        if (rc != SQLITE_OK)
                return bench_sqlite_fail(*ret, rc, "open a benchmark database");
        return 0;
}

int bench_sqlite_query_int(sqlite3 *db, const char *sql, int64_t *ret) {
        _cleanup_(bench_sqlite_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

        if (rc != SQLITE_OK)
                return bench_sqlite_fail(db, rc, "prepare a query");
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return bench_sqlite_fail(db, rc, "run a query");
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

int bench_sqlite_size_after_checkpoint(sqlite3 *db, uint64_t *ret) {
        int64_t pages, page_size;
        int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);

        if (rc != SQLITE_OK)
                return bench_sqlite_fail(db, rc, "checkpoint");
        if (bench_sqlite_query_int(db, "PRAGMA page_count", &pages) < 0 ||
            bench_sqlite_query_int(db, "PRAGMA page_size", &page_size) < 0)
                return -EIO;
        *ret = (uint64_t) (pages * page_size);
        return 0;
}

int bench_sqlite_step(sqlite3 *db, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : bench_sqlite_fail(db, rc, what);
}
