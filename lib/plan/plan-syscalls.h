/* plan-syscalls.h: the system calls of every step checked against the chain in force */
#pragma once

#include <stdbool.h>

#include "plan/planner.h"

/* Choose the system call of step i (and check what the task does after it) against the chain the
 * task runs under in the model, before the step is applied. -EINVAL with the reason when no
 * choice works. */
int plan_check_step(Planner *p, size_t i);
/* After step i was applied: the task reports and waits for its next step. */
int plan_check_after_step(Planner *p, size_t i);
/* Does the chain that ends at snapshot filter head stop prctl(PR_SET_NO_NEW_PRIVS)? 1 yes, 0 no. */
int plan_chain_stops_nnp(Planner *p, const Filter *head);
/* Does it stop a call of becoming process sp's uid and gid (a SET_CREDS step)? 1 yes, 0 no. */
int plan_chain_stops_creds(Planner *p, const Filter *head, const Process *sp);
/* Free the cache of system call verdicts. */
void plan_verdict_cache_free(Planner *p);
/* Would step s (not yet emitted) pass both checks? Sets s->syscall. */
bool plan_step_possible(Planner *p, PlanStep *s);
