/* plan-analyse.c: the planner's analysis of a snapshot: which process installs each filter, what
 * each process inherits when it is created, and which task creates it (see docs/restore.md) */
#include <stdarg.h>

#include <limits.h>

#include "plan/plan-analyse.h"

static unsigned depth_of(const Filter *f) {
        return f ? f->depth : 0;
}

/* ---- the process tree ---- */

static int alloc_analysis(Planner *p) {
        size_t np1 = p->np + 1, nf = p->nf ?: 1;

        p->pparent = calloc(np1, sizeof(size_t));
        p->pdepth = calloc(np1, sizeof(size_t));
        p->pchildren = calloc(np1, sizeof(IdxVec));
        p->porder = calloc(np1, sizeof(size_t));
        p->common = calloc(np1, sizeof(Filter *));
        p->forced = calloc(nf, sizeof(size_t));
        p->tops = calloc(nf, sizeof(IdxVec));
        p->owner = calloc(nf, sizeof(size_t));
        p->base = calloc(np1, sizeof(Filter *));
        p->site_kind = calloc(np1, sizeof(SiteKind));
        p->creator = calloc(np1, sizeof(size_t));
        p->site_node = calloc(np1, sizeof(Filter *));
        p->sites_at_filter = calloc(nf, sizeof(IdxVec));
        p->sites_at_root = calloc(np1, sizeof(IdxVec));
        p->filter_children = calloc(nf, sizeof(IdxVec));
        p->root_children = calloc(np1, sizeof(IdxVec));
        p->threads_at_filter = calloc(nf, sizeof(IdxVec));
        p->threads_at_root = calloc(np1, sizeof(IdxVec));
        p->rep = calloc(nf, sizeof(size_t));
        p->thread_base = calloc(np1, sizeof(size_t));
        if (!p->pparent || !p->pdepth || !p->pchildren || !p->porder || !p->common || !p->forced || !p->tops ||
            !p->owner || !p->base || !p->site_kind || !p->creator || !p->site_node || !p->sites_at_filter ||
            !p->sites_at_root || !p->filter_children || !p->root_children || !p->threads_at_filter ||
            !p->threads_at_root || !p->rep || !p->thread_base)
                return -ENOMEM;
        for (size_t i = 0; i < p->nf; i++) {
                p->forced[i] = PLAN_NONE;
                p->owner[i] = PLAN_NONE;
                p->rep[i] = PLAN_NONE;
        }
        return 0;
}

void plan_analysis_free(Planner *p) {
        size_t np1 = p->np + 1;

        free(p->pparent);
        free(p->pdepth);
        idxvec_array_free(p->pchildren, np1);
        free(p->porder);
        free(p->common);
        free(p->forced);
        idxvec_array_free(p->tops, p->nf);
        free(p->owner);
        free(p->base);
        free(p->site_kind);
        free(p->creator);
        free(p->site_node);
        idxvec_array_free(p->sites_at_filter, p->nf);
        idxvec_array_free(p->sites_at_root, np1);
        idxvec_array_free(p->filter_children, p->nf);
        idxvec_array_free(p->root_children, np1);
        idxvec_array_free(p->threads_at_filter, p->nf);
        idxvec_array_free(p->threads_at_root, np1);
        free(p->rep);
        free(p->thread_base);
        hashmap_deinit(&p->process_by_pid);
}

/* Parent of every process (ROOT when its parent is not in the snapshot), children, and an order
 * that puts parents first. */
static int build_process_tree(Planner *p) {
        size_t head = 0, tail = 0;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < p->np; i++)
                r = hashmap_put(&p->process_by_pid, (uint64_t) p->s->processes[i]->pid, (void *) (uintptr_t) (i + 1));
        for (size_t i = 0; r >= 0 && i < p->np; i++) {
                uintptr_t x = (uintptr_t) hashmap_get(&p->process_by_pid, (uint64_t) p->s->processes[i]->ppid);
                p->pparent[i] = x && x - 1 != i ? x - 1 : p->root;
                r = idxvec_push(&p->pchildren[p->pparent[i]], i);
        }
        if (r < 0)
                return r;
        p->pparent[p->root] = PLAN_NONE;
        p->porder[tail++] = p->root;
        while (head < tail) {
                size_t x = p->porder[head++];
                for (size_t i = 0; i < p->pchildren[x].n; i++) {
                        size_t c = p->pchildren[x].v[i];
                        p->pdepth[c] = p->pdepth[x] + 1;
                        p->porder[tail++] = c;
                }
        }
        if (tail != p->np + 1) /* the validator refuses ppid cycles: cannot happen */
                return plan_refuse(p, "the processes' ppid links form a cycle");
        return 0;
}

/* Is process a the same as b or one of its ancestors? */
static bool process_is_ancestor(const Planner *p, size_t a, size_t b) {
        while (b != PLAN_NONE && p->pdepth[b] > p->pdepth[a])
                b = p->pparent[b];
        return a == b;
}

/* ---- what every task of a subtree shares ---- */

/* A marker for "no thread seen yet" in the fold below. */
static const Filter unset_marker;
#define UNSET (&unset_marker)

static const Filter *lca_fold(const Filter *acc, const Filter *x) {
        if (acc == UNSET)
                return x;
        if (x == UNSET)
                return acc;
        return filter_lca(acc, x);
}

/* A leader that exited had as many filters as /proc/PID/status says (their identity is gone): what
 * every task of its process started with is at most that deep. */
static const Filter *below_exited_leader(const Process *proc, const Filter *acc) {
        unsigned n = !proc->has_exited_leader                       ? UINT_MAX
                     : proc->exited_leader.mode == TASK_MODE_FILTER ? proc->exited_leader.filter_count
                                                                    : 0;
        while (acc && acc->depth > n)
                acc = acc->parent;
        return acc;
}

/* M(P) for every process, children first: the longest chain that every thread of P's subtree
 * starts with (NULL: the empty chain). */
static void compute_common(Planner *p) {
        for (size_t k = p->np + 1; k > 0; k--) {
                size_t i = p->porder[k - 1];
                const Filter *acc = UNSET;

                if (i != p->root) {
                        const Process *proc = p->s->processes[i];
                        for (size_t j = 0; j < proc->n_threads; j++)
                                acc = lca_fold(acc, proc->threads[j].mode == TASK_MODE_FILTER ? proc->threads[j].filter : NULL);
                }
                for (size_t j = 0; j < p->pchildren[i].n; j++)
                        acc = lca_fold(acc, p->common[p->pchildren[i].v[j]]);
                if (i != p->root && acc != UNSET)
                        acc = below_exited_leader(p->s->processes[i], acc);
                p->common[i] = acc == UNSET ? NULL : acc;
        }
        p->common[p->root] = NULL; /* the restore root runs without filters */
}

/* A filter held by some task of P but not by all of P's subtree can only have been installed in
 * P: nothing else could give it to some of P's tasks and not to the others. */
static int compute_forced(Planner *p) {
        _cleanup_free_ size_t *stamp = calloc(p->nf ?: 1, sizeof(size_t));

        if (!stamp)
                return -ENOMEM;
        for (size_t i = 0; i < p->np; i++) {
                const Process *proc = p->s->processes[i];
                unsigned floor = depth_of(p->common[i]);

                for (size_t j = 0; j < proc->n_threads; j++)
                        for (const Filter *f = proc->threads[j].filter; f && f->depth > floor; f = f->parent) {
                                if (stamp[f->index] == i + 1)
                                        break;
                                stamp[f->index] = i + 1;
                                if (p->forced[f->index] != PLAN_NONE)
                                        return plan_refuse(p, "filter %" PRIu64 " would have to be installed twice, by %s and by %s: "
                                                           "in each, some tasks (or descendants) run without it, so neither "
                                                           "can have inherited it, and a filter is one kernel object",
                                                           f->id, PROCESS_NAME(p, p->forced[f->index]), PROCESS_NAME(p, i));
                                p->forced[f->index] = i;
                        }
        }
        return 0;
}

/* The processes whose whole subtree holds a filter while their parent's does not. */
static int compute_tops(Planner *p) {
        for (size_t i = 0; i < p->np; i++) {
                unsigned floor = depth_of(p->common[p->pparent[i]]);

                for (const Filter *f = p->common[i]; f && f->depth > floor; f = f->parent) {
                        int r = idxvec_push(&p->tops[f->index], i);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* A filter held by the whole subtrees of several processes is installed by a helper task in a
 * process below all their parents, which must therefore lie on one line of descent (a fork puts
 * its child below the forking process or, with CLONE_PARENT or by reparenting, above it): the
 * process installing the filter it is stacked on when that one is below them all, else the
 * deepest of the parents. */
static int owner_of_shared(Planner *p, const Filter *f, size_t *ret) {
        const IdxVec *t = &p->tops[f->index];
        size_t deepest = p->root;

        for (size_t k = 0; k < t->n; k++)
                if (p->pdepth[p->pparent[t->v[k]]] > p->pdepth[deepest])
                        deepest = p->pparent[t->v[k]];
        for (size_t k = 0; k < t->n; k++)
                if (!process_is_ancestor(p, p->pparent[t->v[k]], deepest))
                        return plan_refuse(p, "filter %" PRIu64 " is shared by %s and by %s, but their parents %d and %d are "
                                           "not on one line of descent: no task could have forked both (a pid namespace's "
                                           "init adopting a process entered with setns() makes such a tree; it cannot be "
                                           "rebuilt)", f->id, PROCESS_NAME(p, t->v[0]), PROCESS_NAME(p, t->v[k]),
                                           p->s->processes[t->v[0]]->ppid, p->s->processes[t->v[k]]->ppid);
        if (f->parent && process_is_ancestor(p, deepest, p->owner[f->parent->index]))
                *ret = p->owner[f->parent->index];
        else
                *ret = deepest;
        return 0;
}

static int compute_owners(Planner *p) {
        for (size_t j = 0; j < p->nf; j++) {
                const Filter *f = p->s->filters[j];
                const IdxVec *t = &p->tops[j];
                int r;

                if (p->forced[j] != PLAN_NONE)
                        p->owner[j] = p->forced[j];
                else if (t->n == 1)
                        p->owner[j] = t->v[0];
                else if (t->n > 1) {
                        r = owner_of_shared(p, f, &p->owner[j]);
                        if (r < 0)
                                return r;
                } else /* no task holds it: only a listener keeps it; a helper installs it */
                        p->owner[j] = f->parent ? p->owner[f->parent->index] : p->root;
        }
        return 0;
}

/* What each process inherits: the part of M(P) it does not install itself. */
static int compute_bases(Planner *p) {
        for (size_t k = 1; k <= p->np; k++) {
                size_t i = p->porder[k], pp = p->pparent[i];
                const Filter *f = p->common[i], *floor = p->base[pp];

                while (f && p->owner[f->index] == i)
                        f = f->parent;
                p->base[i] = f;
                if (filter_lca(f, floor) != floor || (floor && !f))
                        return plan_refuse(p, "%s would inherit less than its parent %s runs under", PROCESS_NAME(p, i),
                                           PROCESS_NAME(p, pp));
                for (const Filter *g = f; g && g->depth > depth_of(floor); g = g->parent)
                        if (p->owner[g->index] == i)
                                return plan_refuse(p, "%s would install filter %" PRIu64 " and inherit filter %" PRIu64
                                                   " stacked on it", PROCESS_NAME(p, i), g->id, f->id);
        }
        p->base[p->root] = NULL;
        return 0;
}

/* A filter is installed by a task of its owner that runs under its parent filter. */
static int check_owned_parents(Planner *p) {
        for (size_t j = 0; j < p->nf; j++) {
                const Filter *f = p->s->filters[j], *pf = f->parent;
                size_t o = p->owner[j];

                if (pf == p->base[o] || (pf && p->owner[pf->index] == o))
                        continue;
                return plan_refuse(p, "filter %" PRIu64 " would be installed by %s, on filter %" PRIu64 ", but no task "
                                   "of it ever runs under exactly that chain (it starts from %s%" PRIu64 ")",
                                   f->id, PROCESS_NAME(p, o), pf ? pf->id : 0, p->base[o] ? "filter " : "no filter ",
                                   p->base[o] ? p->base[o]->id : 0);
        }
        return 0;
}

/* The kernel refuses a new listener below a filter whose listener is open (has_duplicate_listener():
 * EBUSY), and a listener, once closed, never comes back: a filter installed with a listener (it has
 * one, or the wait_killable_recv flag that needs one) below a filter with an open listener cannot
 * exist. */
static int check_listeners(Planner *p) {
        for (size_t j = 0; j < p->nf; j++) {
                const Filter *f = p->s->filters[j];

                if (!f->has_listener && !f->listener_id && !f->wait_killable_recv)
                        continue;
                for (const Filter *g = f->parent; g; g = g->parent)
                        if (g->has_listener || g->listener_id)
                                return plan_refuse(p, "filter %" PRIu64 " has %s but is stacked on filter %" PRIu64
                                                   ", whose listener is open: the kernel refuses a new listener below an "
                                                   "open one (EBUSY), so it cannot have been installed",
                                                   f->id, f->has_listener || f->listener_id ? "a listener" : "wait_killable_recv",
                                                   g->id);
        }
        return 0;
}

/* A filter lives while a task runs under it (or under a filter stacked on it) or a listener fd
 * holds it: the kernel frees any other, so a snapshot cannot have one, and a restore cannot keep
 * one. */
static int check_reachable(Planner *p) {
        _cleanup_free_ bool *live = calloc(p->nf ?: 1, sizeof(bool));

        if (!live)
                return -ENOMEM;
        for (size_t i = 0; i < p->np; i++)
                for (size_t j = 0; j < p->s->processes[i]->n_threads; j++)
                        for (const Filter *f = p->s->processes[i]->threads[j].filter; f && !live[f->index]; f = f->parent)
                                live[f->index] = true;
        for (size_t j = 0; j < p->nf; j++)
                if (p->s->filters[j]->has_listener || p->s->filters[j]->listener_id)
                        for (const Filter *f = p->s->filters[j]; f && !live[f->index]; f = f->parent)
                                live[f->index] = true;
        for (size_t j = 0; j < p->nf; j++)
                if (!live[j])
                        return plan_refuse(p, "filter %" PRIu64 " is held by no task and no listener: the kernel frees "
                                           "such a filter, so no restore can keep it", p->s->filters[j]->id);
        return 0;
}

/* ---- where each process is created ---- */

static int add_site(Planner *p, size_t i, size_t creator, const Filter *node, SiteKind kind) {
        p->creator[i] = creator;
        p->site_node[i] = node;
        p->site_kind[i] = kind;
        return idxvec_push(node ? &p->sites_at_filter[node->index] : &p->sites_at_root[creator], i);
}

/* Process i inherits base[i]: forked by its parent at that point of its install sequence, or by
 * the process installing base[i]'s head, placed under its parent with CLONE_PARENT (a sibling)
 * or by a helper that exits below a subreaper (a descendant). */
static int compute_site(Planner *p, size_t i) {
        size_t pp = p->pparent[i], o;
        const Filter *h = p->base[i];

        if (h == p->base[pp])
                return add_site(p, i, pp, NULL, SITE_DIRECT);
        if (!h)
                return plan_refuse(p, "%s runs without filters but its parent %s cannot", PROCESS_NAME(p, i),
                                   PROCESS_NAME(p, pp));
        o = p->owner[h->index];
        if (o != p->root && process_is_ancestor(p, i, o))
                return plan_refuse(p, "%s inherits filter %" PRIu64 ", which only its own descendant %s installs",
                                   PROCESS_NAME(p, i), h->id, PROCESS_NAME(p, o));
        if (o == pp)
                return add_site(p, i, pp, h, SITE_DIRECT);
        if (o != p->root && p->pparent[o] == pp)
                return add_site(p, i, o, h, SITE_CLONE_PARENT);
        if (o != p->root && process_is_ancestor(p, pp, o))
                return add_site(p, i, o, h, SITE_MOVE);
        return plan_refuse(p, "%s inherits filter %" PRIu64 ", which only %s installs, but that is not below its parent "
                           "%s: no fork can put it there", PROCESS_NAME(p, i), h->id, PROCESS_NAME(p, o),
                           PROCESS_NAME(p, pp));
}

static int compute_sites(Planner *p) {
        for (size_t k = 1; k <= p->np; k++) {
                int r = compute_site(p, p->porder[k]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the install tree of every process ---- */

static int build_filter_children(Planner *p) {
        for (size_t j = 0; j < p->nf; j++) {
                const Filter *f = p->s->filters[j];
                size_t o = p->owner[j];
                int r = f->parent == p->base[o] ? idxvec_push(&p->root_children[o], j)
                                                 : idxvec_push(&p->filter_children[f->parent->index], j);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every thread waits at its head: the process's base, or a filter the process installs. */
static int place_threads(Planner *p) {
        size_t g = 0;

        for (size_t i = 0; i < p->np; i++) {
                const Process *proc = p->s->processes[i];

                p->thread_base[i] = g;
                for (size_t j = 0; j < proc->n_threads; j++, g++) {
                        const Filter *h = proc->threads[j].mode == TASK_MODE_FILTER ? proc->threads[j].filter : NULL;
                        int r;

                        if (h == p->base[i])
                                r = idxvec_push(&p->threads_at_root[i], g);
                        else if (h && p->owner[h->index] == i)
                                r = idxvec_push(&p->threads_at_filter[h->index], g);
                        else
                                return plan_refuse(p, "thread %d of %s runs under filter %" PRIu64 ", which its process "
                                                   "neither inherits nor installs", proc->threads[j].tid,
                                                   PROCESS_NAME(p, i), h ? h->id : 0);
                        if (r < 0)
                                return r;
                }
        }
        p->thread_base[p->np] = g;
        p->n_threads = g;
        return 0;
}

/* rep[f]: the thread with the lowest tid whose head lies at or below f in its install tree; it
 * carries f's branch when the carrier of f's parent goes elsewhere. */
static void choose_representatives(Planner *p) {
        for (size_t i = 0; i < p->np; i++) {
                const Process *proc = p->s->processes[i];

                for (size_t j = 0; j < proc->n_threads; j++) {
                        const Filter *f = proc->threads[j].mode == TASK_MODE_FILTER ? proc->threads[j].filter : NULL;
                        for (; f && p->owner[f->index] == i && p->rep[f->index] == PLAN_NONE; f = f->parent)
                                p->rep[f->index] = p->thread_base[i] + j;
                }
        }
}

int plan_analyse(Planner *p) {
        int r;

        p->np = p->s->n_processes;
        p->nf = p->s->n_filters;
        p->root = p->np;
        r = alloc_analysis(p);
        if (r >= 0)
                r = build_process_tree(p);
        if (r < 0)
                return r;
        compute_common(p);
        if ((r = check_reachable(p)) < 0 || (r = check_listeners(p)) < 0 || (r = compute_forced(p)) < 0 || (r = compute_tops(p)) < 0 || (r = compute_owners(p)) < 0 ||
            (r = compute_bases(p)) < 0 || (r = check_owned_parents(p)) < 0 || (r = compute_sites(p)) < 0 ||
            (r = build_filter_children(p)) < 0 || (r = place_threads(p)) < 0)
                return r;
        choose_representatives(p);
        return 0;
}
