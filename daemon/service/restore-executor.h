/* restore-executor.h: where a restore's executor runs (a transient unit of PID 1, or forked from
 * here), and the fork itself, as the restore's owner, with nothing of the daemon's */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "service/restore-limits.h"

/* From the start of the executor to its READY (or ERROR); $SECTREE_RESTORE_TIMEOUT_USEC replaces it. */
#define RESTORE_TIMEOUT_USEC (120 * 1000000ULL)

/* Where Restore() starts the executor (docs/restore.md "Where the executor runs"). */
typedef enum RestoreExecutor {
        RESTORE_EXECUTOR_AUTO, /* a transient unit when systemd runs the daemon as a service, else fork */
        RESTORE_EXECUTOR_FORK, /* forked by the daemon: only while it runs unconfined */
        RESTORE_EXECUTOR_UNIT, /* a transient service of PID 1 (StartTransientUnit) */
        _RESTORE_EXECUTOR_MAX,
        _RESTORE_EXECUTOR_INVALID = -EINVAL,
} RestoreExecutor;

RestoreExecutor restore_executor_from_string(const char *s);

/* The identity of the restore's owner, whom the executor runs as. */
typedef struct RestoreCreds {
        uid_t uid;
        gid_t gid;
        gid_t *groups; /* supplementary groups */
        size_t n_groups;
        RestoreLimits limits; /* the caller's resource limits, read from its process at the call */
} RestoreCreds;

/* Whether the executor runs as a transient unit (1) or forked (0) from here; -EOPNOTSUPP (with
 * *ret_message) when it may not be forked: the daemon runs under seccomp or no_new_privs. */
int restore_executor_by_unit(RestoreExecutor e, char **ret_message);
/* The executor's path ($SECTREE_RESTORE, else the installed one). */
const char *restore_executor_path(void);
/* Fork the executor as c, the other end of *ret_sock its stdin: its pid and a pidfd of it. */
int restore_executor_fork(const RestoreCreds *c, int *ret_sock, pid_t *ret_pid, int *ret_pidfd, char **ret_message);
/* RESTORE_TIMEOUT_USEC, or $SECTREE_RESTORE_TIMEOUT_USEC. */
uint64_t restore_executor_timeout_usec(void);
