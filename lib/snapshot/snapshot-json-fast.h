/* snapshot-json-fast.h: the snapshot JSON format read in one pass over the text, without a JSON
 * tree, for the documents it can take; snapshot_json_read() leaves the others to jansson */
#pragma once

#include <stdatomic.h>
#include <stddef.h>

#include "core/forest.h"

/* Not read here: the caller reads the document with jansson (snapshot_json_read_tree()). */
#define SNAPSHOT_JSON_FAST_OTHER 1

/* How much more than its text a document may make jansson allocate while it is still taken here:
 * a document the fast reader takes makes jansson allocate at most ~25 times its size (the
 * program's integers and their arrays, the smallest values a snapshot holds), so below
 * max_memory / SNAPSHOT_JSON_FAST_MAX_GROWTH it is one jansson's budget would have taken. */
#define SNAPSHOT_JSON_FAST_MAX_GROWTH 32

/* Read a snapshot JSON document of size bytes in one pass. Returns 0 with the validated, linked
 * forest in *ret: the forest snapshot_json_read_tree() makes of the same document. Returns
 * SNAPSHOT_JSON_FAST_OTHER for everything it does not take: anything jansson's reader refuses
 * (whose message that reader gives) and what it leaves to it for simplicity (keys in another
 * order than "version" before "processes", numbers with a fraction or an exponent). -ECANCELED once *cancel (when not NULL) is true, -ENOMEM. */
int snapshot_json_read_fast(const char *data, size_t size, const atomic_bool *cancel, Forest **ret);
