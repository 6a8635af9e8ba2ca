/* proc-walks.h: the walks of /proc a caller's call needs, answered in worker lanes
 * (worker-lanes.h): ListSubtree's and ListSubtreeProcesses' walks of a subtree, ListProcessUnits'
 * reads of each process's cgroup, and a non-root caller's access checks for the listings
 * (ListTasks, ListStaleTasks, ListFilters, ListListeners), GetFilter and WhoCan */
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
 * process's cgroup (root's calls too). The live forest's processes are copied on the loop (pids,
 * start times and names), the caller's identity handed over, and the walk runs in one of two
 * lanes of one worker each, root's calls and everyone else's, the latter shared by uid
 * (uid-share.h). At most PROC_WALKS_MAX_* calls of a lane wait at once, and PROC_WALKS_MAX_PER_UID
 * of one uid (-EBUSY beyond). When sectreed stops, the workers are stopped and waited for, and
 * their calls get no answer.
 */
#define PROC_WALKS_MAX_ROOT 64
#define PROC_WALKS_MAX_USERS 16
#define PROC_WALKS_MAX_PER_UID 8
#define PROC_WALK_UID_BURST_USEC (2 * 1000 * 1000ULL)
#define PROC_WALK_UID_SHARE_PERCENT 50

typedef enum ProcWalkKind {
        PROC_WALK_TRACKED,   /* ListSubtree: the tracked processes of the subtree */
        PROC_WALK_PROCESSES, /* ListSubtreeProcesses: every process of it */
        PROC_WALK_VISIBLE,   /* a checked call's: which tracked processes the caller (not root)
                              * may see; the answers are caller.seen, for caller_seen_rebase() */
        PROC_WALK_UNITS,     /* ListProcessUnits: the units of each tracked process the caller may
                              * see, read from its cgroup */
        PROC_WALK_UNFILTERED, /* ListUnfilteredProcesses: the processes the caller may see that
                               * are not tracked, with their thread counts and units */
} ProcWalkKind;

typedef struct ProcWalk ProcWalk;
/* On the loop, when the worker is done: j->r and the answer; j is freed after it returns. */
typedef void (*ProcWalkDone)(ProcWalk *j, void *userdata);

struct ProcWalk {
        WorkerItem worker;
        ProcWalkKind kind;
        pid_t root;
        Caller caller;            /* the worker's */
        TrackedProcesses tracked; /* the live forest's processes at the call */
        const char *gate;         /* $SECTREE_TEST_PROC_WALK_GATE, see proc-walks.c */
        ProcWalkDone done;
        void *userdata; /* the call's (freed with the job by userdata_free) */
        void (*userdata_free)(void *userdata);

        /* the answer, written by the worker */
        int r;
        pid_t *pids;          /* PROC_WALK_TRACKED */
        VisibleProcess *list; /* PROC_WALK_PROCESSES */
        PidUnit *units;       /* PROC_WALK_UNITS, PROC_WALK_UNFILTERED */
        size_t n;
};

/* The lanes of the walks, bounded as above; worker_lanes_cancel() drops the calls left (no done())
 * when sectreed is stopping, worker_lanes_free() frees the lanes and them. */
int proc_walks_new(sd_event *event, WorkerLanes **ret);

/* A walk of root's subtree in f for the caller (taken: the worker's now). */
int proc_walk_new(const Forest *f, Caller *c, ProcWalkKind kind, pid_t root, ProcWalk **ret);
ProcWalk *proc_walk_free(ProcWalk *j);
DEFINE_CLEANUP(ProcWalk *, proc_walk_free);

/* Queue j (taken) in its lane; loop_cpu_usec: what the loop spent preparing it. -EBUSY when its
 * lane (or its uid's part of it) is full; another negative errno when it could not start; else
 * done() is called when it is answered. */
int proc_walks_submit(WorkerLanes *lanes, ProcWalk *j, uint64_t loop_cpu_usec, ProcWalkDone done);
