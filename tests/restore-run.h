/* restore-run.h: a test talking to sectree-restore as the daemon does (restore-run.c) */
#pragma once

#include <jansson.h>
#include <sys/resource.h>

#include "core/forest.h"
#include "plan/plan-protocol.h"
#include "plan/plan-verify.h"
#include "plan/plan.h"
#include "snapshot/snapshot.h"

#define FRAME_TIMEOUT_USEC (60 * 1000 * 1000ULL)

typedef struct RestoreRun {
        pid_t executor;
        int sock;
        json_t *ready;    /* the READY document, or NULL */
        json_t *error;    /* the ERROR document, or NULL */
        int *fds;
        size_t n_fds;
        PlanMapping map;
        pid_t root_pid;
} RestoreRun;

/* When not 0: the soft RLIMIT_NOFILE the executor is started with. */
extern rlim_t restore_run_executor_nofile;

/* f in a memfd, in that format, at its start. */
int snapshot_memfd_as(const Forest *f, SnapshotFormat format);
int snapshot_memfd(const Forest *f);
/* The next frame; the test fails when none comes in FRAME_TIMEOUT_USEC. */
RestoreFrame recv_frame(RestoreRun *r);
/* READY and the fds after it (and the mapping READY gives), or ERROR. */
void read_outcome(RestoreRun *r);
/* Start sectree-restore as uid, without sending anything yet. */
void spawn_executor_as(RestoreRun *r, uid_t uid);
/* Start sectree-restore as uid with the snapshot (as a file of the given format) and the request's
 * options (a JSON object text without its braces, e.g. "\"exec\":[...]"), and read its outcome. */
void restore_start_with(const Forest *snapshot, SnapshotFormat format, uid_t uid, const char *options, RestoreRun *ret);
void restore_start(const Forest *snapshot, uid_t uid, const char *options, RestoreRun *ret);
/* Wait for the executor's exit; returns its status. */
int wait_executor(RestoreRun *r);
void restore_done(RestoreRun *r);
/* RELEASE: the executor ends every stub and says RELEASED, then exits 0; its root is gone. */
void restore_release(RestoreRun *r);
