/* worker-lanes.c: work run off the event loop in two lanes of one worker thread each, root's and
 * everyone else's, the latter shared by uid */
#include "service/worker-lanes.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct WorkerLanes {
        sd_event *event;
        WorkerItem *items; /* pending or running, newest first */
        UidShare share;    /* everyone else's lane, by uid */
        bool wait_for_share;
        unsigned max_root, max_users, max_per_uid; /* 0: no bound */
        void (*free_owner)(void *owner);
        bool stopped;
        sd_event_source *timer; /* when a uid that took its share may go on */
};

static void lanes_schedule(WorkerLanes *l, WorkerItem *submitted, int *ret_submitted);

int worker_lanes_new(sd_event *event, const WorkerLanesOptions *o, WorkerLanes **ret) {
        WorkerLanes *l = calloc(1, sizeof(WorkerLanes));
        if (!l)
                return -ENOMEM;
        l->event = sd_event_ref(event);
        l->wait_for_share = o->wait_for_share;
        l->max_root = o->max_root;
        l->max_users = o->max_users;
        l->max_per_uid = o->max_per_uid;
        l->free_owner = o->free_owner;
        uid_share_init(&l->share, o->burst_usec, o->percent);
        *ret = l;
        return 0;
}

static void lanes_unlink(WorkerLanes *l, WorkerItem *w) {
        for (WorkerItem **p = &l->items; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        w->next = NULL;
        w->lanes = NULL;
        w->pending = false;
}

/* Wait for w's thread (if it runs), and close what told the loop it was done. */
static void item_join(WorkerItem *w) {
        if (w->running) {
                int k = pthread_join(w->thread, NULL);
                if (k != 0)
                        log_error_errno(k, "Could not wait for a worker thread: %m");
                w->running = false;
        }
        w->event_source = sd_event_source_disable_unref(w->event_source);
        if (w->event_fd >= 0)
                close(TAKE_FD(w->event_fd));
}

/* What a worker took, and the loop before it, off its uid's share (root's lane has none). */
static void item_charge(WorkerLanes *l, const WorkerItem *w) {
        if (!w->privileged &&
            uid_share_charge(&l->share, w->uid, w->loop_cpu_usec + w->worker_cpu_usec, now_usec(CLOCK_MONOTONIC)) < 0)
                log_oom();
}

void worker_item_cancel(WorkerItem *w) {
        WorkerLanes *l = w->lanes;
        bool was_running = w->running;
        if (w->running)
                atomic_store(&w->cancelled, true);
        item_join(w);
        if (!l)
                return;
        lanes_unlink(l, w);
        if (was_running) {
                item_charge(l, w); /* a cancelled worker's time counts too: else cancelling dodged the share */
                lanes_schedule(l, NULL, NULL); /* its lane is free */
        }
}

bool worker_item_running(const WorkerItem *w) {
        return w->running;
}

WorkerLanes *worker_lanes_free(WorkerLanes *l) {
        if (!l)
                return NULL;
        worker_lanes_cancel(l);
        while (l->items) /* without free_owner */
                worker_item_cancel(l->items);
        uid_share_deinit(&l->share);
        sd_event_unref(l->event);
        free(l);
        return NULL;
}

void worker_item_init(WorkerItem *w, void *owner, bool privileged, uid_t uid, WorkerRun run, WorkerDone done,
                      WorkerFailed failed) {
        *w = (WorkerItem) { .owner = owner, .privileged = privileged, .uid = uid, .run = run, .done = done, .failed = failed,
                            .event_fd = -EBADF };
        atomic_init(&w->cancelled, false);
}

/* The worker thread: w->run(w), what it took, and the loop told. */
static void *worker_main(void *userdata) {
        WorkerItem *w = userdata;
        uint64_t cpu = thread_cpu_usec(), one = 1;
        w->run(w->owner);
        w->worker_cpu_usec = thread_cpu_usec() - cpu;
        /* an eventfd write of 1 fails only on overflow, which one write cannot cause */
        while (write(w->event_fd, &one, sizeof(one)) < 0 && errno == EINTR)
                ;
        return NULL;
}

static int on_worker_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WorkerItem *w = userdata;
        WorkerLanes *l = w->lanes;
        item_join(w);
        lanes_unlink(l, w);
        item_charge(l, w);
        w->done(w->owner); /* w may be gone */
        if (l->free_owner)
                l->free_owner(w->owner);
        lanes_schedule(l, NULL, NULL);
        return 0;
}

static int item_launch(WorkerLanes *l, WorkerItem *w) {
        w->pending = false;
        w->launched_at = now_usec(CLOCK_MONOTONIC);
        w->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->event_fd < 0)
                return -errno;
        int r = sd_event_add_io(l->event, &w->event_source, w->event_fd, EPOLLIN, on_worker_done, w);
        if (r < 0)
                return r;
        r = pthread_create(&w->thread, NULL, worker_main, w);
        if (r != 0)
                return -r;
        w->running = true;
        return 0;
}

static int on_lanes_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        lanes_schedule(userdata, NULL, NULL);
        return 0;
}

/* No uid with a pending item may go on yet: wake up when the first one may. */
static void lanes_wait(WorkerLanes *l, uint64_t until) {
        int r;
        if (l->timer)
                r = sd_event_source_set_time(l->timer, until);
        else
                r = sd_event_add_time(l->event, &l->timer, CLOCK_MONOTONIC, until, 0, on_lanes_timer, l);
        if (r >= 0)
                r = sd_event_source_set_enabled(l->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Could not wait for a uid's share of a worker lane: %m");
}

/* Root's lane: the item that has waited longest (the list is newest first). Everyone else's: the
 * pending item of the uid with the most of its share left, the oldest on ties; with
 * wait_for_share only among the uids with some left, else NULL (and the timer set). */
static WorkerItem *lane_next(WorkerLanes *l, bool privileged) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), ready_at = UINT64_MAX;
        WorkerItem *next = NULL;
        int64_t best = 0;
        for (WorkerItem *w = l->items; w; w = w->next) {
                if (w->privileged != privileged || !w->pending)
                        continue;
                if (privileged) {
                        next = w;
                        continue;
                }
                int64_t balance = uid_share_balance(&l->share, w->uid, now);
                if (l->wait_for_share && balance <= 0)
                        ready_at = MIN(ready_at, uid_share_ready_at(&l->share, w->uid, now));
                else if (!next || balance >= best) {
                        next = w;
                        best = balance;
                }
        }
        if (!next && ready_at != UINT64_MAX)
                lanes_wait(l, ready_at);
        return next;
}

static bool lane_busy(const WorkerLanes *l, bool privileged) {
        for (WorkerItem *w = l->items; w; w = w->next)
                if (w->privileged == privileged && w->running)
                        return true;
        return false;
}

/* In each lane where no worker runs, start the next item. One that cannot start leaves the lanes:
 * submitted's error goes to *ret_submitted, any other's to its failed(). */
static void lanes_schedule(WorkerLanes *l, WorkerItem *submitted, int *ret_submitted) {
        for (int lane = 0; !l->stopped && lane < 2; lane++) {
                if (lane_busy(l, lane))
                        continue;
                WorkerItem *next = lane_next(l, lane);
                if (!next)
                        continue;
                int r = item_launch(l, next);
                if (r >= 0)
                        continue;
                item_join(next);
                lanes_unlink(l, next);
                if (next == submitted)
                        *ret_submitted = r;
                else {
                        next->failed(next->owner, r);
                        if (l->free_owner)
                                l->free_owner(next->owner);
                }
                lane--; /* the next one of this lane, then */
        }
}

static bool over(unsigned n, unsigned max) {
        return max > 0 && n >= max;
}

/* Whether w's lane, or its uid's part of everyone else's, holds as many items as it may. */
static bool lanes_full(const WorkerLanes *l, const WorkerItem *w) {
        if (over(worker_lanes_count(l, w->privileged), w->privileged ? l->max_root : l->max_users))
                return true;
        return !w->privileged && over(worker_lanes_count_uid(l, w->uid), l->max_per_uid);
}

static int lanes_queue(WorkerLanes *l, WorkerItem *w) {
        int r = 0;
        if (l->stopped)
                return -ECANCELED;
        if (lanes_full(l, w))
                return -EBUSY;
        w->lanes = l;
        w->pending = true;
        w->next = l->items;
        l->items = w;
        lanes_schedule(l, w, &r);
        return r;
}

int worker_lanes_submit(WorkerLanes *l, WorkerItem *w) {
        int r = lanes_queue(l, w);
        if (r < 0 && l->free_owner)
                l->free_owner(w->owner); /* out of the lanes already */
        return r;
}

void worker_lanes_stop(WorkerLanes *l) {
        l->stopped = true;
        l->timer = sd_event_source_disable_unref(l->timer);
        for (WorkerItem *w = l->items; w; w = w->next)
                if (w->running)
                        atomic_store(&w->cancelled, true);
}

void worker_item_gate(WorkerItem *w, const char *gate) {
        for (unsigned i = 0; gate && i < 3000 && !atomic_load(&w->cancelled) && access(gate, F_OK) < 0; i++)
                (void) usleep(10 * 1000);
}

void worker_lanes_cancel(WorkerLanes *l) {
        void *owner;

        worker_lanes_stop(l);
        while (l->free_owner && (owner = worker_lanes_first(l)))
                l->free_owner(owner);
}

unsigned worker_lanes_count(const WorkerLanes *l, bool privileged) {
        unsigned n = 0;
        for (WorkerItem *w = l->items; w; w = w->next)
                n += w->privileged == privileged;
        return n;
}

unsigned worker_lanes_count_uid(const WorkerLanes *l, uid_t uid) {
        unsigned n = 0;
        for (WorkerItem *w = l->items; w; w = w->next)
                n += !w->privileged && w->uid == uid;
        return n;
}

void *worker_lanes_first(const WorkerLanes *l) {
        return l->items ? l->items->owner : NULL;
}
