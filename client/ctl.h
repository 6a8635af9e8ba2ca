/* ctl.h: the verbs of sectreectl, each run with the shared context */
#pragma once

#include "context.h"

typedef int (*VerbFunction)(Context *c, char **args, size_t n_args);

int verb_status(Context *c, char **args, size_t n_args);
int verb_tree(Context *c, char **args, size_t n_args);
int verb_graph(Context *c, char **args, size_t n_args);
int verb_ps(Context *c, char **args, size_t n_args);
int verb_show(Context *c, char **args, size_t n_args);
int verb_chain(Context *c, char **args, size_t n_args);
int verb_check(Context *c, char **args, size_t n_args);
int verb_monitor(Context *c, char **args, size_t n_args);
int verb_rescan(Context *c, char **args, size_t n_args);
int verb_snapshot(Context *c, char **args, size_t n_args);
int verb_snapshots(Context *c, char **args, size_t n_args);
int verb_export(Context *c, char **args, size_t n_args);
int verb_import(Context *c, char **args, size_t n_args);
int verb_rm(Context *c, char **args, size_t n_args);
int verb_validate(Context *c, char **args, size_t n_args);
int verb_diff(Context *c, char **args, size_t n_args);
int verb_plan(Context *c, char **args, size_t n_args);
int verb_policy(Context *c, char **args, size_t n_args);
int verb_who_can(Context *c, char **args, size_t n_args);
int verb_policy_diff(Context *c, char **args, size_t n_args);

/* The completions' words (verbs-complete.c): "WORD<TAB>DESCRIPTION" lines of pids, tids, filters,
 * snapshots or syscalls (arg: an architecture); a usage error for another kind. */
int complete_words(Context *c, const char *kind, const char *arg);
void complete_print_word(const char *word, const char *description);

