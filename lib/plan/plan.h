/* plan.h: the restore planner: a snapshot -> an ordered program of steps that rebuilds its process
 * tree so that every filter is installed once and every task gets its chain the way the kernel
 * shares filters (inheritance over fork and clone) */
#pragma once

#include "core/forest.h"
#include "plan/plan-describe.h"
#include "plan/plan-like.h"
#include "plan/plan-types.h"

/* Make the plan for a validated, linked snapshot. Returns 0; -EINVAL when the snapshot cannot be
 * restored exactly (a shape the kernel cannot produce, a step a filter would stop, a bad option),
 * with *error (malloc'ed) naming the element; -ENOMEM. */
int plan_build(const Forest *snapshot, const PlanOptions *options, Plan **ret, char **error);
