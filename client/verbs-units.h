/* verbs-units.h: `units`: each systemd unit or container with its tasks, distinct chains and a
 * one-line verdict */
#pragma once

#include "context.h"

int verb_units(Context *c, char **args, size_t n_args);
