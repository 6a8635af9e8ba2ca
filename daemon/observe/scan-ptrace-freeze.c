/* scan-ptrace-freeze.c: a ptrace pass with ScanOptions.freeze: every task of the report stopped
 * before any is read and kept stopped until the forest is built, in one tracer thread; and the
 * holders the caller may not see */
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "observe/listeners.h"
#include "observe/procfd.h"
#include "observe/scan-ptrace-collect.h"
#include "observe/scan-ptrace-dump.h"
#include "observe/scan-ptrace-forest.h"
#include "observe/scan-ptrace-freeze.h"

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
 * "frozen", and is unreadable if it runs under filters. Nothing is logged while any task is
 * stopped (a stopped journald would not read it, and the writer would wait for it): why the pass
 * failed is kept in Scan.error, and a failed detach in the Freezer, for after the thaw. */

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
        pid_t detach_failed; /* the first task whose detach failed, logged after the thaw */
        int detach_error;
        size_t n_detach_failed;
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

static void frozen_detach(Freezer *fz, FrozenTask *x) {
        if (!x->stopped)
                return;
        if (ptrace(PTRACE_DETACH, x->tid, NULL, (void *) (long) x->sig) < 0 && errno != ESRCH &&
            fz->n_detach_failed++ == 0) {
                fz->detach_failed = x->tid;
                fz->detach_error = -errno;
        }
        x->stopped = false;
}

/* Wait for the stop of a task seized this round. */
static void frozen_wait(FrozenTask *x) {
        int r = ptrace_wait_for_stop(x->tid, &x->sig);
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
static int freezer_check(const Freezer *fz, Scan *s, int *proc_fds) {
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
                        return scan_error_set(&s->error, LOG_LEVEL_DEBUG, -EACCES,
                                              "process %d may not be stopped for this caller", (int) p->pid);
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
static int freezer_round(Freezer *fz, Scan *s) {
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
                ptrace_scan_reset(s);
                int r = ptrace_scan_collect(s);
                if (r < 0)
                        return r;
                r = freezer_round(fz, s);
                if (r < 0)
                        return scan_error_set(&s->error, LOG_LEVEL_ERR, r, "Failed to freeze the tasks");
                if (r == 0)
                        return 0;
        }
        return scan_error_set(&s->error, LOG_LEVEL_ERR, -EBUSY,
                              "Tasks kept appearing while the report was being frozen (%d rounds)", FREEZE_MAX_ROUNDS);
}

static void freezer_thaw(Freezer *fz) {
        for (size_t i = 0; i < fz->n; i++)
                frozen_detach(fz, &fz->tasks[i]);
}

/* Every filter task's chain, read from the stopped task. */
static int scan_dump_frozen(Freezer *fz, ScanProcess **order, size_t n_order) {
        _cleanup_free_ struct sock_filter *buf = malloc(PROG_MAX_INSNS * sizeof(struct sock_filter));
        if (!buf)
                return -ENOMEM;
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
                                t->error = ptrace_task_read_chain(t, buf);
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
                        if (kcmp_file(h->pid, h->fd, pid, fd) == 0) /* a leader that exited: its threads' */
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

static int scan_check_refused_holders(Scan *s, const Freezer *fz, const Forest *f) {
        const ScanProcess *p = find_refused_holder(s, fz, f, forest_has_unclaimed_notifier(f));
        if (!p)
                return 0;
        _cleanup_close_ int fd = procfd_open(p->pid);
        if (fd >= 0 && s->opts.may_stop)
                (void) s->opts.may_stop(fd, p->pid, p->start_time, s->opts.userdata);
        return scan_error_set(&s->error, LOG_LEVEL_DEBUG, -EACCES,
                              "process %d, which may hold a listener of the report, may not be stopped for this caller",
                              (int) p->pid);
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
        if (r < 0)
                return r;
        r = ptrace_scan_ancestry_order(s, &order, &n_order);
        if (r < 0)
                return r;
        r = scan_dump_frozen(fz, order, n_order);
        if (r < 0)
                return r;
        r = ptrace_scan_place(s, j->forest, order, n_order);
        if (r < 0)
                return r;
        r = ptrace_scan_emit(s, j->forest);
        if (r < 0)
                return r;
        r = ptrace_scan_restrict_holders(s, j->forest);
        if (r < 0)
                return r;
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
        if (fz.n_detach_failed > 0)
                log_warning_errno(fz.detach_error, "Failed to detach from %zu thread(s), thread %d first: %m",
                                  fz.n_detach_failed, (int) fz.detach_failed);
        listener_notes_log(&j->scan->listener_notes);
        if (j->r >= 0 && j->forest->snapshot.consistency != SNAPSHOT_CONSISTENCY_FROZEN)
                log_warning("ptrace: not every task of the report could be stopped: the snapshot is not frozen.");
        log_debug("ptrace: %zu tasks frozen in %" PRIu64 " us, stopped for %" PRIu64 " us in all", fz.n,
                  j->usec_freezing, j->usec_frozen);
        freezer_done(&fz);
        return NULL;
}

int ptrace_scan_run_frozen(Scan *s, Forest *f) {
        FreezeJob j = { .scan = s, .forest = f, .r = -EIO };
        pthread_t thread;

        int r = pthread_create(&thread, NULL, freeze_worker, &j);
        if (r != 0)
                return scan_error_set(&s->error, LOG_LEVEL_ERR, -r, "Failed to start the ptrace thread");
        r = pthread_join(thread, NULL);
        if (r != 0)
                return scan_error_set(&s->error, LOG_LEVEL_ERR, -r, "Failed to join the ptrace thread");
        return j.r;
}
