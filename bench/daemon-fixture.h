/* daemon-fixture.h: a private system-like dbus-daemon and the real sectreed started on it, for
 * the figures that measure the service (tests/bus-fixture.c without GLib) */
#pragma once

#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "core/util.h"

/*
 * The bus is configured from dbus/private-system-bus.conf.in (the policy of a system bus with
 * dbus/org.sectree1.conf included) in a temporary directory; sectreed (the binary this build made,
 * or $SECTREED) runs the service with --state-dir in that directory, DBUS_SYSTEM_BUS_ADDRESS
 * pointing at the bus, and NOTIFY_SOCKET at a datagram socket of ours: it is ready when it sends
 * READY=1 (the socket is removed then: its later STATUS= messages go nowhere). Both die with the benchmark (PR_SET_PDEATHSIG). The daemon's stderr goes to
 * sectreed.log in the directory, printed when it fails to start.
 */

typedef struct DaemonFixture DaemonFixture;

typedef struct DaemonFixtureOptions {
        char **env;                 /* extra "NAME=value" entries for sectreed, NULL-terminated; may be NULL */
        const char *arg;            /* one more option for sectreed (e.g. "--filter-budget=0"); may be NULL */
        unsigned ready_timeout_sec; /* 0: 60 */
} DaemonFixtureOptions;

int daemon_fixture_new(const DaemonFixtureOptions *o, DaemonFixture **ret);
/* SIGTERM (SIGKILL if it does not exit in time) to the daemon and the bus, reap both, remove the
 * directory. Accepts NULL. */
DaemonFixture *daemon_fixture_free(DaemonFixture *f);
DEFINE_CLEANUP(DaemonFixture *, daemon_fixture_free);

pid_t daemon_fixture_daemon_pid(const DaemonFixture *f);
pid_t daemon_fixture_bus_pid(const DaemonFixture *f);
/* From starting sectreed to its READY=1. */
uint64_t daemon_fixture_ready_nsec(const DaemonFixture *f);
/* A new client connection to the private bus. */
int daemon_fixture_connect(const DaemonFixture *f, sd_bus **ret);
/* Bytes of the daemon's state database (its pages, as a reader sees them); 0 if unknown. */
uint64_t daemon_fixture_state_bytes(const DaemonFixture *f);
/* What the daemon wrote to its stderr so far (malloc'ed). */
/* The size of the state database's write-ahead log file (0 if there is none). */
uint64_t daemon_fixture_wal_bytes(const DaemonFixture *f);
int daemon_fixture_read_log(const DaemonFixture *f, char **ret);
/* Whether the daemon is still running (not reaped). */
bool daemon_fixture_daemon_alive(DaemonFixture *f);
