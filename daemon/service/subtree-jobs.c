/* subtree-jobs.c: the walks of /proc of a caller's call in worker lanes (see subtree-jobs.h) */
#include "service/subtree-jobs.h"

#include <errno.h>
#include <stdlib.h>

struct SubtreeJobs {
        WorkerLanes *lanes;
};

int subtree_jobs_new(sd_event *event, SubtreeJobs **ret) {
        SubtreeJobs *js = calloc(1, sizeof(SubtreeJobs));
        if (!js)
                return -ENOMEM;
        WorkerLanesOptions o = { .burst_usec = SUBTREE_UID_BURST_USEC, .percent = SUBTREE_UID_SHARE_PERCENT,
                                 .wait_for_share = true };
        int r = worker_lanes_new(event, &o, &js->lanes);
        if (r < 0) {
                free(js);
                return r;
        }
        *ret = js;
        return 0;
}

SubtreeJob *subtree_job_free(SubtreeJob *j) {
        if (!j)
                return NULL;
        worker_item_cancel(&j->worker);
        if (j->userdata_free)
                j->userdata_free(j->userdata);
        tracked_processes_done(&j->tracked);
        caller_deinit(&j->caller);
        free(j->pids);
        free(j->list);
        pid_units_free(j->units, j->kind == SUBTREE_JOB_UNITS ? j->n : 0);
        free(j);
        return NULL;
}

static void job_free_owner(void *owner) {
        subtree_job_free(owner);
}

void subtree_jobs_cancel(SubtreeJobs *js) {
        if (js) /* the lanes hold only their items: each job is its item's container */
                worker_lanes_cancel(js->lanes, job_free_owner);
}

SubtreeJobs *subtree_jobs_free(SubtreeJobs *js) {
        if (!js)
                return NULL;
        subtree_jobs_cancel(js);
        worker_lanes_free(js->lanes);
        free(js);
        return NULL;
}

static void job_run(void *userdata);
static void job_done(void *userdata);
static void job_failed(void *userdata, int r);

int subtree_job_new(const Forest *f, Caller *c, SubtreeJobKind kind, pid_t root, SubtreeJob **ret) {
        _cleanup_(subtree_job_freep) SubtreeJob *j = calloc(1, sizeof(SubtreeJob));
        if (!j)
                return -ENOMEM;
        *j = (SubtreeJob) { .kind = kind, .root = root, .gate = secure_getenv("SECTREE_TEST_SUBTREE_GATE") };
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
        SubtreeJob *j = userdata;
        worker_item_gate(&j->worker, j->gate); /* for the tests: $SECTREE_TEST_SUBTREE_GATE */
        switch (j->kind) {
        case SUBTREE_JOB_TRACKED:
                j->r = caller_subtree_tracked(&j->caller, &j->tracked, j->root, &j->pids, &j->n);
                return;
        case SUBTREE_JOB_PROCESSES:
                j->r = caller_subtree_processes(&j->caller, &j->tracked, j->root, &j->list, &j->n);
                return;
        case SUBTREE_JOB_VISIBLE:
                j->r = caller_check_tracked(&j->caller, &j->tracked);
                return;
        case SUBTREE_JOB_UNITS:
                j->r = caller_process_units(&j->caller, &j->tracked, &j->units, &j->n);
                return;
        }
        j->r = -EINVAL;
}

static void job_done(void *userdata) {
        SubtreeJob *j = userdata;
        j->done(j, j->userdata);
        subtree_job_free(j);
}

static void job_failed(void *userdata, int r) {
        SubtreeJob *j = userdata;
        log_warning_errno(r, "Could not start a walk of /proc for a call: %m");
        j->r = r;
        j->done(j, j->userdata);
        subtree_job_free(j);
}

int subtree_jobs_submit(SubtreeJobs *js, SubtreeJob *j, uint64_t loop_cpu_usec, SubtreeJobDone done) {
        _cleanup_(subtree_job_freep) SubtreeJob *job = j;
        if (worker_lanes_full(js->lanes, &j->worker, SUBTREE_JOBS_MAX_ROOT, SUBTREE_JOBS_MAX_USERS,
                              SUBTREE_JOBS_MAX_PER_UID))
                return -EBUSY;
        j->worker.loop_cpu_usec = loop_cpu_usec;
        j->done = done;
        int r = worker_lanes_submit(js->lanes, &j->worker);
        if (r < 0)
                return log_warning_errno(r, "Could not start a walk of /proc for a call: %m");
        TAKE_PTR(job);
        return 0;
}
