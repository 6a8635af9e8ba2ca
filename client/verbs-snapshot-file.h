/* verbs-snapshot-file.h: what the offline verbs share with show: a snapshot file's metadata */
#pragma once

#include "context.h"

/* `show --file F` without a filter: the snapshot's metadata. */
int show_snapshot_file(Context *c);

int verb_validate(Context *c, char **args, size_t n_args);
int verb_diff(Context *c, char **args, size_t n_args);
