/* snapshot-scan.h: a CreateSnapshot's scan: the subtree checked on the loop, scanned in a worker,
 * made a snapshot the caller may see all of */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "core/forest.h"
#include "observe/source.h"
#include "service/access.h"

typedef struct SnapshotCreateOptions {
        const char *name; /* NULL = none */
        bool include_argv;
        bool descendants; /* the root's subtree; false: the root's process alone */
} SnapshotCreateOptions;

/* Whether the caller may snapshot the subtree of root (0: the whole machine, root only): -EACCES,
 * -ESRCH, with *ret_message. */
int snapshot_check_root(Caller *c, pid_t root, char **ret_message);

/* The scan, made on the loop, run in a transfer's worker thread (snapshot-transfers.c). What the
 * worker needs, owned by it: nothing of the bus message or the loop's state but the source. */
typedef struct SnapshotScanJob SnapshotScanJob;
/* The caller's state moves into the job: c keeps its uid and privileged only. */
int snapshot_scan_job_new(Source *source, Caller *c, pid_t root, const SnapshotCreateOptions *o,
                          SnapshotScanJob **ret);
/* In the worker: the snapshot, or a negative errno with *ret_message (malloc'ed, may be NULL):
 * -EACCES, -ESRCH, -EIO (the scan failed), -ENOMEM. */
int snapshot_scan_job_run(SnapshotScanJob *j, Forest **ret, char **ret_message);
SnapshotScanJob *snapshot_scan_job_free(SnapshotScanJob *j);
DEFINE_CLEANUP(SnapshotScanJob *, snapshot_scan_job_free);
