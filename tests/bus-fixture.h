/* bus-fixture.h: a private system-like dbus-daemon with sectree's bus policy, and the real sectreed
 * started on it, for daemon and client tests */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

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
/* Start sectreed (no verb: the service) with extra arguments (NULL-terminated, may be NULL) and
 * extra environment entries ("NAME=value", NULL-terminated, may be NULL); waits for READY=1 on
 * NOTIFY_SOCKET (fails the test after timeout_sec). */
void bus_fixture_start_daemon(BusFixture *b, char **args, char **env, unsigned timeout_sec);
/* Send sig to the daemon and reap it; returns its exit status (128 + signal when killed). */
int bus_fixture_stop_daemon(BusFixture *b, int sig);
/* Stop everything and remove the directory. */
void bus_fixture_stop(BusFixture *b);
/* Run a command against the bus; as_nobody runs it with uid/gid 65534 (setpriv). Returns the exit
 * status; *out and *err get what it printed (may be NULL). */
int bus_fixture_run(BusFixture *b, bool as_nobody, char **argv, char **out, char **err);
/* Wait up to timeout_ms for cond(userdata) to become true, polling every few ms. */
bool bus_fixture_wait_for(bool (*cond)(void *userdata), void *userdata, unsigned timeout_ms);
