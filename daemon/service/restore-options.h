/* restore-options.h: what a caller asks of a restore: its options, checked (root-only ones,
 * exec's processes), the caller's restores and the snapshot's size within limits, and the
 * executor's request made of them */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/forest.h"
#include "service/access.h"

/* What a non-root uid may do (root: no limit). */
#define RESTORES_MAX_PER_UID 4            /* restores in progress or alive at once */
#define RESTORE_MAX_TASKS_PER_UID 4096    /* threads of the snapshot of one restore */

typedef struct RestoreExec {
        pid_t pid;   /* a snapshot process */
        char **argv; /* what its leader execs */
} RestoreExec;

typedef struct RestoreOptions {
        RestoreExec *exec;
        size_t n_exec;
        bool original_uids; /* root only: the snapshot's uids and gids instead of the caller's */
        bool pid_namespace; /* root only: a new pid namespace, tasks at their snapshot tids */
        bool verify;        /* scan the restored tree and compare (default true) */
        bool pidfds;        /* a pidfd per restored process in the reply (default true) */
        bool keep;          /* outlive the caller's bus connection (default false: released) */
        bool has_stdio;     /* stdio holds the exec'd processes' stdin, stdout, stderr (owned) */
        int stdio[3];
} RestoreOptions;

void restore_options_done(RestoreOptions *o);

/* -EACCES an option only root may give, -EINVAL exec or stdio that do not fit the snapshot; with
 * *ret_message. */
int restore_check_options(const Caller *c, const RestoreOptions *o, const Forest *f, char **ret_message);
/* -EUSERS (with *ret_message) when a non-root caller holding mine restores may not start one more
 * of snapshot f. */
int restore_check_limits(const Caller *c, size_t mine, const Forest *f, char **ret_message);
/* The executor's request for these options (plan-protocol.h), NULL on allocation failure. */
json_t *restore_options_request(const RestoreOptions *o);
