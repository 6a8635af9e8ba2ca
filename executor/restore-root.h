/* restore-root.h: the restore root, the process every restored process descends from: forked
 * before the executor reads the snapshot, so that its address space (which every process it
 * forks copies) stays small; it waits until the executor hands it the memory it shares with the
 * tasks and the plan as they read it, then runs its first task */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "plan/plan.h"

typedef struct RestoreRoot {
        pid_t pid;
        int pidfd;
        int channel;   /* the executor's end: the memory goes over it, closing it ends a root that waits */
        int report_fd; /* eventfd the tasks write after each step */
        int control_w, control_r; /* parked tasks block reading control_r; closing control_w ends them */
        int handoff_e, handoff_t; /* listener fds go in at handoff_e, tasks receive at handoff_t */
} RestoreRoot;

#define RESTORE_ROOT_NULL                                                                                              \
        ((RestoreRoot) { .pidfd = -1, .channel = -1, .report_fd = -1, .control_w = -1, .control_r = -1,             \
                         .handoff_e = -1, .handoff_t = -1 })

/* Make the runtime's descriptors and fork the root (init of a new pid namespace with
 * pid_namespace); exec: the request's commands, which the root keeps its own copy of. The ends
 * only the root uses are closed here. On failure *error (malloc'ed) says what failed. */
int restore_root_fork(RestoreRoot *root, bool pid_namespace, const PlanExec *exec, char **error);
/* Hand the root its memory: a memfd of size bytes, the RuntimeShared area first (shared_size
 * bytes, a multiple of the page size), then the image. */
int restore_root_hand(RestoreRoot *root, int memfd, size_t shared_size, size_t size);
/* A root that never got its memory: kill and reap it. Closes everything root holds. */
void restore_root_done(RestoreRoot *root);
