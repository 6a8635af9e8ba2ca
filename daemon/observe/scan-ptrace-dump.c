/* scan-ptrace-dump.c: step 2 of a ptrace pass, reading each task: seized, interrupted, its chain
 * dumped with PTRACE_SECCOMP_GET_FILTER, detached, one at a time by short-lived tracer threads */
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "observe/scan-ptrace-collect.h"
#include "observe/scan-ptrace-dump.h"

#define STOP_TIMEOUT_USEC (200 * 1000ULL) /* a task that does not stop in this time is given up */

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
int ptrace_wait_for_stop(pid_t tid, int *ret_sig) {
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

        ptrace_task_clear_chain(t);
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
int ptrace_task_read_chain(ScanTask *t, struct sock_filter *buf) {
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

/* The chain of the stopped task, once it is known to be the one we listed. */
static int task_read_checked(ScanTask *t, struct sock_filter *buf) {
        int r = task_check_identity(t);
        if (r < 0)
                return r;
        return ptrace_task_read_chain(t, buf);
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
        r = ptrace_wait_for_stop(t->tid, &sig);
        if (r == -ETIMEDOUT)
                *abandon = true;
        if (r < 0)
                return r; /* an exited tracee needs no detach; the worker's exit releases its zombie */

        r = task_read_checked(t, buf);

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

static int dump_all(DumpQueue *q, ScanError *e) {
        while (q->next < q->n) {
                pthread_t thread;
                q->n_workers++;
                int r = pthread_create(&thread, NULL, dump_worker, q);
                if (r != 0)
                        return scan_error_set(e, LOG_LEVEL_ERR, -r, "Failed to start the ptrace thread");
                r = pthread_join(thread, NULL);
                if (r != 0)
                        return scan_error_set(e, LOG_LEVEL_ERR, -r, "Failed to join the ptrace thread");
        }
        return 0;
}

int ptrace_scan_dump(Scan *s, ScanProcess **order, size_t n_order) {
        _cleanup_free_ ScanTask **tasks = NULL;
        _cleanup_free_ struct sock_filter *buf = NULL;
        size_t n = 0, allocated = 0;

        for (size_t i = 0; i < n_order; i++)
                for (size_t j = 0; j < order[i]->n_tasks; j++) {
                        ScanTask *t = &order[i]->tasks[j];
                        if (t->mode != TASK_MODE_FILTER)
                                continue; /* strict and disabled tasks have no filters to read */
                        if (GROW(tasks, allocated, n + 1) < 0)
                                return -ENOMEM;
                        tasks[n++] = t;
                }
        if (n == 0)
                return 0;

        buf = malloc(PROG_MAX_INSNS * sizeof(struct sock_filter));
        if (!buf)
                return -ENOMEM;

        DumpQueue q = { .tasks = tasks, .n = n, .buf = buf };
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        int r = dump_all(&q, &s->error);
        uint64_t elapsed = now_usec(CLOCK_MONOTONIC) - start;
        log_debug("ptrace: dumped %zu tasks in %" PRIu64 " us (%" PRIu64 " us per task, %" PRIu64
                  " us stopped per task), %u tracer thread(s)",
                  n, elapsed, elapsed / n, q.usec_stopped / n, q.n_workers);
        return r;
}
