/* snapshot-sqlite.h: the SQLite snapshot file, format version 1 (schema/snapshot-v1-sqlite.sql) */
#pragma once

#include <stddef.h>

#include "core/forest.h"
#include "snapshot/snapshot.h"

#define SNAPSHOT_SQLITE_MAGIC "SQLite format 3"   /* the first 16 bytes of every SQLite file, NUL included */
#define SNAPSHOT_SQLITE_APPLICATION_ID 0x53454353 /* "SECS"; the state database is 0x53454354 "SECT" */

/* Threads whose own no_new_privs differs from their process's: only then does the file's threads
 * table get this last column (NULL: the process's; 0 or 1), so that every other snapshot stays
 * exactly schema/snapshot-v1-sqlite.sql. */
#define SNAPSHOT_SQLITE_ADD_THREAD_NNP "ALTER TABLE threads ADD COLUMN no_new_privs INTEGER"
#define SNAPSHOT_SQLITE_THREAD_NNP_COLUMN "no_new_privs INTEGER"
/* Likewise processes' last two columns, only when some process records a leader that exited while
 * its threads live on (processes[].exited_leader: NULL, NULL for none). */
#define SNAPSHOT_SQLITE_ADD_EXITED_LEADER                                                        \
        "ALTER TABLE processes ADD COLUMN exited_leader_mode TEXT; "                             \
        "ALTER TABLE processes ADD COLUMN exited_leader_filters INTEGER"
#define SNAPSHOT_SQLITE_EXITED_LEADER_COLUMNS { "exited_leader_mode TEXT", "exited_leader_filters INTEGER" }

/* Write a linked forest as a fresh, standalone snapshot file at path. The database is built in
 * memory and copied with VACUUM INTO into a new file next to path, which is synced and then
 * renamed over path: no partially written file is ever visible under that name. The file gets
 * 0666 & ~umask. Ids are written as they are (see snapshot_json_write()); strings as
 * snapshot_utf8_sanitize() makes them. */
int snapshot_sqlite_write(const Forest *f, const char *path);

/* The same file as bytes (malloc'ed, *ret_size long), e.g. to write into a caller's fd. */
int snapshot_sqlite_format(const Forest *f, void **ret, size_t *ret_size);

/* Read a snapshot file, treating it as hostile. The bytes are checked before SQLite sees them
 * (size at most SNAPSHOT_MAX_FILE_SIZE, whole pages, the header's page count, UTF-8, not WAL,
 * application_id SNAPSHOT_SQLITE_APPLICATION_ID, user_version = the format version), then
 * opened read-only in memory (no file locks, no journal, nothing the file's owner can change
 * under the reader) with SQLITE_DBCONFIG_DEFENSIVE, trusted_schema off, extension loading,
 * triggers and views off, cell_size_check on and tight sqlite3_limit()s; PRAGMA quick_check
 * runs first, then the schema must hold exactly the tables, columns and indexes of
 * schema/snapshot-v1-sqlite.sql before any of them is queried; row counts are checked against
 * the limits, every value's type and range as it is read, and the result goes through
 * snapshot_validate(). Returns 0 with a linked forest in *ret; -EINVAL when the file is
 * refused, with *error (malloc'ed) saying why ("filters[3].length: expected an integer, got
 * text"); another negative errno on I/O or allocation failure. */
int snapshot_sqlite_read_data(const void *data, size_t size, Forest **ret, char **error);
int snapshot_sqlite_read(const char *path, Forest **ret, char **error);
