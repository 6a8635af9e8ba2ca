/* worker-lanes.h: work run off the event loop in two lanes of one worker thread each, root's and
 * everyone else's, the latter shared by uid */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "core/util.h"
#include "service/uid-share.h"

/*
 * An item (embedded in what its owner queues: a policy job, a snapshot transfer) waits in its
 * lane until the lane's one worker thread is free, runs item->run() in a thread of its own, and
 * goes on on the loop with item->done() once the thread says so through an eventfd and has been
 * joined. So another user's work never makes root's wait. Everyone else's lane is shared by uid
 * (uid-share.h): the next item is the one of the uid with the most of its share of CPU time left
 * (the oldest on ties), its cost what the worker took and what the loop spent preparing it. With
 * wait_for_share, a uid that took its share waits (a timer of the lanes wakes it up); without, it
 * only goes after the others. The share tables and the timer are the lanes' own.
 */
typedef struct WorkerLanes WorkerLanes;
typedef struct WorkerItem WorkerItem;

/* In the worker thread: the item's work. While it runs it alone touches what its owner gave it. */
typedef void (*WorkerRun)(void *owner);
/* On the loop, the thread joined and its time charged; the item is out of the lanes (done may
 * free it, unless the lanes have free_owner: they free the owner after done() returns). */
typedef void (*WorkerDone)(void *owner);
/* On the loop: a pending item's worker could not be started (r); the item is out of the lanes (as
 * for done(), the lanes with free_owner free the owner after it). */
typedef void (*WorkerFailed)(void *owner, int r);

struct WorkerItem {
        WorkerLanes *lanes; /* while pending or running */
        WorkerItem *next;
        void *owner; /* what embeds it, passed to the callbacks */
        bool privileged; /* its lane: root's, or everyone else's */
        uid_t uid;       /* its share of everyone else's lane */
        WorkerRun run;
        WorkerDone done;
        WorkerFailed failed;
        uint64_t loop_cpu_usec; /* what the loop spent preparing it, charged with the worker's */
        uint64_t launched_at;   /* CLOCK_MONOTONIC, when its worker started */
        atomic_bool cancelled;  /* set by the loop: skip what is left to do */

        /* the lanes' */
        bool pending, running;
        pthread_t thread;
        int event_fd;
        sd_event_source *event_source;
        uint64_t worker_cpu_usec;
};

typedef struct WorkerLanesOptions {
        uint64_t burst_usec; /* of a uid's share (uid-share.h) */
        unsigned percent;    /* of one CPU */
        bool wait_for_share; /* a uid that took its share waits for it to refill */
        /* What worker_lanes_submit() refuses with -EBUSY rather than queue: root's lane holding
         * max_root items, everyone else's max_users, or one uid max_per_uid of them (0: no bound). */
        unsigned max_root, max_users, max_per_uid;
        /* Frees an item's owner, taking the item out of the lanes (worker_item_cancel()); with it,
         * the lanes own the owners they hold: freed after done() or failed(), by
         * worker_lanes_cancel() and worker_lanes_free(), and by worker_lanes_submit() when it fails. */
        void (*free_owner)(void *owner);
} WorkerLanesOptions;

int worker_lanes_new(sd_event *event, const WorkerLanesOptions *o, WorkerLanes **ret);
/* Cancel and wait for every item left (none gets done() or failed()), free their owners when the
 * lanes have free_owner, free the lanes. */
WorkerLanes *worker_lanes_free(WorkerLanes *l);
DEFINE_CLEANUP(WorkerLanes *, worker_lanes_free);

void worker_item_init(WorkerItem *w, void *owner, bool privileged, uid_t uid, WorkerRun run, WorkerDone done, WorkerFailed failed);
/* Queue w in its lane; its worker starts when the lane is free (and, with wait_for_share, its uid
 * has some share left). A negative errno when w's own worker could not start: w is then out of
 * the lanes, and failed() is not called for it. -EBUSY when its lane is full (the options' bounds),
 * -ECANCELED once the lanes are stopped: w was not queued. On any error, lanes with free_owner
 * have freed w's owner. */
int worker_lanes_submit(WorkerLanes *l, WorkerItem *w);
/* Take w out of its lanes (if it is in them); a running worker is told to stop and waited for,
 * and the next item of its lane starts. */
void worker_item_cancel(WorkerItem *w);
/* Whether w's worker thread has started (and w not been joined since). */
bool worker_item_running(const WorkerItem *w);
/* Start no more workers, and tell the running ones to stop (sectreed is stopping). */
void worker_lanes_stop(WorkerLanes *l);
/* For the tests only: in w's worker, wait until the file gate exists (at most 30 s) or w is
 * cancelled; nothing when gate is NULL (the test variable that names it is not set). So that a test
 * can hold an item in its worker while it calls the daemon. */
void worker_item_gate(WorkerItem *w, const char *gate);
/* worker_lanes_stop(), then free the owner of every item left with the lanes' free_owner (a
 * running worker is waited for). Their calls get no answer. */
void worker_lanes_cancel(WorkerLanes *l);

/* The owner of the newest item pending or running, NULL if none. */
void *worker_lanes_first(const WorkerLanes *l);
/* Items pending or running: of a lane, and of one uid in everyone else's lane. */
unsigned worker_lanes_count(const WorkerLanes *l, bool privileged);
unsigned worker_lanes_count_uid(const WorkerLanes *l, uid_t uid);
