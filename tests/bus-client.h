/* bus-client.h: sd-bus helpers for tests that talk to sectreed on the private bus: connecting, and
 * logging the Manager's signals as lines to wait for. Only programs that link the daemon library
 * (which brings libsystemd) may use them. */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

#define BUS_CLIENT_DEST "org.sectree1"
#define BUS_CLIENT_PATH "/org/sectree1"
#define BUS_CLIENT_IFACE "org.sectree1.Manager"

/* A connection to the system bus, i.e. to the private bus that bus_fixture_start_bus() pointed
 * DBUS_SYSTEM_BUS_ADDRESS at; fails the test if there is none. */
sd_bus *bus_client_open(void);

/* Turns a signal into the line to log (g_free()d by the log), or NULL to log nothing. */
typedef char *(*BusSignalFormat)(sd_bus_message *m);

typedef struct BusSignalLog {
        GPtrArray *lines; /* of char *, in the order the signals came; g_ptr_array_unref() it when done */
        BusSignalFormat format;
} BusSignalLog;

/* Subscribe to every signal of the Manager on bus, logging what format makes of each. */
void bus_signal_log_start(BusSignalLog *log, sd_bus *bus, BusSignalFormat format);
/* Dispatch the signals that come on bus until a line equal to want is in the log, for up to
 * timeout_ms. Returns whether it is. */
bool bus_signal_log_wait(BusSignalLog *log, sd_bus *bus, const char *want, unsigned timeout_ms);
/* The same with a printf format and 3 s, failing the test if the line does not come. */
void bus_signal_log_assert(BusSignalLog *log, sd_bus *bus, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
