/* test-forest.c: unit tests of the forest model: adding, linking, ordering, chains, LCA, filter_cmp,
 * subtree restriction and isomorphism */
#include <linux/seccomp.h>

#include "core/forest-iso.h"
#include "core/forest.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-validate.h"
#include "tests-util.h"

typedef struct Prog {
        const struct sock_filter *insns;
        size_t len;
} Prog;

static const Prog progs[] = {
        { tests_prog_allow, ELEMENTSOF(tests_prog_allow) },
        { tests_prog_errno, ELEMENTSOF(tests_prog_errno) },
        { tests_prog_log, ELEMENTSOF(tests_prog_log) },
};

enum { P_ALLOW, P_ERRNO, P_LOG };

/* A filter to add: flags are F_* bits. */
enum { F_LOG = 1, F_WKR = 2, F_LISTENER = 4 };
typedef struct FSpec {
        uint64_t id, parent;
        int prog;
        unsigned flags;
} FSpec;

/* A thread to add: its process is created on first use; filter 0 means none (mode below). */
typedef struct TSpec {
        pid_t pid, tid;
        uint64_t filter;
        const char *comm;
        TaskMode mode; /* used only when filter == 0 */
} TSpec;

static Filter *add_filter(Forest *f, const FSpec *s) {
        Filter *flt = NULL;

        g_assert_cmpint(forest_add_filter(f, s->id, s->parent, progs[s->prog].insns, progs[s->prog].len, &flt), ==, 0);
        g_assert_nonnull(flt);
        flt->log = s->flags & F_LOG;
        flt->wait_killable_recv = s->flags & F_WKR;
        flt->has_listener = s->flags & F_LISTENER;
        return flt;
}

static Task *add_thread(Forest *f, const TSpec *s) {
        Process *p = forest_find_process(f, s->pid);
        Task *t = NULL;

        if (!p) {
                g_assert_cmpint(forest_add_process(f, s->pid, &p), ==, 0);
                snprintf(p->comm, sizeof(p->comm), "%s", s->comm ?: "task");
        }
        g_assert_cmpint(process_add_thread(p, s->tid, &t), ==, 0);
        t->filter_id = s->filter;
        t->mode = s->filter ? TASK_MODE_FILTER : s->mode;
        return t;
}

static void link_ok(Forest *f) {
        _cleanup_free_ char *error = NULL;
        int r = forest_link(f, &error);

        if (r < 0)
                g_error("forest_link: %d: %s", r, error ?: "(no message)");
        g_assert_true(f->linked);
}

static Forest *build(const FSpec *fs, size_t nf, const TSpec *ts, size_t nt) {
        Forest *f = forest_new();

        g_assert_nonnull(f);
        for (size_t i = 0; i < nf; i++)
                add_filter(f, &fs[i]);
        for (size_t i = 0; i < nt; i++)
                add_thread(f, &ts[i]);
        link_ok(f);
        return f;
}

#define BUILD(fs, ts) build((fs), ELEMENTSOF(fs), (ts), ELEMENTSOF(ts))

/* forest_link must fail with -EINVAL and a message containing every needle. */
static void assert_link_fails(Forest *f, const char *const *needles) {
        _cleanup_free_ char *error = NULL;

        g_assert_cmpint(forest_link(f, &error), ==, -EINVAL);
        g_assert_false(f->linked);
        g_assert_nonnull(error);
        g_test_message("forest_link: %s", error);
        for (const char *const *n = needles; *n; n++)
                g_assert_nonnull(strstr(error, *n));
}

static void test_strings(void) {
        g_assert_cmpstr(identity_kind_to_string(IDENTITY_EXACT), ==, "exact");
        g_assert_cmpstr(identity_kind_to_string(IDENTITY_INFERRED), ==, "inferred");
        g_assert_null(identity_kind_to_string(_IDENTITY_MAX));
        g_assert_cmpint(identity_kind_from_string("inferred"), ==, IDENTITY_INFERRED);
        g_assert_cmpint(identity_kind_from_string("bogus"), <, 0);
        g_assert_cmpint(identity_kind_from_string(NULL), <, 0);
        for (TaskMode m = 0; m < _TASK_MODE_MAX; m++)
                g_assert_cmpint(task_mode_from_string(task_mode_to_string(m)), ==, m);
        g_assert_cmpstr(task_mode_to_string(TASK_MODE_STRICT), ==, "strict");
        g_assert_cmpint(task_mode_from_string("Filter"), <, 0);
        g_assert_null(task_mode_to_string(-1));
}

static void test_add(void) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        struct sock_filter insns[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        uint8_t digest[PROG_DIGEST_SIZE];
        Filter *flt = NULL;
        Process *p = NULL;
        Task *t = NULL;
        Listener *l = NULL;

        g_assert_nonnull(f);
        g_assert_cmpint(forest_add_filter(f, 1, 0, insns, 1, &flt), ==, 0);
        insns[0].k = SECCOMP_RET_KILL_PROCESS; /* the forest holds its own copy */
        g_assert_cmpuint(flt->insns[0].k, ==, SECCOMP_RET_ALLOW);
        g_assert_true(flt->insns != insns);
        prog_digest(tests_prog_allow, 1, digest);
        g_assert_cmpmem(flt->digest, sizeof(digest), digest, sizeof(digest));
        g_assert_cmpuint(flt->id, ==, 1);
        g_assert_cmpuint(flt->parent_id, ==, 0);
        g_assert_cmpuint(flt->len, ==, 1);

        g_assert_cmpint(forest_add_filter(f, 1, 0, tests_prog_errno, 1, NULL), ==, -EEXIST);
        g_assert_cmpint(forest_add_filter(f, 0, 0, tests_prog_errno, 1, NULL), ==, -EINVAL);
        g_assert_cmpint(forest_add_filter(f, 2, 1, tests_prog_errno, 1, NULL), ==, 0);
        g_assert_cmpuint(f->n_filters, ==, 2);
        g_assert_true(forest_find_filter(f, 1) == flt);
        g_assert_null(forest_find_filter(f, 3));

        g_assert_cmpint(forest_add_process(f, 10, &p), ==, 0);
        g_assert_cmpint(forest_add_process(f, 10, NULL), ==, -EEXIST);
        g_assert_cmpint(process_add_thread(p, 10, &t), ==, 0);
        g_assert_cmpint(process_add_thread(p, 10, NULL), ==, -EEXIST);
        g_assert_cmpint(process_add_thread(p, 11, NULL), ==, 0);
        g_assert_cmpuint(p->n_threads, ==, 2);
        g_assert_cmpint(forest_add_listener(f, 5, 2, &l), ==, 0);
        g_assert_cmpint(forest_add_listener(f, 5, 1, NULL), ==, -EEXIST);
        g_assert_cmpint(listener_add_holder(l, 10, 3), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 10, 3), ==, -EEXIST);
        g_assert_cmpint(listener_add_holder(l, 10, 4), ==, 0);
        g_assert_cmpuint(l->n_holders, ==, 2);

        g_assert_cmpint(process_set_exe(p, "/usr/bin/true"), ==, 0);
        g_assert_cmpstr(p->exe, ==, "/usr/bin/true");
        g_assert_cmpint(process_set_argv(p, (char *[]) { (char *) "true", (char *) "-x", NULL }), ==, 0);
        g_assert_cmpuint(strv_length(p->argv), ==, 2);
        g_assert_cmpstr(p->argv[1], ==, "-x");

        t = &p->threads[0]; /* the array may have moved */
        t->mode = TASK_MODE_FILTER;
        t->filter_id = 2;
        link_ok(f);
        g_assert_true(forest_find_filter(f, 2)->parent == flt);
        g_assert_true(forest_find_task(f, 10, &p)->filter == forest_find_filter(f, 2));
        g_assert_cmpint(p->pid, ==, 10);
        g_assert_true(forest_find_listener(f, 5) == l);
        g_assert_cmpuint(forest_find_filter(f, 2)->listener_id, ==, 5);

        /* Adding unlinks until forest_link() runs again. */
        g_assert_cmpint(forest_add_filter(f, 3, 2, tests_prog_allow, 1, NULL), ==, 0);
        g_assert_false(f->linked);
        g_assert_nonnull(forest_find_filter(f, 3));
        g_assert_cmpint(forest_add_filter(f, 3, 0, tests_prog_allow, 1, NULL), ==, -EEXIST);
        link_ok(f);
        g_assert_cmpuint(forest_find_filter(f, 3)->depth, ==, 3);
}

static void test_link_missing_parent(void) {
        static const FSpec fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 9, P_ALLOW, 0 } };
        _cleanup_(forest_freep) Forest *f = forest_new();

        for (size_t i = 0; i < ELEMENTSOF(fs); i++)
                add_filter(f, &fs[i]);
        assert_link_fails(f, (const char *const[]) { "filter 2", "parent 9", NULL });
}

static void test_link_cycle(void) {
        /* 4 -> 3 -> 2 -> 3: a tail leading into a cycle; 1 is a healthy root. */
        static const FSpec fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 3, P_ALLOW, 0 }, { 3, 2, P_ERRNO, 0 }, { 4, 3, P_LOG, 0 } };
        _cleanup_(forest_freep) Forest *f = forest_new();

        for (size_t i = 0; i < ELEMENTSOF(fs); i++)
                add_filter(f, &fs[i]);
        assert_link_fails(f, (const char *const[]) { "cycle", NULL });
}

static void test_link_self_parent(void) {
        _cleanup_(forest_freep) Forest *f = forest_new();

        g_assert_cmpint(forest_add_filter(f, 7, 7, tests_prog_allow, 1, NULL), ==, -EINVAL);
}

static void test_link_thread_missing_filter(void) {
        static const FSpec fs[] = { { 1, 0, P_ALLOW, 0 } };
        static const TSpec ts[] = { { 10, 10, 1, "a", 0 }, { 10, 11, 7, "a", 0 } };
        _cleanup_(forest_freep) Forest *f = forest_new();

        add_filter(f, &fs[0]);
        add_thread(f, &ts[0]);
        add_thread(f, &ts[1]);
        assert_link_fails(f, (const char *const[]) { "thread 11", "filter 7", NULL });
}

static void test_link_mode_without_filter(void) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        Task *t = add_thread(f, &(TSpec) { 10, 10, 0, "a", TASK_MODE_DISABLED });

        t->mode = TASK_MODE_FILTER;
        assert_link_fails(f, (const char *const[]) { "thread 10", NULL });
}

static void test_link_listener_nowhere(void) {
        static const FSpec fs[] = { { 1, 0, P_ALLOW, F_LISTENER } };
        _cleanup_(forest_freep) Forest *f = forest_new();

        add_filter(f, &fs[0]);
        g_assert_cmpint(forest_add_listener(f, 3, 5, NULL), ==, 0);
        assert_link_fails(f, (const char *const[]) { "listener 3", "filter 5", NULL });
}

/* Filters added children first, processes and threads out of order. */
static const FSpec order_fs[] = {
        { 5, 3, P_ALLOW, 0 }, { 3, 8, P_ERRNO, 0 }, { 8, 0, P_LOG, 0 }, { 1, 0, P_ALLOW, 0 },
        { 2, 1, P_ERRNO, 0 }, { 6, 3, P_LOG, 0 },   { 4, 8, P_ALLOW, 0 },
};
static const TSpec order_ts[] = {
        { 30, 31, 5, "c", 0 }, { 30, 30, 5, "c", 0 }, { 20, 20, 3, "b", 0 },
        { 10, 10, 2, "a", 0 }, { 40, 40, 0, "d", TASK_MODE_STRICT },
};

static void test_link_order(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);

        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *flt = f->filters[i];
                bool parent_before = flt->parent_id == 0;

                for (size_t j = 0; j < i; j++)
                        parent_before = parent_before || f->filters[j]->id == flt->parent_id;
                g_assert_true(parent_before);
                g_assert_true(flt->parent_id == 0 ? flt->parent == NULL : flt->parent->id == flt->parent_id);
        }
        for (size_t i = 1; i < f->n_processes; i++)
                g_assert_cmpint(f->processes[i - 1]->pid, <, f->processes[i]->pid);
        g_assert_cmpint(forest_find_process(f, 30)->threads[0].tid, ==, 30);
        g_assert_cmpint(forest_find_process(f, 30)->threads[1].tid, ==, 31);
        g_assert_true(forest_find_task(f, 31, NULL)->filter == forest_find_filter(f, 5));
        g_assert_null(forest_find_task(f, 40, NULL)->filter);
        g_assert_null(forest_find_task(f, 99, NULL));
}

static void test_link_counts(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);
        static const struct {
                uint64_t id;
                unsigned depth;
                size_t n_tasks, n_children;
        } want[] = {
                { 8, 1, 0, 2 }, { 3, 2, 1, 2 }, { 4, 2, 0, 0 }, { 5, 3, 2, 0 },
                { 6, 3, 0, 0 }, { 1, 1, 0, 1 }, { 2, 2, 1, 0 },
        };

        g_assert_cmpuint(f->n_filters, ==, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                const Filter *flt = forest_find_filter(f, want[i].id);

                g_assert_nonnull(flt);
                g_assert_cmpuint(flt->depth, ==, want[i].depth);
                g_assert_cmpuint(flt->n_tasks, ==, want[i].n_tasks);
                g_assert_cmpuint(flt->n_children, ==, want[i].n_children);
        }
        /* Linking twice recomputes rather than accumulates. */
        link_ok(f);
        g_assert_cmpuint(forest_find_filter(f, 5)->n_tasks, ==, 2);
        g_assert_cmpuint(forest_find_filter(f, 8)->n_children, ==, 2);
}

static void test_chain(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);
        const Filter *chain[8] = {}, *one[1] = {};

        g_assert_cmpuint(filter_chain(forest_find_filter(f, 5), chain, ELEMENTSOF(chain)), ==, 3);
        g_assert_cmpuint(chain[0]->id, ==, 5);
        g_assert_cmpuint(chain[1]->id, ==, 3);
        g_assert_cmpuint(chain[2]->id, ==, 8);
        g_assert_null(chain[3]);
        g_assert_cmpuint(filter_chain(forest_find_filter(f, 5), one, 1), ==, 3);
        g_assert_cmpuint(one[0]->id, ==, 5);
        g_assert_cmpuint(filter_chain(forest_find_filter(f, 1), NULL, 0), ==, 1);
        g_assert_cmpuint(filter_chain(NULL, chain, ELEMENTSOF(chain)), ==, 0);
}

static void test_chain_length(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);

        g_assert_cmpuint(forest_chain_length(f, 5), ==, 3);
        g_assert_cmpuint(forest_chain_length(f, 8), ==, 1);
        g_assert_cmpuint(forest_chain_length(f, 0), ==, 0);
        g_assert_cmpuint(forest_chain_length(f, 999), ==, 0);
        /* By ids: an unlinked forest answers the same. */
        Task *t = add_thread(f, &(TSpec) { .pid = 900, .tid = 900, .filter = 5 });
        g_assert_false(f->linked);
        g_assert_cmpuint(forest_chain_length(f, t->filter_id), ==, 3);
        g_assert_true(process_find_thread(forest_find_process(f, 900), 900) == t);
        g_assert_null(process_find_thread(forest_find_process(f, 900), 901));
        g_assert_null(process_find_thread(NULL, 900));
}

/* Adding a thread may move the process's array of threads, into which a linked forest's task index
 * points: the forest must say it is no longer linked (and answer from the threads themselves). The
 * same for a listener's holders. */
static void test_add_unlinks(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);
        Process *p = forest_find_process(f, order_ts[0].pid);
        pid_t tid = order_ts[0].tid;

        g_assert_nonnull(forest_find_task(f, tid, NULL));
        for (pid_t extra = 5000; extra < 5100; extra++)
                g_assert_cmpint(process_add_thread(p, extra, NULL), ==, 0);
        g_assert_false(f->linked);
        Task *t = forest_find_task(f, tid, NULL);
        g_assert_nonnull(t);
        g_assert_cmpint(t->tid, ==, tid);
        g_assert_nonnull(forest_find_task(f, 5099, NULL));
        link_ok(f);

        Listener *l;
        g_assert_cmpint(forest_add_listener(f, 1, 5, &l), ==, 0);
        link_ok(f);
        g_assert_cmpint(listener_add_holder(l, order_ts[0].pid, 3), ==, 0);
        g_assert_false(f->linked);
        link_ok(f);
}

/* Taking out and putting back: O(1), the others keep their positions right, the forest links the
 * same as before. */
static void test_take_put(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);
        size_t nf = f->n_filters, np = f->n_processes;

        _cleanup_(filter_freep) Filter *x = forest_take_filter(f, 5);
        g_assert_nonnull(x);
        g_assert_null(forest_take_filter(f, 5));
        g_assert_null(forest_find_filter(f, 5));
        g_assert_cmpuint(f->n_filters, ==, nf - 1);
        for (size_t i = 0; i < f->n_filters; i++)
                g_assert_cmpuint(f->filters[i]->index, ==, i);
        g_assert_cmpint(forest_put_filter(f, TAKE_PTR(x)), ==, 0);

        _cleanup_(process_freep) Process *p = forest_take_process(f, order_ts[0].pid);
        g_assert_nonnull(p);
        g_assert_null(p->forest);
        g_assert_null(forest_find_process(f, order_ts[0].pid));
        for (size_t i = 0; i < f->n_processes; i++)
                g_assert_cmpuint(f->processes[i]->index, ==, i);
        g_assert_cmpint(forest_put_process(f, p), ==, 0);
        g_assert_true(TAKE_PTR(p)->forest == f);
        link_ok(f);
        g_assert_cmpuint(f->n_filters, ==, nf);
        g_assert_cmpuint(f->n_processes, ==, np);
        g_assert_cmpuint(forest_find_filter(f, 5)->n_tasks, >, 0);
}

static uint64_t lca_id(const Forest *f, uint64_t a, uint64_t b) {
        const Filter *l = filter_lca(forest_find_filter(f, a), forest_find_filter(f, b));
        return l ? l->id : 0;
}

static void test_lca(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);

        g_assert_cmpuint(lca_id(f, 5, 6), ==, 3); /* siblings */
        g_assert_cmpuint(lca_id(f, 5, 4), ==, 8); /* cousins at different depths */
        g_assert_cmpuint(lca_id(f, 4, 5), ==, 8);
        g_assert_cmpuint(lca_id(f, 5, 3), ==, 3); /* ancestor */
        g_assert_cmpuint(lca_id(f, 8, 5), ==, 8);
        g_assert_cmpuint(lca_id(f, 5, 5), ==, 5);
        g_assert_cmpuint(lca_id(f, 5, 2), ==, 0); /* different trees */
        g_assert_cmpuint(lca_id(f, 1, 8), ==, 0);
        g_assert_null(filter_lca(NULL, forest_find_filter(f, 5)));
        g_assert_null(filter_lca(forest_find_filter(f, 5), NULL));
}

static void test_cmp(void) {
        _cleanup_(forest_freep) Forest *f = BUILD(order_fs, order_ts);
        Filter *a = forest_find_filter(f, 3), *b = forest_find_filter(f, 5);
        bool exact = false;

        g_assert_cmpint(filter_cmp(a, a, &exact), ==, 0);
        g_assert_true(exact);
        g_assert_cmpint(filter_cmp(a, b, &exact), ==, 1);
        g_assert_cmpint(filter_cmp(b, a, NULL), ==, 2);
        /* Byte-identical but distinct objects are not the same filter. */
        g_assert_cmpint(filter_cmp(forest_find_filter(f, 1), forest_find_filter(f, 5), NULL), !=, 0);
        b->identity = IDENTITY_INFERRED;
        g_assert_cmpint(filter_cmp(b, b, &exact), ==, 0);
        g_assert_false(exact);
        g_assert_cmpint(filter_cmp(a, b, &exact), ==, 1);
        g_assert_false(exact);
}

static void test_restrict(void) {
        /* 1 -> 10 -> {20, 21}; 1 -> 30. Filter 1 is shared by 10 and 30; 2 is 20's, 3 is 30's;
         * 4 is held only by a listener in 21; 5 only by a listener held in 30. */
        static const FSpec fs[] = {
                { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 3, 1, P_LOG, 0 },
                { 4, 0, P_ERRNO, F_LISTENER }, { 5, 0, P_LOG, F_LISTENER },
        };
        static const TSpec ts[] = {
                { 1, 1, 0, "init", TASK_MODE_DISABLED }, { 10, 10, 1, "a", 0 }, { 20, 20, 2, "b", 0 },
                { 20, 22, 2, "b", 0 }, { 21, 21, 0, "c", TASK_MODE_DISABLED }, { 30, 30, 3, "d", 0 },
        };
        _cleanup_(forest_freep) Forest *f = forest_new();
        Listener *l;

        for (size_t i = 0; i < ELEMENTSOF(fs); i++)
                add_filter(f, &fs[i]);
        for (size_t i = 0; i < ELEMENTSOF(ts); i++)
                add_thread(f, &ts[i]);
        forest_find_process(f, 10)->ppid = 1;
        forest_find_process(f, 20)->ppid = 10;
        forest_find_process(f, 21)->ppid = 10;
        forest_find_process(f, 30)->ppid = 1;
        g_assert_cmpint(forest_add_listener(f, 1, 4, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 21, 5), ==, 0);
        g_assert_cmpint(forest_add_listener(f, 2, 5, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 30, 5), ==, 0);
        link_ok(f);

        g_assert_cmpint(forest_restrict_to_subtree(f, 10), ==, 0);
        g_assert_true(f->linked);
        g_assert_cmpint(f->root, ==, 10);
        g_assert_cmpuint(f->n_processes, ==, 3);
        g_assert_nonnull(forest_find_process(f, 10));
        g_assert_nonnull(forest_find_process(f, 20));
        g_assert_nonnull(forest_find_process(f, 21));
        g_assert_null(forest_find_process(f, 30));
        g_assert_null(forest_find_process(f, 1));
        g_assert_cmpuint(f->n_filters, ==, 3);
        g_assert_nonnull(forest_find_filter(f, 1));
        g_assert_nonnull(forest_find_filter(f, 2));
        g_assert_nonnull(forest_find_filter(f, 4));
        g_assert_null(forest_find_filter(f, 3));
        g_assert_null(forest_find_filter(f, 5));
        g_assert_cmpuint(f->n_listeners, ==, 1);
        g_assert_nonnull(forest_find_listener(f, 1));
        g_assert_cmpuint(forest_find_filter(f, 1)->n_children, ==, 1);
        g_assert_cmpuint(forest_find_filter(f, 2)->n_tasks, ==, 2);
        g_assert_true(forest_find_task(f, 22, NULL)->filter == forest_find_filter(f, 2));

        /* A root outside the forest leaves nothing. */
        g_assert_cmpint(forest_restrict_to_subtree(f, 999), ==, 0);
        g_assert_cmpuint(f->n_processes, ==, 0);
        g_assert_cmpuint(f->n_filters, ==, 0);
        g_assert_cmpuint(f->n_listeners, ==, 0);
}

/* Listener holders outside the subtree stay, with their threads and chains, and what their
 * chains reach brings in further listeners and holders; a holder the forest does not have goes. */
static Forest *holders_forest(void) {
        /* 1 <- 2 (listener A); 3 (listener B); 4; 5 (listener C). Root 10 (on 2) with child 11;
         * outside: 40 (two disabled threads) holds A; 50 (on 3) holds A; 60 (disabled) holds B;
         * 70 (on 4) holds nothing; 80 (disabled) holds C; 999 holds A but is not in the forest. */
        static const FSpec fs[] = {
                { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, F_LISTENER }, { 3, 0, P_LOG, F_LISTENER },
                { 4, 0, P_ALLOW, 0 }, { 5, 0, P_ERRNO, F_LISTENER },
        };
        static const TSpec ts[] = {
                { 1, 1, 0, "init", TASK_MODE_DISABLED }, { 10, 10, 2, "root", 0 }, { 11, 11, 0, "child", TASK_MODE_DISABLED },
                { 40, 40, 0, "super", TASK_MODE_DISABLED }, { 40, 41, 0, "super", TASK_MODE_DISABLED },
                { 50, 50, 3, "helper", 0 }, { 60, 60, 0, "other", TASK_MODE_DISABLED }, { 70, 70, 4, "unrelated", 0 },
                { 80, 80, 0, "c-holder", TASK_MODE_DISABLED },
        };
        Forest *f = forest_new();
        Listener *l;

        for (size_t i = 0; i < ELEMENTSOF(fs); i++)
                add_filter(f, &fs[i]);
        for (size_t i = 0; i < ELEMENTSOF(ts); i++)
                add_thread(f, &ts[i]);
        forest_find_process(f, 11)->ppid = 10;
        forest_find_process(f, 10)->ppid = forest_find_process(f, 40)->ppid = 1;
        forest_find_process(f, 50)->ppid = forest_find_process(f, 60)->ppid = 1;
        forest_find_process(f, 70)->ppid = forest_find_process(f, 80)->ppid = 1;
        g_assert_cmpint(forest_add_listener(f, 1, 2, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 40, 7), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 50, 8), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 999, 3), ==, 0);
        g_assert_cmpint(forest_add_listener(f, 2, 3, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 60, 4), ==, 0);
        g_assert_cmpint(forest_add_listener(f, 3, 5, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 80, 4), ==, 0);
        f->backend = g_strdup("bpf");
        f->created_at_usec = 1764745249123456ULL;
        link_ok(f);
        return f;
}

static void assert_pids(const Forest *f, const pid_t *pids, size_t n) {
        g_assert_cmpuint(f->n_processes, ==, n);
        for (size_t i = 0; i < n; i++)
                g_assert_cmpint(f->processes[i]->pid, ==, pids[i]);
}

static void test_restrict_holders(void) {
        _cleanup_(forest_freep) Forest *f = holders_forest();
        _cleanup_free_ char *error = NULL;

        g_assert_cmpint(forest_restrict_to_subtree(f, 10), ==, 0);
        assert_pids(f, (const pid_t[]) { 10, 11, 40, 50, 60 }, 5);
        g_assert_cmpuint(forest_find_process(f, 40)->n_threads, ==, 2);
        g_assert_cmpuint(f->n_filters, ==, 3);
        g_assert_nonnull(forest_find_filter(f, 3));
        g_assert_null(forest_find_filter(f, 4));
        g_assert_null(forest_find_filter(f, 5));
        g_assert_cmpuint(f->n_listeners, ==, 2);
        const Listener *a = forest_find_listener(f, 1);
        g_assert_cmpuint(a->n_holders, ==, 2); /* 999 is gone */
        g_assert_cmpint(a->holders[0].pid, ==, 40);
        g_assert_cmpint(a->holders[1].pid, ==, 50);
        g_assert_cmpint(forest_find_listener(f, 2)->holders[0].pid, ==, 60);
        g_assert_null(forest_find_listener(f, 3));
        /* And that is a valid snapshot: holders outside the subtree are allowed, others not. */
        if (snapshot_validate(f, &error) < 0)
                g_error("%s", error);
        forest_find_listener(f, 2)->n_holders = 0;
        g_assert_cmpint(snapshot_validate(f, &error), ==, -EINVAL);
        g_assert_cmpstr(error, ==, "processes[4] (pid 60): not in the subtree of root 10 (ppid 1) and not a listener holder");

        /* The whole machine: processes with filters, and every listener with all its holders. */
        _cleanup_(forest_freep) Forest *g = holders_forest();
        g_assert_cmpint(forest_restrict_to_subtree(g, 0), ==, 0);
        assert_pids(g, (const pid_t[]) { 10, 40, 50, 60, 70, 80 }, 6);
        g_assert_cmpuint(g->n_filters, ==, 5);
        g_assert_cmpuint(g->n_listeners, ==, 3);
        g_assert_cmpint(g->root, ==, 0);
}

/* Isomorphism, checked both ways; why must be set iff not isomorphic. */
static int iso(const Forest *a, const Forest *b, const TaskPair *map, size_t n_map, char **ret_why) {
        _cleanup_free_ char *why = NULL, *why_rev = NULL;
        _cleanup_free_ TaskPair *rev = g_new0(TaskPair, n_map + 1);
        int r, r_rev;

        for (size_t i = 0; i < n_map; i++)
                rev[i] = (TaskPair) { map[i].b, map[i].a };
        r = forest_isomorphic(a, b, map, n_map, &why);
        r_rev = forest_isomorphic(b, a, rev, n_map, &why_rev);
        g_assert_cmpint(r, >=, 0);
        g_assert_cmpint(r, ==, r_rev);
        g_assert_cmpint(forest_isomorphic(a, b, map, n_map, NULL), ==, r);
        if (r == 1) {
                g_assert_null(why);
                g_assert_null(why_rev);
        } else {
                g_assert_nonnull(why);
                g_assert_nonnull(why_rev);
                g_test_message("not isomorphic: %s", why);
                g_test_message("reversed: %s", why_rev);
        }
        if (ret_why)
                *ret_why = TAKE_PTR(why);
        return r;
}

static void assert_why(const char *why, const char *const *needles) {
        g_assert_nonnull(why);
        for (const char *const *n = needles; *n; n++)
                if (!strstr(why, *n))
                        g_error("\"%s\" does not mention \"%s\"", why, *n);
}

/* The reference shape: root 1 with children 2 (shared by two processes) and 3 (with its own
 * child 4); a second root 5; a thread in strict mode. */
static const FSpec base_fs[] = {
        { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 3, 1, P_ERRNO, F_LOG }, { 4, 3, P_LOG, 0 }, { 5, 0, P_LOG, 0 },
};
static const TSpec base_ts[] = {
        { 10, 10, 2, "shell", 0 }, { 11, 11, 2, "shell", 0 }, { 11, 12, 2, "shell", 0 }, { 20, 20, 4, "worker", 0 },
        { 30, 30, 5, "daemon", 0 }, { 40, 40, 0, "strict", TASK_MODE_STRICT },
};

/* The same shape with other ids, other pids, and added in another order. */
static const FSpec renamed_fs[] = {
        { 90, 0, P_LOG, 0 }, { 14, 0, P_ALLOW, 0 }, { 70, 14, P_ERRNO, F_LOG }, { 60, 70, P_LOG, 0 }, { 33, 14, P_ERRNO, 0 },
};
static const TSpec renamed_ts[] = {
        { 400, 400, 0, "strict", TASK_MODE_STRICT }, { 105, 105, 33, "shell", 0 }, { 101, 101, 33, "shell", 0 },
        { 101, 102, 33, "shell", 0 }, { 300, 300, 90, "daemon", 0 }, { 200, 200, 60, "worker", 0 },
};
static const TaskPair renamed_map[] = { { 10, 105 }, { 11, 101 }, { 12, 102 }, { 20, 200 }, { 30, 300 }, { 40, 400 } };

static void test_iso_same_shape(void) {
        _cleanup_(forest_freep) Forest *a = BUILD(base_fs, base_ts), *b = BUILD(renamed_fs, renamed_ts);
        _cleanup_(forest_freep) Forest *empty1 = forest_new(), *empty2 = forest_new();

        g_assert_cmpint(iso(a, a, NULL, 0, NULL), ==, 1);
        g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 1);
        g_assert_cmpint(iso(a, b, renamed_map, ELEMENTSOF(renamed_map), NULL), ==, 1);
        link_ok(empty1);
        link_ok(empty2);
        g_assert_cmpint(iso(empty1, empty2, NULL, 0, NULL), ==, 1);
        g_assert_cmpint(iso(a, empty1, NULL, 0, NULL), ==, 0);
}

static void test_iso_sharing_vs_copies(void) {
        /* One filter shared by two tasks vs. a byte-identical private copy each. */
        static const FSpec shared_fs[] = { { 1, 0, P_ALLOW, 0 } };
        static const TSpec shared_ts[] = { { 10, 10, 1, "t", 0 }, { 11, 11, 1, "t", 0 } };
        static const FSpec private_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 0, P_ALLOW, 0 } };
        static const TSpec private_ts[] = { { 10, 10, 1, "t", 0 }, { 11, 11, 2, "t", 0 } };
        static const TaskPair map[] = { { 10, 10 }, { 11, 11 } };
        _cleanup_(forest_freep) Forest *a = BUILD(shared_fs, shared_ts), *b = BUILD(private_fs, private_ts);
        _cleanup_free_ char *why = NULL, *why_map = NULL;

        g_assert_cmpint(iso(a, b, NULL, 0, &why), ==, 0);
        assert_why(why, (const char *const[]) { "filter 1 of a", "2 tasks", "no counterpart in b", NULL });
        g_assert_cmpint(iso(a, b, map, ELEMENTSOF(map), &why_map), ==, 0);
        assert_why(why_map, (const char *const[]) { "tid 11", "filter 1 of a", "already corresponds", NULL });
}

static void test_iso_shared_parent_vs_copies(void) {
        /* Sharing deeper down: two children of one parent vs. two chains with private parents. */
        static const FSpec a_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 3, 1, P_LOG, 0 } };
        static const FSpec b_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 4, 0, P_ALLOW, 0 }, { 3, 4, P_LOG, 0 } };
        static const TSpec ts[] = { { 10, 10, 2, "t", 0 }, { 11, 11, 3, "t", 0 } };
        static const TaskPair map[] = { { 10, 10 }, { 11, 11 } };
        _cleanup_(forest_freep) Forest *a = BUILD(a_fs, ts), *b = BUILD(b_fs, ts);

        g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 0);
        g_assert_cmpint(iso(a, b, map, ELEMENTSOF(map), NULL), ==, 0);
}

static void test_iso_different_bytes(void) {
        FSpec fs[ELEMENTSOF(base_fs)];
        _cleanup_(forest_freep) Forest *a = BUILD(base_fs, base_ts), *b = NULL, *c = NULL;
        _cleanup_free_ char *why = NULL, *why_len = NULL;

        /* Same length, other bytes, deep in the tree. */
        memcpy(fs, base_fs, sizeof(fs));
        fs[1].prog = P_ALLOW;
        b = BUILD(fs, base_ts);
        g_assert_cmpint(iso(a, b, NULL, 0, &why), ==, 0);
        assert_why(why, (const char *const[]) { "filter 2 of a", "filter 2 of b", "program bytes", NULL });
        g_assert_cmpint(iso(a, b, (const TaskPair[]) { { 10, 10 }, { 11, 11 }, { 12, 12 }, { 20, 20 }, { 30, 30 }, { 40, 40 } },
                            6, NULL), ==, 0);

        /* Other length. */
        memcpy(fs, base_fs, sizeof(fs));
        fs[3].prog = P_ERRNO;
        c = BUILD(fs, base_ts);
        g_assert_cmpint(iso(a, c, NULL, 0, &why_len), ==, 0);
        assert_why(why_len, (const char *const[]) { "filter 4 of a", "filter 4 of b", "program length", NULL });
}

static void test_iso_different_flags(void) {
        static const unsigned flags[] = { F_LOG, F_WKR, F_LISTENER };
        static const char *const names[] = { "log flag", "wait_killable_recv flag", "listener presence" };
        static const TaskPair map[] = { { 10, 10 }, { 11, 11 }, { 12, 12 }, { 20, 20 }, { 30, 30 }, { 40, 40 } };
        _cleanup_(forest_freep) Forest *a = BUILD(base_fs, base_ts);

        for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
                FSpec fs[ELEMENTSOF(base_fs)];
                _cleanup_(forest_freep) Forest *b = NULL;
                _cleanup_free_ char *why = NULL, *why_map = NULL;

                memcpy(fs, base_fs, sizeof(fs));
                fs[4].flags ^= flags[i]; /* root 5 */
                b = BUILD(fs, base_ts);
                g_assert_cmpint(iso(a, b, NULL, 0, &why), ==, 0);
                assert_why(why, (const char *const[]) { "filter 5 of a", "filter 5 of b", names[i], NULL });
                g_assert_cmpint(iso(a, b, map, ELEMENTSOF(map), &why_map), ==, 0);
                assert_why(why_map, (const char *const[]) { "filter 5 of a", names[i], NULL });
        }
}

static void test_iso_task_map_wrong_pairing(void) {
        static const FSpec fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 0, P_ERRNO, 0 } };
        static const TSpec ts[] = { { 10, 10, 1, "t", 0 }, { 11, 11, 2, "t", 0 } };
        static const TaskPair swapped[] = { { 10, 11 }, { 11, 10 } }, right[] = { { 10, 10 }, { 11, 11 } };
        _cleanup_(forest_freep) Forest *a = BUILD(fs, ts), *b = BUILD(fs, ts);
        _cleanup_free_ char *why = NULL;

        g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 1);
        g_assert_cmpint(iso(a, b, right, ELEMENTSOF(right), NULL), ==, 1);
        g_assert_cmpint(iso(a, b, swapped, ELEMENTSOF(swapped), &why), ==, 0);
        assert_why(why, (const char *const[]) { "filter 1 of a", "filter 2 of b", "program", NULL });
}

static void test_iso_task_map_forced_sharing(void) {
        /* Two identical private roots: mapping both threads of b onto one thread's filter of a
         * is impossible — the mapping must be consistent across threads. */
        static const FSpec fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ALLOW, 0 }, { 3, 1, P_ALLOW, 0 } };
        static const TSpec a_ts[] = { { 10, 10, 2, "t", 0 }, { 11, 11, 3, "t", 0 }, { 12, 12, 2, "t", 0 } };
        static const TSpec b_ts[] = { { 10, 10, 2, "t", 0 }, { 11, 11, 3, "t", 0 }, { 12, 12, 3, "t", 0 } };
        static const TaskPair map[] = { { 10, 10 }, { 11, 11 }, { 12, 12 } };
        static const TaskPair good[] = { { 10, 11 }, { 11, 10 }, { 12, 12 } };
        _cleanup_(forest_freep) Forest *a = BUILD(fs, a_ts), *b = BUILD(fs, b_ts);
        _cleanup_free_ char *why = NULL;

        g_assert_cmpint(iso(a, b, map, ELEMENTSOF(map), &why), ==, 0);
        assert_why(why, (const char *const[]) { "tid 12", "already corresponds", NULL });
        g_assert_cmpint(iso(a, b, good, ELEMENTSOF(good), NULL), ==, 1);
        g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 1);
}

static void test_iso_task_map_invalid(void) {
        _cleanup_(forest_freep) Forest *a = BUILD(base_fs, base_ts), *b = BUILD(renamed_fs, renamed_ts);
        TaskPair map[ELEMENTSOF(renamed_map)];
        char *why = NULL;

        memcpy(map, renamed_map, sizeof(map));
        map[2].a = 77;
        g_assert_cmpint(forest_isomorphic(a, b, map, ELEMENTSOF(map), &why), ==, 0);
        assert_why(why, (const char *const[]) { "tid 77", "not a thread of a", NULL });
        free(why);

        memcpy(map, renamed_map, sizeof(map));
        map[2].b = 105;
        g_assert_cmpint(forest_isomorphic(a, b, map, ELEMENTSOF(map), &why), ==, 0);
        assert_why(why, (const char *const[]) { "tid 105 of b", "mapped twice", NULL });
        free(why);

        g_assert_cmpint(forest_isomorphic(a, b, renamed_map, ELEMENTSOF(renamed_map) - 1, &why), ==, 0);
        assert_why(why, (const char *const[]) { "covers 5 of the 6 threads of a", NULL });
        free(why);

        /* A thread in strict mode mapped onto one under a filter. */
        memcpy(map, renamed_map, sizeof(map));
        map[4].b = 400;
        map[5].b = 300;
        g_assert_cmpint(forest_isomorphic(a, b, map, ELEMENTSOF(map), &why), ==, 0);
        assert_why(why, (const char *const[]) { "tid 30 of a", "tid 400 of b", NULL });
        free(why);

        g_assert_cmpint(forest_isomorphic(a, b, NULL, 3, &why), ==, -EINVAL);
        g_assert_null(why);
}

static void test_iso_extra_unreferenced(void) {
        /* A filter no thread runs under (held only by a listener), as a root and as a child. */
        static const FSpec a_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 } };
        static const FSpec root_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 3, 0, P_LOG, F_LISTENER } };
        static const FSpec child_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 3, 1, P_LOG, F_LISTENER } };
        static const FSpec child2_fs[] = { { 7, 0, P_ALLOW, 0 }, { 8, 7, P_ERRNO, 0 }, { 9, 7, P_LOG, F_LISTENER } };
        static const TSpec ts[] = { { 10, 10, 2, "t", 0 } };
        static const TaskPair map[] = { { 10, 10 } };
        static const TSpec ts2[] = { { 10, 10, 8, "t", 0 } };
        _cleanup_(forest_freep) Forest *a = BUILD(a_fs, ts), *r = BUILD(root_fs, ts), *c = BUILD(child_fs, ts);
        _cleanup_(forest_freep) Forest *c2 = BUILD(child2_fs, ts2);
        _cleanup_free_ char *why_root = NULL, *why_child = NULL, *why_search = NULL, *why_rc = NULL;

        g_assert_cmpint(iso(a, r, map, ELEMENTSOF(map), &why_root), ==, 0);
        assert_why(why_root, (const char *const[]) { "filter 3 of b", "no counterpart in a", NULL });
        g_assert_cmpint(iso(a, c, map, ELEMENTSOF(map), &why_child), ==, 0);
        assert_why(why_child, (const char *const[]) { "filter 3 of b", "children of filter 1", NULL });
        g_assert_cmpint(iso(a, c, NULL, 0, &why_search), ==, 0);
        assert_why(why_search, (const char *const[]) { "filter 3 of b", "no counterpart in a", NULL });
        /* The same unreferenced filter hanging elsewhere is another shape. */
        g_assert_cmpint(iso(r, c, map, ELEMENTSOF(map), &why_rc), ==, 0);
        g_assert_cmpint(iso(r, c, NULL, 0, NULL), ==, 0);
        /* Matching unreferenced filters are fine, with or without a map. */
        g_assert_cmpint(iso(c, c2, (const TaskPair[]) { { 10, 10 } }, 1, NULL), ==, 1);
        g_assert_cmpint(iso(c, c2, NULL, 0, NULL), ==, 1);
        g_assert_cmpint(iso(r, r, map, ELEMENTSOF(map), NULL), ==, 1);
}

static void test_iso_unreferenced_ancestors(void) {
        /* Unreferenced children of unreferenced filters must match as whole subtrees. */
        static const FSpec a_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 0, P_ALLOW, 0 }, { 3, 2, P_ERRNO, 0 }, { 4, 2, P_LOG, 0 } };
        static const FSpec b_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 0, P_ALLOW, 0 }, { 3, 2, P_ERRNO, 0 }, { 4, 3, P_LOG, 0 } };
        static const TSpec ts[] = { { 10, 10, 1, "t", 0 } };
        _cleanup_(forest_freep) Forest *a = BUILD(a_fs, ts), *b = BUILD(b_fs, ts);
        _cleanup_free_ char *why = NULL;

        g_assert_cmpint(iso(a, b, (const TaskPair[]) { { 10, 10 } }, 1, &why), ==, 0);
        assert_why(why, (const char *const[]) { "under filter 2 of a and filter 2 of b", NULL });
        g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 0);
        g_assert_cmpint(iso(a, a, (const TaskPair[]) { { 10, 10 } }, 1, NULL), ==, 1);
}

static void test_iso_chain_depth(void) {
        static const FSpec a_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 } };
        static const FSpec b_fs[] = { { 2, 0, P_ERRNO, 0 }, { 1, 0, P_ALLOW, 0 } };
        static const TSpec ts[] = { { 10, 10, 2, "t", 0 } };
        _cleanup_(forest_freep) Forest *a = BUILD(a_fs, ts), *b = BUILD(b_fs, ts);
        _cleanup_free_ char *why = NULL;

        g_assert_cmpint(iso(a, b, (const TaskPair[]) { { 10, 10 } }, 1, &why), ==, 0);
        assert_why(why, (const char *const[]) { "differ in length", NULL });
        g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 0);
}

static void test_iso_tasks_differ(void) {
        /* Same filters; the thread sits on the parent in one and on the child in the other. */
        static const FSpec fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 } };
        static const TSpec on_child[] = { { 10, 10, 2, "t", 0 } }, on_parent[] = { { 10, 10, 1, "t", 0 } };
        static const TSpec other_comm[] = { { 10, 10, 2, "u", 0 } };
        static const TSpec strict[] = { { 10, 10, 2, "t", 0 }, { 20, 20, 0, "s", TASK_MODE_STRICT } };
        static const TSpec disabled[] = { { 10, 10, 2, "t", 0 }, { 20, 20, 0, "s", TASK_MODE_DISABLED } };
        _cleanup_(forest_freep) Forest *a = BUILD(fs, on_child), *b = BUILD(fs, on_parent), *c = BUILD(fs, other_comm);
        _cleanup_(forest_freep) Forest *s = BUILD(fs, strict), *d = BUILD(fs, disabled);
        _cleanup_free_ char *why = NULL, *why_comm = NULL, *why_mode = NULL;

        g_assert_cmpint(iso(a, b, NULL, 0, &why), ==, 0);
        assert_why(why, (const char *const[]) { "tid 10", "filter 1 of", NULL });
        g_assert_cmpint(iso(a, b, (const TaskPair[]) { { 10, 10 } }, 1, NULL), ==, 0);
        /* Without a map, threads are matched by comm too; with one, the map decides. */
        g_assert_cmpint(iso(a, c, NULL, 0, &why_comm), ==, 0);
        assert_why(why_comm, (const char *const[]) { "comm \"t\"", NULL });
        g_assert_cmpint(iso(a, c, (const TaskPair[]) { { 10, 10 } }, 1, NULL), ==, 1);
        g_assert_cmpint(iso(s, d, NULL, 0, &why_mode), ==, 0);
        assert_why(why_mode, (const char *const[]) { "tid 20", "no filter", NULL });
        g_assert_cmpint(iso(s, d, (const TaskPair[]) { { 10, 10 }, { 20, 20 } }, 2, NULL), ==, 0);
}

static void test_iso_children_multiset(void) {
        /* Root with children {ERRNO, LOG} vs {ERRNO, ERRNO}: same counts, different multisets. */
        static const FSpec a_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 3, 1, P_LOG, 0 } };
        static const FSpec b_fs[] = { { 1, 0, P_ALLOW, 0 }, { 2, 1, P_ERRNO, 0 }, { 3, 1, P_ERRNO, 0 } };
        static const TSpec ts[] = { { 10, 10, 2, "t", 0 }, { 11, 11, 3, "t", 0 } };
        _cleanup_(forest_freep) Forest *a = BUILD(a_fs, ts), *b = BUILD(b_fs, ts);

        g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 0);
        g_assert_cmpint(iso(a, b, (const TaskPair[]) { { 10, 10 }, { 11, 11 } }, 2, NULL), ==, 0);
}

static void test_iso_not_linked(void) {
        _cleanup_(forest_freep) Forest *a = BUILD(base_fs, base_ts), *b = forest_new();
        char *why = (char *) "untouched";

        g_assert_cmpint(forest_isomorphic(a, b, NULL, 0, &why), ==, -EINVAL);
        g_assert_null(why);
}

static void test_iso_deep_chain(void) {
        /* A chain as deep as the kernel allows (about 32768 / (1 + 4) one-insn filters) that
         * differs only at the bottom: the difference is found, without deep recursion. */
        enum { DEPTH = 6500 };
        _cleanup_(forest_freep) Forest *a = forest_new(), *b = forest_new();
        _cleanup_free_ char *why = NULL;

        for (uint64_t i = 1; i <= DEPTH; i++) {
                add_filter(a, &(FSpec) { i, i - 1, P_ALLOW, 0 });
                add_filter(b, &(FSpec) { i, i - 1, P_ALLOW, i == DEPTH ? F_LOG : 0 });
        }
        add_thread(a, &(TSpec) { 10, 10, DEPTH, "t", 0 });
        add_thread(b, &(TSpec) { 10, 10, DEPTH, "t", 0 });
        link_ok(a);
        link_ok(b);
        g_assert_cmpint(iso(a, a, NULL, 0, NULL), ==, 1);
        g_assert_cmpint(iso(a, b, NULL, 0, &why), ==, 0);
        assert_why(why, (const char *const[]) { "filter 6500 of a", "log flag", NULL });
        g_assert_cmpint(iso(a, b, (const TaskPair[]) { { 10, 10 } }, 1, NULL), ==, 0);
}

/* A random forest: n filters (each a root or a child of an earlier one), threads on random
 * filters (some on none); built into f with ids and pids shifted and insertion order reversed
 * if permute is set. */
typedef struct Random {
        FSpec fs[64];
        TSpec ts[64];
        char comms[64][16];
        size_t nf, nt;
} Random;

static void random_make(Random *r, GRand *rand) {
        r->nf = g_rand_int_range(rand, 1, 64);
        r->nt = g_rand_int_range(rand, 0, 64);
        for (size_t i = 0; i < r->nf; i++) {
                bool root = i == 0 || g_rand_int_range(rand, 0, 4) == 0;
                r->fs[i] = (FSpec) { .id = i + 1, .parent = root ? 0 : (uint64_t) g_rand_int_range(rand, 1, i + 1),
                                     .prog = g_rand_int_range(rand, 0, 3), .flags = g_rand_int_range(rand, 0, 8) % 5 };
        }
        for (size_t i = 0; i < r->nt; i++) {
                snprintf(r->comms[i], sizeof(r->comms[i]), "c%d", g_rand_int_range(rand, 0, 3));
                r->ts[i] = (TSpec) { .pid = 100 + i, .tid = 100 + i, .comm = r->comms[i], .mode = TASK_MODE_STRICT,
                                     .filter = g_rand_int_range(rand, 0, 6) == 0 ? 0 : (uint64_t) g_rand_int_range(rand, 1, r->nf + 1) };
        }
}

static Forest *random_build(const Random *r, bool permute) {
        Forest *f = forest_new();

        for (size_t k = 0; k < r->nf; k++) {
                FSpec s = r->fs[permute ? r->nf - 1 - k : k];
                if (permute) {
                        s.id = 1000 - s.id;
                        s.parent = s.parent ? 1000 - s.parent : 0;
                }
                add_filter(f, &s);
        }
        for (size_t k = 0; k < r->nt; k++) {
                TSpec s = r->ts[permute ? r->nt - 1 - k : k];
                if (permute) {
                        s.pid = s.tid = 5000 - s.tid;
                        s.filter = s.filter ? 1000 - s.filter : 0;
                }
                add_thread(f, &s);
        }
        link_ok(f);
        return f;
}

static void test_iso_random(void) {
        GRand *rand = g_rand_new_with_seed(4711);

        for (int round = 0; round < 200; round++) {
                Random r;
                _cleanup_(forest_freep) Forest *a = NULL, *b = NULL, *c = NULL, *d = NULL;
                _cleanup_free_ TaskPair *map = g_new0(TaskPair, 65);
                size_t victim;

                random_make(&r, rand);
                a = random_build(&r, false);
                b = random_build(&r, true);
                for (size_t i = 0; i < r.nt; i++)
                        map[i] = (TaskPair) { r.ts[i].tid, 5000 - r.ts[i].tid };
                g_assert_cmpint(iso(a, b, NULL, 0, NULL), ==, 1);
                if (r.nt > 0)
                        g_assert_cmpint(iso(a, b, map, r.nt, NULL), ==, 1);

                /* Flip the listener presence of one filter: the number of such filters changes. */
                victim = g_rand_int_range(rand, 0, r.nf);
                r.fs[victim].flags ^= F_LISTENER;
                c = random_build(&r, true);
                g_assert_cmpint(iso(a, c, NULL, 0, NULL), ==, 0);
                if (r.nt > 0)
                        g_assert_cmpint(iso(a, c, map, r.nt, NULL), ==, 0);
                r.fs[victim].flags ^= F_LISTENER;

                /* Give one thread a private copy of its head filter: one filter more. */
                if (r.nt == 0 || r.ts[0].filter == 0)
                        continue;
                r.fs[r.nf] = r.fs[r.ts[0].filter - 1];
                r.fs[r.nf].id = r.nf + 1;
                r.ts[0].filter = ++r.nf;
                d = random_build(&r, true);
                g_assert_cmpint(iso(a, d, NULL, 0, NULL), ==, 0);
                g_assert_cmpint(iso(a, d, map, r.nt, NULL), ==, 0);
        }
        g_rand_free(rand);
}

/* The snapshot JSON of f (every id and reference in it). */
static char *forest_json(const Forest *f) {
        char *s = NULL;
        g_assert_cmpint(snapshot_json_format(f, SNAPSHOT_JSON_PRETTY, &s), ==, 0);
        return s;
}

/* forest_renumber() follows the links without linking again: the same forest as renumbering by
 * forest_set_ids() and the listeners' ids, then linking, which sorts everything anew. Ids start
 * out of their linked order (filters and listeners numbered backwards). */
static void test_renumber(void) {
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                g_autoptr(Forest) f = sample_forest(k), ref = sample_forest(k);
                Forest *both[] = { f, ref };
                for (size_t b = 0; b < G_N_ELEMENTS(both); b++) {
                        Forest *x = both[b];
                        g_autofree uint64_t *ids = g_new0(uint64_t, x->n_filters + 1);
                        for (size_t i = 0; i < x->n_filters; i++)
                                ids[i] = 1000 - 10 * i;
                        g_assert_cmpint(forest_set_ids(x, ids), ==, 0);
                        for (size_t i = 0; i < x->n_listeners; i++)
                                x->listeners[i]->id = 500 - i;
                        g_assert_cmpint(forest_link(x, NULL), ==, 0);
                }

                g_assert_cmpint(forest_renumber(f), ==, 0);
                g_autofree uint64_t *ids = g_new0(uint64_t, ref->n_filters + 1);
                for (size_t i = 0; i < ref->n_filters; i++)
                        ids[i] = i + 1;
                g_assert_cmpint(forest_set_ids(ref, ids), ==, 0);
                for (size_t i = 0; i < ref->n_listeners; i++)
                        ref->listeners[i]->id = i + 1;
                g_assert_cmpint(forest_link(ref, NULL), ==, 0);

                g_assert_true(f->linked);
                g_autofree char *got = forest_json(f), *want = forest_json(ref);
                g_assert_cmpstr(got, ==, want);
                for (size_t i = 0; i < f->n_filters; i++) {
                        g_assert_cmpuint(f->filters[i]->id, ==, i + 1);
                        g_assert_true(forest_find_filter(f, i + 1) == f->filters[i]);
                }
                for (size_t i = 0; i < f->n_listeners; i++)
                        g_assert_cmpuint(forest_find_filter(f, f->listeners[i]->filter_id)->listener_id, ==, i + 1);
                /* linking again changes nothing */
                g_assert_cmpint(forest_link(f, NULL), ==, 0);
                g_autofree char *again = forest_json(f);
                g_assert_cmpstr(again, ==, want);
                g_assert_cmpint(snapshot_validate(f, NULL), ==, 0);
        }
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/forest/strings", test_strings);
        g_test_add_func("/forest/add", test_add);
        g_test_add_func("/forest/link/missing-parent", test_link_missing_parent);
        g_test_add_func("/forest/link/cycle", test_link_cycle);
        g_test_add_func("/forest/link/self-parent", test_link_self_parent);
        g_test_add_func("/forest/link/thread-missing-filter", test_link_thread_missing_filter);
        g_test_add_func("/forest/link/mode-without-filter", test_link_mode_without_filter);
        g_test_add_func("/forest/link/listener-nowhere", test_link_listener_nowhere);
        g_test_add_func("/forest/link/order", test_link_order);
        g_test_add_func("/forest/link/counts", test_link_counts);
        g_test_add_func("/forest/chain", test_chain);
        g_test_add_func("/forest/chain-length", test_chain_length);
        g_test_add_func("/forest/add-unlinks", test_add_unlinks);
        g_test_add_func("/forest/take-put", test_take_put);
        g_test_add_func("/forest/lca", test_lca);
        g_test_add_func("/forest/cmp", test_cmp);
        g_test_add_func("/forest/renumber", test_renumber);
        g_test_add_func("/forest/restrict", test_restrict);
        g_test_add_func("/forest/restrict-holders", test_restrict_holders);
        g_test_add_func("/forest/iso/same-shape", test_iso_same_shape);
        g_test_add_func("/forest/iso/sharing-vs-copies", test_iso_sharing_vs_copies);
        g_test_add_func("/forest/iso/shared-parent-vs-copies", test_iso_shared_parent_vs_copies);
        g_test_add_func("/forest/iso/different-bytes", test_iso_different_bytes);
        g_test_add_func("/forest/iso/different-flags", test_iso_different_flags);
        g_test_add_func("/forest/iso/task-map-wrong-pairing", test_iso_task_map_wrong_pairing);
        g_test_add_func("/forest/iso/task-map-forced-sharing", test_iso_task_map_forced_sharing);
        g_test_add_func("/forest/iso/task-map-invalid", test_iso_task_map_invalid);
        g_test_add_func("/forest/iso/extra-unreferenced", test_iso_extra_unreferenced);
        g_test_add_func("/forest/iso/unreferenced-ancestors", test_iso_unreferenced_ancestors);
        g_test_add_func("/forest/iso/chain-depth", test_iso_chain_depth);
        g_test_add_func("/forest/iso/tasks-differ", test_iso_tasks_differ);
        g_test_add_func("/forest/iso/children-multiset", test_iso_children_multiset);
        g_test_add_func("/forest/iso/not-linked", test_iso_not_linked);
        g_test_add_func("/forest/iso/deep-chain", test_iso_deep_chain);
        g_test_add_func("/forest/iso/random", test_iso_random);
        return g_test_run();
}
