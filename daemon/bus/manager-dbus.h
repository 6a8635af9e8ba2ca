/* manager-dbus.h: the bus side of the service: the org.sectree1.Manager object, its signals and
 * its properties */
#pragma once

#include "bus/bus-errors.h"
#include "service/manager.h"

#define MANAGER_BUS_NAME "org.sectree1"
#define MANAGER_OBJECT_PATH "/org/sectree1"
#define MANAGER_INTERFACE "org.sectree1.Manager"

/* Connect to the system bus, export the object and take the name; from then on the bus hears of
 * what the manager stores (manager_set_listener()): the signals for what a batch changed, in order
 * (after a full pass: Resynced last), then PropertiesChanged for the counts that changed. */
int manager_bus_connect(Manager *m);

/* The live forest for a method (manager_live()), or ScanFailed set in error. */
int live_or_fail(Manager *m, const Forest **ret, sd_bus_error *error);

/* A method's a{sv} of options: for each entry, one() is called with its key and must read the
 * variant that follows (bus_read_option() reads one of a basic type) or refuse the key with
 * bus_unknown_option(). */
typedef int (*BusOptionReader)(sd_bus_message *msg, const char *key, void *userdata, sd_bus_error *error);
int bus_read_options(sd_bus_message *msg, BusOptionReader one, void *userdata, sd_bus_error *error);
int bus_read_option(sd_bus_message *msg, const char *key, const char *want, void *ret, sd_bus_error *error);
int bus_unknown_option(sd_bus_error *error, const char *key);
