/* manager-units.h: ListProcessUnits: the systemd unit, user unit and machine of each process,
 * and the --unit, --machine and --user filters on them */
#pragma once

#include <systemd/sd-bus.h>

#include "context.h"
#include "core/forest.h"
#include "core/util.h"

#define UNIT_OWNER_NONE UINT32_MAX

typedef struct UnitRecord {
        uint32_t pid;
        char *unit, *user_unit, *machine; /* NULL: none */
        uint32_t owner;                   /* the uid of the user slice; UNIT_OWNER_NONE */
        uint32_t threads;                 /* ListUnfilteredProcesses: the process's threads */
} UnitRecord;

typedef struct UnitList {
        UnitRecord *items; /* sorted by pid */
        size_t n, allocated;
} UnitList;

void unit_list_done(UnitList *l);

/* ListProcessUnits. A daemon without the method gives an empty list (not an error). Logs. */
int manager_list_units(sd_bus *bus, UnitList *ret);
/* ListUnfilteredProcesses: the processes under no filter the caller may see, with their threads
 * and units. A daemon without the method gives an empty list. Logs. */
int manager_list_unfiltered(sd_bus *bus, UnitList *ret);

/* The units a snapshot records of its processes (format version 2), as ListProcessUnits has them;
 * the slice owner only where the unit says it (user@UID.service). */
int unit_list_from_forest(const Forest *f, UnitList *ret);

/* The record of process pid, or NULL. */
const UnitRecord *unit_list_find(const UnitList *l, uint32_t pid);

/* What a table shows: "sshd.service", "user@1000.service/app.service" (a user unit under its
 * manager), NULL for none. Into buf. */
const char *unit_record_label(const UnitRecord *u, char *buf, size_t len);

/* --unit (a glob on the unit or user unit), --machine (a glob on the machine) and --user (a name
 * or uid: the owner of the user slice) given? */
bool unit_filter_given(const Context *c);
/* Does the process of u (NULL: nothing known) pass them? */
bool unit_filter_matches(const Context *c, const UnitRecord *u);
/* The units when a filter is given or a table shows them (fetched once per run); a daemon without
 * ListProcessUnits leaves the list empty. Logs. */
int context_list_units(Context *c, UnitList *ret);
/* manager_list_unfiltered() on the context's bus. */
int context_list_unfiltered(Context *c, UnitList *ret);
/* The units of f's processes: those the snapshot file of --file records (none before format
 * version 2), or the daemon's. Logs its failure. */
int context_units_of(Context *c, const Forest *f, UnitList *ret);
