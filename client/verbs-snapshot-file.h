/* verbs-snapshot-file.h: what the offline verbs share with show: a snapshot file's metadata */
#pragma once

#include "ctl.h"

/* `show --file F` without a filter: the snapshot's metadata. */
int show_snapshot_file(Context *c);
