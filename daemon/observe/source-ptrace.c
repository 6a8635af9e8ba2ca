/* source-ptrace.c: the ptrace backend as a source: passes with PTRACE_SECCOMP_GET_FILTER, the proc
 * connector for events, and the subtree rescans those events ask for
 *
 * There is no BPF here, so nothing sees a filter being installed: the proc connector only says
 * that a task forked, exec'd, exited or renamed itself.
 *   - exit, comm: an event at once.
 *   - fork, exec: queued. The source waits a little (RESCAN_DEBOUNCE_USEC) so that a burst of them
 *     costs one rescan, then picks the processes whose subtrees need reading, dumps each subtree
 *     with ptrace_scan(root = pid), and hands on the events that make the live forest hold it
 *     (infer_merge(): the full pass's inference, keeping the ids of unchanged filters).
 * More than MAX_SUBTREE_RESCANS subtrees at once, or events lost because the socket overflowed,
 * ask for a full pass instead. A filter installed by a task that then neither forks nor execs
 * produces no event at all: the periodic full pass (REFRESH_USEC) is what finds it.
 *
 * What this does not see: a task that lives less than the debounce (it is gone when its subtree
 * is read); sharing that a full pass would no longer infer because a process's parent died (the
 * live forest keeps what it knew until the next full pass); listeners, which only full passes
 * collect. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <time.h>

#include "core/infer.h"
#include "observe/privileges.h"
#include "observe/procinfo.h"
#include "observe/scan-ptrace.h"
#include "observe/source-backend.h"
#include "observe/source-ptrace.h"
#include "observe/watch-proc.h"

#define REFRESH_USEC (5 * 1000000ULL)
#define RESCAN_DEBOUNCE_USEC (30 * 1000ULL) /* collect a burst of events, rescan once */
#define MAX_PENDING 4096                     /* more events than this between two rescans: a full pass */
#define HOLD_GATE_TRIES 3000                  /* $SECTREE_TEST_PTRACE_SCAN_HOLD: 30 s at most */
#define PASS_FIRST_USEC (1000 * 1000ULL)     /* a snapshot's scan lets a queued pass go first this long at most */
#define MAX_SUBTREE_RESCANS 8                /* each one reads all of /proc: beyond this a full pass is cheaper */

typedef struct PendingRescan {
        ProcEventType type;
        pid_t tid, tgid, parent_tid, parent_tgid;
} PendingRescan;

typedef struct PtraceSource {
        Source source;
        ProcWatch *watch; /* NULL: not watching (changes are seen by the periodic pass only) */
        sd_event_source *io, *rescan_timer;
        uint64_t lost_seen; /* proc_watch_lost() as of the last stored pass */
        PendingRescan *pending;
        size_t n_pending, n_pending_allocated;
        bool pending_burst;  /* too many to remember: the next flush asks for a full pass */
        uint64_t rescan_cost_usec, rescan_end_mono; /* the next rescan waits as long as the last took */
        uint64_t last_id;    /* the last filter id handed out */
        bool passed;         /* a full pass was stored: the ids of equal filters may be kept by bytes */
        LiveBatch batch;
        /* Held by every ptrace scan: the loop's passes and rescans, and snapshots' in worker
         * threads (two tracers cannot seize one task at once). The loop never waits for it: a rescan
         * that finds it taken waits for its next turn; a full pass is queued (pass_queued), the scan
         * holding the lock wakes the loop (wake_fd) when it lets go, and snapshot scans let a queued
         * pass go first (pass_ran; PASS_FIRST_USEC at most). */
        pthread_mutex_t lock;
        pthread_cond_t pass_ran;
        atomic_bool pass_queued;
        int wake_fd;                 /* eventfd, -1 before start */
        sd_event_source *wake;
        const char *queued_reason;
        const char *hold_dir;        /* $SECTREE_TEST_PTRACE_SCAN_HOLD, see snapshot_scan_hold() */
        /* Threads whose last full pass could not read them (another tracer held them, they did
         * not stop in time): the live forest keeps their last known state (keep_unreadable()). */
        Hashmap stale;               /* tid -> (void *) 1 */
} PtraceSource;

static PtraceSource *ptrace_source(Source *s) {
        return (PtraceSource *) s;
}

static const Forest *live_now(PtraceSource *p) {
        return live_forest(p->source.sink.live(p->source.sink.userdata));
}

/* A scan, the lock held by the caller; the threads it could not read in *ret_bad when that is not
 * NULL. */
static int ptrace_scan_locked(Source *s, const ScanOptions *opts, Forest **ret, UnreadableTask **ret_bad,
                              size_t *ret_n_bad) {
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        if (s->oneshot)
                return ptrace_scan_reported(opts, ret);
        int r = ptrace_scan(opts, ret, &bad, &n_bad);
        if (r < 0)
                return r; /* logged by the scan, once its tasks run again */
        for (size_t i = 0; i < n_bad; i++)
                log_debug_errno(bad[i].error, "Could not read the filters of thread %d: %m", bad[i].tid);
        if (ret_bad) {
                *ret_bad = TAKE_PTR(bad);
                *ret_n_bad = n_bad;
        }
        return 0;
}

/* A scan with no loop to keep going (`sectreed scan`). */
static int ptrace_scan_logged(Source *s, const ScanOptions *opts, Forest **ret) {
        PtraceSource *p = ptrace_source(s);
        (void) pthread_mutex_lock(&p->lock);
        int r = ptrace_scan_locked(s, opts, ret, NULL, NULL);
        (void) pthread_mutex_unlock(&p->lock);
        return r;
}

/* A queued pass can take the lock now: the loop runs it (on_wake()). */
static void wake_loop(PtraceSource *p) {
        uint64_t one = 1;
        if (p->wake_fd >= 0 && atomic_load(&p->pass_queued))
                while (write(p->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR)
                        ;
}

/* For the tests only: with $SECTREE_TEST_PTRACE_SCAN_HOLD set to a directory, a snapshot's scan
 * that holds the lock creates DIR/held and waits until DIR/go exists (30 s at most). */
static void snapshot_scan_hold(PtraceSource *p) {
        if (!p->hold_dir)
                return;
        char held[PATH_MAX], go[PATH_MAX];
        (void) snprintf(held, sizeof(held), "%s/held", p->hold_dir);
        (void) snprintf(go, sizeof(go), "%s/go", p->hold_dir);
        _cleanup_close_ int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        for (unsigned i = 0; i < HOLD_GATE_TRIES && access(go, F_OK) < 0; i++)
                (void) usleep(10 * 1000);
}

/* With the lock: let a pass the loop queued go first, for PASS_FIRST_USEC at most (a loop that is
 * stopping runs no pass, and must not wait for this thread in vain). */
static void let_queued_pass_go_first(PtraceSource *p) {
        struct timespec deadline;
        (void) clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += PASS_FIRST_USEC / 1000000ULL;
        while (atomic_load(&p->pass_queued)) {
                wake_loop(p); /* the lock is free while this waits: the pass may take it */
                if (pthread_cond_timedwait(&p->pass_ran, &p->lock, &deadline) == ETIMEDOUT)
                        return;
        }
}

/* A snapshot's scan, in its worker thread: after any pass the loop queued. */
static int ptrace_scan_snapshot(Source *s, const ScanOptions *opts, Forest **ret) {
        PtraceSource *p = ptrace_source(s);
        (void) pthread_mutex_lock(&p->lock);
        let_queued_pass_go_first(p);
        snapshot_scan_hold(p);
        int r = ptrace_scan_locked(s, opts, ret, NULL, NULL);
        (void) pthread_mutex_unlock(&p->lock);
        wake_loop(p);
        return r;
}

/* ---- passes ---- */

static int pass_hand_on(PtraceSource *p, Forest *f, const char *reason, uint64_t lost) {
        int r = p->source.sink.replace(p->source.sink.userdata, f, reason);
        if (r >= 0) {
                /* What happened before this pass is in it: queued rescans and lost events too. */
                p->n_pending = 0;
                p->pending_burst = false;
                p->lost_seen = lost;
        }
        return r;
}

/* Take the lock for a full pass on the loop, or queue the pass when a snapshot's scan holds it:
 * returns false when queued. Before the loop runs (the start-up pass) there is no snapshot. */
static bool pass_lock(PtraceSource *p, const char *reason) {
        if (!p->wake) {
                (void) pthread_mutex_lock(&p->lock);
                return true;
        }
        if (pthread_mutex_trylock(&p->lock) == 0)
                return true;
        if (!atomic_load(&p->pass_queued) || reason)
                p->queued_reason = reason;
        atomic_store(&p->pass_queued, true);
        /* The scan may have let go before it saw the flag, and then woke nobody. */
        if (pthread_mutex_trylock(&p->lock) == 0)
                return true;
        log_debug("A snapshot is being scanned: the full pass (%s) runs when it lets go.", reason ?: "start");
        return false;
}

/* With the lock: a queued pass is this one, and the snapshot scans waiting for it may follow. */
static int pass_scan_locked(PtraceSource *p, Forest **ret, UnreadableTask **ret_bad, size_t *ret_n_bad) {
        ScanOptions opts = { .root = 0, .include_argv = false, .include_exe = true };
        if (atomic_exchange(&p->pass_queued, false))
                (void) pthread_cond_broadcast(&p->pass_ran);
        int r = ptrace_scan_locked(&p->source, &opts, ret, ret_bad, ret_n_bad);
        (void) pthread_mutex_unlock(&p->lock);
        return r;
}

/* ---- threads a pass could not read ----
 *
 * A thread that another tracer holds (strace, a debugger, a second ptrace observer seizing it at
 * that moment) or that does not stop in time cannot be read, but it is still there and its chain
 * has not shrunk (a chain only grows). A full pass does not drop it: its last known state (its
 * process, thread and chain, as the live forest has them) goes into the pass, with the same filter
 * ids, and the thread is marked stale until a pass reads it again. So it neither leaves the view
 * nor comes back with new ids, and two ptrace observers do not make each other's views flap. A
 * thread that is gone, or whose tid now names another task (start time), is not kept. */

/* Its listener, if any, comes with the next full read. */
static int keep_filter(Forest *f, const Filter *x) {
        if (forest_find_filter(f, x->id))
                return 0; /* the pass has it: the same object (ids are the live forest's by now) */
        return forest_add_filter_copy(f, x, NULL);
}

static int keep_process(Forest *f, const Process *lp, Process **ret) {
        Process *fp = forest_find_process(f, lp->pid);
        if (fp) {
                *ret = fp;
                return 0;
        }
        int r = forest_add_process(f, lp->pid, &fp);
        if (r < 0)
                return r;
        fp->ppid = lp->ppid;
        fp->start_time = lp->start_time;
        memcpy(fp->comm, lp->comm, sizeof(fp->comm));
        fp->uid = lp->uid;
        fp->gid = lp->gid;
        fp->no_new_privs = lp->no_new_privs;
        if ((lp->exe && process_set_exe(fp, lp->exe) < 0) || (lp->argv && process_set_argv(fp, lp->argv) < 0))
                return -ENOMEM;
        *ret = fp;
        return 0;
}

/* The live thread tid, if the pass f did not read it and it is still the same task. */
static const Task *keepable_thread(const Forest *live, const Forest *f, pid_t tid, Process **ret_process) {
        const Task *lt = forest_find_task(live, tid, ret_process);
        uint64_t start_time;
        if (!lt || process_find_thread(forest_find_process(f, (*ret_process)->pid), tid) ||
            proc_read_start_time(tid, &start_time) < 0 || start_time != lt->start_time)
                return NULL;
        return lt;
}

/* The live thread tid into f; 1 if it was kept, 0 if there is nothing to keep. */
static int keep_thread(const Forest *live, Forest *f, pid_t tid) {
        Process *lp, *fp;
        const Task *lt = keepable_thread(live, f, tid, &lp);
        Task *t;
        if (!lt)
                return 0;
        int r = keep_process(f, lp, &fp);
        if (r < 0)
                return r;
        for (const Filter *x = lt->filter; x; x = x->parent) {
                r = keep_filter(f, x);
                if (r < 0)
                        return r;
        }
        r = process_add_thread(fp, tid, &t);
        if (r < 0)
                return r;
        t->start_time = lt->start_time;
        t->mode = lt->mode;
        t->filter_id = lt->filter_id;
        t->filter_count = lt->filter_count;
        return 1;
}

static bool ptrace_task_stale(const Source *s, pid_t tid) {
        const PtraceSource *p = (const PtraceSource *) s;
        return hashmap_get(&p->stale, (uint64_t) tid) != NULL;
}

static void mark_stale(PtraceSource *p, pid_t tid, int error, bool stale) {
        bool was = hashmap_get(&p->stale, (uint64_t) tid);
        if (stale && !was && hashmap_replace(&p->stale, (uint64_t) tid, (void *) 1) >= 0)
                log_debug_errno(error, "Thread %d cannot be read (%m): its last known state is kept, stale.", tid);
        else if (!stale && was) {
                hashmap_remove(&p->stale, (uint64_t) tid);
                log_debug("Thread %d is read again.", tid);
        }
}

/* The ids of the chains keep_unreadable() will keep, before the pass adopts ids: a new filter of
 * the pass with the same bytes (a process that installed the same profile since) must not take
 * them, or the kept thread would share it, and the two come apart with new ids when the thread is
 * read again. */
static int reserve_unreadable(PtraceSource *p, const Forest *f, const UnreadableTask *bad, size_t n_bad,
                              Hashmap *ret) {
        const Forest *live = live_now(p);
        for (size_t i = 0; live && i < n_bad; i++) {
                Process *lp;
                const Task *lt = bad[i].error == -ESRCH ? NULL : keepable_thread(live, f, bad[i].tid, &lp);
                for (const Filter *x = lt ? lt->filter : NULL; x; x = x->parent) {
                        int r = hashmap_replace(ret, x->id, (void *) 1);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* f: a pass with the live forest's ids. The unreadable threads the live forest knows are kept; the
 * threads the pass read are stale no more. */
static int keep_unreadable(PtraceSource *p, Forest *f, const UnreadableTask *bad, size_t n_bad) {
        const Forest *live = live_now(p);
        _cleanup_(hashmap_deinit) Hashmap kept = {};
        int r;
        for (size_t i = 0; live && i < n_bad; i++) {
                if (bad[i].error == -ESRCH || (r = keep_thread(live, f, bad[i].tid)) == 0)
                        continue;
                if (r < 0 || (r = hashmap_replace(&kept, (uint64_t) bad[i].tid, (void *) 1)) < 0)
                        return log_error_errno(r, "Full pass failed: %m");
                mark_stale(p, bad[i].tid, bad[i].error, true);
        }
        uint64_t tid;
        void *v;
        for (size_t i = 0; hashmap_next(&p->stale, &i, &tid, &v);)
                if (!hashmap_get(&kept, tid)) {
                        mark_stale(p, (pid_t) tid, 0, false);
                        i = 0; /* the map changed */
                }
        if (hashmap_size(&kept) == 0)
                return 0;
        _cleanup_free_ char *error = NULL;
        r = forest_link(f, &error);
        if (r < 0)
                return log_error_errno(r, "The pass with the threads it could not read is inconsistent (%s): %m",
                                       error ?: "?");
        return 0;
}

/* A pass that meets a snapshot's scan is queued: the loop never waits for the lock. */
static int ptrace_full_pass(Source *s, const char *reason) {
        PtraceSource *p = ptrace_source(s);
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        uint64_t lost = p->watch ? proc_watch_lost(p->watch) : 0;

        if (!pass_lock(p, reason))
                return 0;
        int r = pass_scan_locked(p, &f, &bad, &n_bad); /* logs its failures, as the next two do */
        if (r < 0)
                return r;
        r = source_pass_prepare(s, f);
        if (r < 0)
                return r;
        /* The first pass after start takes over the stored ids exactly (by thread): a filter of a task
         * that died while the daemon was down is not given to another by its bytes. */
        _cleanup_(hashmap_deinit) Hashmap reserved = {};
        r = reserve_unreadable(p, f, bad, n_bad, &reserved);
        if (r >= 0)
                r = infer_adopt_ids_reserving(live_now(p), f, p->passed, &p->last_id, NULL, &reserved);
        if (r < 0)
                return log_error_errno(r, "Full pass failed: %m");
        r = keep_unreadable(p, f, bad, n_bad);
        if (r < 0)
                return r;
        r = pass_hand_on(p, TAKE_PTR(f), reason, lost);
        if (r < 0)
                return r;
        p->passed = true;
        return r;
}

/* A scan let go of the lock while a pass was queued. */
static int on_wake(sd_event_source *e, int fd, uint32_t revents, void *userdata) {
        PtraceSource *p = userdata;
        uint64_t n;
        (void) read(fd, &n, sizeof(n));
        if (!atomic_load(&p->pass_queued))
                return 0;
        const char *reason = p->queued_reason;
        if (ptrace_full_pass(&p->source, reason) < 0)
                p->source.sink.resync(p->source.sink.userdata, "inconsistent"); /* another pass, paced */
        return 0;
}

/* ---- events ---- */

static void queue_rescan(PtraceSource *p, const ProcEvent *e) {
        if (p->pending_burst)
                return;
        if (p->n_pending >= MAX_PENDING || GROW(p->pending, p->n_pending_allocated, p->n_pending + 1) < 0) {
                p->pending_burst = true;
                return;
        }
        p->pending[p->n_pending++] = (PendingRescan) {
                .type = e->type, .tid = e->tid, .tgid = e->tgid, .parent_tid = e->parent_tid, .parent_tgid = e->parent_tgid,
        };
}

static int on_proc_event(const ProcEvent *e, void *userdata) {
        PtraceSource *p = userdata;
        LiveEvent x = { .task = { .tid = e->tid, .tgid = e->tgid } };
        switch (e->type) {
        case PROC_EVENT_TYPE_EXIT:
                x.type = LIVE_EVENT_EXIT;
                break;
        case PROC_EVENT_TYPE_COMM:
                x.type = LIVE_EVENT_COMM;
                memcpy(x.task.comm, e->comm, sizeof(x.task.comm));
                break;
        case PROC_EVENT_TYPE_FORK:
        case PROC_EVENT_TYPE_EXEC:
                queue_rescan(p, e);
                return 0;
        default:
                return 0;
        }
        return live_batch_add(&p->batch, &x);
}

/* ---- which subtrees to rescan ---- */

/* The kernel's seccomp mode of a task (0 when it is gone), and its filter count. */
static int task_seccomp(pid_t tid, unsigned *ret_filters) {
        ProcStatus st;
        if (proc_read_status(tid, &st) < 0)
                return 0;
        if (ret_filters)
                *ret_filters = (unsigned) st.seccomp_filters;
        return st.seccomp_mode;
}

/* Filters only ever grow on a task, so a thread whose kernel filter count equals its live chain's
 * length has the chain the live forest says. */
static bool live_thread_current(const Forest *live, pid_t tgid, pid_t tid) {
        const Task *t = process_find_thread(forest_find_process(live, tgid), tid);
        if (!t)
                return false;
        unsigned count = 0;
        int mode = task_seccomp(tid, &count);
        return mode == 0 || count == forest_chain_length(live, t->filter_id); /* gone: nothing better to read */
}

/* The process whose subtree holds what the event changed, or 0 when nothing of interest did: a
 * task without seccomp that forked or exec'd a task without seccomp. */
static pid_t rescan_root(const Forest *live, const PendingRescan *p) {
        bool tracked = forest_find_process(live, p->tgid);

        if (p->type == PROC_EVENT_TYPE_EXEC || p->tgid == p->parent_tgid) /* exec, or a new thread */
                return tracked || task_seccomp(p->tid, NULL) > 0 ? p->tgid : 0;
        /* A new process has its forker's chain: read the child alone when the forker's is known. */
        if (live_thread_current(live, p->parent_tgid, p->parent_tid))
                return p->tgid;
        if (task_seccomp(p->parent_tid, NULL) > 0)
                return p->parent_tgid; /* the forker has filters the live forest does not know */
        return task_seccomp(p->tid, NULL) > 0 ? p->tgid : 0;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* The distinct roots of the pending events, sorted. */
static int pending_roots(PtraceSource *p, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *roots = calloc(p->n_pending + 1, sizeof(pid_t));
        const Forest *live = live_now(p);
        size_t n = 0;
        if (!roots)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_pending; i++) {
                pid_t root = rescan_root(live, &p->pending[i]);
                if (root > 0 && root != getpid())
                        roots[n++] = root;
        }
        qsort_safe(roots, n, sizeof(pid_t), cmp_pid);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (k == 0 || roots[k - 1] != roots[i])
                        roots[k++] = roots[i];
        *ret = TAKE_PTR(roots);
        *ret_n = k;
        return 0;
}

/* ---- the rescan ---- */

/* One subtree read and handed on as one batch (unless read already, inside another); why its scan
 * failed in *e (not logged: the caller does, once). */
static int rescan_subtree(PtraceSource *p, pid_t root, Hashmap *covered, ScanError *e) {
        ScanOptions opts = { .root = root, .include_argv = false, .include_exe = true };
        _cleanup_(forest_freep) Forest *scan = NULL;
        _cleanup_free_ UnreadableTask *bad = NULL;
        _cleanup_free_ pid_t *unreadable = NULL;
        size_t n_bad = 0;
        ProcStatus st;

        if (hashmap_get(covered, (uint64_t) root))
                return 0;
        if (proc_read_status(root, &st) < 0 || st.state == 'Z' || st.state == 'X')
                return 0; /* gone: its exit events say the rest */
        int r = ptrace_scan_explained(&opts, &scan, &bad, &n_bad, e);
        if (r == -ESRCH) {
                *e = (ScanError) {}; /* gone meanwhile: nothing failed */
                return 0;
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < scan->n_processes; i++)
                if ((r = hashmap_replace(covered, (uint64_t) scan->processes[i]->pid, (void *) 1)) < 0)
                        return r;
        if (!(unreadable = calloc(n_bad + 1, sizeof(pid_t))))
                return -ENOMEM;
        for (size_t i = 0; i < n_bad; i++)
                unreadable[i] = bad[i].tid;
        live_batch_clear(&p->batch);
        r = infer_merge(live_now(p), scan, unreadable, n_bad, &p->last_id, &p->batch);
        if (r >= 0 && p->batch.n > 0)
                r = p->source.sink.apply(p->source.sink.userdata, &p->batch);
        live_batch_clear(&p->batch);
        return r;
}

static int flush_rescans_locked(PtraceSource *p) {
        _cleanup_(hashmap_deinit) Hashmap covered = {};
        _cleanup_free_ pid_t *roots = NULL;
        size_t n_roots = 0;
        ScanError e = {};
        int r = 0;

        if (!p->pending_burst)
                r = pending_roots(p, &roots, &n_roots);
        bool burst = p->pending_burst || r < 0 || n_roots > MAX_SUBTREE_RESCANS;
        p->n_pending = 0;
        p->pending_burst = false;
        if (burst) {
                p->source.sink.resync(p->source.sink.userdata, "burst");
                return 0;
        }
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        for (size_t i = 0; r >= 0 && i < n_roots; i++)
                r = rescan_subtree(p, roots[i], &covered, &e);
        p->rescan_end_mono = now_usec(CLOCK_MONOTONIC);
        p->rescan_cost_usec = p->rescan_end_mono - start;
        log_debug("Rescanned %zu subtree(s) in %" PRIu64 " us.", n_roots, p->rescan_cost_usec);
        if (r < 0) {
                log_warning_errno(r, "Rescanning after events failed (%s%s%m), resynchronising.", e.message,
                                  e.message[0] ? ": " : "");
                p->source.sink.resync(p->source.sink.userdata, "inconsistent");
        }
        return 0;
}

static void schedule_rescan(PtraceSource *p);

static int flush_rescans(PtraceSource *p) {
        if (pthread_mutex_trylock(&p->lock) != 0) {
                schedule_rescan(p); /* a snapshot scans: the events wait for it */
                return 0;
        }
        int r = flush_rescans_locked(p);
        (void) pthread_mutex_unlock(&p->lock);
        return r;
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        return flush_rescans(userdata);
}

/* A one-shot timer source set to go off at when (CLOCK_MONOTONIC). */
static int timer_arm(sd_event_source *s, uint64_t when) {
        int r = sd_event_source_set_time(s, when);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* The next rescan after a short wait that lets a burst of events gather, and no sooner after the
 * last one than that one took (rescanning never takes more than half of the loop's time). */
static void schedule_rescan(PtraceSource *p) {
        int enabled = SD_EVENT_OFF;
        if (sd_event_source_get_enabled(p->rescan_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        uint64_t when = now_usec(CLOCK_MONOTONIC) + RESCAN_DEBOUNCE_USEC;
        if (p->rescan_end_mono + p->rescan_cost_usec > when)
                when = p->rescan_end_mono + p->rescan_cost_usec;
        int r = timer_arm(p->rescan_timer, when);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the rescan timer: %m");
}

/* One read of the proc connector: its exits and renames are one batch; forks and execs wait for
 * the rescan. */
static int on_proc_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PtraceSource *p = userdata;
        live_batch_clear(&p->batch);
        int r = proc_watch_dispatch(p->watch);
        if (r < 0) {
                log_warning_errno(r, "Reading process events failed (%m), resynchronising.");
                p->source.sink.resync(p->source.sink.userdata, "lost-events");
        } else if (p->batch.n > 0)
                (void) p->source.sink.apply(p->source.sink.userdata, &p->batch); /* the manager handles failures */
        live_batch_clear(&p->batch);
        if (proc_watch_lost(p->watch) != p->lost_seen) {
                log_info("Events were lost (proc connector socket full), resynchronising.");
                p->lost_seen = proc_watch_lost(p->watch);
                p->source.sink.resync(p->source.sink.userdata, "lost-events");
        }
        if (p->n_pending > 0 || p->pending_burst)
                schedule_rescan(p);
        return 0;
}

/* ---- the object ---- */

/* Without the proc connector the source still works, seeing changes at the periodic pass only. */
static int ptrace_start(Source *s) {
        PtraceSource *p = ptrace_source(s);
        p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->wake_fd < 0)
                return log_error_errno(-errno, "Failed to create the queued pass's eventfd: %m");
        int r = sd_event_add_io(s->event, &p->wake, p->wake_fd, EPOLLIN, on_wake, p);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the queued pass's eventfd: %m");
        r = proc_watch_new(on_proc_event, p, &p->watch);
        if (r < 0) {
                log_warning_errno(r, "Not watching processes (%m): changes are seen by full passes only.");
                return 0;
        }
        r = sd_event_add_io(s->event, &p->io, proc_watch_fd(p->watch), EPOLLIN, on_proc_io, p);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the proc connector: %m");
        r = sd_event_add_time(s->event, &p->rescan_timer, CLOCK_MONOTONIC, 0, 0, on_rescan_timer, p);
        if (r < 0)
                return log_error_errno(r, "Failed to create the rescan timer: %m");
        r = sd_event_source_set_enabled(p->rescan_timer, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to create the rescan timer: %m");
        p->lost_seen = proc_watch_lost(p->watch);
        return 0;
}

/* A pass the loop queued behind a snapshot's scan is not stored yet. */
static bool ptrace_pass_waiting(const Source *s) {
        return atomic_load(&ptrace_source((Source *) s)->pass_queued);
}

static bool ptrace_events_pending(Source *s) {
        return ptrace_source(s)->n_pending > 0;
}

static uint64_t ptrace_lost(Source *s) {
        PtraceSource *p = ptrace_source(s);
        return p->watch ? proc_watch_lost(p->watch) : 0;
}

static void ptrace_free(Source *s) {
        PtraceSource *p = ptrace_source(s);
        sd_event_source_disable_unref(p->io);
        sd_event_source_disable_unref(p->rescan_timer);
        sd_event_source_disable_unref(p->wake);
        if (p->wake_fd >= 0)
                (void) close(p->wake_fd);
        proc_watch_free(p->watch);
        hashmap_deinit(&p->stale);
        free(p->pending);
        live_batch_done(&p->batch);
        sd_event_unref(s->event);
        (void) pthread_cond_destroy(&p->pass_ran);
        (void) pthread_mutex_destroy(&p->lock);
        free(p);
}

static const SourceVTable ptrace_vtable = {
        .free = ptrace_free,
        .scan = ptrace_scan_logged,
        .scan_detached = ptrace_scan_snapshot, /* FROZEN when the scanner could stop every task first */
        .start = ptrace_start,
        .full_pass = ptrace_full_pass,
        .pass_waiting = ptrace_pass_waiting,
        .events_pending = ptrace_events_pending,
        .lost = ptrace_lost,
        .task_stale = ptrace_task_stale,
        .identity = IDENTITY_INFERRED,
        .refresh_usec = REFRESH_USEC,
        .announces_passes = true,
};

int source_ptrace_new(const SourceOptions *o, Source **ret) {
        PtraceSource *p = calloc(1, sizeof(PtraceSource));
        if (!p)
                return log_oom();
        p->source = (Source) { .vtable = &ptrace_vtable, .backend = BACKEND_PTRACE, .oneshot = o->oneshot,
                               .first_id = o->first_id };
        p->last_id = o->first_id > 0 ? o->first_id - 1 : 0;
        p->wake_fd = -1;
        p->hold_dir = secure_getenv("SECTREE_TEST_PTRACE_SCAN_HOLD");
        (void) pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_t attr;
        (void) pthread_condattr_init(&attr);
        (void) pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        (void) pthread_cond_init(&p->pass_ran, &attr);
        (void) pthread_condattr_destroy(&attr);
        *ret = &p->source;
        return 0;
}
