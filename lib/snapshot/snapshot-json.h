/* snapshot-json.h: the snapshot JSON format, version 1 (see schema/snapshot-v1.md) */
#pragma once

#include <stdatomic.h>
#include <stdio.h>

#include "core/forest.h"
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

/* Read a snapshot JSON document of size bytes (hostile input: at most SNAPSHOT_MAX_FILE_SIZE,
 * checked before parsing; duplicate keys and unknown fields are refused), validate it with
 * snapshot_validate() and return it as a linked forest in *ret. Returns 0; -EINVAL when the
 * document is refused, with *error (malloc'ed) naming the field and the element, e.g.
 * "processes[0].threads[2].mode: expected one of disabled, strict, filter"; -ENOMEM. */
int snapshot_json_read(const char *data, size_t size, Forest **ret, char **error);

/* What parsing one document may allocate (jansson holds all of it, at up to 80 times the size of
 * the text): SNAPSHOT_MAX_JSON_MEMORY unless set (0 restores it). Beyond, the document is
 * refused with -EINVAL. For all threads; set it before reading. */
void snapshot_json_set_max_memory(size_t bytes);

/* While flag is set on this thread (NULL unsets it), snapshot_json_read() gives up with
 * -ECANCELED soon after *flag becomes true (within a few MiB of the parse): for a worker thread
 * whose transfer is gone. */
void snapshot_json_set_cancel(const atomic_bool *flag);
