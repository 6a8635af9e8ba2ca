/* verbs-check.h: `check TID SYSCALL [ARG...]`: what a task's chain does with a call */
#pragma once

#include "context.h"

int verb_check(Context *c, char **args, size_t n_args);
