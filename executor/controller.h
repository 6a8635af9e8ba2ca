/* controller.h: the executor's side of a restore: fork the restore root, hand every task its
 * steps one at a time through the shared memory, take pidfds and listener copies as the tasks
 * appear, and end them all on a failure or a release */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include "plan/plan.h"
#include "runtime.h"

typedef struct Controller {
        const Plan *plan;
        uint64_t step_timeout_usec;

        RuntimeShared *shared;
        size_t shared_size;
        uint8_t *stacks;
        size_t stacks_size;
        int report_fd;       /* eventfd the tasks write after each step */
        int control_w, control_r; /* parked tasks block reading control_r; closing control_w ends them */
        int handoff_e, handoff_t; /* listener fds go in at handoff_e, tasks receive at handoff_t */
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

int controller_init(Controller *c, const Plan *plan, uint64_t step_timeout_usec);
void controller_done(Controller *c);

/* Fork the restore root and run every step up to the ones that wait for the start. On failure
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
