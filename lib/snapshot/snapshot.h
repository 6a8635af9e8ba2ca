/* snapshot.h: snapshot files of either format: detection, reading any file, writing into an fd */
#pragma once

#include <stddef.h>

#include "core/forest.h"
#include "snapshot/snapshot-fd.h"
#include "snapshot/snapshot-format.h"
#include "snapshot/snapshot-text.h"

/* Which format the bytes are in: SQLite when they start with the SQLite magic
 * "SQLite format 3\0", JSON otherwise (the JSON reader then says what is wrong). */
SnapshotFormat snapshot_detect_format(const void *data, size_t size);

/* Read a snapshot of either format from memory, from an fd (a pipe is fine: it is read to the
 * end, at most SNAPSHOT_MAX_FILE_SIZE bytes) or from a path. The result is validated
 * (snapshot_validate()) and linked. Returns 0; -EINVAL when the snapshot is refused, with
 * *error (malloc'ed) naming the field and the element; another negative errno on I/O or
 * allocation failure (*error may then be set too). */
int snapshot_read_data(const void *data, size_t size, Forest **ret, char **error);
int snapshot_read_any(int fd, Forest **ret, char **error);
int snapshot_read_path(const char *path, Forest **ret, char **error);

/* Write a linked forest in the given format into fd (at its current position), e.g. the fd a
 * D-Bus caller passed. */
int snapshot_write_fd(const Forest *f, SnapshotFormat format, int fd);
