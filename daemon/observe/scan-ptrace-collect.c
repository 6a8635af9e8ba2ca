/* scan-ptrace-collect.c: step 1 of a ptrace pass: every process of /proc with its threads' status
 * and start times, the processes reported and the listener holders with them, in ancestry order;
 * and the pass's records freed */
#include <linux/seccomp.h>
#include <stdlib.h>

#include "observe/procfd.h"
#include "observe/scan-ptrace-collect.h"

void ptrace_task_clear_chain(ScanTask *t) {
        for (size_t i = 0; i < t->n_chain; i++)
                free(t->chain[i].insns);
        t->n_chain = 0;
}

void ptrace_scan_reset(Scan *s) {
        for (size_t i = 0; i < s->n_procs; i++) {
                ScanProcess *p = &s->procs[i];
                for (size_t j = 0; j < p->n_tasks; j++) {
                        ptrace_task_clear_chain(&p->tasks[j]);
                        free(p->tasks[j].chain);
                        free(p->tasks[j].nodes);
                }
                free(p->tasks);
        }
        free(s->procs);
        s->procs = NULL;
        s->n_procs = 0;
}

void ptrace_scan_done(Scan *s) {
        ptrace_scan_reset(s);
        *s = (Scan) {};
}

static int cmp_process_pid(const void *key, const void *elem) {
        pid_t pid = *(const pid_t *) key, other = ((const ScanProcess *) elem)->pid;
        return pid < other ? -1 : pid > other;
}

ScanProcess *ptrace_scan_find_process(const Scan *s, pid_t pid) {
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
                return scan_error_set(&s->error, LOG_LEVEL_ERR, r, "Failed to list /proc");
        s->procs = calloc(n ? n : 1, sizeof(ScanProcess));
        if (!s->procs)
                return -ENOMEM;

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

bool ptrace_task_is_dead(char state) {
        return state == 'Z' || state == 'X' || state == 'x';
}

static int scan_task_init(ScanTask *t, pid_t tid, const ProcStatus *st) {
        *t = (ScanTask) { .tid = tid };
        if (ptrace_task_is_dead(st->state))
                return -ESRCH; /* a zombie leader is not reported; its live threads are */
        t->mode = ptrace_task_mode(st->seccomp_mode);
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

        if (p->status.threads == 1 && !ptrace_task_is_dead(p->status.state)) {
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
                p = ptrace_scan_find_process(s, p->ppid);
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
                        return r;
                if (r < 0 || n == 0)
                        continue; /* gone, or no listener */
                if (!p->tasks && (r = scan_collect_threads(p)) < 0)
                        return scan_error_set(&s->error, LOG_LEVEL_ERR, r, "Failed to read the threads of process %d",
                                              (int) p->pid);
                if (p->n_tasks == 0)
                        continue;
                scan_read_start_times(p);
                p->selected = p->holder = p->n_tasks > 0;
        }
        return 0;
}

bool ptrace_scan_has_holders(const Scan *s) {
        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].holder)
                        return true;
        return false;
}

static int scan_select(Scan *s) {
        int r;

        /* Not an error to log here: the daemon rescans processes that may have just exited. */
        if (s->opts.root > 0 && !ptrace_scan_find_process(s, s->opts.root))
                return scan_error_set(&s->error, LOG_LEVEL_DEBUG, -ESRCH, "Process %d does not exist",
                                      (int) s->opts.root);

        for (size_t i = 0; i < s->n_procs; i++) {
                ScanProcess *p = &s->procs[i];
                bool candidate = s->opts.root > 0 ? (s->opts.root_alone ? p->pid == s->opts.root
                                                                         : process_in_subtree(s, p, s->opts.root))
                                                  : !is_kernel_thread(p);
                if (!candidate)
                        continue;
                r = scan_collect_threads(p);
                if (r < 0)
                        return scan_error_set(&s->error, LOG_LEVEL_ERR, r, "Failed to read the threads of process %d",
                                              (int) p->pid);
                if (p->n_tasks == 0 || !(s->opts.root > 0 || scan_process_has_seccomp(p)))
                        continue;
                scan_read_start_times(p);
                p->selected = p->n_tasks > 0;
        }
        return scan_select_holders(s);
}

static unsigned scan_process_depth(const Scan *s, const ScanProcess *p) {
        unsigned depth = 0;
        for (const ScanProcess *a = ptrace_scan_find_process(s, p->ppid); a && depth <= s->n_procs;
             a = ptrace_scan_find_process(s, a->ppid))
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
int ptrace_scan_ancestry_order(Scan *s, ScanProcess ***ret, size_t *ret_n) {
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

int ptrace_scan_collect(Scan *s) {
        int r = scan_collect_processes(s);
        return r < 0 ? r : scan_select(s);
}
