/* runtime-image.h: what the restored tasks read of the plan, as one flat block without pointers
 * (offsets from its start), in memory the executor shares with the restore root: the root is forked
 * before the snapshot is read, so that every process it forks copies a small address space and
 * not the executor's (see controller.c, "the restore root") */
#pragma once

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/plan.h"

#define RUNTIME_IMAGE_NONE UINT32_MAX

typedef struct RuntimeImageStep {
        uint8_t op, syscall, report, wait, exit; /* PlanOp, PlanSyscall ×4 */
        uint32_t flags;
        uint32_t task, target;
        int32_t arg, fd;
        uint32_t insns;   /* INSTALL: offset of the filter's program */
        uint32_t n_insns;
        uint32_t next;    /* the task's next step (a larger index), RUNTIME_IMAGE_NONE */
} RuntimeImageStep;

typedef struct RuntimeImageTask {
        uint32_t process;
        uint32_t first_step; /* RUNTIME_IMAGE_NONE: it has none */
        int32_t ns_tid;
        uint8_t wait_first; /* PlanSyscall */
} RuntimeImageTask;

typedef struct RuntimeImageProcess {
        char comm[16];
        uint32_t uid, gid;
        uint32_t exec;      /* index into the request's commands, RUNTIME_IMAGE_NONE: it parks */
        uint32_t exec_path; /* offset of the path execve() gets, RUNTIME_IMAGE_NONE */
} RuntimeImageProcess;

typedef struct RuntimeImage {
        uint64_t size; /* bytes, this header included */
        uint32_t n_steps, n_tasks, n_processes;
        uint32_t steps, tasks, processes; /* offsets of the arrays */
        uint32_t root_task;               /* the restore root's first task */
        int32_t runtime_fd;
        uint8_t pid_namespace, stdio;
        uint8_t calls_checked; /* the planner checked every system call the tasks make, the reports'
                                * write(2) among them: a task may leave out the reports nobody
                                * waits for (runtime.c) */
} RuntimeImage;

static inline const void *runtime_image_at(const RuntimeImage *m, uint32_t offset) {
        return (const uint8_t *) m + offset;
}

static inline const RuntimeImageStep *runtime_image_step(const RuntimeImage *m, size_t i) {
        return (const RuntimeImageStep *) runtime_image_at(m, m->steps) + i;
}

static inline const RuntimeImageTask *runtime_image_task(const RuntimeImage *m, size_t t) {
        return (const RuntimeImageTask *) runtime_image_at(m, m->tasks) + t;
}

static inline const RuntimeImageProcess *runtime_image_process(const RuntimeImage *m, size_t pp) {
        return (const RuntimeImageProcess *) runtime_image_at(m, m->processes) + pp;
}

/* The size of the image of plan, whose process pp execs exec_paths[pp] (NULL: parks; exec_paths
 * may be NULL when none does); -E2BIG when it does not fit in 32-bit offsets. */
int runtime_image_size(const Plan *plan, char *const *exec_paths, size_t *ret);
/* Write it into buf (runtime_image_size() bytes, zeroed). */
void runtime_image_write(const Plan *plan, char *const *exec_paths, bool stdio, void *buf, size_t size);
/* Is buf of size bytes an image whose offsets and indexes all stay inside it? */
bool runtime_image_valid(const void *buf, size_t size);
