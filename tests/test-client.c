/* test-client.c: sectreectl without a daemon: help, bad usage (exit 2, before any connection),
 * no bus, a bus without org.sectree1 (exit 1, the D-Bus error on one line), and monitor's
 * lifecycle (SIGTERM ends it with 0, losing the bus with 1); help for each verb and suggestions
 * for misspelt verbs and options */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <jansson.h>
#include <systemd/sd-bus.h>

#include "bus-fixture.h"
#include "tests-util.h"

#define NO_BUS_ADDRESS "unix:path=/nonexistent/sectree-test/system_bus_socket"

static const char *sectreectl(void) {
        const char *p = g_getenv("SECTREECTL");
        g_assert_nonnull(p);
        return p;
}

/* Run sectreectl with args (NULL-terminated) in the current environment. */
static int run(const char *const *args, char **ret_out, char **ret_err) {
        g_autoptr(GPtrArray) argv = tests_argv_new(sectreectl(), args);
        return tests_run_capture((char **) argv->pdata, ret_out, ret_err);
}

/* No line of help is wider than 79 columns. */
static void assert_fits_80(const char *out, const char *what) {
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        for (char **l = lines; *l; l++)
                if (g_utf8_strlen(*l, -1) > 79)
                        g_error("help of %s: a line of %ld columns: '%s'", what, g_utf8_strlen(*l, -1), *l);
}

static size_t count_lines(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static void test_help(void) {
        g_autofree char *out = NULL, *err = NULL;
        const char *args[] = { "--help", NULL };
        g_assert_cmpint(run(args, &out, &err), ==, 0);
        g_assert_true(g_str_has_prefix(out, "Usage: sectreectl"));
        static const char *const verbs[] = { "status", "tree [PID]", "ps", "show FILTER", "chain TID",
                                             "check TID SYSCALL", "monitor", "graph", "--json", "--no-legend" };
        for (size_t i = 0; i < G_N_ELEMENTS(verbs); i++)
                if (!strstr(out, verbs[i]))
                        g_error("--help does not mention '%s'", verbs[i]);
        g_assert_cmpstr(err, ==, "");
        assert_fits_80(out, "--help");
        const char *help_verb[] = { "help", NULL };
        g_autofree char *out2 = NULL;
        g_assert_cmpint(run(help_verb, &out2, NULL), ==, 0);
        g_assert_cmpstr(out2, ==, out);

        g_autofree char *vout = NULL;
        const char *version[] = { "--version", NULL };
        g_assert_cmpint(run(version, &vout, NULL), ==, 0);
        g_assert_true(g_str_has_prefix(vout, "sectreectl "));
}

/* Every verb --help lists has its own help: the same from `help VERB`, `VERB --help` and
 * `--help VERB` (also with other arguments, before any connection), starting with its usage. */
static void test_verb_help(void) {
        g_autofree char *overview = NULL;
        const char *args[] = { "--help", NULL };
        g_assert_cmpint(run(args, &overview, NULL), ==, 0);
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS_ADDRESS, true);
        g_auto(GStrv) lines = g_strsplit(overview, "\n", -1);
        size_t n_verbs = 0;
        for (char **l = lines; *l; l++) {
                /* "  VERB ARGS   summary": the verb rows are indented by two, options by more */
                if (!g_str_has_prefix(*l, "  ") || (*l)[2] == ' ' || (*l)[2] == '-')
                        continue;
                g_autofree char *verb = g_strndup(*l + 2, strcspn(*l + 2, " "));
                if (strchr(verb, '|')) /* "tree|show|... --file=FILE": the offline forms */
                        continue;
                g_autofree char *usage = g_strdup_printf("Usage: sectreectl %s", verb);
                const char *forms[][5] = {
                        { "help", verb, NULL }, { verb, "--help", NULL }, { "--help", verb, NULL },
                        { verb, "1", "2", "--help", NULL }, { "-h", verb, NULL },
                };
                g_autofree char *first = NULL;
                for (size_t i = 0; i < G_N_ELEMENTS(forms); i++) {
                        g_autofree char *out = NULL, *err = NULL;
                        g_assert_cmpint(run(forms[i], &out, &err), ==, 0);
                        g_assert_cmpstr(err, ==, "");
                        if (!g_str_has_prefix(out, usage))
                                g_error("help %s does not start with '%s': %s", verb, usage, out);
                        assert_fits_80(out, verb);
                        if (first)
                                g_assert_cmpstr(out, ==, first);
                        else
                                first = g_steal_pointer(&out);
                }
                n_verbs++;
        }
        g_assert_cmpuint(n_verbs, >=, 17);
        g_unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
}

/* A misspelt verb or option is met with the nearest one; nothing near: no suggestion. */
static void test_suggestions(void) {
        static const struct {
                const char *args[4];
                const char *says;
        } cases[] = {
                { { "stauts", NULL }, "Unknown verb 'stauts'; did you mean 'status'?" },
                { { "tre", NULL }, "Unknown verb 'tre'; did you mean 'tree'?" },
                { { "chian", "1", NULL }, "Unknown verb 'chian'; did you mean 'chain'?" },
                { { "snapshto", NULL }, "Unknown verb 'snapshto'; did you mean 'snapshot'?" },
                { { "snapshts", NULL }, "Unknown verb 'snapshts'; did you mean 'snapshots'?" },
                { { "valid", "x", NULL }, "Unknown verb 'valid'; did you mean 'validate'?" },
                { { "help", "grpah", NULL }, "Unknown verb 'grpah'; did you mean 'graph'?" },
                { { "--jsno", "status", NULL }, "Unknown option '--jsno'; did you mean '--json'?" },
                { { "tree", "--no-legnd", NULL }, "Unknown option '--no-legnd'; did you mean '--no-legend'?" },
                { { "frobnicate", NULL }, "Unknown verb 'frobnicate' (try --help)" },
                { { "--frobnicate", NULL }, "Unknown option '--frobnicate' (try --help)" },
        };
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS_ADDRESS, true);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *out = NULL, *err = NULL;
                g_assert_cmpint(run(cases[i].args, &out, &err), ==, 2);
                g_autofree char *want = g_strdup_printf("sectreectl: %s\n", cases[i].says);
                g_assert_cmpstr(err, ==, want);
                g_assert_cmpstr(out, ==, "");
        }
        g_unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
}

/* Bad usage exits 2 with one line naming the problem, and is found before connecting: the bus
 * address points nowhere, so any connection attempt would fail with 1 instead. */
static void test_usage(void) {
        static const struct {
                const char *args[12];
                const char *says;
        } cases[] = {
                { { "frobnicate", NULL }, "Unknown verb 'frobnicate'" },
                { { "--frobnicate", "status", NULL }, "Unknown option '--frobnicate'" },
                { { "status", "extra", NULL }, "Too many arguments" },
                { { "monitor", "--pid=x", NULL }, "Invalid process id 'x'" },
                { { "monitor", "--pid", "0", NULL }, "Invalid process id '0'" },
                { { "ps", "--comm=x", NULL }, "'ps' does not take --comm" },
                { { "monitor", "1", NULL }, "Too many arguments" },
                { { "tree", "1", "2", NULL }, "Too many arguments" },
                { { "show", NULL }, "Too few arguments" },
                { { "chain", NULL }, "Too few arguments" },
                { { "check", "1", NULL }, "Too few arguments" },
                { { "check", "1", "read", "1", "2", "3", "4", "5", "6", "7", NULL }, "Too many arguments" },
                { { "show", "abc", NULL }, "Invalid filter id 'abc'" },
                { { "show", "0", NULL }, "Invalid filter id '0'" },
                { { "show", "18446744073709551616", NULL }, "Invalid filter id" },
                { { "chain", "12x", NULL }, "Invalid task id '12x'" },
                { { "chain", "0", NULL }, "Invalid task id '0'" },
                { { "chain", "4294967296", NULL }, "Invalid task id" },
                { { "tree", "init", NULL }, "Invalid process id 'init'" },
                { { "graph", "--", "-1", NULL }, "Invalid process id '-1'" },
                { { "check", "abc", "read", NULL }, "Invalid task id 'abc'" },
                { { "check", "1", "no_such_syscall", NULL }, "Unknown system call 'no_such_syscall'" },
                { { "check", "1", "openat", "0xzz", NULL }, "Invalid system call argument '0xzz'" },
                { { "check", "1", "openat", "--", "-", NULL }, "Invalid system call argument '-'" },
                { { "check", "1", "openat", "-100", "0", NULL }, "put -- before negative arguments" },
                { { "check", "-1", "openat", NULL }, "Negative number '-1' taken for an option" },
                { { "tree", "--counts", NULL }, "'tree' does not take --counts" },
                { { "ps", "--file=x", NULL }, "'ps' does not take --file" },
                { { "--json=yes", "status", NULL }, "Invalid --json=yes: expected pretty, short or off" },
                { { "--json=auto", "status", NULL }, "Invalid --json=auto" },
                { { "export", "1", "--format", NULL }, "Option '--format' needs an argument" },
                { { "ps", "--no-pager=yes", NULL }, "Option '--no-pager' takes no value" },
                { { "ps", "--user=no-such-user-here", NULL }, "Unknown user 'no-such-user-here' in --user" },
                { { "check", "1", "0xg", NULL }, "Invalid system call number '0xg'" },
                { { "check", "1", "0x80000000", NULL }, "Invalid system call number '0x80000000'" },
                { { "check", "--arch=x32", "1", "0x100000000", NULL }, "Invalid system call number '0x100000000'" },
                { { "policy", "--file=a.json", "b.json:1", NULL }, "Give --file=FILE or FILE:TID, not both" },
                { { "policy", ":1", NULL }, "Missing snapshot file in ':1'" },
                { { "check", "--arch=vax", "1", "read", NULL }, "Unknown architecture 'vax'" },
                { { "check", "--arch=x86", "1", "openat2x", NULL }, "Unknown system call 'openat2x' on x86" },
                { { "tree", "--arch=x86", NULL }, "'tree' does not take --arch" },
                { { "show", "--pid=1", "2", NULL }, "Give FILTER or --pid=TID, not both" },
                { { "show", "--pid=0", NULL }, "Invalid process id '0'" },
                { { "chain", "--raw", "1", NULL }, "'chain' does not take --raw" },
        };
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS_ADDRESS, true);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *out = NULL, *err = NULL;
                int status = run(cases[i].args, &out, &err);
                g_test_message("case %zu: exit %d, stderr: %s", i, status, err);
                g_assert_cmpint(status, ==, 2);
                g_assert_cmpstr(out, ==, "");
                g_assert_true(g_str_has_prefix(err, "sectreectl: "));
                g_assert_nonnull(strstr(err, cases[i].says));
                g_assert_cmpuint(count_lines(err), ==, 1);
        }
        g_unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
}

/* Valid command lines get as far as connecting: with no bus there, exit 1 and one line. */
static void test_no_bus(void) {
        static const char *const cases[][8] = {
                { "status" }, { "--no-pager" }, { "ps", "--no-legend", "--no-pager" }, { "ps", "1", "sh*", "x" },
                { "monitor", "--pid=1", "--comm=sh*" }, { "--json=pretty", "status" }, { "tree", "1" }, { "graph", "--counts" },
                { "show", "18446744073709551615" }, { "show", "--pid=1" }, { "show", "--raw", "1" }, { "chain", "2147483647" }, { "monitor" },
                { "check", "1", "257" }, { "check", "1", "openat", "--", "-100", "0x10", "18446744073709551615" },
                { "check", "1", "0x101" }, { "check", "--arch=i386", "1", "socketcall" },
                { "check", "--arch=x32", "1", "0xffffffff" }, { "check", "--arch=x86", "1", "4294967295" },
                { "--json", "rescan" },
        };
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS_ADDRESS, true);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *out = NULL, *err = NULL;
                int status = run((const char *const *) cases[i], &out, &err);
                g_test_message("%s: exit %d, stderr: %s", cases[i][0], status, err);
                g_assert_cmpint(status, ==, 1);
                g_assert_cmpstr(out, ==, "");
                g_assert_true(g_str_has_prefix(err, "sectreectl: Failed to connect to the system bus: "));
                g_assert_nonnull(strstr(err, "(is dbus running? DBUS_SYSTEM_BUS_ADDRESS names another bus)"));
                g_assert_cmpuint(count_lines(err), ==, 1);
        }
        g_unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
}

/* Every verb that calls the daemon, on a bus where nobody owns org.sectree1: one line saying, as
 * systemctl does, what failed and the bus's message (not the D-Bus error's name), and the hint. */
static void test_service_unknown(void) {
        static const char properties[] = "read the manager's properties", chain[] = "get the task's chain";
        static const struct {
                const char *action;
                const char *args[8];
        } cases[] = {
                { properties, { "status" } }, { properties, { "status", "--json" } }, { properties, { NULL } },
                { properties, { "--json=short" } }, { "list the tasks", { "ps" } },
                { "list the tasks", { "ps", "--json" } }, { properties, { "tree" } }, { properties, { "tree", "1" } },
                { properties, { "tree", "--json" } }, { "get the filter", { "show", "1" } },
                { "get the filter", { "show", "--json", "1" } }, { chain, { "chain", "1" } },
                { chain, { "check", "1", "openat", "--", "-100", "0" } }, { chain, { "check", "--json", "1", "read" } },
                { properties, { "graph" } }, { properties, { "graph", "--counts", "1" } }, { "rescan", { "rescan" } },
        };
        BusFixture b;
        bus_fixture_start_bus(&b);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *out = NULL, *err = NULL;
                g_autofree char *want = g_strdup_printf("sectreectl: Failed to %s: The name org.sectree1 was not provided "
                                                        "by any .service files (is sectreed running? systemctl start "
                                                        "sectreed)\n",
                                                        cases[i].action);
                int status = run(cases[i].args, &out, &err);
                g_test_message("%s: exit %d, stderr: %s", cases[i].args[0], status, err);
                g_assert_cmpint(status, ==, 1);
                g_assert_cmpstr(out, ==, "");
                g_assert_cmpstr(err, ==, want);
                g_assert_null(strstr(err, "org.freedesktop.DBus.Error"));
        }
        bus_fixture_stop(&b);
}

typedef struct Monitor {
        GPid pid;
        int out_fd, err_fd;
        GString *err;
} Monitor;

static void monitor_start(Monitor *m) {
        char *argv[] = { (char *) sectreectl(), (char *) "monitor", NULL };
        g_autoptr(GError) error = NULL;
        *m = (Monitor) { .err = g_string_new(NULL) };
        if (!g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &m->pid, NULL,
                                      &m->out_fd, &m->err_fd, &error))
                g_error("starting sectreectl monitor: %s", error->message);
}

/* Read the monitor's stderr until it holds needle or 10 s pass. */
static bool monitor_wait_stderr(Monitor *m, const char *needle) {
        gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (!strstr(m->err->str, needle) && g_get_monotonic_time() < end) {
                struct pollfd p = { .fd = m->err_fd, .events = POLLIN };
                char buf[512];
                if (poll(&p, 1, 100) <= 0)
                        continue;
                ssize_t n = read(m->err_fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                g_string_append_len(m->err, buf, n);
        }
        return strstr(m->err->str, needle) != NULL;
}

static int monitor_reap(Monitor *m) {
        int status;
        g_assert_cmpint(waitpid(m->pid, &status, 0), ==, m->pid);
        char buf[512];
        ssize_t n;
        while ((n = read(m->err_fd, buf, sizeof(buf))) > 0)
                g_string_append_len(m->err, buf, n);
        g_assert_cmpint(read(m->out_fd, buf, sizeof(buf)), ==, 0); /* no daemon: no signals printed */
        close(m->out_fd);
        close(m->err_fd);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_monitor_signal(void) {
        static const int signals[] = { SIGTERM, SIGINT };
        BusFixture b;
        bus_fixture_start_bus(&b);
        for (size_t i = 0; i < G_N_ELEMENTS(signals); i++) {
                Monitor m;
                monitor_start(&m);
                g_assert_true(monitor_wait_stderr(&m, "Monitoring org.sectree1 (not running yet)"));
                kill(m.pid, signals[i]);
                g_assert_cmpint(monitor_reap(&m), ==, 0);
                g_string_free(m.err, true);
        }
        bus_fixture_stop(&b);
}

static void test_monitor_bus_gone(void) {
        BusFixture b;
        Monitor m;
        bus_fixture_start_bus(&b);
        monitor_start(&m);
        g_assert_true(monitor_wait_stderr(&m, "Monitoring org.sectree1"));
        bus_fixture_stop(&b); /* kills the dbus-daemon */
        g_assert_cmpint(monitor_reap(&m), ==, 1);
        g_assert_nonnull(strstr(m.err->str, "sectreectl: Disconnected from the bus."));
        g_string_free(m.err, true);
}

/* A monitor started with extra (NULL-terminated) before "monitor", once it is subscribed. */
static void monitor_start_with(Monitor *m, const char *extra) {
        const char *argv[] = { sectreectl(), extra ? extra : "monitor", extra ? "monitor" : NULL, NULL };
        g_autoptr(GError) error = NULL;
        *m = (Monitor) { .err = g_string_new(NULL) };
        if (!g_spawn_async_with_pipes(NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, tests_die_with_parent, NULL,
                                      &m->pid, NULL, &m->out_fd, &m->err_fd, &error))
                g_error("starting sectreectl monitor: %s", error->message);
        g_assert_true(monitor_wait_stderr(m, "Monitoring org.sectree1"));
}

static void monitor_end(Monitor *m) {
        int status;
        kill(m->pid, SIGTERM);
        g_assert_cmpint(waitpid(m->pid, &status, 0), ==, m->pid);
        close(m->out_fd);
        close(m->err_fd);
        g_string_free(m->err, true);
}

/* RestoreFinished, sent by a stand-in owner of org.sectree1, decoded in text and JSON. */
static void test_monitor_restore_finished(void) {
        BusFixture b;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        Monitor text, json;
        bus_fixture_start_bus(&b);
        monitor_start_with(&text, NULL); /* before the name has an owner: nothing to ask it */
        monitor_start_with(&json, "--json=short");
        g_assert_cmpint(sd_bus_open_system(&bus), >=, 0);
        g_assert_cmpint(sd_bus_request_name(bus, "org.sectree1", 0), >=, 0);
        g_assert_cmpint(sd_bus_emit_signal(bus, "/org/sectree1", "org.sectree1.Manager", "RestoreFinished", "tus",
                                           UINT64_C(7), UINT32_C(4242), "released"), >=, 0);
        g_assert_cmpint(sd_bus_flush(bus), >=, 0);
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        g_autoptr(GString) tbuf = g_string_new(NULL), jbuf = g_string_new(NULL);
        g_autofree char *tline0 = tests_read_line(text.out_fd, tbuf, deadline); /* DaemonAppeared */
        g_autofree char *jline0 = tests_read_line(json.out_fd, jbuf, deadline);
        g_autofree char *tline = tests_read_line(text.out_fd, tbuf, deadline);
        g_autofree char *jline = tests_read_line(json.out_fd, jbuf, deadline);
        g_assert_nonnull(tline);
        g_assert_nonnull(jline);
        g_assert_true(g_str_has_suffix(tline, " RestoreFinished id=7 owner_uid=4242 reason=released"));
        json_auto_t *o = json_loads(jline, 0, NULL);
        g_assert_nonnull(o);
        g_assert_cmpstr(json_string_value(json_object_get(o, "signal")), ==, "RestoreFinished");
        g_assert_cmpint(json_integer_value(json_object_get(o, "id")), ==, 7);
        g_assert_cmpint(json_integer_value(json_object_get(o, "owner_uid")), ==, 4242);
        g_assert_cmpstr(json_string_value(json_object_get(o, "reason")), ==, "released");
        monitor_end(&text);
        monitor_end(&json);
        bus = sd_bus_flush_close_unref(bus);
        bus_fixture_stop(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/client/help", test_help);
        g_test_add_func("/client/verb-help", test_verb_help);
        g_test_add_func("/client/suggestions", test_suggestions);
        g_test_add_func("/client/usage", test_usage);
        g_test_add_func("/client/no-bus", test_no_bus);
        g_test_add_func("/client/service-unknown", test_service_unknown);
        g_test_add_func("/client/monitor-signal", test_monitor_signal);
        g_test_add_func("/client/monitor-bus-gone", test_monitor_bus_gone);
        g_test_add_func("/client/monitor-restore-finished", test_monitor_restore_finished);
        return g_test_run();
}
