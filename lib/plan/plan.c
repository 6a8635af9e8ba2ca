/* plan.c: the restore planner's entry point: plan_build() runs the analysis and the emitter */
#include "plan/plan.h"

#include "plan/plan-analyse.h"
#include "plan/plan-emit.h"
#include "plan/plan-sim.h"
#include "plan/plan-syscalls.h"
#include "plan/planner.h"

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
