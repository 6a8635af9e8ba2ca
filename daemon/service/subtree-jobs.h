/* subtree-jobs.h: the walks of /proc a caller's call needs, answered in worker lanes
 * (worker-lanes.h): ListSubtree's and ListSubtreeProcesses' walks of a subtree, ListProcessUnits'
 * reads of each process's cgroup, and a non-root caller's access checks for the listings
 * (ListTasks, ListFilters, ListListeners, ListStaleTasks) and GetFilter */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "service/access.h"
#include "service/visibility.h"
#include "service/worker-lanes.h"

/*
 * A subtree is walked through /proc as it is now: every process of the machine is read once
 * (ListSubtreeProcesses), or every tracked one and its ancestors (ListSubtree), a third of a second
 * at 20,000 processes, which the loop must not spend on one caller's call. A listing for a caller
 * other than root checks each tracked process against the caller (a stat(2) of another uid's, six
 * calls into /proc of the caller's own: 35 ms at 20,000 processes, 0.1 s for a user who runs
 * 4,000), which the loop must not spend either, nor ListProcessUnits' four reads of each
 * process's cgroup (root's too). The live forest's
 * processes are copied on the loop (pids, start times and names), the caller's identity handed
 * over, and the walk runs in one of two lanes of one worker each, root's calls and everyone
 * else's, the latter shared by uid (uid-share.h). At most SUBTREE_JOBS_MAX_* calls of a lane wait
 * at once, and SUBTREE_JOBS_MAX_PER_UID of one uid (-EBUSY beyond). When sectreed stops, the
 * workers are stopped and waited for, and their calls get no answer.
 */
#define SUBTREE_JOBS_MAX_ROOT 64
#define SUBTREE_JOBS_MAX_USERS 16
#define SUBTREE_JOBS_MAX_PER_UID 8
#define SUBTREE_UID_BURST_USEC (2 * 1000 * 1000ULL)
#define SUBTREE_UID_SHARE_PERCENT 50

typedef enum SubtreeJobKind {
        SUBTREE_JOB_TRACKED,   /* ListSubtree: the tracked processes of the subtree */
        SUBTREE_JOB_PROCESSES, /* ListSubtreeProcesses: every process of it */
        SUBTREE_JOB_VISIBLE,   /* a listing's: which tracked processes the caller may see (no root);
                                * the answers are caller.seen, for caller_seen_rebase() */
        SUBTREE_JOB_UNITS,     /* ListProcessUnits: the units of each tracked process the caller may
                                * see, read from its cgroup (no root) */
} SubtreeJobKind;

typedef struct SubtreeJob SubtreeJob;
/* On the loop, when the worker is done: j->r and the answer; j is freed after it returns. */
typedef void (*SubtreeJobDone)(SubtreeJob *j, void *userdata);

struct SubtreeJob {
        WorkerItem worker;
        SubtreeJobKind kind;
        pid_t root;
        Caller caller;            /* the worker's */
        TrackedProcesses tracked; /* the live forest's processes at the call */
        const char *gate;         /* $SECTREE_TEST_SUBTREE_GATE, see subtree-jobs.c */
        SubtreeJobDone done;
        void *userdata; /* the call's (freed with the job by userdata_free) */
        void (*userdata_free)(void *userdata);

        /* the answer, written by the worker */
        int r;
        pid_t *pids;          /* SUBTREE_JOB_TRACKED */
        VisibleProcess *list; /* SUBTREE_JOB_PROCESSES */
        PidUnit *units;       /* SUBTREE_JOB_UNITS */
        size_t n;
};

typedef struct SubtreeJobs SubtreeJobs;

int subtree_jobs_new(sd_event *event, SubtreeJobs **ret);
/* Stop the workers, wait for them, and drop their calls (no done()): sectreed is stopping. */
void subtree_jobs_cancel(SubtreeJobs *js);
/* subtree_jobs_cancel(), then free. */
SubtreeJobs *subtree_jobs_free(SubtreeJobs *js);
DEFINE_CLEANUP(SubtreeJobs *, subtree_jobs_free);

/* A walk of root's subtree in f for the caller (taken: the worker's now). */
int subtree_job_new(const Forest *f, Caller *c, SubtreeJobKind kind, pid_t root, SubtreeJob **ret);
SubtreeJob *subtree_job_free(SubtreeJob *j);
DEFINE_CLEANUP(SubtreeJob *, subtree_job_free);

/* Queue j (taken) in its lane; loop_cpu_usec: what the loop spent preparing it. -EBUSY when its
 * lane (or its uid's part of it) is full; another negative errno when it could not start; else
 * done() is called when it is answered. */
int subtree_jobs_submit(SubtreeJobs *js, SubtreeJob *j, uint64_t loop_cpu_usec, SubtreeJobDone done);
