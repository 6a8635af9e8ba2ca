/* live-undo.h: the changes of a batch undone, newest first */
#pragma once

#include <stddef.h>

#include "core/live-event.h"

/* Undo c, newest first, and empty it. -ENOMEM if a step could not be undone: the forest is then
 * not what it was, and only a full pass (live_replace()) can be trusted. */
int live_rollback(Live *l, LiveChanges *c);
/* Undo the changes above mark, newest first. */
int live_rollback_to(Live *l, LiveChanges *c, size_t mark);
