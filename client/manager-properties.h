/* manager-properties.h: the Manager's properties, read in one GetAll call */
#pragma once

#include <systemd/sd-bus.h>

#include "core/util.h"

typedef struct ManagerProperties {
        char *version, *backend, *identity;
        uint32_t tasks, filters, listeners;
        uint64_t last_scan_usec; /* CLOCK_REALTIME, 0 if never */
} ManagerProperties;

void manager_properties_done(ManagerProperties *p);

/* Logs its failure once (a D-Bus error as "NAME: message") and returns negative errno. */
int manager_get_properties(sd_bus *bus, ManagerProperties *ret);
