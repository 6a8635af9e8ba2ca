/* snapshots.h: snapshots for bus callers stored in the state database: listed, found and deleted,
 * within each user's quota */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "service/access.h"
#include "service/manager.h"
#include "snapshot/snapshot.h"
#include "store/store-snapshot.h"

/* What a non-root uid may hold (root: no limit). */
#define SNAPSHOTS_MAX_PER_UID 32
#define SNAPSHOTS_MAX_THREADS_PER_UID 1000000            /* threads, summed over its snapshots */
#define SNAPSHOTS_MAX_INSNS_PER_UID (8u * 1024 * 1024)   /* filter instructions summed: 64 MiB of programs */
#define SNAPSHOTS_MAX_BYTES_PER_UID (64ull * 1024 * 1024) /* store_snapshot_bytes() summed */

/* Errors of every call below and of snapshot-transfers.h, besides -ENOMEM and the database's:
 * -ENOENT no such snapshot (or not the caller's: it does not see it), -ESRCH no such process,
 * -EACCES not allowed, -EDQUOT the caller's quota is used up, -EBUSY too many transfers in
 * progress. *ret_message (malloc'ed, may be NULL) says more where there is more to say. */

/* The snapshots the caller may see (root: all; others: their own), by id. */
int manager_snapshot_list(Manager *m, Caller *c, StoredSnapshot **ret, size_t *ret_n);

/* Delete one of the caller's snapshots; sends SnapshotDeleted. */
int manager_snapshot_delete(Manager *m, Caller *c, uint64_t id);

/* The quota of the caller (NULL: none, for root) and the message for -EDQUOT; *ret_message set to
 * a malloc'ed message (ret_message may be NULL; NULL on allocation failure). Returns 0. */
const StoreSnapshotQuota *snapshot_quota_for(const Caller *c);
int snapshot_quota_message(char **ret_message);
int snapshot_set_message(char **ret_message, const char *format, ...) _printf_(2, 3);
/* The row of a snapshot the caller may see; another's is -ENOENT, as one that does not exist. */
int snapshot_find(Manager *m, Caller *c, uint64_t id, StoredSnapshot *ret);
