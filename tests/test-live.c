/* test-live.c: unit tests of the live forest model: events in, changes out, in order; the head
 * rule; retiring what nothing uses; the children index; full passes; and rollback, which must put
 * the forest back exactly as it was, whatever the batch did before it failed */
#include <linux/seccomp.h>

#include "core/live.h"
#include "tests-util.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Live, live_free)

/* ---- a canonical text of a forest, to compare two of them ---- */

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static char *forest_canon(const Forest *f) {
        GString *s = g_string_new(NULL);
        g_autofree uint64_t *ids = g_new0(uint64_t, f->n_filters + 1);
        for (size_t i = 0; i < f->n_filters; i++)
                ids[i] = f->filters[i]->id;
        qsort(ids, f->n_filters, sizeof(uint64_t), cmp_u64);
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = forest_find_filter(f, ids[i]);
                char d[PROG_DIGEST_STRING_MAX];
                g_string_append_printf(s, "filter %" PRIu64 " parent %" PRIu64 " %s log %d wkr %d listener %d %s\n",
                                       x->id, x->parent_id, prog_digest_to_string(x->digest, d), x->log,
                                       x->wait_killable_recv, x->has_listener, identity_kind_to_string(x->identity));
        }
        g_autofree uint64_t *pids = g_new0(uint64_t, f->n_processes + 1);
        for (size_t i = 0; i < f->n_processes; i++)
                pids[i] = (uint64_t) f->processes[i]->pid;
        qsort(pids, f->n_processes, sizeof(uint64_t), cmp_u64);
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = forest_find_process(f, (pid_t) pids[i]);
                g_string_append_printf(s, "process %d ppid %d start %" PRIu64 " comm %.16s exe %s uid %u gid %u nnp %d\n",
                                       p->pid, p->ppid, p->start_time, p->comm, p->exe ?: "-", p->uid, p->gid,
                                       p->no_new_privs);
                g_autofree uint64_t *tids = g_new0(uint64_t, p->n_threads + 1);
                for (size_t j = 0; j < p->n_threads; j++)
                        tids[j] = (uint64_t) p->threads[j].tid;
                qsort(tids, p->n_threads, sizeof(uint64_t), cmp_u64);
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = process_find_thread(p, (pid_t) tids[j]);
                        g_string_append_printf(s, "  thread %d start %" PRIu64 " %s head %" PRIu64 "\n", t->tid,
                                               t->start_time, task_mode_to_string(t->mode), t->filter_id);
                }
        }
        return g_string_free(s, false);
}

/* The counts, the children index and the uses agree with the forest itself. */
static void assert_consistent(Live *l) {
        const Forest *f;
        _cleanup_free_ char *error = NULL;
        if (live_linked(l, &f, &error) < 0)
                g_error("the live forest does not link: %s", error ?: "?");
        LiveCounts n = live_counts(l);
        g_assert_cmpuint(n.tasks, ==, f->n_tasks);
        g_assert_cmpuint(n.filters, ==, f->n_filters);
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                bool seccomp = false;
                for (size_t j = 0; j < p->n_threads; j++)
                        seccomp = seccomp || p->threads[j].mode != TASK_MODE_DISABLED;
                g_assert_true(seccomp); /* disabled threads only beside one in strict or filter mode */
                size_t nc;
                const pid_t *kids = live_children(l, p->ppid, &nc);
                bool found = p->ppid <= 0;
                for (size_t j = 0; j < nc; j++)
                        found = found || kids[j] == p->pid;
                g_assert_true(found);
        }
        size_t it = 0, total = 0;
        pid_t ppid;
        while (live_next_parent(l, &it, &ppid)) {
                size_t nc;
                const pid_t *kids = live_children(l, ppid, &nc);
                g_assert_cmpuint(nc, >, 0);
                for (size_t j = 0; j < nc; j++)
                        g_assert_cmpint(forest_find_process(f, kids[j])->ppid, ==, ppid);
                total += nc;
        }
        size_t with_parent = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                with_parent += f->processes[i]->ppid > 0;
        g_assert_cmpuint(total, ==, with_parent);
        /* Nothing is left that no thread or listener reaches. */
        for (size_t i = 0; i < f->n_filters; i++)
                g_assert_true(f->filters[i]->n_tasks > 0 || f->filters[i]->n_children > 0 || f->filters[i]->listener_id);
}

/* ---- building events ---- */

static const struct sock_filter prog_a[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
static const struct sock_filter prog_b[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1) };

static LiveEvent task_event(LiveEventType type, pid_t tid, pid_t tgid, pid_t ppid, uint64_t head) {
        LiveEvent e = {
                .type = type,
                .task = {
                        .tid = tid, .tgid = tgid, .ppid = ppid, .start_time = 1000 + (uint64_t) tid,
                        .mode = head ? TASK_MODE_FILTER : TASK_MODE_DISABLED, .filter_id = head,
                        .uid = 1000, .gid = 1000,
                },
        };
        snprintf(e.task.comm, sizeof(e.task.comm), "t%d", tgid);
        return e;
}

static LiveEvent filter_event(pid_t tid, pid_t tgid, pid_t ppid, uint64_t id, uint64_t parent, bool b) {
        LiveEvent e = task_event(LIVE_EVENT_FILTER, tid, tgid, ppid, 0);
        e.filter = (LiveFilter) {
                .id = id, .parent_id = parent, .insns = b ? prog_b : prog_a, .len = 1, .identity = IDENTITY_EXACT,
        };
        return e;
}

static Live *new_live(void) {
        Live *l;
        g_assert_cmpint(live_new(NULL, &l), ==, 0);
        return l;
}

static void apply_ok(Live *l, const LiveEvent *e, size_t n, LiveChanges *c) {
        int r = live_apply(l, e, n, c);
        if (r < 0)
                g_error("live_apply: %s", strerror(-r));
}

/* A batch applied and stored: the changes are let go. */
static void apply_committed(Live *l, const LiveEvent *e, size_t n) {
        LiveChanges c = {};
        apply_ok(l, e, n, &c);
        live_changes_done(&c);
}

/* The types of c's changes, as one string. */
static char *change_types(const LiveChanges *c) {
        GString *s = g_string_new(NULL);
        for (size_t i = 0; i < c->n; i++)
                g_string_append_printf(s, "%s%s", i ? " " : "", live_change_type_to_string(c->changes[i].type));
        return g_string_free(s, false);
}

#define ASSERT_TYPES(c, want)                                   \
        do {                                                    \
                g_autofree char *_t = change_types(c);          \
                g_assert_cmpstr(_t, ==, want);                  \
        } while (0)

/* ---- tests ---- */

/* A filtered process forks a thread and a child: what comes out, in order. */
static void test_fork_and_install(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent e[] = {
                filter_event(100, 100, 1, 7, 0, false),
                task_event(LIVE_EVENT_TASK, 101, 100, 1, 7),
                task_event(LIVE_EVENT_TASK, 200, 200, 100, 7),
        };
        apply_ok(l, e, ELEMENTSOF(e), &c);
        ASSERT_TYPES(&c, "filter-attached process-added task-added task-added process-added task-added");
        g_assert_true(c.changes[0].new_filter);
        g_assert_cmpuint(c.changes[0].filter_id, ==, 7);
        g_assert_cmpint(c.changes[0].tid, ==, 100);
        g_assert_cmpstr(c.changes[2].comm, ==, "t100");
        LiveCounts n = live_counts(l);
        g_assert_cmpuint(n.tasks, ==, 3);
        g_assert_cmpuint(n.filters, ==, 1);
        size_t nc;
        const pid_t *kids = live_children(l, 100, &nc);
        g_assert_cmpuint(nc, ==, 1);
        g_assert_cmpint(kids[0], ==, 200);
        assert_consistent(l);
        g_assert_cmpuint(live_uses_rebuilds(l), ==, 1);
        live_changes_done(&c);
}

/* An event older than what we know (its head an ancestor of ours) keeps ours; a head on another
 * branch (the thread that exec'd had its own chain) replaces it. */
static void test_head_rule(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent setup[] = {
                filter_event(100, 100, 1, 1, 0, false),
                filter_event(100, 100, 1, 2, 1, true),
                task_event(LIVE_EVENT_TASK, 101, 100, 1, 1),
                filter_event(101, 100, 1, 3, 1, false),
        };
        apply_committed(l, setup, ELEMENTSOF(setup));
        LiveEvent stale = task_event(LIVE_EVENT_TASK, 100, 100, 1, 1);
        apply_ok(l, &stale, 1, &c);
        g_assert_cmpuint(c.n, ==, 0);
        g_assert_cmpuint(process_find_thread(forest_find_process(live_forest(l), 100), 100)->filter_id, ==, 2);
        LiveEvent other = task_event(LIVE_EVENT_TASK, 100, 100, 1, 3);
        apply_ok(l, &other, 1, &c);
        ASSERT_TYPES(&c, "task-updated filter-retired");
        g_assert_cmpuint(c.changes[1].filter_id, ==, 2);
        assert_consistent(l);
        live_changes_done(&c);
}

/* TSYNC: every thread named gets the filter, those we did not track too. */
static void test_tsync(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveThread threads[] = { { 100, 1100 }, { 101, 1101 }, { 102, 1102 } };
        LiveEvent e = filter_event(101, 100, 1, 5, 0, false);
        e.filter.tsync = threads;
        e.filter.n_tsync = ELEMENTSOF(threads);
        apply_ok(l, &e, 1, &c);
        ASSERT_TYPES(&c, "filter-attached process-added task-added task-added task-added");
        const Process *p = forest_find_process(live_forest(l), 100);
        g_assert_cmpuint(p->n_threads, ==, 3);
        for (size_t i = 0; i < p->n_threads; i++)
                g_assert_cmpuint(p->threads[i].filter_id, ==, 5);
        g_assert_cmpuint(process_find_thread(p, 102)->start_time, ==, 1102);
        /* the process's start time comes from its leader's thread */
        g_assert_cmpuint(p->start_time, ==, 1100);
        live_changes_done(&c);
}

/* A process leaves thread by thread: its private filters are retired after the last one, children
 * before parents; the shared one stays. */
static void test_exit_retires(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent e[] = {
                filter_event(100, 100, 1, 1, 0, false),
                task_event(LIVE_EVENT_TASK, 200, 200, 100, 1),
                filter_event(200, 200, 100, 2, 1, true),
                filter_event(200, 200, 100, 3, 2, false),
                task_event(LIVE_EVENT_TASK, 201, 200, 100, 3),
        };
        apply_committed(l, e, ELEMENTSOF(e));
        LiveEvent x = task_event(LIVE_EVENT_EXIT, 201, 200, 100, 0);
        apply_ok(l, &x, 1, &c);
        ASSERT_TYPES(&c, "task-exited");
        live_changes_clear(&c);
        x = task_event(LIVE_EVENT_EXIT, 200, 200, 100, 0);
        apply_ok(l, &x, 1, &c);
        ASSERT_TYPES(&c, "task-exited process-removed filter-retired filter-retired");
        g_assert_cmpuint(c.changes[2].filter_id, ==, 3);
        g_assert_cmpuint(c.changes[3].filter_id, ==, 2);
        g_assert_nonnull(forest_find_filter(live_forest(l), 1));
        g_assert_null(forest_find_process(live_forest(l), 200));
        size_t nc;
        live_children(l, 100, &nc);
        g_assert_cmpuint(nc, ==, 0);
        assert_consistent(l);
        /* Counted once, then kept by the events. */
        g_assert_cmpuint(live_uses_rebuilds(l), ==, 1);
        live_changes_done(&c);
}

/* A thread created before its process installed a filter without TSYNC escaped it: it is listed
 * (disabled) while the process has a filtered thread, and leaves with the last one, or when it
 * exec's alone. A disabled thread of a process the forest does not have is nothing. */
static void test_escaped_threads(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent alone = task_event(LIVE_EVENT_TASK, 301, 300, 1, 0);
        apply_ok(l, &alone, 1, &c);
        g_assert_cmpuint(c.n, ==, 0);
        LiveEvent e[] = {
                filter_event(100, 100, 1, 7, 0, false),
                task_event(LIVE_EVENT_TASK, 102, 100, 1, 0),
        };
        apply_ok(l, e, ELEMENTSOF(e), &c);
        ASSERT_TYPES(&c, "filter-attached process-added task-added task-added");
        live_changes_clear(&c);
        const Task *t = process_find_thread(forest_find_process(live_forest(l), 100), 102);
        g_assert_nonnull(t);
        g_assert_cmpint(t->mode, ==, TASK_MODE_DISABLED);
        g_assert_cmpuint(live_counts(l).tasks, ==, 2);
        assert_consistent(l);

        LiveEvent x = task_event(LIVE_EVENT_EXIT, 100, 100, 1, 0);
        apply_ok(l, &x, 1, &c);
        ASSERT_TYPES(&c, "task-exited task-exited process-removed filter-retired");
        g_assert_cmpint(c.changes[1].tid, ==, 102);
        g_assert_null(forest_find_process(live_forest(l), 100));
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        g_assert_nonnull(process_find_thread(forest_find_process(live_forest(l), 100), 102));
        assert_consistent(l);

        x = task_event(LIVE_EVENT_EXEC, 102, 100, 1, 0);
        apply_ok(l, &x, 1, &c);
        ASSERT_TYPES(&c, "task-exited task-exited process-removed filter-retired");
        g_assert_null(forest_find_process(live_forest(l), 100));
        assert_consistent(l);
        live_changes_done(&c);
}

/* exec: the other threads are gone without their exits; comm and exe change. */
static void test_exec(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent e[] = {
                filter_event(100, 100, 1, 1, 0, false),
                task_event(LIVE_EVENT_TASK, 101, 100, 1, 1),
                task_event(LIVE_EVENT_TASK, 102, 100, 1, 1),
        };
        apply_committed(l, e, ELEMENTSOF(e));
        LiveEvent x = task_event(LIVE_EVENT_EXEC, 100, 100, 1, 1);
        snprintf(x.task.comm, sizeof(x.task.comm), "new");
        x.task.exe = "/usr/bin/new";
        apply_ok(l, &x, 1, &c);
        ASSERT_TYPES(&c, "task-exited task-exited process-updated");
        const Process *p = forest_find_process(live_forest(l), 100);
        g_assert_cmpuint(p->n_threads, ==, 1);
        g_assert_cmpstr(p->comm, ==, "new");
        g_assert_cmpstr(p->exe, ==, "/usr/bin/new");
        live_changes_done(&c);
}

/* A process's parent exits: the process follows its new parent, and so does the index. */
static void test_parent(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent e[] = {
                filter_event(200, 200, 100, 1, 0, false),
                task_event(LIVE_EVENT_TASK, 300, 300, 200, 1),
        };
        apply_committed(l, e, ELEMENTSOF(e));
        LiveEvent x = { .type = LIVE_EVENT_PARENT, .task = { .tgid = 300, .ppid = 1, .process_start_time = 1300 } };
        apply_ok(l, &x, 1, &c);
        ASSERT_TYPES(&c, "process-updated");
        g_assert_cmpint(c.changes[0].old.ppid, ==, 200);
        g_assert_cmpint(forest_find_process(live_forest(l), 300)->ppid, ==, 1);
        size_t nc;
        live_children(l, 200, &nc);
        g_assert_cmpuint(nc, ==, 0);
        live_children(l, 1, &nc);
        g_assert_cmpuint(nc, ==, 1);
        /* another process under that pid (start time): nothing */
        live_changes_clear(&c);
        x.task.process_start_time = 5;
        x.task.ppid = 77;
        apply_ok(l, &x, 1, &c);
        g_assert_cmpuint(c.n, ==, 0);
        assert_consistent(l);
        live_changes_done(&c);
}

/* A pid or a tid reused while we missed the exit: the old one goes first. */
static void test_reused_ids(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent e[] = { filter_event(100, 100, 1, 1, 0, false), task_event(LIVE_EVENT_TASK, 101, 100, 1, 1) };
        apply_committed(l, e, ELEMENTSOF(e));
        LiveEvent x = filter_event(100, 100, 1, 2, 0, true);
        x.task.start_time = 9999;
        apply_ok(l, &x, 1, &c);
        ASSERT_TYPES(&c, "filter-attached task-exited task-exited process-removed process-added task-added "
                         "filter-retired");
        g_assert_cmpuint(forest_find_process(live_forest(l), 100)->n_threads, ==, 1);
        assert_consistent(l);
        live_changes_done(&c);
}

/* A filter whose parent we never heard of fails the batch; rolling back restores what the batch
 * changed before it. */
static void test_missing_parent_rolls_back(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent setup[] = { filter_event(100, 100, 1, 1, 0, false) };
        apply_committed(l, setup, 1);
        g_autofree char *before = forest_canon(live_forest(l));
        LiveEvent e[] = {
                task_event(LIVE_EVENT_TASK, 200, 200, 100, 1),
                filter_event(200, 200, 100, 2, 1, true),
                task_event(LIVE_EVENT_EXIT, 100, 100, 1, 0),
                filter_event(200, 200, 100, 9, 8, false),
        };
        g_assert_cmpint(live_apply(l, e, ELEMENTSOF(e), &c), ==, -ENOLINK);
        g_assert_cmpuint(c.n, >, 3);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        g_assert_cmpuint(c.n, ==, 0);
        g_autofree char *after = forest_canon(live_forest(l));
        g_assert_cmpstr(after, ==, before);
        assert_consistent(l);
        g_assert_cmpuint(live_counts(l).tasks, ==, 1);
        live_changes_done(&c);
}

/* A thread whose head the forest does not have: the batch fails (retiring finds it). */
static void test_unknown_head(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent e = task_event(LIVE_EVENT_TASK, 100, 100, 1, 42);
        g_assert_cmpint(live_apply(l, &e, 1, &c), ==, -EUCLEAN);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        g_assert_cmpuint(live_forest(l)->n_processes, ==, 0);
        live_changes_done(&c);
}

/* A batch with events that do not fit (a thread named under a filter the forest does not have, a
 * filter on such a parent, a thread on that filter) leaves those out and applies the rest; the
 * next batch, which names none of them, applies whole. */
static void test_apply_fitting(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveSkipped k;
        LiveEvent setup[] = { filter_event(100, 100, 1, 1, 0, false) };
        apply_committed(l, setup, 1);
        LiveEvent e[] = {
                task_event(LIVE_EVENT_TASK, 200, 200, 100, 1),   /* fits */
                task_event(LIVE_EVENT_TASK, 300, 300, 100, 42),  /* 42: retired, or its event lost */
                filter_event(300, 300, 100, 43, 42, true),       /* on 42 */
                task_event(LIVE_EVENT_TASK, 301, 300, 100, 43),  /* under 43 */
                filter_event(200, 200, 100, 2, 1, true),         /* fits */
                task_event(LIVE_EVENT_TASK, 201, 200, 100, 2),   /* named before its own filter event: fits */
        };
        /* as a whole, the batch fails */
        g_assert_cmpint(live_apply(l, e, ELEMENTSOF(e), &c), <, 0);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        e[5] = task_event(LIVE_EVENT_TASK, 201, 200, 100, 2);
        g_assert_cmpint(live_apply_fitting(l, e, ELEMENTSOF(e), &c, &k), ==, 0);
        g_assert_cmpuint(k.n, ==, 3);
        g_assert_cmpuint(k.unknown_filter, ==, 3);
        g_assert_cmpint(k.tid, ==, 300);
        g_assert_cmpuint(k.filter_id, ==, 42);
        live_changes_done(&c);
        assert_consistent(l);
        const Forest *f = live_forest(l);
        g_assert_cmpuint(forest_find_task(f, 200, NULL)->filter_id, ==, 2);
        g_assert_cmpuint(forest_find_task(f, 201, NULL)->filter_id, ==, 2);
        g_assert_null(forest_find_process(f, 300));
        g_assert_null(forest_find_filter(f, 43));
        /* the next batch is not failed by what was left out */
        LiveEvent next[] = { task_event(LIVE_EVENT_EXIT, 301, 300, 100, 0), filter_event(201, 200, 100, 3, 2, false) };
        g_assert_cmpint(live_apply_fitting(l, next, ELEMENTSOF(next), &c, &k), ==, 0);
        g_assert_cmpuint(k.n, ==, 0);
        g_assert_cmpuint(forest_find_task(live_forest(l), 201, NULL)->filter_id, ==, 3);
        live_changes_done(&c);
        assert_consistent(l);
}

/* An event that fails on its own is undone and left out; the others stay applied. */
static void test_apply_fitting_undoes_one(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveSkipped k;
        LiveEvent setup[] = { filter_event(100, 100, 1, 1, 0, false) };
        apply_committed(l, setup, 1);
        LiveEvent bad = task_event(LIVE_EVENT_TASK, 300, 300, 100, 0);
        bad.task.mode = TASK_MODE_FILTER; /* filter mode without a filter: cannot be */
        LiveEvent e[] = { task_event(LIVE_EVENT_TASK, 200, 200, 100, 1), bad, task_event(LIVE_EVENT_TASK, 201, 200, 100, 1) };
        g_assert_cmpint(live_apply_fitting(l, e, ELEMENTSOF(e), &c, &k), ==, 0);
        g_assert_cmpuint(k.n, ==, 1);
        g_assert_cmpuint(k.unknown_filter, ==, 0);
        g_assert_cmpint(k.error, ==, -EBADMSG);
        live_changes_done(&c);
        assert_consistent(l);
        g_assert_nonnull(forest_find_task(live_forest(l), 201, NULL));
        g_assert_cmpuint(live_counts(l).tasks, ==, 3);
}

/* The listeners of f as text: "id filter pid:fd ..." lines, by id. */
static char *listeners_canon(const Forest *f) {
        GString *s = g_string_new(NULL);
        for (uint64_t id = 1; id < 64; id++) {
                const Listener *l = forest_find_listener(f, id);
                if (!l)
                        continue;
                g_string_append_printf(s, "%" PRIu64 " %" PRIu64, l->id, l->filter_id);
                for (size_t i = 0; i < l->n_holders; i++)
                        g_string_append_printf(s, " %d:%d", l->holders[i].pid, l->holders[i].fd);
                g_string_append_c(s, '\n');
        }
        return g_string_free(s, false);
}

static LiveEvent listener_closed(pid_t tid, pid_t tgid, uint64_t id, int fd, bool last) {
        LiveEvent e = task_event(LIVE_EVENT_LISTENER_CLOSED, tid, tgid, 1, 0);
        e.filter = (LiveFilter) { .id = id, .listener_held = true, .listener_fd = fd, .has_listener = !last };
        return e;
}

/* A listener made by an install, copied by a fork, closed by one holder and ended by the other's
 * exit; each batch rolls back exactly. */
static void test_listener_events(void) {
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        LiveEvent made = filter_event(100, 100, 1, 7, 0, false);
        made.filter.has_listener = true;
        made.filter.listener_held = true;
        made.filter.listener_fd = 4;
        LiveEvent fork = task_event(LIVE_EVENT_TASK, 200, 200, 100, 7);
        fork.task.forked = true;
        LiveEvent exit = task_event(LIVE_EVENT_EXIT, 200, 200, 100, 0);
        exit.task.group_dead = true;
        LiveEvent steps[][2] = {
                { made, fork },
                { listener_closed(100, 100, 7, 4, false), exit },
        };
        const char *want[] = { "7 7 100:4 200:4\n", "" };
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                g_autofree char *before = forest_canon(live_forest(l)), *lbefore = listeners_canon(live_forest(l));
                apply_ok(l, steps[i], 2, &c);
                g_autofree char *after = forest_canon(live_forest(l)), *lafter = listeners_canon(live_forest(l));
                g_assert_cmpint(live_rollback(l, &c), ==, 0);
                g_autofree char *back = forest_canon(live_forest(l)), *lback = listeners_canon(live_forest(l));
                g_assert_cmpstr(back, ==, before);
                g_assert_cmpstr(lback, ==, lbefore);
                apply_committed(l, steps[i], 2);
                g_autofree char *again = listeners_canon(live_forest(l));
                g_assert_cmpstr(again, ==, want[i]);
                g_assert_cmpstr(again, ==, lafter);
                g_assert_cmpint(forest_find_filter(live_forest(l), 7)->has_listener, ==, want[i][0] != 0);
                g_assert_cmpuint(live_counts(l).listeners, ==, want[i][0] != 0);
                assert_consistent(l);
        }
        live_changes_done(&c);
}

static Forest *scan_forest(uint64_t root_id, pid_t extra) {
        Forest *f = forest_new();
        Filter *x;
        Process *p;
        Task *t;
        g_assert_cmpint(forest_add_filter(f, root_id, 0, prog_a, 1, &x), ==, 0);
        g_assert_cmpint(forest_add_process(f, 100, &p), ==, 0);
        g_assert_cmpint(process_add_thread(p, 100, &t), ==, 0);
        *t = (Task) { .tid = 100, .start_time = 1100, .mode = TASK_MODE_FILTER, .filter_id = root_id };
        if (extra) {
                g_assert_cmpint(forest_add_process(f, extra, &p), ==, 0);
                p->ppid = 100;
                g_assert_cmpint(process_add_thread(p, extra, &t), ==, 0);
                *t = (Task) { .tid = extra, .start_time = 1000 + (uint64_t) extra, .mode = TASK_MODE_STRICT };
        }
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        return f;
}

/* A full pass: the differences are announced after LIVE_REPLACED, and rolling back puts the old
 * forest back. */
static void test_replace(void) {
        g_autoptr(Live) l = NULL;
        g_assert_cmpint(live_new(scan_forest(1, 200), &l), ==, 0);
        g_autofree char *before = forest_canon(live_forest(l));
        LiveChanges c = {};
        g_assert_cmpint(live_replace(l, scan_forest(2, 300), true, &c), ==, 0);
        g_assert_true(c.replaced);
        /* thread 100 is the same thread (tid and start time): it stays, under a new filter */
        ASSERT_TYPES(&c, "replaced task-exited filter-attached task-added");
        g_assert_true(c.changes[1].announce_only);
        g_assert_cmpint(c.changes[1].tid, ==, 200);
        g_assert_cmpuint(c.changes[2].filter_id, ==, 2);
        g_assert_cmpint(c.changes[2].tid, ==, 100);
        g_assert_cmpint(c.changes[3].tid, ==, 300);
        g_assert_cmpuint(live_counts(l).tasks, ==, 2);
        size_t nc;
        live_children(l, 100, &nc);
        g_assert_cmpuint(nc, ==, 1);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        g_autofree char *after = forest_canon(live_forest(l));
        g_assert_cmpstr(after, ==, before);
        assert_consistent(l);
        /* without announcing: only the replacement */
        g_assert_cmpint(live_replace(l, scan_forest(2, 300), false, &c), ==, 0);
        ASSERT_TYPES(&c, "replaced");
        live_changes_done(&c);
}

static Forest *named_forest(const char *comm) {
        Forest *f = scan_forest(1, 0);
        strncpy(forest_find_process(f, 100)->comm, comm, sizeof(((Process *) NULL)->comm));
        return f;
}

/* A full pass that finds a process under another name announces the rename (ProcessRenamed), and
 * nothing when the name is the same. */
static void test_replace_rename(void) {
        g_autoptr(Live) l = NULL;
        g_assert_cmpint(live_new(named_forest("worker"), &l), ==, 0);
        LiveChanges c = {};
        g_assert_cmpint(live_replace(l, named_forest("worker"), true, &c), ==, 0);
        ASSERT_TYPES(&c, "replaced");
        live_changes_clear(&c);
        g_assert_cmpint(live_replace(l, named_forest("sleep"), true, &c), ==, 0);
        ASSERT_TYPES(&c, "replaced process-updated");
        g_assert_true(c.changes[1].announce_only);
        g_assert_cmpint(c.changes[1].tgid, ==, 100);
        g_assert_cmpstr(c.changes[1].comm, ==, "sleep");
        g_assert_cmpstr(c.changes[1].old.comm, ==, "worker");
        live_changes_done(&c);
}

/* A batch owns copies of what its events point to. */
static void test_batch_copies(void) {
        LiveBatch b = {};
        struct sock_filter insns[1] = { prog_b[0] };
        char exe[] = "/bin/x";
        LiveThread th[] = { { 5, 6 } };
        LiveEvent e = filter_event(100, 100, 1, 1, 0, false);
        e.filter.insns = insns;
        e.filter.tsync = th;
        e.filter.n_tsync = 1;
        e.task.exe = exe;
        g_assert_cmpint(live_batch_add(&b, &e), ==, 0);
        insns[0].k = 0;
        exe[1] = 'X';
        th[0].tid = 0;
        g_assert_cmpuint(b.events[0].filter.insns[0].k, ==, prog_b[0].k);
        g_assert_cmpstr(b.events[0].task.exe, ==, "/bin/x");
        g_assert_cmpint(b.events[0].filter.tsync[0].tid, ==, 5);
        live_batch_clear(&b);
        g_assert_cmpuint(b.n, ==, 0);
        live_batch_done(&b);
}

/* ---- random batches: applied and committed, or failed and rolled back ---- */

typedef struct World {
        GRand *rand;
        uint64_t next_id;
        pid_t next_pid;
} World;

static pid_t pick_pid(World *w, const Forest *f) {
        if (f->n_processes == 0 || g_rand_int_range(w->rand, 0, 4) == 0)
                return w->next_pid++;
        return f->processes[g_rand_int_range(w->rand, 0, (gint32) f->n_processes)]->pid;
}

static uint64_t pick_filter(World *w, const Forest *f) {
        if (f->n_filters == 0 || g_rand_int_range(w->rand, 0, 5) == 0)
                return 0;
        return f->filters[g_rand_int_range(w->rand, 0, (gint32) f->n_filters)]->id;
}

/* A thread of process pid: one it has, or a new one. */
static pid_t pick_tid(World *w, const Forest *f, pid_t pid) {
        const Process *p = forest_find_process(f, pid);
        if (!p || p->n_threads == 0)
                return pid;
        if (g_rand_int_range(w->rand, 0, 3) == 0)
                return w->next_pid++;
        return p->threads[g_rand_int_range(w->rand, 0, (gint32) p->n_threads)].tid;
}

static LiveEvent random_event(World *w, const Forest *f, bool may_fail) {
        pid_t pid = pick_pid(w, f), tid = pick_tid(w, f, pid);
        const Process *p = forest_find_process(f, pid);
        const Task *t = process_find_thread(p, tid);
        uint64_t head = t ? t->filter_id : pick_filter(w, f);
        pid_t ppid = p ? p->ppid : (pid_t) g_rand_int_range(w->rand, 1, 60);
        LiveEvent e;
        switch (g_rand_int_range(w->rand, 0, may_fail ? 8 : 7)) {
        case 0:
        case 1:
                e = filter_event(tid, pid, ppid, w->next_id++, head, g_rand_boolean(w->rand));
                break;
        case 2:
                e = task_event(LIVE_EVENT_TASK, tid, pid, ppid, head ? head : pick_filter(w, f));
                if (!e.task.filter_id) /* strict, or an escaped thread */
                        e.task.mode = g_rand_boolean(w->rand) ? TASK_MODE_STRICT : TASK_MODE_DISABLED;
                break;
        case 3:
                e = task_event(LIVE_EVENT_EXIT, tid, pid, ppid, 0);
                break;
        case 4:
                e = task_event(LIVE_EVENT_EXEC, pid, pid, ppid, head);
                e.task.mode = head ? TASK_MODE_FILTER : TASK_MODE_STRICT;
                e.task.exe = g_rand_boolean(w->rand) ? "/bin/a" : "/bin/b";
                break;
        case 5:
                e = task_event(LIVE_EVENT_COMM, pid, pid, ppid, 0);
                snprintf(e.task.comm, sizeof(e.task.comm), "c%u", g_rand_int_range(w->rand, 0, 3));
                break;
        case 6:
                e = (LiveEvent) { .type = LIVE_EVENT_PARENT, .task = { .tgid = pid, .ppid = g_rand_int_range(w->rand, 1, 60) } };
                break;
        default: /* a parent nobody has: the batch fails */
                e = filter_event(tid, pid, ppid, w->next_id++, 1000000, false);
                break;
        }
        if (t && e.type != LIVE_EVENT_PARENT)
                e.task.start_time = t->start_time;
        return e;
}

static void test_random_rollback(void) {
        World w = { .rand = g_rand_new_with_seed(20240611), .next_id = 1, .next_pid = 10 };
        g_autoptr(Live) l = new_live();
        LiveChanges c = {};
        unsigned rolled_back = 0, committed = 0;

        for (unsigned round = 0; round < 2000; round++) {
                g_autofree char *before = forest_canon(live_forest(l));
                LiveCounts n_before = live_counts(l);
                bool fail = g_rand_int_range(w.rand, 0, 3) == 0;
                size_t n = (size_t) g_rand_int_range(w.rand, 1, 12);
                LiveEvent e[12];
                for (size_t i = 0; i < n; i++)
                        e[i] = random_event(&w, live_forest(l), fail && i == n - 1);
                int r = live_apply(l, e, n, &c);
                if (r < 0 || fail) {
                        g_assert_cmpint(live_rollback(l, &c), ==, 0);
                        g_autofree char *after = forest_canon(live_forest(l));
                        g_assert_cmpstr(after, ==, before);
                        LiveCounts n_after = live_counts(l);
                        g_assert_cmpuint(n_after.tasks, ==, n_before.tasks);
                        g_assert_cmpuint(n_after.filters, ==, n_before.filters);
                        rolled_back++;
                } else {
                        live_changes_clear(&c);
                        committed++;
                }
                assert_consistent(l);
        }
        g_test_message("%u batches committed, %u rolled back; %zu processes, %zu filters at the end", committed,
                       rolled_back, live_forest(l)->n_processes, live_forest(l)->n_filters);
        g_assert_cmpuint(committed, >, 100);
        g_assert_cmpuint(rolled_back, >, 100);
        live_changes_done(&c);
        g_rand_free(w.rand);
}


/* ---- the per-uid budget ---- */

/* Filter id of uid's process pid, stacked on parent: 1-instruction programs, each of its own bytes. */
static LiveEvent budget_filter_event(pid_t pid, uid_t uid, uint64_t id, uint64_t parent, struct sock_filter *prog) {
        LiveEvent e = filter_event(pid, pid, 1, id, parent, false);
        *prog = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t) id);
        e.filter.insns = prog;
        e.task.uid = uid;
        return e;
}

static void assert_over_budget(const Live *l, uint64_t id, bool over) {
        const Filter *x = forest_find_filter(live_forest(l), id);
        g_assert_nonnull(x);
        g_assert_cmpint(x->over_budget, ==, over);
        g_assert_cmpuint(x->len, ==, 1); /* the length stays */
        g_assert_true((x->insns == NULL) == over);
        /* so does the digest of what was installed */
        struct sock_filter prog = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t) id);
        uint8_t digest[PROG_DIGEST_SIZE];
        prog_digest(&prog, 1, digest);
        g_assert_cmpmem(x->digest, sizeof(digest), digest, sizeof(digest));
}

/* A uid's filters keep their instructions up to its budget; beyond it they are flagged and keep
 * length and digest; root is never counted; a retired filter gives its share back. */
static void test_budget_events(void) {
        g_autoptr(Live) l = new_live();
        struct sock_filter progs[16];
        g_assert_cmpint(live_set_budget(l, 3), ==, 0);
        LiveEvent e[] = {
                budget_filter_event(100, 1000, 1, 0, &progs[0]), budget_filter_event(100, 1000, 2, 1, &progs[1]),
                budget_filter_event(100, 1000, 3, 2, &progs[2]), budget_filter_event(100, 1000, 4, 3, &progs[3]),
                budget_filter_event(100, 1000, 5, 4, &progs[4]),
                /* another uid has a budget of its own; root has none */
                budget_filter_event(200, 1001, 6, 0, &progs[5]), budget_filter_event(300, 0, 7, 0, &progs[6]),
                budget_filter_event(300, 0, 8, 7, &progs[7]), budget_filter_event(300, 0, 9, 8, &progs[8]),
                budget_filter_event(300, 0, 10, 9, &progs[9]),
        };
        apply_committed(l, e, ELEMENTSOF(e));
        for (uint64_t id = 1; id <= 10; id++)
                assert_over_budget(l, id, id == 4 || id == 5);
        g_assert_cmpuint(live_budget_kept(l, 1000), ==, 3);
        g_assert_cmpuint(live_budget_kept(l, 1001), ==, 1);
        g_assert_cmpuint(live_budget_kept(l, 0), ==, 0);
        g_assert_cmpuint(live_counts(l).over_budget, ==, 2);

        /* 100 exits: its five filters retire, and uid 1000 may keep three again */
        LiveEvent x = task_event(LIVE_EVENT_EXIT, 100, 100, 1, 0);
        x.task.uid = 1000;
        apply_committed(l, &x, 1);
        g_assert_null(forest_find_filter(live_forest(l), 1));
        g_assert_cmpuint(live_budget_kept(l, 1000), ==, 0);
        g_assert_cmpuint(live_counts(l).over_budget, ==, 0);
        LiveEvent again[] = { budget_filter_event(400, 1000, 11, 0, &progs[10]),
                              budget_filter_event(400, 1000, 12, 11, &progs[11]) };
        apply_committed(l, again, ELEMENTSOF(again));
        assert_over_budget(l, 11, false);
        assert_over_budget(l, 12, false);
        g_assert_cmpuint(live_budget_kept(l, 1000), ==, 2);

        /* a batch undone gives back what it took */
        LiveChanges c = {};
        LiveEvent more[] = { budget_filter_event(400, 1000, 13, 12, &progs[12]),
                             budget_filter_event(400, 1000, 14, 13, &progs[13]) };
        apply_ok(l, more, ELEMENTSOF(more), &c);
        assert_over_budget(l, 13, false);
        assert_over_budget(l, 14, true);
        g_assert_cmpint(live_rollback(l, &c), ==, 0);
        g_assert_cmpuint(live_budget_kept(l, 1000), ==, 2);
        g_assert_cmpuint(live_counts(l).over_budget, ==, 0);
        assert_consistent(l);
        live_changes_done(&c);
}

/* A full pass is counted afresh: a filter counts against the lowest uid whose processes run it,
 * and each uid's filters nearest the roots (then the lowest ids) keep their instructions. */
static void test_budget_replace(void) {
        g_autoptr(Live) l = new_live();
        g_assert_cmpint(live_set_budget(l, 2), ==, 0);
        Forest *f = forest_new();
        Process *p;
        Task *t;
        /* chain 1 <- 2 <- 3 <- 4 run by uid 1000's process 100; 1 and 2 also by root's 50 */
        for (uint64_t id = 1; id <= 4; id++) {
                struct sock_filter prog = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t) id);
                g_assert_cmpint(forest_add_filter(f, id, id - 1, &prog, 1, NULL), ==, 0);
        }
        const struct { pid_t pid; uid_t uid; uint64_t head; } procs[] = { { 100, 1000, 4 }, { 50, 0, 2 } };
        for (size_t i = 0; i < ELEMENTSOF(procs); i++) {
                g_assert_cmpint(forest_add_process(f, procs[i].pid, &p), ==, 0);
                p->uid = procs[i].uid;
                g_assert_cmpint(process_add_thread(p, procs[i].pid, &t), ==, 0);
                *t = (Task) { .tid = procs[i].pid, .start_time = 1, .mode = TASK_MODE_FILTER, .filter_id = procs[i].head };
        }
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        LiveChanges c = {};
        g_assert_cmpint(live_replace(l, f, false, &c), ==, 0);
        live_changes_done(&c);
        const Forest *lf = live_forest(l);
        g_assert_cmpuint(forest_find_filter(lf, 1)->budget_uid, ==, 0);
        g_assert_cmpuint(forest_find_filter(lf, 2)->budget_uid, ==, 0);
        g_assert_cmpuint(forest_find_filter(lf, 3)->budget_uid, ==, 1000);
        for (uint64_t id = 1; id <= 4; id++)
                assert_over_budget(l, id, false);
        g_assert_cmpuint(live_budget_kept(l, 1000), ==, 2);

        /* a smaller budget, counted afresh: 3 keeps (the older), 4 not */
        g_assert_cmpint(live_set_budget(l, 1), ==, 0);
        assert_over_budget(l, 3, false);
        assert_over_budget(l, 4, true);
        g_assert_cmpuint(live_counts(l).over_budget, ==, 1);
        /* none: nothing dropped from now on, but what was dropped stays flagged */
        g_assert_cmpint(live_set_budget(l, 0), ==, 0);
        assert_over_budget(l, 4, true);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/live/fork-and-install", test_fork_and_install);
        g_test_add_func("/live/head-rule", test_head_rule);
        g_test_add_func("/live/tsync", test_tsync);
        g_test_add_func("/live/exit-retires", test_exit_retires);
        g_test_add_func("/live/exec", test_exec);
        g_test_add_func("/live/escaped-threads", test_escaped_threads);
        g_test_add_func("/live/parent", test_parent);
        g_test_add_func("/live/reused-ids", test_reused_ids);
        g_test_add_func("/live/missing-parent-rolls-back", test_missing_parent_rolls_back);
        g_test_add_func("/live/unknown-head", test_unknown_head);
        g_test_add_func("/live/apply-fitting", test_apply_fitting);
        g_test_add_func("/live/listener-events", test_listener_events);
        g_test_add_func("/live/apply-fitting-undoes-one", test_apply_fitting_undoes_one);
        g_test_add_func("/live/replace", test_replace);
        g_test_add_func("/live/replace/rename", test_replace_rename);
        g_test_add_func("/live/batch-copies", test_batch_copies);
        g_test_add_func("/live/random-rollback", test_random_rollback);
        g_test_add_func("/live/budget-events", test_budget_events);
        g_test_add_func("/live/budget-replace", test_budget_replace);
        return g_test_run();
}
