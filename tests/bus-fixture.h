/* bus-fixture.h: a private system-like dbus-daemon with sectree's bus policy, and the real sectreed
 * started on it, for daemon and client tests */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "scenario.h"

typedef struct BusFixture {
        char *dir;       /* temporary directory (0755: unprivileged clients must reach the socket) */
        char *address;   /* unix:path=... of the private bus */
        GPid bus_pid;
        GPid daemon_pid; /* 0 when not running */
        char *state_dir;
        int notify_fd;   /* our end of the daemon's NOTIFY_SOCKET */
        char *notify_path;
} BusFixture;

/* Start the bus, and point DBUS_SYSTEM_BUS_ADDRESS of this process at it. */
void bus_fixture_start_bus(BusFixture *b);
/* The same with passwd_line (may be NULL) added to the bus's /etc/passwd only (a mount namespace
 * of its own): dbus-daemon refuses a uid it cannot look up, sectreed must not need to. */
void bus_fixture_start_bus_knowing(BusFixture *b, const char *passwd_line);
/* Start sectreed (no verb: the service) with extra arguments (NULL-terminated, may be NULL) and
 * extra environment entries ("NAME=value", NULL-terminated, may be NULL); waits for READY=1 on
 * NOTIFY_SOCKET (fails the test after timeout_sec). */
void bus_fixture_start_daemon(BusFixture *b, char **args, char **env, unsigned timeout_sec);
/* For a daemon test: if it may run (tests_require_root()), mount tracefs if needed, start the bus
 * and start sectreed on it with args and env as bus_fixture_start_daemon() does (30 s to get
 * ready), and return true; otherwise return false with b untouched (nothing to stop). */
bool bus_fixture_start_all(BusFixture *b, char **args, char **env);
/* The same with a scenario made by build() before the daemon starts (its start-up scan must find
 * it). Returns the scenario, or NULL if the test may not run. */
Scenario *bus_fixture_start_with_scenario(BusFixture *b, Scenario *(*build)(void), char **args, char **env);
/* Send sig to the daemon and reap it; returns its exit status (128 + signal when killed). */
int bus_fixture_stop_daemon(BusFixture *b, int sig);
/* Stop everything and remove the directory. */
void bus_fixture_stop(BusFixture *b);
/* The end of a daemon test: SIGTERM must make the daemon exit 0 (else the test fails); then
 * bus_fixture_stop(). */
void bus_fixture_finish(BusFixture *b);
/* What a daemon started between daemon_log_begin() and daemon_log_started() writes on its stderr
 * (it inherits the test's, which points at the file meanwhile): a file the test reads, copied to
 * the test's stderr by daemon_log_end(). */
typedef struct DaemonLog {
        int saved_fd; /* the test's stderr while the daemon starts */
        char *path;
        const char *const *lines; /* for daemon_log_has(): NULL-terminated, each after the one before */
} DaemonLog;

void daemon_log_begin(DaemonLog *l);
void daemon_log_started(DaemonLog *l);
/* What the daemon wrote so far. */
char *daemon_log_text(const DaemonLog *l);
/* How many times what is in the log. */
unsigned daemon_log_count(const DaemonLog *l, const char *what);
/* tests_wait_for() condition: the log has l->lines, in that order. */
bool daemon_log_has(void *userdata);
void daemon_log_end(DaemonLog *l);

/* Run a command against the bus; as_nobody runs it with uid/gid 65534 (setpriv). Returns the exit
 * status; *out and *err get what it printed (may be NULL). */
int bus_fixture_run(BusFixture *b, bool as_nobody, char **argv, char **out, char **err);
