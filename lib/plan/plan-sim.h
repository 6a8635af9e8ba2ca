/* plan-sim.h: a plan's steps run on the kernel model, step by step while the planner makes the
 * plan, or from scratch to check one */
#pragma once

#include "core/forest.h"
#include "plan/plan-kmodel.h"
#include "plan/plan-types.h"
#include "plan/plan-verify.h"

/* What running a plan's steps on a model keeps besides the model: which model objects stand for
 * the snapshot's filters and listeners, and the listener fd each task's last install returned. */
typedef struct PlanSimState {
        size_t *filter_object;   /* [snapshot filters]: KMODEL_NONE until installed */
        size_t *listener_object; /* [snapshot listeners]: KMODEL_NONE until installed */
        int *last_install_fd;    /* [tasks] */
        size_t n_last_install_fd, n_last_install_fd_allocated;
} PlanSimState;
int plan_sim_state_init(PlanSimState *st, const Forest *snapshot);
void plan_sim_state_done(PlanSimState *st);
/* Apply step i of plan to the model. -EPROTO (with *error) when the model refuses it: a
 * planner bug, since every step is checked while the plan is made. */
int plan_step_apply(const Plan *plan, size_t i, KModel *km, PlanSimState *st, char **error);

/* Run the plan on the model of the kernel (lib/plan/plan-kmodel.h) from scratch: the state when every
 * task is parked, as a forest, with the mapping of the snapshot's pids and tids to the model's.
 * -EPROTO with *error when the model refuses a step. */
int plan_simulate(const Plan *plan, Forest **ret_forest, PlanMapping *ret_map, char **error);
