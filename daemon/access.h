/* access.h: who may see what: a bus caller sees the tasks it could ptrace itself */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "forest.h"
#include "hashmap.h"

typedef struct Caller {
        uid_t uid;     /* the caller's effective uid, as the bus tells it */
        bool has_gid;
        gid_t gid;
        bool privileged; /* uid 0: sees everything */
        Hashmap seen;    /* tgid -> (void*) 1 visible / 2 not, memoised for one request */
} Caller;

/* From the message's sender credentials (sd_bus_query_sender_creds). */
int caller_from_message(sd_bus_message *m, Caller *ret);
void caller_deinit(Caller *c);

/* The rule of __ptrace_may_access() without capabilities: the task's real and effective uid are
 * the caller's (and its gids, when the bus told us the caller's), and the task is dumpable — which
 * /proc shows by owning /proc/PID to the task's euid instead of root. */
bool caller_may_see_process(Caller *c, pid_t tgid);

/* Filters reachable from the chains of the threads the caller may see: a hashmap of id -> filter.
 * For a privileged caller every filter. */
int caller_visible_filters(Caller *c, const Forest *f, Hashmap *ret);

#define CALLER_CLEANUP _cleanup_(caller_deinit)
