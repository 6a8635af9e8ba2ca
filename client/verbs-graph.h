/* verbs-graph.h: `graph [PID]`: the forest as a Graphviz digraph */
#pragma once

#include "context.h"

int verb_graph(Context *c, char **args, size_t n_args);
