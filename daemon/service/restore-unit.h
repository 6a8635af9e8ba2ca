/* restore-unit.h: the restore executor started by the service manager (PID 1) as a transient
 * service, for a daemon that runs confined under its own unit: StartTransientUnit on the system
 * bus, the end of its start job, its main process as a pidfd, stopping and killing it. Nothing of
 * restores here: restores.c uses it. */
#pragma once

#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "service/restore-limits.h"

typedef struct RestoreUnit RestoreUnit;

/* Who the executor runs as: uid 0 keeps root (no User=); in the slice user-UID.slice (so that the
 * user's TasksMax= and accounting apply), with the caller's resource limits (when known). */
typedef struct RestoreUnitIdentity {
        uid_t uid;
        gid_t gid;
        const gid_t *groups;
        size_t n_groups;
        const RestoreLimits *limits;
} RestoreUnitIdentity;

/* The start's end: r >= 0 with pidfd the executor's main process (-1 when it had exited already),
 * or r < 0 with message (systemd's answer, naming the unit). Called once, never from within
 * restore_unit_start(). */
typedef void (*RestoreUnitStarted)(RestoreUnit *u, int r, int pidfd, const char *message, void *userdata);

/* Ask PID 1 to run exe as the service name, stdin_fd (copied by the bus) as its stdin, without
 * any sandboxing of its own, collected once it is over. */
int restore_unit_start(sd_bus *bus, const char *name, const char *description, const char *exe,
                       const RestoreUnitIdentity *id, int stdin_fd, RestoreUnitStarted started, void *userdata,
                       RestoreUnit **ret);
const char *restore_unit_name(const RestoreUnit *u);
/* Stop the unit (every process of its cgroup ends), or SIGKILL all of them; neither waits. */
int restore_unit_stop(RestoreUnit *u);
int restore_unit_kill(RestoreUnit *u);
RestoreUnit *restore_unit_free(RestoreUnit *u);

/* The unit name of restore id of this daemon (pid): sectree-restore-PID-ID.service. */
int restore_unit_name_make(pid_t daemon, uint64_t id, char **ret);
