/* workload.h: real process and thread trees under seccomp, built for a benchmark and torn down after */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/forest.h"

/*
 * The shape: a root process (in its own process group, killed with the benchmark by
 * PR_SET_PDEATHSIG) installs a shared filter and forks processes of threads_per_process tasks
 * each (leader included). Task i of the workload (0 = the root) installs a private filter of its
 * own when i is odd, so half of the tasks hold a private filter on top of the shared one; private
 * filters differ in their bytes. Then every task blocks: leaders in pause(), other threads in a
 * futex wait. Filters return ERRNO for syscall numbers nothing uses and allow the rest.
 *
 * workload_new() makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER), so that
 * every task of a workload can be reaped by it when the workload is torn down.
 */

typedef struct WorkloadOptions {
        size_t n_tasks;             /* >= 1, the root included */
        size_t threads_per_process; /* tasks per forked process, its leader included; >= 1 */
        size_t filter_len;          /* instructions per filter (shared and private); >= 8 */
        size_t private_kinds;       /* 0: every private filter has bytes of its own; k: k kinds, in turn */
} WorkloadOptions;

typedef struct WorkloadTask {
        pid_t tid, tgid;
        bool private_filter;
} WorkloadTask;

typedef struct Workload Workload;

/* The executable a workload's root runs as (sectree-workload-root, whose main() is
 * workload_root_main(): it returns only when its arguments are wrong), so that the tasks share
 * none of the caller's memory. Unset, the root runs in the forked copy of the caller. */
void workload_set_root_executable(const char *path);
int workload_root_main(int argc, char *argv[]);

/* Build the tree and wait until every task holds its filters and blocks. */
int workload_new(const WorkloadOptions *o, Workload **ret);
/* Kill the whole tree (SIGKILL to its process group), reap it, and warn if any task remains.
 * Accepts NULL. */
Workload *workload_free(Workload *w);
DEFINE_CLEANUP(Workload *, workload_free);

pid_t workload_root(const Workload *w);
size_t workload_n_tasks(const Workload *w);
const WorkloadTask *workload_tasks(const Workload *w);
/* Distinct filter objects the workload made (the shared one and the private ones). */
size_t workload_n_filters(const Workload *w);
/* Filters summed over every task's chain (what Seccomp_filters: adds up to). */
size_t workload_n_chain_filters(const Workload *w);

/* Whether a scan of the workload's subtree found it as built: every task with a chain of its
 * expected depth, and as many tasks and filters as it made. When not, *why (size bytes) says how. */
bool workload_matches_forest(const Workload *w, const Forest *f, char *why, size_t size);

/* Install a filter of len instructions (8..261) on the calling thread; filters of different salts
 * differ in their bytes, salt 0 is the workload's shared one. Needs no_new_privs or CAP_SYS_ADMIN. */
int workload_install_filter(size_t len, uint32_t salt);
/* Whether task index (0: the root) of a workload installs a private filter of its own. */
bool workload_task_has_private_filter(size_t index);

/* Tasks the kernel can still create next to the ones that exist now: the smallest of pid_max,
 * threads-max and RLIMIT_NPROC (raised to its hard limit), minus the tasks alive. */
int workload_task_room(size_t *ret);
/* Tasks alive on the machine (every thread of every process). */
int count_machine_tasks(size_t *ret);
