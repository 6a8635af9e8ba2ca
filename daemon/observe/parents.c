/* parents.c: the parents of the live forest's processes, watched with pidfds
 *
 * A process whose parent exits is reparented (to the nearest child subreaper, or init) without any
 * event about the process itself, and the bpf backend does not even see the exits of parents that
 * run no filter. A pidfd becomes readable once its whole thread group has exited, and by then the
 * kernel has reparented the children (exit_notify() reparents before it wakes pidfd waiters): so
 * each distinct parent of a live process is watched with a pidfd, and when it fires, the children's
 * new parents are read from /proc and handed on as events. A parent that is gone before it could be
 * watched is handled as one that just exited.
 *
 * The pidfds may take the open files the daemon may have (RLIMIT_NOFILE, which the unit's
 * LimitNOFILE= sets) less a reserve for everything else it opens (the database, the bus, BPF
 * objects, /proc files, snapshot transfers): parents_max_watched(). The parents beyond are seen to
 * change at the next full pass. */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "observe/parents.h"
#include "observe/procinfo.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

typedef struct Watch {
        Parents *parents;
        pid_t ppid;
        sd_event_source *source; /* io on its pidfd, which it owns */
} Watch;

struct Parents {
        sd_event *event;
        SourceSink sink;
        Hashmap watched;        /* ppid -> Watch */
        Hashmap gone;           /* ppid -> (void *) 1: exited before it was watched, handled next iteration */
        sd_event_source *defer; /* handles gone */
        LiveBatch batch;
        size_t max_watched;     /* parents_max_watched() of RLIMIT_NOFILE */
        bool refused;           /* pidfd_open() is not allowed or not there: logged once */
        bool full;              /* max_watched or the fd limit was reached: logged once */
};

static const Forest *live_now(Parents *p) {
        return live_forest(p->sink.live(p->sink.userdata));
}

/* The children of ppid with another parent now: one event each. */
static int children_moved(Parents *p, pid_t ppid) {
        size_t n;
        const pid_t *kids = live_children(p->sink.live(p->sink.userdata), ppid, &n);
        int r = 0;

        live_batch_clear(&p->batch);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const Process *child = forest_find_process(live_now(p), kids[i]);
                ProcStatus st;
                uint64_t start;
                if (!child || proc_read_status(kids[i], &st) < 0 || st.ppid == ppid ||
                    proc_read_start_time(kids[i], &start) < 0 || (child->start_time && start != child->start_time))
                        continue; /* gone (its exit is an event of its own), or not moved */
                LiveEvent e = { .type = LIVE_EVENT_PARENT,
                                .task = { .tgid = kids[i], .ppid = st.ppid, .process_start_time = start } };
                r = live_batch_add(&p->batch, &e);
        }
        if (r >= 0 && p->batch.n > 0)
                r = p->sink.apply(p->sink.userdata, &p->batch); /* the manager handles failures */
        live_batch_clear(&p->batch);
        return r;
}

static Watch *watch_free(Watch *w) {
        if (w) {
                sd_event_source_disable_unref(w->source); /* sd-event frees it after its dispatch, if in it */
                free(w);
        }
        return NULL;
}

static void unwatch(Parents *p, pid_t ppid) {
        watch_free(hashmap_remove(&p->watched, (uint64_t) ppid));
}

static int on_parent_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Watch *w = userdata;
        Parents *p = w->parents;
        pid_t ppid = w->ppid;
        unwatch(p, ppid);
        (void) children_moved(p, ppid);
        return 0;
}

static int on_defer(sd_event_source *s, void *userdata) {
        Parents *p = userdata;
        uint64_t key;
        while (hashmap_size(&p->gone) > 0) {
                size_t i = 0;
                if (!hashmap_next(&p->gone, &i, &key, NULL))
                        break;
                hashmap_remove(&p->gone, key);
                (void) children_moved(p, (pid_t) key);
        }
        return sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

static void mark_gone(Parents *p, pid_t ppid) {
        if (hashmap_replace(&p->gone, (uint64_t) ppid, (void *) 1) >= 0)
                (void) sd_event_source_set_enabled(p->defer, SD_EVENT_ONESHOT);
}

/* Whether a live child of ppid still names it as its parent: then a pidfd opened before this
 * names that parent, not a process that took its pid after it. */
static bool parent_of_a_child(Parents *p, pid_t ppid) {
        size_t n;
        const pid_t *kids = live_children(p->sink.live(p->sink.userdata), ppid, &n);
        for (size_t i = 0; i < n; i++) {
                ProcStatus st;
                if (proc_read_status(kids[i], &st) >= 0 && st.ppid == ppid)
                        return true;
        }
        return false;
}

static void log_full(Parents *p, int error) {
        if (!p->full)
                log_info_errno(error, "Watching %zu parents of processes, no more (%m): the parents of the others "
                               "are seen to change at the next full pass.", hashmap_size(&p->watched));
        p->full = true;
}

/* w's event source on the pidfd (which it owns from then on), and w in the map. */
static int watch_start(Parents *p, Watch *w, int fd) {
        int r = sd_event_add_io(p->event, &w->source, fd, EPOLLIN, on_parent_exit, w);
        if (r < 0)
                return r;
        r = sd_event_source_set_io_fd_own(w->source, true);
        if (r < 0)
                return r;
        return hashmap_put(&p->watched, (uint64_t) w->ppid, w);
}

static void watch(Parents *p, pid_t ppid) {
        if (ppid <= 1 || ppid == getpid() || hashmap_get(&p->watched, (uint64_t) ppid) || p->refused)
                return;
        if (hashmap_size(&p->watched) >= p->max_watched) {
                log_full(p, -EMFILE);
                return;
        }
        int fd = (int) syscall(SYS_pidfd_open, ppid, 0);
        if (fd < 0) {
                if (errno == ESRCH) {
                        mark_gone(p, ppid);
                        return;
                }
                if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
                        log_full(p, -errno);
                        return;
                }
                log_warning_errno(-errno, "Not watching the parents of processes (%m): a process's parent is "
                                  "seen to change at the next full pass only.");
                p->refused = true;
                return;
        }
        if (!parent_of_a_child(p, ppid)) {
                close(fd);
                mark_gone(p, ppid);
                return;
        }
        Watch *w = calloc(1, sizeof(Watch));
        if (!w) {
                close(fd);
                log_debug_errno(-ENOMEM, "Failed to watch process %d: %m", ppid);
                return;
        }
        *w = (Watch) { .parents = p, .ppid = ppid };
        int r = watch_start(p, w, fd);
        if (r < 0) {
                if (!w->source)
                        close(fd);
                watch_free(w);
                log_debug_errno(r, "Failed to watch process %d: %m", ppid);
        }
}

/* Watched while it has a child in the live forest. */
static void follow_one(Parents *p, pid_t ppid) {
        size_t n;
        if (ppid <= 0)
                return;
        (void) live_children(p->sink.live(p->sink.userdata), ppid, &n);
        if (n > 0)
                watch(p, ppid);
        else
                unwatch(p, ppid);
}

static void follow_all(Parents *p) {
        _cleanup_free_ pid_t *stale = calloc(hashmap_size(&p->watched) + 1, sizeof(pid_t));
        size_t n_stale = 0;
        uint64_t key;
        pid_t ppid;
        for (size_t i = 0; stale && hashmap_next(&p->watched, &i, &key, NULL);)
                stale[n_stale++] = (pid_t) key;
        for (size_t i = 0; i < n_stale; i++)
                follow_one(p, stale[i]);
        for (size_t i = 0; live_next_parent(p->sink.live(p->sink.userdata), &i, &ppid);)
                watch(p, ppid);
}

void parents_follow(Parents *p, const LiveChanges *c) {
        if (c->replaced) {
                follow_all(p);
                return;
        }
        for (size_t i = 0; i < c->n; i++) {
                const LiveChange *x = &c->changes[i];
                const Process *now = forest_find_process(live_now(p), x->tgid);
                switch (x->type) {
                case LIVE_PROCESS_ADDED:
                        follow_one(p, now ? now->ppid : 0);
                        break;
                case LIVE_PROCESS_UPDATED:
                        follow_one(p, x->old.ppid);
                        follow_one(p, now ? now->ppid : 0);
                        break;
                case LIVE_PROCESS_REMOVED:
                        follow_one(p, x->process ? x->process->ppid : 0);
                        break;
                default:
                        break;
                }
        }
}

size_t parents_max_watched(uint64_t nofile) {
        if (nofile == RLIM_INFINITY)
                return SIZE_MAX;
        if (nofile >= 2 * PARENTS_FD_RESERVE)
                return (size_t) (nofile - PARENTS_FD_RESERVE);
        return (size_t) nofile / 2; /* a small limit: share it */
}

int parents_new(sd_event *e, const SourceSink *sink, Parents **ret) {
        _cleanup_(parents_freep) Parents *p = calloc(1, sizeof(Parents));
        if (!p)
                return log_oom();
        p->event = sd_event_ref(e);
        p->sink = *sink;
        struct rlimit rl = { .rlim_cur = 1024 };
        (void) getrlimit(RLIMIT_NOFILE, &rl);
        p->max_watched = parents_max_watched(rl.rlim_cur);
        log_debug("Watching at most %zu parents (open file limit %" PRIu64 ").", p->max_watched,
                  (uint64_t) rl.rlim_cur);
        int r = sd_event_add_defer(e, &p->defer, on_defer, p);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the watch of parents: %m");
        r = sd_event_source_set_enabled(p->defer, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the watch of parents: %m");
        *ret = TAKE_PTR(p);
        return 0;
}

Parents *parents_free(Parents *p) {
        if (!p)
                return NULL;
        uint64_t key;
        void *value;
        for (size_t i = 0; hashmap_next(&p->watched, &i, &key, &value);)
                watch_free(value);
        hashmap_deinit(&p->watched);
        hashmap_deinit(&p->gone);
        sd_event_source_disable_unref(p->defer);
        live_batch_done(&p->batch);
        sd_event_unref(p->event);
        free(p);
        return NULL;
}
