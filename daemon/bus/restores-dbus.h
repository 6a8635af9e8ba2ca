/* restores-dbus.h: the bus side of restores: Restore(), ListRestores(), ReleaseRestore() and the
 * RestoreFinished signal of org.sectree1.Manager (their vtable rows are in manager-dbus.c) */
#pragma once

#include <systemd/sd-bus.h>

#include "bus/bus-errors.h"
#include "service/manager.h"


int method_restore(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_restores(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_release_restore(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* Send RestoreFinished whenever a restore ends. */
void restores_bus_connect(Manager *m);
