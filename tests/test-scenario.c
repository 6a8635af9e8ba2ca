/* test-scenario.c: the scenario builder builds what it says, checked against /proc */
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "tests-util.h"

static int status_field(pid_t tid, const char *field) {
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/status", tid);
        FILE *f = fopen(path, "re");
        g_assert_nonnull(f);
        int v = -1;
        size_t l = strlen(field);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, field, l) == 0 && line[l] == ':')
                        v = atoi(line + l + 1);
        fclose(f);
        return v;
}

static void assert_proc_agrees(const Scenario *s) {
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *t = scenario_task(s, (ScenarioTask) i);
                if (!t->alive)
                        continue;
                int depth = t->head >= 0 ? scenario_node_depth(s, t->head) : 0;
                g_assert_cmpint(status_field(t->tid, "Seccomp_filters"), ==, depth);
                g_assert_cmpint(status_field(t->tid, "Seccomp"), ==,
                                t->strict ? SECCOMP_MODE_STRICT : depth ? SECCOMP_MODE_FILTER : SECCOMP_MODE_DISABLED);
        }
}

static void test_tree(void) {
        if (!tests_require_root())
                return;
        Scenario *s;
        struct sock_filter a[16], b[16];
        size_t na = scenario_filter_errno(a, SYS_getpriority, 1, 0), nb = scenario_filter_errno(b, SYS_acct, 2, 3);

        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask root = scenario_root(s);
        g_assert_cmpint(scenario_no_new_privs(s, root), ==, 0);
        int n0 = scenario_install(s, root, a, na, 0);
        g_assert_cmpint(n0, ==, 0);
        ScenarioTask mid = scenario_fork(s, root);
        g_assert_cmpint(mid, >, 0);
        ScenarioTask leaf = scenario_fork(s, mid);
        ScenarioTask th = scenario_thread(s, leaf);
        int n1 = scenario_install(s, leaf, b, nb, SECCOMP_FILTER_FLAG_TSYNC);
        g_assert_cmpint(n1, ==, 1);
        g_assert_cmpint(scenario_task(s, th)->head, ==, n1);
        g_assert_cmpint(scenario_task(s, mid)->head, ==, n0);
        g_assert_cmpint(scenario_node(s, n1)->parent, ==, n0);
        ScenarioTask strict = scenario_fork(s, mid);
        /* strict mode is refused once a filter is set: make a fresh process without one */
        g_assert_cmpint(scenario_strict(s, strict), <, 0);
        assert_proc_agrees(s);

        pid_t leaf_pid = scenario_task(s, leaf)->tgid;
        g_assert_cmpint(scenario_exit(s, mid), ==, 0);
        g_assert_cmpint(scenario_task(s, leaf)->ppid, ==, scenario_root_pid(s));
        g_assert_cmpint(scenario_task(s, leaf)->tgid, ==, leaf_pid);
        assert_proc_agrees(s);

        g_assert_cmpint(scenario_exit(s, th), ==, 0);
        assert_proc_agrees(s);
        scenario_free(s);
}

static void test_strict_and_listener(void) {
        if (!tests_require_root())
                return;
        Scenario *s;
        struct sock_filter a[16];
        size_t na = scenario_filter_errno(a, SYS_getpriority, 1, 0);
        a[na - 3].k = SECCOMP_RET_USER_NOTIF; /* the matching branch notifies: getpriority is never called */

        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask strict = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_strict(s, strict), ==, 0);
        ScenarioTask p = scenario_fork(s, scenario_root(s));
        int n = scenario_install(s, p, a, na, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(n, >=, 0);
        g_assert_cmpint(scenario_node(s, n)->listener_fd, >=, 0);
        ScenarioTask q = scenario_fork(s, scenario_root(s));
        int fd = scenario_share_listener(s, n, q);
        g_assert_cmpint(fd, >=, 0);
        char path[64], link[128] = {};
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", scenario_task(s, q)->tgid, fd);
        g_assert_cmpint(readlink(path, link, sizeof(link) - 1), >, 0);
        g_assert_cmpstr(link, ==, "anon_inode:seccomp notify");
        assert_proc_agrees(s);
        g_assert_cmpint(scenario_exit(s, strict), ==, 0);
        g_assert_cmpint(scenario_exec_sleep(s, p), ==, 0);
        assert_proc_agrees(s);
        scenario_free(s);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/scenario/tree", test_tree);
        g_test_add_func("/scenario/strict-and-listener", test_strict_and_listener);
        return g_test_run();
}
