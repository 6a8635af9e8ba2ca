/* verbs-filter.h: `show`: one filter, a task's chain of filters, or a snapshot file's metadata */
#pragma once

#include "context.h"

int verb_show(Context *c, char **args, size_t n_args);
