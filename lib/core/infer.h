/* infer.h: which filters of a new reading are filters we already know: by thread for any backend,
 * and by bytes (hash-consing) for the ptrace backend's inferred identity
 *
 * A thread, named by its tid and start time, keeps the filter objects of its chain for life (a
 * chain only grows): the filter it had at depth d before is the filter it has at depth d now.
 * That is exact whatever the backend, and it is what keeps ids across full passes and daemon
 * restarts. The ptrace backend also takes byte-identical filters with the same parent to be the
 * same object where related tasks hold them (scan-ptrace.c), and keeps a live filter's id for an
 * equal one that another thread holds now. */
#pragma once

#include "core/forest.h"
#include "core/live.h"

/* Give the filters of f (a pass: linked, numbered by its scanner) the ids of prev's where they are
 * the same filter: the one that every thread living in both (same tid and start time) holding it
 * had at the same depth, with the same bytes, LOG flag and, as renumbered, parent, if no other
 * filter of f is claimed so for that one (claims that disagree keep no id: infer.c says why); else,
 * with by_content, an unused filter of prev with the same parent, bytes and LOG flag. The others
 * get ids from ++*next_id, or keep theirs when next_id is NULL (ids that cannot collide with prev's:
 * the bpf scanner's). prev may be NULL. *ret_renamed, when not NULL, maps each id of f that changed
 * to its new id ((void *) (uintptr_t) id values). f is linked again. About one step per thread
 * and filter. */
int infer_adopt_ids(const Forest *prev, Forest *f, bool by_content, uint64_t *next_id, Hashmap *ret_renamed);
/* The same, where the ids in reserved (keys) stay with the prev filters that have them unless a
 * thread of f claims them: by_content gives them to no other filter. The ptrace backend reserves
 * the chains of the threads a pass could not read, which keep their live state: a new filter with
 * the same bytes must not take their ids. */
int infer_adopt_ids_reserving(const Forest *prev, Forest *f, bool by_content, uint64_t *next_id, Hashmap *ret_renamed,
                              const Hashmap *reserved);

/* The events that make the live forest hold a subtree rescan: scan (linked, as ptrace_scan() made
 * it) replaces the live state of each of its processes, ancestors first, and a thread that the scan
 * could not read (unreadable) keeps its live state. A rescanned thread's chain shares the longest
 * equal prefix with the chains of its own process's threads placed before it and of its nearest
 * ancestor process with a filter thread; the rest of the chain are nodes of their own. Such a node
 * keeps the id of a live filter with the same parent, bytes and LOG flag that no kept thread
 * reaches any more (preferring the one the same thread had at the same depth); otherwise it is
 * new, with an id from ++*next_id, and comes as a LIVE_EVENT_FILTER. Appended to out. */
int infer_merge(const Forest *live, const Forest *scan, const pid_t *unreadable, size_t n_unreadable,
                uint64_t *next_id, LiveBatch *out);
