/* proc-subtree.h: the processes of a subtree that run without filters, from /proc as the caller
 * sees it, for `tree PID` to list as snapshots do */
#pragma once

#include "core/forest.h"

/* Add to f each process of root's subtree (root included) that f lacks: its name and parent from
 * /proc/PID/stat, its main thread in disabled mode (they are listed under "without a filter:").
 * Processes that exit meanwhile are skipped. f is linked again. -ENOMEM, or forest_link()'s. */
int forest_add_unfiltered_subtree(Forest *f, pid_t root);

/* Is pid in root's subtree, following its parents through /proc now (root included)? -ESRCH when
 * pid is gone, 0 (no) or 1 (yes). */
int proc_in_subtree(pid_t pid, pid_t root);
