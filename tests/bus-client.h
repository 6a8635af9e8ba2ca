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

/* A method call of the Manager with a bounded wait (BUS_CLIENT_CALL_TIMEOUT_USEC): a daemon that
 * blocks fails the test instead of hanging it. Returns sd_bus_call()'s result. */
#define BUS_CLIENT_CALL_TIMEOUT_USEC (10 * 1000000ULL)
int bus_client_call(sd_bus *bus, const char *member, sd_bus_error *error, sd_bus_message **reply, const char *types,
                    ...);
/* CreateSnapshot(root, {name} or {}); 0 on failure with *error set. */
uint64_t bus_client_create_snapshot(sd_bus *bus, pid_t root, const char *name, sd_bus_error *error);
/* The same, failing the test on an error. */
uint64_t bus_client_create_ok(sd_bus *bus, pid_t root, const char *name);
/* The processes ListTasks lists (tgids, as pointers); fails the test if the call fails. */
GHashTable *bus_client_listed_tgids(sd_bus *bus);
/* Whether ListTasks lists tgid within timeout_ms (asked on a connection of its own each time). */
bool bus_client_wait_listed(pid_t tgid, unsigned timeout_ms);
/* error is set and named name (the test fails otherwise); frees it. */
void bus_client_assert_error(sd_bus_error *error, const char *name);

/* An asynchronous call's outcome (sd_bus_call_method_async() with bus_client_on_reply). */
typedef struct BusPending {
        bool done;
        sd_bus_error error;
        uint64_t id; /* a reply "t" (ImportSnapshot's, CreateSnapshot's) */
} BusPending;
int bus_client_on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);
/* Wait on the bus and on fd (events; fd < 0: none) for up to 50 ms, then dispatch what came in. */
void bus_client_pump(sd_bus *bus, int fd, short events);
/* Dispatch until p is done, for at most timeout_ms; fails the test after that. */
void bus_client_wait(sd_bus *bus, BusPending *p, unsigned timeout_ms, const char *what);

/* ExportSnapshot into a pipe that is read as the daemon writes: the bytes, or NULL with *error. */
GBytes *bus_client_export_pipe(sd_bus *bus, uint64_t id, const char *format, sd_bus_error *error);
/* The snapshot exported as JSON and read back; fails the test if either fails. */
struct Forest *bus_client_export_forest(sd_bus *bus, uint64_t id);
/* ImportSnapshot from a pipe that is filled as the daemon reads: the new id, or 0 with *error. */
uint64_t bus_client_import_pipe(sd_bus *bus, const void *data, size_t size, sd_bus_error *error);
