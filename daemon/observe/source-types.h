/* source-types.h: what a source is handed and hands on (source.h): its sink, its options, what a
 * backend needs of the capabilities; below the sources, the backends and their users */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/forest.h"
#include "core/live.h"

typedef struct Source Source;

/* What a source hands on to. */
typedef struct SourceSink {
        /* Events in the order they happened: to be applied and stored in one transaction. */
        int (*apply)(void *userdata, const LiveBatch *batch);
        /* A full pass (linked, with the live forest's ids): to replace the live state. reason goes
         * into the Resynced signal (NULL: none). The forest is taken. */
        int (*replace)(void *userdata, Forest *pass, const char *reason);
        /* The live state may be wrong (events lost, a rescan failed): a full pass is due, as soon
         * as the rules allow (reason as for replace). */
        void (*resync)(void *userdata, const char *reason);
        /* A pass's scan begins in the background (source_full_pass_background()): the batches
         * applied from now until replace() or scan_dropped() are to be applied again on top of the
         * scan when replace() hands it on: they came during or after it. */
        void (*scan_begins)(void *userdata);
        /* That scan will not be handed on: it failed (error < 0), or a pass at once replaced it (0). */
        void (*scan_dropped)(void *userdata, int error);
        /* The live forest, to read: what an observer needs to know what to read from /proc. */
        const Live *(*live)(void *userdata);
        void *userdata;
} SourceSink;

typedef struct SourceOptions {
        Backend backend;
        bool oneshot;      /* scans only, never watching (what cannot be read is a warning) */
        uint64_t first_id; /* filter ids handed out start here: above any the state database used */
} SourceOptions;

/* What a backend needs of the effective capabilities, known before it loads (privileges.c says
 * what is missing). Sets of capabilities: bit n is capability n. */
typedef struct SourceCapabilities {
        uint64_t needed;        /* it cannot run without each of these... */
        uint64_t enough;        /* ...unless it has one of these (0: none), as CAP_SYS_ADMIN still covers
                                 * CAP_BPF and CAP_PERFMON, which split off from it */
        const char *needed_for; /* what it needs them for: "to load its BPF programs" */
        const char *remedy;     /* what to do without them: "run sectreed as root" */
        uint64_t wanted;        /* it runs without these, but sees less... */
        const char *without;    /* ...and what it sees then: "only this user's own processes can be read" */
} SourceCapabilities;
