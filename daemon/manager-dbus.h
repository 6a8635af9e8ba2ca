/* manager-dbus.h: the bus side of the service: the org.sectree1.Manager object, its signals and
 * its properties */
#pragma once

#include "manager.h"

#define MANAGER_BUS_NAME "org.sectree1"
#define MANAGER_OBJECT_PATH "/org/sectree1"
#define MANAGER_INTERFACE "org.sectree1.Manager"

/* Connect to the system bus, export the object and take the name. */
int manager_bus_connect(Manager *m);

/* The signals for what a stored batch changed, in order (after a full pass: Resynced with reason
 * last, unless reason is NULL), then PropertiesChanged for the counts that changed. Call only once
 * the changes are committed. */
void manager_bus_announce(Manager *m, const LiveChanges *c, const char *reason);

int manager_send_snapshot_created(Manager *m, uint64_t id, const char *name, uid_t owner);
int manager_send_snapshot_deleted(Manager *m, uint64_t id);
