/* snapshot-json-read.h: the snapshot JSON format, version 1, read as hostile input */
#pragma once

#include <stdatomic.h>
#include <stddef.h>

#include "core/forest.h"
#include "snapshot/snapshot-format.h"

/* Read a snapshot JSON document of size bytes (hostile input: at most SNAPSHOT_MAX_FILE_SIZE,
 * checked before parsing; duplicate keys and unknown fields are refused), validate it with
 * snapshot_validate() and return it as a linked forest in *ret. Returns 0; -EINVAL when the
 * document is refused, with *error (malloc'ed) naming the field and the element, e.g.
 * "processes[0].threads[2].mode: expected one of disabled, strict, filter"; -ENOMEM. */
int snapshot_json_read(const char *data, size_t size, Forest **ret, char **error);

/* The same through jansson's tree, for every document (snapshot_json_read() takes the documents
 * it can in one pass, snapshot-json-fast.h, and gives the others to this): the reference the
 * fast reader is tested against. */
int snapshot_json_read_tree(const char *data, size_t size, Forest **ret, char **error);

/* What parsing one document may allocate (jansson holds all of it, at up to 80 times the size of
 * the text): SNAPSHOT_MAX_JSON_MEMORY unless set (0 restores it). Beyond, the document is
 * refused with -EINVAL. For all threads; set it before reading. */
void snapshot_json_set_max_memory(size_t bytes);

/* While flag is set on this thread (NULL unsets it), snapshot_json_read() gives up with
 * -ECANCELED soon after *flag becomes true (within a few MiB of the parse): for a worker thread
 * whose transfer is gone. */
void snapshot_json_set_cancel(const atomic_bool *flag);
