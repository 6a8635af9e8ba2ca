/* plan-like.h: a snapshot cut down to one thread and its chain, for sectreectl run --like */
#pragma once

#include <sys/types.h>

#include "core/forest.h"

/* Cut a snapshot down to thread tid alone, for a restore that runs a command under a copy of
 * exactly its chain (sectreectl run --like): its process keeps only that thread (which becomes
 * the leader, so that it can exec, and whose no_new_privs becomes the process's) and becomes a
 * top process; every other process goes, and every filter and listener not on that chain (the
 * chain's listeners stay, held only by that process if it held them). -EINVAL with *error when
 * tid is not in the snapshot or runs no filter. The forest is linked afterwards. */
int plan_snapshot_keep_task(Forest *f, pid_t tid, char **error);
