/* verbs-snapshots.h: the verbs of the daemon's stored snapshots: snapshot, snapshots, export, import, rm */
#pragma once

#include "context.h"

int verb_snapshot(Context *c, char **args, size_t n_args);
int verb_snapshots(Context *c, char **args, size_t n_args);
int verb_export(Context *c, char **args, size_t n_args);
int verb_import(Context *c, char **args, size_t n_args);
int verb_rm(Context *c, char **args, size_t n_args);
