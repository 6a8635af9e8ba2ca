/* snapshot-transfers.h: snapshots taken, exported into and imported from bus callers' fds, in
 * worker lanes and in steps, without blocking the event loop */
#pragma once

#include <stdint.h>

#include "service/access.h"
#include "service/manager.h"
#include "service/snapshot-scan.h"
#include "snapshot/snapshot.h"

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

/* Errors as snapshots.h says. A transfer ends by calling done exactly once (possibly before the
 * call that started it returns), with 0 and, for an import or a creation, the new snapshot's id;
 * or a negative errno: -EINVAL the file was refused (message: the validator's, naming the field
 * and the element), -ETIMEDOUT the deadline passed, -ECANCELED the daemon is stopping, another one
 * from reading or writing the fd. */
typedef void (*SnapshotTransferDone)(int r, uint64_t id, const char *message, void *userdata);

/* The transfers of one manager's snapshots, and the two worker lanes they run in. */
typedef struct SnapshotTransfers SnapshotTransfers;

int snapshot_transfers_new(Manager *m, SnapshotTransfers **ret);
/* Ends what is in progress (snapshot_transfers_cancel()), then frees. */
SnapshotTransfers *snapshot_transfers_free(SnapshotTransfers *ts);
DEFINE_CLEANUP(SnapshotTransfers *, snapshot_transfers_free);

/* Scan the subtree of root (0: the whole machine, root only) in one pass, in a worker thread of the
 * caller's transfer lane, then store it in steps between the loop's other work (as imports are
 * stored), and call done with its id, or with an error of the scan (-EACCES, -ESRCH, -EIO: the
 * scan failed, with a message) or of storing it (-EDQUOT, the database's), or -ECANCELED when the
 * daemon stops first; sends SnapshotCreated before done. A non-root caller must be able to trace
 * every process of the subtree. What was read of the caller moves to the worker: c keeps its uid
 * and privileged only. Returns 0 when done will be called; else a negative errno (done will not
 * be). A snapshot being taken or stored counts as a transfer. */
int snapshot_transfers_create(SnapshotTransfers *ts, Caller *c, pid_t root, const SnapshotCreateOptions *o,
                              SnapshotTransferDone done, void *userdata, char **ret_message);

/* Write the snapshot into fd (the caller's: a file at its position, or a pipe or socket) in
 * format. The fd is dup'ed: the caller may close its copy. Returns 0 when done will be called, or
 * a negative errno (and done will not be). */
int snapshot_transfers_export(SnapshotTransfers *ts, Caller *c, uint64_t id, int fd, SnapshotFormat format,
                              SnapshotTransferDone done, void *userdata, char **ret_message);

/* Read a snapshot of either format from fd (to its end, at most SNAPSHOT_MAX_FILE_SIZE bytes),
 * validate it and store it as the caller's; sends SnapshotCreated. Returns as
 * snapshot_transfers_export(). A refused file changes nothing. */
int snapshot_transfers_import(SnapshotTransfers *ts, Caller *c, int fd, SnapshotTransferDone done, void *userdata,
                              char **ret_message);

/* End every transfer in progress with -ECANCELED (the daemon is stopping: before the bus goes). */
void snapshot_transfers_cancel(SnapshotTransfers *ts);
