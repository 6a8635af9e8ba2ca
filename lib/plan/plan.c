/* plan.c: the restore planner's entry point: plan_build() runs the analysis and the emitter;
 * names of the plan's enums and a sentence for every step */
#include <linux/seccomp.h>

#include "plan/plan-internal.h"

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

/* The executor's own fds go above every fd number a listener holder must get. */
static int runtime_fd_base(const Forest *s) {
        int max = PLAN_RUNTIME_FD_MIN - 1;

        for (size_t i = 0; i < s->n_listeners; i++)
                for (size_t j = 0; j < s->listeners[i]->n_holders; j++)
                        if (s->listeners[i]->holders[j].fd > max)
                                max = s->listeners[i]->holders[j].fd;
        return max + 1;
}

_printf_(3, 4) static int plan_error(char **error, int r, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        r = plan_verror(error, r, format, ap);
        va_end(ap);
        return r;
}

/* Every listener fd number must fit under the restored tasks' limit of open files. */
static int check_listener_fds(const Forest *s, const PlanOptions *o, char **error) {
        if (o->max_fds == 0)
                return 0;
        for (size_t i = 0; i < s->n_listeners; i++)
                for (size_t j = 0; j < s->listeners[i]->n_holders; j++) {
                        const ListenerHolder *h = &s->listeners[i]->holders[j];
                        if ((uint64_t) h->fd >= o->max_fds)
                                return plan_error(error, -EINVAL,
                                                  "listener %" PRIu64 ": process %d holds it at fd %d, at or above the limit "
                                                  "of open files the restored tasks run with (RLIMIT_NOFILE %" PRIu64
                                                  "): no task of the restore can take that fd",
                                                  s->listeners[i]->id, h->pid, h->fd, o->max_fds);
                }
        return 0;
}

static void planner_done(Planner *p) {
        plan_analysis_free(p);
        free(p->thread_task);
        free(p->process_plan);
        free(p->listener_of_filter);
        free(p->nnp_everywhere);
        plan_sim_state_done(&p->sim);
        kmodel_deinit(&p->km);
        hashmap_deinit(&p->listener_by_holder);
        plan_verdict_cache_free(p);
}

int plan_build(const Forest *snapshot, const PlanOptions *options, Plan **ret, char **error) {
        _cleanup_(plan_freep) Plan *plan = NULL;
        Planner p = { .s = snapshot, .o = options, .error = error };
        int r;

        if (error)
                *error = NULL;
        if (!snapshot || !snapshot->linked || !options)
                return -EINVAL;
        r = check_listener_fds(snapshot, options, error);
        if (r < 0)
                return r;
        plan = calloc(1, sizeof(Plan));
        if (!plan)
                return -ENOMEM;
        plan->snapshot = snapshot;
        plan->options = *options;
        plan->runtime_fd = runtime_fd_base(snapshot);
        p.plan = plan;
        r = plan_analyse(&p);
        if (r >= 0)
                r = plan_emit(&p);
        planner_done(&p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(plan);
        return 0;
}

/* ---- sentences ---- */

/* "pid 412 tid 413", "pid 412 helper thread (task 7)", "helper process (task 9)", "restore root" */
static char *task_label(const Plan *p, size_t t, char *buf, size_t size) {
        const PlanTask *task = &p->tasks[t];
        const PlanProcess *proc = &p->processes[task->process];

        if (task->kind == PLAN_TASK_RESTORED)
                snprintf(buf, size, "pid %d tid %d", proc->snapshot->pid, task->snapshot->tid);
        else if (proc->kind == PLAN_PROCESS_RESTORED)
                snprintf(buf, size, "pid %d helper thread (task %zu)", proc->snapshot->pid, t);
        else if (proc->kind == PLAN_PROCESS_HELPER)
                snprintf(buf, size, "helper process (task %zu)", t);
        else if (t == proc->leader)
                snprintf(buf, size, "restore root");
        else
                snprintf(buf, size, "restore root helper thread (task %zu)", t);
        return buf;
}
#define TASK_LABEL(p, t) task_label((p), (t), (char[80]) {}, 80)

static char *install_what(const PlanStep *s, char *buf, size_t size) {
        snprintf(buf, size, "filter %" PRIu64 " (%zu insn%s%s%s%s)", s->filter->id, s->filter->len,
                 s->filter->len == 1 ? "" : "s", s->flags & PLAN_INSTALL_LOG ? ", log" : "",
                 s->flags & PLAN_INSTALL_NEW_LISTENER ? ", listener" : "",
                 s->flags & PLAN_INSTALL_WAIT_KILLABLE_RECV ? ", wait_killable_recv" : "");
        return buf;
}

static char *listener_name(const Plan *p, const PlanStep *s, char *buf, size_t size) {
        if (s->listener != PLAN_NONE)
                snprintf(buf, size, "listener %" PRIu64, p->snapshot->listeners[s->listener]->id);
        else
                snprintf(buf, size, "the listener (no holder listed)");
        return buf;
}

static char *spawn_what(const Plan *p, const PlanStep *s, char *buf, size_t size) {
        const PlanTask *t = &p->tasks[s->target];
        const PlanProcess *proc = &p->processes[t->process];

        if (s->op == PLAN_OP_SPAWN_THREAD)
                snprintf(buf, size, "create %s", t->kind == PLAN_TASK_RESTORED ? "thread" : "a helper thread");
        else if (proc->kind == PLAN_PROCESS_RESTORED)
                snprintf(buf, size, "fork pid %d%s", proc->snapshot->pid, s->arg ? " with CLONE_PARENT" : "");
        else
                snprintf(buf, size, "fork a helper process");
        if (t->kind == PLAN_TASK_RESTORED)
                snprintf(buf + strlen(buf), size - strlen(buf), " %s%d", s->op == PLAN_OP_SPAWN_THREAD ? "tid " : "as tid ",
                         t->snapshot->tid);
        else if (t->ns_tid > 0)
                snprintf(buf + strlen(buf), size - strlen(buf), " as tid %d", t->ns_tid);
        snprintf(buf + strlen(buf), size - strlen(buf), " (task %zu)", s->target);
        return buf;
}

static char *what_of(const Plan *p, const PlanStep *s, char *buf, size_t size) {
        char x[128];

        switch (s->op) {
        case PLAN_OP_SET_COMM:
                snprintf(buf, size, "set comm \"%s\"", p->processes[p->tasks[s->task].process].snapshot->comm);
                break;
        case PLAN_OP_CLOSE_FD:
                snprintf(buf, size, "close inherited listener fd %d", s->fd);
                break;
        case PLAN_OP_SET_NO_NEW_PRIVS:
                snprintf(buf, size, "set no_new_privs");
                break;
        case PLAN_OP_SET_SUBREAPER:
                snprintf(buf, size, s->arg ? "become a child subreaper" : "stop being a child subreaper");
                break;
        case PLAN_OP_INSTALL:
                snprintf(buf, size, "install %s", install_what(s, x, sizeof(x)));
                break;
        case PLAN_OP_FILL:
                snprintf(buf, size, "install an allow-all filter (the exited leader's filter count)");
                break;
        case PLAN_OP_KEEP_LISTENER:
                if (s->fd >= 0)
                        snprintf(buf, size, "give the executor a copy of %s, keep it at fd %d",
                                 listener_name(p, s, x, sizeof(x)), s->fd);
                else if (s->filter->has_listener)
                        snprintf(buf, size, "give the executor a copy of %s, then close it",
                                 listener_name(p, s, x, sizeof(x)));
                else
                        snprintf(buf, size, "close the new listener fd (only its wait_killable_recv flag is kept)");
                break;
        case PLAN_OP_SPAWN_THREAD:
        case PLAN_OP_SPAWN_PROCESS:
                spawn_what(p, s, buf, size);
                break;
        case PLAN_OP_EXIT:
                snprintf(buf, size, "exit");
                break;
        case PLAN_OP_REAP:
                snprintf(buf, size, "reap the helper process (task %zu)", p->processes[s->target].leader);
                break;
        case PLAN_OP_RECEIVE_LISTENER:
                snprintf(buf, size, "receive %s at fd %d", listener_name(p, s, x, sizeof(x)), s->fd);
                break;
        case PLAN_OP_SET_CREDS: {
                const Process *sp = p->processes[p->tasks[s->task].process].snapshot;
                snprintf(buf, size, "become uid %u gid %u, no supplementary groups", (unsigned) sp->uid, (unsigned) sp->gid);
                break;
        }
        case PLAN_OP_STRICT:
                snprintf(buf, size, "enter strict mode and park");
                break;
        case PLAN_OP_PARK:
                snprintf(buf, size, "park");
                break;
        case PLAN_OP_EXEC:
                snprintf(buf, size, "exec %s (when started)",
                         p->options.exec[p->processes[p->tasks[s->task].process].exec].argv[0]);
                break;
        default:
                snprintf(buf, size, "?");
        }
        return buf;
}

/* What the task does after the step where its chain makes it differ from the usual (report with
 * write(2), wait with futex(2), end a park with exit(2)): "; then reports through memory only". */
static const char *after_of(const PlanStep *s, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = 0;
        if (s->report == PLAN_SYSCALL_NONE)
                n += (size_t) snprintf(buf + n, size - n, "; reports through memory only");
        if (n < size && s->wait != PLAN_SYSCALL_DEFAULT)
                n += (size_t) snprintf(buf + n, size - n, "; waits with %s(2)", plan_syscall_to_string(s->wait));
        if (n < size && s->exit == PLAN_SYSCALL_EXIT_GROUP)
                n += (size_t) snprintf(buf + n, size - n, "; ends with exit_group(2)");
        else if (n < size && s->exit == PLAN_SYSCALL_NONE)
                (void) snprintf(buf + n, size - n, "; is killed when released (its chain stops exit and exit_group)");
        return buf;
}

char *plan_step_describe(const Plan *p, size_t i) {
        const PlanStep *s = &p->steps[i];
        char what[256];
        char *out;

        if (i >= p->n_steps)
                return NULL;
        what_of(p, s, what, sizeof(what));
        if (asprintf(&out, "%s: %s%s%s%s%s", TASK_LABEL(p, s->task), what, s->syscall ? " with " : "",
                     s->syscall ? plan_syscall_to_string(s->syscall) : "", s->syscall ? "(2)" : "",
                     after_of(s, (char[160]) {}, 160)) < 0)
                return NULL;
        return out;
}
