/* executor-request.h: the request that starts a restore (options, the snapshot's fd, stdio) */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan-protocol.h"
#include "plan/plan.h"

#define EXECUTOR_DEFAULT_STEP_TIMEOUT_USEC (10 * 1000 * 1000ULL)

typedef struct ExecutorRequest {
        PlanExec *exec;
        size_t n_exec;
        uint64_t step_timeout_usec;
        bool check_syscalls;
        bool original_ids;
        bool pid_namespace;
        int snapshot_fd;
        int stdio[3]; /* with "stdio": the exec'd processes' stdin, stdout, stderr; else -1 */
} ExecutorRequest;

/* Closes what the request holds. */
void executor_request_done(ExecutorRequest *r);
/* Fills r from the REQUEST frame f (without taking its fds). A request that is not valid: -EINVAL
 * with *error saying what is wrong. */
int executor_request_parse(const RestoreFrame *f, ExecutorRequest *r, char **error);
/* executor_request_parse(), then the fds taken out of f: the snapshot's, and with "stdio" the
 * three that follow it. */
int executor_request_take(RestoreFrame *f, ExecutorRequest *r, char **error);
