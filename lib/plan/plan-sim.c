/* plan-sim.c: a plan's steps run on the kernel model: what the planner does while it makes a
 * plan, and what the tests do to check one */
#include <stdarg.h>

#include "plan/plan-sim.h"

#include "plan/plan-describe.h"

int plan_sim_state_init(PlanSimState *st, const Forest *s) {
        *st = (PlanSimState) {};
        st->filter_object = calloc(s->n_filters ?: 1, sizeof(size_t));
        st->listener_object = calloc(s->n_listeners ?: 1, sizeof(size_t));
        if (!st->filter_object || !st->listener_object)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_filters; i++)
                st->filter_object[i] = KMODEL_NONE;
        for (size_t i = 0; i < s->n_listeners; i++)
                st->listener_object[i] = KMODEL_NONE;
        return 0;
}

void plan_sim_state_done(PlanSimState *st) {
        free(st->filter_object);
        free(st->listener_object);
        free(st->last_install_fd);
        *st = (PlanSimState) {};
}

_printf_(3, 4) static int sim_fail(char **error, int r, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        r = plan_verror(error, r == -ENOMEM ? r : -EPROTO, format, ap);
        va_end(ap);
        return r;
}

static int set_last_install_fd(PlanSimState *st, size_t t, int fd) {
        size_t old = st->n_last_install_fd_allocated;

        if (GROW(st->last_install_fd, st->n_last_install_fd_allocated, t + 1) < 0)
                return -ENOMEM;
        for (size_t i = old; i < st->n_last_install_fd_allocated; i++)
                st->last_install_fd[i] = -1;
        st->last_install_fd[t] = fd;
        return 0;
}

static int apply_install(const PlanStep *s, KModel *km, PlanSimState *st) {
        size_t obj;
        int fd = -1, r;

        r = kmodel_install(km, s->task, s->filter->insns, s->filter->len, s->flags, s->filter->index, &obj, &fd, NULL);
        if (r < 0)
                return r;
        st->filter_object[s->filter->index] = obj;
        if (s->listener != PLAN_NONE)
                st->listener_object[s->listener] = km->filters[obj].listener;
        return set_last_install_fd(st, s->task, fd);
}

/* The executor takes a copy of the new listener fd (when the snapshot has the listener), then the
 * installer moves its fd where the snapshot has it, or closes it. */
static int apply_keep_listener(const PlanStep *s, KModel *km, PlanSimState *st, size_t proc) {
        int k = s->task < st->n_last_install_fd_allocated ? st->last_install_fd[s->task] : -1;
        size_t l = kmodel_fd_listener(km, proc, k);
        int r;

        if (l == KMODEL_NONE)
                return -EBADF;
        if (s->filter->has_listener) {
                r = kmodel_listener_take_outside(km, l);
                if (r < 0)
                        return r;
        }
        if (s->fd == k)
                return 0;
        if (s->fd >= 0) {
                r = kmodel_fd_dup(km, proc, k, s->fd);
                if (r < 0)
                        return r;
        }
        return kmodel_fd_close(km, proc, k);
}

static int apply_spawn(const Plan *plan, const PlanStep *s, KModel *km) {
        size_t t;
        int r = s->op == PLAN_OP_SPAWN_THREAD ? kmodel_thread(km, s->task, &t) : kmodel_fork(km, s->task, s->arg, &t);

        if (r < 0)
                return r;
        if (t != s->target || km->tasks[t].process != plan->tasks[s->target].process)
                return -EPROTO; /* tasks and processes are numbered in the order they are made */
        return 0;
}

static int apply_one(const Plan *plan, const PlanStep *s, KModel *km, PlanSimState *st) {
        size_t proc = km->tasks[s->task].process;

        switch (s->op) {
        case PLAN_OP_SET_COMM:
                return kmodel_set_comm(km, s->task, plan->processes[plan->tasks[s->task].process].snapshot->comm);
        case PLAN_OP_CLOSE_FD:
                return kmodel_fd_close(km, proc, s->fd);
        case PLAN_OP_SET_NO_NEW_PRIVS:
                return kmodel_set_nnp(km, s->task);
        case PLAN_OP_SET_SUBREAPER:
                return kmodel_set_subreaper(km, proc, s->arg);
        case PLAN_OP_INSTALL:
                return apply_install(s, km, st);
        case PLAN_OP_KEEP_LISTENER:
                return apply_keep_listener(s, km, st, proc);
        case PLAN_OP_SPAWN_THREAD:
        case PLAN_OP_SPAWN_PROCESS:
                return apply_spawn(plan, s, km);
        case PLAN_OP_EXIT:
                return plan->processes[plan->tasks[s->task].process].kind == PLAN_PROCESS_HELPER
                               ? kmodel_exit_process(km, proc)
                               : kmodel_exit_thread(km, s->task);
        case PLAN_OP_REAP:
                return s->target < km->n_processes && !km->processes[s->target].alive ? 0 : -ECHILD;
        case PLAN_OP_RECEIVE_LISTENER:
                return kmodel_fd_receive(km, proc, st->listener_object[s->listener], s->fd);
        case PLAN_OP_FILL:
                return kmodel_install(km, s->task, plan_fill_insns, ELEMENTSOF(plan_fill_insns), 0, UINT64_MAX, NULL,
                                      NULL, NULL);
        case PLAN_OP_STRICT: {
                int r = kmodel_strict(km, s->task);
                return r < 0 || !s->arg ? r : kmodel_exit_thread(km, s->task); /* an exited leader */
        }
        case PLAN_OP_SET_CREDS: {
                const Process *sp = plan->processes[plan->tasks[s->task].process].snapshot;
                return kmodel_set_ids(km, s->task, sp->uid, sp->gid);
        }
        case PLAN_OP_PARK:
        case PLAN_OP_EXEC:
                return 0;
        default:
                return -EINVAL;
        }
}

int plan_step_apply(const Plan *plan, size_t i, KModel *km, PlanSimState *st, char **error) {
        const PlanStep *s = &plan->steps[i];
        _cleanup_free_ char *what = NULL;
        int r;

        if (s->task >= km->n_tasks || !km->tasks[s->task].alive)
                r = -ESRCH;
        else
                r = apply_one(plan, s, km, st);
        if (r >= 0)
                return 0;
        what = plan_step_describe(plan, i);
        return sim_fail(error, r, "step %zu (%s) fails in the model of the kernel: %s", i, what ?: "?", strerror(-r));
}

/* ---- running a whole plan ---- */

static int mapping_of_model(const Plan *plan, const KModel *km, PlanMapping *map) {
        map->root_pid = km->processes[0].pid;
        for (size_t i = 0; i < plan->n_processes; i++) {
                const PlanProcess *pp = &plan->processes[i];
                int r;

                if (pp->kind != PLAN_PROCESS_RESTORED)
                        continue;
                r = plan_mapping_add_process(map, pp->snapshot->pid, km->processes[i].pid);
                if (r < 0)
                        return r;
        }
        for (size_t t = 0; t < plan->n_tasks; t++) {
                int r;

                if (plan->tasks[t].kind != PLAN_TASK_RESTORED)
                        continue;
                r = plan_mapping_add_thread(map, plan->tasks[t].snapshot->tid, km->tasks[t].tid);
                if (r < 0)
                        return r;
        }
        return 0;
}

int plan_simulate(const Plan *plan, Forest **ret_forest, PlanMapping *ret_map, char **error) {
        _cleanup_(kmodel_deinit) KModel km = {};
        _cleanup_(plan_sim_state_done) PlanSimState st = {};
        size_t root_task;
        int r;

        kmodel_init(&km, !plan->options.unprivileged);
        r = plan_sim_state_init(&st, plan->snapshot);
        if (r >= 0)
                r = kmodel_spawn_initial(&km, &root_task);
        if (r >= 0)
                r = kmodel_set_subreaper(&km, 0, true);
        for (size_t i = 0; r >= 0 && i < plan->n_steps; i++)
                r = plan_step_apply(plan, i, &km, &st, error);
        if (r < 0)
                return r;
        *ret_map = (PlanMapping) {};
        r = mapping_of_model(plan, &km, ret_map);
        if (r >= 0)
                r = kmodel_to_forest(&km, ret_forest);
        if (r < 0)
                plan_mapping_done(ret_map);
        return r;
}
