/* manager.c: the daemon's lifecycle: start-up, the event loop, full passes and shutdown */
#include "manager.h"

#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "store-snapshot.h"

#define REFRESH_USEC_DEFAULT (60 * 1000000ULL)      /* listeners and holders are only seen by full passes */
/* The ptrace backend's events (the proc connector) say nothing about filters: a filter installed by
 * a task that then neither forks nor execs is only found by this periodic full pass. */
#define REFRESH_USEC_PTRACE (5 * 1000000ULL)
#define LOST_CHECK_USEC (200 * 1000ULL)
#define RESCAN_DEBOUNCE_USEC (30 * 1000ULL)         /* ptrace: collect a burst of events, rescan once */
#define RESYNC_MIN_INTERVAL_USEC MANAGER_RESYNC_MIN_INTERVAL_USEC
#define RESYNC_ACCURACY_USEC (10 * 1000ULL)         /* not sd-event's default of 250 ms */
/* A split pass stores its scan this long after the scan: what the bus asked meanwhile is answered
 * first (a timer that is due is served before sources that became ready after it, so a busy bus
 * cannot put the store off). */
#define PASS_STORE_DELAY_USEC (2 * 1000ULL)

/* $SECTREE_REFRESH_USEC replaces the default interval of the periodic full pass: tests make it
 * long, so that only events can explain what the daemon sees. */
static uint64_t refresh_usec_default(Backend backend) {
        const char *e = secure_getenv("SECTREE_REFRESH_USEC");
        uint64_t v;
        if (e && safe_atou64(e, &v) >= 0 && v > 0)
                return v;
        if (e)
                log_warning("Ignoring invalid $SECTREE_REFRESH_USEC: %s", e);
        return backend == BACKEND_PTRACE ? REFRESH_USEC_PTRACE : REFRESH_USEC_DEFAULT;
}

int manager_new(const ManagerOptions *opts, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        if (!m)
                return log_oom();
        m->backend = opts->backend;
        m->state_dir = strdup(opts->state_dir ? opts->state_dir : MANAGER_DEFAULT_STATE_DIR);
        if (!m->state_dir)
                return log_oom();
        m->refresh_usec = opts->refresh_usec ? opts->refresh_usec : refresh_usec_default(m->backend);
        int r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the event loop: %m");
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->watch_source);
        sd_event_source_disable_unref(m->resync_source);
        sd_event_source_disable_unref(m->refresh_timer);
        sd_event_source_disable_unref(m->lost_timer);
        sd_event_source_disable_unref(m->proc_source);
        sd_event_source_disable_unref(m->rescan_timer);
        sd_event_source_disable_unref(m->pass_store_source);
        forest_free(m->pass_forest);
        proc_watch_free(m->proc_watch);
        free(m->pending);
        hashmap_deinit(&m->filter_uses);
        free(m->retire_candidates);
        sd_bus_flush_close_unref(m->bus);
        bpf_scanner_free(m->scanner);
        store_free(m->store);
        forest_free(m->live);
        sd_event_unref(m->event);
        free(m->state_dir);
        free(m);
        return NULL;
}

static int scan(Manager *m, Forest **ret) {
        ScanOptions opts = { .root = 0, .include_argv = false, .include_exe = true };
        if (m->backend == BACKEND_BPF)
                return bpf_scanner_scan(m->scanner, &opts, ret);
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        int r = ptrace_scan(&opts, ret, &bad, &n_bad);
        for (size_t i = 0; r >= 0 && i < n_bad; i++)
                log_debug_errno(bad[i].error, "Could not read thread %d: %m", bad[i].tid);
        return r;
}

/* What the event sources have lost so far. Taken before a pass scans: whatever is lost while it
 * runs is then newer than the snapshot and asks for another pass. */
static void lost_snapshot(Manager *m, uint64_t *ret_bpf, uint64_t *ret_proc) {
        *ret_bpf = m->scanner ? bpf_scanner_watch_lost(m->scanner) : 0;
        *ret_proc = m->proc_watch ? proc_watch_lost(m->proc_watch) : 0;
}

static void check_lost(Manager *m);

/* A full pass in two halves: the scan, and storing it as the live state. */
static int pass_scan(Manager *m, Forest **ret, uint64_t *ret_lost_bpf, uint64_t *ret_lost_proc) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r;

        lost_snapshot(m, ret_lost_bpf, ret_lost_proc);
        r = scan(m, &f);
        if (r < 0)
                return log_error_errno(r, "Full pass failed: %m");
        if (m->after_scan_hook)
                m->after_scan_hook(m);
        forest_drop_disabled_threads(f);
        r = forest_link(f, NULL);
        if (r < 0)
                return log_error_errno(r, "Scanned forest is inconsistent: %m");
        if (m->backend == BACKEND_PTRACE) {
                r = manager_adopt_inferred_ids(m, f);
                if (r < 0)
                        return log_error_errno(r, "Failed to number the inferred filters: %m");
        }
        *ret = TAKE_PTR(f);
        return 0;
}

static int pass_store(Manager *m, Forest *scanned, const char *reason, uint64_t lost_bpf, uint64_t lost_proc,
                      uint64_t scan_usec) {
        _cleanup_(forest_freep) Forest *f = scanned;
        uint64_t now = now_usec(CLOCK_REALTIME), t0 = now_usec(CLOCK_MONOTONIC);
        int r;

        r = store_replace_all(m->store, f, now);
        if (r < 0)
                return log_error_errno(r, "Failed to store the scan: %m");
        uint64_t t1 = now_usec(CLOCK_MONOTONIC);
        if (m->backend == BACKEND_PTRACE) {
                /* What happened before this pass is in it: queued rescans and lost events too. */
                m->n_pending = 0;
                m->pending_full = NULL;
                m->proc_lost_seen = lost_proc;
                if (reason)
                        manager_announce_pass(m, m->live, f);
        }
        forest_free(m->live);
        m->live = TAKE_PTR(f);
        manager_live_uses_invalidate(m);
        m->last_scan_usec = now;
        m->last_full_pass_mono = now_usec(CLOCK_MONOTONIC);
        m->n_full_passes++;
        /* Losses before the scan are in it: a resync asked for them is done. Those during it are
         * not: check_lost() asks for the next one. */
        m->lost_seen = lost_bpf;
        if (m->resync_source)
                (void) sd_event_source_set_enabled(m->resync_source, SD_EVENT_OFF);
        if (m->scanner)
                check_lost(m);

        (void) sd_notifyf(false, "STATUS=Watching %zu filters, %zu processes (%s backend)", m->live->n_filters,
                          m->live->n_processes, backend_to_string(m->backend));
        if (reason && m->bus)
                (void) manager_send_resynced(m, reason);
        (void) manager_announce_counts(m);
        log_debug("Full pass (%s): %zu processes, %zu filters; scan %" PRIu64 " us, store %" PRIu64
                  " us, signals %" PRIu64 " us.", reason ? reason : "start", m->live->n_processes, m->live->n_filters,
                  scan_usec, t1 - t0, now_usec(CLOCK_MONOTONIC) - t1);
        return 0;
}

/* A scan waiting to be stored (manager_full_pass_split()) is dropped: a newer pass replaces it. */
static void pass_cancel(Manager *m) {
        if (!m->pass_forest)
                return;
        m->pass_forest = forest_free(m->pass_forest);
        (void) sd_event_source_set_enabled(m->pass_store_source, SD_EVENT_OFF);
        if (m->watch_source)
                (void) sd_event_source_set_enabled(m->watch_source, SD_EVENT_ON);
}

int manager_full_pass(Manager *m, const char *reason) {
        _cleanup_(forest_freep) Forest *f = NULL;
        uint64_t lost_bpf, lost_proc;

        pass_cancel(m);
        (void) sd_notifyf(false, "STATUS=Scanning (%s)...", reason ? reason : "refresh");
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = pass_scan(m, &f, &lost_bpf, &lost_proc);
        if (r < 0)
                return r;
        return pass_store(m, TAKE_PTR(f), reason, lost_bpf, lost_proc, now_usec(CLOCK_MONOTONIC) - t0);
}

static int on_pass_store(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        Forest *f = TAKE_PTR(m->pass_forest);

        sd_event_source_set_enabled(s, SD_EVENT_OFF);
        if (m->watch_source)
                (void) sd_event_source_set_enabled(m->watch_source, SD_EVENT_ON);
        if (f)
                (void) pass_store(m, f, m->pass_reason, m->pass_lost_bpf, m->pass_lost_proc, m->pass_scan_usec);
        return 0; /* a failure is logged; the next refresh retries */
}

int manager_full_pass_split(Manager *m, const char *reason) {
        int r;

        if (m->backend != BACKEND_BPF || !m->watch_source)
                return manager_full_pass(m, reason);
        if (m->pass_forest)
                return 0; /* one is under way */
        if (!m->pass_store_source) {
                r = sd_event_add_time(m->event, &m->pass_store_source, CLOCK_MONOTONIC, 0, 1, on_pass_store, m);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->pass_store_source, SD_EVENT_OFF);
                if (r < 0)
                        return manager_full_pass(m, reason);
        }
        (void) sd_notifyf(false, "STATUS=Scanning (%s)...", reason ? reason : "refresh");
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        r = pass_scan(m, &m->pass_forest, &m->pass_lost_bpf, &m->pass_lost_proc);
        if (r < 0)
                return r;
        m->pass_scan_usec = now_usec(CLOCK_MONOTONIC) - t0;
        m->pass_reason = reason;
        /* Events wait in the ring buffer until the scan is the live state: applied to the previous
         * one they would be lost with it. */
        r = sd_event_source_set_enabled(m->watch_source, SD_EVENT_OFF);
        if (r >= 0)
                r = sd_event_source_set_time(m->pass_store_source, now_usec(CLOCK_MONOTONIC) + PASS_STORE_DELAY_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->pass_store_source, SD_EVENT_ONESHOT);
        if (r < 0) {
                pass_cancel(m);
                return manager_full_pass(m, reason);
        }
        return 0;
}

int manager_live(Manager *m, Forest **ret) {
        if (!m->live->linked) {
                _cleanup_free_ char *error = NULL;
                int r = forest_link(m->live, &error);
                if (r < 0) {
                        /* Events left the forest inconsistent: only a full pass can tell the truth. */
                        log_warning("Live forest inconsistent (%s), resynchronising.", error ? error : "?");
                        r = manager_full_pass(m, "inconsistent");
                        if (r < 0)
                                return r;
                }
        }
        *ret = m->live;
        return 0;
}

static int on_resync(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        sd_event_source_set_enabled(s, SD_EVENT_OFF);
        return manager_full_pass_split(m, "lost-events") < 0 ? 0 : 0; /* logged; the next refresh retries */
}

/* A full pass after lost events starts no sooner than RESYNC_MIN_INTERVAL_USEC after the end of
 * the previous full pass, whatever started that one; asking again while one is due changes
 * nothing (they are coalesced). So under a flood that overflows the ring buffer all the time, the
 * loop still spends most of its time on events and the bus, and once the flood ends the pass
 * that follows the last loss brings the state back. */
static void schedule_resync(Manager *m) {
        int enabled = SD_EVENT_OFF, r;
        uint64_t when = m->last_full_pass_mono + RESYNC_MIN_INTERVAL_USEC;

        if (m->resync_source && sd_event_source_get_enabled(m->resync_source, &enabled) >= 0 &&
            enabled != SD_EVENT_OFF)
                return;
        if (!m->resync_source)
                r = sd_event_add_time(m->event, &m->resync_source, CLOCK_MONOTONIC, when, RESYNC_ACCURACY_USEC,
                                      on_resync, m);
        else
                r = sd_event_source_set_time(m->resync_source, when);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->resync_source, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the resync timer: %m");
}

static void check_lost(Manager *m) {
        if (bpf_scanner_watch_lost(m->scanner) != m->lost_seen) {
                int enabled = SD_EVENT_OFF;
                if (!m->resync_source || sd_event_source_get_enabled(m->resync_source, &enabled) < 0 ||
                    enabled == SD_EVENT_OFF)
                        log_info("Events were lost (ring buffer full), resynchronising.");
                schedule_resync(m);
        }
}

static int on_lost_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        check_lost(m);
        sd_event_source_set_time_relative(s, LOST_CHECK_USEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static int on_watch_event(const WatchEvent *e, void *userdata) {
        return manager_apply_event(userdata, e);
}

/* One batch of events: one transaction. Lost events (ring buffer overflow) mean the state may be
 * wrong: a full pass follows. */
static int on_watch_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r = store_begin(m->store);
        if (r < 0)
                return 0;
        m->batch_exits = false;
        r = bpf_scanner_watch_dispatch(m->scanner);
        if (r < 0) {
                store_rollback(m->store);
                log_warning_errno(r, "Applying events failed (%m), resynchronising.");
                schedule_resync(m);
                return 0;
        }
        if (m->batch_exits && manager_retire_unreachable(m) < 0) {
                store_rollback(m->store);
                schedule_resync(m);
                return 0;
        }
        r = store_commit(m->store);
        if (r < 0)
                schedule_resync(m);
        check_lost(m);
        (void) manager_announce_counts(m);
        return 0;
}

static int on_refresh(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        (void) manager_full_pass_split(m, "refresh");
        sd_event_source_set_time_relative(s, m->refresh_usec);
        sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        log_info("Received %s, exiting.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down...");
        return sd_event_exit(m->event, 0);
}

static int setup_signals(Manager *m) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        int r = sd_event_add_signal(m->event, NULL, SIGTERM, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_signal, m);
        return r;
}

static int setup_watch(Manager *m) {
        int r = bpf_scanner_watch_start(m->scanner, on_watch_event, m);
        if (r < 0)
                return log_error_errno(r, "Failed to start watching: %m");
        r = sd_event_add_io(m->event, &m->watch_source, bpf_scanner_watch_fd(m->scanner), EPOLLIN, on_watch_io, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the event ring buffer: %m");
        r = sd_event_add_time_relative(m->event, &m->lost_timer, CLOCK_MONOTONIC, LOST_CHECK_USEC, 0, on_lost_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the lost-events timer: %m");
        return 0;
}

/* ptrace: the next rescan after a short wait that lets a burst of events gather; no sooner after
 * the last one than that one took (rescanning never takes more than half of the loop's time), and
 * a full pass after lost events no sooner than RESYNC_MIN_INTERVAL_USEC after the previous pass. */
static void schedule_rescan(Manager *m) {
        int enabled = SD_EVENT_OFF;
        if (m->rescan_timer && sd_event_source_get_enabled(m->rescan_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        uint64_t now = now_usec(CLOCK_MONOTONIC), when = now + RESCAN_DEBOUNCE_USEC;
        if (m->rescan_end_mono + m->rescan_cost_usec > when)
                when = m->rescan_end_mono + m->rescan_cost_usec;
        if (m->pending_full && m->last_full_pass_mono + RESYNC_MIN_INTERVAL_USEC > when)
                when = m->last_full_pass_mono + RESYNC_MIN_INTERVAL_USEC;
        int r = sd_event_source_set_time(m->rescan_timer, when);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->rescan_timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the rescan timer: %m");
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) manager_flush_rescans(userdata); /* logged; a failed full pass is retried by the next refresh */
        return 0;
}

static int on_proc_event(const ProcEvent *e, void *userdata) {
        return manager_apply_proc_event(userdata, e);
}

/* One batch of proc connector events: exits in one transaction; forks and execs are queued. */
static int on_proc_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r = store_begin(m->store);
        if (r < 0)
                return 0;
        m->batch_exits = false;
        r = proc_watch_dispatch(m->proc_watch);
        if (r >= 0 && m->batch_exits)
                r = manager_retire_unreachable(m);
        if (r >= 0)
                r = store_commit(m->store);
        else
                store_rollback(m->store);
        if (r < 0) {
                log_warning_errno(r, "Applying events failed (%m), resynchronising.");
                m->pending_full = "lost-events";
        }
        if (proc_watch_lost(m->proc_watch) != m->proc_lost_seen) {
                log_info("Events were lost (proc connector socket full), resynchronising.");
                m->proc_lost_seen = proc_watch_lost(m->proc_watch);
                m->pending_full = "lost-events";
        }
        if (m->n_pending > 0 || m->pending_full)
                schedule_rescan(m);
        (void) manager_announce_counts(m);
        return 0;
}

/* Without the proc connector the ptrace backend still works, seeing changes only at the periodic
 * full pass. */
static int setup_proc_watch(Manager *m) {
        int r = proc_watch_new(on_proc_event, m, &m->proc_watch);
        if (r < 0) {
                log_warning_errno(r, "Not watching processes (%m): changes are seen every %" PRIu64 " ms only.",
                                  m->refresh_usec / 1000);
                return 0;
        }
        r = sd_event_add_io(m->event, &m->proc_source, proc_watch_fd(m->proc_watch), EPOLLIN, on_proc_io, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the proc connector: %m");
        r = sd_event_add_time(m->event, &m->rescan_timer, CLOCK_MONOTONIC, 0, 0, on_rescan_timer, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->rescan_timer, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to create the rescan timer: %m");
        return 0;
}

static int open_backend(Manager *m) {
        if (m->backend == BACKEND_PTRACE)
                return setup_proc_watch(m); /* before the first pass, so nothing during it is missed */
        if (m->backend != BACKEND_BPF)
                return 0;
        uint64_t max_id = 0;
        int r = store_max_filter_id(m->store, &max_id);
        if (r < 0)
                return r;
        r = bpf_scanner_new_with_first_id(&m->scanner, max_id + 1);
        if (r < 0)
                return log_error_errno(r, "Failed to load the BPF programs: %m (--backend=ptrace works without BPF)");
        /* Watch before the first pass, so nothing that happens during it is missed. */
        return setup_watch(m);
}

int manager_open(Manager *m) {
        int r;

        (void) sd_notify(false, "STATUS=Opening the state database...");
        r = store_open(m->state_dir, &m->store);
        if (r >= 0)
                r = store_snapshot_discard_incomplete(m->store); /* imports a stopped daemon left half-way */
        if (r < 0)
                return r;
        r = open_backend(m);
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
        r = sd_event_add_time_relative(m->event, &m->refresh_timer, CLOCK_MONOTONIC, m->refresh_usec, 0,
                                       on_refresh, m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the refresh timer: %m");
        r = manager_bus_connect(m);
        if (r < 0)
                return r;
        /* The watchdog is fed by sd-event whenever the unit asks for it (WATCHDOG_USEC). */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog: %m");
        (void) sd_notifyf(false, "READY=1\nSTATUS=Watching %zu filters, %zu processes (%s backend)",
                          m->live->n_filters, m->live->n_processes, backend_to_string(m->backend));
        return 0;
}

int manager_run(Manager *m) {
        int r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}
