/* forest-iso.h: isomorphism of two linked forests: same shape of sharing, same bytes and flags */
#pragma once

#include "core/forest.h"

/* Isomorphism between two linked forests: the same shape of sharing, with the same bytes and
 * flags (log, wait_killable_recv, listener presence) at each node. task_map gives pairs
 * (tid in a, tid in b) for n_map entries; if n_map == 0 a mapping of threads is searched for
 * (by chain shape and comm). Returns 1 if isomorphic, 0 if not (with *why, malloc'ed, saying
 * the first difference), negative errno on failure. */
int forest_isomorphic(const Forest *a, const Forest *b, const TaskPair *task_map, size_t n_map, char **why);
