/* test-ctl-graph.c: `sectreectl graph` of the whole machine made readable: the processes of a
 * systemd unit (a cgroup made by hand as systemd names it) in a cluster labelled with the unit,
 * alike processes (name, head filter, unit) as one node "N*[name]"; a listener's holder that runs
 * without filters is drawn too */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "ctl-run.h"
#include "guard.h"
#include "tests-util.h"

#define UNIT "sectree-test-graph.service"
#define CGROUP "system.slice/" UNIT
#define N_WORKERS 3
#define N_WORKERS_TEXT "3"

typedef struct Fixture {
        BusFixture b;
        bool ok;
        char *root; /* the cgroup2 hierarchy */
        pid_t parent, workers[N_WORKERS], outsider;
} Fixture;

static void install_filter(void) {
        struct sock_fprog prog = { .len = ELEMENTSOF(tests_prog_allow), .filter = (struct sock_filter *) tests_prog_allow };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(94);
}

static void ready(int fd) {
        pid_t pid = getpid();
        if (write(fd, &pid, sizeof(pid)) != sizeof(pid))
                _exit(98);
}

/* st-gparent installs a filter and forks N_WORKERS workers under it that exec sleep: they share
 * its head filter, and the daemon learns their name from the exec. */
static void run_parent(int fd) {
        install_filter();
        for (int i = 0; i < N_WORKERS; i++)
                if (tests_fork_named("st-gw") == 0) {
                        ready(fd);
                        execl("/bin/sleep", "sleep", "600", (char *) NULL);
                        _exit(93);
                }
        ready(fd);
        tests_pause_forever();
}

static pid_t start(const char *comm, void (*run)(int fd), pid_t *more, size_t n_more) {
        int p[2];
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        pid_t pid = tests_fork_named(comm);
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                run(p[1]);
        for (size_t i = 0; i <= n_more; i++) {
                pid_t x;
                g_assert_cmpint(read(p[0], &x, sizeof(x)), ==, sizeof(x));
                if (x != pid)
                        *more++ = x;
        }
        close(p[0]);
        close(p[1]);
        return pid;
}

static void run_outsider(int fd) {
        install_filter();
        ready(fd);
        tests_pause_forever();
}

static void move_into(const char *dir, pid_t pid) {
        g_autofree char *procs = g_build_filename(dir, "cgroup.procs", NULL), *text = g_strdup_printf("%d\n", pid);
        g_autoptr(GError) error = NULL;
        if (!g_file_set_contents_full(procs, text, -1, G_FILE_SET_CONTENTS_NONE, 0644, &error))
                g_error("writing %s: %s", procs, error->message);
}

static void fixture_setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) {};
        fx->root = g_strdup(tests_cgroup2_root());
        if (!tests_require(fx->root != NULL, "no cgroup2 hierarchy: libsystemd reads units from it") ||
            !bus_fixture_start_all(&fx->b, NULL, NULL))
                return;
        fx->parent = start("st-gparent", run_parent, fx->workers, N_WORKERS);
        fx->outsider = start("st-gout", run_outsider, NULL, 0);
        g_autofree char *dir = g_build_filename(fx->root, CGROUP, NULL);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        move_into(dir, fx->parent);
        for (int i = 0; i < N_WORKERS; i++)
                move_into(dir, fx->workers[i]);
        fx->ok = true;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        pid_t all[] = { fx->parent, fx->outsider };
        for (size_t i = 0; i < G_N_ELEMENTS(all); i++)
                if (all[i] > 0) {
                        (void) kill(all[i], SIGKILL); /* the workers die with their parent */
                        (void) waitpid(all[i], NULL, 0);
                }
        if (fx->root) {
                g_autofree char *dir = g_build_filename(fx->root, CGROUP, NULL);
                for (int tries = 0; tries < 100 && rmdir(dir) < 0 && errno == EBUSY; tries++)
                        g_usleep(10000); /* until the workers are gone */
        }
        if (fx->ok)
                bus_fixture_finish(&fx->b);
        g_free(fx->root);
}

typedef struct GraphWait {
        Fixture *fx;
        char *out;
} GraphWait;

/* The daemon lists the filtered processes: the outsider's node is drawn. */
static bool graph_has_outsider(void *userdata) {
        GraphWait *w = userdata;
        g_autofree char *node = g_strdup_printf("p%d [shape=ellipse, label=\"st-gout[%d]\"];", w->fx->outsider,
                                                w->fx->outsider);
        g_clear_pointer(&w->out, g_free);
        return ctl_run(&w->fx->b, false, CTL_ARGS("graph"), &w->out, NULL) == 0 && strstr(w->out, node) &&
               strstr(w->out, "label=\"" N_WORKERS_TEXT "*[sleep]\"");
}

/* The body of the cluster labelled unit in a graph, or NULL. */
static char *cluster_of(const char *dot, const char *unit) {
        g_autofree char *label = g_strdup_printf("\n                label=\"%s\";\n", unit);
        const char *at = strstr(dot, label);
        if (!at)
                return NULL;
        const char *start = g_strrstr_len(dot, at - dot, "        subgraph cluster_");
        const char *end = strstr(at, "\n        }\n");
        g_assert_nonnull(start);
        g_assert_nonnull(end);
        return g_strndup(start, end - start);
}

static void test_clusters(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        GraphWait w = { .fx = fx };
        if (!tests_wait_for(graph_has_outsider, &w, TESTS_PATIENCE_MS))
                g_error("graph never drew the test's processes:\n%s", w.out);
        g_autofree char *dot = w.out;
        g_autofree char *cluster = cluster_of(dot, UNIT);
        if (!cluster)
                g_error("no cluster labelled " UNIT ":\n%s", dot);
        /* the unit's processes: the parent on its own, its alike workers as one node */
        g_autofree char *parent = g_strdup_printf("p%d [shape=ellipse, label=\"st-gparent[%d]\"];", fx->parent, fx->parent);
        g_autofree char *outsider = g_strdup_printf("p%d ", fx->outsider);
        g_assert_nonnull(strstr(cluster, parent));
        g_assert_nonnull(strstr(cluster, "[shape=ellipse, label=\"" N_WORKERS_TEXT "*[sleep]\"];"));
        g_assert_null(strstr(cluster, outsider));
        for (int i = 0; i < N_WORKERS; i++) {
                g_autofree char *node = g_strdup_printf("p%d ", fx->workers[i]);
                g_assert_null(strstr(dot, node));
        }
        /* the collapsed node has the edge to the workers' head filter, which is the parent's */
        g_autofree char *parent_edge_prefix = g_strdup_printf("p%d -> f", fx->parent);
        const char *pe = strstr(cluster, parent_edge_prefix);
        g_assert_nonnull(pe);
        g_autofree char *filter = g_strndup(pe + strlen(parent_edge_prefix) - 1,
                                            strcspn(pe + strlen(parent_edge_prefix) - 1, ";"));
        const char *collapsed = strstr(cluster, "\n                c");
        g_assert_nonnull(collapsed);
        g_autofree char *collapsed_edge = g_strdup_printf(" -> %s;", filter);
        g_assert_nonnull(strstr(collapsed, collapsed_edge));
        /* the outsider is drawn, outside this cluster */
        g_autofree char *outsider_node = g_strdup_printf("p%d [shape=ellipse, label=\"st-gout[%d]\"];", fx->outsider,
                                                         fx->outsider);
        g_assert_nonnull(strstr(dot, outsider_node));
}

/* st-gnotify installs a filter with a listener and says the listener's fd. */
static void run_notifier(int fd) {
        struct sock_filter insns[64];
        struct sock_fprog prog = { .len = (unsigned short) tests_filter_notify(insns, SYS_uname), .filter = insns };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(94);
        int listener = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (listener < 0 || write(fd, &listener, sizeof(listener)) != sizeof(listener))
                _exit(95);
        ready(fd);
        tests_pause_forever();
}

/* A supervisor without filters (this test) holds a copy of a listener: it is not a process of the
 * forest, yet the graph draws it as the listener's holder, as a node of its own. */
static void test_listener_holder_outside(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        int p[2], child_fd;
        pid_t got;
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        pid_t notifier = tests_fork_named("st-gnotify");
        g_assert_cmpint(notifier, >=, 0);
        if (notifier == 0)
                run_notifier(p[1]);
        close(p[1]);
        g_assert_cmpint(read(p[0], &child_fd, sizeof(child_fd)), ==, sizeof(child_fd));
        g_assert_cmpint(read(p[0], &got, sizeof(got)), ==, sizeof(got));
        close(p[0]);
        int pidfd = (int) syscall(SYS_pidfd_open, notifier, 0);
        g_assert_cmpint(pidfd, >=, 0);
        int copy = (int) syscall(SYS_pidfd_getfd, pidfd, child_fd, 0);
        g_assert_cmpint(copy, >=, 0);
        g_free(ctl_run_ok(&fx->b, CTL_ARGS("rescan"))); /* a copy made so is seen by a full pass */

        g_autofree char *out = ctl_run_ok(&fx->b, CTL_ARGS("graph"));
        g_autofree char *edge = g_strdup_printf("p%d -> l", (int) getpid());
        g_autofree char *node = g_strdup_printf("p%d [shape=ellipse, label=\"", (int) getpid());
        if (!strstr(out, edge) || !strstr(out, node))
                g_error("graph: this process (%d) holds a listener: it wants the edge '%s...' and the node '%s...':\n%s",
                        (int) getpid(), edge, node, out);
        close(copy);
        close(pidfd);
        kill(notifier, SIGKILL);
        waitpid(notifier, NULL, 0);
}

int main(int argc, char *argv[]) {
        tests_init(&argc, &argv);
        g_test_add("/ctl-graph/clusters", Fixture, NULL, fixture_setup, test_clusters, fixture_teardown);
        g_test_add("/ctl-graph/listener-holder-outside", Fixture, NULL, fixture_setup, test_listener_holder_outside,
                   fixture_teardown);
        return g_test_run();
}
