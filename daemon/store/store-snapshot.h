/* store-snapshot.h: snapshots in the state database (schema/state-002.sql): written in one
 * transaction, read back as forests, listed, deleted */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"
#include "store/store.h"

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
        uint64_t bytes;        /* store_snapshot_bytes(), summed */
} StoreSnapshotQuota;

/* What a snapshot counts for in its owner's budget, about what its rows take in the database:
 * 8 bytes per filter instruction, the bytes of its strings (names, paths, command lines as JSON),
 * and 128 per row (ids, digests, flags, the indexes). schema/state-004.sql counts the same. */
uint64_t store_snapshot_bytes(const Forest *f);

/* Store a linked forest (with snapshot-local ids: forest_renumber()) as a new snapshot of owner:
 * -EDQUOT (nothing stored) when the owner would then hold more than quota allows (quota may be
 * NULL). *ret_id is the new id, never one used before in this database. All at once: the
 * store_snapshot_writer_*() calls below in a row. */
int store_snapshot_put(Store *s, const Forest *f, uid_t owner, bool imported, const StoreSnapshotQuota *quota,
                       uint64_t now_usec, uint64_t *ret_id);

/* A snapshot written in steps, one transaction each, so that storing a large one never holds the
 * caller (the event loop) for long. Until it is finished, its row is
 * there (it counts for its owner's quota) but marked incomplete: no call lists, reads, exports or
 * deletes it, and store_snapshot_discard_incomplete() removes what a stopped daemon left.
 *
 * _new() checks the quota and writes the snapshot's row (-EDQUOT: nothing written); f must stay
 * unchanged until the writer is freed. _step() writes up to max_rows more rows: 1 when all are
 * written, 0 when there is more. _finish() makes it complete. _free() of a writer that did not
 * finish deletes what it wrote. */
typedef struct StoreSnapshotWriter StoreSnapshotWriter;
int store_snapshot_writer_new(Store *s, const Forest *f, uid_t owner, bool imported, const StoreSnapshotQuota *quota,
                              uint64_t now_usec, StoreSnapshotWriter **ret);
int store_snapshot_writer_step(StoreSnapshotWriter *w, size_t max_rows);
/* The same with as many rows as fit before CLOCK_MONOTONIC reaches until_usec (at least one, and
 * the clock is looked at every few rows): one commit per step, however many rows it wrote. */
int store_snapshot_writer_step_until(StoreSnapshotWriter *w, uint64_t until_usec);
int store_snapshot_writer_finish(StoreSnapshotWriter *w, uint64_t *ret_id);
StoreSnapshotWriter *store_snapshot_writer_free(StoreSnapshotWriter *w);
DEFINE_CLEANUP(StoreSnapshotWriter *, store_snapshot_writer_free);
/* Delete every incomplete snapshot (at start: their writers died with the previous daemon). */
int store_snapshot_discard_incomplete(Store *s);

/* The row of one snapshot; -ENOENT if there is none. */
int store_snapshot_get(Store *s, uint64_t id, StoredSnapshot *ret);
/* Every row, by id. */
int store_snapshot_list(Store *s, StoredSnapshot **ret, size_t *ret_n);
/* The snapshot as a linked forest, as it was stored; -ENOENT if there is none, -EBADMSG if the
 * rows do not make a consistent forest (edited by hand). */
int store_snapshot_load(Store *s, uint64_t id, Forest **ret);
/* The same through a connection of its own to the database at path, opened read-only for this
 * call, in one read transaction: for a thread other than the one that uses the Store. */
int store_snapshot_load_path(const char *path, uint64_t id, Forest **ret);
/* Delete a snapshot and all its rows: 1 if it existed, 0 if not. */
int store_snapshot_delete(Store *s, uint64_t id);
