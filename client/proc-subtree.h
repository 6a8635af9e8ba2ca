/* proc-subtree.h: whether a process is in a subtree, from /proc as the caller sees it, for
 * monitor --subtree */
#pragma once

#include "core/forest.h"

/* Is pid in root's subtree, following its parents through /proc now (root included)? -ESRCH when
 * pid is gone, 0 (no) or 1 (yes). */
int proc_in_subtree(pid_t pid, pid_t root);
