/* source-bpf.c: the bpf backend as a source: it owns the scanner (BPF task iterators), the watch
 * (tracepoints into a ring buffer read as an sd-event io source), the lost-event check and the
 * full passes, at once or in the background
 *
 * Filter ids. The scanner numbers filters inside the kernel (a BPF map from a filter's address to
 * an id that user space never sees the address of), from the first id the state database has not
 * used. At start, the first full pass keeps the stored id of every filter that a still living
 * thread (tid and start time) held at the same depth (lib/core/infer.c): those kernel ids are then
 * translated, in every pass and every event, to the stored ones. Filters that are new keep the
 * kernel's id, which is above any stored one: ids are never reused.
 *
 * Passes in the background (the refresh, resyncs): the scan runs in a thread of its own while the
 * loop goes on reading events, applying them to the live state, storing and announcing them; the
 * sink hears when the scan begins (scan_begins), so that it keeps the batches it applies from then
 * on and applies them again on top of the scan when it is handed on: the events that came during
 * the scan, and after it until the loop took it, end on top of it, in their order. */
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>

#include "core/infer.h"
#include "core/warn-limit.h"
#include "observe/procinfo.h"
#include "observe/source-backend.h"
#include "observe/source-bpf.h"
#include "observe/scan-bpf.h"
#include "observe/watch-bpf.h"

#define LOST_CHECK_USEC (200 * 1000ULL) /* events that could not even be queued wake nobody: poll */
#define REFRESH_USEC (60 * 1000000ULL)  /* listeners and their holders are only seen by full passes */
/* Coalescing at low rates: the first event after the ring buffer was quiet for COALESCE_IDLE_USEC
 * waits COALESCE_USEC for the events that follow it (a child's filter, then its exit), so that
 * they make one batch, one transaction and one wake-up rather than one each. At higher rates the
 * loop dispatches again within COALESCE_IDLE_USEC and nothing waits. $SECTREE_COALESCE_USEC
 * replaces COALESCE_USEC (0: never wait), $SECTREE_COALESCE_IDLE_USEC COALESCE_IDLE_USEC (tests: 0,
 * so that the other events of a busy machine do not keep the source from ever waiting). */
/* The background scan's thread yields to the loop, the bus and the processes it watches: the
 * kernel gives it about a tenth of a busy CPU beside them, all of an idle one. */
#define SCAN_THREAD_NICE 10
#define COALESCE_USEC (3 * 1000ULL)
#define COALESCE_IDLE_USEC (5 * 1000ULL)

typedef struct BpfSource {
        Source source;
        BpfScanner *scanner;
        BpfWatch *watch;     /* the scanner's tracepoints: their events are the source's */
        sd_event_source *io, *lost_timer, *coalesce_timer;
        sd_event_source *more;   /* a dispatch left events in the ring buffer: read on */
        uint64_t coalesce_usec;  /* COALESCE_USEC or $SECTREE_COALESCE_USEC */
        uint64_t coalesce_idle_usec; /* COALESCE_IDLE_USEC or $SECTREE_COALESCE_IDLE_USEC */
        uint64_t last_dispatch;  /* CLOCK_MONOTONIC µs at the end of the last dispatch */
        bool coalescing;         /* the coalesce timer is armed: it reads what came meanwhile */
        uint64_t lost_seen;  /* bpf_watch_lost() as of the scan of the last stored pass */
        WatchLosses losses_logged; /* the losses as of the last time the log said so */
        WarnLimit warn_lost; /* that warning, at most once per WARN_LIMIT_INTERVAL_USEC */
        Hashmap public_ids;  /* kernel id -> the stored id it keeps */
        bool ids_kept;       /* the stored ids were matched (first pass) */
        LiveBatch batch;     /* the events of one dispatch */
        int batch_error;
        /* A pass scanned in the background (background_*()): */
        struct {
                pthread_t thread;
                bool running;        /* started, not joined yet */
                bool done;           /* joined: forest and error hold its result, not yet handed on */
                int efd;             /* the thread writes it when its scan is done */
                sd_event_source *done_source;
                ScanOptions opts;
                Hashmap dropped;     /* public ids the live forest kept without their program, at the start */
                Forest *forest;
                int error;
                const char *reason;
                uint64_t lost;       /* bpf_watch_lost() before the scan started */
        } bg;
        /* Snapshots' scanner (scan_detached, in their worker threads): one-shot, loaded by the
         * first snapshot and kept, since loading it costs more than a pass; one pass at a time. */
        pthread_mutex_t detached_lock;
        BpfScanner *detached;
        /* What the live scanner's last pass knew of listener fds (bpf_scanner_listener_mark()):
         * set on the loop after each pass, read by the detached scans. */
        pthread_mutex_t mark_lock;
        BpfListenerMark listener_mark;
} BpfSource;

static BpfSource *bpf_source(Source *s) {
        return (BpfSource *) s;
}

/* ---- ids ---- */

static const Forest *live_now(BpfSource *b) {
        return live_forest(b->source.sink.live(b->source.sink.userdata));
}

static uint64_t public_id(const BpfSource *b, uint64_t kernel_id) {
        void *v = kernel_id ? hashmap_get(&b->public_ids, kernel_id) : NULL;
        return v ? (uint64_t) (uintptr_t) v : kernel_id;
}

/* A pass's kernel ids made public. The first pass keeps the ids the live forest (the stored state,
 * at start) has for the same filters; later ones translate as that pass decided, forgetting the
 * filters that are gone (a kernel id is never reused). */
static int pass_make_ids_public(BpfSource *b, Forest *f) {
        if (!b->ids_kept) {
                int r = infer_adopt_ids(live_now(b), f, false, NULL, &b->public_ids);
                if (r < 0)
                        return log_error_errno(r, "Failed to keep the stored filter ids: %m");
                b->ids_kept = true;
                log_debug("Kept the ids of %zu filters from the stored state.", hashmap_size(&b->public_ids));
                return 0;
        }
        if (hashmap_size(&b->public_ids) == 0)
                return 0;
        _cleanup_free_ uint64_t *ids = calloc(f->n_filters + 1, sizeof(uint64_t));
        _cleanup_(hashmap_deinit) Hashmap still = {};
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_filters; i++) {
                uint64_t k = f->filters[i]->id;
                ids[i] = public_id(b, k);
                if (ids[i] != k && hashmap_put(&still, k, (void *) (uintptr_t) ids[i]) < 0)
                        return -ENOMEM;
        }
        hashmap_deinit(&b->public_ids);
        b->public_ids = still;
        still = (Hashmap) {};
        return forest_set_ids(f, ids);
}

/* A listener's id is its filter's (the kernel allows one listener per filter): the same in every
 * pass and in the events that make one, so that a pass over an unchanged machine changes no id. */
static int pass_listener_ids(Forest *f) {
        for (size_t i = 0; i < f->n_listeners; i++)
                f->listeners[i]->id = f->listeners[i]->filter_id;
        f->linked = false;
        return forest_link(f, NULL);
}

/* ---- events ---- */

static LiveTask task_from_watch(const BpfSource *b, const WatchTask *w) {
        LiveTask t = {
                .tid = w->tid, .tgid = w->tgid, .ppid = w->ppid, .start_time = w->start_time, .mode = w->mode,
                .filter_id = public_id(b, w->filter_id), .no_new_privs = w->no_new_privs, .uid = w->uid, .gid = w->gid,
        };
        memcpy(t.comm, w->comm, sizeof(t.comm));
        return t;
}

/* The installer's executable, read from /proc after the fact: the process may have exec'd since
 * (bwrap installs filters, then execs the sandbox's command). exec changes the executable before
 * the name: a name still as the event had it says no exec came before the read. Otherwise (or a
 * rename) the executable is left unknown rather than wrong. */
static void installer_read_exe(const WatchTask *t, char **ret) {
        char comm[16];
        if (proc_read_exe(t->tgid, ret) < 0)
                return;
        if (proc_read_comm(t->tid, comm) < 0 || strncmp(comm, t->comm, sizeof(comm)) != 0) {
                free(*ret);
                *ret = NULL;
        }
}

/* One watch event, with what it needs from /proc, into the batch. */
static int on_watch_event(const WatchEvent *w, void *userdata) {
        BpfSource *b = userdata;
        LiveEvent e = { .task = task_from_watch(b, &w->task), .mono_nsec = w->ktime_ns };
        _cleanup_free_ char *exe = NULL;
        bool known = forest_find_process(live_now(b), w->task.tgid);
        int r;

        switch (w->type) {
        case WATCH_TASK_NEW:
        case WATCH_TASK_MODE:
                e.type = LIVE_EVENT_TASK;
                e.task.forked = w->type == WATCH_TASK_NEW;
                if (!known && w->task.mode != TASK_MODE_DISABLED)
                        (void) proc_read_exe(w->task.tgid, &exe);
                break;
        case WATCH_TASK_TSYNC: /* its process's executable comes with the filter's event */
        case WATCH_TASK_ESCAPED:
                e.type = LIVE_EVENT_TASK;
                break;
        case WATCH_TASK_COMM:
                e.type = LIVE_EVENT_COMM;
                break;
        case WATCH_TASK_EXEC:
                e.type = LIVE_EVENT_EXEC;
                (void) proc_read_exe(w->task.tgid, &exe);
                break;
        case WATCH_TASK_EXIT:
                e.type = LIVE_EVENT_EXIT;
                e.task.group_dead = w->task.group_dead;
                break;
        case WATCH_LISTENER_CLOSED:
                e.type = LIVE_EVENT_LISTENER_CLOSED;
                e.filter = (LiveFilter) { .id = public_id(b, w->listener.filter_id), .listener_fd = w->listener.fd,
                                          .listener_held = true, .has_listener = !w->listener.last };
                break;
        case WATCH_FILTER_ATTACHED:
                e.type = LIVE_EVENT_FILTER;
                e.filter = (LiveFilter) {
                        .id = public_id(b, w->filter.id), .parent_id = public_id(b, w->filter.parent_id),
                        .insns = w->filter.insns, .len = w->filter.len, .log = w->filter.log,
                        .wait_killable_recv = w->filter.wait_killable_recv, .has_listener = w->filter.has_listener,
                        .identity = IDENTITY_EXACT, .listener_held = w->filter.listener_fd >= 0,
                        .listener_fd = w->filter.listener_fd,
                };
                /* With TSYNC, the threads it reached follow as WATCH_TASK_TSYNC events. */
                if (!known)
                        installer_read_exe(&w->task, &exe);
                break;
        default:
                return 0;
        }
        e.task.exe = exe;
        r = live_batch_add(&b->batch, &e);
        if (r < 0)
                return b->batch_error = r;
        return 0;
}

/* The installer's executable was read from /proc when its event was handled, which can be after
 * the process exec'd (bwrap installs filters, then execs the sandbox's command): when an exec of
 * the same process follows in the batch, what was read is the new program's, not the installer's,
 * and is left out. The exec event brings the process's new executable itself. */
static int drop_stale_installer_exes(LiveBatch *batch) {
        _cleanup_(hashmap_deinit) Hashmap exec_later = {}; /* tgid -> 1: an exec follows */
        for (size_t i = batch->n; i-- > 0;) {
                LiveEvent *e = &batch->events[i];
                if (e->type == LIVE_EVENT_EXEC && hashmap_replace(&exec_later, (uint64_t) e->task.tgid, (void *) 1) < 0)
                        return -ENOMEM;
                if (e->type == LIVE_EVENT_FILTER && e->task.exe && hashmap_get(&exec_later, (uint64_t) e->task.tgid))
                        e->task.exe = NULL; /* its copy is freed with the batch */
        }
        return 0;
}

/* ---- losses ---- */

/* Say why events were lost since the log last said so: the ring buffer was full, a filter had no
 * id, ... (at most once per interval: the counts add up meanwhile). */
static void log_lost(BpfSource *b) {
        WatchLosses now;
        unsigned more;
        bpf_watch_losses(b->watch, &now);
        if (watch_losses_total(&now) == watch_losses_total(&b->losses_logged) ||
            !warn_limit_pass(&b->warn_lost, now_usec(CLOCK_MONOTONIC), &more))
                return;
        _cleanup_free_ char *why = watch_losses_describe(&b->losses_logged, &now);
        log_info("Events were lost (%s), resynchronising.", why ?: "?");
        b->losses_logged = now;
}

/* After every batch with the skipped runs as last counted (the count costs a system call for each
 * program: a batch at a low rate paid more for it than for its commit); the timer counts them. */
static void check_lost(BpfSource *b, bool count_skipped) {
        uint64_t lost = count_skipped ? bpf_watch_lost(b->watch) : bpf_watch_lost_cached(b->watch);
        if (lost == b->lost_seen)
                return;
        log_lost(b);
        b->source.sink.resync(b->source.sink.userdata, "lost-events");
}

static int on_lost_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        check_lost(userdata, true);
        (void) sd_event_source_set_time_relative(s, LOST_CHECK_USEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

/* One dispatch of the ring buffer (bounded: the rest waits for the next loop iteration), one
 * batch. Events that could not be turned into a batch are events lost. */
static void watch_dispatch(BpfSource *b) {
        b->batch_error = 0;
        int r = bpf_watch_dispatch(b->watch);
        if (r < 0) {
                log_warning_errno(r, "Reading events failed (%m), resynchronising.");
                b->source.sink.resync(b->source.sink.userdata, "lost-events");
        } else if (b->batch.n > 0 && drop_stale_installer_exes(&b->batch) < 0) {
                log_oom();
                b->source.sink.resync(b->source.sink.userdata, "lost-events");
        } else if (b->batch.n > 0)
                (void) b->source.sink.apply(b->source.sink.userdata, &b->batch); /* the manager handles failures */
        live_batch_clear(&b->batch);
        check_lost(b, false);
        b->last_dispatch = now_usec(CLOCK_MONOTONIC);
        /* The ring buffer wakes its reader for the first record after it caught up only: what a
         * bounded dispatch left is read on in the next iteration, not announced again. */
        if (bpf_watch_pending(b->watch))
                (void) sd_event_source_set_enabled(b->more, SD_EVENT_ONESHOT);
}

/* Wait a little for what follows the first event after a quiet time. The io source is
 * edge-triggered and the ring buffer wakes its reader only for the first record after it caught up,
 * so nothing wakes the loop meanwhile, without turning the source off and on (two system calls a
 * batch, which at low rates are a batch's share of the wake-up). */
static int coalesce_arm(BpfSource *b) {
        int r = sd_event_source_set_time_relative(b->coalesce_timer, b->coalesce_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(b->coalesce_timer, SD_EVENT_ONESHOT);
        if (r < 0)
                return r;
        b->coalescing = true;
        return 0;
}

static int on_watch_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        BpfSource *b = userdata;
        if (b->coalescing)
                return 0; /* the timer reads it */
        if (b->coalesce_usec > 0 && now_usec(CLOCK_MONOTONIC) - b->last_dispatch >= b->coalesce_idle_usec &&
            coalesce_arm(b) >= 0)
                return 0;
        watch_dispatch(b);
        return 0;
}

/* The events that came meanwhile, in one batch. */
static int on_coalesce_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        BpfSource *b = userdata;
        b->coalescing = false;
        watch_dispatch(b);
        return 0;
}

static int on_more(sd_event_source *s, void *userdata) {
        BpfSource *b = userdata;
        if (!b->coalescing)
                watch_dispatch(b);
        return 0;
}

/* ---- passes ---- */

/* After each pass of the live scanner (on the loop): what it knows of listener fds now. */
static void listener_mark_publish(BpfSource *b) {
        BpfListenerMark m = bpf_scanner_listener_mark(b->scanner);
        (void) pthread_mutex_lock(&b->mark_lock);
        b->listener_mark = m;
        (void) pthread_mutex_unlock(&b->mark_lock);
}

/* In a detached scan's thread: whether no listener fd exists, as the live scanner can tell (its
 * last task_file pass found none, and its tracepoint has seen no seccomp(2) make one since). */
static bool detached_no_listeners(void *userdata) {
        BpfSource *b = userdata;
        (void) pthread_mutex_lock(&b->mark_lock);
        BpfListenerMark m = b->listener_mark;
        (void) pthread_mutex_unlock(&b->mark_lock);
        return bpf_scanner_listener_mark_holds(b->scanner, &m);
}

/* The live scanner's pass, on the loop (its callers') or in the background thread. */
static int live_scanner_scan(Source *s, const ScanOptions *opts, Forest **ret) {
        int r = bpf_scanner_scan(bpf_source(s)->scanner, opts, ret); /* logs its failures */
        listener_mark_publish(bpf_source(s));
        if (r < 0)
                return r;
        (*ret)->snapshot.consistency = SNAPSHOT_CONSISTENCY_ITERATOR;
        return 0;
}

static void background_join(BpfSource *b);

/* On the loop: a scan in the background has the scanner until it ends. */
static int bpf_scan(Source *s, const ScanOptions *opts, Forest **ret) {
        background_join(bpf_source(s));
        return live_scanner_scan(s, opts, ret);
}

/* The scan of bpf_scan_detached(), its lock held. */
static int detached_scan_locked(BpfSource *b, const ScanOptions *opts, Forest **ret) {
        int r;

        if (!b->detached) {
                r = bpf_scanner_new_with_options(&(BpfScannerOptions) { .oneshot = true }, &b->detached);
                if (r < 0)
                        return log_error_errno(r, "Failed to load the BPF programs of a scan: %m");
                if (!b->source.oneshot)
                        bpf_scanner_set_no_listeners(b->detached, detached_no_listeners, b);
        }
        r = bpf_scanner_scan(b->detached, opts, ret); /* logs its failures */
        if (r < 0 || !bpf_scanner_reusable(b->detached))
                b->detached = bpf_scanner_free(b->detached);
        return r;
}

/* With a one-shot scanner of its own, kept for the next call: nothing of the live source is
 * touched. A scanner that failed, or whose pass did not end with its id map empty, is dropped;
 * the next call loads a fresh one. */
static int bpf_scan_detached(Source *s, const ScanOptions *opts, Forest **ret) {
        BpfSource *b = bpf_source(s);

        (void) pthread_mutex_lock(&b->detached_lock);
        int r = detached_scan_locked(b, opts, ret);
        (void) pthread_mutex_unlock(&b->detached_lock);
        if (r < 0)
                return r;
        (*ret)->snapshot.consistency = SNAPSHOT_CONSISTENCY_ITERATOR;
        return 0;
}

int source_scan_programs_oneshot(const ScanOptions *opts, Forest **ret) {
        _cleanup_(bpf_scanner_freep) BpfScanner *s = NULL;
        int r = bpf_scanner_new_with_options(&(BpfScannerOptions) { .oneshot = true, .no_argv = true, .once = true }, &s);
        if (r < 0)
                return r; /* the loader logged why, at debug level: the caller decides what it means */
        return bpf_scanner_scan(s, opts, ret); /* logs its failures */
}

/* Whether the live forest keeps the filter of that kernel id without its program (known only once
 * the first pass has made its ids public). */
static bool live_dropped(uint64_t kernel_id, void *userdata) {
        BpfSource *b = userdata;
        const Filter *x = b->ids_kept ? forest_find_filter(live_now(b), public_id(b, kernel_id)) : NULL;
        return x && x->over_budget;
}

/* The whole machine, ready for the live state; *ret_lost is what was lost before it started:
 * whatever is lost while it runs comes after, and asks for another pass. */
static int pass_scan(BpfSource *b, Forest **ret, uint64_t *ret_lost) {
        ScanOptions opts = { .root = 0, .include_argv = false, .include_exe = true, .allow_dropped = true,
                             .dropped = live_dropped, .dropped_userdata = b,
                             .budget_insns_per_uid = live_budget_insns(b->source.sink.live(b->source.sink.userdata)) };
        _cleanup_(forest_freep) Forest *f = NULL;

        *ret_lost = bpf_watch_lost(b->watch);
        int r = live_scanner_scan(&b->source, &opts, &f);
        if (r < 0)
                return r;
        r = source_pass_prepare(&b->source, f);
        if (r < 0)
                return r;
        r = pass_make_ids_public(b, f);
        if (r < 0)
                return r;
        r = pass_listener_ids(f);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

static int pass_hand_on(BpfSource *b, Forest *f, const char *reason, uint64_t lost) {
        int r = b->source.sink.replace(b->source.sink.userdata, f, reason);
        if (r >= 0) {
                b->lost_seen = lost; /* what was lost before the scan is in it */
                /* The scanner keeps no program the live forest does not (its uid is over budget). */
                bpf_scanner_drop_programs(b->scanner, live_dropped, b);
        }
        check_lost(b, true);
        return r;
}

/* ---- passes in the background ---- */

/* In the scan's thread: whether the live forest kept the filter of that kernel id without its
 * program, as it was when the pass started. public_ids is only written on the loop by a pass
 * handed on, never while a scan runs in the background. */
static bool background_dropped(uint64_t kernel_id, void *userdata) {
        BpfSource *b = userdata;
        return hashmap_get(&b->bg.dropped, public_id(b, kernel_id)) != NULL;
}

/* On the loop, at the start: the filters the live forest keeps without their program. */
static int background_collect_dropped(BpfSource *b) {
        const Live *live = b->source.sink.live(b->source.sink.userdata);
        const Forest *f = live_forest(live);

        hashmap_clear(&b->bg.dropped);
        if (live_counts(live).over_budget == 0)
                return 0;
        for (size_t i = 0; i < f->n_filters; i++)
                if (f->filters[i]->over_budget && hashmap_replace(&b->bg.dropped, f->filters[i]->id, (void *) 1) < 0)
                        return -ENOMEM;
        return 0;
}

static void sink_scan_begins(BpfSource *b) {
        if (b->source.sink.scan_begins)
                b->source.sink.scan_begins(b->source.sink.userdata);
}

static void sink_scan_dropped(BpfSource *b, int error) {
        if (b->source.sink.scan_dropped)
                b->source.sink.scan_dropped(b->source.sink.userdata, error);
}

static void *background_thread(void *userdata) {
        BpfSource *b = userdata;
        Forest *f = NULL;
        if (setpriority(PRIO_PROCESS, (id_t) gettid(), SCAN_THREAD_NICE) < 0)
                log_debug_errno(-errno, "Could not lower the scan thread's priority: %m");
        int r = live_scanner_scan(&b->source, &b->bg.opts, &f);
        if (r >= 0) {
                _cleanup_free_ char *error = NULL;
                forest_drop_unfiltered_processes(f);
                r = forest_link(f, &error);
                if (r < 0)
                        log_error_errno(r, "Scanned forest is inconsistent (%s): %m", error ?: "?");
        }
        if (r < 0)
                f = forest_free(f);
        if (b->source.scan_thread_hook)
                b->source.scan_thread_hook(b->source.scan_thread_userdata);
        b->bg.forest = f;
        b->bg.error = r;
        (void) eventfd_write(b->bg.efd, 1);
        return NULL;
}

/* Wait for the thread (the loop needs the scanner, or a pass at once replaces this one): its
 * result stays for on_background_done(), unless the caller drops it. */
static void background_join(BpfSource *b) {
        if (!b->bg.running)
                return;
        (void) pthread_join(b->bg.thread, NULL);
        b->bg.running = false;
        b->bg.done = true;
}

static bool background_busy(const BpfSource *b) {
        return b->bg.running || b->bg.done;
}

/* A pass at once replaces the one in the background: the sink keeps nothing for it any more. */
static void background_drop(BpfSource *b) {
        if (!background_busy(b))
                return;
        background_join(b);
        b->bg.forest = forest_free(b->bg.forest);
        b->bg.done = false;
        eventfd_t v;
        (void) eventfd_read(b->bg.efd, &v);
        sink_scan_dropped(b, 0);
}

/* The scan as pass_scan() makes it ready, on the loop: the test hook, the ids made public. */
static int background_finish(BpfSource *b, Forest *f) {
        if (b->source.after_scan_hook)
                b->source.after_scan_hook(b->source.after_scan_userdata);
        int r = pass_make_ids_public(b, f);
        if (r < 0)
                return r;
        return pass_listener_ids(f);
}

static int on_background_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        BpfSource *b = userdata;
        eventfd_t v;

        (void) eventfd_read(fd, &v);
        background_join(b);
        if (!b->bg.done)
                return 0; /* dropped meanwhile */
        b->bg.done = false;
        _cleanup_(forest_freep) Forest *f = TAKE_PTR(b->bg.forest);
        int r = b->bg.error;
        if (r >= 0)
                r = background_finish(b, f);
        if (r < 0) {
                sink_scan_dropped(b, r);
                check_lost(b, true);
                return 0;
        }
        (void) pass_hand_on(b, TAKE_PTR(f), b->bg.reason, b->bg.lost); /* failures: the manager retries */
        return 0;
}

/* With every signal blocked, as the store's checkpoint thread: the loop reads SIGTERM and SIGINT
 * from a signalfd, and a signal the thread took would get its default action. */
static int background_spawn(BpfSource *b) {
        sigset_t all, old;
        (void) sigfillset(&all);
        int r = -pthread_sigmask(SIG_SETMASK, &all, &old);
        if (r < 0)
                return r;
        r = -pthread_create(&b->bg.thread, NULL, background_thread, b);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}

static int background_start(BpfSource *b, const char *reason) {
        if (background_busy(b))
                return 0; /* one is under way */
        b->bg.opts = (ScanOptions) {
                .root = 0, .include_argv = false, .include_exe = true, .allow_dropped = true,
                .dropped = background_dropped, .dropped_userdata = b,
                .budget_insns_per_uid = live_budget_insns(b->source.sink.live(b->source.sink.userdata)),
        };
        int r = background_collect_dropped(b);
        if (r < 0)
                return log_oom();
        b->bg.reason = reason;
        b->bg.error = 0;
        b->bg.lost = bpf_watch_lost(b->watch);
        /* From here on, what the loop applies is applied again on top of the scan. */
        sink_scan_begins(b);
        r = background_spawn(b);
        if (r < 0) {
                sink_scan_dropped(b, r);
                return log_error_errno(r, "Failed to start the scan's thread: %m");
        }
        b->bg.running = true;
        return 0;
}

static int bpf_full_pass_background(Source *s, const char *reason) {
        return background_start(bpf_source(s), reason);
}

static int bpf_full_pass(Source *s, const char *reason) {
        BpfSource *b = bpf_source(s);
        background_drop(b);
        Forest *f;
        uint64_t lost;
        int r = pass_scan(b, &f, &lost);
        if (r < 0)
                return r;
        return pass_hand_on(b, f, reason, lost);
}

/* ---- the object ---- */

/* $name in µs (at most a second), or fallback. */
static uint64_t usec_from_env(const char *name, uint64_t fallback) {
        const char *e = secure_getenv(name);
        char *end;
        unsigned long long v;

        if (!e)
                return fallback;
        errno = 0;
        v = strtoull(e, &end, 10);
        if (errno != 0 || end == e || *end || v > 1000000) {
                log_warning("Ignoring invalid $%s: %s", name, e);
                return fallback;
        }
        return v;
}

static int bpf_start(Source *s) {
        BpfSource *b = bpf_source(s);
        int r = bpf_watch_start(b->watch, on_watch_event, b);
        if (r < 0)
                return log_error_errno(r, "Failed to start watching: %m");
        r = sd_event_add_io(s->event, &b->io, bpf_watch_fd(b->watch), EPOLLIN | EPOLLET, on_watch_io, b);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the event ring buffer: %m");
        r = sd_event_add_defer(s->event, &b->more, on_more, b);
        if (r >= 0)
                r = sd_event_source_set_enabled(b->more, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to create the ring buffer's read-on source: %m");
        r = sd_event_add_time_relative(s->event, &b->lost_timer, CLOCK_MONOTONIC, LOST_CHECK_USEC, 0, on_lost_timer, b);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the lost-events timer: %m");
        /* On a clock of its own (sd-event keeps a timer fd per clock): the lost-events timer's fd is
         * not set again around every batch, and once it fired and is off, its own is not either. */
        r = sd_event_add_time(s->event, &b->coalesce_timer, CLOCK_BOOTTIME, 0, 1, on_coalesce_timer, b);
        if (r >= 0)
                r = sd_event_source_set_enabled(b->coalesce_timer, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to create the coalescing timer: %m");
        b->coalesce_usec = usec_from_env("SECTREE_COALESCE_USEC", COALESCE_USEC);
        b->coalesce_idle_usec = usec_from_env("SECTREE_COALESCE_IDLE_USEC", COALESCE_IDLE_USEC);
        b->bg.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (b->bg.efd < 0)
                return log_error_errno(-errno, "Failed to make the scan thread's eventfd: %m");
        r = sd_event_add_io(s->event, &b->bg.done_source, b->bg.efd, EPOLLIN, on_background_done, b);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the scan thread's eventfd: %m");
        b->lost_seen = bpf_watch_lost(b->watch);
        bpf_watch_losses(b->watch, &b->losses_logged);
        return 0;
}

static bool bpf_pass_waiting(const Source *s) {
        const BpfSource *b = (const BpfSource *) s;
        return background_busy(b);
}

static bool bpf_events_pending(Source *s) {
        return bpf_watch_pending(bpf_source(s)->watch);
}

static uint64_t bpf_lost(Source *s) {
        return bpf_watch_lost(bpf_source(s)->watch);
}

static void bpf_free(Source *s) {
        BpfSource *b = bpf_source(s);
        background_join(b);
        forest_free(b->bg.forest);
        hashmap_deinit(&b->bg.dropped);
        sd_event_source_disable_unref(b->bg.done_source);
        closep(&b->bg.efd);
        sd_event_source_disable_unref(b->io);
        sd_event_source_disable_unref(b->more);
        sd_event_source_disable_unref(b->lost_timer);
        sd_event_source_disable_unref(b->coalesce_timer);
        live_batch_done(&b->batch);
        hashmap_deinit(&b->public_ids);
        bpf_scanner_free(b->scanner);
        bpf_scanner_free(b->detached);
        (void) pthread_mutex_destroy(&b->detached_lock);
        (void) pthread_mutex_destroy(&b->mark_lock);
        sd_event_unref(s->event);
        free(b);
}

static const SourceVTable bpf_vtable = {
        .free = bpf_free,
        .scan = bpf_scan,
        .scan_detached = bpf_scan_detached,
        .scan_programs = bpf_scan_detached,
        .start = bpf_start,
        .full_pass = bpf_full_pass,
        .full_pass_background = bpf_full_pass_background,
        .pass_waiting = bpf_pass_waiting,
        .events_pending = bpf_events_pending,
        .lost = bpf_lost,
        .identity = IDENTITY_EXACT,
        .refresh_usec = REFRESH_USEC,
        .announces_passes = false,
};

int source_bpf_new(const SourceOptions *o, Source **ret) {
        BpfSource *b = calloc(1, sizeof(BpfSource));
        if (!b)
                return log_oom();
        (void) pthread_mutex_init(&b->detached_lock, NULL);
        (void) pthread_mutex_init(&b->mark_lock, NULL);
        b->bg.efd = -1;
        b->source = (Source) { .vtable = &bpf_vtable, .backend = BACKEND_BPF, .oneshot = o->oneshot, .first_id = o->first_id };
        BpfScannerOptions so = { .first_id = o->first_id, .oneshot = o->oneshot };
        int r = bpf_scanner_new_with_options(&so, &b->scanner);
        if (r < 0) {
                bpf_free(&b->source);
                return log_error_errno(r, "Failed to load the BPF programs: %m (--backend=ptrace works without BPF)");
        }
        b->watch = bpf_scanner_watch(b->scanner);
        *ret = &b->source;
        return 0;
}
