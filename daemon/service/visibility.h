/* visibility.h: what a bus caller may see of the live forest and of /proc: a filter's tasks, a
 * thread's process, a subtree, a listener holder's name */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "core/forest.h"
#include "core/hashmap.h"
#include "service/access.h"
#include "service/units.h"

/* The tasks the caller may see whose head flt is, from caller_visible_filters()'s counts. */
size_t visible_task_count(const Caller *c, const Hashmap *counts, const Filter *flt);

/* A live task the daemon does not track (it runs without filters): 0 if the caller may see it,
 * -ESRCH when there is no such task, -EACCES when the caller may not. */
int caller_check_untracked_task(Caller *c, pid_t tid);

/* The process (tgid) of thread tid, which the daemon may not list (a thread stands for its
 * process); 0 when there is no such task. */
pid_t proc_process_of(uint32_t tid);

/* Whether tgid descends from root, by the parents /proc shows now; memo holds what earlier walks
 * found (pid -> 1 in, 2 out), so every process is read once per call. */
int proc_descends_from(pid_t tgid, pid_t root, Hashmap *memo, bool *ret);

/* The live forest's processes as a walk of a subtree needs them, copied on the loop so that the
 * walk (a read of /proc for every process of the machine) can run in a worker: pid, start time
 * and name, in the forest's order. */
typedef struct TrackedProcess {
        pid_t pid;
        uint64_t start_time;
        char comm[16];
} TrackedProcess;

typedef struct TrackedProcesses {
        TrackedProcess *p;
        size_t n;
} TrackedProcesses;

int tracked_processes_copy(const Forest *f, TrackedProcesses *ret);
void tracked_processes_done(TrackedProcesses *t);

/* The tracked processes of root's subtree (by the parents /proc shows now) that the caller may
 * see, in the forest's order. */
int caller_subtree_tracked(Caller *c, const TrackedProcesses *t, pid_t root, pid_t **ret, size_t *ret_n);

/* A listing's access checks, made off the loop: whether the caller may see each of t (its answers
 * memoised in c->seen). Then, on the loop, caller_seen_rebase() keeps the answers about the
 * processes f still has as they were (the same start time): a pid reused meanwhile is checked
 * again when the listing asks. */
int caller_check_tracked(Caller *c, const TrackedProcesses *t);
/* ListProcessUnits's walk: each of t the caller may see, with its units read from its cgroup now
 * (a process gone meanwhile left out). */
int caller_process_units(Caller *c, const TrackedProcesses *t, PidUnit **ret, size_t *ret_n);
/* Every process of the machine that t does not hold (none of its threads under a filter or in
 * strict mode) and the caller may see, kernel threads left out, with its thread count and its
 * units (ListUnfilteredProcesses), by pid. A process that exits meanwhile is left out. */
int caller_unfiltered_units(Caller *c, const TrackedProcesses *t, PidUnit **ret, size_t *ret_n);
int caller_seen_rebase(Caller *c, const TrackedProcesses *t, const Forest *f);

/* A process of a subtree as ListTasks would show it: a tracked process by the scan's name, any
 * other by /proc's; its parent as /proc says now. */
typedef struct VisibleProcess {
        pid_t pid, ppid;
        char comm[16];
} VisibleProcess;

/* Every process of root's subtree that the caller may see, filtered or not, as snapshots take
 * them: the walk over every pid /proc lists, not over the tracked ones only. A process gone
 * meanwhile is left out. */
int caller_subtree_processes(Caller *c, const TrackedProcesses *t, pid_t root, VisibleProcess **ret, size_t *ret_n);

/* The name of a listener's holder: as the forest has the process, or /proc now ("" when it is
 * gone). */
void holder_comm(const Forest *f, pid_t pid, char comm[16]);
