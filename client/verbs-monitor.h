/* verbs-monitor.h: `monitor`: the daemon's signals, printed as they come */
#pragma once

#include "context.h"

int verb_monitor(Context *c, char **args, size_t n_args);
