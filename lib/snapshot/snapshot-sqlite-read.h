/* snapshot-sqlite-read.h: the SQLite snapshot file read, as hostile input */
#pragma once

#include <stddef.h>

#include "core/forest.h"
#include "snapshot/snapshot-format.h"
#include "snapshot/snapshot-sqlite-format.h"

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
