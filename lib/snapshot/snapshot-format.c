/* snapshot-format.c: the names of the snapshot formats */
#include "snapshot/snapshot-format.h"

static const char *const snapshot_format_table[_SNAPSHOT_FORMAT_MAX] = {
        [SNAPSHOT_FORMAT_JSON] = "json",
        [SNAPSHOT_FORMAT_SQLITE] = "sqlite",
};
DEFINE_STRING_TABLE_LOOKUP(snapshot_format, SnapshotFormat, _SNAPSHOT_FORMAT_MAX);
