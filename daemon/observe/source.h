/* source.h: where the daemon's view of the kernel comes from: one object per backend behind one
 * interface — a pass over every task, the events between passes, and what was lost
 *
 * A source observes: it reads the kernel, and turns what it read into full passes (forests with
 * the live forest's ids) and batches of events (lib/core/live.h, with whatever they needed from /proc
 * read already). It hands both to its sink, the manager, which applies, stores and announces them;
 * it never writes the live forest, the database or the bus itself. */
#pragma once

#include <systemd/sd-event.h>

#include "core/forest.h"
#include "core/live.h"
#include "observe/scanner.h"

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
        /* The live forest, to read: what an observer needs to know what to read from /proc. */
        const Live *(*live)(void *userdata);
        void *userdata;
} SourceSink;

typedef struct SourceOptions {
        Backend backend;
        bool oneshot;      /* scans only, never watching: `sectreed scan` (what cannot be read is a warning) */
        uint64_t first_id; /* filter ids handed out start here: above any the state database used */
        bool no_argv;      /* no scan will ask for command lines: what reads them is not loaded */
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

/* NULL for an unknown backend. */
const SourceCapabilities *source_capabilities(Backend b);

/* Load the backend: -errno with a logged message when it cannot run here. */
int source_new(const SourceOptions *o, Source **ret);
Source *source_free(Source *s);
DEFINE_CLEANUP(Source *, source_free);

Backend source_backend(const Source *s);
IdentityKind source_identity(const Source *s);
/* How often a full pass refreshes what no event says (listener holders; the ptrace backend's
 * filters installed without a fork or exec). */
uint64_t source_refresh_usec(const Source *s);
/* Whether the differences a full pass finds are announced with signals (the ptrace backend: its
 * passes are how it sees filters), or only Resynced (bpf: events announced them). */
bool source_announces_passes(const Source *s);

/* One pass as the backend reads it, with ids local to the pass (`sectreed scan`). */
int source_scan(Source *s, const ScanOptions *opts, Forest **ret);
/* The same for a worker thread (snapshots), while the loop goes on with the source: it shares no
 * state with the source's own passes. The bpf backend makes a one-shot scanner of its own for it;
 * the ptrace backend scans under a lock that its own passes and rescans take too (two tracers
 * would each find the other's tasks already traced, and take them for unreadable). */
int source_scan_detached(Source *s, const ScanOptions *opts, Forest **ret);

/* A pass of the whole machine for the programs of its filters (ScanOptions.allow_dropped and
 * .wanted choose which are kept), for a worker thread, as source_scan_detached(): the bpf source
 * lends its detached scanner (kept between calls, one pass at a time); the others, which have no
 * scanner that could, load a one-shot BPF scanner for the call. */
int source_scan_programs(Source *s, const ScanOptions *opts, Forest **ret);

/* Start watching on the loop, before the first full pass (so that nothing during it is missed):
 * events go to sink->apply(), losses to sink->resync(). */
int source_start(Source *s, sd_event *e, const SourceSink *sink);

/* A full pass of the whole machine for the live state: scanned, given the live forest's ids and
 * handed to sink->replace(). With split, the bpf source stores the scan a little later (once
 * the loop has answered what waited), holding its events back meanwhile; the others pass at once.
 * A pass at once while a split one waits replaces it. */
int source_full_pass(Source *s, const char *reason, bool split);

/* For tests: a split pass's scan waits to be stored; events wait in the kernel's buffer; events
 * lost so far; a hook that runs between a full pass's scan and its replace. */
bool source_pass_waiting(const Source *s);
bool source_events_pending(Source *s);
uint64_t source_lost(Source *s);
void source_set_after_scan_hook(Source *s, void (*hook)(void *userdata), void *userdata);
