/* runtime.h: what every restored task runs until it parks or execs: wait in its slot of the
 * memory it shares with the executor for the next step, run it with raw system calls, report */
#pragma once

#include <stdint.h>

#include "plan/plan.h"

#define RUNTIME_STACK_SIZE (64 * 1024)
/* A task waiting for a step gives up (exit_group) when the executor's heartbeat stood still for
 * this long: the executor died without telling it. */
#define RUNTIME_ORPHAN_SECONDS 30

/* Which system call of a step failed, for the error the executor reports. */
typedef enum RuntimeCall {
        RUNTIME_CALL_NONE,
        RUNTIME_CALL_PRCTL,
        RUNTIME_CALL_SECCOMP,
        RUNTIME_CALL_CLONE,
        RUNTIME_CALL_CLONE3,
        RUNTIME_CALL_FORK,
        RUNTIME_CALL_DUP3,
        RUNTIME_CALL_FCNTL,
        RUNTIME_CALL_CLOSE,
        RUNTIME_CALL_WAIT4,
        RUNTIME_CALL_WAITID,
        RUNTIME_CALL_RECVMSG,
        RUNTIME_CALL_EXECVE,
        RUNTIME_CALL_EXIT,
        RUNTIME_CALL_SETGROUPS,
        RUNTIME_CALL_SETRESGID,
        RUNTIME_CALL_SETRESUID,
        _RUNTIME_CALL_MAX,
} RuntimeCall;
const char *runtime_call_to_string(RuntimeCall c);

/* Per task. */
typedef struct RuntimeSlot {
        uint32_t go;     /* futex: 1 + the last of its steps the executor let it run (a task runs its
                          * steps in the plan's order, each as soon as it may, without waiting for
                          * the executor in between) */
        int32_t tid;     /* written by the kernel: CLONE_PARENT_SETTID / CLONE_CHILD_SETTID */
        int32_t ctid;    /* threads: CLONE_CHILD_CLEARTID, 0 once the thread is gone */
        uint32_t execing; /* set just before execve() */
} RuntimeSlot;

/* Per step. */
typedef struct RuntimeStepState {
        uint32_t done;   /* 1 once the step ran (and the fields below are set) */
        int32_t arg;     /* from the executor: the fd to move (keep-listener), the pid to reap */
        int32_t result;  /* >= 0, or -errno of the call that failed */
        int32_t value;   /* spawn: the new tid; install: the listener fd */
        uint32_t call;   /* RuntimeCall that failed */
} RuntimeStepState;

typedef struct RuntimeShared {
        uint32_t heartbeat; /* bumped by the executor at least every 200 ms while tasks wait */
        uint32_t released;  /* set by the executor at the release: tasks parked in a sleep loop end */
        uint32_t n_slots;
        uint32_t n_steps;
        uint32_t n_finished; /* entries claimed in the log of finished steps */
        uint32_t reserved;
        RuntimeSlot slots[]; /* n_slots, then n_steps RuntimeStepState, then the log: n_steps uint32_t,
                              * 1 + the index of each step as it finished, 0 until written (the
                              * executor reads what finished there instead of looking at every
                              * step in flight) */
} RuntimeShared;

static inline size_t runtime_shared_size(size_t n_slots, size_t n_steps) {
        return sizeof(RuntimeShared) + n_slots * sizeof(RuntimeSlot) + n_steps * sizeof(RuntimeStepState) +
               n_steps * sizeof(uint32_t);
}

static inline RuntimeStepState *runtime_shared_steps(RuntimeShared *s) {
        return (RuntimeStepState *) (s->slots + s->n_slots);
}

static inline uint32_t *runtime_shared_log(RuntimeShared *s) {
        return (uint32_t *) (runtime_shared_steps(s) + s->n_steps);
}

/* Set up in the restore root before its first step, read-only afterwards (every task has its own
 * copy of it, made by fork). */
typedef struct Runtime {
        const struct RuntimeImage *image; /* the plan as the tasks read it (runtime-image.h) */
        RuntimeShared *shared;
        uint8_t *stacks;    /* a stack per task, RUNTIME_STACK_SIZE each */
        int fd_report, fd_control, fd_handoff;
        const PlanExec *exec; /* the request's commands (the root's own copy of the executor's) */
        char **envp;
        bool stdio;         /* an exec step first receives stdin, stdout and stderr on fd_handoff */
} Runtime;

extern Runtime runtime;

/* The life of task index (a plan task) after it was created. Never returns. */
void runtime_task_main(void *index) __attribute__((noreturn));
