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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "plan/plan-protocol.h"
#include "proc-check.h"
#include "restore-run.h"
#include "service/restore-proc-check.h"
#include "restore-scenarios.h"
#include "plan/plan-verify.h"
#include "plan/plan.h"
#include "observe/scanner.h"
#include "snapshot/snapshot.h"
#include "tests-util.h"

#define NOBODY 65534


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

/* ---- comparing ---- */

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
        /* and the kernel's own word, thread by thread */
        g_assert_cmpint(restore_proc_check(snapshot, &r->map, &vo, &ok, &diffs), ==, 0);
        for (size_t i = 0; diffs[i]; i++)
                g_test_message("difference in /proc: %s", diffs[i]);
        g_assert_true(ok);
        restore_assert_same_sharing(snapshot, restored, &r->map);
}

/* Restore as uid (from a JSON file as root, from an SQLite file as anyone else) and compare. */
static void restore_and_check_as(const Forest *snapshot, uid_t uid) {
        RestoreRun r;

        restore_start_with(snapshot, uid == 0 ? SNAPSHOT_FORMAT_JSON : SNAPSHOT_FORMAT_SQLITE, uid, NULL, &r);
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
        tests_assert_snapshot_is_proc(snapshot, "the original");
        restore_and_check_as(snapshot, 0);
        restore_and_check_as(snapshot, NOBODY);
}

/* A snapshot the ptrace backend took (identity inferred from bytes, flags, parents and tasks)
 * restores to the same shape. */
static void test_ptrace_snapshot(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, a), t = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, b, x.b, x.nb, SECCOMP_FILTER_FLAG_LOG), >=, 0);
        g_assert_cmpint(scenario_install(s, t, x.c, x.nc, 0), >=, 0);
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        g_autoptr(Forest) snapshot = NULL;

        opts.root = scenario_root_pid(s);
        opts.freeze = true;
        g_assert_cmpint(ptrace_scan(&opts, &snapshot, NULL, NULL), ==, 0);
        g_assert_cmpint(snapshot->identity, ==, IDENTITY_INFERRED);
        tests_assert_forest_matches(snapshot, s, false);
        restore_and_check_as(snapshot, 0);
        restore_and_check_as(snapshot, NOBODY);
        scenario_free(s);
}

/* ---- behaviour kept: probes exec'd in original and restored tasks ---- */

/* A filter returning action for each of the given system calls and allowing the rest. */
static char *probe_exec_options(const char *dir, const Scenario *s, const ScenarioTask *c) {
        GString *o = g_string_new("\"exec\":[");

        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++) {
                g_autofree char *path = restore_probe_path(dir, "restored", i);
                g_string_append_printf(o, "%s{\"pid\":%d,\"argv\":[\"%s\",\"%s\",\"%d\"]}", i ? "," : "",
                                       scenario_task(s, c[i])->tgid, g_getenv("SECTREE_RESTORE_PROBE"), path,
                                       restore_probe_calls[i]);
        }
        g_string_append(o, "]");
        return g_string_free(o, false);
}

/* The fd index READY gives for a restored process (by its snapshot pid) or listener. */
static int ready_fd(const RestoreRun *r, const char *array, const char *key, json_int_t value) {
        json_t *x;
        size_t i;

        json_array_foreach(json_object_get(r->ready, array), i, x)
                if (json_integer_value(json_object_get(x, key)) == value)
                        return r->fds[json_integer_value(json_object_get(x, "fd"))];
        g_error("READY has no %s with %s %lld", array, key, (long long) value);
}

static void start_restored(RestoreRun *r) {
        RestoreFrame f;

        g_assert_cmpint(restore_frame_send(r->sock, RESTORE_FRAME_START, NULL, 0, NULL, 0), ==, 0);
        f = recv_frame(r);
        if (f.type != RESTORE_FRAME_STARTED)
                g_error("START answered %s: %s", restore_frame_type_to_string(f.type), f.payload ?: "");
        restore_frame_done(&f);
}

static void run_original_probes(Scenario *s, const ScenarioTask *c, int node, ScenarioTask installer, const char *dir) {
        _cleanup_close_ int installer_fd = pidfd_open(scenario_task(s, installer)->tgid, 0), listener = -1;

        g_assert_cmpint(installer_fd, >=, 0);
        listener = (int) syscall(SYS_pidfd_getfd, installer_fd, scenario_node(s, node)->listener_fd, 0);
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
}

static void run_restored_probes(RestoreRun *r, const Scenario *s, const ScenarioTask *c, uint64_t listener_id) {
        start_restored(r);
        restore_answer_notification(ready_fd(r, "listeners", "snapshot_listener", (json_int_t) listener_id), SYS_sysinfo);
        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++)
                restore_wait_readable(ready_fd(r, "processes", "snapshot_pid", scenario_task(s, c[i])->tgid),
                              "a restored probe to end");
}

/* ERRNO, USER_NOTIF (answered through the listener copy the restore returns), KILL and ALLOW
 * come out the same in the restored tasks as in the originals: the probe's log says so. */
static void test_behaviour_kept(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        const int killed[] = { SYS_personality };
        struct sock_filter notify[8], kill_insns[4];
        size_t nn = tests_filter_notify(notify, SYS_sysinfo);
        size_t nk = restore_filter_for_calls(kill_insns, killed, ELEMENTSOF(killed), SECCOMP_RET_KILL_PROCESS);
        g_autofree char *dir = g_dir_make_tmp("sectree-restore-XXXXXX", NULL), *options = NULL;
        g_autoptr(Forest) snapshot = NULL;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0), c[ELEMENTSOF(restore_probe_calls)];
        int node = scenario_install(s, a, notify, nn, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        RestoreRun r;

        g_assert_cmpint(node, >=, 0);
        g_assert_cmpint(scenario_install(s, a, kill_insns, nk, 0), >=, 0);
        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++)
                c[i] = scenario_fork(s, a);
        snapshot = scan(scenario_root_pid(s));
        g_assert_cmpuint(snapshot->n_listeners, ==, 1);
        options = probe_exec_options(dir, s, c);
        restore_start(snapshot, 0, options, &r);
        g_assert_null(r.error);
        assert_restored(snapshot, &r);
        run_restored_probes(&r, s, c, snapshot->listeners[0]->id);
        run_original_probes(s, c, node, a, dir);
        for (size_t i = 0; i < ELEMENTSOF(restore_probe_calls); i++) {
                g_autofree char *po = restore_probe_path(dir, "original", i), *pr = restore_probe_path(dir, "restored", i);
                g_autofree char *o = NULL, *rr = NULL;
                g_assert_true(g_file_get_contents(po, &o, NULL, NULL));
                g_assert_true(g_file_get_contents(pr, &rr, NULL, NULL));
                g_autofree char *flat = g_strdelimit(g_strdup(o), "\n", '|');
                g_test_message("syscall %d: original and restored: \"%s\"", restore_probe_calls[i], flat);
                g_assert_cmpstr(o, ==, rr);
                g_assert_true(g_str_has_prefix(o, "call "));
                (void) unlink(po);
                (void) unlink(pr);
        }
        restore_release(&r);
        scenario_free(s);
        (void) rmdir(dir);
}

/* ---- failures, releases, hostile requests ---- */

/* The test is a child subreaper: anything a restore left behind would become its child. Only the
 * scenario's root agent (and the test guard) may be one. */
static void assert_nothing_left(pid_t allowed) {
        g_autofree char *path = g_strdup_printf("/proc/self/task/%d/children", (int) gettid()), *text = NULL;
        g_auto(GStrv) pids = NULL;

        /* agents killed by earlier scenario_free() calls come here too: reap what is dead */
        while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
                ;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        pids = g_strsplit(g_strstrip(text), " ", -1);
        for (size_t i = 0; pids[i]; i++)
                if (*pids[i] && atoi(pids[i]) != allowed && atoi(pids[i]) != tests_guard_pid())
                        g_error("process %s is left over from a restore", pids[i]);
}

/* A process a with a second thread that runs under insns (with flags): its snapshot. */
static Forest *thread_under(Scenario *s, const TestFilters *x, const struct sock_filter *insns, size_t n,
                            unsigned flags) {
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);
        g_assert_cmpint(scenario_install(s, scenario_thread(s, a), insns, n, flags), >=, 0);
        return scan(scenario_root_pid(s));
}

/* Restore as root with options: it fails at stage with expect in its message, the executor
 * exits 1 and nothing is left. Returns the ERROR document. */
static json_t *expect_error(const Forest *snapshot, const Scenario *s, const char *options, const char *stage,
                            const char *expect) {
        RestoreRun r;
        json_t *error;

        restore_start(snapshot, 0, options, &r);
        g_assert_nonnull(r.error);
        g_test_message("error: %s", json_string_value(json_object_get(r.error, "message")));
        g_assert_cmpstr(json_string_value(json_object_get(r.error, "stage")), ==, stage);
        g_assert_nonnull(strstr(json_string_value(json_object_get(r.error, "message")), expect));
        g_assert_cmpint(WEXITSTATUS(wait_executor(&r)), ==, 1);
        assert_nothing_left(scenario_root_pid(s));
        error = json_incref(r.error);
        restore_done(&r);
        return error;
}

/* A thread put under a filter that forbids every way to clone, by TSYNC: the planner refuses (no
 * task could create that thread under it); told not to check, the executor's clone fails, and it
 * reports the step, the call and the errno, and leaves nothing behind. */
static void test_failing_step(void) {
        if (!tests_require_root())
                return;
        const int clones[] = { SYS_clone, SYS_clone3, SYS_fork, SYS_vfork };
        struct sock_filter no_clone[8];
        size_t n = restore_filter_for_calls(no_clone, clones, ELEMENTSOF(clones), SECCOMP_RET_ERRNO | EPERM);
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        g_autoptr(Forest) snapshot = thread_under(s, &x, no_clone, n, SECCOMP_FILTER_FLAG_TSYNC);
        json_auto_t *planned = expect_error(snapshot, s, NULL, "plan", "clone(2) gets ERRNO(1)");
        json_auto_t *e = expect_error(snapshot, s, "\"check_syscalls\":false", "execute", "clone(2)");

        g_assert_cmpstr(json_string_value(json_object_get(e, "op")), ==, "spawn-thread");
        g_assert_cmpstr(json_string_value(json_object_get(e, "call")), ==, "clone");
        g_assert_cmpint(json_integer_value(json_object_get(e, "errno")), ==, EPERM);
        g_assert_cmpstr(json_string_value(json_object_get(e, "error")), ==, "EPERM");
        g_assert_true(json_is_integer(json_object_get(e, "step")));
        g_assert_cmpint(kill((pid_t) json_integer_value(json_object_get(e, "restore_root")), 0), <, 0);
        scenario_free(s);
}

/* A filter that kills the thread on write(2) to fd 64, the executor's report fd (agents never
 * write there): the task reports through the shared memory only, and the restore is exact; told
 * not to check, the executor writes its report there and sees the thread die. */
static void test_killed_thread(void) {
        if (!tests_require_root())
                return;
        const struct sock_filter kill_report[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PLAN_RUNTIME_FD_MIN, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_THREAD),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        g_autoptr(Forest) snapshot = thread_under(s, &x, kill_report, ELEMENTSOF(kill_report), 0);
        restore_and_check_as(snapshot, 0);
        restore_and_check_as(snapshot, NOBODY);
        json_auto_t *e = expect_error(snapshot, s, "\"check_syscalls\":false,\"step_timeout_usec\":20000000", "execute",
                                      "ended (a filter's KILL_THREAD");
        scenario_free(s);
}

/* A listener held at an fd at or above the limit of open files the restore runs with: refused
 * by the planner naming the fd, before any task exists (not at execution). */
static void test_listener_fd_over_limit(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        size_t k;

        for (k = 0; k < restore_scenarios_n && strcmp(restore_scenarios[k].name, "listeners") != 0; k++)
                ;
        g_assert_cmpuint(k, <, restore_scenarios_n);
        restore_scenarios[k].build(s, &x);
        g_autoptr(Forest) snapshot = scan(scenario_root_pid(s));
        int max = -1;
        for (size_t i = 0; i < snapshot->n_listeners; i++)
                for (size_t j = 0; j < snapshot->listeners[i]->n_holders; j++)
                        max = MAX(max, snapshot->listeners[i]->holders[j].fd);
        g_assert_cmpint(max, >=, 3);
        g_autofree char *expect = g_strdup_printf("at fd %d, at or above the limit of open files the restored tasks run "
                                                  "with (RLIMIT_NOFILE %d)", max, max);
        restore_run_executor_nofile = (rlim_t) max;
        json_auto_t *e = expect_error(snapshot, s, NULL, "plan", expect);
        restore_run_executor_nofile = 0;
        restore_and_check_as(snapshot, 0); /* under the usual limit it restores */
        scenario_free(s);
}

/* Closing the socket ends every stub, as RELEASE does; so does SIGTERM. */
static void test_release_by_close_and_signal(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        g_autoptr(Forest) snapshot = NULL;
        RestoreRun r;
        pid_t root;

        scenario_thread(s, a);
        g_assert_cmpint(scenario_strict(s, scenario_fork(s, scenario_root(s))), ==, 0);
        snapshot = scan(scenario_root_pid(s));

        restore_start(snapshot, 0, NULL, &r);
        g_assert_nonnull(r.ready);
        root = r.root_pid;
        close(r.sock);
        r.sock = -1;
        g_assert_cmpint(wait_executor(&r), ==, 0);
        g_assert_cmpint(kill(root, 0), <, 0);
        assert_nothing_left(scenario_root_pid(s));
        restore_done(&r);

        restore_start(snapshot, NOBODY, NULL, &r);
        g_assert_nonnull(r.ready);
        root = r.root_pid;
        g_assert_cmpint(kill(r.executor, SIGTERM), ==, 0);
        g_assert_cmpint(wait_executor(&r), ==, 0);
        g_assert_cmpint(kill(root, 0), <, 0);
        assert_nothing_left(scenario_root_pid(s));
        restore_done(&r);
        scenario_free(s);
}

/* The innermost number of the NSpid: line of /proc/TID/status: the tid in the task's own pid
 * namespace. */
static pid_t ns_tid_of(pid_t tid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int) tid), *text = NULL;
        g_auto(GStrv) lines = NULL;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (size_t i = 0; lines[i]; i++)
                if (g_str_has_prefix(lines[i], "NSpid:"))
                        return (pid_t) atoi(strrchr(lines[i], '\t') + 1);
        g_error("no NSpid: in %s", path);
}

/* Root may ask for a new pid namespace, where every restored task gets its snapshot tid, and for
 * the snapshot's uids; the restore verifies as any other. An executor that is not root refuses
 * both. */
static void test_pid_namespace_and_original_ids(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        g_autoptr(Forest) snapshot = NULL;
        RestoreRun r;
        json_t *t;
        size_t i;

        g_assert_cmpint(scenario_install(s, scenario_thread(s, a), x.b, x.nb, 0), >=, 0);
        scenario_fork(s, a);
        snapshot = scan(scenario_root_pid(s));

        restore_start(snapshot, 0, "\"pid_namespace\":true,\"original_ids\":true", &r);
        if (r.error)
                g_error("refused: %s", json_string_value(json_object_get(r.error, "message")));
        g_assert_cmpint(ns_tid_of(r.root_pid), ==, 1);
        json_array_foreach(json_object_get(r.ready, "threads"), i, t) {
                pid_t want = (pid_t) json_integer_value(json_object_get(t, "snapshot_tid"));
                pid_t tid = (pid_t) json_integer_value(json_object_get(t, "tid"));
                g_assert_cmpint(tid, !=, want); /* a host tid, not the snapshot's */
                g_assert_cmpint(ns_tid_of(tid), ==, want);
        }
        assert_restored(snapshot, &r);
        restore_release(&r);

        restore_start(snapshot, NOBODY, "\"pid_namespace\":true", &r);
        g_assert_nonnull(r.error);
        g_assert_cmpstr(json_string_value(json_object_get(r.error, "stage")), ==, "request");
        g_assert_cmpint(WEXITSTATUS(wait_executor(&r)), ==, 1);
        restore_done(&r);
        restore_start(snapshot, NOBODY, "\"original_ids\":true", &r);
        g_assert_nonnull(r.error);
        g_assert_cmpint(WEXITSTATUS(wait_executor(&r)), ==, 1);
        restore_done(&r);
        assert_nothing_left(scenario_root_pid(s));
        scenario_free(s);
}

static void send_raw_request(RestoreRun *r, const char *payload, int fd) {
        g_assert_cmpint(restore_frame_send(r->sock, RESTORE_FRAME_REQUEST, payload, payload ? strlen(payload) : 0,
                                           fd >= 0 ? &fd : NULL, fd >= 0), ==, 0);
}

static void assert_refused_request(const char *payload, int fd, const char *stage, const char *expect) {
        RestoreRun r;
        RestoreFrame f;
        json_auto_t *doc = NULL;

        spawn_executor_as(&r, 0);
        send_raw_request(&r, payload, fd);
        f = recv_frame(&r);
        g_assert_cmpint(f.type, ==, RESTORE_FRAME_ERROR);
        doc = json_loads(f.payload, 0, NULL);
        g_assert_nonnull(doc);
        g_test_message("refused: %s", f.payload);
        g_assert_cmpstr(json_string_value(json_object_get(doc, "stage")), ==, stage);
        if (!strstr(json_string_value(json_object_get(doc, "message")), expect))
                g_error("expected \"%s\" in %s", expect, f.payload);
        restore_frame_done(&f);
        g_assert_cmpint(WEXITSTATUS(wait_executor(&r)), ==, 1);
        restore_done(&r);
}

static void test_hostile_requests(void) {
        if (!tests_require_root())
                return;
        g_autoptr(Forest) snapshot = scan(getpid());
        _cleanup_close_ int good = snapshot_memfd(snapshot), junk = memfd_create("junk", MFD_CLOEXEC);
        _cleanup_close_ int cycle = memfd_create("cycle", MFD_CLOEXEC);
        const char *bad_cycle = "{\"format\":\"sectree-snapshot\",\"version\":1}";

        g_assert_cmpint(write(junk, "not a snapshot", 14), ==, 14);
        g_assert_cmpint(lseek(junk, 0, SEEK_SET), ==, 0);
        g_assert_cmpint(write(cycle, bad_cycle, strlen(bad_cycle)), ==, (ssize_t) strlen(bad_cycle));
        g_assert_cmpint(lseek(cycle, 0, SEEK_SET), ==, 0);

        assert_refused_request("{\"version\":1}", -1, "request", "one fd");
        assert_refused_request("{\"version\":", good, "request", "request:");
        assert_refused_request("{\"version\":2}", good, "request", "version 2 is not 1");
        assert_refused_request("{\"version\":1,\"frobnicate\":true}", good, "request", "request:");
        assert_refused_request("{\"version\":1,\"exec\":[{\"pid\":1}]}", good, "request", "exec[0]");
        assert_refused_request("{\"version\":1,\"stdio\":true}", good, "request",
                               "expected 4 fds (the snapshot, stdin, stdout, stderr), not 1 fds");
        assert_refused_request("{\"version\":1}", junk, "snapshot", "");
        assert_refused_request("{\"version\":1}", cycle, "snapshot", "");
        assert_refused_request("{\"version\":1,\"exec\":[{\"pid\":4194304,\"argv\":[\"/bin/true\"]}]}",
                               good, "plan", "exec: 4194304 is not a process of the snapshot");

        /* garbage instead of a frame: the executor says nothing and exits 1 */
        RestoreRun r;
        spawn_executor_as(&r, 0);
        g_assert_cmpint(write(r.sock, "GET / HTTP/1.0\r\n\r\n", 18), ==, 18);
        g_assert_cmpint(WEXITSTATUS(wait_executor(&r)), ==, 1);
        restore_done(&r);
}

/* ---- random histories on the kernel ---- */

static void run_history(uint64_t seed, bool as_nobody) {
        g_autoptr(Forest) snapshot = NULL;
        Scenario *s = restore_history_play(seed);

        snapshot = scan(scenario_root_pid(s));
        tests_assert_forest_matches(snapshot, s, true);
        g_test_message("seed %" PRIu64 ": %zu processes, %zu filters, %zu listeners", seed, snapshot->n_processes,
                       snapshot->n_filters, snapshot->n_listeners);
        restore_and_check_as(snapshot, as_nobody ? NOBODY : 0);
        scenario_free(s);
}

/* Hundreds of histories per run (SECTREE_RESTORE_SEEDS), each restored and compared; one seed
 * again with SECTREE_RESTORE_SEED. */
static void test_random_histories(void) {
        if (!tests_require_root())
                return;
        const char *one = g_getenv("SECTREE_RESTORE_SEED"), *count = g_getenv("SECTREE_RESTORE_SEEDS");
        uint64_t n = count ? g_ascii_strtoull(count, NULL, 10) : 200;

        if (one) {
                uint64_t seed = g_ascii_strtoull(one, NULL, 10);
                run_history(seed, seed % 4 == 0);
                return;
        }
        for (uint64_t seed = 1; seed <= n; seed++) {
                g_test_message("seed %" PRIu64 " (replay: SECTREE_RESTORE_SEED=%" PRIu64 ")", seed, seed);
                run_history(seed, seed % 4 == 0);
        }
}

static void run_scenario_test(gconstpointer data) {
        size_t i = GPOINTER_TO_SIZE(data);
        TestFilters x;
        Scenario *s;

        if (!tests_require_root())
                return;
        s = tests_scenario_with_filters(&x);
        restore_scenarios[i].build(s, &x);
        check_scenario(s);
        scenario_free(s);
}

int main(int argc, char *argv[]) {
        tests_init(&argc, &argv);
        /* whatever a restore leaves behind becomes the test's child: assert_nothing_left() sees it */
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        for (size_t i = 0; i < restore_scenarios_n; i++) {
                g_autofree char *path = g_strconcat("/restore/", restore_scenarios[i].name, NULL);
                g_test_add_data_func(path, GSIZE_TO_POINTER(i), run_scenario_test);
        }
        tests_ensure_tracefs();
        restore_scenarios_scan = scan;
        g_test_add_func("/restore/ptrace-snapshot", test_ptrace_snapshot);
        g_test_add_func("/restore/behaviour-kept", test_behaviour_kept);
        g_test_add_func("/restore/failing-step", test_failing_step);
        g_test_add_func("/restore/killed-thread", test_killed_thread);
        g_test_add_func("/restore/release-by-close-and-signal", test_release_by_close_and_signal);
        g_test_add_func("/restore/listener-fd-over-limit", test_listener_fd_over_limit);
        g_test_add_func("/restore/hostile-requests", test_hostile_requests);
        g_test_add_func("/restore/pid-namespace-and-original-ids", test_pid_namespace_and_original_ids);
        g_test_add_func("/restore/random-histories", test_random_histories);
        int r = g_test_run();
        bpf_scanner_free(scanner);
        return r;
}
