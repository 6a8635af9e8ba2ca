/* test-restore.c: restores on the real kernel: every scenario the scenario builder makes is
 * scanned (bpf), planned, rebuilt by sectree-restore (as root and as nobody), scanned again and
 * compared; random histories played on the kernel by the hundred; exec'd probes behave alike */
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "plan-protocol.h"
#include "plan-verify.h"
#include "scan.h"
#include "snapshot.h"
#include "tests-util.h"

#define NOBODY 65534
#define FRAME_TIMEOUT_USEC (60 * 1000 * 1000ULL)

static BpfScanner *scanner;

static Forest *scan(pid_t root) {
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        Forest *f = NULL;

        if (!scanner)
                g_assert_cmpint(bpf_scanner_new(&scanner), ==, 0);
        opts.root = root;
        g_assert_cmpint(bpf_scanner_scan(scanner, &opts, &f), ==, 0);
        return f;
}

/* ---- talking to sectree-restore ---- */

typedef struct RestoreRun {
        pid_t executor;
        int sock;
        json_t *ready;    /* the READY document, or NULL */
        json_t *error;    /* the ERROR document, or NULL */
        int *fds;
        size_t n_fds;
        PlanMapping map;
        pid_t root_pid;
} RestoreRun;

static void executor_child(int sock, uid_t uid) {
        const char *path = g_getenv("SECTREE_RESTORE");
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

        if (!path || null < 0 || dup2(sock, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
            close_range(3, ~0U, 0) < 0)
                _exit(126);
        if (uid != 0 && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
                _exit(125);
        execl(path, "sectree-restore", (char *) NULL);
        _exit(127);
}

static int snapshot_memfd(const Forest *f) {
        int fd = memfd_create("snapshot", MFD_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(snapshot_write_fd(f, SNAPSHOT_FORMAT_JSON, fd), ==, 0);
        g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
        return fd;
}

static RestoreFrame recv_frame(RestoreRun *r) {
        RestoreFrame f = {};
        int k = restore_frame_recv(r->sock, FRAME_TIMEOUT_USEC, &f);

        if (k < 0)
                g_error("no answer from sectree-restore: %s", g_strerror(-k));
        return f;
}

static void mapping_from_ready(RestoreRun *r) {
        json_t *x;
        size_t i;

        r->root_pid = (pid_t) json_integer_value(json_object_get(r->ready, "restore_root"));
        r->map.root_pid = r->root_pid;
        json_array_foreach(json_object_get(r->ready, "processes"), i, x)
                g_assert_cmpint(plan_mapping_add_process(&r->map, (pid_t) json_integer_value(json_object_get(x, "snapshot_pid")),
                                                         (pid_t) json_integer_value(json_object_get(x, "pid"))), ==, 0);
        json_array_foreach(json_object_get(r->ready, "threads"), i, x)
                g_assert_cmpint(plan_mapping_add_thread(&r->map, (pid_t) json_integer_value(json_object_get(x, "snapshot_tid")),
                                                        (pid_t) json_integer_value(json_object_get(x, "tid"))), ==, 0);
}

/* READY and the fds after it, or ERROR. */
static void read_outcome(RestoreRun *r) {
        RestoreFrame f = recv_frame(r);
        json_error_t je;
        size_t n;

        if (f.type == RESTORE_FRAME_ERROR) {
                r->error = json_loads(f.payload, 0, &je);
                g_assert_nonnull(r->error);
                restore_frame_done(&f);
                return;
        }
        g_assert_cmpint(f.type, ==, RESTORE_FRAME_READY);
        r->ready = json_loads(f.payload, 0, &je);
        g_assert_nonnull(r->ready);
        restore_frame_done(&f);
        n = (size_t) json_integer_value(json_object_get(r->ready, "n_fds"));
        r->fds = g_new0(int, n + 1);
        while (r->n_fds < n) {
                f = recv_frame(r);
                g_assert_cmpint(f.type, ==, RESTORE_FRAME_FDS);
                memcpy(r->fds + r->n_fds, f.fds, f.n_fds * sizeof(int));
                r->n_fds += f.n_fds;
                f.n_fds = 0; /* kept */
                restore_frame_done(&f);
        }
        mapping_from_ready(r);
}

/* Start sectree-restore as uid with the snapshot and the request's options (a JSON object text
 * without its braces, e.g. "\"exec\":[...]"). */
static void restore_start(const Forest *snapshot, uid_t uid, const char *options, RestoreRun *ret) {
        _cleanup_close_ int memfd = snapshot_memfd(snapshot);
        g_autofree char *request = g_strdup_printf("{\"version\":%d%s%s}", RESTORE_PROTOCOL_VERSION,
                                                   options ? "," : "", options ?: "");
        int pair[2];

        *ret = (RestoreRun) { .sock = -1 };
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
        fflush(NULL);
        ret->executor = fork();
        g_assert_cmpint(ret->executor, >=, 0);
        if (ret->executor == 0)
                executor_child(pair[1], uid);
        close(pair[1]);
        ret->sock = pair[0];
        g_assert_cmpint(restore_frame_send(ret->sock, RESTORE_FRAME_REQUEST, request, strlen(request), &memfd, 1), ==, 0);
        read_outcome(ret);
}

/* Wait for the executor's exit; returns its status. */
static int wait_executor(RestoreRun *r) {
        int status = 0;

        g_assert_cmpint(waitpid(r->executor, &status, 0), ==, r->executor);
        r->executor = 0;
        return status;
}

static void restore_done(RestoreRun *r) {
        for (size_t i = 0; i < r->n_fds; i++)
                close(r->fds[i]);
        g_free(r->fds);
        json_decref(r->ready);
        json_decref(r->error);
        plan_mapping_done(&r->map);
        if (r->sock >= 0)
                close(r->sock);
        *r = (RestoreRun) { .sock = -1 };
}

/* RELEASE: the executor ends every stub and says RELEASED, then exits 0. */
static void restore_release(RestoreRun *r) {
        RestoreFrame f;

        g_assert_cmpint(restore_frame_send(r->sock, RESTORE_FRAME_RELEASE, NULL, 0, NULL, 0), ==, 0);
        f = recv_frame(r);
        g_assert_cmpint(f.type, ==, RESTORE_FRAME_RELEASED);
        restore_frame_done(&f);
        g_assert_cmpint(wait_executor(r), ==, 0);
        /* nothing of the restore is left: its root is gone */
        g_assert_cmpint(kill(r->root_pid, 0), <, 0);
        restore_done(r);
}

/* ---- comparing ---- */

/* Independent of forest_isomorphic(): through the mapping, every restored thread's chain has the
 * original's bytes and flags at every depth, and (original filter <-> restored filter) is a
 * bijection: two threads share a filter iff their originals did. */
static void assert_same_sharing(const Forest *a, const Forest *b, const PlanMapping *map) {
        g_autoptr(GHashTable) ab = g_hash_table_new(g_int64_hash, g_int64_equal);
        g_autoptr(GHashTable) ba = g_hash_table_new(g_int64_hash, g_int64_equal);

        for (size_t i = 0; i < map->n_threads; i++) {
                const Task *ta = forest_find_task(a, map->threads[i].a, NULL), *tb = forest_find_task(b, map->threads[i].b, NULL);
                const Filter *fa, *fb;

                g_assert_nonnull(ta);
                g_assert_nonnull(tb);
                g_assert_cmpint(ta->mode, ==, tb->mode);
                for (fa = ta->filter, fb = tb->filter; fa && fb; fa = fa->parent, fb = fb->parent) {
                        gpointer x;
                        g_assert_cmpuint(fa->len, ==, fb->len);
                        g_assert_cmpmem(fa->insns, fa->len * sizeof(struct sock_filter), fb->insns, fb->len * sizeof(struct sock_filter));
                        g_assert_cmpint(fa->log, ==, fb->log);
                        g_assert_cmpint(fa->wait_killable_recv, ==, fb->wait_killable_recv);
                        g_assert_cmpint(fa->has_listener, ==, fb->has_listener);
                        if (g_hash_table_lookup_extended(ab, &fa->id, NULL, &x))
                                g_assert_true(x == &fb->id);
                        else
                                g_hash_table_insert(ab, (gpointer) &fa->id, (gpointer) &fb->id);
                        if (g_hash_table_lookup_extended(ba, &fb->id, NULL, &x))
                                g_assert_true(x == &fa->id);
                        else
                                g_hash_table_insert(ba, (gpointer) &fb->id, (gpointer) &fa->id);
                }
                g_assert_true(!fa && !fb);
        }
}

/* Scan the restored tree and compare it with the snapshot, with the verification the daemon
 * will make (plan_verify) and the independent one above. */
static void assert_restored(const Forest *snapshot, RestoreRun *r) {
        g_autoptr(Forest) restored = scan(r->root_pid);
        g_auto(GStrv) diffs = NULL;
        json_t *nnp = json_object_get(r->ready, "no_new_privs_added");
        g_autofree pid_t *added = g_new0(pid_t, json_array_size(nnp) + 1);
        PlanVerifyOptions vo = { .nnp_added = added, .n_nnp_added = json_array_size(nnp) };
        bool ok = false;

        for (size_t i = 0; i < json_array_size(nnp); i++)
                added[i] = (pid_t) json_integer_value(json_array_get(nnp, i));
        g_assert_cmpuint(r->map.n_processes, ==, snapshot->n_processes);
        g_assert_cmpint(plan_verify(snapshot, restored, &r->map, &vo, &ok, &diffs), ==, 0);
        for (size_t i = 0; diffs[i]; i++)
                g_test_message("difference: %s", diffs[i]);
        g_assert_true(ok);
        assert_same_sharing(snapshot, restored, &r->map);
}

static void restore_and_check_as(const Forest *snapshot, uid_t uid) {
        RestoreRun r;

        restore_start(snapshot, uid, NULL, &r);
        if (r.error) {
                g_autofree char *s = json_dumps(r.error, 0);
                g_error("restore as uid %u refused: %s", uid, s);
        }
        assert_restored(snapshot, &r);
        restore_release(&r);
}

/* Snapshot the scenario's subtree, restore it as root and as nobody, compare each. */
static void check_scenario(Scenario *s) {
        g_autoptr(Forest) snapshot = scan(scenario_root_pid(s));

        tests_assert_forest_matches(snapshot, s, true);
        restore_and_check_as(snapshot, 0);
        restore_and_check_as(snapshot, NOBODY);
}

/* ---- the scenarios ---- */

static void test_fork_shares(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        scenario_fork(s, a);
        tests_fork_install(s, a, x.b, x.nb, 0);
        check_scenario(s);
        scenario_free(s);
}

/* Byte-identical filters in siblings are distinct objects, and stay so. */
static void test_identical_siblings(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        for (int i = 0; i < 3; i++)
                tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        check_scenario(s);
        scenario_free(s);
}

static void test_deep_chain(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        for (int i = 0; i < 40; i++) {
                g_assert_cmpint(i % 3 ? scenario_install(s, a, i % 2 ? x.b : x.c, i % 2 ? x.nb : x.nc, 0)
                                      : scenario_install_prctl(s, a, x.a, x.na), >=, 0);
                if (i % 10 == 9)
                        scenario_fork(s, a); /* children at depths 10, 20, 30, 40 */
        }
        check_scenario(s);
        scenario_free(s);
}

/* A filter of 4096 instructions, the kernel's maximum, below and above smaller ones. */
static void test_4096_instructions(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        g_autofree struct sock_filter *big = g_new0(struct sock_filter, PROG_MAX_INSNS);
        size_t n = scenario_filter_errno(big, SYS_getpriority, 5, PROG_MAX_INSNS - 7);
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);

        g_assert_cmpuint(n, ==, PROG_MAX_INSNS);
        g_assert_cmpint(scenario_install(s, a, big, n, 0), >=, 0);
        scenario_fork(s, a);
        g_assert_cmpint(scenario_install(s, a, x.b, x.nb, 0), >=, 0);
        check_scenario(s);
        scenario_free(s);
}

/* Threads synchronised with TSYNC, then one diverges. */
static void test_tsync(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x.a, x.na, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x.b, x.nb, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, x.c, x.nc, 0), >=, 0);
        check_scenario(s);
        scenario_free(s);
}

static void test_divergent_threads(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a);
        scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x.c, x.nc, 0), >=, 0);
        scenario_fork(s, t1); /* a child of t1's chain */
        check_scenario(s);
        scenario_free(s);
}

/* A middle process exits: its children, sharing its filter, are reparented to the root agent
 * (a subreaper) and one of them goes on with a filter of its own. */
static void test_orphans_under_subreaper(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, a), c = scenario_fork(s, a);
        scenario_fork(s, c);
        g_assert_cmpint(scenario_install(s, b, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_exit(s, a), ==, 0);
        check_scenario(s);
        scenario_free(s);
}

/* Orphans whose chains come from a thread of a process that lives on without that filter: one
 * lands beside that process (CLONE_PARENT), one two levels above it (reparenting). */
static void test_orphans_of_a_thread(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask y = scenario_fork(s, scenario_root(s));
        ScenarioTask p = scenario_fork(s, scenario_root(s)), q = scenario_fork(s, y);
        ScenarioTask p1 = scenario_thread(s, p), q1 = scenario_thread(s, q);
        g_assert_cmpint(scenario_install(s, p1, x.a, x.na, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, q1, x.b, x.nb, 0), >=, 0);
        ScenarioTask dp = scenario_fork(s, p1), dq = scenario_fork(s, q1);
        scenario_fork(s, dp);
        scenario_fork(s, dq);
        g_assert_cmpint(scenario_exit(s, dp), ==, 0); /* to the root agent, p's parent */
        g_assert_cmpint(scenario_exit(s, dq), ==, 0); /* to the root agent, q's grandparent */
        check_scenario(s);
        scenario_free(s);
}

/* Listener fds held by the installer, by its parent and by an unrelated process. */
static void test_listeners(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        struct sock_filter notify[8];
        size_t n = tests_filter_notify(notify, SYS_sysinfo);
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask sup = scenario_fork(s, scenario_root(s));
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        ScenarioTask a = scenario_fork(s, sup);
        int node = scenario_install(s, a, notify, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);

        g_assert_cmpint(node, >=, 0);
        g_assert_cmpint(scenario_share_listener(s, node, sup), >=, 0);
        g_assert_cmpint(scenario_share_listener(s, node, other), >=, 0);
        scenario_fork(s, a);
        check_scenario(s);
        scenario_free(s);
}

static void test_log_and_wait_killable(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, SECCOMP_FILTER_FLAG_LOG);
        ScenarioTask b = scenario_fork(s, a);
        g_assert_cmpint(scenario_install(s, b, x.b, x.nb,
                                         SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x.c, x.nc, SECCOMP_FILTER_FLAG_LOG), >=, 0);
        check_scenario(s);
        scenario_free(s);
}

/* Threads and processes in strict mode, beside filtered ones. */
static void test_strict(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask t1 = scenario_thread(s, a);
        g_assert_cmpint(scenario_strict(s, t1), ==, 0);
        g_assert_cmpint(scenario_install(s, a, x.a, x.na, 0), >=, 0);
        ScenarioTask b = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_strict(s, b), ==, 0);
        check_scenario(s);
        scenario_free(s);
}

static void test_no_new_privs(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask b = scenario_fork(s, a);
        g_assert_cmpint(scenario_no_new_privs(s, a), ==, 0);
        g_assert_cmpint(scenario_install(s, a, x.a, x.na, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, b, x.b, x.nb, 0), >=, 0);
        check_scenario(s);
        scenario_free(s);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        tests_name_hangs();
        tests_ensure_tracefs();
        g_test_add_func("/restore/fork-shares", test_fork_shares);
        g_test_add_func("/restore/identical-siblings", test_identical_siblings);
        g_test_add_func("/restore/deep-chain", test_deep_chain);
        g_test_add_func("/restore/4096-instructions", test_4096_instructions);
        g_test_add_func("/restore/tsync", test_tsync);
        g_test_add_func("/restore/divergent-threads", test_divergent_threads);
        g_test_add_func("/restore/orphans-under-subreaper", test_orphans_under_subreaper);
        g_test_add_func("/restore/orphans-of-a-thread", test_orphans_of_a_thread);
        g_test_add_func("/restore/listeners", test_listeners);
        g_test_add_func("/restore/log-and-wait-killable", test_log_and_wait_killable);
        g_test_add_func("/restore/strict", test_strict);
        g_test_add_func("/restore/no-new-privs", test_no_new_privs);
        int r = g_test_run();
        bpf_scanner_free(scanner);
        return r;
}
