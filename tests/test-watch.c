/* test-watch.c: the bpf backend's live events report what scenarios do — installs (with the ids a
 * pass reports), forks and threads, execs, exits — and count what they could not send */
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "observe/procinfo.h"
#include "observe/scanner.h"
#include "observe/watch-bpf.h"
#include "observe/watcher.h"
#include "tests-util.h"

#define EVENT_TIMEOUT_MS 5000 /* every wait for an event is bounded by this */
#define SETTLE_MS 200         /* how long to keep reading before saying an event did not come */
#define MAX_NODES 64
#define OVERFLOW_INSTALLS 200
#define BOUND_INSTALLS 100
#define BOUND_EVENTS 16
#define BOUND_USEC 20000

/* An event as the handler saw it, with its instructions copied. */
typedef struct Seen {
        WatchEvent e;
        struct sock_filter *insns;
        bool taken;
} Seen;

typedef struct Watcher {
        BpfScanner *scanner;
        GArray *events; /* Seen */
} Watcher;

static Watcher main_watcher;

static int on_event(const WatchEvent *e, void *userdata) {
        Watcher *w = userdata;
        Seen x = { .e = *e };

        g_assert_cmpint(e->type, >=, 0);
        g_assert_cmpint(e->type, <, _WATCH_EVENT_MAX);
        if (e->type == WATCH_FILTER_ATTACHED && e->filter.len > 0) {
                x.insns = g_memdup2(e->filter.insns, e->filter.len * sizeof(struct sock_filter));
                x.e.filter.insns = x.insns;
        }
        g_array_append_val(w->events, x);
        return 0;
}

static void seen_clear(gpointer p) {
        g_free(((Seen *) p)->insns);
}

static void watcher_init(Watcher *w) {
        w->events = g_array_new(false, true, sizeof(Seen));
        g_array_set_clear_func(w->events, seen_clear);
        g_assert_cmpint(bpf_scanner_new(&w->scanner), ==, 0);
        g_assert_cmpint(bpf_watch_start(bpf_scanner_watch(w->scanner), on_event, w), ==, 0);
        g_assert_cmpint(bpf_watch_start(bpf_scanner_watch(w->scanner), on_event, w), ==, -EALREADY);
        g_assert_cmpint(bpf_watch_fd(bpf_scanner_watch(w->scanner)), >=, 0);
}

static void watcher_deinit(Watcher *w) {
        if (w->events)
                g_array_unref(w->events);
        bpf_scanner_free(w->scanner);
        *w = (Watcher) {};
}

static int64_t now_ms(void) {
        return g_get_monotonic_time() / 1000;
}

/* Wait up to timeout_ms for events, and take in whatever is there. */
static int watcher_pump(Watcher *w, int timeout_ms) {
        struct pollfd p = { .fd = bpf_watch_fd(bpf_scanner_watch(w->scanner)), .events = POLLIN };
        int n;

        g_assert_cmpint(poll(&p, 1, timeout_ms), >=, 0);
        n = bpf_watch_dispatch(bpf_scanner_watch(w->scanner));
        g_assert_cmpint(n, >=, 0);
        return n;
}

/* A fresh start for a test: whatever happened before is read and forgotten. */
static Watcher *watcher_get(void) {
        if (!main_watcher.scanner)
                watcher_init(&main_watcher);
        while (watcher_pump(&main_watcher, 0) > 0)
                ;
        g_array_set_size(main_watcher.events, 0);
        return &main_watcher;
}

static Seen *find_event(Watcher *w, WatchEventType type, pid_t tid) {
        for (guint i = 0; i < w->events->len; i++) {
                Seen *x = &g_array_index(w->events, Seen, i);
                if (!x->taken && x->e.type == type && x->e.task.tid == tid)
                        return x;
        }
        return NULL;
}

static const char *type_name(WatchEventType t) {
        static const char *const names[_WATCH_EVENT_MAX] = {
                [WATCH_TASK_NEW] = "TASK_NEW",
                [WATCH_TASK_EXEC] = "TASK_EXEC",
                [WATCH_TASK_EXIT] = "TASK_EXIT",
                [WATCH_FILTER_ATTACHED] = "FILTER_ATTACHED",
                [WATCH_TASK_MODE] = "TASK_MODE",
                [WATCH_TASK_TSYNC] = "TASK_TSYNC",
                [WATCH_LISTENER_CLOSED] = "LISTENER_CLOSED",
                [WATCH_TASK_ESCAPED] = "TASK_ESCAPED",
                [WATCH_TASK_COMM] = "TASK_COMM",
        };
        return names[t];
}

/* The next event of this type for thread tid not taken yet; fails after EVENT_TIMEOUT_MS. */
static const WatchEvent *wait_event(Watcher *w, WatchEventType type, pid_t tid) {
        int64_t deadline = now_ms() + EVENT_TIMEOUT_MS;
        Seen *x;

        while (!(x = find_event(w, type, tid))) {
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        g_error("no %s event for thread %d within %d ms", type_name(type), tid, EVENT_TIMEOUT_MS);
                watcher_pump(w, (int) left);
        }
        x->taken = true;
        return &x->e;
}

/* No such event arrived. Call after waiting for an event caused later than the one looked for. */
static void assert_no_event(Watcher *w, WatchEventType type, pid_t tid) {
        watcher_pump(w, SETTLE_MS);
        if (find_event(w, type, tid))
                g_error("unexpected %s event for thread %d", type_name(type), tid);
}

static Forest *scan_subtree(BpfScanner *b, const Scenario *s) {
        ScanOptions opts = { .root = scenario_root_pid(s) };
        Forest *f = NULL;

        g_assert_cmpint(bpf_scanner_scan(b, &opts, &f), ==, 0);
        tests_assert_forest_matches(f, s, true);
        return f;
}

/* Ids of ground-truth nodes, learnt from the FILTER_ATTACHED events. */
typedef struct NodeIds {
        uint64_t id[MAX_NODES];
        size_t n;
} NodeIds;

static void assert_filter_event(const WatchEvent *e, const Scenario *s, const ScenarioNode *node, const NodeIds *ids) {
        const ScenarioTaskInfo *installer = NULL;

        for (size_t i = 0; i < scenario_n_tasks(s); i++)
                if (scenario_task(s, (ScenarioTask) i)->tid == node->installer)
                        installer = scenario_task(s, (ScenarioTask) i);
        g_assert_nonnull(installer);

        g_assert_cmpuint(e->filter.id, >, 0);
        g_assert_cmpuint(e->filter.id, <, UINT64_C(1) << 32); /* a counter, not an address */
        g_assert_cmpuint(e->filter.parent_id, ==, node->parent >= 0 ? ids->id[node->parent] : 0);
        g_assert_cmpuint(e->filter.len, ==, node->len);
        g_assert_cmpmem(e->filter.insns, e->filter.len * sizeof(struct sock_filter), node->insns,
                        node->len * sizeof(struct sock_filter));
        g_assert_cmpint(e->filter.log, ==, !!(node->flags & SECCOMP_FILTER_FLAG_LOG));
        g_assert_cmpint(e->filter.wait_killable_recv, ==, !!(node->flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV));
        g_assert_cmpint(e->filter.has_listener, ==, !!(node->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER));
        g_assert_cmpint(e->filter.tsync, ==, !!(node->flags & SECCOMP_FILTER_FLAG_TSYNC));

        g_assert_cmpint(e->task.tid, ==, node->installer);
        g_assert_cmpint(e->task.tgid, ==, installer->tgid);
        g_assert_cmpint(e->task.mode, ==, TASK_MODE_FILTER);
        g_assert_cmpuint(e->task.filter_id, ==, e->filter.id);
        g_assert_cmpuint(e->ktime_ns, >, 0);
}

/* Every install of the scenario since the last call came as an event, in order per installer. */
static void assert_filter_events(Watcher *w, const Scenario *s, NodeIds *ids) {
        g_assert_cmpuint(scenario_n_nodes(s), <=, MAX_NODES);
        for (; ids->n < scenario_n_nodes(s); ids->n++) {
                const ScenarioNode *node = scenario_node(s, (int) ids->n);
                const WatchEvent *e = wait_event(w, WATCH_FILTER_ATTACHED, node->installer);

                assert_filter_event(e, s, node, ids);
                for (size_t i = 0; i < ids->n; i++)
                        g_assert_cmpuint(ids->id[i], !=, e->filter.id);
                ids->id[ids->n] = e->filter.id;
        }
}

/* A pass names every filter of every live chain as the events did. */
static void assert_scan_agrees(const Forest *f, const Scenario *s, const NodeIds *ids) {
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *info = scenario_task(s, (ScenarioTask) i);
                if (!info->alive)
                        continue;
                const Task *t = forest_find_task(f, info->tid, NULL);
                g_assert_nonnull(t);
                const Filter *flt = t->filter;
                for (int node = info->head; node >= 0; node = scenario_node(s, node)->parent, flt = flt->parent) {
                        g_assert_nonnull(flt);
                        g_assert_cmpuint(flt->id, ==, ids->id[node]);
                }
                g_assert_null(flt);
        }
}

static bool self_dumpable(void) {
        return prctl(PR_GET_DUMPABLE) == 1; /* agents are forked from us and keep ours */
}

/* A task event describes thread t as /proc has it now; head_id is its expected head. */
static void assert_task_event(const WatchEvent *e, const Scenario *s, ScenarioTask t, uint64_t head_id) {
        const ScenarioTaskInfo *info = scenario_task(s, t);
        uint64_t start;
        char comm[16];

        g_assert_cmpint(e->task.tid, ==, info->tid);
        g_assert_cmpint(e->task.tgid, ==, info->tgid);
        g_assert_cmpint(e->task.ppid, ==, info->ppid);
        g_assert_cmpuint(e->task.filter_id, ==, head_id);
        g_assert_cmpint(e->task.mode, ==, head_id ? TASK_MODE_FILTER : TASK_MODE_DISABLED);
        g_assert_cmpint(proc_read_start_time(info->tid, &start), ==, 0);
        g_assert_cmpuint(e->task.start_time, ==, start);
        g_assert_cmpint(proc_read_comm(info->tid, comm), ==, 0);
        g_assert_cmpstr(e->task.comm, ==, comm);
        g_assert_cmpint(e->task.uid, ==, getuid());
        g_assert_cmpint(e->task.euid, ==, geteuid());
        g_assert_cmpint(e->task.gid, ==, getgid());
        g_assert_cmpint(e->task.dumpable, ==, self_dumpable());
        g_assert_false(e->task.no_new_privs);
}

static pid_t tid_of(const Scenario *s, ScenarioTask t) {
        return scenario_task(s, t)->tid;
}

static void test_filter_attached(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        NodeIds ids = {};
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, SECCOMP_FILTER_FLAG_LOG);
        g_assert_cmpint(scenario_install_prctl(s, a, x.b, x.nb), >=, 0);
        ScenarioTask b = scenario_fork(s, a);
        ScenarioTask c = scenario_fork(s, a);
        g_assert_cmpint(scenario_install(s, b, x.c, x.nc, SECCOMP_FILTER_FLAG_NEW_LISTENER), >=, 0);
        g_assert_cmpint(scenario_install(s, c, x.c, x.nc, 0), >=, 0); /* same bytes, another object */
        ScenarioTask t = scenario_thread(s, c);
        g_assert_cmpint(scenario_install(s, t, x.a, x.na, 0), >=, 0);

        /* A pass in between reads its own ring buffer: the events wait, unmixed. */
        Forest *f = scan_subtree(w->scanner, s);
        assert_filter_events(w, s, &ids);
        assert_scan_agrees(f, s, &ids);
        forest_free(f);

        /* And the next pass still names them so. */
        f = scan_subtree(w->scanner, s);
        assert_scan_agrees(f, s, &ids);
        g_assert_cmpuint(f->n_filters, ==, 5);
        forest_free(f);
        scenario_free(s);
}

static void test_tsync(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        NodeIds ids = {};
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x.b, x.nb, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, x.c, x.nc, 0), >=, 0); /* t2 alone */
        assert_filter_events(w, s, &ids);
        /* The threads TSYNC reached, from the kernel, each with the filter and its state then. */
        const WatchEvent *e = wait_event(w, WATCH_TASK_TSYNC, tid_of(s, a));
        g_assert_cmpint(e->task.tgid, ==, tid_of(s, a));
        g_assert_cmpuint(e->task.filter_id, ==, ids.id[1]);
        g_assert_cmpint(e->task.mode, ==, TASK_MODE_FILTER);
        uint64_t start;
        g_assert_cmpint(proc_read_start_time(tid_of(s, t2), &start), ==, 0);
        e = wait_event(w, WATCH_TASK_TSYNC, tid_of(s, t2));
        g_assert_cmpuint(e->task.filter_id, ==, ids.id[1]);
        g_assert_cmpuint(e->task.start_time, ==, start);
        assert_no_event(w, WATCH_TASK_TSYNC, tid_of(s, t1)); /* the installer's own event says it */

        Forest *f = scan_subtree(w->scanner, s);
        assert_scan_agrees(f, s, &ids);
        /* The TSYNC'ed filter is every other thread's head. */
        g_assert_cmpuint(forest_find_task(f, tid_of(s, a), NULL)->filter_id, ==, ids.id[1]);
        g_assert_cmpuint(forest_find_task(f, tid_of(s, t1), NULL)->filter_id, ==, ids.id[1]);
        g_assert_cmpuint(forest_find_task(f, tid_of(s, t2), NULL)->filter->parent_id, ==, ids.id[1]);
        forest_free(f);
        scenario_free(s);
}

static void test_task_new(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        NodeIds ids = {};
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        assert_filter_events(w, s, &ids);

        /* A filtered task's child process and thread: with the parent's head. */
        ScenarioTask b = scenario_fork(s, a);
        assert_task_event(wait_event(w, WATCH_TASK_NEW, tid_of(s, b)), s, b, ids.id[0]);
        ScenarioTask t = scenario_thread(s, a);
        assert_task_event(wait_event(w, WATCH_TASK_NEW, tid_of(s, t)), s, t, ids.id[0]);
        ScenarioTask bt = scenario_thread(s, b); /* a thread creating a thread */
        assert_task_event(wait_event(w, WATCH_TASK_NEW, tid_of(s, bt)), s, bt, ids.id[0]);
        g_assert_cmpint(scenario_install(s, t, x.b, x.nb, 0), >=, 0);
        assert_filter_events(w, s, &ids);
        ScenarioTask tt = scenario_thread(s, t); /* inherits t's own head, not the leader's */
        assert_task_event(wait_event(w, WATCH_TASK_NEW, tid_of(s, tt)), s, tt, ids.id[1]);

        /* The unfiltered are not reported... */
        ScenarioTask u = scenario_fork(s, scenario_root(s));
        ScenarioTask ut = scenario_thread(s, u);
        /* ...except threads of a process where some thread has a filter (a pass reports them). */
        ScenarioTask m = scenario_fork(s, scenario_root(s));
        ScenarioTask mt1 = scenario_thread(s, m);
        g_assert_cmpint(scenario_install(s, mt1, x.c, x.nc, 0), >=, 0);
        assert_filter_events(w, s, &ids);
        ScenarioTask mt2 = scenario_thread(s, m); /* made by the unfiltered leader */
        assert_task_event(wait_event(w, WATCH_TASK_NEW, tid_of(s, mt2)), s, mt2, 0);
        assert_no_event(w, WATCH_TASK_NEW, tid_of(s, u));
        assert_no_event(w, WATCH_TASK_NEW, tid_of(s, ut));
        assert_no_event(w, WATCH_TASK_NEW, tid_of(s, m));
        assert_no_event(w, WATCH_TASK_NEW, tid_of(s, mt1));

        Forest *f = scan_subtree(w->scanner, s);
        assert_scan_agrees(f, s, &ids);
        forest_free(f);
        scenario_free(s);
}

static void test_task_exec(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        NodeIds ids = {};
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, a);
        assert_filter_events(w, s, &ids);
        g_assert_cmpint(scenario_exec_sleep(s, b), ==, 0);

        const WatchEvent *e = wait_event(w, WATCH_TASK_EXEC, tid_of(s, b));
        g_assert_cmpstr(e->task.comm, ==, "sleep");
        assert_task_event(e, s, b, ids.id[0]);

        /* A thread's exec: the other threads (the leader too) exit, the thread takes the tgid. */
        ScenarioTask c = scenario_fork(s, a);
        ScenarioTask ct = scenario_thread(s, c);
        pid_t old_tid = tid_of(s, ct), leader = tid_of(s, c);
        g_assert_cmpint(scenario_exec_sleep(s, ct), ==, 0);
        e = wait_event(w, WATCH_TASK_EXEC, leader);
        g_assert_cmpstr(e->task.comm, ==, "sleep");
        assert_task_event(e, s, ct, ids.id[0]);
        g_assert_cmpint(wait_event(w, WATCH_TASK_EXIT, leader)->task.tgid, ==, leader);
        assert_no_event(w, WATCH_TASK_EXIT, old_tid); /* it did not exit: it became the leader */

        /* An unfiltered exec is not reported. */
        ScenarioTask u = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_exec_sleep(s, u), ==, 0);
        assert_no_event(w, WATCH_TASK_EXEC, tid_of(s, u));
        scenario_free(s);
}

/* Newer kernels (6.18 here) let go of a task's filters in do_exit() before sched_process_exit
 * fires: the head is then 0, the mode stays. */
static void assert_exit_event(const WatchEvent *e, pid_t tgid, uint64_t head_id) {
        g_assert_cmpint(e->task.tgid, ==, tgid);
        g_assert_cmpint(e->task.mode, ==, TASK_MODE_FILTER);
        if (e->task.filter_id != 0)
                g_assert_cmpuint(e->task.filter_id, ==, head_id);
        g_assert_cmpstr(e->task.comm, ==, "test-watch");
}

static void test_task_exit(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        NodeIds ids = {};
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a), t3 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t3, x.b, x.nb, 0), >=, 0);
        ScenarioTask u = scenario_fork(s, scenario_root(s));
        ScenarioTask ut = scenario_thread(s, u);
        assert_filter_events(w, s, &ids);
        pid_t ta = tid_of(s, a), tid1 = tid_of(s, t1), tid2 = tid_of(s, t2), tid3 = tid_of(s, t3);
        pid_t tu = tid_of(s, u), tut = tid_of(s, ut);

        /* One thread. */
        g_assert_cmpint(scenario_exit(s, t1), ==, 0);
        assert_exit_event(wait_event(w, WATCH_TASK_EXIT, tid1), ta, ids.id[0]);

        /* The whole process: every thread exits. */
        g_assert_cmpint(scenario_exit(s, a), ==, 0);
        assert_exit_event(wait_event(w, WATCH_TASK_EXIT, ta), ta, ids.id[0]);
        assert_exit_event(wait_event(w, WATCH_TASK_EXIT, tid2), ta, ids.id[0]);
        assert_exit_event(wait_event(w, WATCH_TASK_EXIT, tid3), ta, ids.id[1]);
        assert_no_event(w, WATCH_TASK_EXIT, tid1); /* once only */

        /* The unfiltered are not reported. */
        g_assert_cmpint(scenario_exit(s, u), ==, 0);
        assert_no_event(w, WATCH_TASK_EXIT, tu);
        assert_no_event(w, WATCH_TASK_EXIT, tut);
        scenario_free(s);
}

/* A thread going from disabled to strict mode is an event; one going to filter mode is not (it is
 * FILTER_ATTACHED). */
static void test_task_mode(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        NodeIds ids = {};
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_strict(s, a), ==, 0);
        const WatchEvent *e = wait_event(w, WATCH_TASK_MODE, tid_of(s, a));
        const ScenarioTaskInfo *info = scenario_task(s, a);
        uint64_t start;
        g_assert_cmpint(e->task.tgid, ==, info->tgid);
        g_assert_cmpint(e->task.ppid, ==, info->ppid);
        g_assert_cmpint(e->task.mode, ==, TASK_MODE_STRICT);
        g_assert_cmpuint(e->task.filter_id, ==, 0);
        g_assert_cmpint(proc_read_start_time(info->tid, &start), ==, 0);
        g_assert_cmpuint(e->task.start_time, ==, start);
        g_assert_cmpuint(e->ktime_ns, >, 0);

        /* One thread of a process: the event names it; the process's other (disabled) thread is
         * reported by passes from now on, and its exit is an event. */
        ScenarioTask b = scenario_fork(s, scenario_root(s));
        ScenarioTask bt = scenario_thread(s, b), bt2 = scenario_thread(s, b);
        g_assert_cmpint(scenario_strict(s, bt), ==, 0);
        e = wait_event(w, WATCH_TASK_MODE, tid_of(s, bt));
        g_assert_cmpint(e->task.tgid, ==, tid_of(s, b));
        g_assert_cmpint(e->task.mode, ==, TASK_MODE_STRICT);
        Forest *f = scan_subtree(w->scanner, s);
        g_assert_cmpint(forest_find_task(f, tid_of(s, bt), NULL)->mode, ==, TASK_MODE_STRICT);
        g_assert_cmpint(forest_find_task(f, tid_of(s, bt2), NULL)->mode, ==, TASK_MODE_DISABLED);
        forest_free(f);
        pid_t tid2 = tid_of(s, bt2);
        g_assert_cmpint(scenario_exit(s, bt2), ==, 0);
        g_assert_cmpint(wait_event(w, WATCH_TASK_EXIT, tid2)->task.mode, ==, TASK_MODE_DISABLED);

        /* A filter: FILTER_ATTACHED only. */
        ScenarioTask c = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        assert_filter_events(w, s, &ids);
        assert_no_event(w, WATCH_TASK_MODE, tid_of(s, c));
        assert_no_event(w, WATCH_TASK_MODE, tid_of(s, a)); /* once only */
        scenario_free(s);
}

/* Counting what a handler saw of one installer. */
typedef struct Count {
        pid_t tid;
        unsigned filters, events;
        unsigned delay_usec; /* a slow handler */
} Count;

static int on_count(const WatchEvent *e, void *userdata) {
        Count *c = userdata;

        if (c->delay_usec > 0)
                usleep(c->delay_usec);
        c->events++;
        if (e->type == WATCH_FILTER_ATTACHED && e->task.tid == c->tid)
                c->filters++;
        return 0;
}

static void drain(BpfScanner *b) {
        int64_t deadline = now_ms() + EVENT_TIMEOUT_MS;
        struct pollfd p = { .fd = bpf_watch_fd(bpf_scanner_watch(b)), .events = POLLIN };

        do {
                g_assert_cmpint(poll(&p, 1, 0), >=, 0);
                g_assert_cmpint(bpf_watch_dispatch(bpf_scanner_watch(b)), >=, 0);
        } while ((p.revents & POLLIN) && now_ms() < deadline);
}

/* A tiny ring buffer, many installs, nobody reading: what did not fit is counted. */
static void test_overflow(void) {
        if (!tests_require_root())
                return;
        struct sock_filter insns[64];
        BpfScanner *b = NULL;
        Count count = {};

        g_assert_cmpint(setenv("SECTREE_BPF_EVENTS_SIZE", "4096", 1), ==, 0);
        g_assert_cmpint(bpf_scanner_new(&b), ==, 0);
        g_assert_cmpint(unsetenv("SECTREE_BPF_EVENTS_SIZE"), ==, 0);
        g_assert_cmpint(bpf_watch_start(bpf_scanner_watch(b), on_count, &count), ==, 0);
        Scenario *s = tests_scenario_new();
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        count.tid = tid_of(s, a);
        uint64_t lost_before = bpf_watch_lost(bpf_scanner_watch(b));

        for (int i = 0; i < OVERFLOW_INSTALLS; i++) {
                size_t n = scenario_filter_errno(insns, SYS_getpriority, 1 + i, i % 32);
                g_assert_cmpint(scenario_install(s, a, insns, n, 0), >=, 0);
        }
        uint64_t lost = bpf_watch_lost(bpf_scanner_watch(b)) - lost_before;
        drain(b);
        g_test_message("%d installs: %u events received, %" PRIu64 " lost", OVERFLOW_INSTALLS, count.filters, lost);
        g_assert_cmpuint(lost, >, 0);
        g_assert_cmpuint(count.filters, <, OVERFLOW_INSTALLS);
        g_assert_cmpuint(count.filters + lost, >=, OVERFLOW_INSTALLS); /* each one sent or counted */

        /* Read, the ring takes events again; and passes, on their own ring, are unaffected. */
        unsigned before = count.filters;
        size_t n = scenario_filter_errno(insns, SYS_acct, 1, 0);
        g_assert_cmpint(scenario_install(s, a, insns, n, 0), >=, 0);
        for (int64_t deadline = now_ms() + EVENT_TIMEOUT_MS; count.filters == before && now_ms() < deadline;) {
                struct pollfd p = { .fd = bpf_watch_fd(bpf_scanner_watch(b)), .events = POLLIN };
                g_assert_cmpint(poll(&p, 1, 100), >=, 0);
                g_assert_cmpint(bpf_watch_dispatch(bpf_scanner_watch(b)), >=, 0);
        }
        g_assert_cmpuint(count.filters, ==, before + 1);
        Forest *f = scan_subtree(b, s);
        g_assert_cmpuint(f->n_filters, ==, OVERFLOW_INSTALLS + 1);
        forest_free(f);

        scenario_free(s);
        bpf_scanner_free(b);
}

/* One dispatch takes at most its bound of events and leaves the rest, readable, for the next;
 * none is lost or seen twice. */
static void test_dispatch_bound(void) {
        if (!tests_require_root())
                return;
        struct sock_filter insns[64];
        BpfScanner *b = NULL;
        Count count = {};
        int n, calls = 0;
        unsigned total = 0;

        g_assert_cmpint(bpf_scanner_new(&b), ==, 0);
        g_assert_false(bpf_watch_pending(bpf_scanner_watch(b)));
        g_assert_cmpint(bpf_watch_start(bpf_scanner_watch(b), on_count, &count), ==, 0);
        bpf_watch_set_dispatch_limits(bpf_scanner_watch(b), BOUND_EVENTS, 0);
        Scenario *s = tests_scenario_new();
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        count.tid = tid_of(s, a);
        uint64_t lost_before = bpf_watch_lost(bpf_scanner_watch(b));
        for (int i = 0; i < BOUND_INSTALLS; i++) {
                size_t len = scenario_filter_errno(insns, SYS_getpriority, 1 + i, i % 16);
                g_assert_cmpint(scenario_install(s, a, insns, len, 0), >=, 0);
        }
        g_assert_cmpuint(bpf_watch_lost(bpf_scanner_watch(b)), ==, lost_before);
        g_assert_true(bpf_watch_pending(bpf_scanner_watch(b)));

        /* Each install returned after its event was in the ring: the first dispatch stops at its
         * bound, with the fd still readable. */
        struct pollfd p = { .fd = bpf_watch_fd(bpf_scanner_watch(b)), .events = POLLIN };
        g_assert_cmpint(bpf_watch_dispatch(bpf_scanner_watch(b)), ==, BOUND_EVENTS);
        g_assert_true(bpf_watch_pending(bpf_scanner_watch(b)));
        g_assert_cmpint(poll(&p, 1, 0), ==, 1);
        total = count.events;
        for (; bpf_watch_pending(bpf_scanner_watch(b)) && calls < 10 * BOUND_INSTALLS; calls++) {
                n = bpf_watch_dispatch(bpf_scanner_watch(b));
                g_assert_cmpint(n, >=, 0);
                g_assert_cmpint(n, <=, BOUND_EVENTS);
                total += (unsigned) n;
        }
        g_assert_cmpuint(total, ==, count.events);
        g_assert_cmpuint(count.filters, ==, BOUND_INSTALLS);
        g_assert_cmpint(calls, >=, BOUND_INSTALLS / BOUND_EVENTS - 1);

        /* The time bound: a slow handler is stopped after about max_usec. */
        bpf_watch_set_dispatch_limits(bpf_scanner_watch(b), 0, BOUND_USEC);
        count.delay_usec = BOUND_USEC / 2;
        unsigned before = count.filters;
        for (int i = 0; i < 20; i++) {
                size_t len = scenario_filter_errno(insns, SYS_acct, 1 + i, i % 16);
                g_assert_cmpint(scenario_install(s, a, insns, len, 0), >=, 0);
        }
        n = bpf_watch_dispatch(bpf_scanner_watch(b));
        g_assert_cmpint(n, >=, 1);
        g_assert_cmpint(n, <=, 3);
        drain(b);
        g_assert_cmpuint(count.filters, ==, before + 20);

        scenario_free(s);
        bpf_scanner_free(b);
}

/* A handler's error stops the dispatch and is returned. */
static int on_fail(const WatchEvent *e, void *userdata) {
        return -ENOTRECOVERABLE;
}

static void test_handler_error(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        tests_filters_init(&x);
        BpfScanner *b = NULL;
        g_assert_cmpint(bpf_scanner_new(&b), ==, 0);
        g_assert_cmpint(bpf_watch_fd(bpf_scanner_watch(b)), ==, -ENOTCONN);
        g_assert_cmpint(bpf_watch_dispatch(bpf_scanner_watch(b)), ==, -ENOTCONN);
        g_assert_cmpint(bpf_watch_start(bpf_scanner_watch(b), on_fail, NULL), ==, 0);
        Scenario *s = tests_scenario_new();
        tests_fork_install(s, scenario_root(s), x.a, x.na, 0);

        struct pollfd p = { .fd = bpf_watch_fd(bpf_scanner_watch(b)), .events = POLLIN };
        g_assert_cmpint(poll(&p, 1, EVENT_TIMEOUT_MS), ==, 1);
        g_assert_cmpint(bpf_watch_dispatch(bpf_scanner_watch(b)), ==, -ENOTRECOVERABLE);
        scenario_free(s);
        bpf_scanner_free(b);
}

/* A subtree whose root no pass visits (pid 1 here: hidden from BPF) still scans, from /proc. */
/* A child makes a listener, dups its fd, and closes both: each close(2) is an event naming the
 * listener's filter, the second one its last reference. */
static void test_listener_closed(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        int pipefd[2];
        g_assert_cmpint(pipe(pipefd), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_filter f[16];
                size_t n = scenario_filter_errno(f, SYS_acct, 77, 1);
                struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
                int fds[3] = { -1, -1, -1 };
                prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                fds[0] = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
                fds[1] = dup(fds[0]);
                close(fds[0]);
                close(fds[1]);
                fds[2] = fds[0] >= 0 && fds[1] >= 0;
                if (write(pipefd[1], fds, sizeof(fds)) != sizeof(fds))
                        _exit(1);
                pause();
                _exit(0);
        }
        close(pipefd[1]);
        int fds[3];
        g_assert_cmpint(read(pipefd[0], fds, sizeof(fds)), ==, sizeof(fds));
        close(pipefd[0]);
        g_assert_cmpint(fds[2], ==, 1);
        const WatchEvent *e = wait_event(w, WATCH_FILTER_ATTACHED, pid);
        g_assert_true(e->filter.has_listener);
        g_assert_cmpint(e->filter.listener_fd, ==, fds[0]);
        uint64_t id = e->filter.id;
        e = wait_event(w, WATCH_LISTENER_CLOSED, pid);
        g_assert_cmpint(e->task.tgid, ==, pid);
        g_assert_cmpuint(e->listener.filter_id, ==, id);
        g_assert_cmpint(e->listener.fd, ==, fds[0]);
        g_assert_false(e->listener.last); /* the dup holds the file */
        e = wait_event(w, WATCH_LISTENER_CLOSED, pid);
        g_assert_cmpuint(e->listener.filter_id, ==, id);
        g_assert_cmpint(e->listener.fd, ==, fds[1]);
        g_assert_true(e->listener.last);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* A multi-threaded process's first filter, without TSYNC: its other thread escaped it, and says so
 * from the kernel at the event; a second filter of that process does not say it again. */
static void test_escaped(void) {
        if (!tests_require_root())
                return;
        Watcher *w = watcher_get();
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask c = scenario_fork(s, scenario_root(s));
        ScenarioTask e = scenario_thread(s, c);
        g_assert_cmpint(e, >, 0);
        g_assert_cmpint(scenario_install(s, c, x.a, x.na, 0), >=, 0);
        wait_event(w, WATCH_FILTER_ATTACHED, tid_of(s, c));
        const WatchEvent *ev = wait_event(w, WATCH_TASK_ESCAPED, tid_of(s, e));
        g_assert_cmpint(ev->task.tgid, ==, tid_of(s, c));
        g_assert_cmpint(ev->task.mode, ==, TASK_MODE_DISABLED);
        g_assert_cmpuint(ev->task.filter_id, ==, 0);
        uint64_t start;
        g_assert_cmpint(proc_read_start_time(tid_of(s, e), &start), ==, 0);
        g_assert_cmpuint(ev->task.start_time, ==, start);
        assert_no_event(w, WATCH_TASK_ESCAPED, tid_of(s, c));
        g_assert_cmpint(scenario_install(s, c, x.b, x.nb, 0), >=, 0);
        wait_event(w, WATCH_FILTER_ATTACHED, tid_of(s, c));
        assert_no_event(w, WATCH_TASK_ESCAPED, tid_of(s, e));
        scenario_free(s);
}

static void test_scan_root_pid1(void) {
        if (!tests_require_root())
                return;
        ScanOptions opts = { .root = 1 };
        ProcStatus st;
        Forest *f = NULL;
        int r;

        g_assert_cmpint(proc_read_status(1, &st), ==, 0);
        r = bpf_scanner_scan(watcher_get()->scanner, &opts, &f);
        if (st.seccomp_mode == SECCOMP_MODE_FILTER && r == -EOPNOTSUPP)
                return; /* hidden and filtered: no ids to read, and said so */
        g_assert_cmpint(r, ==, 0);
        const Process *init = forest_find_process(f, 1);
        g_assert_nonnull(init);
        g_assert_cmpuint(init->n_threads, >, 0);
        g_assert_cmpint(init->ppid, ==, 0);
        g_assert_nonnull(forest_find_process(f, getpid())); /* everything descends from pid 1 */
        g_assert_nonnull(forest_find_task(f, 1, NULL));
        forest_free(f);
}

int main(int argc, char **argv) {
        int r;

        tests_init(&argc, &argv);
        tests_ensure_tracefs();
        g_test_add_func("/watch/filter-attached", test_filter_attached);
        g_test_add_func("/watch/tsync", test_tsync);
        g_test_add_func("/watch/task-new", test_task_new);
        g_test_add_func("/watch/task-exec", test_task_exec);
        g_test_add_func("/watch/task-exit", test_task_exit);
        g_test_add_func("/watch/task-mode", test_task_mode);
        g_test_add_func("/watch/overflow", test_overflow);
        g_test_add_func("/watch/dispatch-bound", test_dispatch_bound);
        g_test_add_func("/watch/handler-error", test_handler_error);
        g_test_add_func("/watch/scan-root-pid1", test_scan_root_pid1);
        g_test_add_func("/watch/listener-closed", test_listener_closed);
        g_test_add_func("/watch/escaped", test_escaped);
        r = g_test_run();
        watcher_deinit(&main_watcher);
        return r;
}
