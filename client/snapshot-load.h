/* snapshot-load.h: the snapshots the client reads with lib/, from a file or from the daemon */
/* A file (or stdin), or a stored snapshot fetched from the daemon with ExportSnapshot. */
#pragma once

#include "context.h"
#include "core/forest.h"
#include "snapshot/snapshot.h"

/* What was read, for show --file and validate. */
typedef struct SnapshotFileInfo {
        SnapshotFormat format;
        size_t size; /* bytes */
} SnapshotFileInfo;

/* Read and validate a snapshot file; path "-" is stdin. Logs nothing. Returns 0; -EINVAL when
 * the snapshot is refused, with *ret_error (malloc'ed) naming the field and the element; another
 * negative errno when the file cannot be read (*ret_error NULL). */
int snapshot_file_read(const char *path, Forest **ret, SnapshotFileInfo *ret_info, char **ret_error);

/* The same, logging a failure on one line: "Invalid snapshot PATH: <why>" or "Failed to read PATH: <errno>". */
int snapshot_file_load(const char *path, Forest **ret, SnapshotFileInfo *ret_info);

/* Fetch stored snapshot id from the daemon (ExportSnapshot into a memfd) and read it. Logs. */
int snapshot_fetch(sd_bus *bus, uint64_t id, Forest **ret);

/* A diff operand: an argument of only digits that names no existing file is a snapshot id (the
 * daemon is asked), anything else a file ("-" stdin). Logs. */
int snapshot_load_operand(Context *c, const char *arg, Forest **ret);
