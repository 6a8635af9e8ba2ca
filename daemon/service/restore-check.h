/* restore-check.h: whether what the executor's READY names is this restore's own: the executor
 * runs as the caller, who can take its fds and forge its frames */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "plan/plan-verify.h"

/* Where a restore's tasks must come from, and whom they must belong to. */
typedef struct RestoreOrigin {
        pid_t executor;         /* the executor's pid: the restore root is its child (0: not known yet) */
        const char *unit;       /* the executor's transient unit: the restore root is in its cgroup (or NULL) */
        uint64_t started_ticks; /* the restore started then (clock ticks since boot, as /proc says) */
        bool check_uid;         /* false: original uids (root only) */
        uid_t uid;              /* every real, effective, saved and fs uid of every task */
} RestoreOrigin;

/* Now, in the clock ticks since boot of /proc/PID/stat's start time, rounded down. */
uint64_t restore_check_now_ticks(void);

/* Every pid and tid of map, and its root, is a task of this restore: the root a child of the
 * executor (in the executor's unit), every process and thread the root or a descendant of it (threads: their process),
 * created at or after the start, and owned by the caller. 0, or -EPERM with *ret_message naming
 * the first task that is not (and nothing about that task). */
int restore_check_mapping(const PlanMapping *map, const RestoreOrigin *o, char **ret_message);

/* Whether every real, effective, saved and fs uid of task tid is uid: 1 yes, 0 no, or a negative
 * errno (gone). */
int restore_check_owner(pid_t tid, uid_t uid);

/* The pid a pidfd refers to (its fdinfo): -ESRCH if it exited. */
int restore_check_pidfd_pid(int pidfd, pid_t *ret);

/* READY's fields: a pid (a positive 32-bit number) at key, the index of one of its n_fds fds at
 * "fd"; -EBADMSG for anything else. */
int restore_ready_pid(json_t *o, const char *key, pid_t *ret);
int restore_ready_fd_index(json_t *o, size_t n_fds, int *ret);
