/* test-live-view.c: the bpf backend's live view stays exact when the daemon lags behind the kernel
 * and under churn: what TSYNC reached is taken at the event, a batch that does not fit leads to one
 * repair instead of a storm, and a listener means one thing in events and passes. The Manager runs
 * in this process without a bus: the test drives its loop, and not running it is the daemon being
 * stopped (SIGSTOP) while the kernel goes on. */
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "manager.h"
#include "source.h"
#include "tests-util.h"

typedef struct InProc {
        char *dir;
        Manager *m;
} InProc;

static bool inproc_start(InProc *ip) {
        if (!tests_require_root())
                return false;
        tests_ensure_tracefs();
        g_assert_cmpint(unsetenv("SECTREE_BPF_EVENTS_SIZE"), ==, 0);
        g_assert_cmpint(setenv("SECTREE_REFRESH_USEC", "600000000", 1), ==, 0);
        ip->dir = g_dir_make_tmp("sectree-live-view-XXXXXX", NULL);
        g_assert_nonnull(ip->dir);
        ManagerOptions o = { .backend = BACKEND_BPF, .state_dir = ip->dir };
        g_assert_cmpint(manager_new(&o, &ip->m), ==, 0);
        g_assert_cmpint(manager_open(ip->m), ==, 0);
        return true;
}

static void inproc_stop(InProc *ip) {
        manager_free(ip->m);
        tests_remove_dir(ip->dir);
        g_free(ip->dir);
        (void) unsetenv("SECTREE_REFRESH_USEC");
}

/* Run the manager's loop for timeout_ms, or until stop (if not NULL) says so. */
static bool inproc_run(InProc *ip, bool (*stop)(InProc *ip), unsigned timeout_ms) {
        gint64 end = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        while (g_get_monotonic_time() < end) {
                if (stop && stop(ip))
                        return true;
                g_assert_cmpint(sd_event_run(ip->m->event, 20000), >=, 0);
        }
        return stop && stop(ip);
}

static bool watch_drained(InProc *ip) {
        return !source_events_pending(ip->m->source);
}

/* The head of tid in the live forest, 0 if untracked. */
static uint64_t live_head(const Manager *m, pid_t tid) {
        const Task *t = forest_find_task(live_forest(m->live), tid, NULL);
        return t ? t->filter_id : 0;
}

/* The repro of the issue: thread T installs F with TSYNC and exits; 800 other events follow; the
 * leader forks C and exits; only then does the daemon read its events. Read from /proc when the
 * event is handled, TSYNC reached nobody (the process is gone): F was retired with T, C's fork named
 * a filter the live view no longer had, and a resync followed. Taken from the kernel at the event,
 * the leader has F, C inherits it, and nothing needs repairing. */
static void test_tsync_while_stopped(void) {
        InProc ip;
        if (!inproc_start(&ip))
                return;
        Scenario *s = tests_scenario_new();
        inproc_run(&ip, watch_drained, 2000);
        inproc_run(&ip, NULL, 100);
        unsigned passes = ip.m->stats.full_passes, inconsistent = ip.m->stats.inconsistent;

        /* The daemon is stopped from here on: nothing reads its events. */
        struct sock_filter f[PROG_MAX_INSNS];
        size_t n = scenario_filter_errno(f, SYS_acct, 19, 3);
        ScenarioTask p = scenario_fork(s, scenario_root(s));
        ScenarioTask t = scenario_thread(s, p);
        g_assert_cmpint(scenario_install(s, t, f, n, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_exit(s, t), ==, 0);
        for (int i = 0; i < 400; i++) { /* a fork and an exit each */
                ScenarioTask x = scenario_fork(s, p);
                g_assert_cmpint(x, >=, 0);
                g_assert_cmpint(scenario_exit(s, x), ==, 0);
        }
        ScenarioTask c = scenario_fork(s, p);
        g_assert_cmpint(c, >=, 0);
        pid_t c_tid = scenario_task(s, c)->tid;
        g_assert_cmpint(scenario_exit(s, p), ==, 0);

        /* The daemon goes on. */
        g_assert_true(inproc_run(&ip, watch_drained, TESTS_PATIENCE_MS));
        inproc_run(&ip, NULL, 1500); /* a resync, had one been asked for, would run by now */
        uint64_t head = live_head(ip.m, c_tid);
        if (head == 0)
                g_error("child %d, made under the TSYNC'ed filter while the daemon was stopped, is not in the live view",
                        c_tid);
        const Filter *flt = forest_find_filter(live_forest(ip.m->live), head);
        g_assert_nonnull(flt);
        g_assert_cmpuint(flt->len, ==, n);
        g_assert_cmpmem(flt->insns, n * sizeof(struct sock_filter), f, n * sizeof(struct sock_filter));
        g_assert_cmpuint(ip.m->stats.inconsistent, ==, inconsistent);
        g_assert_cmpuint(ip.m->stats.failed_batches, ==, 0);
        g_assert_cmpuint(ip.m->stats.full_passes, ==, passes);
        scenario_free(s);
        inproc_stop(&ip);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/live-view/tsync-while-stopped", test_tsync_while_stopped);
        return g_test_run();
}
