/* test-sectreed.c: `sectreed scan` end to end: JSON and tree output on a real scenario, no kernel
 * address anywhere in either, and clear errors for bad usage */
#include <fcntl.h>
#include <jansson.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "tests-json.h"
#include "tests-util.h"

#define KERNEL_SPACE_START 0xffff800000000000ULL

static const char *sectreed(void) {
        const char *p = g_getenv("SECTREED");
        g_assert_nonnull(p);
        return p;
}

/* root: filter A; child c1: A <- B (LOG, NEW_LISTENER, shared with c2); c1 thread; c2: A; the
 * middle process m exits so its child o is reparented to root. */
static Scenario *build(int *ret_b) {
        Scenario *s;
        struct sock_filter a[16], b[16], c[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0);
        size_t nb = scenario_filter_errno(b, SYS_getpriority, 2, 1);
        size_t nc = scenario_filter_errno(c, SYS_syslog, 3, 2);
        b[nb - 3].k = SECCOMP_RET_USER_NOTIF;

        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask root = scenario_root(s);
        g_assert_cmpint(scenario_no_new_privs(s, root), ==, 0);
        g_assert_cmpint(scenario_install(s, root, a, na, 0), >=, 0);
        ScenarioTask c1 = scenario_fork(s, root), c2 = scenario_fork(s, root);
        int nb_node = scenario_install(s, c1, b, nb, SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(nb_node, >=, 0);
        g_assert_cmpint(scenario_thread(s, c1), >, 0);
        g_assert_cmpint(scenario_share_listener(s, nb_node, c2), >=, 0);
        ScenarioTask m = scenario_fork(s, c2);
        tests_fork_install(s, m, c, nc, 0);
        g_assert_cmpint(scenario_exit(s, m), ==, 0);
        *ret_b = nb_node;
        return s;
}

static char *run_scan(const char *backend, const char *format, pid_t root, int *ret_status, char **ret_err) {
        g_autofree char *b = g_strdup_printf("--backend=%s", backend), *f = g_strdup_printf("--format=%s", format);
        g_autofree char *r = g_strdup_printf("--root=%d", root);
        char *argv[] = { (char *) sectreed(), (char *) "scan", b, f, root ? r : NULL, NULL };
        char *out = NULL;
        *ret_status = tests_run_capture(argv, &out, ret_err);
        return out;
}

static void assert_no_address_in_json(json_t *v, const char *where) {
        switch (json_typeof(v)) {
        case JSON_OBJECT: {
                const char *k;
                json_t *x;
                json_object_foreach(v, k, x) assert_no_address_in_json(x, k);
                break;
        }
        case JSON_ARRAY: {
                size_t i;
                json_t *x;
                json_array_foreach(v, i, x) assert_no_address_in_json(x, where);
                break;
        }
        case JSON_INTEGER:
                if ((uint64_t) json_integer_value(v) >= KERNEL_SPACE_START || json_integer_value(v) < -1)
                        g_error("field %s holds %" JSON_INTEGER_FORMAT ", which looks like a kernel address", where,
                                json_integer_value(v));
                break;
        default:
                break;
        }
}

/* Hex words of 12+ digits starting like a kernel address, or decimals of 17+ digits. */
static void assert_no_address_in_text(const char *text) {
        g_autoptr(GRegex) hex = g_regex_new("(0x)?ffff[89a-f][0-9a-f]{11}", G_REGEX_CASELESS, 0, NULL);
        g_autoptr(GRegex) dec = g_regex_new("\\b1[0-9]{16,}\\b", 0, 0, NULL);
        g_autoptr(GMatchInfo) mi = NULL;
        if (g_regex_match(hex, text, 0, &mi))
                g_error("output contains %s, which looks like a kernel address", g_match_info_fetch(mi, 0));
        g_clear_pointer(&mi, g_match_info_free);
        if (g_regex_match(dec, text, 0, &mi))
                g_error("output contains %s, which looks like a kernel address", g_match_info_fetch(mi, 0));
}

static json_t *find_process(json_t *doc, pid_t pid) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(doc, "processes"), i, p) if (json_integer_value(json_object_get(p, "pid")) == pid) return p;
        return NULL;
}

static void assert_json_matches(json_t *doc, const Scenario *s, int listener_node, bool exact) {
        json_t *filters = json_object_get(doc, "filters");
        size_t i;
        json_t *flt;
        /* ids 1..n, parents first */
        json_array_foreach(filters, i, flt) {
                g_assert_cmpint(json_integer_value(json_object_get(flt, "id")), ==, (json_int_t) i + 1);
                json_t *parent = json_object_get(flt, "parent");
                g_assert_true(json_is_null(parent) || json_integer_value(parent) < (json_int_t) i + 1);
                g_assert_cmpint(json_integer_value(json_object_get(flt, "length")), ==,
                                json_array_size(json_object_get(flt, "program")));
                g_assert_cmpstr(json_string_value(json_object_get(flt, "identity")), ==, exact ? "exact" : "inferred");
        }
        /* 3 filters built, all reachable */
        g_assert_cmpuint(json_array_size(filters), ==, 3);
        for (size_t t = 0; t < scenario_n_tasks(s); t++) {
                const ScenarioTaskInfo *info = scenario_task(s, (ScenarioTask) t);
                if (!info->alive)
                        continue;
                json_t *p = find_process(doc, info->tgid);
                if (!p)
                        g_error("process %d missing from the JSON", info->tgid);
                g_assert_cmpint(json_integer_value(json_object_get(p, "ppid")), ==, info->ppid);
                g_assert_true(json_is_true(json_object_get(p, "no_new_privs"))); /* set on root, inherited */
        }
        const ScenarioNode *ln = scenario_node(s, listener_node);
        json_t *listeners = json_object_get(doc, "listeners");
        if (exact) {
                g_assert_cmpuint(json_array_size(listeners), ==, 1);
                json_t *l = json_array_get(listeners, 0);
                /* c1 installed it, c2 was given it, and o inherited c2's fd through m */
                g_assert_cmpuint(json_array_size(json_object_get(l, "holders")), ==, 3);
                json_t *lf = json_array_get(filters, json_integer_value(json_object_get(l, "filter")) - 1);
                g_assert_cmpint(json_integer_value(json_object_get(lf, "length")), ==, ln->len);
                g_assert_true(json_is_true(json_object_get(lf, "log")));
        }
}

static void scan_json(const char *backend, bool exact) {
        if (!tests_require_root())
                return;
        tests_ensure_tracefs();
        int listener_node, status;
        Scenario *s = build(&listener_node);
        g_autofree char *err = NULL;
        g_autofree char *out = run_scan(backend, "json", scenario_root_pid(s), &status, &err);
        if (status != 0)
                g_error("sectreed scan --backend=%s failed (%d): %s", backend, status, err);
        json_error_t e;
        json_t *doc = json_loads(out, 0, &e);
        if (!doc)
                g_error("invalid JSON from sectreed: %s", e.text);
        g_assert_cmpint(json_integer_value(json_object_get(doc, "root")), ==, scenario_root_pid(s));
        g_assert_cmpstr(json_string_value(json_object_get(json_object_get(doc, "source"), "backend")), ==, backend);
        assert_json_matches(doc, s, listener_node, exact);
        assert_no_address_in_json(doc, "(top)");
        assert_no_address_in_text(out);
        json_decref(doc);
        scenario_free(s);
}

static void test_json_bpf(void) {
        scan_json("bpf", true);
}

static void test_json_ptrace(void) {
        scan_json("ptrace", false);
}

static void scan_tree(const char *backend, pid_t root) {
        int status;
        g_autofree char *err = NULL;
        g_autofree char *out = run_scan(backend, "tree", root, &status, &err);
        if (status != 0)
                g_error("sectreed scan --backend=%s --format=tree failed (%d): %s", backend, status, err);
        g_assert_nonnull(strstr(out, "Seccomp filter forest of"));
        assert_no_address_in_text(out);
}

static void test_tree(void) {
        if (!tests_require_root())
                return;
        tests_ensure_tracefs();
        int listener_node;
        Scenario *s = build(&listener_node);
        /* the scenario's subtree and the whole machine, both backends */
        scan_tree("bpf", scenario_root_pid(s));
        scan_tree("bpf", 0);
        scan_tree("ptrace", scenario_root_pid(s));
        scan_tree("ptrace", 0);
        scenario_free(s);
}

/* pid 1 of a new pid namespace, with a /proc of its own: a child (pid 2) under an allow-all
 * filter, then sectreed scan --format=json as pid 1 itself, its output into out_fd. */
__attribute__((noreturn)) static void ns_init_main(int out_fd) {
        struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = { .len = 1, .filter = &allow };
        int ready[2];
        char byte;

        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount("proc", "/proc", "proc", 0, NULL) < 0 ||
            pipe(ready) < 0)
                _exit(120);
        if (fork() == 0) {
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(1);
                (void) !write(ready[1], "x", 1);
                pause();
                _exit(0);
        }
        if (read(ready[0], &byte, 1) != 1 || dup2(out_fd, STDOUT_FILENO) < 0)
                _exit(121);
        execl(sectreed(), "sectreed", "scan", "--format=json", "--no-argv", (char *) NULL);
        _exit(127);
}

/* The JSON sectreed scan prints in a pid namespace of its own. */
static json_t *scan_in_pid_namespace(void) {
        int out[2], status;
        g_autoptr(GString) text = g_string_new(NULL);
        char buf[4096];
        ssize_t n;
        pid_t helper;

        g_assert_cmpint(pipe(out), ==, 0);
        helper = fork();
        g_assert_cmpint(helper, >=, 0);
        if (helper == 0) {
                close(out[0]);
                if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
                        _exit(122);
                pid_t init = fork();
                if (init == 0)
                        ns_init_main(out[1]);
                _exit(init > 0 && waitpid(init, &status, 0) == init && WIFEXITED(status) ? WEXITSTATUS(status) : 123);
        }
        close(out[1]);
        while ((n = read(out[0], buf, sizeof(buf))) > 0)
                g_string_append_len(text, buf, n);
        close(out[0]);
        g_assert_cmpint(waitpid(helper, &status, 0), ==, helper);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        json_t *doc = json_loads(text->str, 0, NULL);
        g_assert_nonnull(doc);
        return doc;
}

/* A bpf scan from inside a pid namespace names tasks as that namespace does (pid 1, its child
 * pid 2 with ppid 1), and reports nothing outside it: not the scenario's filtered processes, nor
 * any other of the machine. */
static void test_pid_namespace(void) {
        int b;
        if (!tests_require_root())
                return;
        Scenario *s = build(&b);
        json_t *doc = scan_in_pid_namespace(), *p;
        size_t i;

        g_test_message("processes: %s", json_dumps(json_object_get(doc, "processes"), JSON_COMPACT));
        json_array_foreach(json_object_get(doc, "processes"), i, p) {
                json_int_t pid = json_integer_value(json_object_get(p, "pid"));
                if (pid != 1 && pid != 2)
                        g_error("process %lld of another pid namespace is reported", (long long) pid);
        }
        p = find_process(doc, 2);
        g_assert_nonnull(p);
        g_assert_cmpint(json_integer_value(json_object_get(p, "ppid")), ==, 1);
        g_assert_cmpuint(json_array_size(json_object_get(doc, "filters")), ==, 1);
        json_decref(doc);
        scenario_free(s);
}

static void assert_usage_error(char **args, int want_status, const char *want_message) {
        g_autofree char *out = NULL, *err = NULL;
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, (char *) sectreed());
        for (char **a = args; *a; a++)
                g_ptr_array_add(argv, *a);
        g_ptr_array_add(argv, NULL);
        int status = tests_run_capture((char **) argv->pdata, &out, &err);
        g_assert_cmpint(status, ==, want_status);
        if (!strstr(err, want_message))
                g_error("expected '%s' in stderr, got: %s", want_message, err);
}

static void test_usage(void) {
        assert_usage_error((char *[]) { "scan", "--backend=kcmp", NULL }, 2, "Unknown --backend=kcmp");
        assert_usage_error((char *[]) { "scan", "--format=xml", NULL }, 2, "Unknown --format=xml");
        assert_usage_error((char *[]) { "scan", "--root=abc", NULL }, 2, "Invalid --root=abc");
        assert_usage_error((char *[]) { "scan", "--root=999999999", NULL }, 1, "No process 999999999 (--root=999999999).");
        assert_usage_error((char *[]) { "--bogus", NULL }, 2, "Unknown option '--bogus' (try --help).");
        assert_usage_error((char *[]) { "-x", NULL }, 2, "Unknown option '-x' (try --help).");
        assert_usage_error((char *[]) { "scan", "--format", NULL }, 2, "Option '--format' needs a value (try --help).");
        assert_usage_error((char *[]) { "scan", "--no-argv=1", NULL }, 2, "Option '--no-argv' takes no value (try --help).");
        assert_usage_error((char *[]) { "--help=x", NULL }, 2, "Option '--help' takes no value (try --help).");
        assert_usage_error((char *[]) { "frobnicate", NULL }, 2, "Unknown verb 'frobnicate'");
        assert_usage_error((char *[]) { "--state-dir=relative", NULL }, 2, "expected an absolute path");
        g_autofree char *out = NULL;
        char *argv[] = { (char *) sectreed(), (char *) "--help", NULL };
        g_assert_cmpint(tests_run_capture(argv, &out, NULL), ==, 0);
        g_assert_nonnull(strstr(out, "--backend=BACKEND"));
}

static gint cmp_strp(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The chain of filter id as the digests of its filters, newest first. */
static void append_chain(GString *out, json_t *filters, json_int_t id) {
        for (unsigned steps = 0; id > 0 && steps <= json_array_size(filters); steps++) {
                json_t *flt = json_array_get(filters, (size_t) id - 1);
                g_assert_nonnull(flt);
                g_string_append_printf(out, " %s%s", json_string_value(json_object_get(flt, "digest")),
                                       json_is_true(json_object_get(flt, "log")) ? "+log" : "");
                id = json_is_null(json_object_get(flt, "parent")) ? 0 : json_integer_value(json_object_get(flt, "parent"));
        }
}

/* A snapshot document as sorted lines that do not depend on its local ids: each process with
 * everything said of it, each thread with its chain, each listener with its filter's chain and its
 * holders. */
static char *snapshot_canonical(json_t *doc) {
        json_t *filters = json_object_get(doc, "filters");
        g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
        size_t i, j;
        json_t *p, *t, *l, *h;

        json_array_foreach(json_object_get(doc, "processes"), i, p) {
                g_autofree char *argv = json_dumps(json_object_get(p, "argv"), JSON_COMPACT);
                g_ptr_array_add(lines, g_strdup_printf("process %lld ppid %lld start %lld comm %s exe %s argv %s uid %lld "
                                                       "gid %lld nnp %d", (long long) jint(p, "pid"),
                                                       (long long) jint(p, "ppid"), (long long) jint(p, "start_time"),
                                                       jstr(p, "comm"), json_string_value(json_object_get(p, "exe")),
                                                       argv, (long long) jint(p, "uid"), (long long) jint(p, "gid"),
                                                       json_is_true(json_object_get(p, "no_new_privs"))));
                json_array_foreach(jarr(p, "threads"), j, t) {
                        GString *line = g_string_new(NULL);
                        g_string_printf(line, "thread %lld of %lld %s:", (long long) jint(t, "tid"),
                                        (long long) jint(p, "pid"), jstr(t, "mode"));
                        append_chain(line, filters, jid(t, "filter"));
                        g_ptr_array_add(lines, g_string_free(line, false));
                }
        }
        json_array_foreach(json_object_get(doc, "listeners"), i, l) {
                GString *line = g_string_new("listener of");
                append_chain(line, filters, jid(l, "filter"));
                g_autoptr(GPtrArray) holders = g_ptr_array_new_with_free_func(g_free);
                json_array_foreach(jarr(l, "holders"), j, h)
                        g_ptr_array_add(holders, g_strdup_printf("%lld/%lld", (long long) jint(h, "pid"),
                                                                 (long long) jint(h, "fd")));
                g_ptr_array_sort(holders, cmp_strp);
                for (guint k = 0; k < holders->len; k++)
                        g_string_append_printf(line, " %s", (char *) holders->pdata[k]);
                g_ptr_array_add(lines, g_string_free(line, false));
        }
        g_ptr_array_sort(lines, cmp_strp);
        g_ptr_array_add(lines, NULL);
        return g_strjoinv("\n", (char **) lines->pdata);
}

/* ExportSnapshot(CreateSnapshot(root)) of the daemon, as JSON. */
static json_t *daemon_snapshot(sd_bus *bus, pid_t root) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = 0;

        if (sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "CreateSnapshot", &error,
                               &reply, "ua{sv}", (uint32_t) root, 0) < 0)
                g_error("CreateSnapshot(%d): %s", (int) root, error.message);
        g_assert_cmpint(sd_bus_message_read(reply, "t", &id), >, 0);
        int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        if (sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "ExportSnapshot", &error,
                               NULL, "ths", id, fd, "json") < 0)
                g_error("ExportSnapshot: %s", error.message);
        g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
        json_error_t e;
        json_t *doc = json_loadfd(fd, 0, &e);
        if (!doc)
                g_error("the export is not JSON: %s", e.text);
        close(fd);
        return doc;
}

static Scenario *build_for_daemon(void) {
        int listener_node;
        Scenario *s = build(&listener_node);
        ScenarioTask t = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_exec_sleep(s, t), ==, 0);
        return s;
}

/* `sectreed scan` (the one-shot scanner: the iterators alone, exe and argv from them) says of a
 * subtree what the long-lived daemon says of it: every process with comm, exe, argv, parent and
 * ids, every thread with its chain, every listener with its holders. */
static void test_same_as_daemon(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, build_for_daemon, NULL, NULL);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        int status;
        g_autofree char *err = NULL;
        g_autofree char *out = run_scan("bpf", "json", scenario_root_pid(s), &status, &err);
        if (status != 0)
                g_error("sectreed scan failed (%d): %s", status, err);
        json_t *oneshot = tests_json_parse_document(out, "sectreed scan --format=json");
        json_t *daemon = daemon_snapshot(bus, scenario_root_pid(s));
        g_autofree char *want = snapshot_canonical(daemon), *got = snapshot_canonical(oneshot);

        g_assert_cmpstr(got, ==, want);
        g_assert_nonnull(strstr(got, "exe /usr/bin/sleep argv [\"sleep\",\"infinity\"]"));
        json_decref(oneshot);
        json_decref(daemon);
        bus_fixture_finish(&b);
        scenario_free(s);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/sectreed/usage", test_usage);
        g_test_add_func("/sectreed/json-bpf", test_json_bpf);
        g_test_add_func("/sectreed/json-ptrace", test_json_ptrace);
        g_test_add_func("/sectreed/tree", test_tree);
        g_test_add_func("/sectreed/pid-namespace", test_pid_namespace);
        g_test_add_func("/sectreed/same-as-daemon", test_same_as_daemon);
        return g_test_run();
}
