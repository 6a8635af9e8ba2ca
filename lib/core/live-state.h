/* live-state.h: what is kept beside the live forest's processes and filters: the index of
 * children by parent, what keeps each filter alive, a forest adopted whole; and the edits of
 * processes and listeners that applying and undoing share */
#pragma once

#include <stdbool.h>

#include "core/forest.h"
#include "core/live-event.h"

/* The processes of the live forest whose parent is ppid (not linked: valid until the next change). */
const pid_t *live_children(const Live *l, pid_t ppid, size_t *ret_n);
/* Every parent of a live process, with one of its children: for (size_t i = 0; live_next_parent(l, &i,
 * &ppid); ) ... */
bool live_next_parent(const Live *l, size_t *i, pid_t *ret_ppid);

/* How often the uses of the filters were counted from scratch: once after each replace or
 * rollback, otherwise kept up to date by the changes (tests). */
unsigned live_uses_rebuilds(const Live *l);

/* For the live forest's files: */
int live_children_add(Live *l, pid_t ppid, pid_t pid);
void live_children_remove(Live *l, pid_t ppid, pid_t pid);
void live_children_reset(Live *l);
size_t live_uses_get(const Live *l, uint64_t id);
void live_push_candidate(Live *l, uint64_t id);
void live_uses_add(Live *l, uint64_t id);
void live_uses_drop(Live *l, uint64_t id);
int live_uses_rebuild(Live *l);
/* A forest came in whole (new, replaced, put back): derive what is kept beside it. */
int live_adopt(Live *l, Forest *f);
void live_fields_of(const Process *p, LiveProcessFields *ret);
/* Set p's fields to f (exe is the caller's: p takes it); the old ones go to *old (old->exe is then
 * the caller's). Keeps the children index. */
int live_fields_swap(Live *l, Process *p, const LiveProcessFields *f, LiveProcessFields *old);
/* Take the listener with that id out of f (NULL if none). */
Listener *live_listener_take(Forest *f, uint64_t id);
int live_listener_put(Forest *f, Listener *l);
