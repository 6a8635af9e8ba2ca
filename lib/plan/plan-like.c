/* plan-like.c: the one-task snapshot `sectreectl run --like` restores: one thread's chain, and
 * nothing else of the snapshot it was cut from */
#include "plan/plan-like.h"

#include <stdarg.h>
#include <stdio.h>

static int refuse(char **error, const char *format, ...) _printf_(2, 3);
static int refuse(char **error, const char *format, ...) {
        va_list ap;
        if (error) {
                va_start(ap, format);
                if (vasprintf(error, format, ap) < 0)
                        *error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

static bool on_chain(const Filter *head, uint64_t id) {
        for (const Filter *x = head; x; x = x->parent)
                if (x->id == id)
                        return true;
        return false;
}

/* Listeners of the chain's filters stay, held only by the process (if it held them); the others
 * go. */
static void keep_chain_listeners(Forest *f, const Filter *head, pid_t pid) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_listeners; i++) {
                Listener *l = f->listeners[i];
                size_t k = 0;
                if (!on_chain(head, l->filter_id)) {
                        free(l->holders);
                        free(l);
                        continue;
                }
                for (size_t j = 0; j < l->n_holders; j++)
                        if (l->holders[j].pid == pid)
                                l->holders[k++] = l->holders[j];
                l->n_holders = k;
                f->listeners[n++] = l;
        }
        f->n_listeners = n;
}

int plan_snapshot_keep_task(Forest *f, pid_t tid, char **error) {
        Process *p = NULL;
        Task *t;
        const Filter *head;
        bool nnp;
        pid_t pid;
        int r;

        if (error)
                *error = NULL;
        if (!f->linked && (r = forest_link(f, error)) < 0)
                return r;
        t = forest_find_task(f, tid, &p);
        if (!t)
                return refuse(error, "the snapshot has no thread %d", tid);
        if (t->mode != TASK_MODE_FILTER || !t->filter)
                return refuse(error, "thread %d runs no seccomp filter (mode %s): there is no chain to copy", tid,
                              task_mode_to_string(t->mode));
        pid = p->pid;
        head = t->filter;
        nnp = task_no_new_privs(p, t);
        keep_chain_listeners(f, head, pid);
        /* every other process, then every other thread of this one */
        for (size_t i = f->n_processes; i > 0; i--)
                if (f->processes[i - 1]->pid != pid)
                        process_free(forest_take_process(f, f->processes[i - 1]->pid));
        for (size_t i = p->n_threads; i > 0; i--)
                if (p->threads[i - 1].tid != tid && (r = forest_remove_thread(f, pid, p->threads[i - 1].tid)) < 0)
                        return r;
        /* its only thread is its leader, and it is a top process of the restore: no exited leader
         * stands beside it any more (its record would name a thread as its leader), and the
         * process's no_new_privs (the leader's, which /proc shows and the restore is checked
         * against) is the thread's own, which may differ from the old leader's */
        p->threads[0].tid = pid;
        p->threads[0].nnp = TASK_NNP_PROCESS;
        p->no_new_privs = nnp;
        p->has_exited_leader = false;
        p->exited_leader = (Task) {};
        p->ppid = 0;
        f->root = pid;
        r = forest_link(f, error);
        if (r >= 0)
                r = forest_drop_unreachable_filters(f, NULL, NULL);
        return r;
}
