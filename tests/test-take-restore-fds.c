/* test-take-restore-fds.c: the fds of a restore that its Restore() reply could not carry are
 * held for TakeRestoreFds 60 s (RESTORE_FDS_HOLD_USEC, which no knob shortens) and then closed:
 * the real sectreed on a private dbus-daemon, waiting out the real expiry (about 61 s in all) */
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "tests-util.h"

#define RESTORE_CALL_TIMEOUT_USEC (120 * 1000000ULL)
/* What Debian's system bus (dbus/private-system-bus.conf.in) lets one message carry. */
#define BUS_MAX_MESSAGE_FDS 16
#define CHILDREN 19
#define PROCESSES (CHILDREN + 2) /* and the scenario's root, and their parent */
/* The expiry and then some: the wait for it fails the test only if it never comes. */
#define EXPIRY_PATIENCE_MS (60000 + TESTS_PATIENCE_MS)

/* A process with a filter and CHILDREN children under it: with the scenario's root, 21 processes,
 * a pidfd each, more than a message carries. */
static Scenario *many_processes(void) {
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask p = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        for (int i = 0; i < CHILDREN; i++)
                g_assert_cmpint(scenario_fork(s, p), >=, 0);
        return s;
}

/* Skip a container of type contents. */
static void skip_array(sd_bus_message *m, const char *contents) {
        g_assert_cmpint(sd_bus_message_enter_container(m, 'a', contents), >, 0);
        while (sd_bus_message_skip(m, contents) > 0)
                ;
        g_assert_cmpint(sd_bus_message_exit_container(m), >=, 0);
}

/* The number of elements of the array of type contents (the fds stay the message's). */
static size_t count_array(sd_bus_message *m, const char *contents) {
        size_t n = 0;
        g_assert_cmpint(sd_bus_message_enter_container(m, 'a', contents), >, 0);
        while (sd_bus_message_skip(m, contents) > 0)
                n++;
        g_assert_cmpint(sd_bus_message_exit_container(m), >=, 0);
        return n;
}

/* Restore(snapshot, {pidfds: true}): the restore's id; the reply carries as many fds as it may. */
static uint64_t restore_with_pidfds(sd_bus *bus, uint64_t snapshot) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id;
        int verified;
        g_assert_cmpint(sd_bus_message_new_method_call(bus, &m, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                       "Restore"), >=, 0);
        g_assert_cmpint(sd_bus_message_append(m, "ta{sv}", snapshot, 1, "pidfds", "b", 1), >=, 0);
        if (sd_bus_call(bus, m, RESTORE_CALL_TIMEOUT_USEC, &error, &reply) < 0)
                g_error("Restore: %s: %s", error.name, error.message);
        g_assert_cmpint(sd_bus_message_read(reply, "tb", &id, &verified), >, 0);
        g_assert_true(verified);
        skip_array(reply, "s");
        skip_array(reply, "(uu)");
        g_assert_cmpuint(count_array(reply, "h"), ==, BUS_MAX_MESSAGE_FDS);
        skip_array(reply, "(uu)");
        g_assert_cmpuint(count_array(reply, "(th)"), ==, 0);
        return id;
}

/* A restore of 21 processes with pidfds: the reply carries 16 of them and the daemon holds the
 * other 5; none is taken for 60 s: the daemon closes them (and says how many), TakeRestoreFds then
 * fails with RestoreFailed, and the restore itself lives on until it is released. */
static void test_fds_expire(void) {
        if (!tests_require_root())
                return;
        Scenario *s = many_processes();
        BusFixture b;
        DaemonLog dl;
        daemon_log_begin(&dl);
        g_assert_true(bus_fixture_start_all(&b, NULL, NULL));
        daemon_log_started(&dl);
        sd_bus *bus = bus_client_open();
        uint64_t snapshot = bus_client_create_ok(bus, scenario_root_pid(s), NULL);
        uint64_t id = restore_with_pidfds(bus, snapshot);

        g_autofree char *expired = g_strdup_printf("Restore %" PRIu64 ": %d fds were not taken in time", id,
                                                   PROCESSES - BUS_MAX_MESSAGE_FDS);
        dl.lines = (const char *const[]) { expired, NULL };
        if (!tests_wait_for(daemon_log_has, &dl, EXPIRY_PATIENCE_MS))
                g_error("the daemon did not close the fds not taken: no '%s' in its log", expired);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(bus, "TakeRestoreFds", &error, NULL, "t", id), <, 0);
        g_assert_nonnull(error.message);
        g_assert_nonnull(strstr(error.message, "were not taken within 60 s"));
        bus_client_assert_error(&error, "org.sectree1.Error.RestoreFailed");
        g_assert_cmpint(bus_client_call(bus, "ReleaseRestore", &error, NULL, "t", id), >=, 0);

        sd_bus_flush_close_unref(bus);
        bus_fixture_finish(&b);
        daemon_log_end(&dl);
        scenario_free(s);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/restore-fds/expire", test_fds_expire);
        return g_test_run();
}
