/* verbs-tasks.h: the task verbs: `ps` (the tasks the daemon lists) and `chain TID` (one task's filters) */
#pragma once

#include "context.h"

int verb_ps(Context *c, char **args, size_t n_args);
int verb_chain(Context *c, char **args, size_t n_args);
