/* plan-describe.h: a sentence for every step of a plan */
#pragma once

#include "plan/plan-types.h"

/* One line saying what step i does, e.g.
 * "pid 412 tid 413: install filter 3 (log, listener) with seccomp(2)". malloc'ed, NULL on OOM. */
char *plan_step_describe(const Plan *p, size_t i);
