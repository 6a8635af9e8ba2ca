/* plan-json.c: a restore plan as JSON, for `sectreectl plan --json` and for callers of the
 * executor that show what a restore will do */
#include "plan/plan-json.h"

static json_t *pids_json(const pid_t *v, size_t n) {
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_integer(v[i]));
        return a;
}

static json_t *process_json(const Plan *p, size_t i) {
        const PlanProcess *x = &p->processes[i];
        json_t *o = json_pack("{s:I, s:s, s:I}", "index", (json_int_t) i, "kind", plan_process_kind_to_string(x->kind),
                              "leader", (json_int_t) x->leader);

        if (!o)
                return NULL;
        json_object_set_new(o, "parent", x->parent == PLAN_NONE ? json_null() : json_integer((json_int_t) x->parent));
        if (x->snapshot) {
                json_object_set_new(o, "snapshot_pid", json_integer(x->snapshot->pid));
                json_object_set_new(o, "comm", json_string(x->snapshot->comm));
        }
        if (x->exec != PLAN_NONE) {
                json_t *argv = json_array();
                for (char **a = p->options.exec[x->exec].argv; argv && *a; a++)
                        json_array_append_new(argv, json_string(*a));
                json_object_set_new(o, "exec", argv);
        }
        return o;
}

static json_t *task_json(const Plan *p, size_t t) {
        const PlanTask *x = &p->tasks[t];
        json_t *o = json_pack("{s:I, s:I, s:s}", "index", (json_int_t) t, "process", (json_int_t) x->process, "kind",
                              x->kind == PLAN_TASK_RESTORED ? "restored" : "helper");

        if (o && x->snapshot)
                json_object_set_new(o, "snapshot_tid", json_integer(x->snapshot->tid));
        if (o && x->ns_tid > 0)
                json_object_set_new(o, "ns_tid", json_integer(x->ns_tid));
        return o;
}

static json_t *install_flags_json(unsigned flags) {
        json_t *a = json_array();

        if (a && (flags & PLAN_INSTALL_LOG))
                json_array_append_new(a, json_string("log"));
        if (a && (flags & PLAN_INSTALL_NEW_LISTENER))
                json_array_append_new(a, json_string("new_listener"));
        if (a && (flags & PLAN_INSTALL_WAIT_KILLABLE_RECV))
                json_array_append_new(a, json_string("wait_killable_recv"));
        return a;
}

static json_t *listener_id_json(const Plan *p, size_t li) {
        return li == PLAN_NONE ? json_null() : json_integer((json_int_t) p->snapshot->listeners[li]->id);
}

/* The arguments of step i that its operation has. */
static void step_arguments(const Plan *p, const PlanStep *s, json_t *o) {
        switch (s->op) {
        case PLAN_OP_INSTALL:
                json_object_set_new(o, "filter", json_integer((json_int_t) s->filter->id));
                json_object_set_new(o, "flags", install_flags_json(s->flags));
                break;
        case PLAN_OP_KEEP_LISTENER:
        case PLAN_OP_RECEIVE_LISTENER:
                json_object_set_new(o, "filter", s->filter ? json_integer((json_int_t) s->filter->id) : json_null());
                json_object_set_new(o, "listener", listener_id_json(p, s->listener));
                json_object_set_new(o, "fd", s->fd >= 0 ? json_integer(s->fd) : json_null());
                break;
        case PLAN_OP_CLOSE_FD:
                json_object_set_new(o, "fd", json_integer(s->fd));
                break;
        case PLAN_OP_SET_SUBREAPER:
                json_object_set_new(o, "value", json_boolean(s->arg));
                break;
        case PLAN_OP_SPAWN_THREAD:
        case PLAN_OP_SPAWN_PROCESS:
                json_object_set_new(o, "target", json_integer((json_int_t) s->target));
                if (s->op == PLAN_OP_SPAWN_PROCESS)
                        json_object_set_new(o, "clone_parent", json_boolean(s->arg));
                break;
        case PLAN_OP_REAP:
                json_object_set_new(o, "process", json_integer((json_int_t) s->target));
                break;
        case PLAN_OP_EXEC:
                json_object_set_new(o, "after_start", json_true());
                break;
        default:
                break;
        }
}

static json_t *step_json(const Plan *p, size_t i) {
        const PlanStep *s = &p->steps[i];
        char *what = plan_step_describe(p, i);
        json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:s?}", "step", (json_int_t) i, "task", (json_int_t) s->task, "op",
                              plan_op_to_string(s->op), "syscall", plan_syscall_to_string(s->syscall), "description",
                              what);

        free(what);
        if (o)
                step_arguments(p, s, o);
        return o;
}

static json_t *array_of(const Plan *p, size_t n, json_t *(*one)(const Plan *p, size_t i)) {
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++) {
                json_t *x = one(p, i);
                if (!x || json_array_append_new(a, x) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

json_t *plan_to_json(const Plan *p) {
        return json_pack("{s:b, s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:{s:I, s:I}, s:I, s:I}", "unprivileged",
                         p->options.unprivileged, "original_ids", p->options.original_ids, "pid_namespace",
                         p->options.pid_namespace, "processes", array_of(p, p->n_processes, process_json), "tasks",
                         array_of(p, p->n_tasks, task_json), "steps", array_of(p, p->n_steps, step_json),
                         "no_new_privs_added", pids_json(p->nnp_added, p->n_nnp_added), "subreapers",
                         pids_json(p->subreapers, p->n_subreapers), "helpers", "processes",
                         (json_int_t) p->n_helper_processes, "threads", (json_int_t) p->n_helper_threads, "moves",
                         (json_int_t) p->n_moves, "clone_parent", (json_int_t) p->n_clone_parent);
}
