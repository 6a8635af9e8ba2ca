/* restores-dbus.h: the bus side of restores: Restore(), ListRestores(), ReleaseRestore(),
 * TakeRestoreFds() and the RestoreFinished signal of org.sectree1.Manager, in a table of their own */
#pragma once

#include <systemd/sd-bus.h>

#include "service/restores.h"

/* Export the restore methods on bus (the restores are their userdata), start executors' transient
 * units through it, and send RestoreFinished whenever a restore ends. */
int restores_bus_connect(Restores *rs, sd_bus *bus);
