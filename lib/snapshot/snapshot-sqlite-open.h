/* snapshot-sqlite-open.h: a hostile SQLite snapshot file opened and checked before any table is
 * read */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct SnapshotSqliteOptional {
        bool thread_nnp;    /* threads.no_new_privs */
        bool exited_leader; /* processes.exited_leader_mode, exited_leader_filters */
        unsigned version;   /* the header's user_version: 1, or 2 with the units table */
} SnapshotSqliteOptional;

/* Check the bytes (size, whole pages, the header's page count, UTF-8, not WAL, application_id,
 * user_version), open them read-only in memory with the hardening snapshot_sqlite_read_data()
 * describes, run quick_check and compare the schema with ours: *ret_db is set once opened (the
 * caller closes it, also on failure), *ret_optional says which optional last columns the file has.
 * -EINVAL with *error when the file is refused. */
int snapshot_sqlite_open(const void *data, size_t size, sqlite3 **ret_db, SnapshotSqliteOptional *ret_optional,
                         char **error);

/* SQLite failed on the file: -ENOMEM as it is, anything else refused (-EINVAL) with SQLite's words. */
int snapshot_sqlite_error(sqlite3 *db, int rc, char **error, const char *what);
