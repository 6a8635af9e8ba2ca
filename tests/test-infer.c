/* test-infer.c: unit tests of identity kept across readings: ids adopted by thread (exact) and by
 * bytes (the ptrace backend's inference), and subtree rescans merged into the live forest as events */
#include <linux/seccomp.h>

#include "core/infer.h"
#include "tests-util.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Live, live_free)

static const struct sock_filter prog_a[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
static const struct sock_filter prog_b[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1) };
static const struct sock_filter prog_c[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 2) };

typedef struct Node {
        uint64_t id, parent;
        const struct sock_filter *prog;
} Node;

typedef struct Thread {
        pid_t pid, tid, ppid;
        uint64_t start, head;
} Thread;

static Forest *build(const Node *nodes, size_t nn, const Thread *threads, size_t nt, IdentityKind identity) {
        Forest *f = forest_new();
        f->identity = identity;
        for (size_t i = 0; i < nn; i++)
                g_assert_cmpint(forest_add_filter(f, nodes[i].id, nodes[i].parent, nodes[i].prog, 1, NULL), ==, 0);
        for (size_t i = 0; i < nt; i++) {
                Process *p = forest_find_process(f, threads[i].pid);
                Task *t;
                if (!p) {
                        g_assert_cmpint(forest_add_process(f, threads[i].pid, &p), ==, 0);
                        p->ppid = threads[i].ppid;
                        p->start_time = threads[i].start;
                        snprintf(p->comm, sizeof(p->comm), "p%d", threads[i].pid);
                }
                g_assert_cmpint(process_add_thread(p, threads[i].tid, &t), ==, 0);
                t->start_time = threads[i].start;
                t->filter_id = threads[i].head;
                t->mode = threads[i].head ? TASK_MODE_FILTER : TASK_MODE_STRICT;
        }
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        return f;
}

#define BUILD(nodes, threads, identity) build(nodes, ELEMENTSOF(nodes), threads, ELEMENTSOF(threads), identity)

/* The chain of tid in f, ids newest first, as a string. */
static char *chain_ids(const Forest *f, pid_t tid) {
        const Task *t = forest_find_task(f, tid, NULL);
        GString *s = g_string_new(NULL);
        for (const Filter *x = t ? forest_find_filter(f, t->filter_id) : NULL; x; x = forest_find_filter(f, x->parent_id))
                g_string_append_printf(s, "%s%" PRIu64, s->len ? " " : "", x->id);
        return g_string_free(s, false);
}

#define ASSERT_CHAIN(f, tid, want)                               \
        do {                                                     \
                g_autofree char *_c = chain_ids((f), (tid));     \
                g_assert_cmpstr(_c, ==, want);                   \
        } while (0)

/* What a thread held at each depth keeps its id; what is new gets a new id; a thread under a
 * reused tid (another start time) holds nothing of the old one's. */
static void test_adopt_by_thread(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 30, prog_b }, { 40, 0, prog_a } };
        const Thread prev_threads[] = { { 10, 10, 1, 100, 31 }, { 20, 20, 1, 200, 40 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_EXACT);
        const Node now_nodes[] = { { 1, 0, prog_a }, { 2, 1, prog_b }, { 3, 2, prog_c }, { 4, 0, prog_a } };
        const Thread now_threads[] = { { 10, 10, 1, 100, 3 }, { 20, 20, 1, 999, 4 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_EXACT);
        uint64_t next = 100;
        _cleanup_(hashmap_deinit) Hashmap renamed = {};

        g_assert_cmpint(infer_adopt_ids(prev, f, false, &next, &renamed), ==, 0);
        /* new ids in the linked order: parents first, then by id */
        ASSERT_CHAIN(f, 10, "102 31 30");
        ASSERT_CHAIN(f, 20, "101"); /* tid 20 started at 999: not the thread that held 40 */
        g_assert_cmpuint(next, ==, 102);
        g_assert_cmpuint((uintptr_t) hashmap_get(&renamed, 1), ==, 30);
        g_assert_cmpuint((uintptr_t) hashmap_get(&renamed, 2), ==, 31);
        g_assert_cmpuint((uintptr_t) hashmap_get(&renamed, 3), ==, 102);
}

/* Without a counter the new ones keep their ids (the bpf scanner's, above any stored). A filter
 * whose parent is not the same object cannot be either. */
static void test_adopt_keep_ids(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 30, prog_b } };
        const Thread prev_threads[] = { { 10, 10, 1, 100, 31 }, { 11, 11, 1, 111, 31 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_EXACT);
        /* 10 lives on; 11 is another thread now, whose chain has equal bytes under a new root */
        const Node now_nodes[] = { { 501, 0, prog_a }, { 502, 501, prog_b }, { 503, 0, prog_a }, { 504, 503, prog_b } };
        const Thread now_threads[] = { { 10, 10, 1, 100, 502 }, { 11, 11, 1, 112, 504 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_EXACT);

        g_assert_cmpint(infer_adopt_ids(prev, f, false, NULL, NULL), ==, 0);
        ASSERT_CHAIN(f, 10, "31 30");
        ASSERT_CHAIN(f, 11, "504 503");
}

/* Sharing stays exact: two threads that share a filter now map it once; byte-equal copies are
 * told apart by thread, never merged by bytes when by_content is off. */
static void test_adopt_sharing(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 0, prog_a } };
        const Thread prev_threads[] = { { 10, 10, 1, 100, 30 }, { 11, 11, 1, 110, 31 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_EXACT);
        const Node now_nodes[] = { { 7, 0, prog_a }, { 8, 0, prog_a } };
        const Thread now_threads[] = { { 10, 10, 1, 100, 7 }, { 11, 11, 1, 110, 8 }, { 12, 12, 1, 120, 7 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_EXACT);
        g_assert_cmpint(infer_adopt_ids(prev, f, false, NULL, NULL), ==, 0);
        ASSERT_CHAIN(f, 10, "30");
        ASSERT_CHAIN(f, 11, "31");
        ASSERT_CHAIN(f, 12, "30");
}

/* A survivor's filters keep their ids when a new task with a lower pid (pids wrapped) shares them:
 * any surviving holder vouches for a filter, whichever comes first. */
static void test_adopt_lower_pid_holder(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 30, prog_b } };
        const Thread prev_threads[] = { { 10, 10, 1, 100, 31 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_EXACT);
        /* tid 5, forked from 10 after the pids wrapped, shares both objects */
        const Node now_nodes[] = { { 501, 0, prog_a }, { 502, 501, prog_b } };
        const Thread now_threads[] = { { 5, 5, 10, 500, 502 }, { 10, 10, 1, 100, 502 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_EXACT);
        _cleanup_(hashmap_deinit) Hashmap renamed = {};

        g_assert_cmpint(infer_adopt_ids(prev, f, false, NULL, &renamed), ==, 0);
        ASSERT_CHAIN(f, 10, "31 30");
        ASSERT_CHAIN(f, 5, "31 30");
        g_assert_cmpuint((uintptr_t) hashmap_get(&renamed, 501), ==, 30);
        g_assert_cmpuint((uintptr_t) hashmap_get(&renamed, 502), ==, 31);

        /* the same with the ptrace backend's counter: nothing new is numbered */
        g_autoptr(Forest) f2 = BUILD(now_nodes, now_threads, IDENTITY_INFERRED);
        uint64_t next = 40;
        g_assert_cmpint(infer_adopt_ids(prev, f2, false, &next, NULL), ==, 0);
        ASSERT_CHAIN(f2, 5, "31 30");
        g_assert_cmpuint(next, ==, 40);
}

/* A lower-pid task that holds a different object at the same depth takes nothing of the
 * survivor's, even with equal bytes; where it shares the survivor's root, the root and the
 * survivor's own filter above it keep their ids. */
static void test_adopt_lower_pid_other_object(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 30, prog_b } };
        const Thread prev_threads[] = { { 10, 10, 1, 100, 31 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_EXACT);
        /* 503 is a byte-equal copy of 501's chain; 505 sits on 10's root with 31's bytes */
        const Node now_nodes[] = { { 501, 0, prog_a }, { 502, 501, prog_b }, { 503, 0, prog_a }, { 504, 503, prog_b },
                                   { 505, 501, prog_b } };
        const Thread now_threads[] = { { 3, 3, 1, 300, 504 }, { 4, 4, 10, 400, 505 }, { 10, 10, 1, 100, 502 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_EXACT);

        g_assert_cmpint(infer_adopt_ids(prev, f, false, NULL, NULL), ==, 0);
        ASSERT_CHAIN(f, 10, "31 30");
        ASSERT_CHAIN(f, 3, "504 503");
        ASSERT_CHAIN(f, 4, "505 30");
}

/* The stored state lacked the new holders (written before they came, or the daemon was killed):
 * a new thread of the survivor's process under a lower tid, and a task under a reused lower pid
 * (another start time than the stored one's) both hold the survivor's chain; only the survivor
 * vouches, and that is enough. */
static void test_adopt_holder_not_stored(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 30, prog_b }, { 32, 0, prog_c } };
        const Thread prev_threads[] = { { 7, 7, 1, 70, 32 }, { 10, 10, 1, 100, 31 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_EXACT);
        const Node now_nodes[] = { { 501, 0, prog_a }, { 502, 501, prog_b }, { 503, 502, prog_c } };
        const Thread now_threads[] = { { 7, 7, 10, 700, 503 }, { 10, 3, 1, 300, 502 }, { 10, 10, 1, 100, 502 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_EXACT);
        uint64_t next = 40;

        g_assert_cmpint(infer_adopt_ids(prev, f, false, &next, NULL), ==, 0);
        ASSERT_CHAIN(f, 10, "31 30");
        ASSERT_CHAIN(f, 3, "31 30");
        ASSERT_CHAIN(f, 7, "41 31 30"); /* not 32: tid 7 is another task now */
}

/* Claims that disagree keep no id: one object now that two survivors held as two stored filters,
 * and one stored filter that two survivors hold as two objects now. Their descendants follow. With
 * by_content (the ptrace backend's later passes) such a filter may then take a free stored one by
 * its bytes, the first in the linked order. */
static void test_adopt_conflicts(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 0, prog_a }, { 32, 30, prog_b }, { 40, 0, prog_c } };
        const Thread prev_threads[] = { { 10, 10, 1, 100, 32 }, { 11, 11, 1, 110, 31 }, { 20, 20, 1, 200, 40 },
                                        { 21, 21, 1, 210, 40 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_EXACT);
        const Node now_nodes[] = { { 1, 0, prog_a }, { 2, 1, prog_b }, { 3, 0, prog_c }, { 4, 0, prog_c } };
        const Thread now_threads[] = { { 10, 10, 1, 100, 2 }, { 11, 11, 1, 110, 1 }, { 20, 20, 1, 200, 3 },
                                       { 21, 21, 1, 210, 4 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_EXACT);
        uint64_t next = 50;

        g_assert_cmpint(infer_adopt_ids(prev, f, false, &next, NULL), ==, 0);
        /* new ids in the linked order (1, 3, 4, then 2); 2's own claim (32) is unique, but its
         * parent is not 30 any more */
        ASSERT_CHAIN(f, 10, "54 51");
        ASSERT_CHAIN(f, 11, "51");
        ASSERT_CHAIN(f, 20, "52");
        ASSERT_CHAIN(f, 21, "53");

        g_autoptr(Forest) f2 = BUILD(now_nodes, now_threads, IDENTITY_INFERRED);
        next = 50;
        g_assert_cmpint(infer_adopt_ids(prev, f2, true, &next, NULL), ==, 0);
        ASSERT_CHAIN(f2, 10, "32 30"); /* 1 took 30 by its bytes, so 2's claim holds */
        ASSERT_CHAIN(f2, 11, "30");
        ASSERT_CHAIN(f2, 20, "40");
        ASSERT_CHAIN(f2, 21, "51");
}

/* The ptrace backend's fallback: an unused live filter with the same parent and bytes. */
static void test_adopt_by_content(void) {
        const Node prev_nodes[] = { { 30, 0, prog_a }, { 31, 30, prog_b } };
        const Thread prev_threads[] = { { 10, 10, 1, 100, 31 } };
        g_autoptr(Forest) prev = BUILD(prev_nodes, prev_threads, IDENTITY_INFERRED);
        const Node now_nodes[] = { { 1, 0, prog_a }, { 2, 1, prog_b }, { 3, 1, prog_c } };
        const Thread now_threads[] = { { 20, 20, 1, 200, 2 }, { 21, 21, 1, 210, 3 } };
        g_autoptr(Forest) f = BUILD(now_nodes, now_threads, IDENTITY_INFERRED);
        uint64_t next = 50;
        g_assert_cmpint(infer_adopt_ids(prev, f, true, &next, NULL), ==, 0);
        ASSERT_CHAIN(f, 20, "31 30");
        ASSERT_CHAIN(f, 21, "51 30");
        g_autoptr(Forest) f2 = BUILD(now_nodes, now_threads, IDENTITY_INFERRED);
        next = 50;
        g_assert_cmpint(infer_adopt_ids(prev, f2, false, &next, NULL), ==, 0);
        ASSERT_CHAIN(f2, 20, "52 51");
}

/* ---- merges ---- */

/* Apply the merge's events to a live forest that starts as live_nodes/threads. */
static Live *merged(const Node *ln, size_t nln, const Thread *lt, size_t nlt, const Node *sn, size_t nsn,
                    const Thread *st, size_t nst, const pid_t *bad, size_t n_bad, uint64_t *next, LiveBatch *b) {
        Live *l;
        g_assert_cmpint(live_new(build(ln, nln, lt, nlt, IDENTITY_INFERRED), &l), ==, 0);
        g_autoptr(Forest) scan = build(sn, nsn, st, nst, IDENTITY_INFERRED);
        g_assert_cmpint(infer_merge(live_forest(l), scan, bad, n_bad, next, b), ==, 0);
        LiveChanges c = {};
        int r = live_apply(l, b->events, b->n, &c);
        if (r < 0)
                g_error("live_apply of the merge: %s", strerror(-r));
        live_changes_done(&c);
        return l;
}

#define MERGED(ln, lt, sn, st, bad, n_bad, next, b) \
        merged(ln, ELEMENTSOF(ln), lt, ELEMENTSOF(lt), sn, ELEMENTSOF(sn), st, ELEMENTSOF(st), bad, n_bad, next, b)

static size_t count_events(const LiveBatch *b, LiveEventType type) {
        size_t n = 0;
        for (size_t i = 0; i < b->n; i++)
                n += b->events[i].type == type;
        return n;
}

/* A process read again as it was: its filters keep their ids, nothing new is attached. A child it
 * forked shares its chain, and has one filter of its own on top. */
static void test_merge_keeps_and_extends(void) {
        const Node ln[] = { { 5, 0, prog_a }, { 6, 5, prog_b } };
        const Thread lt[] = { { 10, 10, 1, 100, 6 } };
        const Node sn[] = { { 1, 0, prog_a }, { 2, 1, prog_b }, { 3, 2, prog_c } };
        const Thread st[] = { { 10, 10, 1, 100, 2 }, { 20, 20, 10, 200, 3 } };
        LiveBatch b = {};
        uint64_t next = 6;
        g_autoptr(Live) l = MERGED(ln, lt, sn, st, NULL, 0, &next, &b);
        ASSERT_CHAIN(live_forest(l), 10, "6 5");
        ASSERT_CHAIN(live_forest(l), 20, "7 6 5");
        g_assert_cmpuint(count_events(&b, LIVE_EVENT_FILTER), ==, 1);
        g_assert_cmpuint(b.events[1].filter.identity, ==, IDENTITY_INFERRED);
        g_assert_cmpint(forest_find_process(live_forest(l), 20)->ppid, ==, 10);
        live_batch_done(&b);
}

/* A thread gone from the rescan leaves; one the scan could not read keeps its state; a process
 * under a reused pid (another start time) replaces the old one. */
static void test_merge_exits_and_unreadable(void) {
        const Node ln[] = { { 5, 0, prog_a }, { 8, 0, prog_c } };
        const Thread lt[] = { { 10, 10, 1, 100, 5 }, { 10, 11, 1, 101, 5 }, { 10, 12, 1, 102, 5 }, { 30, 30, 10, 300, 8 } };
        const Node sn[] = { { 1, 0, prog_a }, { 2, 0, prog_b } };
        const Thread st[] = { { 10, 10, 1, 100, 1 }, { 30, 30, 10, 301, 2 } };
        const pid_t bad[] = { 12 };
        LiveBatch b = {};
        uint64_t next = 8;
        g_autoptr(Live) l = MERGED(ln, lt, sn, st, bad, ELEMENTSOF(bad), &next, &b);
        const Process *p = forest_find_process(live_forest(l), 10);
        g_assert_cmpuint(p->n_threads, ==, 2);
        g_assert_nonnull(process_find_thread(p, 12));
        g_assert_null(process_find_thread(p, 11));
        /* 12 keeps filter 5, so 10's equal root is a node of its own (unreadable threads are not
         * placed, and do not share) */
        ASSERT_CHAIN(live_forest(l), 10, "9");
        ASSERT_CHAIN(live_forest(l), 12, "5");
        ASSERT_CHAIN(live_forest(l), 30, "10");
        g_assert_cmpuint(forest_find_process(live_forest(l), 30)->start_time, ==, 301);
        g_assert_null(forest_find_filter(live_forest(l), 8)); /* retired with the old process 30 */
        live_batch_done(&b);
}

/* Two threads of a process with equal chains share them (the inference), and a process whose
 * threads are all disabled now leaves the live forest. */
static void test_merge_shares_within_process(void) {
        const Node ln[] = { { 5, 0, prog_a } };
        const Thread lt[] = { { 40, 40, 1, 400, 5 } };
        const Node sn[] = { { 1, 0, prog_b }, { 2, 0, prog_b } };
        const Thread st[] = { { 10, 10, 1, 100, 1 }, { 10, 11, 1, 101, 2 }, { 40, 40, 1, 400, 0 } };
        Thread st2[ELEMENTSOF(st)];
        memcpy(st2, st, sizeof(st));
        LiveBatch b = {};
        uint64_t next = 5;
        Live *l;
        g_assert_cmpint(live_new(BUILD(ln, lt, IDENTITY_INFERRED), &l), ==, 0);
        g_autoptr(Forest) scan = BUILD(sn, st2, IDENTITY_INFERRED);
        /* thread 40 is disabled in the scan */
        forest_find_task(scan, 40, NULL)->mode = TASK_MODE_DISABLED;
        g_assert_cmpint(infer_merge(live_forest(l), scan, NULL, 0, &next, &b), ==, 0);
        LiveChanges c = {};
        g_assert_cmpint(live_apply(l, b.events, b.n, &c), ==, 0);
        ASSERT_CHAIN(live_forest(l), 10, "6");
        ASSERT_CHAIN(live_forest(l), 11, "6");
        g_assert_null(forest_find_process(live_forest(l), 40));
        live_changes_done(&c);
        live_batch_done(&b);
        live_free(l);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/infer/adopt-by-thread", test_adopt_by_thread);
        g_test_add_func("/infer/adopt-keep-ids", test_adopt_keep_ids);
        g_test_add_func("/infer/adopt-sharing", test_adopt_sharing);
        g_test_add_func("/infer/adopt-lower-pid-holder", test_adopt_lower_pid_holder);
        g_test_add_func("/infer/adopt-lower-pid-other-object", test_adopt_lower_pid_other_object);
        g_test_add_func("/infer/adopt-holder-not-stored", test_adopt_holder_not_stored);
        g_test_add_func("/infer/adopt-conflicts", test_adopt_conflicts);
        g_test_add_func("/infer/adopt-by-content", test_adopt_by_content);
        g_test_add_func("/infer/merge-keeps-and-extends", test_merge_keeps_and_extends);
        g_test_add_func("/infer/merge-exits-and-unreadable", test_merge_exits_and_unreadable);
        g_test_add_func("/infer/merge-shares-within-process", test_merge_shares_within_process);
        return g_test_run();
}
