/* snapshot-sqlite.h: the SQLite snapshot file written, format version 1 (schema/snapshot-v1-sqlite.sql) */
#pragma once

#include <stddef.h>

#include "core/forest.h"
#include "snapshot/snapshot-format.h"
#include "snapshot/snapshot-sqlite-format.h"
#include "snapshot/snapshot-text.h"

/* Write a linked forest as a fresh, standalone snapshot file at path. The database is built in
 * memory and copied with VACUUM INTO into a new file next to path, which is synced and then
 * renamed over path: no partially written file is ever visible under that name. The file gets
 * 0666 & ~umask. Ids are written as they are (see snapshot_json_write()); strings as
 * snapshot_utf8_sanitize() makes them. */
int snapshot_sqlite_write(const Forest *f, const char *path);

/* The same file as bytes (malloc'ed, *ret_size long), e.g. to write into a caller's fd. */
int snapshot_sqlite_format(const Forest *f, void **ret, size_t *ret_size);
