/* manager.c: the service's life: start-up, the one path every change takes, full passes and their
 * pacing, shutdown
 *
 * The data path runs one way: the source (source-bpf.c, source-ptrace.c) observes the kernel and
 * hands on batches of events or full passes; the live forest (lib/core/live.c) applies them and says
 * what changed; the store writes that in one transaction and commits; only then does the bus
 * (manager-dbus.c, the listener) announce it. When the store fails, the live forest is rolled back, nothing is
 * announced, and a full pass is asked for: bus, database and live forest always agree. */
#include "service/manager.h"

#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "store/store-snapshot.h"

/* $SECTREE_REFRESH_USEC replaces the default interval of the periodic full pass: tests make it
 * long, so that only events can explain what the daemon sees. */
static uint64_t refresh_usec_from_env(uint64_t fallback) {
        const char *e = secure_getenv("SECTREE_REFRESH_USEC");
        uint64_t v;
        if (e && safe_atou64(e, &v) >= 0 && v > 0)
                return v;
        if (e)
                log_warning("Ignoring invalid $SECTREE_REFRESH_USEC: %s", e);
        return fallback;
}

int manager_new(const ManagerOptions *opts, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        if (!m)
                return log_oom();
        m->started_mono = now_usec(CLOCK_MONOTONIC);
        m->opts = *opts;
        m->opts.state_dir = strdup(opts->state_dir ? opts->state_dir : MANAGER_DEFAULT_STATE_DIR);
        if (!m->opts.state_dir)
                return log_oom();
        int r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the event loop: %m");
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        pacing_free(m->pacing);
        parents_free(m->parents);
        source_free(m->source);
        live_changes_done(&m->changes);
        live_batch_done(&m->replay.events);
        live_free(m->live);
        store_checkpointer_free(m->checkpointer);
        store_free(m->store);
        sd_event_unref(m->event);
        free((char *) m->opts.state_dir);
        free(m);
        return NULL;
}

/* ---- pacing full passes (pacing.c decides when) ---- */

static void manager_resync(Manager *m, const char *reason) {
        m->stats.resyncs++;
        if (streq_ptr(reason, "inconsistent"))
                m->stats.inconsistent++;
        pacing_request(m->pacing, reason);
}

static int on_trim(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        if (m->store)
                store_release_memory(m->store);
        (void) malloc_trim(0);
        return 0;
}

void manager_trim_soon(Manager *m) {
        int r = sd_event_add_defer(m->event, NULL, on_trim, m);
        if (r < 0)
                log_debug_errno(r, "Could not schedule giving memory back: %m");
}

/* The end of a full pass, stored or not. */
static void pass_ended(Manager *m, bool stored) {
        pacing_pass_ended(m->pacing, stored);
        if (stored) {
                m->stats.full_passes++;
                manager_trim_soon(m);
        } else
                m->stats.failed_passes++;
}

/* ---- the path of every change ---- */

/* The live forest could not be put back as it was: make it what the database holds. */
static void live_reload(Manager *m) {
        _cleanup_(forest_freep) Forest *stored = NULL;
        int r = store_load_live(m->store, &stored);
        if (r >= 0)
                r = forest_link(stored, NULL);
        if (r >= 0)
                r = live_replace(m->live, TAKE_PTR(stored), false, &m->changes);
        live_changes_clear(&m->changes);
        if (r < 0)
                log_error_errno(r, "Failed to reload the live state from the database: %m");
        manager_resync(m, "inconsistent");
}

/* Store what changed and commit; only then announce it, its first n_announced changes (the others
 * were announced when they first applied: a replay). When storing fails, undo it. */
static int manager_commit(Manager *m, const char *reason, size_t n_announced) {
        int r = store_write_changes(m->store, live_forest(m->live), &m->changes, now_usec(CLOCK_REALTIME));
        if (r < 0) {
                if (live_rollback(m->live, &m->changes) < 0)
                        live_reload(m);
                m->store_error = r;
                return r;
        }
        if (m->changes.replaced && m->store_error < 0) { /* a batch on top of an undone one leaves it stale */
                log_notice("The state database can be written again: a full pass is stored, and the live view "
                           "answers again.");
                m->store_error = 0;
        }
        for (size_t i = 0; !m->changes.replaced && i < m->changes.n; i++)
                m->stats.filters_stored += m->changes.changes[i].type == LIVE_FILTER_ATTACHED &&
                                           m->changes.changes[i].new_filter;
        if (m->listener.changes) {
                LiveChanges told = m->changes;
                told.n = n_announced < told.n ? n_announced : told.n;
                m->listener.changes(m->listener.userdata, &told, reason);
        }
        if (m->parents)
                parents_follow(m->parents, &m->changes);
        live_changes_clear(&m->changes);
        return 0;
}

/* Whether to log a warning of this kind now; then *more says how many were not logged before it
 * (" (12 more like it were not logged.)", or "" for none). */
typedef char WarnMore[64];
static bool warn_now(WarnLimit *w, WarnMore more) {
        unsigned n;
        if (!warn_limit_pass(w, now_usec(CLOCK_MONOTONIC), &n))
                return false;
        if (n > 0)
                (void) snprintf(more, sizeof(WarnMore), " (%u more like it were not logged.)", n);
        else
                more[0] = 0;
        return true;
}

/* Events that did not fit the live forest were left out of their batch: say which, and why. */
static void warn_skipped(Manager *m, const LiveSkipped *k) {
        WarnMore more;
        if (!warn_now(&m->warn.skipped, more))
                return;
        if (k->filter_id)
                log_warning("Left out %zu events that do not fit the live state (the first: thread %d names filter %" PRIu64
                            ", which the live state does not have: an event about it was lost, or it was retired "
                            "too early), repairing with a full pass.%s", k->n, k->tid, k->filter_id, more);
        else
                log_warning_errno(k->error, "Left out %zu events that do not fit the live state (the first: thread %d, "
                                  "%m), repairing with a full pass.%s", k->n, k->tid, more);
}

/* ---- replays: the batches applied while a pass scans in the background ---- */

#define REPLAY_MAX_EVENTS 65536

static void replay_reset(Manager *m) {
        m->replay.recording = false;
        m->replay.incomplete = false;
        live_batch_clear(&m->replay.events);
}

/* Kept whatever became of it (applied, left out, rolled back), unless the kernel stamped it before
 * the scan began: the scan has what it did (an event that waited in the ring buffer meanwhile
 * may name what was gone by then, such as the parent of a filter whose holders all exited). Past
 * REPLAY_MAX_EVENTS (a scan held up for long on a busy machine) nothing more is kept, and
 * a pass after this one repairs what was not. */
static void replay_keep(Manager *m, const LiveBatch *batch) {
        if (!m->replay.recording || m->replay.incomplete)
                return;
        if (m->replay.events.n + batch->n > REPLAY_MAX_EVENTS) {
                m->replay.incomplete = true;
                live_batch_clear(&m->replay.events);
                return;
        }
        for (size_t i = 0; i < batch->n; i++)
                if (batch->events[i].mono_nsec < m->replay.begun_nsec && batch->events[i].mono_nsec > 0)
                        continue;
                else if (live_batch_add(&m->replay.events, &batch->events[i]) < 0) {
                        m->replay.incomplete = true;
                        live_batch_clear(&m->replay.events);
                        return;
                }
}

/* The store's page cache is let go first: what the pass allocates takes its place in the heap,
 * instead of adding to it (a full cache and a pass at once were the daemon's peak). */
static void sink_scan_begins(void *userdata) {
        Manager *m = userdata;
        replay_reset(m);
        m->replay.recording = true;
        m->replay.begun_nsec = now_usec(CLOCK_MONOTONIC) * 1000;
        if (m->store)
                store_release_memory(m->store);
}

static void sink_scan_dropped(void *userdata, int error) {
        Manager *m = userdata;
        replay_reset(m);
        if (error < 0)
                pass_ended(m, false); /* the scan failed: it never got to be stored */
}

/* A filter a kept event names that the scan lacks while the state it replaces has it: the scan
 * missed every holder (they exited before the iterator came to them, or were made behind it), but
 * the event says the filter lived after the scan began, and its id names that one kernel object.
 * It is taken over from the old state with its parents, for the replay to apply to (and retire,
 * when the events leave nothing holding it). */
static int replay_import_filter(Forest *pass, const Forest *old, uint64_t id) {
        while (id && !forest_find_filter(pass, id)) {
                const Filter *x = forest_find_filter(old, id);
                if (!x)
                        return 0;
                int r = forest_add_filter_copy(pass, x, NULL);
                if (r < 0)
                        return r;
                id = x->parent_id;
        }
        return 0;
}

static int replay_import_filters(Manager *m, Forest *pass) {
        const Forest *old = live_forest(m->live);
        size_t before = pass->n_filters;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < m->replay.events.n; i++) {
                const LiveEvent *e = &m->replay.events.events[i];
                r = replay_import_filter(pass, old, e->task.filter_id);
                if (r >= 0 && e->type == LIVE_EVENT_FILTER)
                        r = replay_import_filter(pass, old, e->filter.parent_id);
                if (r >= 0 && e->type == LIVE_EVENT_LISTENER_CLOSED)
                        r = replay_import_filter(pass, old, e->filter.id);
        }
        if (r < 0 || pass->n_filters == before)
                return r;
        pass->linked = false;
        return forest_link(pass, NULL);
}

/* The batches kept since the scan began, on top of it (just replaced): what does not fit is left
 * out, and *ret_repair says that a pass must repair it (after this one ends, which would cover a
 * resync asked for before). */
static int replay_apply(Manager *m, bool *ret_repair) {
        LiveSkipped skipped;
        *ret_repair = m->replay.incomplete;
        if (m->replay.events.n == 0)
                return 0;
        const Forest *linked;
        int r = live_apply_fitting(m->live, m->replay.events.events, m->replay.events.n, &m->changes, &skipped);
        if (r < 0)
                return r;
        if (skipped.n > 0) {
                m->stats.events_skipped += skipped.n;
                warn_skipped(m, &skipped);
                *ret_repair = true;
        }
        return live_linked(m->live, &linked, NULL); /* a pass is stored linked */
}

/* A batch of events from the source: one transaction. Events that do not fit are left out (and a
 * full pass repairs what they would have said): the others are applied, stored and announced, so
 * that one missed event does not fail every batch until the repair. */
static int apply_batch(Manager *m, const LiveBatch *batch) {
        LiveSkipped skipped;
        WarnMore more;
        int r = live_apply_fitting(m->live, batch->events, batch->n, &m->changes, &skipped);
        if (r < 0) {
                if (warn_now(&m->warn.apply, more))
                        log_warning_errno(r, "Applying events failed (%m), resynchronising.%s", more);
                if (live_rollback(m->live, &m->changes) < 0)
                        live_reload(m);
                manager_resync(m, "inconsistent");
                return r;
        }
        if (skipped.n > 0) {
                m->stats.events_skipped += skipped.n;
                warn_skipped(m, &skipped);
                manager_resync(m, "inconsistent");
        }
        r = manager_commit(m, NULL, SIZE_MAX);
        if (r < 0) {
                if (warn_now(&m->warn.store, more))
                        log_warning_errno(r, "Storing events failed (%m): nothing of them is announced, "
                                          "resynchronising.%s", more);
                m->stats.failed_batches++;
                manager_resync(m, "lost-events");
        }
        return r;
}

static int sink_apply(void *userdata, const LiveBatch *batch) {
        Manager *m = userdata;
        int r = apply_batch(m, batch);
        replay_keep(m, batch);
        return r;
}

/* A full pass that could not be stored, said with what the error means for the state database. */
static int log_pass_not_stored(Manager *m, int r) {
        if (r == -EBADMSG)
                return log_error_errno(r, "Failed to store the full pass: the state database %s is damaged, and "
                                          "sectreed leaves it as it is: to start afresh, stop sectreed and move the "
                                          "file aside (the snapshots stored in it go with it).",
                                       store_path(m->store));
        return log_error_errno(r, "Failed to store the full pass: %m");
}

/* A full pass from the source: the whole live state replaced, what came since its scan began
 * applied on top of it (announced already), and stored. */
static int sink_replace(void *userdata, Forest *pass, const char *reason) {
        Manager *m = userdata;
        uint64_t now = now_usec(CLOCK_REALTIME), start = now_usec(CLOCK_MONOTONIC), replaced = 0;
        bool repair = false;
        int r = m->replay.recording ? replay_import_filters(m, pass) : 0;
        if (r < 0) {
                forest_free(pass);
                pass_ended(m, false);
                replay_reset(m);
                return log_pass_not_stored(m, r);
        }
        r = live_replace(m->live, pass, reason && source_announces_passes(m->source), &m->changes);
        size_t announced = m->changes.n;
        if (r >= 0 && m->replay.recording)
                r = replay_apply(m, &repair);
        replay_reset(m);
        if (r >= 0) {
                uint64_t previous = m->last_scan_usec;
                m->last_scan_usec = now; /* announced with the pass */
                replaced = now_usec(CLOCK_MONOTONIC);
                r = manager_commit(m, reason, announced);
                if (r < 0)
                        m->last_scan_usec = previous;
        } else if (live_rollback(m->live, &m->changes) < 0)
                live_reload(m);
        pass_ended(m, r >= 0);
        if (repair)
                manager_resync(m, "inconsistent");
        if (r < 0)
                return log_pass_not_stored(m, r);
        LiveCounts n = live_counts(m->live);
        (void) sd_notifyf(false, "STATUS=Watching %zu filters, %zu tasks (%s backend)", n.filters, n.tasks,
                          backend_to_string(source_backend(m->source)));
        /* the refresh's, every minute, is routine: not a line of the journal at the default level */
        (void) log_internal(streq_ptr(reason, "refresh") ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, 0,
                            "Full pass (%s): %zu tasks, %zu filters; replaced in %" PRIu64 " us, stored and announced "
                            "in %" PRIu64 " us.", reason ?: "start", n.tasks, n.filters, replaced - start,
                            now_usec(CLOCK_MONOTONIC) - replaced);
        return 0;
}

static void sink_resync(void *userdata, const char *reason) {
        manager_resync(userdata, reason);
}

static const Live *sink_live(void *userdata) {
        Manager *m = userdata;
        return m->live;
}

/* ---- full passes ---- */

static int full_pass(Manager *m, const char *reason, bool background) {
        unsigned before = m->stats.full_passes + m->stats.failed_passes;
        (void) sd_notifyf(false, "STATUS=Scanning (%s)...", reason ?: "start");
        int r = background ? source_full_pass_background(m->source, reason) : source_full_pass(m->source, reason);
        if (r < 0 && m->stats.full_passes + m->stats.failed_passes == before)
                pass_ended(m, false); /* the scan failed: it never got to be stored */
        return r;
}

int manager_full_pass(Manager *m, const char *reason) {
        return full_pass(m, reason, false);
}

int manager_full_pass_background(Manager *m, const char *reason) {
        return full_pass(m, reason, true);
}

void manager_set_listener(Manager *m, const ManagerListener *l) {
        m->listener = *l;
}

void manager_send_snapshot_created(Manager *m, uint64_t id, const char *name, uid_t owner) {
        if (m->listener.snapshot_created)
                m->listener.snapshot_created(m->listener.userdata, id, name, owner);
}

void manager_send_snapshot_deleted(Manager *m, uint64_t id) {
        if (m->listener.snapshot_deleted)
                m->listener.snapshot_deleted(m->listener.userdata, id);
}

int manager_live(Manager *m, const Forest **ret) {
        _cleanup_free_ char *error = NULL;
        int r = live_linked(m->live, ret, &error);
        if (r >= 0)
                return 0;
        /* Events left the forest inconsistent: only a full pass can tell the truth. */
        log_warning("Live forest inconsistent (%s), resynchronising.", error ?: "?");
        r = manager_full_pass(m, "inconsistent");
        if (r < 0)
                return r;
        return live_linked(m->live, ret, NULL);
}

bool manager_task_stale(const Manager *m, pid_t tid) {
        return m->source && source_task_stale(m->source, tid);
}

static void on_pacing(void *userdata, const char *reason) {
        (void) manager_full_pass_background(userdata, reason); /* a failure asks for the next one itself */
}

/* ---- start and stop ---- */

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        log_info("Received %s, exiting.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down...");
        return sd_event_exit(m->event, 0);
}

int manager_block_signals(void) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        return sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ? -errno : 0;
}

static int setup_signals(Manager *m) {
        int r = manager_block_signals();
        if (r < 0)
                return r;
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_signal, m);
        return r;
}

/* The live forest starts as what the database stored: whatever the first pass keeps of it keeps
 * its ids, and until then bus, database and live forest agree anyway. */
static int open_live(Manager *m) {
        _cleanup_(forest_freep) Forest *stored = NULL;
        int r = store_load_live(m->store, &stored);
        if (r < 0) {
                if (r == -EBADMSG)
                        log_warning("Not keeping the stored filter ids: the stored live forest is damaged; the "
                                    "first pass gives every filter a new id.");
                else
                        log_warning_errno(r, "Not keeping the stored filter ids: the stored live forest cannot be "
                                             "read (%m); the first pass gives every filter a new id.");
                stored = NULL;
        }
        r = live_new(TAKE_PTR(stored), &m->live);
        if (r < 0)
                return log_oom();
        r = live_set_budget(m->live, m->opts.budget_insns);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) /* the stored state does not link: the first pass replaces it, and counts it */
                log_debug_errno(r, "Not counting the stored filters against their budgets: %m");
        return 0;
}

int manager_open(Manager *m) {
        uint64_t max_id = 0;
        int r;

        (void) sd_notify(false, "STATUS=Opening the state database...");
        r = store_open(m->opts.state_dir, &m->store);
        if (r >= 0)
                r = store_snapshot_discard_incomplete(m->store); /* imports a stopped daemon left half-way */
        if (r >= 0 && store_checkpointer_new(m->store, &m->checkpointer) < 0)
                log_warning("Checkpoints of the state database will be made by its commits.");
        if (r >= 0)
                r = open_live(m);
        if (r >= 0)
                r = store_max_filter_id(m->store, &max_id);
        if (r >= 0)
                r = source_new(&(SourceOptions) { .backend = m->opts.backend, .first_id = max_id + 1 }, &m->source);
        if (r >= 0)
                r = pacing_new(m->event, m->opts.refresh_usec ?: refresh_usec_from_env(source_refresh_usec(m->source)),
                               on_pacing, m, &m->pacing);
        if (r < 0)
                return r;
        /* Watching starts before the first pass, so that nothing that happens during it is missed. */
        SourceSink sink = {
                .apply = sink_apply, .replace = sink_replace, .resync = sink_resync, .live = sink_live,
                .scan_begins = sink_scan_begins, .scan_dropped = sink_scan_dropped, .userdata = m,
        };
        r = source_start(m->source, m->event, &sink);
        if (r >= 0)
                r = parents_new(m->event, &sink, &m->parents);
        if (r < 0)
                return r;
        return manager_full_pass(m, NULL);
}

int manager_startup(Manager *m) {
        int r = manager_open(m);
        if (r < 0)
                return r;
        r = setup_signals(m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");
        r = pacing_start_refresh(m->pacing);
        if (r < 0)
                return r;
        /* The watchdog is fed by sd-event whenever the unit asks for it (WATCHDOG_USEC). */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog: %m");
        return 0;
}

void manager_ready(Manager *m) {
        LiveCounts n = live_counts(m->live);
        const char *backend = backend_to_string(source_backend(m->source));
        (void) sd_notifyf(false, "READY=1\nSTATUS=Watching %zu filters, %zu tasks (%s backend)", n.filters, n.tasks,
                          backend);
        log_info("Ready: %s backend, %zu tasks, %zu filters, in %" PRIu64 " ms.", backend, n.tasks, n.filters,
                 (now_usec(CLOCK_MONOTONIC) - m->started_mono) / 1000);
}

int manager_run(Manager *m) {
        int r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}
