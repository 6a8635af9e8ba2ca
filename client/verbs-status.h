/* verbs-status.h: the verbs of the daemon's state: `status` (its properties) and `rescan` */
#pragma once

#include "context.h"

int verb_status(Context *c, char **args, size_t n_args);
int verb_rescan(Context *c, char **args, size_t n_args);
