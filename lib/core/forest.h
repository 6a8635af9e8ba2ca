/* forest.h: the seccomp filter forest: its model (core/forest-model.h), and forests cut down to
 * a subtree, their unfiltered processes and unreachable filters dropped, their ids rewritten */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/forest-model.h"

/* Restrict to what a snapshot of root's subtree holds (schema/snapshot-v1.md): the processes
 * whose ancestry leads to root (root included), the listeners pointing at the filters their chains
 * reach or held by them, every holder of those listeners (a process outside the subtree with all
 * of its threads, disabled ones too: restoring the listener needs it), and the filters all their
 * chains reach, repeated until nothing more is added. Holders the forest has no process for are
 * dropped. root 0 is the whole machine: the processes with a thread in strict or filter mode and
 * every listener with its holders. The forest must be linked; it is linked again afterwards. */
int forest_restrict_to_subtree(Forest *f, pid_t root);
/* The same with the subtree's processes named by is_member() rather than found through the
 * forest's ppid links: a reader that knows the subtree although it could not read some of its
 * processes (root among them) keeps their descendants. */
int forest_restrict_to_members(Forest *f, pid_t root, bool (*is_member)(const Process *p, void *userdata),
                               void *userdata);

/* Keep only the processes is_member() names, the filters their chains reach and the listeners of
 * those filters or held by them (with their holders); the root stays. The forest must be linked;
 * it is linked again. For a view of some processes (a unit's) rather than of a subtree. */
int forest_restrict_to_processes(Forest *f, bool (*is_member)(const Process *p, void *userdata), void *userdata);

/* Drop every process that has no thread in strict or filter mode. A thread in disabled mode of a
 * process that has one stays: it escaped the filters of its process (it was made before they
 * were installed without TSYNC), and is listed as such. */
void forest_drop_unfiltered_processes(Forest *f);
/* Remove the filters no thread's chain and no listener reaches (they were freed by the kernel).
 * The forest must be linked; it is linked again. The removed ids are returned in *ret_ids
 * (malloc'ed, may be NULL when none) when ret_ids is not NULL. */
int forest_drop_unreachable_filters(Forest *f, uint64_t **ret_ids, size_t *ret_n);

/* Make ids snapshot-local: filters become 1..n in their linked (parents-first) order, listeners
 * 1..m by their current order; every reference follows. The forest must be linked. */
int forest_renumber(Forest *f);
/* Give f->filters[i] the id new_ids[i] (all > 0 and distinct), every reference following. The
 * forest must be linked; it is linked again. */
int forest_set_ids(Forest *f, const uint64_t *new_ids);
