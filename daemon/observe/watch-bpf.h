/* watch-bpf.h: the bpf backend's event half, an object of its own: the tracepoint unit
 * (bpf/watch.bpf.c) loaded on the scan unit's id maps, and the reader of its ring buffer. The
 * scanner (scan-bpf.c) owns one and hands it its maps; the watch knows nothing of the scanner. */
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
} BpfWatch;

/* Load the watch unit on the scan unit's id maps and attach the seccomp(2)/prctl(2) tracepoints
 * (not yet the fork/exec/exit and close(2) ones: bpf_watch_start() does). The event ring
 * buffer's size comes from $SECTREE_BPF_EVENTS_SIZE when set. */
int bpf_watch_load(BpfWatch *w, const BpfIdMaps *maps);
void bpf_watch_deinit(BpfWatch *w);
/* Runs of the seccomp(2) exit tracepoint the kernel skipped (another BPF program was running on
 * that CPU): a listener made then was not counted. 0 when not loaded. */
uint64_t bpf_watch_install_misses(const BpfWatch *w);

/* What watcher.h's bpf_scanner_watch_*() do, on the scanner's watch: see there. -EOPNOTSUPP from
 * bpf_watch_start() when not loaded. */
int bpf_watch_start(BpfWatch *w, WatchHandler handler, void *userdata);
int bpf_watch_fd(BpfWatch *w);
int bpf_watch_dispatch(BpfWatch *w);
void bpf_watch_set_dispatch_limits(BpfWatch *w, unsigned max_events, unsigned max_usec);
bool bpf_watch_pending(BpfWatch *w);
uint64_t bpf_watch_lost(BpfWatch *w);
void bpf_watch_losses(BpfWatch *w, WatchLosses *ret);
