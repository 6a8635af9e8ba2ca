/* plan-emit.h: the planner's emitter: the steps, each run on the model as it is emitted */
#pragma once

#include "plan/planner.h"

/* Emit the steps, running each on the model; then check the model's end state. */
int plan_emit(Planner *p);
