/* manager-dbus.h: the bus side of the service: the org.sectree1.Manager object, its signals and
 * its properties */
#pragma once

#include "bus/bus-args.h"
#include "bus/bus-errors.h"
#include "service/manager.h"

/* Connect to the system bus, export the object and take the name; from then on the bus hears of
 * what the manager stores (manager_set_listener()): the signals for what a batch changed, in order
 * (after a full pass: Resynced last), then PropertiesChanged for the counts that changed. */
int manager_bus_connect(Manager *m);
