/* live.h: the live forest the daemon serves, changed only by batches of kernel events, each
 * returning the list of what changed
 *
 * live_apply() is a model step without I/O: whatever an event needs from /proc (the exe of a new
 * process, the threads a TSYNC reached and their start times, a new parent) the observing side
 * read already and put in the event. What changed comes out in order, each change with what it
 * replaced: the daemon stores the changes in one transaction, commits, and only then announces
 * them; when storing fails, live_rollback() puts the live forest back as it was before the batch,
 * so that the live forest, the database and what the bus said always agree. */
#pragma once

#include "core/forest.h"
#include "core/live-apply.h"
#include "core/live-event.h"
#include "core/live-state.h"
#include "core/live-undo.h"

/* A live forest starting as f (taken; NULL: empty). f need not be linked. */
int live_new(Forest *f, Live **ret);
Live *live_free(Live *l);
DEFINE_CLEANUP(Live *, live_free);

/* The forest as it is: not necessarily linked. */
const Forest *live_forest(const Live *l);
/* The forest linked, for readers that walk it: -EINVAL with *error (malloc'ed, may be NULL) when
 * it cannot be linked. */
int live_linked(Live *l, const Forest **ret, char **error);

typedef struct LiveCounts {
        size_t tasks, filters, listeners;
        size_t over_budget; /* filters whose instructions were dropped */
} LiveCounts;
/* O(1): kept up to date by every change. */
LiveCounts live_counts(const Live *l);

/* Replace the whole forest with f (a full pass; taken; linked). With announce, the differences
 * that signals announce (threads gone and new by tid and start time, filters new) are appended
 * too, after LIVE_REPLACED. */
int live_replace(Live *l, Forest *f, bool announce, LiveChanges *c);
/* Keep the instructions of a uid's filters only up to insns_per_uid instructions (0: all of them;
 * uid 0 is never counted), as lib/core/budget.h says: the filters the live forest holds now are counted
 * afresh (-EINVAL when it does not link: then the next live_replace() counts them), and every
 * filter that comes in after. An event's filter counts against the uid of the
 * task that installed it (LiveTask.uid); a full pass's, the lowest uid of the processes it runs. */
int live_set_budget(Live *l, uint64_t insns_per_uid);
/* The budget live_set_budget() set. */
uint64_t live_budget_insns(const Live *l);
/* Instructions kept for uid (tests). */
uint64_t live_budget_kept(const Live *l, uid_t uid);
