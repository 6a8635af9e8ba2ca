/* tests-util.c: privilege checks that turn skips into failures in CI, and comparisons of a
 * scanned Forest with a scenario's ground truth */
#include "tests-util.h"

#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#define TRACEFS_MAGIC_ 0x74726163

bool tests_require(bool condition, const char *why) {
        if (condition)
                return true;
        if (getenv("CI")) {
                g_test_message("CI must run this test, but: %s", why);
                g_test_fail();
        } else
                g_test_skip(why);
        return false;
}

bool tests_require_root(void) {
        return tests_require(geteuid() == 0, "needs root (CAP_SYS_ADMIN, CAP_BPF, CAP_SYS_PTRACE)");
}

void tests_ensure_tracefs(void) {
        struct statfs sf;
        if (statfs("/sys/kernel/tracing", &sf) == 0 && sf.f_type == TRACEFS_MAGIC_)
                return;
        if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0)
                g_test_message("mounting tracefs: %s", g_strerror(errno));
}

static void assert_filter_matches(const Filter *flt, const ScenarioNode *node, const Scenario *s, pid_t tid,
                                  int depth) {
        if (flt->len != node->len || memcmp(flt->insns, node->insns, node->len * sizeof(struct sock_filter)) != 0)
                g_error("task %d, chain position %d: filter %" PRIu64 " has %zu insns, different from node %d (%zu insns)",
                        tid, depth, flt->id, flt->len, node->id, node->len);
        g_assert_cmpint(flt->log, ==, !!(node->flags & SECCOMP_FILTER_FLAG_LOG));
        g_assert_cmpint(flt->wait_killable_recv, ==, !!(node->flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV));
}

typedef struct Bijection {
        uint64_t *node_to_filter; /* index node id */
        GHashTable *filter_to_node;
} Bijection;

static void bijection_pair(Bijection *b, int node, uint64_t id, pid_t tid) {
        if (b->node_to_filter[node] == 0)
                b->node_to_filter[node] = id;
        if (b->node_to_filter[node] != id)
                g_error("task %d: node %d seen as filter %" PRIu64 " and as filter %" PRIu64
                        " (one kernel object reported under two ids)",
                        tid, node, b->node_to_filter[node], id);
        gpointer prev;
        if (g_hash_table_lookup_extended(b->filter_to_node, &b->node_to_filter[node], NULL, &prev)) {
                if (GPOINTER_TO_INT(prev) != node)
                        g_error("task %d: filter %" PRIu64 " stands for both node %d and node %d "
                                "(two kernel objects reported as one)",
                                tid, id, GPOINTER_TO_INT(prev), node);
        } else
                g_hash_table_insert(b->filter_to_node, &b->node_to_filter[node], GINT_TO_POINTER(node));
}

static void assert_task_matches(const Forest *f, const Scenario *s, const ScenarioTaskInfo *info, bool exact,
                                Bijection *b) {
        Process *p = NULL;
        Task *t = forest_find_task(f, info->tid, &p);
        if (!t)
                g_error("scenario task %d (process %d) missing from the scan", info->tid, info->tgid);
        g_assert_cmpint(p->pid, ==, info->tgid);
        TaskMode want = info->strict ? TASK_MODE_STRICT : info->head >= 0 ? TASK_MODE_FILTER : TASK_MODE_DISABLED;
        if (t->mode != want)
                g_error("task %d: mode %s, expected %s", info->tid, task_mode_to_string(t->mode),
                        task_mode_to_string(want));

        const Filter *flt = t->filter;
        int depth = 0;
        for (int node = info->head; node >= 0; node = scenario_node(s, node)->parent, depth++) {
                if (!flt)
                        g_error("task %d: chain ends at depth %d, expected %d", info->tid, depth,
                                scenario_node_depth(s, info->head));
                assert_filter_matches(flt, scenario_node(s, node), s, info->tid, depth);
                if (exact)
                        bijection_pair(b, node, flt->id, info->tid);
                else if (flt->identity != IDENTITY_INFERRED)
                        g_error("task %d: filter %" PRIu64 " claims exact identity from an inferring backend",
                                info->tid, flt->id);
                flt = flt->parent;
        }
        if (flt)
                g_error("task %d: chain is longer than the %d filters installed", info->tid, depth);
}

void tests_assert_forest_matches(const Forest *f, const Scenario *s, bool exact) {
        g_assert_true(f->linked);
        Bijection b = {
                .node_to_filter = g_new0(uint64_t, scenario_n_nodes(s) + 1),
                .filter_to_node = g_hash_table_new(g_int64_hash, g_int64_equal),
        };
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *info = scenario_task(s, (ScenarioTask) i);
                if (info->alive)
                        assert_task_matches(f, s, info, exact, &b);
        }
        if (exact)
                for (size_t i = 0; i < f->n_filters; i++)
                        g_assert_cmpint(f->filters[i]->identity, ==, IDENTITY_EXACT);
        g_hash_table_destroy(b.filter_to_node);
        g_free(b.node_to_filter);
}

int tests_run_capture(char **argv, char **ret_out, char **ret_err) {
        g_autoptr(GError) error = NULL;
        int status;
        if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, ret_out, ret_err, &status, &error)) {
                g_test_message("spawning %s: %s", argv[0], error->message);
                return -1;
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}
