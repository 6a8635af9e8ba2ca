/* verbs-policy-who.h: `who-can SYSCALL [ARG...]`: the tasks whose chain lets a call run */
#pragma once

#include "context.h"

int verb_who_can(Context *c, char **args, size_t n_args);
