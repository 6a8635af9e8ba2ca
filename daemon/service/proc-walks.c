/* proc-walks.c: the walks of /proc of a caller's call in worker lanes (see proc-walks.h) */
#include "service/proc-walks.h"

#include <errno.h>
#include <stdlib.h>

static void job_free_owner(void *owner);

int proc_walks_new(sd_event *event, WorkerLanes **ret) {
        WorkerLanesOptions o = { .burst_usec = PROC_WALK_UID_BURST_USEC, .percent = PROC_WALK_UID_SHARE_PERCENT,
                                 .wait_for_share = true, .max_root = PROC_WALKS_MAX_ROOT,
                                 .max_users = PROC_WALKS_MAX_USERS, .max_per_uid = PROC_WALKS_MAX_PER_UID,
                                 .free_owner = job_free_owner };
        return worker_lanes_new(event, &o, ret);
}

ProcWalk *proc_walk_free(ProcWalk *j) {
        if (!j)
                return NULL;
        worker_item_cancel(&j->worker);
        if (j->userdata_free)
                j->userdata_free(j->userdata);
        tracked_processes_done(&j->tracked);
        caller_deinit(&j->caller);
        free(j->pids);
        free(j->list);
        pid_units_free(j->units, j->kind == PROC_WALK_UNITS || j->kind == PROC_WALK_UNFILTERED ? j->n : 0);
        free(j);
        return NULL;
}

static void job_free_owner(void *owner) {
        proc_walk_free(owner); /* each job is its item's container */
}

static void job_run(void *userdata);
static void job_done(void *userdata);
static void job_failed(void *userdata, int r);

int proc_walk_new(const Forest *f, Caller *c, ProcWalkKind kind, pid_t root, ProcWalk **ret) {
        _cleanup_(proc_walk_freep) ProcWalk *j = calloc(1, sizeof(ProcWalk));
        if (!j)
                return -ENOMEM;
        *j = (ProcWalk) { .kind = kind, .root = root, .gate = secure_getenv("SECTREE_TEST_PROC_WALK_GATE") };
        worker_item_init(&j->worker, j, c->privileged, c->uid, job_run, job_done, job_failed);
        int r = tracked_processes_copy(f, &j->tracked);
        if (r < 0)
                return r;
        j->caller = *c; /* the worker's now */
        *c = (Caller) {};
        *ret = TAKE_PTR(j);
        return 0;
}

static void job_run(void *userdata) {
        ProcWalk *j = userdata;
        worker_item_gate(&j->worker, j->gate); /* for the tests: $SECTREE_TEST_PROC_WALK_GATE */
        switch (j->kind) {
        case PROC_WALK_TRACKED:
                j->r = caller_subtree_tracked(&j->caller, &j->tracked, j->root, &j->pids, &j->n);
                return;
        case PROC_WALK_PROCESSES:
                j->r = caller_subtree_processes(&j->caller, &j->tracked, j->root, &j->list, &j->n);
                return;
        case PROC_WALK_VISIBLE:
                j->r = caller_check_tracked(&j->caller, &j->tracked);
                return;
        case PROC_WALK_UNITS:
                j->r = caller_process_units(&j->caller, &j->tracked, &j->units, &j->n);
                return;
        case PROC_WALK_UNFILTERED:
                j->r = caller_unfiltered_units(&j->caller, &j->tracked, &j->units, &j->n);
                return;
        }
        j->r = -EINVAL;
}

/* The lanes free the job after these (job_free_owner()). */
static void job_done(void *userdata) {
        ProcWalk *j = userdata;
        j->done(j, j->userdata);
}

static void job_failed(void *userdata, int r) {
        ProcWalk *j = userdata;
        log_warning_errno(r, "Could not start a walk of /proc for a call: %m");
        j->r = r;
        j->done(j, j->userdata);
}

int proc_walks_submit(WorkerLanes *lanes, ProcWalk *j, uint64_t loop_cpu_usec, ProcWalkDone done) {
        j->worker.loop_cpu_usec = loop_cpu_usec;
        j->done = done;
        int r = worker_lanes_submit(lanes, &j->worker); /* j is the lanes' now, or freed */
        if (r < 0 && r != -EBUSY)
                log_warning_errno(r, "Could not start a walk of /proc for a call: %m");
        return r;
}
