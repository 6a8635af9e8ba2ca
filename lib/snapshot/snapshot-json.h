/* snapshot-json.h: the snapshot JSON format, version 1 (see schema/snapshot-v1.md): the writer, and
 * the reader's header for the callers that use both */
#pragma once

#include <stdio.h>

#include "core/forest.h"
#include "snapshot/snapshot-json-read.h"
#include "snapshot/snapshot-format.h"
#include "snapshot/snapshot-text.h"

typedef enum SnapshotJsonFlags {
        SNAPSHOT_JSON_PRETTY = 1 << 0,
} SnapshotJsonFlags;

/* Write a linked forest as snapshot JSON. Ids are written as they are: call forest_renumber()
 * first to make them snapshot-local. Strings that are not UTF-8 (comm, exe and argv are any
 * bytes the kernel reported) are written with U+FFFD for every invalid byte. Returns 0 or
 * negative errno. */
int snapshot_json_write(const Forest *f, FILE *out, SnapshotJsonFlags flags);

/* The same document as a malloc'ed string. */
int snapshot_json_format(const Forest *f, SnapshotJsonFlags flags, char **ret);
/* The same with its length; the buffer has room for one byte more (a final newline) before the
 * NUL. */
int snapshot_json_format_buffer(const Forest *f, SnapshotJsonFlags flags, char **ret, size_t *ret_size);
