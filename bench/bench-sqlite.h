/* bench-sqlite.h: SQLite outside the store, for the store figure and its floor: opening a
 * database, one-value queries, the size after a checkpoint */
#pragma once

#include <sqlite3.h>
#include <stdint.h>

#include "core/util.h"

/* Log SQLite's message for a failed call; returns -EIO. */
int bench_sqlite_fail(sqlite3 *db, int rc, const char *what);
/* Open (creating) the database at path, read-write. */
int bench_sqlite_open(const char *path, sqlite3 **ret);
/* The first column of the first row of sql. */
int bench_sqlite_query_int(sqlite3 *db, const char *sql, int64_t *ret);
/* page_count * page_size after a checkpoint that empties the WAL into the file. */
int bench_sqlite_size_after_checkpoint(sqlite3 *db, uint64_t *ret);
/* Run one statement that returns no row and reset it. */
int bench_sqlite_step(sqlite3 *db, sqlite3_stmt *st, const char *what);

static inline void bench_sqlite_closep(sqlite3 **db) {
        if (*db)
                sqlite3_close_v2(*db);
}

static inline void bench_sqlite_finalizep(sqlite3_stmt **st) {
        if (*st)
                sqlite3_finalize(*st);
}
