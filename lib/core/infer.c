/* infer.c: keeping ids of filters across readings: by thread (exact), and by bytes for the ptrace
 * backend (hash-consing) */
#include "core/infer.h"

static bool same_program(const Filter *a, const Filter *b) {
        return a->log == b->log && memcmp(a->digest, b->digest, PROG_DIGEST_SIZE) == 0;
}

/* Same parent, bytes and LOG flag: what inferred identity calls one filter. */
static uint64_t content_key(uint64_t parent_id, const Filter *x) {
        uint64_t d;
        memcpy(&d, x->digest, sizeof(d));
        return d ^ (parent_id * 0x9e3779b97f4a7c15ULL) ^ (uint64_t) x->log;
}

/* ---- full passes: adopting ids ---- */

typedef struct KeyedFilter {
        uint64_t key;
        const Filter *filter;
} KeyedFilter;

static int cmp_keyed(const void *a, const void *b) {
        const KeyedFilter *x = a, *y = b;
        if (x->key != y->key)
                return x->key < y->key ? -1 : 1;
        return x->filter->id < y->filter->id ? -1 : x->filter->id > y->filter->id;
}

/* prev's filters by content key, sorted: byte-identical filters of unrelated tasks share a key,
 * so every one is kept. */
static int index_by_content(const Forest *prev, KeyedFilter **ret, size_t *ret_n) {
        size_t n = prev ? prev->n_filters : 0;
        KeyedFilter *idx = calloc(n + 1, sizeof(KeyedFilter));
        if (!idx)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const Filter *x = prev->filters[i];
                idx[i] = (KeyedFilter) { .key = content_key(x->parent_id, x), .filter = x };
        }
        qsort_safe(idx, n, sizeof(KeyedFilter), cmp_keyed);
        *ret = idx;
        *ret_n = n;
        return 0;
}

static bool same_filter(const Filter *old, uint64_t parent_id, const Filter *now) {
        return old->parent_id == parent_id && same_program(old, now);
}

/* The first unused filter of prev equal to now under parent_id. */
static const Filter *by_content(const KeyedFilter *idx, size_t n, uint64_t parent_id, const Filter *now,
                                const Hashmap *used) {
        uint64_t key = content_key(parent_id, now);
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (idx[mid].key < key)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (size_t i = lo; i < n && idx[i].key == key; i++)
                if (same_filter(idx[i].filter, parent_id, now) && !hashmap_get(used, idx[i].filter->id))
                        return idx[i].filter;
        return NULL;
}

/* Claims: what the surviving threads say. A thread named by its tid and start time in both readings
 * keeps the filter objects of its chain (a chain only grows), so the filter it holds now at depth d
 * is the stored filter it held at depth d: each such pair is a claim. Every surviving thread makes
 * its claims, not one per filter, so a filter keeps its id whichever of its holders survived and
 * whatever pids the others have (a new task may take a lower pid once pids wrap).
 *
 * Claims that disagree keep no id. If a filter now is claimed by two stored filters, or a stored
 * filter by two filters now, both readings cannot be right about those threads, and nothing says
 * which is; a filter keeps a stored id only when the pairing is one to one. With the bpf backend
 * both readings are kernel objects, so a disagreement only comes from a stored state that was not
 * exact (written by the ptrace backend) or is damaged, and every id kept is the object's. The
 * ptrace backend's objects are inferred (scan-ptrace.c shares byte-identical filters of related
 * tasks): where its sharing changed between readings the claims disagree and those filters get new
 * ids on the first pass after start; on later passes (by_content) they may then take a free earlier
 * filter with the same parent and bytes, as its inference does for any filter. */
typedef struct Claim {
        const Filter *other; /* the first filter of the other reading claimed */
        bool torn;           /* another one was claimed too */
} Claim;

typedef struct Claims {
        Claim *now;    /* by index of f's filters: the stored filter claimed */
        Claim *stored; /* by index of prev's filters: the filter now claiming it */
} Claims;

static void claims_done(Claims *c) {
        free(c->now);
        free(c->stored);
}

static void claim_one(Claim *c, const Filter *other) {
        if (!c->other)
                c->other = other;
        else if (c->other != other)
                c->torn = true;
}

/* The depth of the stored chain from head, 0 unless it ends at a root filter of prev. */
static size_t stored_depth(const Forest *prev, uint64_t head) {
        size_t n = 0;
        const Filter *x = forest_find_filter(prev, head);
        for (; x && x->parent_id && n <= prev->n_filters; x = forest_find_filter(prev, x->parent_id))
                n++;
        return x && !x->parent_id ? n + 1 : 0;
}

/* The claims of thread t of f, depth by depth. A walk stops at a pair that either side made first
 * (a thread sharing the rest of the chain walked it), so threads that share cost a step each and
 * all threads together about one step per filter. */
static void claim_thread(Claims *c, const Forest *prev, const Task *t) {
        const Task *old = process_find_thread(forest_find_process(prev, t->tgid), t->tid);
        if (!old || old->start_time != t->start_time || !t->filter)
                return;
        size_t depth = stored_depth(prev, old->filter_id);
        if (depth == 0 || depth > t->filter->depth)
                return; /* no chain stored, or a longer one: a chain never shrinks */
        const Filter *x = t->filter, *s = forest_find_filter(prev, old->filter_id);
        while (x->depth > depth)
                x = x->parent;
        for (; x && s; x = x->parent, s = forest_find_filter(prev, s->parent_id)) {
                bool seen = c->now[x->index].other == s || c->stored[s->index].other == x;
                claim_one(&c->now[x->index], s);
                claim_one(&c->stored[s->index], x);
                if (seen)
                        break;
        }
}

static int claims_collect(Claims *c, const Forest *prev, const Forest *f) {
        c->now = calloc(f->n_filters + 1, sizeof(Claim));
        c->stored = calloc((prev ? prev->n_filters : 0) + 1, sizeof(Claim));
        if (!c->now || !c->stored)
                return -ENOMEM;
        for (size_t i = 0; prev && i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++)
                        claim_thread(c, prev, &f->processes[i]->threads[j]);
        return 0;
}

/* The stored filter that x alone claims and that x alone is claimed by, if any. */
static const Filter *claimed(const Claims *c, const Filter *x) {
        const Claim *mine = &c->now[x->index];
        if (!mine->other || mine->torn)
                return NULL;
        const Claim *theirs = &c->stored[mine->other->index];
        return theirs->torn ? NULL : mine->other;
}

/* Stored ids that one filter of f claims alone are its own: by_content gives them to no other. */
static int claims_reserve(const Claims *c, const Forest *f, Hashmap *used) {
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *old = claimed(c, f->filters[i]);
                int r = old ? hashmap_put(used, old->id, (void *) f->filters[i]) : 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The id x gets: its claimed stored filter's, if that has x's bytes and LOG flag and the parent
 * that x's parent got; else, with content, a free stored filter equal under parent; else a new one. */
static uint64_t adopted_id(const Claims *c, const KeyedFilter *idx, size_t n_idx, const Filter *x, uint64_t parent,
                           const Hashmap *used, uint64_t *next_id) {
        const Filter *old = claimed(c, x);
        if (!old || !same_filter(old, parent, x))
                old = idx ? by_content(idx, n_idx, parent, x, used) : NULL;
        return old ? old->id : next_id ? ++*next_id : x->id;
}

/* Reserved ids no claim took: used, by no filter of f. */
static const char reserved_mark;

static int reserve_unclaimed(const Hashmap *reserved, Hashmap *used) {
        uint64_t id;
        void *v;
        for (size_t i = 0; reserved && hashmap_next(reserved, &i, &id, &v);) {
                int r = hashmap_get(used, id) ? 0 : hashmap_put(used, id, (void *) &reserved_mark);
                if (r < 0)
                        return r;
        }
        return 0;
}

int infer_adopt_ids(const Forest *prev, Forest *f, bool content, uint64_t *next_id, Hashmap *ret_renamed) {
        return infer_adopt_ids_reserving(prev, f, content, next_id, ret_renamed, NULL);
}

int infer_adopt_ids_reserving(const Forest *prev, Forest *f, bool content, uint64_t *next_id, Hashmap *ret_renamed,
                              const Hashmap *reserved) {
        _cleanup_free_ KeyedFilter *idx = NULL;
        _cleanup_(claims_done) Claims claims = {};
        _cleanup_free_ uint64_t *ids = calloc(f->n_filters + 1, sizeof(uint64_t));
        _cleanup_(hashmap_deinit) Hashmap used = {}; /* id -> the filter of f that has it (or will) */
        size_t n_idx = 0;
        int r;

        if (!f->linked)
                return -EINVAL;
        if (!ids || (content && index_by_content(prev, &idx, &n_idx) < 0))
                return -ENOMEM;
        if ((r = claims_collect(&claims, prev, f)) < 0 || (r = claims_reserve(&claims, f, &used)) < 0 ||
            (r = reserve_unclaimed(reserved, &used)) < 0)
                return r;
        /* Parents come first, so a parent's new id is known when its children are matched. */
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = f->filters[i];
                uint64_t parent = x->parent ? ids[x->parent->index] : 0;
                ids[i] = adopted_id(&claims, idx, n_idx, x, parent, &used, next_id);
                const Filter *holder = hashmap_get(&used, ids[i]);
                if (holder && holder != x)
                        return -EINVAL; /* an id kept that prev also hands out */
                if ((r = hashmap_replace(&used, ids[i], (void *) x)) < 0)
                        return r;
        }
        for (size_t i = 0; ret_renamed && i < f->n_filters; i++)
                if (ids[i] != f->filters[i]->id &&
                    (r = hashmap_replace(ret_renamed, f->filters[i]->id, (void *) (uintptr_t) ids[i])) < 0)
                        return r;
        return forest_set_ids(f, ids);
}

/* ---- subtree rescans: merging ---- */

/* The live forest as the merge has changed it so far: new filters and merged processes in a
 * forest of their own, over the live one. */
typedef struct View {
        const Forest *live;
        Forest *over;     /* new filters; processes merged so far (they hide the live ones) */
        Hashmap dropped;  /* pid -> 1: processes the merge took away */
} View;

static Filter *view_filter(const View *v, uint64_t id) {
        Filter *x = forest_find_filter(v->over, id);
        return x ? x : forest_find_filter(v->live, id);
}

static const Process *view_process(const View *v, pid_t pid) {
        if (pid <= 0 || hashmap_get(&v->dropped, (uint64_t) pid))
                return NULL;
        const Process *p = forest_find_process(v->over, pid);
        return p ? p : forest_find_process(v->live, pid);
}

typedef struct Merge {
        View view;
        const Forest *scan;
        Hashmap unreadable;      /* tids the scan could not read: their live state stays */
        Hashmap adoptable;       /* content key -> live filter no kept thread reaches */
        Filter **adoptable_more; /* same key as one in the map */
        size_t n_adoptable_more, n_adoptable_more_allocated;
        uint64_t *next_id;
        LiveBatch *out;
} Merge;

static void merge_deinit(Merge *g) {
        forest_free(g->view.over);
        hashmap_deinit(&g->view.dropped);
        hashmap_deinit(&g->unreadable);
        hashmap_deinit(&g->adoptable);
        free(g->adoptable_more);
}

/* The chain of head, oldest first, looked up with find. */
static int chain_collect(Filter *(*find)(const void *ctx, uint64_t id), const void *ctx, uint64_t head,
                         Filter ***ret, size_t *ret_n) {
        size_t n = 0;
        for (Filter *x = find(ctx, head); x && n < 1 << 16; x = find(ctx, x->parent_id))
                n++;
        Filter **chain = calloc(n + 1, sizeof(Filter *));
        if (!chain)
                return -ENOMEM;
        size_t i = n;
        for (Filter *x = find(ctx, head); x && i > 0; x = find(ctx, x->parent_id))
                chain[--i] = x;
        *ret = chain;
        *ret_n = n;
        return 0;
}

static Filter *find_in_forest(const void *ctx, uint64_t id) {
        return forest_find_filter(ctx, id);
}

static Filter *find_in_view(const void *ctx, uint64_t id) {
        return view_filter(ctx, id);
}

static void mark_chain(const Forest *f, uint64_t head, Hashmap *kept) {
        for (Filter *x = forest_find_filter(f, head); x; x = forest_find_filter(f, x->parent_id))
                if (hashmap_put(kept, x->id, x) == -EEXIST)
                        return; /* its ancestors are marked already */
}

/* Live filters reached only by threads the scan replaces may be taken over by the rescanned
 * chains (threads it could not read keep theirs). */
static int merge_find_adoptable(Merge *g) {
        const Forest *live = g->view.live;
        _cleanup_(hashmap_deinit) Hashmap kept = {};

        for (size_t i = 0; i < live->n_processes; i++) {
                const Process *p = live->processes[i];
                bool replaced = forest_find_process(g->scan, p->pid);
                for (size_t j = 0; j < p->n_threads; j++)
                        if (!replaced || hashmap_get(&g->unreadable, (uint64_t) p->threads[j].tid))
                                mark_chain(live, p->threads[j].filter_id, &kept);
        }
        for (size_t i = 0; i < live->n_filters; i++) {
                Filter *x = live->filters[i];
                if (hashmap_get(&kept, x->id))
                        continue;
                int r = hashmap_put(&g->adoptable, content_key(x->parent_id, x), x);
                if (r == -EEXIST) {
                        if (GROW(g->adoptable_more, g->n_adoptable_more_allocated, g->n_adoptable_more + 1) < 0)
                                return -ENOMEM;
                        g->adoptable_more[g->n_adoptable_more++] = x;
                } else if (r < 0)
                        return r;
        }
        return 0;
}

/* Take x out of the adoptable filters; false if it is not among them. */
static bool merge_take(Merge *g, Filter *x) {
        uint64_t key = content_key(x->parent_id, x);
        if (hashmap_get(&g->adoptable, key) == x) {
                hashmap_remove(&g->adoptable, key);
                return true;
        }
        for (size_t i = 0; i < g->n_adoptable_more; i++)
                if (g->adoptable_more[i] == x) {
                        g->adoptable_more[i] = g->adoptable_more[--g->n_adoptable_more];
                        return true;
                }
        return false;
}

/* A live filter for a new node (parent_id, the bytes and flags of want), if one is free: the one
 * the same thread had there (mine), else any. */
static Filter *merge_adopt(Merge *g, uint64_t parent_id, const Filter *want, Filter *mine) {
        if (mine && mine->parent_id == parent_id && same_program(mine, want) && merge_take(g, mine))
                return mine;
        uint64_t key = content_key(parent_id, want);
        Filter *x = hashmap_get(&g->adoptable, key);
        if (x && x->parent_id == parent_id && same_program(x, want)) {
                hashmap_remove(&g->adoptable, key);
                return x;
        }
        for (size_t i = 0; i < g->n_adoptable_more; i++) {
                x = g->adoptable_more[i];
                if (x->parent_id == parent_id && same_program(x, want)) {
                        g->adoptable_more[i] = g->adoptable_more[--g->n_adoptable_more];
                        return x;
                }
        }
        return NULL;
}

/* The event state of thread t of the scanned process sp. */
static LiveTask task_of(const Process *sp, const Task *t) {
        LiveTask w = {
                .tid = t->tid, .tgid = sp->pid, .ppid = sp->ppid, .start_time = t->start_time,
                .process_start_time = sp->start_time, .mode = t->mode, .filter_id = t->filter_id,
                .no_new_privs = sp->no_new_privs, .uid = sp->uid, .gid = sp->gid, .exe = sp->exe,
        };
        memcpy(w.comm, sp->comm, sizeof(w.comm));
        return w;
}

/* A node of its own under parent_id for thread t, with src's bytes and flags. */
static int merge_new_filter(Merge *g, uint64_t parent_id, const Filter *src, const Process *sp, const Task *t,
                            Filter **ret) {
        Filter *flt;
        uint64_t id = ++*g->next_id;
        int r = forest_add_filter_with_digest(g->view.over, id, parent_id, src->insns, src->len, src->digest, &flt);
        if (r < 0)
                return r;
        flt->log = src->log;
        flt->wait_killable_recv = src->wait_killable_recv;
        flt->has_listener = src->has_listener;
        flt->identity = IDENTITY_INFERRED;
        LiveEvent e = { .type = LIVE_EVENT_FILTER, .task = task_of(sp, t) };
        e.task.filter_id = id;
        e.task.mode = TASK_MODE_FILTER;
        e.filter = (LiveFilter) {
                .id = id, .parent_id = parent_id, .insns = src->insns, .len = src->len, .log = src->log,
                .wait_killable_recv = src->wait_killable_recv, .has_listener = src->has_listener,
                .identity = IDENTITY_INFERRED,
        };
        r = live_batch_add(g->out, &e);
        if (r < 0)
                return r;
        *ret = flt;
        return 0;
}

static size_t common_prefix(Filter * const *a, size_t na, Filter * const *b, size_t nb) {
        size_t i = 0;
        while (i < na && i < nb && same_program(a[i], b[i]))
                i++;
        return i;
}

/* The thread of p (other than skip) whose chain shares the longest prefix with want, if longer
 * than *k: then *base and *k are replaced. */
static int best_prefix(const View *v, const Process *p, const Task *skip, Filter **want, size_t n_want, Filter ***base,
                       size_t *k) {
        for (size_t i = 0; p && i < p->n_threads; i++) {
                const Task *t = &p->threads[i];
                if (t == skip || t->mode != TASK_MODE_FILTER || t->filter_id == 0)
                        continue;
                Filter **chain;
                size_t n;
                int r = chain_collect(find_in_view, v, t->filter_id, &chain, &n);
                if (r < 0)
                        return r;
                size_t kk = common_prefix(chain, n, want, n_want);
                if (kk > *k) {
                        free(*base);
                        *base = chain;
                        *k = kk;
                } else
                        free(chain);
        }
        return 0;
}

/* The nearest ancestor process whose chains p's may share: its parent, if that has a filter
 * thread (the walk of scan-ptrace.c stops at a process without one). */
static const Process *merge_anchor(const View *v, pid_t ppid) {
        const Process *a = view_process(v, ppid);
        for (size_t i = 0; a && i < a->n_threads; i++)
                if (a->threads[i].mode == TASK_MODE_FILTER && a->threads[i].filter_id)
                        return a;
        return NULL;
}

/* Give the thread at index self of mp (the merged process) the chain that the scan's head names,
 * in filters of the view; old_head is the thread's live head (0 for a new thread). */
static int merge_place_thread(Merge *g, Process *mp, size_t self, const Process *sp, const Task *st, uint64_t old_head) {
        _cleanup_free_ Filter **want = NULL, **base = NULL, **mine = NULL;
        size_t n_want, n_mine = 0, k = 0;
        int r = chain_collect(find_in_forest, g->scan, st->filter_id, &want, &n_want);
        if (r >= 0)
                r = chain_collect(find_in_view, &g->view, old_head, &mine, &n_mine);
        if (r >= 0)
                r = best_prefix(&g->view, mp, &mp->threads[self], want, n_want, &base, &k);
        if (r >= 0)
                r = best_prefix(&g->view, merge_anchor(&g->view, mp->ppid), NULL, want, n_want, &base, &k);
        if (r < 0)
                return r;

        uint64_t parent = k > 0 ? base[k - 1]->id : 0;
        for (size_t i = k; i < n_want; i++) {
                Filter *x = merge_adopt(g, parent, want[i], i < n_mine ? mine[i] : NULL);
                if (!x && (r = merge_new_filter(g, parent, want[i], sp, st, &x)) < 0)
                        return r;
                parent = x->id;
        }
        mp->threads[self].filter_id = parent;
        return 0;
}

static bool has_seccomp(const Process *p) {
        for (size_t i = 0; i < p->n_threads; i++)
                if (p->threads[i].mode != TASK_MODE_DISABLED)
                        return true;
        return false;
}

/* Threads of the scanned process sp in placement order: leader first, then by tid. */
static size_t thread_order(const Process *sp, size_t i) {
        size_t leader = 0;
        while (leader < sp->n_threads && sp->threads[leader].tid != sp->pid)
                leader++;
        if (leader == sp->n_threads)
                return i;
        return i == 0 ? leader : i <= leader ? i - 1 : i;
}

static int emit_task(Merge *g, LiveEventType type, const LiveTask *w) {
        LiveEvent e = { .type = type, .task = *w };
        return live_batch_add(g->out, &e);
}

/* Every thread of the process under pid in the view leaves it. */
static int merge_drop_process(Merge *g, pid_t pid) {
        const Process *p = view_process(&g->view, pid);
        for (size_t i = 0; p && i < p->n_threads; i++) {
                LiveTask w = { .tid = p->threads[i].tid, .tgid = pid };
                int r = emit_task(g, LIVE_EVENT_EXIT, &w);
                if (r < 0)
                        return r;
        }
        process_free(forest_take_process(g->view.over, pid));
        return hashmap_replace(&g->view.dropped, (uint64_t) pid, (void *) 1);
}

static uint64_t old_head_of(const Task *old, size_t n_old, const Task *t) {
        for (size_t j = 0; j < n_old; j++)
                if (old[j].tid == t->tid && old[j].start_time == t->start_time)
                        return old[j].filter_id;
        return 0;
}

/* The rescanned threads of sp go into mp (placed, then announced as events), and the old threads
 * the scan could not read stay. */
static int merge_threads(Merge *g, Process *mp, const Process *sp, const Task *old, size_t n_old) {
        for (size_t i = 0; i < sp->n_threads; i++) {
                const Task *st = &sp->threads[thread_order(sp, i)];
                if (st->mode == TASK_MODE_DISABLED)
                        continue;
                Task *t;
                int r = process_add_thread(mp, st->tid, &t);
                if (r < 0)
                        return r;
                *t = (Task) { .tid = st->tid, .tgid = sp->pid, .start_time = st->start_time, .mode = st->mode,
                              .filter_count = st->filter_count };
                if (st->mode == TASK_MODE_FILTER && st->filter_id &&
                    (r = merge_place_thread(g, mp, mp->n_threads - 1, sp, st, old_head_of(old, n_old, t))) < 0)
                        return r;
                LiveTask w = task_of(sp, &mp->threads[mp->n_threads - 1]);
                if ((r = emit_task(g, LIVE_EVENT_TASK, &w)) < 0)
                        return r;
        }
        for (size_t i = 0; i < n_old; i++) {
                bool unreadable = hashmap_get(&g->unreadable, (uint64_t) old[i].tid);
                if (process_find_thread(mp, old[i].tid))
                        continue;
                if (!unreadable) {
                        LiveTask w = { .tid = old[i].tid, .tgid = sp->pid };
                        int r = emit_task(g, LIVE_EVENT_EXIT, &w);
                        if (r < 0)
                                return r;
                        continue;
                }
                Task *t;
                int r = process_add_thread(mp, old[i].tid, &t);
                if (r < 0)
                        return r;
                *t = old[i];
        }
        return 0;
}

static int merge_process(Merge *g, const Process *sp) {
        const Process *lp = view_process(&g->view, sp->pid);
        int r;

        if (lp && lp->start_time != sp->start_time) {
                r = merge_drop_process(g, sp->pid); /* another process under a reused pid: its exit was missed */
                if (r < 0)
                        return r;
                lp = NULL;
        }
        if (!lp && !has_seccomp(sp))
                return 0;

        _cleanup_free_ Task *old = NULL;
        size_t n_old = lp ? lp->n_threads : 0;
        if (lp && !(old = memcpy_safe(malloc((n_old + 1) * sizeof(Task)), lp->threads, n_old * sizeof(Task))))
                return -ENOMEM;
        Process *mp;
        process_free(forest_take_process(g->view.over, sp->pid));
        hashmap_remove(&g->view.dropped, (uint64_t) sp->pid);
        if ((r = forest_add_process(g->view.over, sp->pid, &mp)) < 0)
                return r;
        mp->ppid = sp->ppid;
        mp->start_time = sp->start_time;

        r = merge_threads(g, mp, sp, old, n_old);
        if (r < 0)
                return r;
        if (mp->n_threads == 0)
                /* Nothing in strict or filter mode any more: the exits went out already. */
                return hashmap_replace(&g->view.dropped, (uint64_t) sp->pid, (void *) 1);
        return 0;
}

static unsigned scan_depth(const Forest *scan, const Process *p) {
        unsigned d = 0;
        for (const Process *a = forest_find_process(scan, p->ppid); a && d <= scan->n_processes;
             a = forest_find_process(scan, a->ppid))
                d++;
        return d;
}

typedef struct Placed {
        unsigned depth;
        const Process *p;
} Placed;

static int cmp_placed(const void *a, const void *b) {
        const Placed *x = a, *y = b;
        if (x->depth != y->depth)
                return x->depth < y->depth ? -1 : 1;
        return x->p->pid < y->p->pid ? -1 : x->p->pid > y->p->pid;
}

int infer_merge(const Forest *live, const Forest *scan, const pid_t *unreadable, size_t n_unreadable,
                uint64_t *next_id, LiveBatch *out) {
        _cleanup_(merge_deinit) Merge g = {
                .view = { .live = live, .over = forest_new() }, .scan = scan, .next_id = next_id, .out = out,
        };
        _cleanup_free_ Placed *order = calloc(scan->n_processes + 1, sizeof(Placed));
        int r;

        if (!order || !g.view.over)
                return -ENOMEM;
        for (size_t i = 0; i < n_unreadable; i++)
                if ((r = hashmap_replace(&g.unreadable, (uint64_t) unreadable[i], (void *) 1)) < 0)
                        return r;
        r = merge_find_adoptable(&g);
        if (r < 0)
                return r;
        for (size_t i = 0; i < scan->n_processes; i++)
                order[i] = (Placed) { .depth = scan_depth(scan, scan->processes[i]), .p = scan->processes[i] };
        qsort_safe(order, scan->n_processes, sizeof(Placed), cmp_placed);
        for (size_t i = 0; i < scan->n_processes; i++) {
                r = merge_process(&g, order[i].p);
                if (r < 0)
                        return r;
        }
        return 0;
}
