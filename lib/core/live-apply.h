/* live-apply.h: batches of events applied to the live forest, each change recorded */
#pragma once

#include <stddef.h>

#include "core/live-event.h"

/* Apply a batch in order, then retire the filters nothing uses any more. The changes are
 * appended to c. On failure (-ENOLINK: a filter whose parent the live forest never heard of;
 * -EUCLEAN: a thread whose head it does not have; -EBADMSG: an event that cannot be; -ENOMEM) c
 * holds what was changed before: live_rollback() it. Events about tasks the live forest does not
 * track and has no use for (a disabled thread's exit) change nothing. */
int live_apply(Live *l, const LiveEvent *events, size_t n, LiveChanges *c);
/* What live_apply_fitting() left out. */
typedef struct LiveSkipped {
        size_t n;              /* events left out */
        size_t unknown_filter; /* of which: they named a filter the live forest does not have */
        /* The first one left out: its thread, and the filter it named (0: it failed otherwise,
         * with error). */
        pid_t tid;
        uint64_t filter_id;
        int error;
} LiveSkipped;

/* live_apply(), leaving out the events that do not fit instead of failing the batch: an event that
 * names a filter the live forest does not have and no filter event of the batch brings (as head, or
 * as parent of a new filter: an event about it was lost, or it was retired), and an event that
 * fails on its own (its changes are undone). What fits is applied and its changes appended to c;
 * *skipped says what was left out, which only a full pass can tell. Fails (-ENOMEM, or -EUCLEAN
 * when what was applied still names a filter nobody brought) as live_apply() does: c then holds
 * what was changed before, for live_rollback(). */
int live_apply_fitting(Live *l, const LiveEvent *events, size_t n, LiveChanges *c, LiveSkipped *skipped);
