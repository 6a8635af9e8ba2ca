/* test-state-lock.c: one daemon per state directory: a second sectreed on the same --state-dir is
 * refused before it opens the database, with exit status 1 and a message naming the first one's
 * pid; the first goes on serving; `sectreed scan` takes no lock; once the first stops, a new
 * daemon starts on the directory (the lock went with the process, the file left behind does not
 * block). */
#include <signal.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "tests-util.h"

/* Run sectreed with args (bounded: a daemon that is not refused would run on) and return its
 * exit status; *out (when not NULL) gets its stdout, *err its stderr. */
static int run_sectreed(const char *const *args, char **out, char **err) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(argv, g_strdup("timeout"));
        g_ptr_array_add(argv, g_strdup("30"));
        g_ptr_array_add(argv, g_strdup(g_getenv("SECTREED")));
        for (const char *const *a = args; *a; a++)
                g_ptr_array_add(argv, g_strdup(*a));
        g_ptr_array_add(argv, NULL);
        return tests_run_capture((char **) argv->pdata, out, err);
}

static void rescan_ok(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "Rescan", &error, NULL, "") < 0)
                g_error("Rescan: %s", error.message);
}

static void test_second_refused(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        g_autofree char *state_arg = g_strdup_printf("--state-dir=%s", b.state_dir);
        g_autofree char *err = NULL;
        g_autofree char *out = NULL;
        int status = run_sectreed((const char *const[]) { state_arg, NULL }, &out, &err);
        g_test_message("second sectreed: status %d, stderr: %s", status, err);
        g_assert_cmpint(status, ==, 1);
        g_autofree char *want = g_strdup_printf("The state directory %s is in use by another sectreed (pid %d)",
                                                b.state_dir, (int) b.daemon_pid);
        if (!strstr(err, want))
                g_error("the refusal does not say '%s':\n%s", want, err);

        /* the first is unharmed: alive, on the bus, storing */
        g_assert_cmpint(kill(b.daemon_pid, 0), ==, 0);
        rescan_ok();

        /* scan reads the forest once and needs no lock */
        g_autofree char *root = g_strdup_printf("--root=%d", (int) getpid());
        g_autofree char *scan_out = NULL, *scan_err = NULL;
        g_assert_cmpint(run_sectreed((const char *const[]) { "scan", root, state_arg, NULL }, &scan_out, &scan_err), ==, 0);
        g_autofree char *me = g_strdup_printf("test-state-lock[%d]", (int) getpid());
        if (!strstr(scan_out, me))
                g_error("sectreed scan --root=%d does not list '%s':\n%s", (int) getpid(), me, scan_out);

        /* the lock goes with its holder, even a killed one: the next daemon starts */
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGKILL), ==, 128 + SIGKILL);
        bus_fixture_start_daemon(&b, NULL, NULL, 30);
        rescan_ok();
        bus_fixture_finish(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/state-lock/second-refused", test_second_refused);
        return g_test_run();
}
