/* snapshots.h: snapshots for bus callers: taken with one scan, stored in the state database, and
 * exported into / imported from the callers' fds without blocking the event loop */
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

/* Exports and imports in progress at once (each may buffer SNAPSHOT_MAX_FILE_SIZE bytes): in all,
 * of all non-root users together (the rest is root's), and of one non-root uid, whose second one
 * may start only while fewer than SNAPSHOT_TRANSFERS_SHARED_USERS of all users' are in progress
 * (so that it takes five uids to fill every slot of the users');
 * and the deadline of each: a pipe nobody writes into (or reads from) is given up after it. */
#define SNAPSHOT_TRANSFERS_MAX 8
#define SNAPSHOT_TRANSFERS_MAX_USERS 6
#define SNAPSHOT_TRANSFERS_MAX_PER_UID 2
#define SNAPSHOT_TRANSFERS_SHARED_USERS 3
/* The non-root workers' lane shared by uid (uid-share.h): whose transfer's worker goes next. */
#define SNAPSHOT_UID_BURST_USEC (2 * 1000 * 1000ULL)
#define SNAPSHOT_UID_SHARE_PERCENT 50
#define SNAPSHOT_TRANSFER_TIMEOUT_USEC (30 * 1000000ULL) /* $SECTREE_SNAPSHOT_TIMEOUT_USEC replaces it */

typedef struct SnapshotCreateOptions {
        const char *name; /* NULL = none */
        bool include_argv;
} SnapshotCreateOptions;

/* Errors of every call below, besides -ENOMEM and the database's: -ENOENT no such snapshot (or
 * not the caller's: it does not see it), -ESRCH no such process, -EACCES not allowed, -EDQUOT the
 * caller's quota is used up, -EBUSY too many transfers in progress. *ret_message (malloc'ed, may
 * be NULL) says more where there is more to say. */

/* Scan the subtree of root (0: the whole machine, root only) in one pass, in a worker thread of the
 * caller's transfer lane, then store it in steps between the loop's other work (as imports are
 * stored), and call done with its id, or with an error of the scan (-EACCES, -ESRCH, -EIO: the
 * scan failed, with a message) or of storing it (-EDQUOT, the database's), or -ECANCELED when the
 * daemon stops first; sends SnapshotCreated before done. A non-root caller must be able to trace
 * every process of the subtree. What was read of the caller moves to the worker: c keeps its uid
 * and privileged only. Returns 0 when done will be called; else a negative errno (done will not
 * be). A snapshot being taken or stored counts as a transfer. */
typedef void (*SnapshotTransferDone)(Manager *m, int r, uint64_t id, const char *message, void *userdata);
int manager_snapshot_create(Manager *m, Caller *c, pid_t root, const SnapshotCreateOptions *o,
                            SnapshotTransferDone done, void *userdata, char **ret_message);

/* The snapshots the caller may see (root: all; others: their own), by id. */
int manager_snapshot_list(Manager *m, Caller *c, StoredSnapshot **ret, size_t *ret_n);

/* Delete one of the caller's snapshots; sends SnapshotDeleted. */
int manager_snapshot_delete(Manager *m, Caller *c, uint64_t id);

/* A transfer ends by calling done exactly once (possibly before the call that started it returns),
 * with 0 and, for an import, the new snapshot's id; or a negative errno: -EINVAL the file was
 * refused (message: the validator's, naming the field and the element), -ETIMEDOUT the deadline
 * passed, -ECANCELED the daemon is stopping, another one from reading or writing the fd. */
/* Write the snapshot into fd (the caller's: a file at its position, or a pipe or socket) in
 * format. The fd is dup'ed: the caller may close its copy. Returns 0 when done will be called, or
 * a negative errno (and done will not be). */
int manager_snapshot_export(Manager *m, Caller *c, uint64_t id, int fd, SnapshotFormat format,
                            SnapshotTransferDone done, void *userdata, char **ret_message);

/* Read a snapshot of either format from fd (to its end, at most SNAPSHOT_MAX_FILE_SIZE bytes),
 * validate it and store it as the caller's; sends SnapshotCreated. Returns as
 * manager_snapshot_export(). A refused file changes nothing. */
int manager_snapshot_import(Manager *m, Caller *c, int fd, SnapshotTransferDone done, void *userdata,
                            char **ret_message);

/* A CreateSnapshot's scan: made on the loop by snapshots.c, run in a transfer's worker thread. */
typedef struct SnapshotScanJob SnapshotScanJob;
/* In the worker: the snapshot, or a negative errno with *ret_message (malloc'ed, may be NULL):
 * -EACCES, -ESRCH, -EIO (the scan failed), -ENOMEM. */
int snapshot_scan_job_run(SnapshotScanJob *j, Forest **ret, char **ret_message);
SnapshotScanJob *snapshot_scan_job_free(SnapshotScanJob *j);
DEFINE_CLEANUP(SnapshotScanJob *, snapshot_scan_job_free);
/* snapshot-transfers.c: j (taken) run by a transfer of the caller's in its lane's worker, then what
 * it scanned stored as the caller's new snapshot, in steps; done as for the others. */
int snapshot_create_in_worker(Manager *m, Caller *c, SnapshotScanJob *j, SnapshotTransferDone done, void *userdata,
                              char **ret_message);

/* End every transfer in progress with -ECANCELED. */
void manager_snapshot_transfers_cancel(Manager *m);

/* Shared by snapshots.c and snapshot-transfers.c: the quota of the caller (NULL: none, for root)
 * and the message for -EDQUOT; *ret_message set to a malloc'ed message (ret_message may be NULL;
 * NULL on allocation failure). Returns 0. */
const StoreSnapshotQuota *snapshot_quota_for(const Caller *c);
int snapshot_quota_message(char **ret_message);
int snapshot_set_message(char **ret_message, const char *format, ...) _printf_(2, 3);
/* The row of a snapshot the caller may see; another's is -ENOENT, as one that does not exist. */
int snapshot_find(Manager *m, Caller *c, uint64_t id, StoredSnapshot *ret);

