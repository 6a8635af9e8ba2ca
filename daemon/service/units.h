/* units.h: the systemd unit, user unit and machine of a process, read from its cgroup */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/hashmap.h"
#include "core/util.h"

#define UNIT_OWNER_NONE UINT32_MAX

typedef struct ProcessUnit {
        char *unit;      /* "sshd.service", "user@1000.service", "machine-bar.scope"; NULL: none */
        char *user_unit; /* "foo.service" under user@1000.service; NULL: none */
        char *machine;   /* "bar" for machine.slice/machine-bar.scope; NULL: none */
        uint32_t owner;  /* the uid of the user slice (user-1000.slice); UNIT_OWNER_NONE: none */
} ProcessUnit;

void process_unit_done(ProcessUnit *u);

/* A process's units, as ListProcessUnits lists them. */
typedef struct PidUnit {
        pid_t pid;
        uint32_t threads; /* ListUnfilteredProcesses: the process's threads; else 0 */
        ProcessUnit unit;
} PidUnit;

PidUnit *pid_units_free(PidUnit *l, size_t n);

/* What libsystemd reads from pid's cgroup (no systemd needed at run time). A machine's name comes
 * from systemd-machined's records when it runs, else from the scope's name as machined names it
 * (machine-NAME.scope, NAME unescaped). A process without any of these gives all NULL: that is not
 * an error. -ESRCH when the process is gone, -ENOMEM. */
int process_unit_read(pid_t pid, ProcessUnit *ret);

/* process_unit_read() answered once per cgroup, for a walk over many processes: libsystemd reads
 * a process's cgroup four times, 120 us a process, where the key is one small read. */
typedef struct ProcessUnitCache {
        Hashmap by_hash; /* cgroup_key_hash() -> index + 1 */
        struct CachedUnit {
                char *cgroup;
                ProcessUnit unit;
        } *items;
        size_t n, allocated;
} ProcessUnitCache;

void process_unit_cache_done(ProcessUnitCache *c);
/* process_unit_read() of pid, from the cache when a process of the same cgroup was read (kept only
 * when pid was still there after libsystemd read it). */
int process_unit_read_cached(ProcessUnitCache *c, pid_t pid, ProcessUnit *ret);

/* "bar" for "machine-bar.scope" (systemd's escaping undone: "\x2d" is "-"); NULL (not an error)
 * for any other name. -ENOMEM. */
int machine_name_from_scope(const char *unit, char **ret);
