/* restore-limits.h: the caller's resource limits, read from its process at the call, for the
 * executor and every restored task: not the daemon's */
#pragma once

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#define RESTORE_N_LIMITS RLIM_NLIMITS

typedef struct RestoreLimits {
        bool known;
        struct rlimit v[RESTORE_N_LIMITS];
} RestoreLimits;

/* systemd's name of a limit's property without "Limit" ("NOFILE"), NULL if it has none. */
const char *restore_limit_to_string(int resource);

/* The limits of process pid, read from /proc/PID/limits through one /proc/PID fd, if its real and
 * effective uid are still uid (a pid reused meanwhile is not read). -ESRCH: gone or not uid's. */
int restore_limits_read(pid_t pid, uid_t uid, RestoreLimits *ret);

/* Set them on this process (prlimit): in the executor's child, before it drops root. */
int restore_limits_apply(const RestoreLimits *l);
