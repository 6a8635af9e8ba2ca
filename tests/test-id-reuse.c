/* test-id-reuse.c: a freed filter's address taken by a new filter never carries the old id */
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>

#include "observe/scanner.h"
#include "tests-util.h"

#define MAX_ROUNDS 2000
#define ROUNDS_AFTER_REUSE 20 /* keep churning a little once an address came back */
#define MAX_SWEEP_WAIT_PASSES 40 /* more than scan-bpf-pass.c's SWEEP_INTERVAL + SWEEP_AFTER_PASSES */

static Forest *scan_subtree(BpfScanner *b, const Scenario *s) {
        ScanOptions opts = { .root = scenario_root_pid(s) };
        Forest *f = NULL;

        g_assert_cmpint(bpf_scanner_scan(b, &opts, &f), ==, 0);
        tests_assert_forest_matches(f, s, true);
        return f;
}

static void wait_gone(pid_t pid) {
        for (int i = 0; i < 2000 && kill(pid, 0) == 0; i++)
                usleep(1000);
        g_assert_cmpint(kill(pid, 0), ==, -1);
}

static BpfScannerStats stats_of(BpfScanner *b) {
        BpfScannerStats st;

        g_assert_cmpint(bpf_scanner_get_stats(b, &st), ==, 0);
        return st;
}

/* Slab reuse is per CPU: keep every task of the test on one. */
static void pin_to_one_cpu(cpu_set_t *saved) {
        cpu_set_t one;

        g_assert_cmpint(sched_getaffinity(0, sizeof(*saved), saved), ==, 0);
        CPU_ZERO(&one);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, saved)) {
                        CPU_SET(cpu, &one);
                        break;
                }
        g_assert_cmpint(sched_setaffinity(0, sizeof(one), &one), ==, 0);
}

static void test_churn(void) {
        if (!tests_require_root())
                return;
        struct sock_filter insns[64], keep[64];
        BpfScanner *b = NULL;
        Scenario *s = NULL;
        cpu_set_t saved;
        int rounds, done = 0, after_reuse = -1;

        pin_to_one_cpu(&saved);
        g_assert_cmpint(bpf_scanner_new(&b), ==, 0);
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask root = scenario_root(s);

        /* A long-lived filter: its id must not move while everything around it churns. */
        ScenarioTask keeper = scenario_fork(s, root);
        size_t nk = scenario_filter_errno(keep, SYS_acct, 1, 5);
        g_assert_cmpint(scenario_install(s, keeper, keep, nk, 0), >=, 0);
        Forest *f = scan_subtree(b, s);
        uint64_t keeper_id = tests_find_task(f, s, keeper)->filter_id;
        forest_free(f);

        BpfScannerStats start = stats_of(b);
        GHashTable *seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        g_hash_table_add(seen, g_memdup2(&keeper_id, sizeof(keeper_id)));

        for (rounds = 0; rounds < MAX_ROUNDS; rounds++) {
                ScenarioTask c = scenario_fork(s, root);
                g_assert_cmpint(c, >, 0);
                size_t n = scenario_filter_errno(insns, SYS_getpriority, 1 + rounds % 4000, rounds / 4000);
                g_assert_cmpint(scenario_install(s, c, insns, n, 0), >=, 0);

                /* The new filter: its own bytes, an id never handed out before. */
                f = scan_subtree(b, s);
                const Task *t = tests_find_task(f, s, c);
                g_assert_nonnull(t->filter);
                g_assert_cmpuint(t->filter->len, ==, n);
                g_assert_cmpmem(t->filter->insns, n * sizeof(struct sock_filter), insns, n * sizeof(struct sock_filter));
                uint64_t id = t->filter_id;
                if (g_hash_table_contains(seen, &id))
                        g_error("round %d: the new filter got id %" PRIu64 ", which an earlier filter had", rounds, id);
                g_hash_table_add(seen, g_memdup2(&id, sizeof(id)));
                g_assert_cmpuint(tests_find_task(f, s, keeper)->filter_id, ==, keeper_id);
                forest_free(f);

                /* It goes away; the next pass does not report it, the keeper is unchanged. */
                pid_t pid = scenario_task(s, c)->tgid;
                g_assert_cmpint(scenario_exit(s, c), ==, 0);
                wait_gone(pid);
                f = scan_subtree(b, s);
                g_assert_null(forest_find_filter(f, id));
                g_assert_null(forest_find_process(f, pid));
                g_assert_cmpuint(tests_find_task(f, s, keeper)->filter_id, ==, keeper_id);
                forest_free(f);
                done++;

                if (after_reuse < 0 && stats_of(b).addresses_reused > start.addresses_reused)
                        after_reuse = 0;
                if (after_reuse >= 0 && after_reuse++ >= ROUNDS_AFTER_REUSE)
                        break;
        }
        if (after_reuse < 0)
                g_error("no filter address was reused in %d rounds: the reuse path is untested", done);

        /* Ids of filters gone for two passes are swept: the id map is swept every so many passes
         * while it holds ids of gone filters. */
        for (int i = 0; i < MAX_SWEEP_WAIT_PASSES && stats_of(b).ids_swept == start.ids_swept; i++) {
                f = scan_subtree(b, s);
                forest_free(f);
        }
        BpfScannerStats end = stats_of(b);
        g_test_message("%d rounds: %" PRIu64 " ids assigned, %" PRIu64 " swept, %" PRIu64 " addresses reused",
                       done, end.ids_assigned - start.ids_assigned, end.ids_swept - start.ids_swept,
                       end.addresses_reused - start.addresses_reused);
        g_assert_cmpuint(end.addresses_reused, >, start.addresses_reused);
        g_assert_cmpuint(end.ids_swept, >, start.ids_swept);
        g_assert_cmpuint(end.ids_assigned - start.ids_assigned, >=, (uint64_t) done);
        g_assert_cmpuint(end.passes, >=, start.passes + 2 * (uint64_t) done);
        g_assert_cmpuint(g_hash_table_size(seen), ==, (guint) done + 1);

        g_hash_table_destroy(seen);
        scenario_free(s);
        bpf_scanner_free(b);
        g_assert_cmpint(sched_setaffinity(0, sizeof(saved), &saved), ==, 0);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/id-reuse/churn", test_churn);
        return g_test_run();
}
