/* units-dbus.h: ListProcessUnits() of org.sectree1.Manager, in a table of its own: the systemd
 * unit, user unit and machine of each process the caller may see */
#pragma once

#include <systemd/sd-bus.h>

#include "bus/bus-args.h"

/* Export ListProcessUnits() on the manager's bus; b is its userdata. */
int units_bus_connect(ManagerBus *b);
