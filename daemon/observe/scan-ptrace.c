/* scan-ptrace.c: the ptrace backend: dump every task's chain with PTRACE_SECCOMP_GET_FILTER and
 * infer which filters are shared by hash-consing the chains of related tasks */
#include <linux/filter.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "observe/procfd.h"
#include "observe/procinfo.h"
#include "observe/scanner.h"

/*
 * How a pass goes:
 *
 *   1. collect: every process of /proc with its leader's status (mode, ppid, thread count), the
 *      threads' status where there are several, and start times of what is reported (see scanner.h
 *      for which processes are), and every other process that holds a listener fd (a listener's
 *      holders are part of a snapshot wherever they are: schema/snapshot-v1.md).
 *   2. dump: every thread in filter mode is seized, interrupted, dumped and detached, one at a time,
 *      by a short-lived worker thread (see dump_worker() for why a thread). With
 *      ScanOptions.freeze, every thread of the report is stopped first instead, and all stay
 *      stopped until step 4 is done (see "freezing" below).
 *   3. place: chains are turned into filter nodes by hash-consing, in ancestry order.
 *   4. emit: processes and threads go into the Forest; listeners are collected; the forest is linked,
 *      and holders that hold no listener of the report are dropped again.
 *
 * Identity inference (step 3). The kernel shares a filter between two tasks only through fork,
 * clone and TSYNC, so two tasks can share a filter only if one descends from the other or they are
 * threads of one process (ancestry as the ppid chain shows it now). A node's key is (parent node,
 * bytes, LOG flag), and keys are only merged between related tasks:
 *   - processes are placed parents first (by depth in the ppid tree), threads leader first;
 *   - a task's chain shares the longest equal prefix (bytes and flags at each position, oldest
 *     first) with the placed chains of its own process and of its nearest placed ancestor process;
 *     the rest of its chain becomes new nodes.
 * Siblings therefore share what their common parent still holds, but two byte-identical tops
 * installed by two siblings stay two nodes: nothing relates them but the bytes. When the common
 * parent is gone (orphans reparented to a subreaper or init), the siblings are unrelated as far as
 * we can tell, and their shared base is reported as two nodes too: we would rather under-report
 * sharing than present unrelated but byte-identical filters (every child of a container runtime
 * installing the same profile) as one object. The walk up the ppid chain stops at a reported
 * process that has no thread in filter mode (nothing can be shared through it) and at a process
 * outside the report; it passes over a process whose filter threads were all unreadable.
 * Every filter is marked IDENTITY_INFERRED; the bpf backend is the one with exact identity.
 *
 * What a seized task sees: PTRACE_SEIZE sets no options and PTRACE_INTERRUPT stops it for a few
 * microseconds. A signal that arrives meanwhile is delivered as soon as we detach (we pass it back
 * on PTRACE_DETACH). A task sleeping interruptibly in a syscall has it restarted; one waiting for
 * a seccomp notification's answer has the notification withdrawn and the syscall restarted (its
 * supervisor's reply gets ENOENT). A task in a group stop goes back to it. A task that cannot be
 * stopped (a vfork parent, a notification wait with WAIT_KILLABLE_RECV, uninterruptible I/O) is
 * given up after STOP_TIMEOUT_USEC and reported as -ETIMEDOUT. If this process dies while a tracee
 * is stopped, the kernel detaches it and lets it run (exit_ptrace()).
 */

#define STOP_TIMEOUT_USEC (200 * 1000ULL) /* a task that does not stop in this time is given up */

#define MIN(a, b) ((a) < (b) ? (a) : (b))

typedef struct DumpedFilter {
        struct sock_filter *insns;
        size_t len;
        bool log;
} DumpedFilter;

typedef struct ScanTask {
        pid_t tid;
        uint64_t start_time;
        TaskMode mode;
        int error;             /* < 0: could not be read; left out of the forest */
        DumpedFilter *chain;   /* oldest first, as PTRACE_SECCOMP_GET_FILTER indexes it */
        size_t n_chain, n_chain_allocated;
        unsigned kernel_count; /* Seccomp_filters: as the listing or the dump saw it */
        bool no_new_privs;     /* NoNewPrivs: of its own status (it is per thread) */
        Filter **nodes;        /* the placed chain, oldest first, n_chain entries */
        bool placed;
} ScanTask;

typedef struct ScanProcess {
        pid_t pid, ppid;
        uint64_t start_time;
        ProcStatus status; /* of the leader (which may be a zombie whose threads live on) */
        ScanTask *tasks;   /* live threads, leader first */
        size_t n_tasks;
        bool selected;
        bool holder; /* selected for its listener fds only: outside the subtree, or without seccomp */
        bool has_filter_task;
        size_t n_placed;
        unsigned depth; /* in the ppid tree of this pass */
} ScanProcess;

typedef struct Scan {
        ScanOptions opts;
        ScanProcess *procs; /* sorted by pid */
        size_t n_procs;
        uint64_t last_filter_id;
} Scan;

static void scan_task_clear_chain(ScanTask *t) {
        for (size_t i = 0; i < t->n_chain; i++)
                free(t->chain[i].insns);
        t->n_chain = 0;
}

static void scan_reset(Scan *s) {
        for (size_t i = 0; i < s->n_procs; i++) {
                ScanProcess *p = &s->procs[i];
                for (size_t j = 0; j < p->n_tasks; j++) {
                        scan_task_clear_chain(&p->tasks[j]);
                        free(p->tasks[j].chain);
                        free(p->tasks[j].nodes);
                }
                free(p->tasks);
        }
        free(s->procs);
        s->procs = NULL;
        s->n_procs = 0;
}

static void scan_done(Scan *s) {
        scan_reset(s);
        *s = (Scan) {};
}

static TaskMode task_mode_from_kernel(int mode) {
        switch (mode) {
        case SECCOMP_MODE_DISABLED:
                return TASK_MODE_DISABLED;
        case SECCOMP_MODE_STRICT:
                return TASK_MODE_STRICT;
        case SECCOMP_MODE_FILTER:
                return TASK_MODE_FILTER;
        default:
                return _TASK_MODE_INVALID;
        }
}

/* ---- step 1: collect ---- */

static int cmp_process_pid(const void *key, const void *elem) {
        pid_t pid = *(const pid_t *) key, other = ((const ScanProcess *) elem)->pid;
        return pid < other ? -1 : pid > other;
}

static ScanProcess *scan_find_process(const Scan *s, pid_t pid) {
        if (pid <= 0)
                return NULL;
        return bsearch(&pid, s->procs, s->n_procs, sizeof(ScanProcess), cmp_process_pid);
}

static bool is_kernel_thread(const ScanProcess *p) {
        return p->pid == 2 || p->ppid == 2;
}

static int scan_collect_processes(Scan *s) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n;
        int r;

        r = proc_list_pids(&pids, &n);
        if (r < 0)
                return log_error_errno(r, "Failed to list /proc: %m");
        s->procs = calloc(n ? n : 1, sizeof(ScanProcess));
        if (!s->procs)
                return log_oom();

        /* proc_list_pids() sorts, so s->procs is sorted by pid. A process that vanishes is dropped. */
        for (size_t i = 0; i < n; i++) {
                ScanProcess *p = &s->procs[s->n_procs];
                *p = (ScanProcess) { .pid = pids[i] };
                if (proc_read_status(p->pid, &p->status) < 0)
                        continue;
                p->ppid = p->status.ppid;
                s->n_procs++;
        }
        return 0;
}

static bool task_is_dead(char state) {
        return state == 'Z' || state == 'X' || state == 'x';
}

static int scan_task_init(ScanTask *t, pid_t tid, const ProcStatus *st) {
        *t = (ScanTask) { .tid = tid };
        if (task_is_dead(st->state))
                return -ESRCH; /* a zombie leader is not reported; its live threads are */
        t->mode = task_mode_from_kernel(st->seccomp_mode);
        if (t->mode < 0)
                return -EBADMSG;
        t->kernel_count = st->seccomp_filters;
        t->no_new_privs = st->no_new_privs;
        return 0;
}

static void scan_process_add_task(ScanProcess *p, pid_t tid, const ProcStatus *st) {
        ScanTask *t = &p->tasks[p->n_tasks];
        if (scan_task_init(t, tid, st) < 0)
                return;
        if (t->mode == TASK_MODE_FILTER)
                p->has_filter_task = true;
        /* Leader first, then by tid. */
        if (t->tid == p->pid && p->n_tasks > 0) {
                ScanTask leader = *t;
                memmove(p->tasks + 1, p->tasks, p->n_tasks * sizeof(ScanTask));
                p->tasks[0] = leader;
        }
        p->n_tasks++;
}

/* The threads and their modes. A single-threaded process with a live leader needs nothing beyond
 * its status (a zombie leader counts its live threads, not itself, in Threads:). */
static int scan_collect_threads(ScanProcess *p) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n;
        int r;

        if (p->status.threads == 1 && !task_is_dead(p->status.state)) {
                p->tasks = calloc(1, sizeof(ScanTask));
                if (!p->tasks)
                        return -ENOMEM;
                scan_process_add_task(p, p->pid, &p->status);
                return 0;
        }

        r = proc_list_threads(p->pid, &tids, &n);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        p->tasks = calloc(n ? n : 1, sizeof(ScanTask));
        if (!p->tasks)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                ProcStatus st;
                if (tids[i] == p->pid)
                        st = p->status;
                else if (proc_read_status(tids[i], &st) < 0)
                        continue; /* vanished */
                scan_process_add_task(p, tids[i], &st);
        }
        return 0;
}

/* Start times, only for the processes that are reported. A task that vanished is dropped. */
static void scan_read_start_times(ScanProcess *p) {
        if (proc_read_start_time(p->pid, &p->start_time) < 0) {
                p->n_tasks = 0; /* the whole process is gone */
                return;
        }
        size_t k = 0;
        for (size_t i = 0; i < p->n_tasks; i++) {
                ScanTask *t = &p->tasks[i];
                if (t->tid == p->pid)
                        t->start_time = p->start_time;
                else if (proc_read_start_time(t->tid, &t->start_time) < 0)
                        continue;
                p->tasks[k++] = *t;
        }
        p->n_tasks = k;
}

static bool scan_process_has_seccomp(const ScanProcess *p) {
        for (size_t i = 0; i < p->n_tasks; i++)
                if (p->tasks[i].mode != TASK_MODE_DISABLED)
                        return true;
        return false;
}

static bool process_in_subtree(const Scan *s, const ScanProcess *p, pid_t root) {
        for (size_t steps = 0; p && steps <= s->n_procs; steps++) {
                if (p->pid == root)
                        return true;
                p = scan_find_process(s, p->ppid);
        }
        return false;
}

static bool scan_has_filter_task(const Scan *s) {
        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].selected && s->procs[i].has_filter_task)
                        return true;
        return false;
}

/* Listener holders are part of the report wherever they are (schema/snapshot-v1.md): a
 * supervisor without filters, outside the subtree, often holds the only other fd. Every process
 * the report does not have yet that holds a listener fd is selected; listeners_collect() then
 * says which fds are listeners of the report's filters, and forest_restrict_to_subtree() drops
 * the processes that hold none of those. With no filter in the report there is no listener to
 * hold. Our own process is left out: it cannot trace itself. */
static int scan_select_holders(Scan *s) {
        pid_t self = getpid();
        int r;

        if (!scan_has_filter_task(s))
                return 0;
        for (size_t i = 0; i < s->n_procs; i++) {
                ScanProcess *p = &s->procs[i];
                _cleanup_free_ int *fds = NULL;
                size_t n = 0;

                if (p->selected || is_kernel_thread(p) || p->pid == self)
                        continue;
                r = proc_list_listener_fds(p->pid, &fds, &n);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0 || n == 0)
                        continue; /* gone, or no listener */
                if (!p->tasks && (r = scan_collect_threads(p)) < 0)
                        return log_error_errno(r, "Failed to read the threads of process %d: %m", (int) p->pid);
                if (p->n_tasks == 0)
                        continue;
                scan_read_start_times(p);
                p->selected = p->holder = p->n_tasks > 0;
        }
        return 0;
}

static bool scan_has_holders(const Scan *s) {
        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].holder)
                        return true;
        return false;
}

static int scan_select(Scan *s) {
        int r;

        /* Not an error to log here: the daemon rescans processes that may have just exited. */
        if (s->opts.root > 0 && !scan_find_process(s, s->opts.root))
                return log_debug_errno(-ESRCH, "Process %d does not exist.", (int) s->opts.root);

        for (size_t i = 0; i < s->n_procs; i++) {
                ScanProcess *p = &s->procs[i];
                bool candidate = s->opts.root > 0 ? process_in_subtree(s, p, s->opts.root) : !is_kernel_thread(p);
                if (!candidate)
                        continue;
                r = scan_collect_threads(p);
                if (r < 0)
                        return log_error_errno(r, "Failed to read the threads of process %d: %m", (int) p->pid);
                if (p->n_tasks == 0 || !(s->opts.root > 0 || scan_process_has_seccomp(p)))
                        continue;
                scan_read_start_times(p);
                p->selected = p->n_tasks > 0;
        }
        return scan_select_holders(s);
}

static unsigned scan_process_depth(const Scan *s, const ScanProcess *p) {
        unsigned depth = 0;
        for (const ScanProcess *a = scan_find_process(s, p->ppid); a && depth <= s->n_procs;
             a = scan_find_process(s, a->ppid))
                depth++;
        return depth;
}

static int cmp_ancestry(const void *a, const void *b) {
        const ScanProcess *x = *(ScanProcess * const *) a, *y = *(ScanProcess * const *) b;
        if (x->depth != y->depth)
                return x->depth < y->depth ? -1 : 1;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The selected processes, ancestors before descendants. */
static int scan_ancestry_order(Scan *s, ScanProcess ***ret, size_t *ret_n) {
        _cleanup_free_ ScanProcess **order = calloc(s->n_procs ? s->n_procs : 1, sizeof(ScanProcess *));
        size_t n = 0;

        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].selected) {
                        s->procs[i].depth = scan_process_depth(s, &s->procs[i]);
                        order[n++] = &s->procs[i];
                }
        qsort(order, n, sizeof(ScanProcess *), cmp_ancestry);
        *ret = TAKE_PTR(order);
        *ret_n = n;
        return 0;
}

/* ---- step 2: dump ---- */

static void backoff(unsigned attempt) {
        if (attempt < 32) {
                sched_yield();
                return;
        }
        unsigned shift = MIN(attempt - 32, 10u);
        struct timespec ts = { .tv_nsec = 1000L << shift }; /* 1 µs doubling up to ~1 ms */
        nanosleep(&ts, NULL);
}

/* Wait for the ptrace stop PTRACE_INTERRUPT asked for. Returns 0 and the signal to hand back on
 * detach (non-zero for a signal-delivery-stop), -ESRCH if the task exited instead, -ETIMEDOUT if
 * it did not stop in time (it sleeps uninterruptibly or killably: a vfork parent, a task blocked
 * in a seccomp notification with WAIT_KILLABLE_RECV, ...). An exit is only peeked at (WNOWAIT),
 * never reaped: the task may be a child of ours that someone else waits for. */
static int wait_for_stop(pid_t tid, int *ret_sig) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);

        for (unsigned attempt = 0;; attempt++) {
                siginfo_t si = {};
                if (waitid(P_PID, tid, &si, WSTOPPED | WEXITED | __WALL | WNOHANG | WNOWAIT) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (si.si_pid == tid) {
                        if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
                                return -ESRCH;
                        if (si.si_code == CLD_TRAPPED)
                                break;
                }
                if (now_usec(CLOCK_MONOTONIC) - start > STOP_TIMEOUT_USEC)
                        return -ETIMEDOUT;
                backoff(attempt);
        }

        /* Consume the stop (WSTOPPED only: never an exit). si_status is the tracee's exit_code:
         * (event << 8) | signal. Event 0 is a signal-delivery-stop whose signal must be handed
         * back; PTRACE_EVENT_STOP is our interrupt or a group stop, nothing to hand back. */
        siginfo_t si = {};
        if (waitid(P_PID, tid, &si, WSTOPPED | __WALL | WNOHANG) < 0)
                return -errno;
        if (si.si_pid != tid)
                return -ESRCH;
        *ret_sig = (si.si_status >> 8) == 0 ? (si.si_status & 0x7f) : 0;
        return 0;
}

static int scan_task_append(ScanTask *t, const struct sock_filter *insns, size_t len, bool log) {
        if (GROW(t->chain, t->n_chain_allocated, t->n_chain + 1) < 0)
                return -ENOMEM;
        struct sock_filter *copy = malloc(len * sizeof(struct sock_filter));
        if (!copy)
                return -ENOMEM;
        memcpy(copy, insns, len * sizeof(struct sock_filter));
        t->chain[t->n_chain++] = (DumpedFilter) { .insns = copy, .len = len, .log = log };
        return 0;
}

/* Every filter of a stopped tracee, oldest (index 0) first, until -ENOENT. buf holds
 * PROG_MAX_INSNS instructions, so one call per filter suffices. */
static int task_read_filters(ScanTask *t, struct sock_filter *buf) {
        int r;

        scan_task_clear_chain(t);
        for (unsigned long i = 0;; i++) {
                long n = ptrace(PTRACE_SECCOMP_GET_FILTER, t->tid, (void *) i, buf);
                if (n < 0) {
                        if (errno == ENOENT)
                                return 0;
                        return -errno; /* EACCES: we lack CAP_SYS_ADMIN or run under seccomp ourselves */
                }
                if (n == 0 || n > PROG_MAX_INSNS)
                        return -EBADMSG;

                struct __ptrace_seccomp_metadata md = { .filter_off = i };
                if (ptrace(PTRACE_SECCOMP_GET_METADATA, t->tid, (void *) sizeof(md), &md) < 0)
                        return -errno;

                r = scan_task_append(t, buf, (size_t) n, md.flags & SECCOMP_FILTER_FLAG_LOG);
                if (r < 0)
                        return r;
        }
}

/* Dump the chain. A stopped thread's chain can still grow when a sibling thread uses TSYNC, but
 * the old chain is then a prefix of the new one and indices count from the oldest filter, so
 * every index names the same filter before and after: reading until -ENOENT yields the chain as
 * it is at that last call, and its length is the kernel's count (Seccomp_filters:) at that moment. */
static int task_read_chain(ScanTask *t, struct sock_filter *buf) {
        int r = task_read_filters(t, buf);
        if (r < 0)
                return r;
        if (t->n_chain == 0)
                return -EBADMSG; /* filter mode without a filter cannot be */
        t->kernel_count = (unsigned) t->n_chain;
        return 0;
}

/* The task we stopped must be the one we listed: a tid can be reused between listing and seizing. */
static int task_check_identity(const ScanTask *t) {
        uint64_t start_time;
        int r = proc_read_start_time(t->tid, &start_time);
        if (r < 0)
                return r;
        return start_time == t->start_time ? 0 : -ESRCH;
}

/* Seize, interrupt, dump, detach. *abandon is set when the task is left attached but not stopped
 * (it did not stop in time, or detaching failed): only the exit of the tracer thread releases it. */
static int task_dump(ScanTask *t, struct sock_filter *buf, bool *abandon, uint64_t *usec_stopped) {
        int sig = 0, r;

        if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) < 0)
                return -errno; /* EPERM: traced already (or by us); ESRCH: gone */
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0) {
                *abandon = true;
                return -errno;
        }
        r = wait_for_stop(t->tid, &sig);
        if (r == -ETIMEDOUT)
                *abandon = true;
        if (r < 0)
                return r; /* an exited tracee needs no detach; the worker's exit releases its zombie */

        r = task_check_identity(t);
        if (r >= 0)
                r = task_read_chain(t, buf);

        if (ptrace(PTRACE_DETACH, t->tid, NULL, (void *) (long) sig) < 0 && errno != ESRCH) {
                log_warning_errno(-errno, "Failed to detach from thread %d: %m", (int) t->tid);
                *abandon = true;
        }
        *usec_stopped += now_usec(CLOCK_MONOTONIC) - start;
        return r;
}

typedef struct DumpQueue {
        ScanTask **tasks;
        size_t n, next;
        struct sock_filter *buf;
        unsigned n_workers;
        uint64_t usec_stopped; /* from PTRACE_INTERRUPT to PTRACE_DETACH, summed */
} DumpQueue;

/* The tracer is a short-lived thread, not the caller: when a tracee does not stop in time we
 * cannot detach it (PTRACE_DETACH needs a stopped tracee), and leaving it attached would stop it
 * the moment it wakes, until we detach. When the tracer thread exits, the kernel detaches all of its
 * tracees and lets them run, and hands zombies back to their real parents. So on a timeout the
 * worker ends, and dump_all() starts a new one for the rest of the queue. Tracees are per thread,
 * so the caller's own tracees (if any) are not touched. */
static void *dump_worker(void *userdata) {
        DumpQueue *q = userdata;

        while (q->next < q->n) {
                ScanTask *t = q->tasks[q->next++];
                bool abandon = false;
                t->error = task_dump(t, q->buf, &abandon, &q->usec_stopped);
                if (abandon)
                        break;
        }
        return NULL;
}

static int dump_all(DumpQueue *q) {
        while (q->next < q->n) {
                pthread_t thread;
                q->n_workers++;
                int r = pthread_create(&thread, NULL, dump_worker, q);
                if (r != 0)
                        return log_error_errno(-r, "Failed to start the ptrace thread: %m");
                r = pthread_join(thread, NULL);
                if (r != 0)
                        return log_error_errno(-r, "Failed to join the ptrace thread: %m");
        }
        return 0;
}

static int scan_dump(Scan *s, ScanProcess **order, size_t n_order) {
        _cleanup_free_ ScanTask **tasks = NULL;
        _cleanup_free_ struct sock_filter *buf = NULL;
        size_t n = 0, allocated = 0;

        for (size_t i = 0; i < n_order; i++)
                for (size_t j = 0; j < order[i]->n_tasks; j++) {
                        ScanTask *t = &order[i]->tasks[j];
                        if (t->mode != TASK_MODE_FILTER)
                                continue; /* strict and disabled tasks have no filters to read */
                        if (GROW(tasks, allocated, n + 1) < 0)
                                return log_oom();
                        tasks[n++] = t;
                }
        if (n == 0)
                return 0;

        buf = malloc(PROG_MAX_INSNS * sizeof(struct sock_filter));
        if (!buf)
                return log_oom();

        DumpQueue q = { .tasks = tasks, .n = n, .buf = buf };
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        int r = dump_all(&q);
        uint64_t elapsed = now_usec(CLOCK_MONOTONIC) - start;
        log_debug("ptrace: dumped %zu tasks in %" PRIu64 " us (%" PRIu64 " us per task, %" PRIu64
                  " us stopped per task), %u tracer thread(s)",
                  n, elapsed, elapsed / n, q.usec_stopped / n, q.n_workers);
        return r;
}

/* ---- step 3: place ---- */

static bool dumped_filter_equal(const DumpedFilter *a, const DumpedFilter *b) {
        return a->log == b->log && prog_equal(a->insns, a->len, b->insns, b->len);
}

static size_t chain_common_prefix(const ScanTask *a, const ScanTask *b) {
        size_t n = MIN(a->n_chain, b->n_chain), i;
        for (i = 0; i < n; i++)
                if (!dumped_filter_equal(&a->chain[i], &b->chain[i]))
                        break;
        return i;
}

/* The placed task of p sharing the longest prefix with t (the first one on ties). */
static const ScanTask *best_placed_in(const ScanProcess *p, const ScanTask *t, size_t *ret_k) {
        const ScanTask *best = NULL;
        size_t best_k = 0;

        for (size_t i = 0; i < p->n_tasks; i++) {
                const ScanTask *o = &p->tasks[i];
                if (!o->placed || o == t)
                        continue;
                size_t k = chain_common_prefix(o, t);
                if (k > best_k) {
                        best = o;
                        best_k = k;
                }
        }
        *ret_k = best_k;
        return best;
}

/* The nearest ancestor of p, by the ppid chain, whose chains can be shared with p's. */
static const ScanProcess *nearest_placed_ancestor(const Scan *s, const ScanProcess *p) {
        const ScanProcess *a = p;

        for (size_t steps = 0; steps < s->n_procs; steps++) {
                a = scan_find_process(s, a->ppid);
                if (!a || !a->selected)
                        return NULL; /* outside the report */
                if (a->n_placed > 0)
                        return a;
                if (!a->has_filter_task)
                        return NULL; /* no filters: nothing can have been inherited through it */
                /* filter threads, none readable: look further up */
        }
        return NULL;
}

static int scan_place_task(Scan *s, Forest *f, ScanProcess *p, ScanTask *t) {
        const ScanTask *base;
        size_t k;
        int r;

        base = best_placed_in(p, t, &k);
        const ScanProcess *a = nearest_placed_ancestor(s, p);
        if (a) {
                size_t ka;
                const ScanTask *b = best_placed_in(a, t, &ka);
                if (ka > k) {
                        base = b;
                        k = ka;
                }
        }

        t->nodes = calloc(t->n_chain, sizeof(Filter *));
        if (!t->nodes)
                return -ENOMEM;
        for (size_t i = 0; i < k; i++)
                t->nodes[i] = base->nodes[i];
        for (size_t i = k; i < t->n_chain; i++) {
                Filter *flt;
                r = forest_add_filter(f, ++s->last_filter_id, i > 0 ? t->nodes[i - 1]->id : 0, t->chain[i].insns,
                                      t->chain[i].len, &flt);
                if (r < 0)
                        return r;
                flt->log = t->chain[i].log;
                flt->identity = IDENTITY_INFERRED;
                t->nodes[i] = flt;
        }
        t->placed = true;
        p->n_placed++;
        return 0;
}

static int scan_place(Scan *s, Forest *f, ScanProcess **order, size_t n_order) {
        for (size_t i = 0; i < n_order; i++)
                for (size_t j = 0; j < order[i]->n_tasks; j++) {
                        ScanTask *t = &order[i]->tasks[j];
                        if (t->mode != TASK_MODE_FILTER || t->error < 0 || t->n_chain == 0)
                                continue;
                        int r = scan_place_task(s, f, order[i], t);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* ---- step 4: emit ---- */

static bool scan_task_reported(const ScanTask *t) {
        if (t->error < 0)
                return false;
        return t->mode != TASK_MODE_FILTER || t->placed;
}

static int emit_details(Process *fp, const ScanProcess *p, const ScanOptions *opts) {
        int r;

        if (proc_read_comm(p->pid, fp->comm) < 0)
                snprintf(fp->comm, sizeof(fp->comm), "%s", p->status.name);
        if (opts->include_exe) {
                _cleanup_free_ char *exe = NULL;
                r = proc_read_exe(p->pid, &exe);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && process_set_exe(fp, exe) < 0)
                        return -ENOMEM;
        }
        if (opts->include_argv) {
                _cleanup_strv_free_ char **argv = NULL;
                r = proc_read_argv(p->pid, &argv);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && process_set_argv(fp, argv) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int emit_process(Forest *f, const ScanProcess *p, const ScanOptions *opts) {
        size_t n_reported = 0;
        Process *fp;
        int r;

        for (size_t i = 0; i < p->n_tasks; i++)
                if (scan_task_reported(&p->tasks[i]))
                        n_reported++;
        if (n_reported == 0)
                return 0; /* nothing readable: its threads are in the unreadable list */

        r = forest_add_process(f, p->pid, &fp);
        if (r < 0)
                return r;
        fp->ppid = p->ppid;
        fp->start_time = p->start_time;
        fp->uid = p->status.uid;
        fp->gid = p->status.gid;
        fp->no_new_privs = p->status.no_new_privs;
        if (task_is_dead(p->status.state)) /* a zombie leader: what its status keeps showing */
                process_set_exited_leader(fp, task_mode_from_kernel(p->status.seccomp_mode),
                                          (unsigned) p->status.seccomp_filters);
        r = emit_details(fp, p, opts);
        if (r < 0)
                return r;

        for (size_t i = 0; i < p->n_tasks; i++) {
                const ScanTask *t = &p->tasks[i];
                Task *ft;
                if (!scan_task_reported(t))
                        continue;
                r = process_add_thread(fp, t->tid, &ft);
                if (r < 0)
                        return r;
                ft->start_time = t->start_time;
                ft->mode = t->mode;
                ft->filter_id = t->placed ? t->nodes[t->n_chain - 1]->id : 0;
                ft->filter_count = t->kernel_count;
                task_set_no_new_privs(ft, t->no_new_privs);
        }
        return 0;
}

static int collect_unreadable(const Scan *s, UnreadableTask **ret, size_t *ret_n) {
        _cleanup_free_ UnreadableTask *list = NULL;
        size_t n = 0, allocated = 0;

        for (size_t i = 0; i < s->n_procs; i++)
                for (size_t j = 0; j < s->procs[i].n_tasks; j++) {
                        const ScanTask *t = &s->procs[i].tasks[j];
                        if (!s->procs[i].selected || t->error >= 0)
                                continue;
                        log_debug_errno(t->error, "Thread %d: filters not readable: %m", (int) t->tid);
                        if (GROW(list, allocated, n + 1) < 0)
                                return -ENOMEM;
                        list[n++] = (UnreadableTask) { .tid = t->tid, .error = t->error };
                }
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

static int forest_new_ptrace(const ScanOptions *opts, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        if (!f)
                return -ENOMEM;
        f->backend = strdup("ptrace");
        if (!f->backend)
                return -ENOMEM;
        f->identity = IDENTITY_INFERRED;
        f->root = opts->root;
        f->created_at_usec = now_usec(CLOCK_REALTIME);
        int r = host_info_fill_local(&f->host);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

/* PTRACE_SECCOMP_GET_FILTER refuses a tracer that runs under seccomp itself. */
static int check_tracer(void) {
        ProcStatus st;
        int r = proc_read_status(gettid(), &st);
        if (r < 0)
                return log_error_errno(r, "Failed to read our own status: %m");
        if (st.seccomp_mode != SECCOMP_MODE_DISABLED)
                return log_error_errno(-EPERM, "The ptrace backend cannot run under seccomp.");
        return 0;
}

static int scan_emit(Scan *s, Forest *f) {
        char *error = NULL;
        int r;

        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].selected) {
                        r = emit_process(f, &s->procs[i], &s->opts);
                        if (r < 0)
                                return log_error_errno(r, "Failed to add process %d: %m", (int) s->procs[i].pid);
                }

        r = forest_link(f, &error);
        if (r < 0) {
                log_error_errno(r, "ptrace scan produced an inconsistent forest: %s", error ? error : "?");
                free(error);
                return r;
        }
        return listeners_collect(f);
}

/* Every process of the report but those selected for their listener fds alone: the subtree's,
 * and those a frozen scan found forked meanwhile. */
static bool scan_subtree_member(const Process *p, void *userdata) {
        const ScanProcess *sp = scan_find_process(userdata, p->pid);
        return !(sp && sp->holder);
}

/* Processes selected for their listener fds that hold no listener of the report go again. The
 * subtree is the one the scan selected, not the one the forest's ppid links give: the forest
 * lacks the processes it could not read (the subtree's root, say), and would lose their
 * descendants. */
static int scan_restrict_holders(const Scan *s, Forest *f) {
        if (!scan_has_holders(s))
                return 0;
        int r = s->opts.root > 0 ? forest_restrict_to_members(f, s->opts.root, scan_subtree_member, (void *) s)
                                 : forest_restrict_to_subtree(f, 0);
        return r < 0 ? log_error_errno(r, "Failed to restrict the forest to the report: %m") : 0;
}

static int scan_collect(Scan *s) {
        int r = scan_collect_processes(s);
        return r < 0 ? r : scan_select(s);
}

/* The pass without freezing: tasks are stopped one at a time, each only while it is dumped. */
static int scan_run(Scan *s, Forest *f) {
        _cleanup_free_ ScanProcess **order = NULL;
        size_t n_order = 0;

        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = scan_collect(s);
        if (r >= 0)
                r = scan_ancestry_order(s, &order, &n_order);
        uint64_t t1 = now_usec(CLOCK_MONOTONIC);
        if (r >= 0)
                r = scan_dump(s, order, n_order);
        uint64_t t2 = now_usec(CLOCK_MONOTONIC);
        if (r >= 0)
                r = scan_place(s, f, order, n_order);
        if (r >= 0)
                r = scan_emit(s, f);
        if (r >= 0)
                r = scan_restrict_holders(s, f);
        log_debug("ptrace scan: /proc %" PRIu64 " us, dump %" PRIu64 " us, place and emit %" PRIu64 " us",
                  t1 - t0, t2 - t1, now_usec(CLOCK_MONOTONIC) - t2);
        return r;
}

/* ---- freezing ----
 *
 * With ScanOptions.freeze every task of the report is seized and interrupted before any is read,
 * and stays stopped until the forest is built, listeners included: a stopped task cannot fork,
 * exec, install a filter or pass an fd on, so what is read is one moment. Tasks that appeared
 * while the others were being stopped are found by collecting again, until a round finds none
 * (FREEZE_MAX_ROUNDS at most). All of it runs in one short-lived tracer thread, as dump_worker()
 * does: every stopped task is detached (with the signal its stop intercepted, which it then
 * takes), and a task that could not be stopped in time (attached, not stopped) is released when
 * the thread exits; no path leaves a task stopped or traced. A task that could not be stopped
 * (traced by someone else, unstoppable) makes the snapshot's consistency "none" rather than
 * "frozen", and is unreadable if it runs under filters. */

#define FREEZE_MAX_ROUNDS 32

typedef struct FrozenTask {
        pid_t tid;
        uint64_t start_time;
        int sig;    /* to hand back on detach */
        int error;  /* < 0: not stopped: -EPERM (traced already), -ETIMEDOUT, -ESRCH, ... */
        bool seized, stopped;
} FrozenTask;

typedef struct Freezer {
        FrozenTask *tasks;
        size_t n, allocated;
        Hashmap by_tid; /* tid -> index + 1, for the tasks that are (or could not be) frozen */
} Freezer;

static void freezer_done(Freezer *fz) {
        free(fz->tasks);
        hashmap_deinit(&fz->by_tid);
        *fz = (Freezer) {};
}

static FrozenTask *freezer_find(const Freezer *fz, pid_t tid) {
        uintptr_t v = (uintptr_t) hashmap_get(&fz->by_tid, (uint64_t) tid);
        return v ? &fz->tasks[v - 1] : NULL;
}

static int freezer_add(Freezer *fz, const ScanTask *t) {
        if (GROW(fz->tasks, fz->allocated, fz->n + 1) < 0)
                return -ENOMEM;
        fz->tasks[fz->n] = (FrozenTask) { .tid = t->tid, .start_time = t->start_time };
        int r = hashmap_replace(&fz->by_tid, (uint64_t) t->tid, (void *) (uintptr_t) (fz->n + 1));
        if (r < 0)
                return r;
        fz->n++;
        return 0;
}

/* Forget a task: it is gone, or another task now has its tid. */
static void freezer_forget(Freezer *fz, FrozenTask *x) {
        if (freezer_find(fz, x->tid) == x)
                hashmap_remove(&fz->by_tid, (uint64_t) x->tid);
}

/* Is the task with x's tid a thread of the process proc_fd is bound to, started when the pass saw
 * it? Then x's tid names the task that was checked, and not one that took its tid since. */
static bool frozen_is_listed(const FrozenTask *x, int proc_fd) {
        char name[32];
        uint64_t start_time;
        snprintf(name, sizeof(name), "task/%d/stat", (int) x->tid);
        return procfd_start_time(proc_fd, name, &start_time) >= 0 && start_time == x->start_time;
}

/* Seize and interrupt (the stop is waited for afterwards, all of a round together). The task is
 * checked to be the thread listed of the process checked, before it is seized and again once it is
 * (a seized task keeps its tid): a task that took the tid meanwhile is never interrupted. */
static void frozen_seize(FrozenTask *x, int proc_fd) {
        if (!frozen_is_listed(x, proc_fd)) {
                x->error = -ESRCH;
                return;
        }
        if (ptrace(PTRACE_SEIZE, x->tid, NULL, NULL) < 0) {
                x->error = -errno;
                return;
        }
        x->seized = true;
        if (!frozen_is_listed(x, proc_fd))
                x->error = -ESRCH; /* attached but not stopped: released when the thread exits */
        else if (ptrace(PTRACE_INTERRUPT, x->tid, NULL, NULL) < 0)
                x->error = -errno; /* the same */
}

static void frozen_detach(FrozenTask *x) {
        if (!x->stopped)
                return;
        if (ptrace(PTRACE_DETACH, x->tid, NULL, (void *) (long) x->sig) < 0 && errno != ESRCH)
                log_warning_errno(-errno, "Failed to detach from thread %d: %m", (int) x->tid);
        x->stopped = false;
}

/* Wait for the stop of a task seized this round. */
static void frozen_wait(FrozenTask *x) {
        int r = wait_for_stop(x->tid, &x->sig);
        if (r < 0)
                x->error = r; /* -ESRCH: it exited; -ETIMEDOUT: it does not stop */
        else
                x->stopped = true;
}

static bool freezer_knows(const Freezer *fz, const ScanTask *t) {
        const FrozenTask *x = freezer_find(fz, t->tid);
        return x && x->start_time == t->start_time; /* frozen before, or known to be unstoppable */
}

static bool freezer_knows_all(const Freezer *fz, const ScanProcess *p) {
        for (size_t j = 0; j < p->n_tasks; j++)
                if (!freezer_knows(fz, &p->tasks[j]))
                        return false;
        return true;
}

#define PROC_FD_REFUSED (-2) /* may_stop said no: a holder left running */

/* Before anything of this round is stopped: an fd of /proc/PID for every process of the report with
 * tasks to freeze (-1 where there is none to freeze, or it is gone), and may_stop's answer for it.
 * A process of the subtree that may not be stopped ends the pass: -EACCES, with the rest of
 * proc_fds left as new_proc_fds() made it (-1). */
static int freezer_check(const Freezer *fz, const Scan *s, int *proc_fds) {
        for (size_t i = 0; i < s->n_procs; i++) {
                const ScanProcess *p = &s->procs[i];
                if (!p->selected || freezer_knows_all(fz, p))
                        continue;
                int fd = procfd_open(p->pid);
                if (fd < 0 || !s->opts.may_stop)
                        goto next;
                int r = s->opts.may_stop(fd, p->pid, p->start_time, s->opts.userdata);
                if (r == 0 && !p->holder) {
                        close(fd);
                        return log_debug_errno(-EACCES, "ptrace: process %d may not be stopped for this caller.",
                                               (int) p->pid);
                }
                if (r <= 0) {
                        close(fd);
                        fd = r == 0 ? PROC_FD_REFUSED : -1;
                }
        next:
                proc_fds[i] = fd;
        }
        return 0;
}

/* n fds, every one -1 (none), whatever path leaves them unset: close_proc_fds() closes only
 * what was opened, never fd 0. */
static int *new_proc_fds(size_t n) {
        int *fds = calloc(n ? n : 1, sizeof(int));
        for (size_t i = 0; fds && i < n; i++)
                fds[i] = -1;
        return fds;
}

static void close_proc_fds(int *proc_fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (proc_fds[i] >= 0)
                        close(proc_fds[i]);
}

/* Freeze every task of the report that is not frozen yet, once every process it belongs to has
 * been found one that may be stopped. Returns how many tasks are new: stopped now, or known now to
 * be impossible (or not allowed) to stop (they might still fork). */
static int freezer_round(Freezer *fz, const Scan *s) {
        _cleanup_free_ int *proc_fds = new_proc_fds(s->n_procs);
        size_t first = fz->n;
        int n_new = 0, r;

        if (!proc_fds)
                return -ENOMEM;
        r = freezer_check(fz, s, proc_fds);
        for (size_t i = 0; r >= 0 && i < s->n_procs; i++) {
                const ScanProcess *p = &s->procs[i];
                for (size_t j = 0; proc_fds[i] != -1 && j < p->n_tasks && r >= 0; j++) {
                        if (freezer_knows(fz, &p->tasks[j]))
                                continue;
                        if ((r = freezer_add(fz, &p->tasks[j])) < 0)
                                break;
                        FrozenTask *x = &fz->tasks[fz->n - 1];
                        if (proc_fds[i] == PROC_FD_REFUSED)
                                x->error = -EACCES;
                        else
                                frozen_seize(x, proc_fds[i]);
                }
        }
        close_proc_fds(proc_fds, s->n_procs);
        if (r < 0)
                return r;
        for (size_t i = first; i < fz->n; i++) {
                FrozenTask *x = &fz->tasks[i];
                if (x->seized && x->error == 0)
                        frozen_wait(x);
                if (x->error == -ESRCH)
                        freezer_forget(fz, x); /* gone, or not the task listed */
                else
                        n_new++;
        }
        return n_new;
}

/* Collect, freeze what is new, and again, until a round finds nothing new: then s holds the
 * report as it is while every task of it is stopped. */
static int freezer_freeze(Freezer *fz, Scan *s) {
        for (unsigned round = 0; round < FREEZE_MAX_ROUNDS; round++) {
                scan_reset(s);
                int r = scan_collect(s);
                if (r < 0)
                        return r;
                r = freezer_round(fz, s);
                if (r == -EACCES)
                        return r; /* said by freezer_check() */
                if (r < 0)
                        return log_error_errno(r, "Failed to freeze the tasks: %m");
                if (r == 0)
                        return 0;
        }
        return log_error_errno(-EBUSY, "Tasks kept appearing while the report was being frozen (%d rounds).",
                               FREEZE_MAX_ROUNDS);
}

static void freezer_thaw(Freezer *fz) {
        for (size_t i = 0; i < fz->n; i++)
                frozen_detach(&fz->tasks[i]);
}

/* Every filter task's chain, read from the stopped task. */
static int scan_dump_frozen(Freezer *fz, ScanProcess **order, size_t n_order) {
        _cleanup_free_ struct sock_filter *buf = malloc(PROG_MAX_INSNS * sizeof(struct sock_filter));
        if (!buf)
                return log_oom();
        for (size_t i = 0; i < n_order; i++)
                for (size_t j = 0; j < order[i]->n_tasks; j++) {
                        ScanTask *t = &order[i]->tasks[j];
                        if (t->mode != TASK_MODE_FILTER)
                                continue;
                        const FrozenTask *x = freezer_find(fz, t->tid);
                        if (!x)
                                t->error = -ESRCH; /* exited before it could be stopped */
                        else if (!x->stopped)
                                t->error = x->error < 0 ? x->error : -EBUSY;
                        else
                                t->error = task_read_chain(t, buf);
                }
        return 0;
}

/* Whether every task of the report was stopped while it was read: the forest's threads, and the
 * report's tasks that are not in it because they could not be stopped (a task that exited
 * before it could be has no entry: it could not fork any more). A holder the forest dropped
 * does not count. */
static bool scan_all_frozen(const Scan *s, const Forest *f, const Freezer *fz) {
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        const FrozenTask *x = freezer_find(fz, f->processes[i]->threads[j].tid);
                        if (!x || !x->stopped)
                                return false;
                }
        for (size_t i = 0; i < s->n_procs; i++) {
                const ScanProcess *p = &s->procs[i];
                if (!p->selected || (p->holder && !forest_find_process(f, p->pid)))
                        continue;
                for (size_t j = 0; j < p->n_tasks; j++) {
                        const FrozenTask *x = freezer_find(fz, p->tasks[j].tid);
                        if (x && !x->stopped)
                                return false;
                }
        }
        return true;
}

/* ---- holders the caller may not see ----
 *
 * A holder may_stop refused is left running and its chains unread: it is in the forest only if its
 * threads run without filters and a listener of the report was found in it (and the caller then
 * sees a process it may not: snapshots.c refuses, naming it, as it does for the bpf backend, which
 * reads every holder). Otherwise nothing of it is in the report, nor are its listener fds. Where it
 * may hold a listener of the report's filters, the report is not whole without it, and the pass
 * ends as for a process of the subtree that may not be stopped: -EACCES, with may_stop asked about
 * the holder once more, last, so that the caller names it. It holds one when one of its listener
 * fds is the file of a listener the report has (kcmp), and such a holder is named first; it may
 * hold one when a filter of the report could notify and the report found no listener of it: what
 * ptrace reads cannot tell whose listener an fd is, so any listener fd a refused holder has may be
 * that one, and the report is refused rather than silently without it. */

static bool frozen_refused(const Freezer *fz, const ScanProcess *p) {
        for (size_t j = 0; j < p->n_tasks; j++) {
                const FrozenTask *x = freezer_find(fz, p->tasks[j].tid);
                if (x && x->start_time == p->tasks[j].start_time && x->error == -EACCES)
                        return true;
        }
        return false;
}

/* A RET of the listener's action, or of what the program computed. */
static bool filter_may_notify(const Filter *flt) {
        for (size_t i = 0; flt->insns && i < flt->len; i++) {
                const struct sock_filter *insn = &flt->insns[i];
                if (BPF_CLASS(insn->code) == BPF_RET &&
                    (BPF_RVAL(insn->code) == BPF_A || (insn->k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF))
                        return true;
        }
        return false;
}

static bool forest_has_unclaimed_notifier(const Forest *f) {
        for (size_t i = 0; i < f->n_filters; i++)
                if (f->filters[i]->listener_id == 0 && filter_may_notify(f->filters[i]))
                        return true;
        return false;
}

static bool is_report_listener(const Forest *f, pid_t pid, int fd) {
        for (size_t i = 0; i < f->n_listeners; i++)
                for (size_t j = 0; j < f->listeners[i]->n_holders; j++) {
                        const ListenerHolder *h = &f->listeners[i]->holders[j];
                        if (syscall(SYS_kcmp, h->pid, pid, KCMP_FILE, h->fd, fd) == 0)
                                return true;
                }
        return false;
}

typedef enum HeldListeners {
        HELD_NONE,
        HELD_UNKNOWN, /* listener fds, none known to be the report's */
        HELD_REPORTS, /* a listener fd of the report's */
} HeldListeners;

static HeldListeners holder_listeners(const Forest *f, const ScanProcess *p) {
        _cleanup_free_ int *fds = NULL;
        size_t n = 0;
        if (proc_list_listener_fds(p->pid, &fds, &n) < 0 || n == 0)
                return HELD_NONE; /* gone, or holds none any more */
        for (size_t i = 0; i < n; i++)
                if (is_report_listener(f, p->pid, fds[i]))
                        return HELD_REPORTS;
        return HELD_UNKNOWN;
}

/* The refused holder that holds a listener of the report, else (with unclaimed) the first one that
 * holds some listener, else NULL. */
static const ScanProcess *find_refused_holder(const Scan *s, const Freezer *fz, const Forest *f, bool unclaimed) {
        const ScanProcess *maybe = NULL;
        for (size_t i = 0; i < s->n_procs; i++) {
                const ScanProcess *p = &s->procs[i];
                if (!p->holder || !frozen_refused(fz, p) || forest_find_process(f, p->pid))
                        continue;
                HeldListeners held = holder_listeners(f, p);
                if (held == HELD_REPORTS)
                        return p;
                if (held == HELD_UNKNOWN && unclaimed && !maybe)
                        maybe = p;
        }
        return maybe;
}

static int scan_check_refused_holders(const Scan *s, const Freezer *fz, const Forest *f) {
        const ScanProcess *p = find_refused_holder(s, fz, f, forest_has_unclaimed_notifier(f));
        if (!p)
                return 0;
        _cleanup_close_ int fd = procfd_open(p->pid);
        if (fd >= 0 && s->opts.may_stop)
                (void) s->opts.may_stop(fd, p->pid, p->start_time, s->opts.userdata);
        return log_debug_errno(-EACCES, "ptrace: process %d, which may hold a listener of the report, may not be "
                               "stopped for this caller.", (int) p->pid);
}

typedef struct FreezeJob {
        Scan *scan;
        Forest *forest;
        int r;
        uint64_t usec_freezing, usec_frozen;
} FreezeJob;

static int scan_frozen(FreezeJob *j, Freezer *fz) {
        _cleanup_free_ ScanProcess **order = NULL;
        size_t n_order = 0;
        Scan *s = j->scan;

        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = freezer_freeze(fz, s);
        uint64_t t1 = now_usec(CLOCK_MONOTONIC);
        if (r >= 0)
                r = scan_ancestry_order(s, &order, &n_order);
        if (r >= 0)
                r = scan_dump_frozen(fz, order, n_order);
        if (r >= 0)
                r = scan_place(s, j->forest, order, n_order);
        if (r >= 0)
                r = scan_emit(s, j->forest);
        if (r >= 0)
                r = scan_restrict_holders(s, j->forest);
        if (r >= 0)
                r = scan_check_refused_holders(s, fz, j->forest);
        if (r < 0)
                return r;
        bool frozen = scan_all_frozen(s, j->forest, fz);
        j->forest->snapshot.consistency = frozen ? SNAPSHOT_CONSISTENCY_FROZEN : SNAPSHOT_CONSISTENCY_NONE;
        j->usec_freezing = t1 - t0;
        j->usec_frozen = now_usec(CLOCK_MONOTONIC) - t0;
        return 0;
}

static void *freeze_worker(void *userdata) {
        FreezeJob *j = userdata;
        Freezer fz = {};

        j->r = scan_frozen(j, &fz);
        freezer_thaw(&fz); /* on every path; what is left attached goes with this thread */
        /* Messages only now: a frozen journald would not read them. */
        if (j->r >= 0 && j->forest->snapshot.consistency != SNAPSHOT_CONSISTENCY_FROZEN)
                log_warning("ptrace: not every task of the report could be stopped: the snapshot is not frozen.");
        log_debug("ptrace: %zu tasks frozen in %" PRIu64 " us, stopped for %" PRIu64 " us in all", fz.n,
                  j->usec_freezing, j->usec_frozen);
        freezer_done(&fz);
        return NULL;
}

static int scan_run_frozen(Scan *s, Forest *f) {
        FreezeJob j = { .scan = s, .forest = f, .r = -EIO };
        pthread_t thread;

        int r = pthread_create(&thread, NULL, freeze_worker, &j);
        if (r != 0)
                return log_error_errno(-r, "Failed to start the ptrace thread: %m");
        r = pthread_join(thread, NULL);
        if (r != 0)
                return log_error_errno(-r, "Failed to join the ptrace thread: %m");
        return j.r;
}

int ptrace_scan(const ScanOptions *opts, Forest **ret, UnreadableTask **ret_unreadable, size_t *ret_n_unreadable) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ UnreadableTask *unreadable = NULL;
        size_t n_unreadable = 0;
        Scan s = { .opts = opts ? *opts : SCAN_OPTIONS_DEFAULT };
        int r;

        r = check_tracer();
        if (r < 0)
                return r;
        r = forest_new_ptrace(&s.opts, &f);
        if (r < 0)
                return log_error_errno(r, "Failed to create the forest: %m");

        r = s.opts.freeze ? scan_run_frozen(&s, f) : scan_run(&s, f);
        if (r >= 0)
                r = collect_unreadable(&s, &unreadable, &n_unreadable);
        scan_done(&s);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(f);
        if (ret_unreadable) {
                *ret_unreadable = TAKE_PTR(unreadable);
                *ret_n_unreadable = n_unreadable;
        }
        return 0;
}
