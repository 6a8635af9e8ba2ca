/* live-ptrace.c: the ptrace backend's live updates: proc connector events turned into rescans of
 * the process subtrees they touch, merged into the live forest with the full pass's inference
 *
 * There is no BPF here, so nothing sees a filter being installed: the proc connector only says
 * that a task forked, exec'd, exited or renamed itself.
 *   - exit: the thread leaves the live forest at once (TaskExited).
 *   - comm: a tracked leader's comm is updated at once.
 *   - fork, exec: queued. manager.c waits a little (RESCAN_DEBOUNCE_USEC) so that a burst of them
 *     costs one rescan, then manager_flush_rescans() picks the processes whose subtrees need
 *     reading, dumps each subtree with ptrace_scan(root = pid), and merges the result.
 * A filter installed by a task that then neither forks nor execs produces no event at all: the
 * periodic full pass (REFRESH_USEC_PTRACE in manager.c) is what finds it.
 *
 * Merging keeps the full pass's rules (see scan-ptrace.c): a rescanned thread's chain shares the
 * longest equal prefix with the chains of the threads of its own process placed before it and of
 * its nearest ancestor process with a filter thread, now taken from the live forest; the rest of
 * the chain are nodes of their own. Such a node keeps the id of a live filter with the same
 * parent, bytes and LOG flag that no other thread reaches any more (the rescanned process had it
 * before: an exec, a thread that came or went), preferring the one the same thread had at the same
 * depth, as manager_adopt_inferred_ids() does for passes; otherwise it gets a new id and a
 * FilterAttached signal.
 *
 * What this does not see: a task that lives less than the debounce (it is gone when its subtree is
 * read); sharing that a full pass would no longer infer because a process's parent died (the live
 * forest keeps what it knew until the next full pass); listeners, which only full passes collect.
 */
#include <time.h>

#include "manager.h"
#include "procinfo.h"

#define MAX_PENDING 4096         /* more events than this between two rescans: a full pass */
#define MAX_SUBTREE_RESCANS 8    /* each one reads all of /proc: beyond this a full pass is cheaper */

typedef struct PendingRescan {
        ProcEventType type;
        pid_t tid, tgid, parent_tid, parent_tgid;
} PendingRescan;

static int store_thread(Manager *m, const Process *p, const Task *t) {
        WatchTask w;
        watch_task_from_forest(&w, p, t);
        return store_put_task(m->store, &w, p->exe, now_usec(CLOCK_REALTIME));
}

/* ---- events ---- */

static int on_task_exit(Manager *m, const ProcEvent *e) {
        const Task *t = process_find_thread(forest_find_process(m->live, e->tgid), e->tid);
        uint64_t head = t ? t->filter_id : 0;
        if (forest_remove_thread(m->live, e->tgid, e->tid) < 0)
                return 0; /* not a task we track */
        manager_live_thread_gone(m, head);
        m->batch_exits = true;
        (void) manager_send_task_exited(m, e->tid);
        return store_remove_task(m->store, e->tid);
}

/* A process's comm is its leader's. */
static int on_task_comm(Manager *m, const ProcEvent *e) {
        Process *p = forest_find_process(m->live, e->tgid);
        Task *t = e->tid == e->tgid ? process_find_thread(p, e->tid) : NULL;
        if (!t)
                return 0;
        memcpy(p->comm, e->comm, sizeof(p->comm));
        return store_thread(m, p, t);
}

static void queue_rescan(Manager *m, const ProcEvent *e) {
        if (m->pending_full)
                return;
        if (m->n_pending >= MAX_PENDING || GROW(m->pending, m->n_pending_allocated, m->n_pending + 1) < 0) {
                m->pending_full = "burst";
                return;
        }
        m->pending[m->n_pending++] = (PendingRescan) {
                .type = e->type, .tid = e->tid, .tgid = e->tgid, .parent_tid = e->parent_tid, .parent_tgid = e->parent_tgid,
        };
}

int manager_apply_proc_event(Manager *m, const ProcEvent *e) {
        switch (e->type) {
        case PROC_EVENT_TYPE_EXIT:
                return on_task_exit(m, e);
        case PROC_EVENT_TYPE_COMM:
                return on_task_comm(m, e);
        case PROC_EVENT_TYPE_FORK:
        case PROC_EVENT_TYPE_EXEC:
                queue_rescan(m, e);
                return 0;
        default:
                return 0;
        }
}

/* ---- which subtrees to rescan ---- */

/* The kernel's seccomp mode of a task (0 when it is gone), and its filter count. */
static int task_seccomp(pid_t tid, unsigned *ret_filters) {
        ProcStatus st;
        if (proc_read_status(tid, &st) < 0)
                return 0;
        if (ret_filters)
                *ret_filters = (unsigned) st.seccomp_filters;
        return st.seccomp_mode;
}

/* Filters only ever grow on a task, so a thread whose kernel filter count equals its live chain's
 * length has the chain the live forest says. */
static bool live_thread_current(Manager *m, pid_t tgid, pid_t tid) {
        const Task *t = process_find_thread(forest_find_process(m->live, tgid), tid);
        if (!t)
                return false;
        unsigned count = 0;
        int mode = task_seccomp(tid, &count);
        return mode == 0 || count == forest_chain_length(m->live, t->filter_id); /* gone: nothing better to read */
}

/* The process whose subtree holds what the event changed, or 0 when nothing of interest did: a
 * task without seccomp that forked or exec'd a task without seccomp. */
static pid_t rescan_root(Manager *m, const PendingRescan *p) {
        bool tracked = forest_find_process(m->live, p->tgid);

        if (p->type == PROC_EVENT_TYPE_EXEC || p->tgid == p->parent_tgid) /* exec, or a new thread */
                return tracked || task_seccomp(p->tid, NULL) > 0 ? p->tgid : 0;
        /* A new process has its forker's chain: read the child alone when the forker's is known. */
        if (live_thread_current(m, p->parent_tgid, p->parent_tid))
                return p->tgid;
        if (task_seccomp(p->parent_tid, NULL) > 0)
                return p->parent_tgid; /* the forker has filters the live forest does not know */
        return task_seccomp(p->tid, NULL) > 0 ? p->tgid : 0;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

/* The distinct roots of the pending events, sorted. */
static int pending_roots(Manager *m, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *roots = calloc(m->n_pending + 1, sizeof(pid_t));
        size_t n = 0;
        if (!roots)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_pending; i++) {
                pid_t root = rescan_root(m, &m->pending[i]);
                if (root > 0 && root != getpid())
                        roots[n++] = root;
        }
        qsort_safe(roots, n, sizeof(pid_t), cmp_pid);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (k == 0 || roots[k - 1] != roots[i])
                        roots[k++] = roots[i];
        *ret = TAKE_PTR(roots);
        *ret_n = k;
        return 0;
}

/* ---- merging a subtree scan ---- */

typedef struct Merge {
        Manager *m;
        const Forest *scan;
        Hashmap unreadable;  /* tids the scan could not read: their live state stays */
        Hashmap adoptable;   /* inferred key -> live filter no kept thread reaches */
        Filter **adoptable_more; /* same key as one in the map */
        size_t n_adoptable_more;
        uint64_t next_id;
} Merge;

static void merge_deinit(Merge *g) {
        hashmap_deinit(&g->unreadable);
        hashmap_deinit(&g->adoptable);
        free(g->adoptable_more);
}

static bool same_program(const Filter *a, const Filter *b) {
        return a->log == b->log && memcmp(a->digest, b->digest, PROG_DIGEST_SIZE) == 0;
}

static uint64_t adopt_key(uint64_t parent_id, const Filter *x) {
        uint64_t d;
        memcpy(&d, x->digest, sizeof(d));
        return d ^ (parent_id * 0x9e3779b97f4a7c15ULL) ^ (uint64_t) x->log;
}

/* The chain of head in f, oldest first. */
static int chain_of(const Forest *f, uint64_t head, Filter ***ret, size_t *ret_n) {
        size_t n = forest_chain_length(f, head);
        Filter **chain = calloc(n + 1, sizeof(Filter *));
        if (!chain)
                return -ENOMEM;
        size_t i = n;
        for (Filter *x = forest_find_filter(f, head); x && i > 0; x = forest_find_filter(f, x->parent_id))
                chain[--i] = x;
        *ret = chain;
        *ret_n = n;
        return 0;
}

static void mark_chain(const Forest *f, uint64_t head, Hashmap *kept) {
        for (Filter *x = forest_find_filter(f, head); x; x = forest_find_filter(f, x->parent_id))
                if (hashmap_put(kept, x->id, x) == -EEXIST)
                        return; /* its ancestors are marked already */
}

/* Filters reached only by threads the scan replaces may be taken over by the rescanned chains
 * (threads it could not read keep theirs). */
static int merge_find_adoptable(Merge *g) {
        Forest *live = g->m->live;
        _cleanup_(hashmap_deinit) Hashmap kept = {};
        size_t allocated = 0;

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
                int r = hashmap_put(&g->adoptable, adopt_key(x->parent_id, x), x);
                if (r == -EEXIST) {
                        if (GROW(g->adoptable_more, allocated, g->n_adoptable_more + 1) < 0)
                                return -ENOMEM;
                        g->adoptable_more[g->n_adoptable_more++] = x;
                } else if (r < 0)
                        return r;
        }
        return 0;
}

/* Take x out of the adoptable filters; false if it is not among them. */
static bool merge_take(Merge *g, Filter *x) {
        uint64_t key = adopt_key(x->parent_id, x);
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

/* Take a live filter for a new node (parent_id, the bytes and flags of want), if one is free:
 * the one the same thread had there (mine), else any. */
static Filter *merge_adopt(Merge *g, uint64_t parent_id, const Filter *want, Filter *mine) {
        if (mine && mine->parent_id == parent_id && same_program(mine, want) && merge_take(g, mine))
                return mine;
        uint64_t key = adopt_key(parent_id, want);
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

static int merge_new_filter(Merge *g, uint64_t parent_id, const Filter *src, pid_t tid, Filter **ret) {
        Filter *flt;
        int r = forest_add_filter(g->m->live, ++g->next_id, parent_id, src->insns, src->len, &flt);
        if (r < 0)
                return r;
        flt->log = src->log;
        flt->wait_killable_recv = src->wait_killable_recv;
        flt->has_listener = src->has_listener;
        flt->identity = IDENTITY_INFERRED;
        r = store_put_filter(g->m->store, flt, NULL, now_usec(CLOCK_REALTIME));
        if (r < 0)
                return r;
        (void) manager_send_filter_attached(g->m, flt->id, parent_id, tid);
        *ret = flt;
        return 0;
}

static size_t common_prefix(Filter * const *a, size_t na, Filter * const *b, size_t nb) {
        size_t i = 0;
        while (i < na && i < nb && same_program(a[i], b[i]))
                i++;
        return i;
}

/* The thread of p (other than skip) whose live chain shares the longest prefix with want, if
 * longer than *k: then *base and *k are replaced. */
static int best_prefix(const Forest *live, const Process *p, const Task *skip, Filter **want, size_t n_want,
                       Filter ***base, size_t *k) {
        for (size_t i = 0; p && i < p->n_threads; i++) {
                const Task *t = &p->threads[i];
                if (t == skip || t->mode != TASK_MODE_FILTER || t->filter_id == 0)
                        continue;
                Filter **chain;
                size_t n;
                int r = chain_of(live, t->filter_id, &chain, &n);
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

/* The nearest ancestor process whose chains p's may share: its parent, if that has a filter thread
 * (the walk of scan-ptrace.c stops at a process without one, and at one it does not report). */
static const Process *merge_anchor(const Forest *live, const Process *p) {
        const Process *a = forest_find_process(live, p->ppid);
        for (size_t i = 0; a && i < a->n_threads; i++)
                if (a->threads[i].mode == TASK_MODE_FILTER && a->threads[i].filter_id)
                        return a;
        return NULL;
}

/* Give the thread at index self of lp the chain that the scan's head names, in live filters;
 * old_head is the thread's head before (0 for a new thread). */
static int merge_place_thread(Merge *g, Process *lp, size_t self, uint64_t scan_head, uint64_t old_head) {
        Forest *live = g->m->live;
        _cleanup_free_ Filter **want = NULL, **base = NULL, **mine = NULL;
        size_t n_want, n_mine = 0, k = 0;
        int r = chain_of(g->scan, scan_head, &want, &n_want);
        if (r >= 0)
                r = chain_of(live, old_head, &mine, &n_mine);
        if (r >= 0)
                r = best_prefix(live, lp, &lp->threads[self], want, n_want, &base, &k);
        if (r >= 0)
                r = best_prefix(live, merge_anchor(live, lp), NULL, want, n_want, &base, &k);
        if (r < 0)
                return r;

        uint64_t parent = k > 0 ? base[k - 1]->id : 0;
        for (size_t i = k; i < n_want; i++) {
                Filter *x = merge_adopt(g, parent, want[i], i < n_mine ? mine[i] : NULL);
                if (!x && (r = merge_new_filter(g, parent, want[i], lp->threads[self].tid, &x)) < 0)
                        return r;
                parent = x->id;
        }
        lp->threads[self].filter_id = parent;
        return 0;
}

static bool same_thread(const Task *a, const Task *b) {
        return a && b && a->tid == b->tid && a->start_time == b->start_time;
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

static void process_copy_fields(Process *lp, const Process *sp) {
        lp->ppid = sp->ppid;
        lp->start_time = sp->start_time;
        memcpy(lp->comm, sp->comm, sizeof(lp->comm));
        lp->uid = sp->uid;
        lp->gid = sp->gid;
        lp->no_new_privs = sp->no_new_privs;
        if (sp->exe && !streq_ptr(lp->exe, sp->exe))
                (void) process_set_exe(lp, sp->exe);
}

/* The rescanned threads of sp go into lp, and those the scan could not read keep their state. */
static int merge_threads(Merge *g, Process *lp, const Process *sp, const Task *old, size_t n_old) {
        for (size_t i = 0; i < sp->n_threads; i++) {
                const Task *st = &sp->threads[thread_order(sp, i)];
                if (st->mode == TASK_MODE_DISABLED)
                        continue;
                Task *t;
                int r = process_add_thread(lp, st->tid, &t);
                if (r < 0)
                        return r;
                t->start_time = st->start_time;
                t->mode = st->mode;
                t->filter_count = st->filter_count;
                uint64_t old_head = 0;
                for (size_t j = 0; j < n_old; j++)
                        if (same_thread(&old[j], t))
                                old_head = old[j].filter_id;
                if (st->mode == TASK_MODE_FILTER && st->filter_id &&
                    (r = merge_place_thread(g, lp, lp->n_threads - 1, st->filter_id, old_head)) < 0)
                        return r;
        }
        for (size_t i = 0; i < n_old; i++)
                if (hashmap_get(&g->unreadable, (uint64_t) old[i].tid) && !process_find_thread(lp, old[i].tid)) {
                        Task *t;
                        int r = process_add_thread(lp, old[i].tid, &t);
                        if (r < 0)
                                return r;
                        *t = old[i];
                }
        return 0;
}

/* The store and the signals, once lp has its new threads. */
static int merge_announce_process(Merge *g, const Process *lp, const Task *old, size_t n_old) {
        Manager *m = g->m;
        for (size_t i = 0; i < lp->n_threads; i++) {
                const Task *t = &lp->threads[i];
                int r = store_thread(m, lp, t);
                if (r < 0)
                        return r;
                bool known = false;
                for (size_t j = 0; j < n_old && !known; j++)
                        known = same_thread(&old[j], t);
                if (!known)
                        (void) manager_send_task_added(m, t->tid, lp->pid, lp->comm);
        }
        for (size_t j = 0; j < n_old; j++) {
                if (same_thread(process_find_thread(lp, old[j].tid), &old[j]))
                        continue;
                if (!process_find_thread(lp, old[j].tid)) {
                        int r = store_remove_task(m->store, old[j].tid);
                        if (r < 0)
                                return r;
                }
                (void) manager_send_task_exited(m, old[j].tid);
        }
        return 0;
}

static int merge_drop_process(Merge *g, Process *lp) {
        pid_t pid = lp->pid;
        while ((lp = forest_find_process(g->m->live, pid)) && lp->n_threads > 0) {
                pid_t tid = lp->threads[0].tid;
                int r = store_remove_task(g->m->store, tid);
                if (r < 0)
                        return r;
                (void) manager_send_task_exited(g->m, tid);
                (void) forest_remove_thread(g->m->live, pid, tid);
        }
        return 0;
}

static int merge_process(Merge *g, const Process *sp) {
        Forest *live = g->m->live;
        Process *lp = forest_find_process(live, sp->pid);
        int r;

        if (lp && lp->start_time != sp->start_time) {
                r = merge_drop_process(g, lp); /* another process under a reused pid: its exit was missed */
                if (r < 0)
                        return r;
                lp = NULL;
        }
        if (!lp && !has_seccomp(sp))
                return 0;

        _cleanup_free_ Task *old = NULL;
        size_t n_old = 0;
        if (lp) {
                old = malloc((lp->n_threads + 1) * sizeof(Task));
                if (!old)
                        return -ENOMEM;
                n_old = lp->n_threads;
                memcpy_safe(old, lp->threads, n_old * sizeof(Task));
                lp->n_threads = 0;
        } else if ((r = forest_add_process(live, sp->pid, &lp)) < 0)
                return r;
        process_copy_fields(lp, sp);
        live->linked = false;

        r = merge_threads(g, lp, sp, old, n_old);
        if (r < 0)
                return r;
        if (lp->n_threads == 0) {
                /* Nothing in strict or filter mode any more: a reused pid whose start time matched. */
                memcpy_safe(lp->threads, old, n_old * sizeof(Task));
                lp->n_threads = n_old;
                return merge_drop_process(g, lp);
        }
        return merge_announce_process(g, lp, old, n_old);
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

static uint64_t next_filter_id(Manager *m) {
        uint64_t next = 0;
        (void) store_max_filter_id(m->store, &next);
        for (size_t i = 0; i < m->live->n_filters; i++)
                if (m->live->filters[i]->id > next)
                        next = m->live->filters[i]->id;
        return next;
}

/* Replace the live state of every process of a subtree scan, ancestors first. */
static int merge_subtree(Manager *m, const Forest *scan, const UnreadableTask *bad, size_t n_bad) {
        _cleanup_(merge_deinit) Merge g = { .m = m, .scan = scan, .next_id = next_filter_id(m) };
        _cleanup_free_ Placed *order = calloc(scan->n_processes + 1, sizeof(Placed));
        int r;

        if (!order)
                return -ENOMEM;
        manager_live_uses_invalidate(m); /* chains change wholesale: counted again when retiring */
        for (size_t i = 0; i < n_bad; i++)
                if ((r = hashmap_replace(&g.unreadable, (uint64_t) bad[i].tid, (void *) 1)) < 0)
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

/* ---- the rescan ---- */

static int rescan_subtree(Manager *m, pid_t root, Hashmap *covered) {
        ScanOptions opts = { .root = root, .include_argv = false, .include_exe = true };
        _cleanup_(forest_freep) Forest *scan = NULL;
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;

        if (hashmap_get(covered, (uint64_t) root))
                return 0; /* inside a subtree read already */
        ProcStatus st;
        if (proc_read_status(root, &st) < 0 || st.state == 'Z' || st.state == 'X')
                return 0; /* gone: its exit events say the rest */
        int r = ptrace_scan(&opts, &scan, &bad, &n_bad);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        for (size_t i = 0; i < scan->n_processes; i++)
                if ((r = hashmap_replace(covered, (uint64_t) scan->processes[i]->pid, (void *) 1)) < 0)
                        return r;
        return merge_subtree(m, scan, bad, n_bad);
}

static int rescan_roots(Manager *m, const pid_t *roots, size_t n) {
        _cleanup_(hashmap_deinit) Hashmap covered = {};
        int r = store_begin(m->store);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = rescan_subtree(m, roots[i], &covered);
        /* Threads that left, and filters nobody took over, may have left filters unreachable. */
        if (r >= 0)
                r = manager_retire_unreachable(m);
        if (r < 0) {
                store_rollback(m->store);
                return r;
        }
        return store_commit(m->store);
}

int manager_flush_rescans(Manager *m) {
        _cleanup_free_ pid_t *roots = NULL;
        size_t n_roots = 0;
        const char *full = m->pending_full;
        int r = 0;

        if (!full) {
                r = pending_roots(m, &roots, &n_roots);
                if (r < 0 || n_roots > MAX_SUBTREE_RESCANS)
                        full = "burst";
        }
        m->n_pending = 0;
        m->pending_full = NULL;
        if (full)
                return manager_full_pass(m, full);
        if (n_roots == 0)
                return 0;

        uint64_t start = now_usec(CLOCK_MONOTONIC);
        r = rescan_roots(m, roots, n_roots);
        m->rescan_end_mono = now_usec(CLOCK_MONOTONIC);
        m->rescan_cost_usec = m->rescan_end_mono - start;
        log_debug("Rescanned %zu subtree(s) in %" PRIu64 " us.", n_roots, m->rescan_cost_usec);
        if (r < 0) {
                log_warning_errno(r, "Rescanning after events failed (%m), resynchronising.");
                return manager_full_pass(m, "inconsistent");
        }
        (void) manager_announce_counts(m);
        return 0;
}

/* ---- what a full pass changed ---- */

static bool forest_has_thread(const Forest *f, pid_t pid, const Task *t) {
        return same_thread(process_find_thread(forest_find_process(f, pid), t->tid), t);
}

static void announce_new_filters(Manager *m, const Forest *old, const Forest *new, const Task *t, Hashmap *done) {
        _cleanup_free_ Filter **chain = NULL;
        size_t n;
        if (chain_of(new, t->filter_id, &chain, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                if (forest_find_filter(old, chain[i]->id) || hashmap_put(done, chain[i]->id, chain[i]) < 0)
                        continue;
                (void) manager_send_filter_attached(m, chain[i]->id, chain[i]->parent_id, t->tid);
        }
}

void manager_announce_pass(Manager *m, const Forest *old, const Forest *new) {
        _cleanup_(hashmap_deinit) Hashmap done = {};
        if (!old || !m->bus)
                return;
        for (size_t i = 0; i < old->n_processes; i++)
                for (size_t j = 0; j < old->processes[i]->n_threads; j++) {
                        const Task *t = &old->processes[i]->threads[j];
                        if (!forest_has_thread(new, old->processes[i]->pid, t))
                                (void) manager_send_task_exited(m, t->tid);
                }
        for (size_t i = 0; i < new->n_processes; i++) {
                const Process *p = new->processes[i];
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j];
                        if (!forest_has_thread(old, p->pid, t))
                                (void) manager_send_task_added(m, t->tid, p->pid, p->comm);
                        announce_new_filters(m, old, new, t, &done);
                }
        }
}
