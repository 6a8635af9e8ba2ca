/* sqlite-util.h: what every SQLite user of sectree shares (the state database, the snapshot files):
 * result codes as negative errno, binding helpers, cleanup */
#pragma once

#include <sqlite3.h>
#include <stdint.h>

/* A SQLite result code (extended or not) as a negative errno; 0 for SQLITE_OK, _ROW and _DONE.
 * db, when not NULL, gives the system errno behind an I/O or open failure. */
int sqlite_errno(sqlite3 *db, int rc);

static inline void sqlite3_finalizep(sqlite3_stmt **st) {
        if (*st)
                sqlite3_finalize(*st);
}

/* Ids, counts and times are stored as SQLite's signed 64-bit integers. The binders return SQLite's
 * result code. */
static inline int bind_u64(sqlite3_stmt *st, int i, uint64_t v) {
        return sqlite3_bind_int64(st, i, (sqlite3_int64) v);
}

/* Id 0 means none: NULL. */
static inline int bind_id_or_null(sqlite3_stmt *st, int i, uint64_t v) {
        return v == 0 ? sqlite3_bind_null(st, i) : bind_u64(st, i, v);
}

/* The text must outlive the statement's next step (SQLITE_STATIC). */
static inline int bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
        return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}
