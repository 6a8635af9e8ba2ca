/* store-write.h: a full pass and a live batch written to the state database (store-write.c) */
#pragma once

#include <stdint.h>

#include "core/forest.h"
#include "core/live.h"

typedef struct Store Store;

/* Make the live tables equal to the forest (a full scan), in one transaction: rows not in the
 * forest are deleted (filters move to history with gone_usec = now), rows in it are inserted or
 * updated (first_seen kept, last_seen = now). Used at start (a stale file is reconciled, never
 * trusted) and after a resync. The forest must be linked; ids are taken as they are. */
int store_replace_all(Store *s, const Forest *f, uint64_t now_usec);

/* history keeps the filters that are gone, newest first, up to a limit: every full pass
 * (store_replace_all) drops the oldest rows beyond it. Ids stay unused after their rows go. */
#define STORE_HISTORY_LIMIT_DEFAULT 50000U /* about 30 MB at ~600 bytes per row */
/* History is pruned by the batch that brings the filters moved to it since the last prune to
 * STORE_PRUNE_SLICE, and by every full pass that moved some; one prune deletes at most
 * STORE_PRUNE_MAX_ROWS rows. */
#define STORE_PRUNE_SLICE 256U
#define STORE_PRUNE_MAX_ROWS (4 * STORE_PRUNE_SLICE)
void store_set_history_limit(Store *s, uint64_t rows);

/* Store what a live batch changed (lib/core/live.h), in one transaction: the filters attached, the
 * rows of the threads and processes it touched as live (the live forest after the batch) has them
 * now, the threads gone, the filters retired. A full pass (c->replaced) is store_replace_all() of
 * live. Nothing is written when it fails. Its failures are logged at debug level only: the caller
 * logs them, once. */
int store_write_changes(Store *s, const Forest *live, const LiveChanges *c, uint64_t now_usec);
