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
#include "observe/backends.h"
#include "observe/scanner.h"
#include "observe/source-types.h"

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

/* A full pass of the whole machine for the live state, at once: scanned, given the live forest's
 * ids and handed to sink->replace(). It replaces a background pass under way. */
int source_full_pass(Source *s, const char *reason);
/* The same with the scan in a thread (bpf; the others pass at once): the loop goes on with events
 * meanwhile. The source calls sink->scan_begins() when the scan begins, then hands the pass to
 * sink->replace() on the loop, or says sink->scan_dropped() (the scan failed, or a pass at once
 * replaced it). Asking while a pass is under way changes nothing. */
int source_full_pass_background(Source *s, const char *reason);

/* For tests: a background pass is under way (or a ptrace pass is queued); events wait in the kernel's buffer; events
 * lost so far; a hook that runs between a full pass's scan and its replace. */
bool source_pass_waiting(const Source *s);
bool source_events_pending(Source *s);
uint64_t source_lost(Source *s);

/* Whether what the live view has of thread tid is its last known state, not read at the last
 * pass: the ptrace backend could not read it (another tracer holds it, or it did not stop in
 * time). Such a thread keeps its place and its filter ids until a pass reads it again. */
bool source_task_stale(const Source *s, pid_t tid);
void source_set_after_scan_hook(Source *s, void (*hook)(void *userdata), void *userdata);
/* For tests: a hook that runs in the thread of a background pass's scan, after the scan and before
 * the loop hears of it (it may wait: the loop goes on meanwhile). */
void source_set_scan_thread_hook(Source *s, void (*hook)(void *userdata), void *userdata);
