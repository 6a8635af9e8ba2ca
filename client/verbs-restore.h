/* verbs-restore.h: the verbs of restores the daemon makes (verbs-restore.c) */
#pragma once

#include "context.h"

int verb_restore(Context *c, char **args, size_t n_args);
int verb_restores(Context *c, char **args, size_t n_args);
int verb_release(Context *c, char **args, size_t n_args);
int verb_run(Context *c, char **args, size_t n_args);
