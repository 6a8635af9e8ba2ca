/* manager.h: the service: its state (the live forest, the database, the source, the bus) and its
 * life: start-up, the one path every change takes (apply, store, commit, announce), full passes
 * and their pacing, shutdown */
#pragma once

#include <systemd/sd-event.h>

#include "core/live.h"
#include "core/warn-limit.h"
#include "observe/parents.h"
#include "observe/source.h"
#include "service/pacing.h"
#include "store/store-checkpoint.h"
#include "store/store.h"

#define MANAGER_DEFAULT_STATE_DIR "/var/lib/sectree"

/* What happened so far (tests, logs). */
typedef struct ManagerStats {
        unsigned full_passes;     /* stored */
        unsigned failed_passes;   /* scanned but not stored */
        unsigned failed_batches;  /* applied but not stored: rolled back */
        unsigned filters_stored;  /* new filters that events attached, stored */
        unsigned resyncs;         /* full passes asked for (lost events, inconsistencies, failures) */
        unsigned inconsistent;    /* of which because events did not fit the live forest */
        uint64_t events_skipped;  /* events left out of their batch: they did not fit the live forest */
} ManagerStats;

/* Who hears of what the service stored, once it is committed: the bus layer (manager-dbus.c). */
typedef struct ManagerListener {
        /* What a batch or a full pass changed (reason: the full pass's, NULL for none). */
        void (*changes)(void *userdata, const LiveChanges *c, const char *reason);
        void (*snapshot_created)(void *userdata, uint64_t id, const char *name, uid_t owner);
        void (*snapshot_deleted)(void *userdata, uint64_t id);
        void *userdata;
} ManagerListener;

typedef struct ManagerOptions {
        Backend backend;       /* of the source to load */
        const char *state_dir; /* NULL: MANAGER_DEFAULT_STATE_DIR */
        uint64_t refresh_usec; /* 0: the backend's default, or $SECTREE_REFRESH_USEC */
        uint64_t budget_insns; /* instructions of filters kept per uid (lib/core/budget.h); 0: none */
} ManagerOptions;

/* Warnings of the event path, each logged at most once per WARN_LIMIT_INTERVAL_USEC. */
typedef struct ManagerWarnings {
        WarnLimit skipped, apply, store;
} ManagerWarnings;

/* The batches applied while a pass scans in the background, to apply again on top of its scan. */
typedef struct ManagerReplay {
        bool recording;   /* a scan runs in the background */
        uint64_t begun_nsec; /* CLOCK_MONOTONIC when it began */
        bool incomplete;  /* a batch could not be kept (no memory): the pass cannot be exact */
        LiveBatch events; /* in the order they were applied */
} ManagerReplay;

/* The event path and its state; written by manager.c alone (the layers above read it). */
typedef struct Manager {
        sd_event *event;
        ManagerOptions opts; /* as given; opts.state_dir is the manager's own copy */
        Store *store;
        StoreCheckpointer *checkpointer; /* the store's checkpoints, off the event loop */
        Live *live;
        Source *source;
        Parents *parents;    /* the parents of live processes, watched for their exits */
        LiveChanges changes; /* of the batch being stored (kept for its memory) */
        Pacing *pacing;      /* when full passes run (pacing.c); once opened */
        uint64_t last_scan_usec; /* CLOCK_REALTIME of the last stored full pass */
        /* A write of the state database failed with this (a negative errno; 0 once a full pass
         * is stored after it): what it held was undone in the live view, which misses it until a
         * full pass, and is not answered from meanwhile (live_or_fail()), however many smaller
         * writes succeed in between (a nearly full file system takes a batch, not the pass). */
        int store_error;
        uint64_t started_mono;
        ManagerStats stats;
        ManagerListener listener;
        ManagerWarnings warn;
        ManagerReplay replay;
} Manager;

int manager_new(const ManagerOptions *opts, Manager **ret);

/* Give back what the daemon holds and no longer uses, once the loop is done with what it is doing:
 * a full pass frees the forest it replaced (and the source what it no longer keeps), a snapshot
 * transfer its forest, in many small blocks that malloc keeps in the heap unless asked, and the
 * database's page cache keeps the pages they touched. Else one pass over a big forest (one user's
 * flood of filters, long gone) or one large snapshot leaves the resident set at its peak. */
void manager_trim_soon(Manager *m);
Manager *manager_free(Manager *m);
DEFINE_CLEANUP(Manager *, manager_free);

/* Open the database (the live forest starts as what it stored), load the backend, start watching
 * and make the first full pass: manager_startup() without the bus, signals and timers (tests drive
 * the loop themselves). */
int manager_open(Manager *m);
/* manager_open(), then signals, the refresh timer and the watchdog. */
int manager_startup(Manager *m);
/* Block SIGTERM and SIGINT, which manager_startup() hands to the event loop: a service calls it
 * before it makes any thread (a thread with them unblocked would take one and die of it), so that
 * one sent while it starts waits for the loop. -errno. */
int manager_block_signals(void);
/* Tell systemd READY=1 (the bus is connected), and log how long it took. */
void manager_ready(Manager *m);
/* Run the event loop until SIGTERM/SIGINT; returns 0 on a clean exit. */
int manager_run(Manager *m);

/* A full pass now: scan, replace the live forest and the stored state. reason goes into the
 * Resynced signal ("lost-events", "rescan", "refresh", "inconsistent", "burst"); NULL sends none. */
int manager_full_pass(Manager *m, const char *reason);
/* The same with the scan off the loop where the backend can (bpf; the others pass at once): events go on
 * being applied, stored and announced meanwhile, and are applied again on top of the scan when it
 * replaces the live state (source_full_pass_background()). The refresh and resyncs pass so. */
int manager_full_pass_background(Manager *m, const char *reason);

/* Hear of what is stored from now on (one listener: it replaces the previous one). */
void manager_set_listener(Manager *m, const ManagerListener *l);
/* snapshots.c: a snapshot was stored, or deleted: tell the listener. */
void manager_send_snapshot_created(Manager *m, uint64_t id, const char *name, uid_t owner);
void manager_send_snapshot_deleted(Manager *m, uint64_t id);

/* The live forest, linked, for bus readers: a forest that cannot be linked (events left it
 * inconsistent) is replaced by a full pass first. */
int manager_live(Manager *m, const Forest **ret);
/* Whether the live view has thread tid at its last known state, not read at the last pass
 * (source_task_stale()). */
bool manager_task_stale(const Manager *m, pid_t tid);
