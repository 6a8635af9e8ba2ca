/* live.c: the live forest: made, freed, read, its budget, and replaced whole by a full pass with
 * the differences announced; batches of events are applied in live-apply.c and undone in
 * live-undo.c */
#include "core/live.h"

#include <time.h>

#include "core/budget.h"
#include "core/live-private.h"

int live_new(Forest *f, Live **ret) {
        _cleanup_(forest_freep) Forest *forest = f ? f : forest_new();
        if (!forest)
                return -ENOMEM;
        Live *l = calloc(1, sizeof(Live));
        if (!l)
                return -ENOMEM;
        int r = live_adopt(l, TAKE_PTR(forest));
        if (r < 0)
                return live_free(l), r;
        *ret = l;
        return 0;
}

Live *live_free(Live *l) {
        if (!l)
                return NULL;
        live_children_reset(l);
        hashmap_deinit(&l->children);
        hashmap_deinit(&l->uses);
        budget_deinit(&l->budget);
        free(l->candidates);
        forest_free(l->forest);
        free(l);
        return NULL;
}

const Forest *live_forest(const Live *l) {
        return l->forest;
}

int live_linked(Live *l, const Forest **ret, char **error) {
        if (error)
                *error = NULL;
        if (!l->forest->linked) {
                int r = forest_link(l->forest, error);
                if (r < 0)
                        return r;
        }
        *ret = l->forest;
        return 0;
}

LiveCounts live_counts(const Live *l) {
        return (LiveCounts) {
                .tasks = l->n_threads,
                .filters = l->forest->n_filters,
                .listeners = l->forest->n_listeners,
                .over_budget = l->budget.n_over,
        };
}

int live_set_budget(Live *l, uint64_t insns_per_uid) {
        const Forest *f;
        l->budget.insns_per_uid = insns_per_uid; /* for what comes in, even if what is here cannot be counted */
        int r = live_linked(l, &f, NULL);
        if (r < 0)
                return r;
        return budget_apply(&l->budget, l->forest);
}

uint64_t live_budget_insns(const Live *l) {
        return l->budget.insns_per_uid;
}

uint64_t live_budget_kept(const Live *l, uid_t uid) {
        return budget_kept(&l->budget, uid);
}

/* ---- full passes ---- */

static bool same_thread(const Task *a, const Task *b) {
        return a && b && a->tid == b->tid && a->start_time == b->start_time;
}

static bool forest_has_thread(const Forest *f, pid_t pid, const Task *t) {
        return same_thread(process_find_thread(forest_find_process(f, pid), t->tid), t);
}

static int announce(LiveChanges *c, LiveChangeType type, pid_t tid, pid_t tgid, const char *comm) {
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        LiveChange *x = live_change_push(c, type);
        x->announce_only = true;
        x->tid = tid;
        x->tgid = tgid;
        if (comm)
                memcpy(x->comm, comm, sizeof(x->comm));
        return 0;
}

/* The filters of t's chain that old lacks, each once (done), announced as installed by t. */
static int announce_new_filters(LiveChanges *c, const Forest *old, const Process *p, const Task *t, Hashmap *done) {
        for (const Filter *x = t->filter; x; x = x->parent) {
                if (forest_find_filter(old, x->id) || hashmap_get(done, x->id))
                        continue;
                int r = hashmap_put(done, x->id, (void *) x);
                if (r >= 0)
                        r = announce(c, LIVE_FILTER_ATTACHED, t->tid, p->pid, p->comm);
                if (r < 0)
                        return r;
                c->changes[c->n - 1].filter_id = x->id;
                c->changes[c->n - 1].parent_id = x->parent_id;
                c->changes[c->n - 1].new_filter = true;
        }
        return 0;
}

/* A process of both forests (the same one: its start time) that has another name in new. */
static int announce_rename(LiveChanges *c, const Forest *old, const Process *p) {
        const Process *was = forest_find_process(old, p->pid);
        if (!was || was->start_time != p->start_time || strncmp(was->comm, p->comm, sizeof(p->comm)) == 0)
                return 0;
        int r = announce(c, LIVE_PROCESS_UPDATED, p->pid, p->pid, p->comm);
        if (r < 0)
                return r;
        memcpy(c->changes[c->n - 1].old.comm, was->comm, sizeof(was->comm));
        return 0;
}

/* What signals say about a full pass that replaced old with new (linked). */
static int announce_differences(LiveChanges *c, const Forest *old, const Forest *new) {
        _cleanup_(hashmap_deinit) Hashmap done = {};
        int r;

        for (size_t i = 0; i < old->n_processes; i++)
                for (size_t j = 0; j < old->processes[i]->n_threads; j++) {
                        const Task *t = &old->processes[i]->threads[j];
                        if (!forest_has_thread(new, old->processes[i]->pid, t) &&
                            (r = announce(c, LIVE_TASK_EXITED, t->tid, old->processes[i]->pid, NULL)) < 0)
                                return r;
                }
        for (size_t i = 0; i < new->n_processes; i++) {
                const Process *p = new->processes[i];
                if ((r = announce_rename(c, old, p)) < 0)
                        return r;
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j];
                        if (!forest_has_thread(old, p->pid, t) &&
                            (r = announce(c, LIVE_TASK_ADDED, t->tid, p->pid, p->comm)) < 0)
                                return r;
                        if ((r = announce_new_filters(c, old, p, t, &done)) < 0)
                                return r;
                }
        }
        return 0;
}

int live_replace(Live *l, Forest *f, bool announce_them, LiveChanges *c) {
        _cleanup_(forest_freep) Forest *mine = f;
        if (!f->linked)
                return -EINVAL;
        int r = live_changes_reserve(c);
        if (r < 0)
                return r;
        /* Counted afresh; undoing it counts the old forest again (live_rollback()). */
        r = budget_apply(&l->budget, f);
        if (r < 0)
                return r;
        Forest *old = l->forest;
        r = live_adopt(l, TAKE_PTR(mine));
        if (r < 0) {
                forest_free(l->forest);
                (void) live_adopt(l, old);
                return r;
        }
        LiveChange *x = live_change_push(c, LIVE_REPLACED);
        x->old_forest = old;
        c->replaced = true;
        return announce_them ? announce_differences(c, old, l->forest) : 0;
}
