/* verbs-plan.h: `plan ID|FILE`: what a restore of a snapshot will do, step by step */
#pragma once

#include "context.h"

int verb_plan(Context *c, char **args, size_t n_args);
