/* scan-bpf-internal.h: the bpf backend's scanner object, shared by its pass half (scan-bpf.c) and
 * its event half (watch-bpf.c) */
#pragma once

#include <linux/seccomp.h>
#include <stdint.h>

#include "bpf/scan.h"
#include "hashmap.h"
#include "scan.h"
#include "watch.h"

struct scan_bpf;
struct ring_buffer;

/* A filter record of the current pass. */
typedef struct PassFilter {
        struct scan_rec_filter *rec; /* followed by rec->len instructions */
        bool keep;                   /* reported */
} PassFilter;

/* The records of one pass. Filters are deduplicated by id. */
typedef struct PassRecords {
        struct scan_rec_task *tasks;
        size_t n_tasks, n_tasks_allocated;
        struct scan_rec_listener *listeners;
        size_t n_listeners, n_listeners_allocated;
        Hashmap filters; /* id -> PassFilter* */
        bool end_seen;
        uint64_t end_pass;
        int error;
} PassRecords;

/* The event half: started by bpf_scanner_watch_start(). */
typedef struct BpfWatch {
        struct ring_buffer *rb; /* NULL until started */
        WatchHandler handler;
        void *userdata;
        int n_handled; /* by the current dispatch */
        int error;     /* of the current dispatch: the handler's, or a malformed record */
} BpfWatch;

struct BpfScanner {
        struct scan_bpf *skel;
        struct ring_buffer *rb; /* the scan's records */
        uint64_t pass;
        PassRecords records;
        long ticks_per_sec;
        BpfWatch watch;
};

/* Before the object is loaded: size the event ring buffer ($SECTREE_BPF_EVENTS_SIZE) and the
 * scratch space, and keep the fork/exec/exit tracepoints from being attached with the rest. */
int bpf_watch_configure(struct scan_bpf *skel);
void bpf_watch_deinit(BpfWatch *w);

/* start_boottime (ns) -> clock ticks, as /proc/TID/stat field 22 */
static inline uint64_t bpf_scanner_ticks(const BpfScanner *s, uint64_t ns) {
        return ns / (UINT64_C(1000000000) / (uint64_t) s->ticks_per_sec);
}

static inline TaskMode task_mode_from_kernel(uint32_t mode) {
        switch (mode) {
        case SECCOMP_MODE_STRICT:
                return TASK_MODE_STRICT;
        case SECCOMP_MODE_FILTER:
                return TASK_MODE_FILTER;
        default:
                return TASK_MODE_DISABLED;
        }
}
