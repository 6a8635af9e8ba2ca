/* figure-churn.c: figure 10, the live view under mixed churn: how far behind the kernel the
 * daemon's FilterAttached signals come (lag p50/p99) and how many repairs (full passes after lost
 * or ill-fitting events) the churn cost */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "churn.h"
#include "core/hashmap.h"
#include "daemon-fixture.h"
#include "figures.h"

/*
 * The real sectreed runs on a private dbus-daemon. tests/churn.c's generator runs two workers of
 * mixed churn as fast as they go (forks, threads, TSYNC from a thread that exits at once, exec,
 * orphans, listeners opened and closed; see tests/churn.h) for CHURN_SECONDS. A client subscribed
 * to FilterAttached and Resynced timestamps each signal as it is dispatched. The lag of an install
 * is that timestamp minus the installer's CLOCK_MONOTONIC right after seccomp() returned, matched
 * by the installer's tid in order (tids come round again within a run). Installs without a signal
 * are reported, as are the Resynced signals by reason: each is one repair, a full pass. Then the
 * same on a daemon that lags: stopped (SIGSTOP) for STALL_MSEC every STALL_EVERY_MSEC, it reads
 * its events late, when the processes they name may have changed or exited. No target: issue 19
 * asks for the figure.
 */

#define CHURN_SECONDS 30
#define SMOKE_CHURN_SECONDS 2
#define CHURN_MAX_SAMPLES (4U << 20)
#define QUIET_USEC (1000 * 1000)
#define DRAIN_MAX_USEC (30 * 1000 * 1000)
#define STALL_EVERY_MSEC 2000
#define STALL_MSEC 250
#define CLOSE_LOOPS 200000
#define SMOKE_CLOSE_LOOPS 10000

typedef struct Received {
        pid_t tid;
        uint64_t nsec;
} Received;

typedef struct ChurnClient {
        Received *rx;
        size_t n_rx, n_rx_allocated;
        unsigned resynced, lost, inconsistent;
        uint64_t last_nsec;
        bool oom;
} ChurnClient;

static int on_filter_attached(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        ChurnClient *c = userdata;
        uint64_t id, parent, now = now_nsec();
        uint32_t tid, pid;
        const char *comm;
        c->last_nsec = now;
        if (sd_bus_message_read(m, "ttuus", &id, &parent, &tid, &pid, &comm) <= 0 || !streq(comm, CHURN_COMM))
                return 0;
        if (GROW(c->rx, c->n_rx_allocated, c->n_rx + 1) < 0) {
                c->oom = true;
                return 0;
        }
        c->rx[c->n_rx++] = (Received) { .tid = (pid_t) tid, .nsec = now };
        return 0;
}

static int on_resynced(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        ChurnClient *c = userdata;
        const char *reason;
        c->last_nsec = now_nsec();
        if (sd_bus_message_read(m, "s", &reason) <= 0)
                return 0;
        c->resynced++;
        c->lost += streq(reason, "lost-events");
        c->inconsistent += streq(reason, "inconsistent");
        return 0;
}

static int pump(sd_bus *bus, uint64_t timeout_usec) {
        int r = sd_bus_process(bus, NULL);
        if (r != 0)
                return r;
        return sd_bus_wait(bus, timeout_usec);
}

/* Run the bus until until_nsec; with stall, the daemon is stopped STALL_MSEC every STALL_EVERY_MSEC. */
static int pump_until(sd_bus *bus, uint64_t until_nsec, pid_t stall) {
        uint64_t next_stall = now_nsec() + STALL_EVERY_MSEC * 1000000ULL, resume = 0;
        int r = 0;
        while (r >= 0 && now_nsec() < until_nsec) {
                if (stall > 0 && !resume && now_nsec() >= next_stall && kill(stall, SIGSTOP) >= 0)
                        resume = now_nsec() + STALL_MSEC * 1000000ULL;
                if (resume && now_nsec() >= resume) {
                        (void) kill(stall, SIGCONT);
                        resume = 0;
                        next_stall = now_nsec() + STALL_EVERY_MSEC * 1000000ULL;
                }
                r = pump(bus, 10000);
        }
        if (resume)
                (void) kill(stall, SIGCONT);
        return r;
}

typedef struct Match {
        size_t next; /* the first sample of this tid not matched yet, as an index into its list */
        size_t *samples;
        size_t n, allocated;
} Match;

static void match_free(void *p) {
        Match *m = p;
        free(m->samples);
        free(m);
}

/* Each signal's lag: the oldest unmatched install of its tid. */
static int lags_compute(const ChurnSample *s, size_t n, const ChurnClient *c, double **ret, size_t *ret_n) {
        _cleanup_(hashmap_deinit) Hashmap by_tid = {};
        _cleanup_free_ double *lags = calloc(c->n_rx + 1, sizeof(double));
        size_t k = 0;
        int r = 0;
        if (!lags)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                Match *m = hashmap_get(&by_tid, (uint64_t) s[i].tid);
                if (!m) {
                        m = calloc(1, sizeof(Match));
                        if (!m || hashmap_put(&by_tid, (uint64_t) s[i].tid, m) < 0) {
                                free(m);
                                r = -ENOMEM;
                                break;
                        }
                }
                if (GROW(m->samples, m->allocated, m->n + 1) < 0)
                        r = -ENOMEM;
                else
                        m->samples[m->n++] = i;
        }
        for (size_t i = 0; r >= 0 && i < c->n_rx; i++) {
                Match *m = hashmap_get(&by_tid, (uint64_t) c->rx[i].tid);
                if (!m || m->next >= m->n)
                        continue;
                const ChurnSample *x = &s[m->samples[m->next++]];
                lags[k++] = c->rx[i].nsec > x->nsec ? (double) (c->rx[i].nsec - x->nsec) / 1e6 : 0;
        }
        size_t i = 0;
        void *v;
        while (hashmap_next(&by_tid, &i, NULL, &v))
                match_free(v);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(lags);
        *ret_n = k;
        return 0;
}

typedef struct ChurnRun {
        double seconds;
        ChurnCounts counts;
        size_t signals, matched;
        double p50, p99, max;
        unsigned resynced, lost, inconsistent;
} ChurnRun;

static int churn_measure(sd_bus *bus, ChurnClient *client, double seconds, pid_t stall, ChurnRun *ret) {
        _cleanup_free_ double *lags = NULL;
        Churn *churn;
        size_t n_samples, n_lags = 0;
        int r = churn_start(&(ChurnOptions) { .workers = 2, .max_samples = CHURN_MAX_SAMPLES }, &churn);
        if (r < 0)
                return log_error_errno(r, "Failed to start the churn: %m");
        uint64_t start = now_nsec();
        r = pump_until(bus, start + (uint64_t) (seconds * 1e9), stall);
        churn_stop(churn);
        ret->seconds = (double) (now_nsec() - start) / 1e9;
        /* Until the signals have stopped for a while. */
        uint64_t drain_end = now_nsec() + DRAIN_MAX_USEC * 1000ULL;
        client->last_nsec = now_nsec();
        while (r >= 0 && now_nsec() < drain_end && now_nsec() < client->last_nsec + QUIET_USEC * 1000ULL)
                r = pump(bus, 10000);
        churn_counts(churn, &ret->counts);
        const ChurnSample *samples = churn_samples(churn, &n_samples);
        if (r >= 0 && !client->oom)
                r = lags_compute(samples, n_samples, client, &lags, &n_lags);
        churn_free(churn);
        if (r < 0)
                return log_error_errno(r, "Failed to measure the churn: %m");
        ret->signals = client->n_rx;
        ret->matched = n_lags;
        ret->p50 = percentile(lags, n_lags, 50);
        ret->p99 = percentile(lags, n_lags, 99);
        ret->max = percentile(lags, n_lags, 100);
        ret->resynced = client->resynced;
        ret->lost = client->lost;
        ret->inconsistent = client->inconsistent;
        return 0;
}

static int churn_report(Report *report, const ChurnRun *x, const char *how) {
        char note[200], name[160];
        snprintf(note, sizeof(note), "%" PRIu64 " installs in %.1f s: %" PRIu64 " TSYNC, %" PRIu64 " listeners (%" PRIu64
                 " closed), %" PRIu64 " execs, %" PRIu64 " orphans", x->counts.installs, x->seconds, x->counts.tsync,
                 x->counts.listeners, x->counts.listeners_closed, x->counts.execs, x->counts.orphans);
        snprintf(name, sizeof(name), "%s: filters installed per second", how);
        int r = report_add_value(report, 0, name, (double) x->counts.installs / x->seconds, "/s", 0, NULL, NULL,
                                 VERDICT_NONE, note);
        snprintf(note, sizeof(note), "%zu of %" PRIu64 " installs announced, %zu matched; max %.1f ms", x->signals,
                 x->counts.installs, x->matched, x->max);
        snprintf(name, sizeof(name), "%s: lag p50, seccomp() return to FilterAttached", how);
        if (r >= 0)
                r = report_add_ms(report, 0, name, x->p50, 0, NULL, NULL, VERDICT_NONE, note);
        snprintf(name, sizeof(name), "%s: lag p99", how);
        if (r >= 0)
                r = report_add_ms(report, 0, name, x->p99, 0, NULL, NULL, VERDICT_NONE, NULL);
        snprintf(note, sizeof(note), "%u lost-events, %u inconsistent", x->lost, x->inconsistent);
        snprintf(name, sizeof(name), "%s: repairs (Resynced: full passes)", how);
        if (r >= 0)
                r = report_add_value(report, 0, name, x->resynced, "", 0, NULL, NULL, VERDICT_NONE, note);
        if (r >= 0 && x->resynced == 0 && x->signals != x->counts.installs)
                report_check_failed(report, "%zu FilterAttached for %" PRIu64 " installs, and no Resynced said why.",
                                    x->signals, x->counts.installs);
        return r;
}

/* What one open(2) and close(2) of /dev/null cost, in nanoseconds: with the daemon watching, its
 * close(2) tracepoint looks at every descriptor closed on the machine once a listener was made. */
static double close_nsec(unsigned loops) {
        uint64_t start = now_nsec();
        for (unsigned i = 0; i < loops; i++) {
                int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd >= 0)
                        close(fd);
        }
        return (double) (now_nsec() - start) / loops;
}

/* One run on a daemon of its own; stalled: stopped now and then. */
static int churn_run_one(const BenchOptions *o, Report *report, bool stalled) {
        _cleanup_(daemon_fixture_freep) DaemonFixture *daemon = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        ChurnClient client = {};
        ChurnRun run = {};
        int r = daemon_fixture_new(&(DaemonFixtureOptions) { .env = env }, &daemon);
        if (r >= 0)
                r = daemon_fixture_connect(daemon, &bus);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, "org.sectree1", "/org/sectree1", "org.sectree1.Manager",
                                        "FilterAttached", on_filter_attached, &client);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "Resynced",
                                        on_resynced, &client);
        if (r >= 0)
                r = churn_measure(bus, &client, o->smoke ? SMOKE_CHURN_SECONDS : CHURN_SECONDS,
                                  stalled ? daemon_fixture_daemon_pid(daemon) : 0, &run);
        free(client.rx);
        if (r < 0)
                return r;
        r = churn_report(report, &run, stalled ? "daemon stopped 250 ms every 2 s" : "mixed churn");
        if (r < 0 || stalled)
                return r;
        /* The churn made listeners: every close(2) of the machine is looked at now. */
        unsigned loops = o->smoke ? SMOKE_CLOSE_LOOPS : CLOSE_LOOPS;
        double watched = close_nsec(loops);
        daemon = daemon_fixture_free(daemon);
        double alone = close_nsec(loops);
        char note[120];
        snprintf(note, sizeof(note), "%.0f ns without a daemon; %u calls each", alone, loops);
        return report_add_value(report, 0, "open(2) + close(2) of /dev/null while the daemon watches", watched, "ns",
                                watched / alone, "no daemon", NULL, VERDICT_NONE, note);
}

int figure_churn_run(const BenchOptions *o, Report *report) {
        int r = churn_run_one(o, report, false);
        return r < 0 ? r : churn_run_one(o, report, true);
}
