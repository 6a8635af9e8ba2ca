/* manager.h: the daemon's state: event loop, bus, kernel reader, live forest and state database */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "forest.h"
#include "scan.h"
#include "store.h"
#include "watch-proc.h"
#include "watch.h"

#define MANAGER_DEFAULT_STATE_DIR "/var/lib/sectree"
#define MANAGER_BUS_NAME "org.sectree1"
#define MANAGER_OBJECT_PATH "/org/sectree1"
#define MANAGER_INTERFACE "org.sectree1.Manager"

/* Counts of the live forest that PropertiesChanged reports when they change. */
typedef struct ManagerCounts {
        uint32_t tasks, filters, listeners;
        uint64_t last_scan_usec;
} ManagerCounts;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        Backend backend;
        char *state_dir;
        BpfScanner *scanner;
        Store *store;
        Forest *live;         /* threads in strict or filter mode, their processes, filters, listeners */
        uint64_t last_scan_usec; /* CLOCK_REALTIME of the last full pass */
        uint64_t lost_seen;   /* bpf_scanner_watch_lost() when the last resync started */
        ManagerCounts announced;
        sd_event_source *watch_source;
        sd_event_source *resync_source; /* deferred full pass after lost events */
        sd_event_source *refresh_timer; /* periodic full pass (listeners, ptrace backend) */
        sd_event_source *lost_timer;    /* events that could not even be queued wake nobody: poll the count */
        uint64_t refresh_usec;
        bool batch_exits;     /* a thread exited in the current batch: filters may have died */
        /* ptrace backend: proc connector events, and the subtree rescans they ask for */
        ProcWatch *proc_watch;
        sd_event_source *proc_source;
        sd_event_source *rescan_timer;  /* debounce: collects events, then rescans in one go */
        uint64_t proc_lost_seen;        /* proc_watch_lost() as of the last full pass */
        struct PendingRescan *pending;  /* fork and exec events since the last rescan */
        size_t n_pending, n_pending_allocated;
        const char *pending_full;       /* not NULL: the next rescan is a full pass, for this reason */
        uint64_t last_full_pass_mono;   /* CLOCK_MONOTONIC at the end of the last full pass */
        uint64_t rescan_cost_usec;      /* how long the last rescan took: the next waits as long */
        uint64_t rescan_end_mono;
        /* full passes (both backends) */
        unsigned n_full_passes;         /* done so far */
        void (*after_scan_hook)(struct Manager *m); /* tests: runs between a full pass's scan and its store */
        /* live.c: what keeps each live filter alive, so that retiring looks only at what changed */
        Hashmap filter_uses;            /* filter id -> (void *) n: threads heading it, children, listeners */
        bool uses_valid;                /* filter_uses describes the live forest (else rebuilt when needed) */
        bool uses_broken;               /* a thread or filter names a filter the live forest lacks */
        uint64_t *retire_candidates;    /* filters whose uses dropped to 0 (or started there) */
        size_t n_retire_candidates, n_retire_candidates_allocated;
        struct SnapshotTransfer *snapshot_transfers; /* snapshots.c: exports and imports in progress */
        unsigned n_uses_rebuilds;       /* live.c: times filter_uses was counted from scratch (tests) */
        /* manager_full_pass_split(): a scan waiting for a later loop iteration to be stored */
        Forest *pass_forest;
        const char *pass_reason;
        uint64_t pass_lost_bpf, pass_lost_proc, pass_scan_usec;
        sd_event_source *pass_store_source;
} Manager;

typedef struct ManagerOptions {
        Backend backend;
        const char *state_dir;
        uint64_t refresh_usec; /* 0: the default */
} ManagerOptions;

int manager_new(const ManagerOptions *opts, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_CLEANUP(Manager *, manager_free);

/* Open the database, scan, store, start watching, take the bus name, tell systemd READY=1. */
int manager_startup(Manager *m);
/* Run the event loop until SIGTERM/SIGINT; returns 0 on a clean exit. */
int manager_run(Manager *m);

/* A full pass: scan, replace the live forest and the stored state. reason goes into the
 * Resynced signal ("start", "lost-events", "rescan", "refresh"; the ptrace backend adds "burst":
 * too many changes at once for subtree rescans); NULL sends none. */
int manager_full_pass(Manager *m, const char *reason);

/* Apply one watch event to the live forest and the store, and send its signal. */
int manager_apply_event(Manager *m, const WatchEvent *e);

/* Retire the filters that no live thread or listener reaches any more (in the store too). */
int manager_retire_unreachable(Manager *m);

/* The ptrace backend numbers filters 1..n on every pass: keep the ids of the filters that match the
 * live ones (same parent, bytes and flags) and give new ones ids above any the store has used. */
int manager_adopt_inferred_ids(Manager *m, Forest *f);

/* live-ptrace.c: the ptrace backend's live updates. Exits and comm changes apply at once (inside
 * the caller's transaction); forks and execs are queued for manager_flush_rescans(). */
int manager_apply_proc_event(Manager *m, const ProcEvent *e);
/* Rescan the subtrees the queued events touched and merge them into the live forest, or do a full
 * pass when there are too many or events were lost. */
int manager_flush_rescans(Manager *m);
/* After a full pass of the ptrace backend: the signals for what changed from old to new (new
 * tasks, exited tasks, filters new to the live forest). */
void manager_announce_pass(Manager *m, const Forest *old, const Forest *new);

/* The live forest, linked (linking it if events changed it). */
int manager_live(Manager *m, Forest **ret);

/* manager-dbus.c */
int manager_bus_connect(Manager *m);
int manager_send_filter_attached(Manager *m, uint64_t id, uint64_t parent, pid_t tid);
int manager_send_task_added(Manager *m, pid_t tid, pid_t tgid, const char *comm);
int manager_send_task_exited(Manager *m, pid_t tid);
int manager_send_resynced(Manager *m, const char *reason);
/* PropertiesChanged for the counts that changed since the last call. */
int manager_announce_counts(Manager *m);

/* Open the database and the kernel side, and do the first full pass: manager_startup() without
 * the bus, signals and timers (tests drive the loop themselves). */
int manager_open(Manager *m);
/* live.c: m->live was replaced (a full pass) or changed wholesale (the ptrace backend's merges):
 * what keeps its filters alive is counted again at the next manager_retire_unreachable(). */
void manager_live_uses_invalidate(Manager *m);
/* live.c: a tracked thread with this head left the live forest (0: it had none). */
void manager_live_thread_gone(Manager *m, uint64_t head);
/* A full pass after lost events starts no sooner than this after the previous full pass ended. */
#define MANAGER_RESYNC_MIN_INTERVAL_USEC (1000 * 1000ULL)
/* The same as manager_full_pass() in two loop iterations (bpf backend): the scan now, storing it
 * as the live state a little later (once what the bus asked meanwhile is answered), so that the
 * loop is held by the longer half only.
 * Until then events wait in the ring buffer and the bus sees the previous state; a
 * manager_full_pass() meanwhile replaces the waiting scan. The other backends pass at once. */
int manager_full_pass_split(Manager *m, const char *reason);
