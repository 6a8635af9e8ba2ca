/* manager-dbus.h: the bus side of the service: the org.sectree1.Manager object, its signals and
 * its properties */
#pragma once

#include "bus/bus-args.h"
#include "bus/bus-errors.h"
#include "service/manager.h"

/* Connect to the system bus, export the object (services: manager, transfers and policy_jobs, which
 * the object uses and does not own) and take the name; from then on the bus hears of what the
 * manager stores (manager_set_listener()): the signals for what a batch changed, in order (after a
 * full pass: Resynced last), then PropertiesChanged for the counts that changed. When the loop
 * exits, parked calls are answered and transfers and analyses cancelled before the bus closes. */
int manager_bus_new(const ManagerBus *services, ManagerBus **ret);
/* The manager no longer reports to it; the connection is flushed and closed. */
ManagerBus *manager_bus_free(ManagerBus *b);
DEFINE_CLEANUP(ManagerBus *, manager_bus_free);
