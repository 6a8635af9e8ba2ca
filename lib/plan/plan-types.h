/* plan-types.h: what a restore plan is: its processes, tasks and steps, the options it is made
 * with, the names of its enums; the bottom of the planner's files */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"

#define PLAN_NONE SIZE_MAX

/* What a process of the plan is. Index 0 is always the restore root. */
typedef enum PlanProcessKind {
        PLAN_PROCESS_ROOT,     /* the restore root: parent of the top processes, a subreaper, no filters */
        PLAN_PROCESS_RESTORED, /* a process of the snapshot */
        PLAN_PROCESS_HELPER,   /* forks one process, then exits so that it is reparented (a "move") */
        _PLAN_PROCESS_KIND_MAX,
        _PLAN_PROCESS_KIND_INVALID = -EINVAL,
} PlanProcessKind;
const char *plan_process_kind_to_string(PlanProcessKind k);

/* Which system call a step uses (the planner picks one the task's chain allows at that point). */
typedef enum PlanSyscall {
        PLAN_SYSCALL_DEFAULT,  /* the only one: prctl, close, dup3, read, execve, recvmsg... */
        PLAN_SYSCALL_SECCOMP,  /* install: seccomp(SECCOMP_SET_MODE_FILTER) */
        PLAN_SYSCALL_PRCTL,    /* install: prctl(PR_SET_SECCOMP) (no flags possible) */
        PLAN_SYSCALL_CLONE,    /* spawn: clone(2) with glibc's flags */
        PLAN_SYSCALL_CLONE3,   /* spawn: clone3(2) */
        PLAN_SYSCALL_FORK,     /* spawn a process: fork(2) */
        PLAN_SYSCALL_EXIT,     /* exit: exit(2) */
        PLAN_SYSCALL_EXIT_GROUP, /* exit: exit_group(2) */
        PLAN_SYSCALL_WAIT4,    /* reap: wait4(2) */
        PLAN_SYSCALL_WAITID,   /* reap: waitid(2) */
        PLAN_SYSCALL_NONE,     /* report: no write(2), the executor sees the step done in the shared
                                * memory; exit of a parked task: none, the executor kills it */
        PLAN_SYSCALL_NANOSLEEP, /* wait for the next step, park: nanosleep(2) in a loop */
        PLAN_SYSCALL_CLOCK_NANOSLEEP, /* the same with clock_nanosleep(2) */
        _PLAN_SYSCALL_MAX,
        _PLAN_SYSCALL_INVALID = -EINVAL,
} PlanSyscall;
const char *plan_syscall_to_string(PlanSyscall s);

typedef enum PlanTaskKind {
        PLAN_TASK_RESTORED, /* a thread of the snapshot */
        PLAN_TASK_HELPER,   /* carries installs and forks for others, then exits (or, in the root, parks) */
        _PLAN_TASK_KIND_MAX,
        _PLAN_TASK_KIND_INVALID = -EINVAL,
} PlanTaskKind;

typedef struct PlanProcess {
        PlanProcessKind kind;
        const Process *snapshot; /* RESTORED: the snapshot's process */
        size_t parent;           /* the plan process it is a child of at the end (PLAN_NONE for the root) */
        size_t leader;           /* its first task (tid == pid) */
        size_t exec;             /* index into PlanOptions.exec, PLAN_NONE: it parks */
} PlanProcess;

typedef struct PlanTask {
        PlanTaskKind kind;
        size_t process;
        const Task *snapshot; /* RESTORED: the snapshot's thread */
        PlanSyscall wait_first; /* how it waits for its first step: the wait of the step that made it
                                 * (its chain is its creator's then) */
        pid_t ns_tid;         /* with PlanOptions.pid_namespace: its tid in the new pid namespace (the
                               * snapshot's for a restored thread, 1 for the restore root, above every
                               * snapshot tid for a helper); 0 otherwise */
} PlanTask;

typedef enum PlanOp {
        PLAN_OP_SET_COMM,         /* prctl(PR_SET_NAME): the snapshot's comm */
        PLAN_OP_CLOSE_FD,         /* close an inherited listener fd the process must not hold */
        PLAN_OP_SET_NO_NEW_PRIVS, /* prctl(PR_SET_NO_NEW_PRIVS) */
        PLAN_OP_SET_SUBREAPER,    /* prctl(PR_SET_CHILD_SUBREAPER, arg) for the task's process */
        PLAN_OP_INSTALL,          /* install filter `filter` with `flags` */
        PLAN_OP_FILL,             /* install an allow-all filter (plan_fill_insns): a leader that exited
                                   * had that many more filters than it inherited; they are released
                                   * when it exits, and only the count in /proc/PID/status shows them */
        PLAN_OP_KEEP_LISTENER,    /* after an install with NEW_LISTENER: the executor takes a copy of
                                   * the listener fd; the installer then moves it to fd `fd`, or closes
                                   * it when fd < 0 */
        PLAN_OP_SPAWN_THREAD,     /* create task `target` (a thread of the same process) */
        PLAN_OP_SPAWN_PROCESS,    /* create process `target`; with arg 1 as CLONE_PARENT */
        PLAN_OP_EXIT,             /* a helper task exits (a helper process's leader: the process) */
        PLAN_OP_REAP,             /* wait for helper process `target`, a child of the task's process */
        PLAN_OP_RECEIVE_LISTENER, /* receive listener `listener` from the executor, at fd `fd` */
        PLAN_OP_SET_CREDS,        /* become the snapshot process's uid and gid (no supplementary groups):
                                   * setgroups, setresgid, setresuid, then PR_SET_DUMPABLE 1 */
        PLAN_OP_STRICT,           /* enter SECCOMP_MODE_STRICT; then exit(2) when arg is 1 (an exited
                                   * leader in strict mode) */
        PLAN_OP_PARK,             /* block until the restore is released: read(2) on the control fd
                                   * (syscall DEFAULT), or sleep in a loop (NANOSLEEP, CLOCK_NANOSLEEP)
                                   * watching the shared memory */
        PLAN_OP_EXEC,             /* execve() the command given for the process (after the start) */
        _PLAN_OP_MAX,
        _PLAN_OP_INVALID = -EINVAL,
} PlanOp;
const char *plan_op_to_string(PlanOp op);


/* The program of a FILL step: RET ALLOW. */
extern const struct sock_filter plan_fill_insns[1];

/* Install flags a step carries (the kernel's SECCOMP_FILTER_FLAG_* values). */
#define PLAN_INSTALL_LOG (1U << 1)                /* SECCOMP_FILTER_FLAG_LOG */
#define PLAN_INSTALL_NEW_LISTENER (1U << 3)       /* SECCOMP_FILTER_FLAG_NEW_LISTENER */
#define PLAN_INSTALL_WAIT_KILLABLE_RECV (1U << 5) /* SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV */

/* What the executor does in a task, which the planner checks against the filters in force:
 * the descriptors every task has (report: an eventfd written after each step; control: the read
 * end of a pipe a parked task blocks on; handoff: a socket listener fds arrive on), at
 * plan->runtime_fd + these offsets, and the clone(2) flags it uses (glibc's, for threads and for
 * fork()). */
#define PLAN_RUNTIME_FD_REPORT 0
#define PLAN_RUNTIME_FD_CONTROL 1
#define PLAN_RUNTIME_FD_HANDOFF 2
#define PLAN_RUNTIME_N_FDS 3
#define PLAN_RUNTIME_FD_MIN 64
#define PLAN_CLONE_THREAD_FLAGS 0x3d0f00UL /* VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID */
#define PLAN_CLONE_PROCESS_FLAGS 0x1200011UL /* CHILD_SETTID|CHILD_CLEARTID|SIGCHLD */
#define PLAN_CLONE_PARENT 0x8000UL            /* CLONE_PARENT */

typedef struct PlanStep {
        PlanOp op;
        size_t task;     /* the task that runs it */
        size_t target;   /* SPAWN_*: the task created; REAP: the process reaped */
        const Filter *filter; /* INSTALL, KEEP_LISTENER */
        size_t listener; /* KEEP_LISTENER, RECEIVE_LISTENER, CLOSE_FD: index into the snapshot's
                          * listeners, PLAN_NONE for a listener the snapshot lists no holder of */
        unsigned flags;  /* INSTALL: PLAN_INSTALL_* */
        int arg;         /* SPAWN_PROCESS: 1 for CLONE_PARENT; SET_SUBREAPER: 1 or 0 */
        int fd;          /* KEEP_LISTENER, RECEIVE_LISTENER: where the fd must end up (-1: closed);
                          * CLOSE_FD: the fd number closed */
        PlanSyscall syscall;
        bool after_start; /* EXEC: runs only when the caller starts the restored tree */
        /* What the task does after the step, under the chain it runs then (a filter installed by the
         * step included), each chosen among the calls that chain allows (DEFAULT: the first): */
        PlanSyscall report; /* DEFAULT: write(2) to the report eventfd; NONE: nothing */
        PlanSyscall wait;   /* waiting for its next step: DEFAULT futex(2), NANOSLEEP, CLOCK_NANOSLEEP */
        PlanSyscall exit;   /* PARK: how it ends once released: DEFAULT exit(2) (else exit_group(2)),
                             * EXIT_GROUP, NONE (the executor kills it) */
} PlanStep;

/* A command to exec for one restored process instead of parking it. */
typedef struct PlanExec {
        pid_t pid;  /* the snapshot's pid */
        char **argv;
} PlanExec;

typedef struct PlanOptions {
        /* The executor has no CAP_SYS_ADMIN: every install needs no_new_privs first, which the
         * plan sets (and reports where the snapshot did not have it). */
        bool unprivileged;
        /* Check every system call the executor makes in a task against the chain in force at that
         * point (with the kernel's precedence) and refuse a plan that a filter would stop. */
        bool check_syscalls;
        const PlanExec *exec;
        size_t n_exec;
        /* Every restored task ends as the uid and gid its process has in the snapshot (the executor
         * runs as root): a SET_CREDS step after its last other step. */
        bool original_ids;
        /* The restore root is init of a new pid namespace and every task is created with clone3(2)
         * and set_tid: restored tasks get their snapshot tids there. */
        bool pid_namespace;
        /* The limit of open files (RLIMIT_NOFILE) the restored tasks run with: no task can take a
         * descriptor at or above it, so a listener held there is refused, naming it. 0: none. */
        uint64_t max_fds;
} PlanOptions;

#define PLAN_OPTIONS_DEFAULT ((PlanOptions) { .check_syscalls = true })

typedef struct Plan {
        const Forest *snapshot; /* borrowed: must outlive the plan */
        PlanOptions options;    /* exec borrowed too */
        PlanProcess *processes;
        size_t n_processes;
        PlanTask *tasks;
        size_t n_tasks;
        PlanStep *steps;
        size_t n_steps;
        /* What the restored tree will differ in from the snapshot, said in the result: */
        pid_t *nnp_added;          /* snapshot tids whose thread gets no_new_privs it did not have (a
                                    * pid: the leader; a helper leader counts as the process's) */
        size_t n_nnp_added;
        pid_t *subreapers;         /* snapshot pids made child subreapers for a while (never at the end) */
        size_t n_subreapers;
        size_t n_helper_processes, n_helper_threads;
        size_t n_moves;            /* processes reparented through a helper */
        int runtime_fd;            /* the first of the executor's own descriptors in every task */
        size_t n_clone_parent;     /* processes created with CLONE_PARENT */
} Plan;

Plan *plan_free(Plan *p);
DEFINE_CLEANUP(Plan *, plan_free);

/* Set *error (if not NULL) to the message and return r (-ENOMEM when it cannot be made). */
int plan_verror(char **error, int r, const char *format, va_list ap) _printf_(3, 0);
