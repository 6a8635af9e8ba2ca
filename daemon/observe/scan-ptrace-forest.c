/* scan-ptrace-forest.c: steps 3 and 4 of a ptrace pass: the dumped chains placed as filter nodes by
 * hash-consing among related tasks (identity inferred), then the processes, threads and listeners
 * put in the Forest */
#include <linux/seccomp.h>
#include <stdlib.h>
#include <time.h>

#include "observe/procfd.h"
#include "observe/scan-ptrace-collect.h"
#include "observe/scan-ptrace-forest.h"

/* Step 3: place. */

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
                a = ptrace_scan_find_process(s, a->ppid);
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

int ptrace_scan_place(Scan *s, Forest *f, ScanProcess **order, size_t n_order) {
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

/* Step 4: emit. */

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
        if (ptrace_task_is_dead(p->status.state)) /* a zombie leader: what its status keeps showing */
                process_set_exited_leader(fp, ptrace_task_mode(p->status.seccomp_mode),
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

int ptrace_collect_unreadable(const Scan *s, UnreadableTask **ret, size_t *ret_n) {
        _cleanup_free_ UnreadableTask *list = NULL;
        size_t n = 0, allocated = 0;

        for (size_t i = 0; i < s->n_procs; i++)
                for (size_t j = 0; j < s->procs[i].n_tasks; j++) {
                        const ScanTask *t = &s->procs[i].tasks[j];
                        if (!s->procs[i].selected || t->error >= 0)
                                continue;
                        if (GROW(list, allocated, n + 1) < 0)
                                return -ENOMEM;
                        list[n++] = (UnreadableTask) { .tid = t->tid, .error = t->error };
                }
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

int ptrace_forest_new(const ScanOptions *opts, Forest **ret) {
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
int ptrace_check_tracer(ScanError *e) {
        ProcStatus st;
        int r = proc_read_status(gettid(), &st);
        if (r < 0)
                return scan_error_set(e, LOG_LEVEL_ERR, r, "Failed to read our own status");
        if (st.seccomp_mode != SECCOMP_MODE_DISABLED)
                return scan_error_set(e, LOG_LEVEL_ERR, -EPERM, "The ptrace backend cannot run under seccomp");
        return 0;
}

int ptrace_scan_emit(Scan *s, Forest *f) {
        char *error = NULL;
        int r;

        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].selected) {
                        r = emit_process(f, &s->procs[i], &s->opts);
                        if (r < 0)
                                return scan_error_set(&s->error, LOG_LEVEL_ERR, r, "Failed to add process %d",
                                                      (int) s->procs[i].pid);
                }

        r = forest_link(f, &error);
        if (r < 0) {
                scan_error_set(&s->error, LOG_LEVEL_ERR, r, "The forest is inconsistent (%s)", error ? error : "?");
                free(error);
                return r;
        }
        return listeners_collect(f, &s->error, &s->listener_notes);
}

/* Every process of the report but those selected for their listener fds alone: the subtree's,
 * and those a frozen scan found forked meanwhile. */
static bool scan_subtree_member(const Process *p, void *userdata) {
        const ScanProcess *sp = ptrace_scan_find_process(userdata, p->pid);
        return !(sp && sp->holder);
}

/* Processes selected for their listener fds that hold no listener of the report go again. The
 * subtree is the one the scan selected, not the one the forest's ppid links give: the forest
 * lacks the processes it could not read (the subtree's root, say), and would lose their
 * descendants. */
int ptrace_scan_restrict_holders(Scan *s, Forest *f) {
        if (!ptrace_scan_has_holders(s))
                return 0;
        int r = s->opts.root > 0 ? forest_restrict_to_members(f, s->opts.root, scan_subtree_member, (void *) s)
                                 : forest_restrict_to_subtree(f, 0);
        return r < 0 ? scan_error_set(&s->error, LOG_LEVEL_ERR, r, "Failed to restrict the forest to the report") : 0;
}
