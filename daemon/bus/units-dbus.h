/* units-dbus.h: ListProcessUnits() of org.sectree1.Manager, in a table of its own: the systemd
 * unit, user unit and machine of each process the caller may see */
#pragma once

#include <systemd/sd-bus.h>

#include "service/manager.h"

/* Export ListProcessUnits() on bus; the manager is its userdata. */
int units_bus_connect(Manager *m, sd_bus *bus);
