/* plan-types.c: names of the plan's enums, the program of a FILL step, freeing a plan, and the
 * message every planner file sets on refusal */
#include <linux/seccomp.h>
#include <stdio.h>

#include "plan/plan-types.h"

static const char *const process_kind_table[_PLAN_PROCESS_KIND_MAX] = {
        [PLAN_PROCESS_ROOT] = "root",
        [PLAN_PROCESS_RESTORED] = "restored",
        [PLAN_PROCESS_HELPER] = "helper",
};

static const char *const op_table[_PLAN_OP_MAX] = {
        [PLAN_OP_SET_COMM] = "set-comm",
        [PLAN_OP_CLOSE_FD] = "close-fd",
        [PLAN_OP_SET_NO_NEW_PRIVS] = "set-no-new-privs",
        [PLAN_OP_SET_SUBREAPER] = "set-subreaper",
        [PLAN_OP_INSTALL] = "install",
        [PLAN_OP_FILL] = "fill",
        [PLAN_OP_KEEP_LISTENER] = "keep-listener",
        [PLAN_OP_SPAWN_THREAD] = "spawn-thread",
        [PLAN_OP_SPAWN_PROCESS] = "spawn-process",
        [PLAN_OP_EXIT] = "exit",
        [PLAN_OP_REAP] = "reap",
        [PLAN_OP_RECEIVE_LISTENER] = "receive-listener",
        [PLAN_OP_SET_CREDS] = "set-creds",
        [PLAN_OP_STRICT] = "strict",
        [PLAN_OP_PARK] = "park",
        [PLAN_OP_EXEC] = "exec",
};

const struct sock_filter plan_fill_insns[1] = {
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static const char *const syscall_table[_PLAN_SYSCALL_MAX] = {
        [PLAN_SYSCALL_DEFAULT] = "default",
        [PLAN_SYSCALL_SECCOMP] = "seccomp",
        [PLAN_SYSCALL_PRCTL] = "prctl",
        [PLAN_SYSCALL_CLONE] = "clone",
        [PLAN_SYSCALL_CLONE3] = "clone3",
        [PLAN_SYSCALL_FORK] = "fork",
        [PLAN_SYSCALL_EXIT] = "exit",
        [PLAN_SYSCALL_EXIT_GROUP] = "exit_group",
        [PLAN_SYSCALL_WAIT4] = "wait4",
        [PLAN_SYSCALL_WAITID] = "waitid",
        [PLAN_SYSCALL_NONE] = "none",
        [PLAN_SYSCALL_NANOSLEEP] = "nanosleep",
        [PLAN_SYSCALL_CLOCK_NANOSLEEP] = "clock_nanosleep",
};

const char *plan_process_kind_to_string(PlanProcessKind k) {
        return k >= 0 && k < _PLAN_PROCESS_KIND_MAX ? process_kind_table[k] : NULL;
}

const char *plan_op_to_string(PlanOp op) {
        return op >= 0 && op < _PLAN_OP_MAX ? op_table[op] : NULL;
}

const char *plan_syscall_to_string(PlanSyscall s) {
        return s >= 0 && s < _PLAN_SYSCALL_MAX ? syscall_table[s] : NULL;
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        free(p->processes);
        free(p->tasks);
        free(p->steps);
        free(p->nnp_added);
        free(p->subreapers);
        free(p);
        return NULL;
}

int plan_verror(char **error, int r, const char *format, va_list ap) {
        char *s;

        if (vasprintf(&s, format, ap) < 0)
                return -ENOMEM;
        if (error) {
                free(*error);
                *error = s;
        } else
                free(s);
        return r;
}
