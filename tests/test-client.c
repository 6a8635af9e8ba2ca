/* test-client.c: sectreectl without a daemon: help, bad usage (exit 2, before any connection),
 * no bus, a bus without org.sectree1 (exit 1, the D-Bus error on one line), and monitor's
 * lifecycle (SIGTERM ends it with 0, losing the bus with 1) */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

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

        g_autofree char *vout = NULL;
        const char *version[] = { "--version", NULL };
        g_assert_cmpint(run(version, &vout, NULL), ==, 0);
        g_assert_true(g_str_has_prefix(vout, "sectreectl "));
}

/* Bad usage exits 2 with one line naming the problem, and is found before connecting: the bus
 * address points nowhere, so any connection attempt would fail with 1 instead. */
static void test_usage(void) {
        static const struct {
                const char *args[12];
                const char *says;
        } cases[] = {
                { { NULL }, "No verb" },
                { { "frobnicate", NULL }, "Unknown verb 'frobnicate'" },
                { { "--frobnicate", "status", NULL }, "Unknown option '--frobnicate'" },
                { { "status", "extra", NULL }, "Too many arguments" },
                { { "ps", "1", NULL }, "Too many arguments" },
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
                { "status" }, { "ps", "--no-legend", "--no-pager" }, { "tree", "1" }, { "graph", "--counts" },
                { "show", "18446744073709551615" }, { "chain", "2147483647" }, { "monitor" },
                { "check", "1", "257" }, { "check", "1", "openat", "--", "-100", "0x10", "18446744073709551615" },
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
                g_assert_cmpuint(count_lines(err), ==, 1);
        }
        g_unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
}

/* Every verb that calls the daemon, on a bus where nobody owns org.sectree1. */
static void test_service_unknown(void) {
        static const char *const cases[][8] = {
                { "status" }, { "status", "--json" }, { "ps" }, { "ps", "--json" }, { "tree" }, { "tree", "1" },
                { "tree", "--json" }, { "show", "1" }, { "show", "--json", "1" }, { "chain", "1" },
                { "check", "1", "openat", "--", "-100", "0" }, { "check", "--json", "1", "read" },
                { "graph" }, { "graph", "--counts", "1" }, { "rescan" },
        };
        BusFixture b;
        bus_fixture_start_bus(&b);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *out = NULL, *err = NULL;
                int status = run((const char *const *) cases[i], &out, &err);
                g_test_message("%s: exit %d, stderr: %s", cases[i][0], status, err);
                g_assert_cmpint(status, ==, 1);
                g_assert_cmpstr(out, ==, "");
                g_assert_true(g_str_has_prefix(err, "sectreectl: org.freedesktop.DBus.Error.ServiceUnknown: "));
                g_assert_cmpuint(count_lines(err), ==, 1);
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

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tests_name_hangs();
        g_test_add_func("/client/help", test_help);
        g_test_add_func("/client/usage", test_usage);
        g_test_add_func("/client/no-bus", test_no_bus);
        g_test_add_func("/client/service-unknown", test_service_unknown);
        g_test_add_func("/client/monitor-signal", test_monitor_signal);
        g_test_add_func("/client/monitor-bus-gone", test_monitor_bus_gone);
        return g_test_run();
}
