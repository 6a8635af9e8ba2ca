/* plan-describe.c: a sentence for every step of a plan */
#include <stdio.h>
#include <string.h>

#include "plan/plan-describe.h"

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
