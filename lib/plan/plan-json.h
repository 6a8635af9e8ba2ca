/* plan-json.h: a restore plan as JSON, for `sectreectl plan --json` and for callers of the
 * executor that show what a restore will do */
#pragma once

#include <jansson.h>

#include "plan/plan-describe.h"

/* The plan: its processes (the restore root, the snapshot's, the helpers), tasks, steps (each
 * with the operation, its arguments in snapshot ids and the system call chosen, and the sentence
 * plan_step_describe() makes), and what the restored tree will differ in. NULL on OOM. */
json_t *plan_to_json(const Plan *p);
