/* watch-bpf.h: the bpf backend's event half, an object of its own: the tracepoint unit
 * (bpf/watch.bpf.c) loaded on the scan unit's id maps, and the reader of its ring buffer. The
 * scanner loads one on its maps (scan-bpf-load.c) and lends it (bpf_scanner_watch()); the source
 * starts it and reads its events. The watch knows nothing of the scanner. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "observe/watcher.h"

struct watch_bpf;
struct ring_buffer;

/* The maps of the scan unit that the watch unit shares (ids.bpf.h), by fd. */
typedef struct BpfIdMaps {
        int filter_ids, seccomp_procs, data_ids;
} BpfIdMaps;

typedef struct BpfWatch {
        struct watch_bpf *skel; /* NULL until loaded */
        struct ring_buffer *rb; /* NULL until started */
        WatchHandler handler;
        void *userdata;
        long ticks_per_sec;
        /* The ring's positions, mapped read-only: events are pending while they differ. */
        const unsigned long *consumer_pos, *producer_pos;
        size_t page_size;
        unsigned max_events, max_usec; /* bounds of one dispatch */
        /* The current dispatch: */
        uint64_t deadline_usec;
        int n_handled;
        int error;    /* the handler's, or a malformed record */
        bool stopped; /* at its bounds */
        uint64_t skipped_runs; /* the programs' recursion_misses summed, as last counted */
} BpfWatch;

/* Load the watch unit on the scan unit's id maps and attach the seccomp(2)/prctl(2) tracepoints
 * (not yet the fork/exec/exit and close(2) ones: bpf_watch_start() does). The event ring
 * buffer's size comes from $SECTREE_BPF_EVENTS_SIZE when set. */
int bpf_watch_load(BpfWatch *w, const BpfIdMaps *maps);
void bpf_watch_deinit(BpfWatch *w);
/* Runs of the seccomp(2) exit tracepoint the kernel skipped (another BPF program was running on
 * that CPU): a listener made then was not counted. 0 when not loaded. */
uint64_t bpf_watch_install_misses(const BpfWatch *w);

/* The watch of a live scanner (bpf_scanner_watch()) is its user's: the source starts it and reads
 * its events (a one-shot scanner's is not loaded). */

/* Attach the fork/exec/exit and close(2) tracepoints (the seccomp/prctl ones are attached by
 * bpf_watch_load() already) and start sending events to an event ring buffer of its own
 * (separate from the scan's). Call once: -EALREADY after. -EOPNOTSUPP when not loaded (a one-shot
 * scanner's). */
int bpf_watch_start(BpfWatch *w, WatchHandler handler, void *userdata);
/* An fd that becomes readable when events are waiting (for sd_event_add_io, EPOLLIN); -ENOTCONN
 * until started. */
int bpf_watch_fd(BpfWatch *w);
/* Consume waiting events, calling the handler for each, in the order they were sent — at most
 * WATCH_DISPATCH_MAX_EVENTS of them and for about WATCH_DISPATCH_MAX_USEC (the handler's time
 * included: the budget is checked after each event), so that a flood cannot hold the caller's
 * event loop. Returns the number handled, or the handler's negative return (which stops
 * consuming; that event counts as consumed), -EBADMSG for a malformed record, or another negative
 * errno; nothing is logged here. Events left over stay in the ring: the fd keeps being readable
 * (it is level-triggered), so an sd-event io source is called again on its next iteration, after
 * the other sources had their turn; a caller that loops itself asks bpf_watch_pending(). */
int bpf_watch_dispatch(BpfWatch *w);
/* Change the bounds of one dispatch (0 keeps the default); tests make them small. */
void bpf_watch_set_dispatch_limits(BpfWatch *w, unsigned max_events, unsigned max_usec);
/* Whether events are waiting in the ring buffer (sent, or being sent, and not consumed yet). */
bool bpf_watch_pending(BpfWatch *w);
/* Events the kernel side could not send since the watch was loaded (all causes of WatchLosses
 * summed). When this grows, the stored state may be wrong: resynchronise with a full pass. The
 * skipped runs are counted anew (a system call for each program). */
uint64_t bpf_watch_lost(BpfWatch *w);
/* The same with the skipped runs as last counted: no system call, for after every batch (the
 * runs the kernel skipped are counted by bpf_watch_lost(), on a timer). */
uint64_t bpf_watch_lost_cached(BpfWatch *w);
/* The losses by cause, the skipped runs as last counted. */
void bpf_watch_losses(BpfWatch *w, WatchLosses *ret);
