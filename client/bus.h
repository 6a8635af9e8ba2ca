/* bus.h: the client's bottom layer: the bus connection, calling the manager, mapping D-Bus errors to lines */
#pragma once

#include <systemd/sd-bus.h>

#define SECTREE_BUS_NAME "org.sectree1"
#define SECTREE_OBJECT_PATH "/org/sectree1"
#define SECTREE_MANAGER_INTERFACE "org.sectree1.Manager"

/* Log a failed call on one line, as systemctl does: "sectreectl: Failed to <what>: <message>", the
 * D-Bus error's message (its name only when it has none), else strerror(r). A what of "call
 * METHOD" is said as what the user asked for ("list the tasks"). Returns r (negative). */
int bus_log_error(int r, const sd_bus_error *error, const char *what);

/* Log a failure to parse a reply of method. Returns r. */
int bus_log_parse_error(int r, const char *method);

/* Call a Manager method; on failure log it and return negative errno. */
int bus_call_manager(sd_bus *bus, const char *method, sd_bus_message **reply, const char *types, ...);

/* Connect to the system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured); logs a failure. */
int bus_open_system(sd_bus **ret);
