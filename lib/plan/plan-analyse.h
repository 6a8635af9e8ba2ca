/* plan-analyse.h: the planner's analysis of a snapshot */
#pragma once

#include "plan/planner.h"

/* Who installs what, what each process inherits, where each process is created. */
int plan_analyse(Planner *p);
void plan_analysis_free(Planner *p);
