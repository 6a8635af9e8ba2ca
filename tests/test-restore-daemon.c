/* test-restore-daemon.c: Restore(), ListRestores(), ReleaseRestore() and RestoreFinished in the real
 * sectreed on a private dbus-daemon, on the real kernel: every scenario restored as root and as
 * nobody, verified by the daemon and compared by the test; access, limits, failures, and what
 * happens when the caller leaves the bus. No stub survives any of them. */
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "observe/scanner.h"
#include "plan/plan-verify.h"
#include "restore-scenarios.h"
#include "proc-check.h"
#include "service/restore-proc-check.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot-format.h"
#include "tests-json.h"
#include "tests-util.h"

#define NOBODY 65534
#define RESTORE_CALL_TIMEOUT_USEC (120 * 1000000ULL)

static BpfScanner *scanner;

/* A child whose filter passes uname(2) to a user-notification listener, and gives the listener
 * to this process (a supervisor that never answers). Its pid; *ret_listener the fd held here. */
static pid_t start_notified_child(int *ret_listener) {
        int sv[2];
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_filter f[] = {
                        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_uname, 0, 1),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                };
                struct sock_fprog prog = { .len = G_N_ELEMENTS(f), .filter = f };
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        _exit(1);
                int fd = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
                char c = 0, control[CMSG_SPACE(sizeof(int))] = {};
                struct iovec iov = { .iov_base = &c, .iov_len = 1 };
                struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                                    .msg_controllen = sizeof(control) };
                struct cmsghdr *h = CMSG_FIRSTHDR(&m);
                *h = (struct cmsghdr) { .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS, .cmsg_len = CMSG_LEN(sizeof(int)) };
                memcpy(CMSG_DATA(h), &fd, sizeof(fd));
                if (fd < 0 || sendmsg(sv[1], &m, 0) != 1)
                        _exit(1);
                close(fd);
                for (;;)
                        pause();
        }
        char c, control[CMSG_SPACE(sizeof(int))] = {};
        struct iovec iov = { .iov_base = &c, .iov_len = 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        g_assert_cmpint(recvmsg(sv[0], &m, MSG_CMSG_CLOEXEC), ==, 1);
        memcpy(ret_listener, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
        close(sv[0]);
        close(sv[1]);
        return pid;
}


static Forest *scan(pid_t root) {
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        Forest *f = NULL;

        if (!scanner)
                g_assert_cmpint(bpf_scanner_new(&scanner), ==, 0);
        opts.root = root;
        g_assert_cmpint(bpf_scanner_scan(scanner, &opts, &f), ==, 0);
        return f;
}

/* ---- the calls ---- */

typedef struct Restored {
        uint64_t id;
        bool verified;
        char **differences;
        PlanMapping map;
        GArray *pidfds;       /* int */
        GArray *listener_fds; /* int */
        GArray *listener_ids; /* guint64 */
} Restored;

static void restored_done(Restored *r) {
        for (guint i = 0; r->pidfds && i < r->pidfds->len; i++)
                close(g_array_index(r->pidfds, int, i));
        for (guint i = 0; r->listener_fds && i < r->listener_fds->len; i++)
                close(g_array_index(r->listener_fds, int, i));
        if (r->pidfds)
                g_array_unref(r->pidfds);
        if (r->listener_fds)
                g_array_unref(r->listener_fds);
        if (r->listener_ids)
                g_array_unref(r->listener_ids);
        g_strfreev(r->differences);
        plan_mapping_done(&r->map);
        *r = (Restored) {};
}

static void read_pairs(sd_bus_message *reply, bool threads, PlanMapping *map) {
        uint32_t a, b;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uu)"), >, 0);
        while (sd_bus_message_read(reply, "(uu)", &a, &b) > 0)
                g_assert_cmpint(threads ? plan_mapping_add_thread(map, (pid_t) a, (pid_t) b)
                                        : plan_mapping_add_process(map, (pid_t) a, (pid_t) b), ==, 0);
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
}

static void read_reply(sd_bus_message *reply, Restored *r) {
        int fd, v;
        uint64_t lid;

        *r = (Restored) { .pidfds = g_array_new(false, false, sizeof(int)),
                          .listener_fds = g_array_new(false, false, sizeof(int)),
                          .listener_ids = g_array_new(false, false, sizeof(guint64)) };
        g_assert_cmpint(sd_bus_message_read(reply, "tb", &r->id, &v), >, 0);
        r->verified = v;
        g_assert_cmpint(sd_bus_message_read_strv(reply, &r->differences), >=, 0);
        if (!r->differences)
                r->differences = g_new0(char *, 1);
        read_pairs(reply, false, &r->map);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "h"), >, 0);
        while (sd_bus_message_read(reply, "h", &fd) > 0) {
                int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                g_assert_cmpint(copy, >=, 0);
                g_array_append_val(r->pidfds, copy);
        }
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        read_pairs(reply, true, &r->map);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(th)"), >, 0);
        while (sd_bus_message_read(reply, "(th)", &lid, &fd) > 0) {
                int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                g_assert_cmpint(copy, >=, 0);
                g_array_append_val(r->listener_fds, copy);
                g_array_append_val(r->listener_ids, lid);
        }
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
}

/* Restore(id, options): options is a list of keys each followed by its value, ended by NULL:
 * "exec" takes (size_t n, const uint32_t *pids, char ***argvs), "uids" a string, others an int. 0 with *r filled, or a negative errno with *error set. */
static int call_restore(sd_bus *bus, uint64_t id, Restored *r, sd_bus_error *error, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        const char *key;
        va_list ap;
        int k;

        g_assert_cmpint(sd_bus_message_new_method_call(bus, &m, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                       "Restore"), >=, 0);
        g_assert_cmpint(sd_bus_message_append(m, "t", id), >=, 0);
        g_assert_cmpint(sd_bus_message_open_container(m, 'a', "{sv}"), >=, 0);
        va_start(ap, error);
        while ((key = va_arg(ap, const char *))) {
                if (streq(key, "exec")) {
                        size_t n = va_arg(ap, size_t);
                        const uint32_t *pids = va_arg(ap, const uint32_t *);
                        char ***argvs = va_arg(ap, char ***);
                        g_assert_cmpint(sd_bus_message_open_container(m, 'e', "sv"), >=, 0);
                        g_assert_cmpint(sd_bus_message_append(m, "s", key), >=, 0);
                        g_assert_cmpint(sd_bus_message_open_container(m, 'v', "a{uas}"), >=, 0);
                        g_assert_cmpint(sd_bus_message_open_container(m, 'a', "{uas}"), >=, 0);
                        for (size_t i = 0; i < n; i++) {
                                g_assert_cmpint(sd_bus_message_open_container(m, 'e', "uas"), >=, 0);
                                g_assert_cmpint(sd_bus_message_append(m, "u", pids[i]), >=, 0);
                                g_assert_cmpint(sd_bus_message_append_strv(m, argvs[i]), >=, 0);
                                g_assert_cmpint(sd_bus_message_close_container(m), >=, 0);
                        }
                        for (int i = 0; i < 3; i++)
                                g_assert_cmpint(sd_bus_message_close_container(m), >=, 0);
                } else if (streq(key, "uids"))
                        g_assert_cmpint(sd_bus_message_append(m, "{sv}", key, "s", va_arg(ap, const char *)), >=, 0);
                else
                        g_assert_cmpint(sd_bus_message_append(m, "{sv}", key, "b", va_arg(ap, int)), >=, 0);
        }
        va_end(ap);
        g_assert_cmpint(sd_bus_message_close_container(m), >=, 0);
        k = sd_bus_call(bus, m, RESTORE_CALL_TIMEOUT_USEC, error, &reply);
        if (k >= 0)
                read_reply(reply, r);
        return k;
}

typedef struct ListedRestore {
        uint64_t id, snapshot;
        uint32_t owner, root, processes;
        bool verified;
        char state[32];
} ListedRestore;

static GArray *list_restores(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        GArray *a = g_array_new(false, true, sizeof(ListedRestore));
        ListedRestore x = {};
        const char *state;
        int v;

        if (bus_client_call(bus, "ListRestores", &error, &reply, "") < 0)
                g_error("ListRestores: %s", error.message);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(ttuuubs)"), >, 0);
        while (sd_bus_message_read(reply, "(ttuuubs)", &x.id, &x.snapshot, &x.owner, &x.root, &x.processes, &v,
                                   &state) > 0) {
                x.verified = v;
                g_strlcpy(x.state, state, sizeof(x.state));
                g_array_append_val(a, x);
        }
        return a;
}

static const ListedRestore *find_listed(GArray *a, uint64_t id) {
        for (guint i = 0; i < a->len; i++)
                if (g_array_index(a, ListedRestore, i).id == id)
                        return &g_array_index(a, ListedRestore, i);
        return NULL;
}

static void release_ok(sd_bus *bus, uint64_t id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ReleaseRestore", &error, NULL, "t", id) < 0)
                g_error("ReleaseRestore(%" PRIu64 "): %s: %s", id, error.name, error.message);
}

/* Every restored process (and the restore root) is gone: no stub survived. */
static void assert_gone(const Restored *r, pid_t root) {
        for (size_t i = 0; i < r->map.n_processes; i++)
                if (restore_process_alive(r->map.processes[i].b))
                        g_error("restored process %d (snapshot %d) survived", r->map.processes[i].b,
                                r->map.processes[i].a);
        if (root > 0)
                g_assert_false(restore_process_alive(root));
}

static void assert_verified(const Restored *r) {
        for (size_t i = 0; r->differences[i]; i++)
                g_test_message("difference: %s", r->differences[i]);
        g_assert_true(r->verified);
        g_assert_null(r->differences[0]);
}

static Forest *read_snapshot(GBytes *b) {
        gsize n;
        const void *data = g_bytes_get_data(b, &n);
        Forest *f = NULL;
        g_autofree char *error = NULL;
        if (snapshot_read_data(data, n, &f, &error) < 0)
                g_error("the exported snapshot cannot be read: %s", error);
        return f;
}

/* Restore snapshot id (its file read back as snapshot) through the daemon, see it verified by the
 * daemon and by a scan of the test's own, then release it and see no stub left. */
/* A snapshot of pid's subtree taken as root (named name, may be NULL), exported as JSON (into
 * *ret_json when asked) and read back. */
static Forest *snapshot_exported(sd_bus *bus, pid_t pid, const char *name, uint64_t *ret_id, GBytes **ret_json) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = bus_client_create_ok(bus, pid, name);
        g_autoptr(GBytes) json = bus_client_export_pipe(bus, id, "json", &error);
        g_assert_nonnull(json);
        Forest *snapshot = read_snapshot(json);
        *ret_id = id;
        if (ret_json)
                *ret_json = g_steal_pointer(&json);
        return snapshot;
}

static void restore_compare_release(sd_bus *bus, uint64_t id, const Forest *snapshot, const char *what) {
        _cleanup_(forest_freep) Forest *restored = NULL;
        g_auto(GStrv) diffs = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Restored r;
        bool ok = false;

        if (call_restore(bus, id, &r, &error, NULL) < 0)
                g_error("Restore of %s: %s: %s", what, error.name, error.message);
        assert_verified(&r);
        g_assert_cmpuint(r.map.n_processes, ==, snapshot->n_processes);
        g_autoptr(GArray) listed = list_restores(bus);
        g_assert_nonnull(find_listed(listed, r.id));
        g_assert_cmpstr(find_listed(listed, r.id)->state, ==, "ready");
        g_assert_true(find_listed(listed, r.id)->verified);
        r.map.root_pid = (pid_t) find_listed(listed, r.id)->root;
        restored = scan(r.map.root_pid);
        g_assert_cmpint(plan_verify(snapshot, restored, &r.map, NULL, &ok, &diffs), ==, 0);
        for (size_t i = 0; diffs[i]; i++)
                g_test_message("difference (test's scan): %s", diffs[i]);
        g_assert_true(ok);
        g_assert_cmpint(restore_proc_check(snapshot, &r.map, NULL, &ok, &diffs), ==, 0);
        for (size_t i = 0; diffs[i]; i++)
                g_test_message("difference (/proc): %s", diffs[i]);
        g_assert_true(ok);
        restore_assert_same_sharing(snapshot, restored, &r.map);
        release_ok(bus, r.id);
        assert_gone(&r, r.map.root_pid);
        restored_done(&r);
}

/* ---- every scenario, as root and as nobody ---- */

typedef struct NobodyRestore {
        GBytes *json;
        uint64_t roots_snapshot;
} NobodyRestore;

/* What nobody does with its own import of a scenario's snapshot: restore it, see it verified and
 * owned by nobody, release it; and what it may not do. */
static void nobody_restores(void *userdata) {
        NobodyRestore *c = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        gsize n;
        const void *data = g_bytes_get_data(c->json, &n);
        uint64_t mine = bus_client_import_pipe(bus, data, n, &error);
        Restored r;

        if (mine == 0)
                g_error("import as nobody: %s", error.message);
        /* root's snapshot is not there for nobody; nor are original uids or a pid namespace */
        g_assert_cmpint(call_restore(bus, c->roots_snapshot, &r, &error, NULL), <, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchSnapshot");
        g_assert_cmpint(call_restore(bus, mine, &r, &error, "uids", "original", NULL), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
        g_assert_cmpint(call_restore(bus, mine, &r, &error, "pid_namespace", true, NULL), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);

        if (call_restore(bus, mine, &r, &error, NULL) < 0)
                g_error("Restore as nobody: %s: %s", error.name, error.message);
        assert_verified(&r);
        for (size_t i = 0; i < r.map.n_processes; i++) {
                uid_t uid;
                gid_t gid;
                restore_process_ids(r.map.processes[i].b, &uid, &gid);
                g_assert_cmpuint(uid, ==, NOBODY);
                g_assert_cmpuint(gid, ==, NOBODY);
        }
        g_autoptr(GArray) listed = list_restores(bus);
        g_assert_cmpuint(listed->len, ==, 1);
        g_assert_cmpuint(find_listed(listed, r.id)->owner, ==, NOBODY);
        release_ok(bus, r.id);
        assert_gone(&r, 0);
        restored_done(&r);
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", &error, NULL, "t", mine), >=, 0);
        sd_bus_flush_close_unref(bus);
}

/* ---- the fixture ---- */

/* What the tests here share: the daemon on a private bus and a connection to it; for most, a
 * scenario whose root has a child a under x.a, built before the daemon starts and snapshotted
 * once it runs. Torn down in that order's reverse whatever the test did. */
typedef struct Fixture {
        bool may_run;
        TestFilters x;
        Scenario *s; /* NULL: the test builds its own */
        ScenarioTask a;
        BusFixture b;
        bool running; /* the daemon, until fixture_stop_daemon() */
        sd_bus *bus;
        uint64_t id; /* the scenario's snapshot */
} Fixture;

static void fixture_setup(Fixture *fx, gconstpointer data) {
        fx->may_run = tests_require_root();
}

/* The scenario, to which the test may add before fixture_start(); false if the test may not run. */
static bool fixture_scenario(Fixture *fx) {
        if (!fx->may_run)
                return false;
        fx->s = tests_scenario_with_filters(&fx->x);
        fx->a = tests_fork_install(fx->s, scenario_root(fx->s), fx->x.a, fx->x.na, 0);
        return true;
}

/* Start the daemon with args (may be NULL), connect, and snapshot the scenario if there is one;
 * false if the test may not run. */
static bool fixture_start(Fixture *fx, char **args) {
        if (!fx->may_run || !bus_fixture_start_all(&fx->b, args, NULL))
                return false;
        fx->running = true;
        fx->bus = bus_client_open();
        if (fx->s)
                fx->id = bus_client_create_ok(fx->bus, scenario_root_pid(fx->s), NULL);
        return true;
}

/* SIGTERM must make the daemon exit 0 (bus_fixture_finish()). */
static void fixture_stop_daemon(Fixture *fx) {
        if (fx->running)
                bus_fixture_finish(&fx->b);
        fx->running = false;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        fixture_stop_daemon(fx);
        fx->bus = sd_bus_flush_close_unref(fx->bus);
        if (fx->s)
                scenario_free(fx->s);
}

#define ADD_TEST(path, func) g_test_add(path, Fixture, NULL, fixture_setup, func, fixture_teardown)

static void restore_scenario_as_root(sd_bus *bus, Scenario *s, const char *name) {
        uint64_t id;
        g_autoptr(GBytes) json = NULL;
        g_autoptr(Forest) snapshot = snapshot_exported(bus, scenario_root_pid(s), name, &id, &json);

        tests_assert_forest_matches(snapshot, s, true);
        restore_compare_release(bus, id, snapshot, name);

        NobodyRestore c = { .json = json, .roots_snapshot = id };
        int status = tests_as_nobody(nobody_restores, &c);
        if (status != 0)
                g_error("the part of %s run as nobody failed (status %d)", name, status);
}

static void test_scenarios(Fixture *fx, gconstpointer data) {
        if (!fixture_start(fx, NULL))
                return;
        sd_bus *bus = fx->bus;

        for (size_t i = 0; i < restore_scenarios_n; i++) {
                TestFilters x;
                Scenario *s = tests_scenario_with_filters(&x);
                g_test_message("scenario %s", restore_scenarios[i].name);
                restore_scenarios[i].build(s, &x);
                restore_scenario_as_root(bus, s, restore_scenarios[i].name);
                scenario_free(s);
        }
        g_autoptr(GArray) none = list_restores(bus);
        g_assert_cmpuint(none->len, ==, 0);
}

/* ---- leaving the bus, releasing, failing, limits ---- */

static char *format_finished(sd_bus_message *m) {
        uint64_t id;
        uint32_t owner;
        const char *reason;
        if (!sd_bus_message_is_signal(m, BUS_CLIENT_IFACE, "RestoreFinished") ||
            sd_bus_message_read(m, "tus", &id, &owner, &reason) < 0)
                return NULL;
        return g_strdup_printf("RestoreFinished %" PRIu64 " %u %s", id, owner, reason);
}

/* A restore ends with its caller's connection, unless it asked to be kept: then ReleaseRestore ends
 * it. RestoreFinished says why each time. */
static void test_caller_leaves(Fixture *fx, gconstpointer data) {
        if (!fixture_scenario(fx))
                return;
        scenario_thread(fx->s, fx->a);
        if (!fixture_start(fx, NULL))
                return;
        sd_bus *bus = fx->bus;
        uint64_t id = fx->id;
        BusSignalLog log;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Restored r;

        bus_signal_log_start(&log, bus, format_finished);

        /* released when the caller leaves */
        sd_bus *caller = bus_client_open();
        if (call_restore(caller, id, &r, &error, NULL) < 0)
                g_error("Restore: %s", error.message);
        g_autoptr(GArray) one = list_restores(bus);
        g_assert_cmpuint(one->len, ==, 1);
        pid_t root = (pid_t) g_array_index(one, ListedRestore, 0).root;
        sd_bus_flush_close_unref(caller);
        bus_signal_log_assert(&log, bus, "RestoreFinished %" PRIu64 " 0 caller-left", r.id);
        assert_gone(&r, root);
        restored_done(&r);

        /* kept: it outlives its caller, until ReleaseRestore */
        caller = bus_client_open();
        if (call_restore(caller, id, &r, &error, "keep", true, NULL) < 0)
                g_error("Restore: %s", error.message);
        sd_bus_flush_close_unref(caller);
        g_autoptr(GArray) kept = list_restores(bus);
        g_assert_nonnull(find_listed(kept, r.id));
        root = (pid_t) find_listed(kept, r.id)->root;
        g_assert_true(restore_process_alive(root));
        for (size_t i = 0; i < r.map.n_processes; i++)
                g_assert_true(restore_process_alive(r.map.processes[i].b));
        release_ok(bus, r.id);
        assert_gone(&r, root);
        bus_signal_log_assert(&log, bus, "RestoreFinished %" PRIu64 " 0 released", r.id);
        g_assert_cmpint(bus_client_call(bus, "ReleaseRestore", &error, NULL, "t", r.id), <, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchRestore");
        restored_done(&r);

        /* a kept restore ends with the daemon too */
        if (call_restore(bus, id, &r, &error, "keep", true, NULL) < 0)
                g_error("Restore: %s", error.message);
        g_autoptr(GArray) last = list_restores(bus);
        root = (pid_t) find_listed(last, r.id)->root;
        g_ptr_array_unref(log.lines);
        fixture_stop_daemon(fx);
        for (int i = 0; i < 500 && restore_process_alive(root); i++)
                g_usleep(10000);
        assert_gone(&r, root);
        restored_done(&r);
}

/* A snapshot the planner refuses (a thread put by TSYNC under a filter that forbids every way to
 * clone): RestoreFailed names the stage and the step, and nothing is left. An exec of a command
 * that does not exist fails at its start. Options of the wrong type or unknown are refused. */
static void test_failures(Fixture *fx, gconstpointer data) {
        const int clones[] = { SYS_clone, SYS_clone3, SYS_fork, SYS_vfork };
        struct sock_filter no_clone[8];
        size_t n = restore_filter_for_calls(no_clone, clones, ELEMENTSOF(clones), SECCOMP_RET_ERRNO | EPERM);
        if (!fixture_scenario(fx))
                return;
        g_assert_cmpint(scenario_install(fx->s, scenario_thread(fx->s, fx->a), no_clone, n, SECCOMP_FILTER_FLAG_TSYNC),
                        >=, 0);
        if (!fixture_start(fx, NULL))
                return;
        sd_bus *bus = fx->bus;
        uint64_t id = fx->id;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Restored r;

        g_assert_cmpint(call_restore(bus, id, &r, &error, NULL), <, 0);
        g_test_message("%s: %s", error.name, error.message);
        g_assert_cmpstr(error.name, ==, "org.sectree1.Error.RestoreFailed");
        g_assert_nonnull(strstr(error.message, "plan: "));
        g_assert_nonnull(strstr(error.message, "clone(2) gets ERRNO(1)"));
        sd_bus_error_free(&error);
        g_autoptr(GArray) none = list_restores(bus);
        g_assert_cmpuint(none->len, ==, 0);

        g_assert_cmpint(call_restore(bus, 999, &r, &error, NULL), <, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchSnapshot");
        g_assert_cmpint(call_restore(bus, id, &r, &error, "colour", true, NULL), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpint(call_restore(bus, id, &r, &error, "uids", "someone", NULL), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        char *argv[] = { (char *) "true", NULL }, **argvs[] = { argv };
        const uint32_t pids[] = { 1 };
        g_assert_cmpint(call_restore(bus, id, &r, &error, "exec", (size_t) 1, pids, argvs, NULL), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        /* a caller's long string comes back in the error cut short, where a character ends */
        g_autofree char *longs = g_strnfill(100 * 1024, 'x');
        memcpy(longs + 79, "\xc3\xa9", 2); /* 'é' across the cut at 80 bytes: cut before it */
        g_assert_cmpint(call_restore(bus, id, &r, &error, "uids", longs, NULL), <, 0);
        g_autofree char *cut = g_strdup_printf("Option \"uids\" is \"caller\" or \"original\", not \"%.*s...\".", 79, longs);
        g_assert_cmpstr(error.message, ==, cut);
        sd_bus_error_free(&error);
        g_assert_cmpint(call_restore(bus, id, &r, &error, longs, true, NULL), <, 0);
        g_autofree char *cut_key = g_strdup_printf("Unknown option \"%.*s...\".", 79, longs);
        g_assert_cmpstr(error.message, ==, cut_key);
        sd_bus_error_free(&error);
        /* a process named twice, not one after the other */
        const uint32_t twice[] = { 5, 1, 5 };
        char **argvs3[] = { argv, argv, argv };
        g_assert_cmpint(call_restore(bus, id, &r, &error, "exec", (size_t) 3, twice, argvs3, NULL), <, 0);
        g_assert_cmpstr(error.message, ==, "Option \"exec\" names process 5 twice.");
        sd_bus_error_free(&error);
        /* The entries are read on the daemon's event loop: no more than a snapshot's processes
         * (their duplicates were looked for among all before, in time that grows with their
         * square: 160,000 entries held the loop 14 s). */
        size_t many = SNAPSHOT_MAX_PROCESSES + 1;
        g_autofree uint32_t *many_pids = g_new(uint32_t, many);
        g_autofree char ***many_argvs = g_new(char **, many);
        for (size_t i = 0; i < many; i++) {
                many_pids[i] = (uint32_t) i + 1;
                many_argvs[i] = argv;
        }
        g_assert_cmpint(call_restore(bus, id, &r, &error, "exec", many, many_pids, many_argvs, NULL), <, 0);
        g_autofree char *want = g_strdup_printf("Option \"exec\" names more than %u processes, the most a snapshot has.",
                                                SNAPSHOT_MAX_PROCESSES);
        g_assert_cmpstr(error.message, ==, want);
        sd_bus_error_free(&error);
}

/* --restore-executor=unit on a bus without systemd: StartTransientUnit has nobody to answer it.
 * The error is ExecutorUnitFailed naming the unit and the bus's answer; nothing is left, and the
 * daemon keeps answering. (The unit that does start: tests/test-unit-systemd.sh.) */
static void test_unit_refused(Fixture *fx, gconstpointer data) {
        char *args[] = { (char *) "--restore-executor=unit", NULL };
        if (!fixture_scenario(fx) || !fixture_start(fx, args))
                return;
        sd_bus *bus = fx->bus;
        uint64_t id = fx->id;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autofree char *unit = g_strdup_printf("sectree-restore-%d-1.service", (int) fx->b.daemon_pid);
        Restored r;

        g_assert_cmpint(call_restore(bus, id, &r, &error, NULL), <, 0);
        g_test_message("%s: %s", error.name, error.message);
        g_assert_cmpstr(error.name, ==, "org.sectree1.Error.ExecutorUnitFailed");
        g_assert_nonnull(strstr(error.message, unit));
        g_assert_nonnull(strstr(error.message, "org.freedesktop.DBus.Error.ServiceUnknown"));
        sd_bus_error_free(&error);
        g_autoptr(GArray) none = list_restores(bus);
        g_assert_cmpuint(none->len, ==, 0);
        g_assert_cmpuint(bus_client_create_ok(bus, scenario_root_pid(fx->s), NULL), >, id);
}

/* nobody may hold RESTORES_MAX_PER_UID (4) restores at once. */
static void nobody_limits(void *userdata) {
        GBytes *json = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        gsize n;
        const void *data = g_bytes_get_data(json, &n);
        uint64_t mine = bus_client_import_pipe(bus, data, n, &error);
        Restored r[5];

        g_assert_cmpuint(mine, >, 0);
        for (int i = 0; i < 4; i++)
                if (call_restore(bus, mine, &r[i], &error, "verify", false, NULL) < 0)
                        g_error("Restore %d: %s", i, error.message);
        g_assert_cmpint(call_restore(bus, mine, &r[4], &error, NULL), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
        g_assert_false(r[0].verified); /* not asked for */
        release_ok(bus, r[0].id);
        assert_gone(&r[0], 0);
        if (call_restore(bus, mine, &r[4], &error, NULL) < 0)
                g_error("Restore after a release: %s", error.message);
        for (int i = 0; i < 5; i++)
                restored_done(&r[i]);
        sd_bus_flush_close_unref(bus); /* leaving releases the others */
}

static void test_limits(Fixture *fx, gconstpointer data) {
        if (!fixture_scenario(fx) || !fixture_start(fx, NULL))
                return;
        sd_bus *bus = fx->bus;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GBytes) json = bus_client_export_pipe(bus, fx->id, "json", &error);

        g_assert_cmpint(tests_as_nobody(nobody_limits, json), ==, 0);
        for (int i = 0; i < 500; i++) {
                g_autoptr(GArray) l = list_restores(bus);
                if (l->len == 0)
                        break;
                g_usleep(10000);
        }
        g_autoptr(GArray) none = list_restores(bus);
        g_assert_cmpuint(none->len, ==, 0);
}

/* ---- random histories ---- */

/* Snapshot, restore through the daemon, compare (the daemon's verification and the test's own),
 * release: for one history played from seed. */
static void restore_history(sd_bus *bus, uint64_t seed) {
        Scenario *s = restore_history_play(seed);
        uint64_t id;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(Forest) snapshot = snapshot_exported(bus, scenario_root_pid(s), NULL, &id, NULL);
        g_autofree char *what = g_strdup_printf("seed %" PRIu64, seed);

        g_test_message("seed %" PRIu64 ": %zu processes, %zu filters, %zu listeners", seed, snapshot->n_processes,
                       snapshot->n_filters, snapshot->n_listeners);
        restore_compare_release(bus, id, snapshot, what);
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", &error, NULL, "t", id), >=, 0);
        scenario_free(s);
}

/* A bounded number of random histories per run ($SECTREE_RESTORE_DAEMON_SEEDS, default 40; one
 * again with SECTREE_RESTORE_SEED), each seed printed before it is played. */
static void test_random_histories(Fixture *fx, gconstpointer data) {
        if (!fixture_start(fx, NULL))
                return;
        const char *one = g_getenv("SECTREE_RESTORE_SEED"), *count = g_getenv("SECTREE_RESTORE_DAEMON_SEEDS");
        uint64_t first = one ? g_ascii_strtoull(one, NULL, 10) : 1;
        uint64_t n = one ? 1 : count ? g_ascii_strtoull(count, NULL, 10) : 40;

        for (uint64_t seed = first; seed < first + n; seed++) {
                g_test_message("seed %" PRIu64 " (replay: SECTREE_RESTORE_SEED=%" PRIu64 ")", seed, seed);
                restore_history(fx->bus, seed);
        }
}

/* ---- behaviour kept ---- */

/* The pidfd the reply gives for snapshot process pid. */
static int reply_pidfd(const Restored *r, pid_t pid) {
        for (size_t i = 0; i < r->map.n_processes; i++)
                if (r->map.processes[i].a == pid)
                        return g_array_index(r->pidfds, int, i);
        g_error("the reply has no process %d", pid);
}

/* ERRNO, USER_NOTIF (answered through the listener fd Restore returns), KILL and ALLOW come out
 * the same in the restored tasks, exec'd by the daemon's restore, as in the originals. */
static void test_behaviour_kept(Fixture *fx, gconstpointer data) {
        const int killed[] = { SYS_personality };
        struct sock_filter notify[8], kill_insns[4];
        size_t nn = tests_filter_notify(notify, SYS_sysinfo);
        size_t nk = restore_filter_for_calls(kill_insns, killed, ELEMENTSOF(killed), SECCOMP_RET_KILL_PROCESS);
        ScenarioTask c[ELEMENTSOF(restore_probe_calls)];
        uint32_t pids[ELEMENTSOF(restore_probe_calls)];
        char **argvs[ELEMENTSOF(restore_probe_calls)];
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Restored r;
        if (!fixture_scenario(fx))
                return;
        Scenario *s = fx->s;
        ScenarioTask a = fx->a;
        int node = scenario_install(s, a, notify, nn, SECCOMP_FILTER_FLAG_NEW_LISTENER);

        g_assert_cmpint(node, >=, 0);
        g_assert_cmpint(scenario_install(s, a, kill_insns, nk, 0), >=, 0);
        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++)
                c[i] = scenario_fork(s, a);
        if (!fixture_start(fx, NULL))
                return;
        sd_bus *bus = fx->bus;
        uint64_t id = fx->id;
        g_autofree char *dir = g_dir_make_tmp("sectree-restore-XXXXXX", NULL);

        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++) {
                pids[i] = (uint32_t) scenario_task(s, c[i])->tgid;
                argvs[i] = g_new0(char *, 4);
                argvs[i][0] = g_strdup(g_getenv("SECTREE_RESTORE_PROBE"));
                argvs[i][1] = restore_probe_path(dir, "restored", i);
                argvs[i][2] = g_strdup_printf("%d", restore_probe_calls[i]);
        }
        if (call_restore(bus, id, &r, &error, "exec", ELEMENTSOF(restore_probe_calls), pids, argvs, NULL) < 0)
                g_error("Restore: %s: %s", error.name, error.message);
        assert_verified(&r);
        g_assert_cmpuint(r.listener_fds->len, ==, 1);
        restore_answer_notification(g_array_index(r.listener_fds, int, 0), SYS_sysinfo);
        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++)
                restore_wait_readable(reply_pidfd(&r, (pid_t) pids[i]), "a restored probe to end");

        /* the originals, under the original listener */
        _cleanup_close_ int installer_fd = pidfd_open(scenario_task(s, a)->tgid, 0);
        _cleanup_close_ int listener = (int) syscall(SYS_pidfd_getfd, installer_fd, scenario_node(s, node)->listener_fd, 0);
        g_assert_cmpint(listener, >=, 0);
        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++) {
                g_autofree char *path = restore_probe_path(dir, "original", i), *nr = g_strdup_printf("%d", restore_probe_calls[i]);
                _cleanup_close_ int pidfd = pidfd_open(scenario_task(s, c[i])->tgid, 0);
                char *argv[] = { (char *) g_getenv("SECTREE_RESTORE_PROBE"), path, nr, NULL };
                g_assert_cmpint(scenario_exec(s, c[i], argv), ==, 0);
                if (restore_probe_calls[i] == SYS_sysinfo)
                        restore_answer_notification(listener, SYS_sysinfo);
                restore_wait_readable(pidfd, "an original probe to end");
        }
        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++) {
                g_autofree char *po = restore_probe_path(dir, "original", i), *pr = restore_probe_path(dir, "restored", i);
                g_autofree char *o = NULL, *rr = NULL;
                g_assert_true(g_file_get_contents(po, &o, NULL, NULL));
                g_assert_true(g_file_get_contents(pr, &rr, NULL, NULL));
                g_test_message("syscall %d: original \"%s\", restored \"%s\"", restore_probe_calls[i], o, rr);
                g_assert_cmpstr(o, ==, rr);
                g_assert_true(g_str_has_prefix(o, "call "));
                (void) unlink(po);
                (void) unlink(pr);
                g_strfreev(argvs[i]);
        }
        release_ok(bus, r.id);
        restored_done(&r);
        (void) rmdir(dir);
}

/* ---- real software ---- */

/* A filter file for bwrap's --add-seccomp-fd: calls nr get ERRNO(err). */
static char *write_errno_filter(const char *dir, const char *name, int nr, int err) {
        struct sock_filter insns[4];
        size_t n = restore_filter_for_calls(insns, &nr, 1, SECCOMP_RET_ERRNO | (uint32_t) err);
        char *path = g_build_filename(dir, name, NULL);
        g_assert_true(g_file_set_contents(path, (const char *) insns, (gssize) (n * sizeof(insns[0])), NULL));
        return path;
}

/* The deepest chain in the subtree of root, and how many processes of it have one. */
static unsigned deepest_chain(pid_t root, size_t *ret_filtered) {
        g_autoptr(Forest) f = scan(root);
        unsigned deepest = 0;
        *ret_filtered = 0;
        for (size_t i = 0; i < f->n_processes; i++) {
                bool filtered = false;
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        const Filter *x = f->processes[i]->threads[j].filter;
                        if (x) {
                                deepest = MAX(deepest, x->depth);
                                filtered = true;
                        }
                }
                *ret_filtered += filtered;
        }
        return deepest;
}

static void sandbox_setup(gpointer userdata) {
        (void) setsid(); /* its own process group: stop_sandbox() kills all of it */
        tests_die_with_parent(userdata);
}

/* Start sh -c script in its own session and wait until its subtree has a chain of depth want (at
 * least) in want_filtered processes. */
static pid_t start_sandbox(const char *script, unsigned want, size_t want_filtered) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) script, NULL };
        GPid pid;
        g_autoptr(GError) error = NULL;
        size_t filtered = 0;

        if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, sandbox_setup, NULL, &pid, &error))
                g_error("cannot start %s: %s", script, error->message);
        for (int i = 0; i < 1000; i++) {
                if (deepest_chain(pid, &filtered) >= want && filtered >= want_filtered) {
                        g_autofree char *what = g_strdup_printf("sandbox %d", (int) pid);
                        tests_fail_point("restore-sandbox", what);
                        return pid;
                }
                g_usleep(10000);
        }
        g_error("the sandbox of \"%s\" never had %zu processes under %u filters", script, want_filtered, want);
}

static void stop_sandbox(pid_t pid) {
        (void) kill(-pid, SIGKILL);
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

/* Root restores snapshot id with its original uids: verified, and every restored process runs as
 * its original did. */
static void restore_original_uids(sd_bus *bus, uint64_t id, const Forest *snapshot, const char *what) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Restored r;

        if (call_restore(bus, id, &r, &error, "uids", "original", NULL) < 0)
                g_error("Restore of %s with its original uids: %s: %s", what, error.name, error.message);
        assert_verified(&r);
        for (size_t i = 0; i < r.map.n_processes; i++) {
                const Process *sp = forest_find_process(snapshot, r.map.processes[i].a);
                uid_t uid;
                gid_t gid;
                restore_process_ids(r.map.processes[i].b, &uid, &gid);
                g_assert_cmpuint(uid, ==, sp->uid);
                g_assert_cmpuint(gid, ==, sp->gid);
        }
        release_ok(bus, r.id);
        restored_done(&r);
}

/* Snapshot of the sandbox through the daemon, checked against /proc, restored as root and as nobody
 * and verified by the daemon and by the test (its scan and /proc). */
static void restore_sandbox(sd_bus *bus, pid_t pid, const char *what) {
        uint64_t id;
        g_autoptr(GBytes) json = NULL;
        g_autoptr(Forest) snapshot = snapshot_exported(bus, pid, what, &id, &json);

        g_test_message("%s: %zu processes, %zu filters", what, snapshot->n_processes, snapshot->n_filters);
        tests_assert_snapshot_is_proc(snapshot, what);
        restore_compare_release(bus, id, snapshot, what);
        restore_original_uids(bus, id, snapshot, what);
        NobodyRestore c = { .json = json, .roots_snapshot = id };
        int status = tests_as_nobody(nobody_restores, &c);
        if (status != 0)
                g_error("%s restored as nobody failed (status %d)", what, status);
}

/* bubblewrap with two --add-seccomp-fd filters, and inside it, on one branch, a nested bwrap
 * adding a third; and a firejail sandbox with its own filters. */
static void test_real_sandboxes(Fixture *fx, gconstpointer data) {
        if (!fx->may_run)
                return;
        g_autofree char *dir = g_dir_make_tmp("sectree-sandbox-XXXXXX", NULL);
        g_autofree char *f1 = write_errno_filter(dir, "f1", SYS_getpriority, EPERM);
        g_autofree char *f2 = write_errno_filter(dir, "f2", SYS_sysinfo, ENOENT);
        g_autofree char *f3 = write_errno_filter(dir, "f3", SYS_personality, ESRCH);
        g_autofree char *bwrap = g_strdup_printf(
                "exec bwrap --dev-bind / / --die-with-parent --add-seccomp-fd 7 --add-seccomp-fd 8 "
                "/bin/sh -c 'sleep 1000 & bwrap --dev-bind / / --die-with-parent --add-seccomp-fd 9 sleep 1000 9<%s & wait' "
                "7<%s 8<%s",
                f3, f1, f2);
        if (!fixture_start(fx, NULL))
                return;
        sd_bus *bus = fx->bus;

        pid_t sandbox = start_sandbox(bwrap, 3, 4);
        restore_sandbox(bus, sandbox, "bubblewrap");
        stop_sandbox(sandbox);

        if (!g_find_program_in_path("firejail"))
                g_error("firejail is not installed (scripts/lib.sh installs it)");
        sandbox = start_sandbox("exec firejail --quiet --noprofile --seccomp=getpriority sleep 1000", 1, 1);
        g_usleep(300000); /* firejail's last exec */
        restore_sandbox(bus, sandbox, "firejail");
        stop_sandbox(sandbox);
        (void) unlink(f1);
        (void) unlink(f2);
        (void) unlink(f3);
        (void) rmdir(dir);
}

/* Every process below pid (pid included), children before parents' exit: for services whose
 * connection processes leave the sandbox's session (sshd's and vsftpd's call setsid()). */
static void kill_tree(pid_t pid, GArray *killed) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/children", pid, pid), *children = NULL;

        (void) kill(pid, SIGSTOP);
        if (g_file_get_contents(path, &children, NULL, NULL)) {
                g_auto(GStrv) v = g_strsplit(children, " ", -1);
                for (size_t i = 0; v[i]; i++)
                        if (atoi(v[i]) > 0)
                                kill_tree(atoi(v[i]), killed);
        }
        (void) kill(pid, SIGKILL);
        g_array_append_val(killed, pid);
}

/* Connect to 127.0.0.1:port while the service starts (10 s at most) and send greeting (may be
 * NULL); the connection stays open. */
static int connect_loopback(int port, const char *greeting) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };

        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        for (int i = 0; i < 1000; i++) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                g_assert_cmpint(fd, >=, 0);
                if (connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0) {
                        if (greeting)
                                g_assert_cmpint(write(fd, greeting, strlen(greeting)), ==, (ssize_t) strlen(greeting));
                        return fd;
                }
                close(fd);
                g_usleep(10000);
        }
        g_error("nothing listens on 127.0.0.1:%d", port);
}

/* Start sh -c script in its own session (it dies with the test); with port, connect there and send
 * greeting; then wait until its subtree has a chain of depth want in want_filtered processes. */
static pid_t start_service(const char *script, int port, const char *greeting, unsigned want, size_t want_filtered,
                           int *ret_conn) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) script, NULL };
        g_autoptr(GError) error = NULL;
        size_t filtered = 0;
        GPid pid;

        if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, sandbox_setup, NULL, &pid, &error))
                g_error("cannot start %s: %s", script, error->message);
        *ret_conn = port > 0 ? connect_loopback(port, greeting) : -1;
        for (int i = 0; i < 2000; i++) {
                if (deepest_chain(pid, &filtered) >= want && filtered >= want_filtered)
                        return pid;
                g_usleep(10000);
        }
        g_error("\"%s\" never had %zu processes under %u filters", script, want_filtered, want);
}

static void stop_service(pid_t pid, int conn) {
        g_autoptr(GArray) killed = g_array_new(false, false, sizeof(pid_t));

        kill_tree(pid, killed); /* first: closing the connection ends processes that leave orphans */
        if (conn >= 0)
                close(conn);
        (void) kill(-pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        for (guint i = 0; i < killed->len; i++) { /* the test is their subreaper: reap them */
                pid_t p = g_array_index(killed, pid_t, i);
                for (int k = 0; k < 500; k++) { /* until reaped here, or gone (reaped by its parent) */
                        if (waitpid(p, NULL, WNOHANG) == p || kill(p, 0) < 0)
                                break;
                        g_usleep(10000);
                }
        }
}

static void require_program(const char *path) {
        if (access(path, X_OK) < 0)
                g_error("%s is not installed (scripts/lib.sh installs it): %m", path);
}

static char *write_file(const char *dir, const char *name, const char *text) {
        char *path = g_build_filename(dir, name, NULL);
        g_assert_true(g_file_set_contents(path, text, -1, NULL));
        return path;
}

/* sshd with a pre-auth connection: its [net] child sets no_new_privs and a filter that forbids
 * prctl; restored as root it must have no_new_privs first. */
static void debian_sshd(sd_bus *bus, const char *dir) {
        g_autofree char *key = g_build_filename(dir, "hostkey", NULL);
        g_autofree char *keygen = g_strdup_printf("ssh-keygen -q -t ed25519 -N '' -f %s", key);
        g_autofree char *script = g_strdup_printf("exec /usr/sbin/sshd -D -e -p 22722 -o ListenAddress=127.0.0.1 "
                                                  "-o PidFile=none -o UsePAM=no -h %s >%s/sshd.log 2>&1", key, dir);
        int status = -1, conn;

        require_program("/usr/sbin/sshd");
        g_assert_true(g_spawn_command_line_sync(keygen, NULL, NULL, &status, NULL));
        g_assert_cmpint(status, ==, 0);
        (void) mkdir("/run/sshd", 0755); /* its privilege separation directory */
        pid_t pid = start_service(script, 22722, "SSH-2.0-OpenSSH_9.2p1 sectree-test\r\n", 1, 1, &conn);
        restore_sandbox(bus, pid, "sshd");
        stop_service(pid, conn);
}

/* vsftpd with a connection: its pre-login process's filter kills futex and exit. */
static void debian_vsftpd(sd_bus *bus, const char *dir) {
        g_autofree char *conf = g_strdup_printf(
                "listen=YES\nlisten_ipv6=NO\nlisten_address=127.0.0.1\nlisten_port=21721\nbackground=NO\n"
                "anonymous_enable=NO\nlocal_enable=YES\nseccomp_sandbox=YES\nsecure_chroot_dir=/var/run/vsftpd/empty\n"
                "pam_service_name=vsftpd\nvsftpd_log_file=%s/vsftpd.log\n", dir);
        g_autofree char *path = write_file(dir, "vsftpd.conf", conf);
        g_autofree char *script = g_strdup_printf("exec /usr/sbin/vsftpd %s >%s/vsftpd.out 2>&1", path, dir);
        int conn;

        require_program("/usr/sbin/vsftpd");
        g_assert_cmpint(g_mkdir_with_parents("/var/run/vsftpd/empty", 0755), ==, 0);
        pid_t pid = start_service(script, 21721, NULL, 1, 1, &conn);
        restore_sandbox(bus, pid, "vsftpd");
        stop_service(pid, conn);
}

/* tor with its sandbox: no_new_privs and a filter on every thread that forbids prctl. */
static void debian_tor(sd_bus *bus, const char *dir) {
        g_autofree char *data = g_build_filename(dir, "tor", NULL);
        g_autofree char *script = g_strdup_printf(
                "exec /usr/sbin/tor --SocksPort 127.0.0.1:19751 --DataDirectory %s --Sandbox 1 --RunAsDaemon 0 "
                "--DisableNetwork 1 --Log 'notice file %s/tor.log' >%s/tor.out 2>&1", data, dir, dir);
        int conn;

        require_program("/usr/sbin/tor");
        g_assert_cmpint(g_mkdir_with_parents(data, 0700), ==, 0);
        pid_t pid = start_service(script, 0, NULL, 1, 1, &conn);
        g_usleep(500000); /* its threads start after the filter */
        restore_sandbox(bus, pid, "tor");
        stop_service(pid, conn);
}

/* chronyd with its seccomp filter (-F 1), not touching the clock (-x), without network ports; its
 * helper process was forked before the filter. */
static void debian_chrony(sd_bus *bus, const char *dir) {
        g_autofree char *conf = g_strdup_printf("cmdport 0\nport 0\npidfile %s/chronyd.pid\n", dir);
        g_autofree char *path = write_file(dir, "chrony.conf", conf);
        g_autofree char *script = g_strdup_printf("exec /usr/sbin/chronyd -d -x -F 1 -f %s >%s/chronyd.log 2>&1", path, dir);
        int conn;

        require_program("/usr/sbin/chronyd");
        g_assert_cmpint(chmod(dir, 0755), ==, 0);
        pid_t pid = start_service(script, 0, NULL, 1, 1, &conn);
        restore_sandbox(bus, pid, "chrony");
        stop_service(pid, conn);
}

/* Real sandboxes installed from Debian, each restored as root and as nobody, verified by the daemon
 * and checked by the test against its scan and /proc: sshd with a pre-auth child, vsftpd, tor and
 * chrony. */
static void test_debian_sandboxes(Fixture *fx, gconstpointer data) {
        if (!fixture_start(fx, NULL))
                return;
        g_autofree char *dir = g_dir_make_tmp("sectree-debian-XXXXXX", NULL);
        g_autofree char *rm = g_strdup_printf("rm -rf %s", dir);

        /* the services' connection processes leave their session: they come back to the test */
        g_assert_cmpint(prctl(PR_SET_CHILD_SUBREAPER, 1), ==, 0);
        debian_sshd(fx->bus, dir);
        debian_vsftpd(fx->bus, dir);
        debian_tor(fx->bus, dir);
        debian_chrony(fx->bus, dir);
        g_assert_cmpint(prctl(PR_SET_CHILD_SUBREAPER, 0), ==, 0);
        (void) g_spawn_command_line_sync(rm, NULL, NULL, NULL, NULL);
}

/* ---- sectreectl ---- */

/* sectreectl ARGS... (as nobody when asked); returns the exit status. */
static int ctl(BusFixture *b, bool as_nobody, char **out, char **err, const char *const *args) {
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), args);
        return bus_fixture_run(b, as_nobody, (char **) argv->pdata, out, err);
}

#define ARGS(...) ((const char *const[]) { __VA_ARGS__, NULL })

static bool json_has_exactly(json_t *o, const char *const *keys) {
        size_t n = 0;
        for (; keys[n]; n++)
                if (!json_object_get(o, keys[n]))
                        return false;
        return json_object_size(o) == n;
}

/* plan ID, restore ID|FILE (--json exactly as documented, --exec), restores, release (the restore
 * outlives sectreectl until it is released), and run --like. */
static void test_sectreectl(Fixture *fx, gconstpointer data) {
        struct sock_filter notify[8];
        size_t nn = tests_filter_notify(notify, SYS_sysinfo);
        if (!fixture_scenario(fx))
                return;
        Scenario *s = fx->s;
        ScenarioTask a = fx->a;
        g_assert_cmpint(scenario_install(s, a, notify, nn, SECCOMP_FILTER_FLAG_NEW_LISTENER), >=, 0);
        ScenarioTask child = scenario_fork(s, a);
        if (!fixture_start(fx, NULL))
                return;
        sd_bus *bus = fx->bus;
        uint64_t id = fx->id;
        BusFixture *b = &fx->b;
        g_autofree char *ids = g_strdup_printf("%" PRIu64, id), *out = NULL, *err = NULL;
        g_autofree char *child_pid = g_strdup_printf("%d", scenario_task(s, child)->tgid);
        g_autofree char *exec = g_strdup_printf("--exec=%s=sleep 100", child_pid);
        json_error_t je;

        /* plan of a stored snapshot */
        g_assert_cmpint(ctl(b, false, &out, &err, ARGS("plan", ids)), ==, 0);
        g_assert_nonnull(strstr(out, "install filter"));
        g_clear_pointer(&out, g_free);

        /* restore --json: exactly the documented keys */
        g_assert_cmpint(ctl(b, false, &out, &err, ARGS("--json=short", "restore", ids)), ==, 0);
        json_auto_t *doc = json_loads(out, 0, &je);
        g_assert_nonnull(doc);
        g_assert_true(json_has_exactly(doc, ARGS("restore_id", "verified", "differences", "processes", "threads",
                                                 "listeners")));
        g_assert_true(json_is_true(json_object_get(doc, "verified")));
        g_assert_cmpuint(json_array_size(json_object_get(doc, "processes")), ==, 3);
        g_assert_true(json_has_exactly(json_array_get(json_object_get(doc, "processes"), 0), ARGS("snapshot_pid", "pid")));
        g_assert_true(json_has_exactly(json_array_get(json_object_get(doc, "threads"), 0), ARGS("snapshot_tid", "tid")));
        g_assert_cmpuint(json_array_size(json_object_get(doc, "listeners")), ==, 1);
        g_assert_true(json_has_exactly(json_array_get(json_object_get(doc, "listeners"), 0),
                                       ARGS("snapshot_listener", "fd")));
        uint64_t rid = (uint64_t) json_integer_value(json_object_get(doc, "restore_id"));
        pid_t restored = (pid_t) json_integer_value(json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "pid"));
        g_assert_true(restore_process_alive(restored)); /* it outlived sectreectl */
        g_clear_pointer(&out, g_free);

        g_assert_cmpint(ctl(b, false, &out, &err, ARGS("restores")), ==, 0);
        g_assert_nonnull(strstr(out, "ready"));
        g_assert_true(g_str_has_suffix(out, "\n1 restore listed.\n"));
        g_clear_pointer(&out, g_free);
        g_assert_cmpint(ctl(b, false, &out, &err, ARGS("--json", "restores")), ==, 0);
        json_t *doc_listed = tests_json_parse_document(out, "restores --json");
        g_assert_cmpuint(json_array_size(json_object_get(doc_listed, "restores")), ==, 1);
        g_assert_cmpint(json_integer_value(json_object_get(json_array_get(json_object_get(doc_listed, "restores"), 0), "id")),
                        ==, (json_int_t) rid);
        json_decref(doc_listed);
        g_clear_pointer(&out, g_free);
        g_autofree char *rids = g_strdup_printf("%" PRIu64, rid);
        g_assert_cmpint(ctl(b, false, NULL, NULL, ARGS("release", rids)), ==, 0);
        g_assert_false(restore_process_alive(restored));
        g_clear_pointer(&err, g_free);
        g_assert_cmpint(ctl(b, false, NULL, &err, ARGS("release", rids)), ==, 1);
        g_autofree char *no_restore = g_strdup_printf("sectreectl: Failed to release the restore: No restore with id %s.\n", rids);
        g_assert_cmpstr(err, ==, no_restore);
        g_clear_pointer(&err, g_free);

        /* a file is imported first; --exec */
        g_autofree char *dir = g_dir_make_tmp("sectree-ctl-XXXXXX", NULL);
        g_autofree char *file = g_build_filename(dir, "s.json", NULL);
        g_assert_cmpint(ctl(b, false, NULL, NULL, ARGS("export", ids, file)), ==, 0);
        g_assert_cmpint(chmod(dir, 0755), ==, 0);
        g_assert_cmpint(chmod(file, 0644), ==, 0);
        g_assert_cmpint(ctl(b, false, &out, &err, ARGS("restore", exec, file)), ==, 0);
        g_assert_nonnull(strstr(out, "; verified"));
        g_assert_nonnull(strstr(err, "Imported"));
        g_autoptr(GArray) listed = list_restores(bus);
        g_assert_cmpuint(listed->len, ==, 1);
        g_autofree char *rel = g_strdup_printf("%" PRIu64, g_array_index(listed, ListedRestore, 0).id);
        /* the line of the mapping for the child: "  SNAPSHOT-PID  PID" */
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        pid_t sleeper = 0;
        for (size_t i = 0; lines[i] && !sleeper; i++) {
                int sp, np;
                if (sscanf(lines[i], " %d %d", &sp, &np) == 2 && sp == scenario_task(s, child)->tgid)
                        sleeper = np;
        }
        g_assert_cmpint(sleeper, >, 0);
        g_clear_pointer(&out, g_free);
        g_clear_pointer(&err, g_free);
        g_autofree char *comm_path = g_strdup_printf("/proc/%d/comm", sleeper), *comm = NULL;
        g_assert_true(g_file_get_contents(comm_path, &comm, NULL, NULL));
        g_assert_cmpstr(comm, ==, "sleep\n");
        g_assert_cmpint(ctl(b, false, NULL, NULL, ARGS("release", rel)), ==, 0);
        g_assert_true(restore_process_alive(sleeper)); /* exec'd: left alone */
        g_assert_cmpint(kill(sleeper, SIGKILL), ==, 0);

        /* nobody: not root's snapshot, no original uids */
        g_assert_cmpint(ctl(b, true, NULL, &err, ARGS("restore", ids)), ==, 1);
        g_autofree char *no_snapshot = g_strdup_printf("sectreectl: Failed to restore the snapshot: No snapshot with id %s.\n", ids);
        g_assert_cmpstr(err, ==, no_snapshot);
        g_clear_pointer(&err, g_free);
        g_autofree char *mine_before = NULL, *mine_after = NULL;
        g_assert_cmpint(ctl(b, true, &mine_before, NULL, ARGS("--json=short", "snapshots")), ==, 0);
        g_assert_cmpint(ctl(b, true, NULL, &err, ARGS("restore", "--original-uids", file)), ==, 1);
        g_assert_nonnull(strstr(err, "sectreectl: Failed to restore the snapshot: Only root may restore with the "
                                     "snapshot's original uids.\n"));
        g_assert_nonnull(strstr(err, "Deleted snapshot")); /* a refused restore FILE leaves no import behind */
        g_assert_cmpint(ctl(b, true, &mine_after, NULL, ARGS("--json=short", "snapshots")), ==, 0);
        g_assert_cmpstr(mine_after, ==, mine_before);
        g_clear_pointer(&err, g_free);

        /* run --like: a command under a copy of a task's chain (getpriority: EPERM), reading
         * sectreectl's stdin and writing its stdout and stderr; sectreectl exits with its status */
        const int nice_calls[] = { SYS_getpriority };
        struct sock_filter no_nice[4];
        size_t nn2 = restore_filter_for_calls(no_nice, nice_calls, 1, SECCOMP_RET_ERRNO | EPERM);
        ScenarioTask like = tests_fork_install(s, a, no_nice, nn2, 0);
        g_assert_true(bus_client_wait_listed(scenario_task(s, like)->tgid, TESTS_PATIENCE_MS)); /* under load: later */
        g_autofree char *like_arg = g_strdup_printf("--like=%d", scenario_task(s, like)->tid);
        g_autofree char *pipeline = g_strdup_printf(
                "echo hello | \"$0\" run %s -- /bin/sh -c 'grep Seccomp_filters: /proc/self/status; "
                "nice -n 1 true 2>/dev/null; echo nice $?; read line; echo \"read $line\"; echo to-stderr >&2; exit 3'",
                like_arg);
        char *pipe_argv[] = { (char *) "/bin/sh", (char *) "-c", pipeline, (char *) g_getenv("SECTREECTL"), NULL };
        g_autofree char *ran = NULL;
        int status = bus_fixture_run(b, false, pipe_argv, &ran, &err);
        g_test_message("run --like: status %d, %s%s", status, ran ?: "", err ?: ""); /* before the check: why */
        g_assert_cmpint(status, ==, 3);
        g_assert_cmpstr(ran, ==, "Seccomp_filters:\t3\nnice 125\nread hello\n"); /* a's two filters and its own */
        g_assert_nonnull(strstr(err, "to-stderr\n"));
        g_clear_pointer(&err, g_free);
        g_assert_cmpint(ctl(b, false, NULL, &err, ARGS("run", like_arg, "--", "/bin/sh", "-c", "kill -TERM $$")), ==,
                        128 + SIGTERM);
        g_clear_pointer(&err, g_free);
        g_autoptr(GArray) after_run = list_restores(bus);
        g_assert_cmpuint(after_run->len, ==, 0);
        g_assert_cmpint(ctl(b, false, NULL, &err, ARGS("run", "--", "true")), ==, 2);
        g_clear_pointer(&err, g_free);

        /* run --like a second thread that set no_new_privs itself, its leader not: the copy is
         * that thread as a leader, with no_new_privs (it used to fail its verification: "no_new_privs
         * set, expected unset") */
        ScenarioTask leader = scenario_fork(s, scenario_root(s));
        ScenarioTask second = scenario_thread(s, leader);
        g_assert_cmpint(second, >=, 0);
        g_assert_cmpint(scenario_no_new_privs(s, second), ==, 0);
        g_assert_cmpint(scenario_install(s, second, no_nice, nn2, 0), >=, 0);
        g_assert_true(bus_client_wait_listed(scenario_task(s, second)->tgid, TESTS_PATIENCE_MS));
        g_autofree char *leader_status = g_strdup_printf("/proc/%d/status", scenario_task(s, leader)->tgid), *st = NULL;
        g_assert_true(g_file_get_contents(leader_status, &st, NULL, NULL));
        g_assert_nonnull(strstr(st, "\nNoNewPrivs:\t0\n"));
        g_autofree char *second_arg = g_strdup_printf("--like=%d", scenario_task(s, second)->tid), *nnp_ran = NULL;
        status = ctl(b, false, &nnp_ran, &err, ARGS("run", second_arg, "--", "/bin/sh", "-c",
                                                  "grep NoNewPrivs: /proc/self/status; nice -n 1 true 2>/dev/null; "
                                                  "echo nice $?"));
        g_test_message("run --like a thread with its own no_new_privs: status %d, %s%s", status, nnp_ran ?: "",
                       err ?: "");
        g_assert_cmpint(status, ==, 0);
        g_assert_cmpstr(nnp_ran, ==, "NoNewPrivs:\t1\nnice 125\n");
        g_clear_pointer(&err, g_free);

        /* a command named with a slash is found from the caller's directory (it runs in the
         * executor's) */
        g_autofree char *script = g_build_filename(dir, "probe.sh", NULL);
        g_assert_true(g_file_set_contents(script, "#!/bin/sh\necho probe ran\n", -1, NULL));
        g_assert_cmpint(chmod(script, 0755), ==, 0);
        g_autofree char *in_dir = g_strdup_printf("cd '%s' && exec \"$0\" run %s -- ./probe.sh", dir, like_arg);
        char *in_dir_argv[] = { (char *) "/bin/sh", (char *) "-c", in_dir, (char *) g_getenv("SECTREECTL"), NULL };
        g_autofree char *probed = NULL;
        g_assert_cmpint(bus_fixture_run(b, false, in_dir_argv, &probed, &err), ==, 0);
        g_assert_cmpstr(probed, ==, "probe ran\n");
        g_clear_pointer(&err, g_free);
        (void) unlink(script);

        /* SIGTERM (or a terminal's ^C) to sectreectl reaches the command, which is in the
         * executor's session, and the restore goes */
        GPid run_pid;
        const char *run_argv[] = { g_getenv("SECTREECTL"), "run", like_arg, "--", "sleep", "1000", NULL };
        g_assert_true(g_spawn_async(NULL, (char **) run_argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                    G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &run_pid, NULL));
        for (int i = 0; i < TESTS_PATIENCE_MS / 10; i++) {
                g_autoptr(GArray) running = list_restores(bus);
                if (running->len > 0)
                        break;
                g_usleep(10 * 1000);
        }
        g_usleep(100 * 1000); /* past the restore's reply: sectreectl waits for the command */
        g_assert_cmpint(kill(run_pid, SIGTERM), ==, 0);
        int run_status;
        g_assert_cmpint(waitpid(run_pid, &run_status, 0), ==, run_pid);
        g_assert_true(WIFEXITED(run_status));
        g_assert_cmpint(WEXITSTATUS(run_status), ==, 128 + SIGTERM); /* the command's end, by SIGTERM */
        g_autoptr(GArray) after_term = list_restores(bus);
        g_assert_cmpuint(after_term->len, ==, 0);

        /* a chain that passes uname(2) to a listener its supervisor holds: nothing answers the
         * copy's listener, which run says before it starts; the call waits until SIGTERM to
         * sectreectl reaches the command (it used to wait for ever, past sectreectl's end) */
        int listener;
        pid_t notified = start_notified_child(&listener);
        g_assert_true(bus_client_wait_listed(notified, TESTS_PATIENCE_MS));
        g_autofree char *notified_like = g_strdup_printf("--like=%d", (int) notified);
        g_autofree char *uname_run = g_strdup_printf("\"$0\" run %s -- uname & p=$!; sleep 2; kill -TERM $p; wait $p",
                                                     notified_like);
        char *uname_argv[] = { (char *) "/bin/sh", (char *) "-c", uname_run, (char *) g_getenv("SECTREECTL"), NULL };
        status = bus_fixture_run(b, false, uname_argv, NULL, &err);
        g_test_message("run --like a notified task: status %d, %s", status, err ?: "");
        g_assert_cmpint(status, ==, 128 + SIGTERM); /* uname's end, by the SIGTERM passed on */
        g_autofree char *warned = g_strdup_printf("sectreectl: The chain of task %d passes calls to a "
                                                  "user-notification listener (filter ", (int) notified);
        g_assert_true(g_str_has_prefix(err, warned));
        g_assert_nonnull(strstr(err, "which nothing answers here"));
        g_autoptr(GArray) after_notified = list_restores(bus);
        g_assert_cmpuint(after_notified->len, ==, 0);
        g_clear_pointer(&err, g_free);
        kill(notified, SIGKILL);
        (void) waitpid(notified, NULL, 0);
        close(listener);

        (void) unlink(file);
        (void) rmdir(dir);
}

int main(int argc, char *argv[]) {
        tests_init(&argc, &argv);
        /* whatever a restore leaves behind comes here */
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        tests_ensure_tracefs();
        restore_scenarios_scan = scan;
        ADD_TEST("/restore-daemon/scenarios", test_scenarios);
        ADD_TEST("/restore-daemon/caller-leaves", test_caller_leaves);
        ADD_TEST("/restore-daemon/failures", test_failures);
        ADD_TEST("/restore-daemon/unit-refused", test_unit_refused);
        ADD_TEST("/restore-daemon/limits", test_limits);
        ADD_TEST("/restore-daemon/random-histories", test_random_histories);
        ADD_TEST("/restore-daemon/behaviour-kept", test_behaviour_kept);
        ADD_TEST("/restore-daemon/real-sandboxes", test_real_sandboxes);
        ADD_TEST("/restore-daemon/sectreectl", test_sectreectl);
        ADD_TEST("/restore-daemon/debian-sandboxes", test_debian_sandboxes);
        int r = g_test_run();
        bpf_scanner_free(scanner);
        return r;
}
