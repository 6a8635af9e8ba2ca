/* units.h: the systemd unit, user unit and machine of a process, read from its cgroup */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/hashmap.h"
#include "core/util.h"
#include "service/cgroup-members.h"

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

/* process_unit_read() answered once per cgroup, for the units of many processes (a snapshot's,
 * ListUnfilteredProcesses'): libsystemd reads a process's cgroup four times and machined's
 * records, some 100 us a process, where the cgroup (the path of the "0::" line of
 * /proc/PID/cgroup, which is what libsystemd reads the units from; the whole text where there is
 * no such line) is one small read, or comes from one walk of the hierarchy's cgroup.procs files
 * (process_unit_cache_walk()). An answer is kept only when its process was still in that cgroup
 * after libsystemd read it. */
typedef struct ProcessUnitCache {
        Hashmap by_hash; /* cgroup_key_hash() -> index + 1 */
        struct CachedUnit {
                char *cgroup;
                ProcessUnit unit;
        } *items;
        size_t n, allocated;
        CgroupMembers members; /* every pid's cgroup, once walked */
        bool walked;
        /* What is kept and given is made so first (a snapshot's names: snapshot_unit_name_clean());
         * NULL: as libsystemd said. -ENOMEM. */
        int (*clean)(ProcessUnit *u);
} ProcessUnitCache;

/* The processes from which one walk of the hierarchy costs less than a read of each one's cgroup. */
#define PROCESS_UNIT_WALK_MIN 256
/* For n_processes of them or more, the cgroups from one walk (without a cgroup2 hierarchy, or if the
 * walk fails, each process's is read). */
void process_unit_cache_walk(ProcessUnitCache *c, size_t n_processes);
void process_unit_cache_done(ProcessUnitCache *c);
/* pid's units: *ret points into the cache, or at *scratch (freed by the caller with
 * process_unit_done()) where they are not kept. -ESRCH when pid is gone, -ENOMEM. */
int process_unit_cache_get(ProcessUnitCache *c, pid_t pid, ProcessUnit *scratch, const ProcessUnit **ret);
/* The same, copied into *ret. */
int process_unit_read_cached(ProcessUnitCache *c, pid_t pid, ProcessUnit *ret);

/* "bar" for "machine-bar.scope" (systemd's escaping undone: "\x2d" is "-"); NULL (not an error)
 * for any other name. -ENOMEM. */
int machine_name_from_scope(const char *unit, char **ret);
