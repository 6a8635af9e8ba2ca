/* snapshot-units.h: the systemd unit, user unit and machine a snapshot records of each process
 * (format version 2): setting them, what makes a name acceptable, and which version a forest needs */
#pragma once

#include <stdbool.h>

#include "core/forest.h"

/* The bytes of a unit or user unit name (systemd's UNIT_NAME_MAX, 256, less its NUL) and of a
 * machine name (the same bound: machined's names are shorter, a scope's unescaped name is not). */
#define SNAPSHOT_MAX_UNIT 255

/* Set p's unit, user unit and machine (NULL or "" for none); they are copied as given. */
int process_set_units(Process *p, const char *unit, const char *user_unit, const char *machine);
/* Any of the three set? */
bool process_has_units(const Process *p);
bool forest_has_units(const Forest *f);

/* The format version a snapshot of f is written in: SNAPSHOT_FORMAT_VERSION_UNITS when some
 * process records a unit, else SNAPSHOT_FORMAT_VERSION_1, so that a snapshot holding nothing
 * new stays readable by the readers of version 1. */
unsigned snapshot_format_version_of(const Forest *f);

/* Is s acceptable as a recorded name: 1..SNAPSHOT_MAX_UNIT bytes of UTF-8 without control
 * characters (a name is shown in tables and on terminals)? NULL is (it means none). */
bool snapshot_unit_name_valid(const char *s);
/* What the daemon records of a name read from a cgroup (which is any bytes): NULL for none or
 * empty, else a malloc'ed copy made acceptable: invalid UTF-8 replaced, control characters as '?',
 * cut to SNAPSHOT_MAX_UNIT bytes at a character boundary. -ENOMEM. */
int snapshot_unit_name_clean(const char *s, char **ret);
