/* controller.h: the executor's side of a restore: fork the restore root, hand every task its
 * steps one at a time through the shared memory, take pidfds and listener copies as the tasks
 * appear, and end them all on a failure or a release */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include "plan/plan.h"
#include "restore-root.h"
#include "runtime.h"

typedef struct Controller {
        const Plan *plan;
        uint64_t step_timeout_usec;

        RuntimeShared *shared; /* the slots, then the image of the plan (one memfd) */
        size_t shared_size;    /* the slots' part, in whole pages */
        size_t memory_size;
        int report_fd;       /* eventfd the tasks write after each step */
        int control_w;       /* parked tasks block reading the other end; closing it ends them */
        int handoff_e;       /* listener fds go in here, tasks receive them at the other end */
        int stdio[3];        /* borrowed: what exec'd processes get as stdin, stdout, stderr (-1: theirs) */

        pid_t *pids;         /* per plan process, 0 until forked */
        int *pidfds;         /* per plan process, -1 */
        bool *gone;          /* per plan process: exited (helpers) or released */
        pid_t *tids;         /* per plan task */
        int *install_fd;     /* per plan task: the listener fd its last install returned */
        int *listener_fds;   /* per snapshot listener: the executor's copy, -1 */
        int *filter_listener_fds; /* per snapshot filter with a listener but no listener entry, -1 */
        size_t next_step;

        /* a failure, for the error reply */
        size_t failed_step;  /* SIZE_MAX: none */
        int failed_errno;    /* positive */
        RuntimeCall failed_call;
        char *failure;       /* what happened, a sentence */
} Controller;

/* The RLIMIT_NOFILE the executor was started with, put back in the restore root. */
extern struct rlimit controller_nofile;
extern bool controller_nofile_saved;

/* Set up for plan, with root (restore_root_fork()) as its restore root: the memory shared with the
 * tasks is made and handed to the root, which the controller then holds (root is left empty). On
 * failure root is left as it was, for restore_root_done(). stdio: what exec'd processes get (NULL
 * or -1: theirs); exec_paths: per plan process, what it execs (NULL: it parks). */
int controller_init(Controller *c, const Plan *plan, uint64_t step_timeout_usec, RestoreRoot *root,
                    char *const *exec_paths, const int stdio[3]);
void controller_done(Controller *c);

/* Run every step up to the ones that wait for the start. On failure
 * (c->failure says what) every task is killed and reaped before it returns. */
int controller_run(Controller *c);
/* Run the exec steps. */
int controller_start(Controller *c);
/* End every parked task: close the control fd, wait a moment, kill what is left, reap. Processes
 * that exec'd are left alone. */
void controller_release(Controller *c);
/* Kill every task of the restore and reap. */
void controller_kill_all(Controller *c);

/* Bump the heartbeat that tells waiting tasks the executor is alive. */
void controller_heartbeat(Controller *c);
