/* executor-reply.c: the frames the executor answers with: READY with the mapping and its fds,
 * STARTED, RELEASED, and ERROR naming the stage and the step that failed */
#include "executor-reply.h"

#include "core/util.h"

int executor_reply_json(RestoreFrameType type, json_t *doc) {
        _cleanup_free_ char *s = json_dumps(doc, JSON_COMPACT);
        int r;

        if (!s)
                return log_oom();
        r = restore_frame_send(EXECUTOR_SOCKET_FD, type, s, strlen(s), NULL, 0);
        if (r == -EPIPE || r == -ECONNRESET) /* the caller left: nobody to tell */
                return log_debug_errno(r, "Caller gone, %s reply not sent: %m", restore_frame_type_to_string(type));
        if (r < 0)
                return log_error_errno(r, "Failed to send the %s reply: %m", restore_frame_type_to_string(type));
        return 0;
}

/* ERROR: what failed, at which stage; for a failed step its index, operation, task, system call
 * and errno. */
int executor_reply_error(const char *stage, const char *message, const Controller *c) {
        json_auto_t *doc = json_pack("{s:s, s:s}", "stage", stage, "message", message ?: "failed");

        if (!doc)
                return log_oom();
        if (c && c->failed_step != SIZE_MAX) {
                const PlanStep *st = &c->plan->steps[c->failed_step];
                _cleanup_free_ char *what = plan_step_describe(c->plan, c->failed_step);
                json_object_set_new(doc, "step", json_integer((json_int_t) c->failed_step));
                json_object_set_new(doc, "op", json_string(plan_op_to_string(st->op)));
                json_object_set_new(doc, "description", what ? json_string(what) : json_null());
        }
        if (c && c->failed_errno) {
                json_object_set_new(doc, "errno", json_integer(c->failed_errno));
                json_object_set_new(doc, "error", json_string(strerrorname_np(c->failed_errno) ?: "?"));
        }
        if (c && c->failed_call != RUNTIME_CALL_NONE)
                json_object_set_new(doc, "call", json_string(runtime_call_to_string(c->failed_call)));
        if (c && c->pids && c->pids[0] > 0)
                json_object_set_new(doc, "restore_root", json_integer(c->pids[0]));
        log_error("Restore failed (%s): %s", stage, message ?: "failed");
        return executor_reply_json(RESTORE_FRAME_ERROR, doc);
}

static json_t *pid_array(const pid_t *v, size_t n) {
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_integer(v[i]));
        return a;
}

/* The fds READY indexes, in the order they will be sent. */
typedef struct FdList {
        int *v;
        size_t n;
} FdList;

static void fd_list_push(FdList *l, int fd) {
        l->v[l->n++] = fd; /* sized for every process and filter */
}

static json_t *ready_processes(const Controller *c, FdList *fds) {
        const Plan *p = c->plan;
        json_t *a = json_array();

        for (size_t pp = 0; a && pp < p->n_processes; pp++) {
                if (p->processes[pp].kind != PLAN_PROCESS_RESTORED)
                        continue;
                json_array_append_new(a, json_pack("{s:i, s:i, s:i}", "snapshot_pid", p->processes[pp].snapshot->pid,
                                                   "pid", c->pids[pp], "fd", (int) fds->n));
                fd_list_push(fds, c->pidfds[pp]);
        }
        return a;
}

static json_t *ready_threads(const Controller *c) {
        const Plan *p = c->plan;
        json_t *a = json_array();

        for (size_t t = 0; a && t < p->n_tasks; t++)
                if (p->tasks[t].kind == PLAN_TASK_RESTORED)
                        json_array_append_new(a, json_pack("{s:i, s:i}", "snapshot_tid", p->tasks[t].snapshot->tid, "tid",
                                                           c->tids[t]));
        return a;
}

static json_t *ready_listeners(const Controller *c, FdList *fds) {
        const Forest *s = c->plan->snapshot;
        json_t *a = json_array();

        for (size_t i = 0; a && i < s->n_listeners; i++) {
                if (c->listener_fds[i] < 0)
                        continue;
                json_array_append_new(a, json_pack("{s:I, s:I, s:i}", "snapshot_listener", (json_int_t) s->listeners[i]->id,
                                                   "filter", (json_int_t) s->listeners[i]->filter_id, "fd", (int) fds->n));
                fd_list_push(fds, c->listener_fds[i]);
        }
        for (size_t j = 0; a && j < s->n_filters; j++) {
                if (c->filter_listener_fds[j] < 0)
                        continue;
                json_array_append_new(a, json_pack("{s:n, s:I, s:i}", "snapshot_listener", "filter",
                                                   (json_int_t) s->filters[j]->id, "fd", (int) fds->n));
                fd_list_push(fds, c->filter_listener_fds[j]);
        }
        return a;
}

/* READY, then the fds it indexes in FDS frames. */
int executor_reply_ready(const Controller *c, bool unprivileged) {
        const Plan *p = c->plan;
        _cleanup_free_ int *fdv = calloc(p->n_processes + p->snapshot->n_listeners + p->snapshot->n_filters + 1, sizeof(int));
        FdList fds = { .v = fdv };
        json_auto_t *doc = NULL;
        int r;

        if (!fdv)
                return log_oom();
        doc = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:{s:I, s:I}, s:I, s:b}", "restore_root", c->pids[0],
                        "processes", ready_processes(c, &fds), "threads", ready_threads(c), "listeners",
                        ready_listeners(c, &fds), "no_new_privs_added", pid_array(p->nnp_added, p->n_nnp_added),
                        "subreapers", pid_array(p->subreapers, p->n_subreapers), "helpers", "processes",
                        (json_int_t) p->n_helper_processes, "threads", (json_int_t) p->n_helper_threads, "steps",
                        (json_int_t) p->n_steps, "unprivileged", unprivileged);
        if (!doc)
                return log_oom();
        json_object_set_new(doc, "n_fds", json_integer((json_int_t) fds.n));
        r = executor_reply_json(RESTORE_FRAME_READY, doc);
        for (size_t i = 0; r >= 0 && i < fds.n; i += RESTORE_FRAME_MAX_FDS) {
                size_t n = fds.n - i < RESTORE_FRAME_MAX_FDS ? fds.n - i : RESTORE_FRAME_MAX_FDS;
                r = restore_frame_send(EXECUTOR_SOCKET_FD, RESTORE_FRAME_FDS, NULL, 0, fds.v + i, n);
                if (r < 0)
                        log_error_errno(r, "Failed to send the fds: %m");
        }
        return r;
}
