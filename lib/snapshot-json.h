/* snapshot-json.h: the snapshot JSON format, version 1 (see schema/snapshot-v1.md) */
#pragma once

#include <stdio.h>

#include "forest.h"

#define SNAPSHOT_FORMAT_NAME "sectree-snapshot"
#define SNAPSHOT_FORMAT_VERSION 1

typedef enum SnapshotJsonFlags {
        SNAPSHOT_JSON_PRETTY = 1 << 0,
} SnapshotJsonFlags;

/* Write a linked forest as snapshot JSON. Ids are written as they are: call forest_renumber()
 * first to make them snapshot-local. Returns 0 or negative errno. */
int snapshot_json_write(const Forest *f, FILE *out, SnapshotJsonFlags flags);

/* The same document as a malloc'ed string. */
int snapshot_json_format(const Forest *f, SnapshotJsonFlags flags, char **ret);
