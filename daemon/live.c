/* live.c: applying watch events to the live forest and the store. Filters only ever grow on a
 * task, so a head is only replaced by a deeper one: an event that a full pass already reflected,
 * or that arrives after a newer one, changes nothing. */
#include <time.h>

#include "manager.h"
#include "procinfo.h"

/* ---- what keeps a live filter alive ----
 * A filter stays while a thread has it as its head, a filter has it as its parent or a listener
 * names it: m->filter_uses counts these. A filter whose count drops to 0 (or starts there) is a
 * candidate, and manager_retire_unreachable() retires the candidates still at 0, which drops
 * their parents' counts in turn. That is the set a walk of every chain would find (a filter is
 * reachable when its subtree holds a head or a listener's filter), at the cost of what changed.
 * The counts are rebuilt from the forest after a full pass or a ptrace merge, or when keeping
 * them failed (no memory). */

static size_t uses_get(const Manager *m, uint64_t id) {
        return (size_t) (uintptr_t) hashmap_get(&m->filter_uses, id);
}

static int push_candidate(Manager *m, uint64_t id) {
        if (GROW(m->retire_candidates, m->n_retire_candidates_allocated, m->n_retire_candidates + 1) < 0)
                return -ENOMEM;
        m->retire_candidates[m->n_retire_candidates++] = id;
        return 0;
}

static void uses_add(Manager *m, uint64_t id) {
        if (!m->uses_valid || id == 0)
                return;
        if (!forest_find_filter(m->live, id))
                m->uses_broken = true; /* forest_link() would fail: the next retire asks for a pass */
        if (hashmap_replace(&m->filter_uses, id, (void *) (uintptr_t) (uses_get(m, id) + 1)) < 0)
                m->uses_valid = false;
}

static void uses_drop(Manager *m, uint64_t id) {
        if (!m->uses_valid || id == 0)
                return;
        size_t n = uses_get(m, id);
        if (n == 0) {
                m->uses_valid = false; /* cannot happen: count again rather than trust it */
                return;
        }
        if (n == 1) {
                (void) hashmap_remove(&m->filter_uses, id);
                if (push_candidate(m, id) < 0)
                        m->uses_valid = false;
        } else if (hashmap_replace(&m->filter_uses, id, (void *) (uintptr_t) (n - 1)) < 0)
                m->uses_valid = false;
}

/* A filter new to the live forest: its parent has one more child, and nothing uses it yet. */
static void uses_new_filter(Manager *m, const Filter *x) {
        uses_add(m, x->parent_id);
        if (m->uses_valid && push_candidate(m, x->id) < 0)
                m->uses_valid = false;
}

void manager_live_uses_invalidate(Manager *m) {
        m->uses_valid = false;
}

static int uses_rebuild(Manager *m) {
        const Forest *f = m->live;

        m->n_uses_rebuilds++;
        hashmap_clear(&m->filter_uses);
        m->n_retire_candidates = 0;
        m->uses_broken = false;
        m->uses_valid = true;
        for (size_t i = 0; i < f->n_filters; i++)
                uses_add(m, f->filters[i]->parent_id);
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++)
                        uses_add(m, f->processes[i]->threads[j].filter_id);
        for (size_t i = 0; i < f->n_listeners; i++)
                uses_add(m, f->listeners[i]->filter_id);
        for (size_t i = 0; m->uses_valid && i < f->n_filters; i++)
                if (uses_get(m, f->filters[i]->id) == 0 && push_candidate(m, f->filters[i]->id) < 0)
                        m->uses_valid = false;
        return m->uses_valid ? 0 : -ENOMEM;
}

void manager_live_thread_gone(Manager *m, uint64_t head) {
        uses_drop(m, head);
}

/* ---- events ---- */

static int ensure_process(Manager *m, const WatchTask *w, Process **ret) {
        Process *p = forest_find_process(m->live, w->tgid);
        if (!p) {
                int r = forest_add_process(m->live, w->tgid, &p);
                if (r < 0)
                        return r;
                _cleanup_free_ char *exe = NULL;
                if (proc_read_exe(w->tgid, &exe) >= 0)
                        (void) process_set_exe(p, exe);
        }
        p->ppid = w->ppid;
        p->uid = w->uid;
        p->gid = w->gid;
        p->no_new_privs = w->no_new_privs;
        if (w->tid == w->tgid) {
                p->start_time = w->start_time;
                memcpy(p->comm, w->comm, sizeof(p->comm));
        } else if (!p->comm[0])
                memcpy(p->comm, w->comm, sizeof(p->comm));
        *ret = p;
        return 0;
}

/* The head of a tracked thread, 0 if it has none or is not tracked. */
static uint64_t thread_head(const Forest *f, pid_t tgid, pid_t tid) {
        Process *p = forest_find_process(f, tgid);
        const Task *t = p ? process_find_thread(p, tid) : NULL;
        return t ? t->filter_id : 0;
}

/* Bring one thread up to the state w describes, keeping a deeper head we already know. */
static int apply_task_state(Manager *m, const WatchTask *w, bool *ret_new) {
        Process *p;
        int r = ensure_process(m, w, &p);
        if (r < 0)
                return r;
        Task *t = process_find_thread(p, w->tid);
        uint64_t old_head = t ? t->filter_id : 0;
        *ret_new = !t;
        if (!t) {
                r = process_add_thread(p, w->tid, &t);
                if (r < 0)
                        return r;
        }
        t->start_time = w->start_time;
        if (w->mode > t->mode)
                t->mode = w->mode;
        if (w->filter_id && forest_chain_length(m->live, w->filter_id) >= forest_chain_length(m->live, t->filter_id)) {
                t->filter_id = w->filter_id;
                t->mode = TASK_MODE_FILTER;
        }
        if (t->filter_id != old_head) {
                uses_add(m, t->filter_id);
                uses_drop(m, old_head);
        }
        m->live->linked = false;
        return store_put_task(m->store, w, p->exe, now_usec(CLOCK_REALTIME));
}

static int on_task_new(Manager *m, const WatchEvent *e) {
        if (e->task.mode == TASK_MODE_DISABLED)
                return 0;
        bool is_new;
        int r = apply_task_state(m, &e->task, &is_new);
        if (r >= 0 && is_new)
                (void) manager_send_task_added(m, e->task.tid, e->task.tgid, e->task.comm);
        return r;
}

/* A thread entered strict mode: from now on it is part of the forest, like a filtered one. */
static int on_task_mode(Manager *m, const WatchEvent *e) {
        bool is_new;
        int r = apply_task_state(m, &e->task, &is_new);
        if (r >= 0 && is_new)
                (void) manager_send_task_added(m, e->task.tid, e->task.tgid, e->task.comm);
        return r;
}

/* exec ends every other thread of the process, without exit events for a thread that exec'd
 * (it takes over the leader's tid). */
static int drop_other_threads(Manager *m, Process *p, pid_t keep) {
        for (size_t i = p->n_threads; i-- > 0;) {
                pid_t tid = p->threads[i].tid;
                if (tid == keep)
                        continue;
                int r = store_remove_task(m->store, tid);
                if (r < 0)
                        return r;
                (void) manager_send_task_exited(m, tid);
                uses_drop(m, p->threads[i].filter_id);
                p->threads[i] = p->threads[--p->n_threads];
        }
        m->live->linked = false;
        m->batch_exits = true;
        return 0;
}

static int on_task_exec(Manager *m, const WatchEvent *e) {
        Process *p = forest_find_process(m->live, e->task.tgid);
        if (!p)
                return on_task_new(m, e);
        int r = drop_other_threads(m, p, e->task.tid);
        if (r < 0)
                return r;
        memcpy(p->comm, e->task.comm, sizeof(p->comm));
        _cleanup_free_ char *exe = NULL;
        if (proc_read_exe(e->task.tgid, &exe) >= 0)
                (void) process_set_exe(p, exe);
        bool is_new;
        return apply_task_state(m, &e->task, &is_new);
}

static int on_task_exit(Manager *m, const WatchEvent *e) {
        uint64_t head = thread_head(m->live, e->task.tgid, e->task.tid);
        if (forest_remove_thread(m->live, e->task.tgid, e->task.tid) < 0)
                return 0; /* not a task we track */
        uses_drop(m, head);
        m->batch_exits = true;
        (void) manager_send_task_exited(m, e->task.tid);
        return store_remove_task(m->store, e->task.tid);
}

static int add_watch_filter(Manager *m, const WatchEvent *e) {
        const WatchFilter *wf = &e->filter;
        if (forest_find_filter(m->live, wf->id))
                return 0;
        if (wf->parent_id && !forest_find_filter(m->live, wf->parent_id))
                return -ENOLINK; /* we missed the parent: only a full pass can fix that */
        Filter *flt;
        int r = forest_add_filter(m->live, wf->id, wf->parent_id, wf->insns, wf->len, &flt);
        if (r < 0)
                return r;
        flt->log = wf->log;
        flt->wait_killable_recv = wf->wait_killable_recv;
        flt->has_listener = wf->has_listener;
        flt->identity = IDENTITY_EXACT;
        uses_new_filter(m, flt);
        _cleanup_free_ char *exe = NULL;
        (void) proc_read_exe(e->task.tgid, &exe);
        StoreInstaller inst = { .tid = e->task.tid, .tgid = e->task.tgid, .comm = e->task.comm, .exe = exe };
        return store_put_watch_filter(m->store, wf, &inst, now_usec(CLOCK_REALTIME));
}

/* With TSYNC every thread of the installer's process has the new filter, tracked or not. */
static int apply_tsync(Manager *m, const WatchEvent *e) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;
        if (proc_list_threads(e->task.tgid, &tids, &n) < 0)
                return 0; /* the process is gone: its exit events follow */
        for (size_t i = 0; i < n; i++) {
                WatchTask w = e->task;
                w.tid = tids[i];
                w.filter_id = e->filter.id;
                w.mode = TASK_MODE_FILTER;
                if (tids[i] != e->task.tid && proc_read_start_time(tids[i], &w.start_time) < 0)
                        continue;
                bool is_new;
                int r = apply_task_state(m, &w, &is_new);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int on_filter_attached(Manager *m, const WatchEvent *e) {
        int r = add_watch_filter(m, e);
        if (r < 0)
                return r;
        WatchTask w = e->task;
        w.filter_id = e->filter.id;
        w.mode = TASK_MODE_FILTER;
        bool is_new;
        r = e->filter.tsync ? apply_tsync(m, e) : 0;
        if (r >= 0)
                r = apply_task_state(m, &w, &is_new);
        if (r >= 0)
                (void) manager_send_filter_attached(m, e->filter.id, e->filter.parent_id, e->task.tid);
        return r;
}

int manager_apply_event(Manager *m, const WatchEvent *e) {
        switch (e->type) {
        case WATCH_TASK_NEW:
                return on_task_new(m, e);
        case WATCH_TASK_EXEC:
                return on_task_exec(m, e);
        case WATCH_TASK_EXIT:
                return on_task_exit(m, e);
        case WATCH_FILTER_ATTACHED:
                return on_filter_attached(m, e);
        case WATCH_TASK_MODE:
                return on_task_mode(m, e);
        default:
                return 0;
        }
}

/* Called inside a batch's transaction: an inconsistent forest fails the batch (which is rolled
 * back and followed by a full pass) instead of starting a pass here. Children are retired before
 * their parents, as the store wants. */
int manager_retire_unreachable(Manager *m) {
        int r;

        /* A filter named before it was known may be known by now: count again to be sure. */
        if ((!m->uses_valid || m->uses_broken) && (r = uses_rebuild(m)) < 0)
                return r;
        if (m->uses_broken)
                return -EUCLEAN;
        uint64_t now = now_usec(CLOCK_REALTIME);
        while (m->n_retire_candidates > 0) {
                uint64_t id = m->retire_candidates[--m->n_retire_candidates];
                Filter *x = forest_find_filter(m->live, id);
                if (!x || uses_get(m, id) > 0)
                        continue; /* retired already, or used again */
                r = store_retire_filter(m->store, id, now);
                if (r < 0)
                        return r;
                uint64_t parent = x->parent_id;
                (void) forest_remove_filter(m->live, id);
                uses_drop(m, parent); /* the parent is the next candidate if this was its last use */
                if (!m->uses_valid && (r = uses_rebuild(m)) < 0)
                        return r;
        }
        return 0;
}

static uint64_t inferred_key(uint64_t parent_id, const uint8_t digest[PROG_DIGEST_SIZE], bool log) {
        uint64_t d;
        memcpy(&d, digest, sizeof(d));
        return d ^ (parent_id * 0x9e3779b97f4a7c15ULL) ^ (uint64_t) log;
}

static bool same_filter(const Filter *old, uint64_t parent_id, const Filter *now) {
        return old->parent_id == parent_id && old->log == now->log &&
               memcmp(old->digest, now->digest, PROG_DIGEST_SIZE) == 0;
}

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

/* The previous live filters by (parent, digest, flags), sorted: byte-identical filters of
 * unrelated tasks share a key, so every one is kept. */
static int index_previous(const Forest *prev, KeyedFilter **ret, size_t *ret_n) {
        size_t n = prev ? prev->n_filters : 0;
        KeyedFilter *idx = calloc(n + 1, sizeof(KeyedFilter));
        if (!idx)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const Filter *x = prev->filters[i];
                idx[i] = (KeyedFilter) { .key = inferred_key(x->parent_id, x->digest, x->log), .filter = x };
        }
        qsort_safe(idx, n, sizeof(KeyedFilter), cmp_keyed);
        *ret = idx;
        *ret_n = n;
        return 0;
}

/* The first unused previous filter equal to now under parent_id. */
static const Filter *previous_by_key(const KeyedFilter *idx, size_t n, uint64_t parent_id, const Filter *now,
                                     const Hashmap *used) {
        uint64_t key = inferred_key(parent_id, now->digest, now->log);
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

/* For each filter of f (linked), a thread whose chain holds it. */
static int filter_seats(const Forest *f, const Task ***ret) {
        const Task **seat = calloc(f->n_filters + 1, sizeof(Task *));
        if (!seat)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        const Task *t = &f->processes[i]->threads[j];
                        for (const Filter *x = t->filter; x && !seat[x->index]; x = x->parent)
                                seat[x->index] = t;
                }
        *ret = seat;
        return 0;
}

/* The previous filter that the same thread (tid and start time) had at depth: a chain only grows,
 * so a thread keeps each of its filters where it was. */
static const Filter *previous_of_thread(const Forest *prev, const Task *t, unsigned depth) {
        Process *p = prev ? forest_find_process(prev, t->tgid) : NULL;
        const Task *old = NULL;
        for (size_t i = 0; p && i < p->n_threads && !old; i++)
                if (p->threads[i].tid == t->tid && p->threads[i].start_time == t->start_time)
                        old = &p->threads[i];
        if (!old)
                return NULL;
        unsigned len = forest_chain_length(prev, old->filter_id);
        if (depth == 0 || depth > len)
                return NULL;
        const Filter *x = forest_find_filter(prev, old->filter_id);
        for (unsigned k = len; x && k > depth; k--)
                x = forest_find_filter(prev, x->parent_id);
        return x;
}

/* Which previous filter x is: the one its thread had at the same place, else any unused equal one
 * (another thread's, under the same parent). */
static const Filter *previous_match(Manager *m, const KeyedFilter *idx, size_t n, const Task *seat, uint64_t parent,
                                    const Filter *x, const Hashmap *used) {
        const Filter *old = seat ? previous_of_thread(m->live, seat, x->depth) : NULL;
        if (old && same_filter(old, parent, x) && !hashmap_get(used, old->id))
                return old;
        return previous_by_key(idx, n, parent, x, used);
}

int manager_adopt_inferred_ids(Manager *m, Forest *f) {
        uint64_t next;
        int r = store_max_filter_id(m->store, &next);
        if (r < 0)
                return r;
        if (m->live)
                for (size_t i = 0; i < m->live->n_filters; i++)
                        if (m->live->filters[i]->id > next)
                                next = m->live->filters[i]->id;
        _cleanup_free_ KeyedFilter *prev = NULL;
        _cleanup_free_ const Task **seat = NULL;
        size_t n_prev = 0;
        _cleanup_free_ uint64_t *ids = calloc(f->n_filters + 1, sizeof(uint64_t));
        _cleanup_(hashmap_deinit) Hashmap used = {};
        if (!ids || index_previous(m->live, &prev, &n_prev) < 0 || filter_seats(f, &seat) < 0)
                return -ENOMEM;
        /* Parents come first, so a parent's new id is known when its children are matched. */
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = f->filters[i];
                uint64_t parent = x->parent ? ids[x->parent->index] : 0;
                const Filter *old = previous_match(m, prev, n_prev, seat[i], parent, x, &used);
                ids[i] = old ? old->id : ++next;
                if (hashmap_put(&used, ids[i], (void *) x) < 0)
                        return -ENOMEM;
        }
        return forest_set_ids(f, ids);
}
