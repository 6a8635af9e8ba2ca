/* verbs-policy-diff.h: `policy-diff A B`: the system calls two tasks' chains decide differently */
#pragma once

#include "context.h"

int verb_policy_diff(Context *c, char **args, size_t n_args);
