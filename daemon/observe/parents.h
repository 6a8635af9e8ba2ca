/* parents.h: the parents of the live forest's processes, watched with pidfds: when one exits, its
 * children have a new parent, and the live state says so at once */
#pragma once

#include <systemd/sd-event.h>

#include "core/live.h"
#include "observe/source-types.h"

typedef struct Parents Parents;

/* Events go to sink->apply() (LIVE_EVENT_PARENT, with the new parent read from /proc); which
 * processes have which parent, from sink->live(). */
/* Open files kept for everything but the parents' pidfds. */
#define PARENTS_FD_RESERVE 1024U
/* How many parents may be watched under an open file limit (RLIM_INFINITY: no bound). */
size_t parents_max_watched(uint64_t nofile);

int parents_new(sd_event *e, const SourceSink *sink, Parents **ret);
Parents *parents_free(Parents *p);
DEFINE_CLEANUP(Parents *, parents_free);

/* Follow what was committed: watch the parents that processes gained, let go of those that have
 * no child left. After a full pass (c->replaced), every parent of the live forest is looked at. */
void parents_follow(Parents *p, const LiveChanges *c);
