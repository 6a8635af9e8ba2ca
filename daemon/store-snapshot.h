/* store-snapshot.h: snapshots in the state database (schema/state-002.sql): written in one
 * transaction, read back as forests, listed, deleted */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "forest.h"
#include "store.h"

/* One row of the snapshots table. */
typedef struct StoredSnapshot {
        uint64_t id;
        char *name; /* NULL = none */
        uint64_t created_usec, stored_usec;
        bool imported;
        uid_t owner_uid, taken_by_uid;
        pid_t root_pid;
        char *backend, *identity, *consistency;
        uint32_t processes, threads, filters, listeners;
        uint64_t instructions;
} StoredSnapshot;

void stored_snapshot_done(StoredSnapshot *s);
void stored_snapshots_free(StoredSnapshot *l, size_t n);

/* What one owner may hold at most (0 = no limit). */
typedef struct StoreSnapshotQuota {
        uint64_t snapshots;
        uint64_t threads;      /* summed over the owner's snapshots */
        uint64_t instructions; /* filter instructions, summed */
} StoreSnapshotQuota;

/* Store a linked forest (with snapshot-local ids: forest_renumber()) as a new snapshot of owner,
 * in one transaction: -EDQUOT (nothing stored) when the owner would then hold more than quota
 * allows (quota may be NULL). *ret_id is the new id, never one used before in this database. */
int store_snapshot_put(Store *s, const Forest *f, uid_t owner, bool imported, const StoreSnapshotQuota *quota,
                       uint64_t now_usec, uint64_t *ret_id);

/* The row of one snapshot; -ENOENT if there is none. */
int store_snapshot_get(Store *s, uint64_t id, StoredSnapshot *ret);
/* Every row, by id. */
int store_snapshot_list(Store *s, StoredSnapshot **ret, size_t *ret_n);
/* The snapshot as a linked forest, as it was stored; -ENOENT if there is none, -EBADMSG if the
 * rows do not make a consistent forest (edited by hand). */
int store_snapshot_load(Store *s, uint64_t id, Forest **ret);
/* Delete a snapshot and all its rows: 1 if it existed, 0 if not. */
int store_snapshot_delete(Store *s, uint64_t id);
