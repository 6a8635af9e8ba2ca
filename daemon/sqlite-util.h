/* sqlite-util.h: binding helpers shared by the state database's code (store.c, store-snapshot.c) */
#pragma once

#include <sqlite3.h>
#include <stdint.h>

/* Ids, counts and times are stored as SQLite's signed 64-bit integers. */
static inline void bind_u64(sqlite3_stmt *st, int i, uint64_t v) {
        sqlite3_bind_int64(st, i, (sqlite3_int64) v);
}

/* Id 0 means none: NULL. */
static inline void bind_id_or_null(sqlite3_stmt *st, int i, uint64_t v) {
        if (v == 0)
                sqlite3_bind_null(st, i);
        else
                bind_u64(st, i, v);
}

/* The text must outlive the statement's next step (SQLITE_STATIC). */
static inline void bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
        if (v)
                sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
        else
                sqlite3_bind_null(st, i);
}
