/* verbs-tree.h: what tree and graph share: the optional PID argument, the forest it names, --json */
#pragma once

#include "core/forest.h"
#include "context.h"

int parse_root_arg(char **args, size_t n_args, pid_t *ret);
/* Parse [PID], connect, fetch the live forest (restricted to PID's subtree if given); with --file,
 * read the snapshot file instead. Logs. */
int fetch_forest(Context *c, char **args, size_t n_args, Forest **ret);
int print_forest_json(const Forest *f);

int verb_tree(Context *c, char **args, size_t n_args);
