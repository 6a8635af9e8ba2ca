/* policy-jobs.h: GetPolicy's and WhoCan's analyses: the question copied out of the live forest on
 * the loop, answered in a worker lane (worker-lanes.h) */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/prog-wants.h"
#include "observe/source.h"
#include "policy/policy-audit.h"
#include "policy/policy-report.h"
#include "service/access.h"
#include "service/worker-lanes.h"

/*
 * The analyses run in two lanes of one worker each: root's calls and everyone else's, so that
 * other users' questions never make root's wait. What the worker needs is copied out of the live
 * forest first (the programs, the tasks the caller may see), so the forest goes on changing
 * meanwhile. An analysis longer than POLICY_JOB_DEADLINE_USEC is stopped (-ECANCELED); at most
 * POLICY_JOBS_MAX_* calls of a lane wait at once, and POLICY_JOBS_MAX_PER_UID of one uid (-EBUSY
 * beyond). Everyone else's lane is shared by uid (uid-share.h): the next call is the one of the
 * uid that has the most of its share of CPU time left (POLICY_UID_SHARE_PERCENT of one CPU, with
 * bursts of POLICY_UID_BURST_USEC), and a uid that took its share waits, so that no user's many or
 * costly calls make another's wait for more than the one that runs. When sectreed stops, the
 * workers are stopped and waited for, and their calls get no answer.
 */
#define POLICY_JOB_DEADLINE_USEC (2 * 1000 * 1000ULL)
#define POLICY_JOBS_MAX_ROOT 64
#define POLICY_JOBS_MAX_USERS 16
#define POLICY_JOBS_MAX_PER_UID 8
#define POLICY_UID_BURST_USEC POLICY_JOB_DEADLINE_USEC
#define POLICY_UID_SHARE_PERCENT 50

typedef enum PolicyJobKind {
        POLICY_JOB_GET_POLICY,
        POLICY_JOB_WHO_CAN,
        POLICY_JOB_AUDIT, /* GetPolicy's question, answered with policy_audit() */
} PolicyJobKind;

/* Audit's baseline profile: its JSON text as the caller sent it, built (policy_baseline_build())
 * and decided in the worker; what is wrong with a text that is no profile. */
typedef struct PolicyBaseline {
        char *text; /* NULL: none */
        char *error; /* set by the worker when the text is refused (the job's r is then -EINVAL) */
} PolicyBaseline;
void policy_baseline_done(PolicyBaseline *b);

typedef struct PolicyJob PolicyJob;
/* On the loop, when the worker is done: j->r and the answer; j is freed after it returns. */
typedef void (*PolicyJobDone)(PolicyJob *j, void *userdata);

struct PolicyJob {
        WorkerItem worker;
        Source *source; /* the worker's: programs over budget are read again through it */
        PolicyJobKind kind;
        char what[64]; /* for errors: "the chain of task 4711" */
        const char *gate; /* $SECTREE_TEST_POLICY_GATE: for the tests, the worker waits for this file */
        PolicyJobDone done;
        void *userdata;                    /* the call's (freed with the job by userdata_free) */
        void (*userdata_free)(void *userdata);

        /* the question, copied out of the live forest */
        Arena arena;         /* GetPolicy's programs */
        ProgWants wants;     /* GetPolicy: the programs its filters were kept without */
        ChainProgram *chain; /* GetPolicy */
        size_t n_chain;
        TaskMode mode;
        uint64_t *filter_ids;
        size_t n_filter_ids;
        bool *listeners; /* GetPolicy, Audit: whether each filter of chain has a listener */
        PolicyBaseline baseline; /* Audit: the calls its profile denies are reported where allowed */
        WhoCanPlan *plan; /* WhoCan */
        WhoCanQuery query;
        Caller caller;   /* WhoCan: the worker counts the threads it may see */
        size_t filtered; /* WhoCan: the visible threads of the forest in filter or strict mode */

        /* the answer, written by the worker */
        int r;
        bool not_started; /* r is why its worker could not start */
        PolicyReport *report; /* GetPolicy */
        AuditFindings findings; /* Audit */
        WhoCan *who;          /* WhoCan */
        size_t all;           /* WhoCan: every visible thread of the machine */
};

/* The lanes of the analyses, bounded as above; worker_lanes_cancel() drops the calls left (no
 * done()) when sectreed is stopping, worker_lanes_free() frees the lanes and them. */
int policy_jobs_new(sd_event *event, WorkerLanes **ret);

/* A job of the caller's; what: its subject, for errors ("the chain of task 4711"). */
PolicyJob *policy_job_new(Source *source, const Caller *c, PolicyJobKind kind, const char *what);
PolicyJob *policy_job_free(PolicyJob *j);
DEFINE_CLEANUP(PolicyJob *, policy_job_free);

/* The task tid's mode and chain (NULL: a task the daemon does not track, which runs without
 * filters), if the caller may see it; -ESRCH for a hidden task as for a missing one. */
int policy_find_task(Caller *c, const Forest *f, uint32_t tid, const Task **ret);
/* GetPolicy's and Audit's question: t's chain, newest first, its programs copied (strict mode as its
 * program). -ENODATA: a filter of it has no program the kernel would have installed. */
int policy_job_set_chain(PolicyJob *j, const Task *t);
/* WhoCan's question: the chains of f the caller (taken: the worker's now) may see. */
int policy_job_set_who_can(PolicyJob *j, const Forest *f, const WhoCanQuery *q, Caller *c);

/* Queue j (taken) in its lane; loop_cpu_usec: what the loop spent preparing it. -EBUSY when its
 * lane (or its uid's part of it) is full; another negative errno when it could not start; else
 * done() is called when it is answered. */
int policy_jobs_submit(WorkerLanes *lanes, PolicyJob *j, uint64_t loop_cpu_usec, PolicyJobDone done);
