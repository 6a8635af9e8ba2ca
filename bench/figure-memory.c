/* figure-memory.c: figure 5, the daemon's peak resident memory with a workload of each size,
 * against the same daemon with nothing to watch, and Rescan from call to reply with its parts */
#include <fcntl.h>
#include <systemd/sd-bus.h>

#include "daemon-fixture.h"
#include "figures.h"
#include "loadgen.h"
#include "store/store-checkpoint.h"
#include "workload.h"

/*
 * For each size: the workload is built, then the real sectreed is started on a private bus (its
 * start-up pass scans and stores the whole machine), then asked for one Rescan (a second full
 * pass: the refresh path, during which the old live forest and the new scan are both in memory).
 * The value is VmHWM of /proc/PID/status then: the peak resident set since it started. The floor
 * is the same daemon started with no workload: libraries, the SQLite page cache in use, and the
 * BPF ring buffers it maps (their pages are counted once per mapping, and the kernel maps a ring
 * buffer's data twice).
 *
 * Then the same daemon goes on: CHURN_SECONDS of churn (a child process installing a filter and
 * exiting, CHURN_RATE times a second), then SNAPSHOTS snapshots of the whole machine, each exported
 * as JSON into a pipe that is read to its end and deleted, then one more Rescan. The second row is
 * VmRSS then (what it holds after all of that, not its peak), and the note its VmHWM.
 *
 * The Rescan row: RESCANS calls of Rescan (the first is the one above), each timed from the call to
 * its reply, the median; the daemon runs with SYSTEMD_LOG_LEVEL=debug, and its log gives the parts of
 * each: the scan (the iterators' "Pass N: ... tasks X us, files Y us" and "forest built in Z us"),
 * replacing the live forest and storing it ("Full pass (rescan): ... replaced in X us, stored and
 * announced in Y us"). The rest is the bus, the ids given to the scan, and linking it.
 */

#define TARGET_MIB 64.0
#define CHURN_RATE 1000
#define CHURN_SECONDS 3.0
#define SMOKE_CHURN_SECONDS 0.5
#define SNAPSHOTS 3
#define KIB_PER_MIB 1024.0
#define RESCANS 3

/* The parts of one Rescan, in ms: the call to its reply, and what the daemon's log says of it. */
typedef enum RescanPart {
        RESCAN_CALL,
        RESCAN_ITERATE, /* the BPF iterators */
        RESCAN_SCAN,    /* the iterators and building the forest */
        RESCAN_REPLACE, /* the live forest replaced by the scan */
        RESCAN_STORE,   /* stored, committed and announced */
        _RESCAN_PART_MAX,
} RescanPart;

typedef struct Rescans {
        double parts[_RESCAN_PART_MAX][RESCANS];
        size_t n_calls, n_logged;
        size_t pass_tasks; /* tasks in the daemon's last pass (the workload and the machine's own) */
        double faults[RESCANS]; /* the daemon's minor page faults during each call but the first */
} Rescans;

typedef struct MemoryUse {
        uint64_t hwm_kib, rss_kib, anon_kib;
        uint64_t bpf_map_kib; /* resident in anon_inode:bpf-map mappings (ring buffers, mmap'ed maps) */
        double ready_msec, rescan_msec;
        uint64_t after_rss_kib, after_hwm_kib; /* after churn and snapshots */
        Rescans rescans;
} MemoryUse;

static uint64_t status_field_kib(const char *status, const char *name) {
        const char *p = strstr(status, name);
        unsigned long long v = 0;

        if (p)
                (void) sscanf(p + strlen(name), " %llu", &v);
        return v;
}

static int read_status(pid_t pid, MemoryUse *m) {
        char path[64], buf[8192];

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return log_error_errno(-errno, "Failed to open %s: %m", path);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        m->hwm_kib = status_field_kib(buf, "\nVmHWM:");
        m->rss_kib = status_field_kib(buf, "\nVmRSS:");
        m->anon_kib = status_field_kib(buf, "\nRssAnon:");
        return m->hwm_kib > 0 ? 0 : log_error_errno(-EBADMSG, "No VmHWM in %s.", path);
}

/* Rss: of the mappings of BPF maps, from /proc/PID/smaps. */
static uint64_t bpf_map_rss_kib(pid_t pid) {
        char path[64], line[512];
        bool in_bpf = false;
        uint64_t sum = 0;

        snprintf(path, sizeof(path), "/proc/%d/smaps", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                unsigned long long start, end, kib;
                /* "7f00-7f80 rw-s 00000000 00:0e 1234   anon_inode:bpf-map" opens a mapping */
                if (sscanf(line, "%llx-%llx ", &start, &end) == 2)
                        in_bpf = strstr(line, "anon_inode:bpf-map") != NULL;
                else if (in_bpf && sscanf(line, "Rss: %llu kB", &kib) == 1)
                        sum += kib;
        }
        return sum;
}

static int rescan(DaemonFixture *d, double *ret_msec) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = daemon_fixture_connect(d, &bus);

        if (r < 0)
                return r;
        uint64_t start = now_nsec();
        r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "Rescan", &error, NULL,
                               "");
        *ret_msec = msec_since(start);
        if (r < 0)
                log_error_errno(r, "Rescan failed: %s", error.message ?: strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

/* The bpf scanner's and the manager's debug lines of one pass: its scan parts, then its full pass. */
static void rescan_log_line(const char *line, Rescans *rs, double *iterate, double *built) {
        unsigned long long a, b;
        size_t tasks;
        const char *p;

        if ((p = strstr(line, "; tasks ")) && sscanf(p, "; tasks %llu us", &a) == 1 && (p = strstr(p, "files "))) {
                p += strlen("files ");
                if (strncmp(p, "skipped, ", strlen("skipped, ")) == 0)
                        p += strlen("skipped, ");
                *iterate = (double) a / 1000 + (sscanf(p, "%llu us", &b) == 1 ? (double) b / 1000 : 0);
        } else if ((p = strstr(line, ": forest built in ")) && sscanf(p, ": forest built in %llu us", &a) == 1)
                *built = (double) a / 1000;
        else if ((p = strstr(line, "Full pass (rescan): ")) &&
                 sscanf(p, "Full pass (rescan): %zu tasks, %*u filters; replaced in %llu us, stored and announced "
                        "in %llu us", &tasks, &a, &b) == 3) {
                size_t i = rs->n_logged++ % RESCANS; /* the last RESCANS of them */
                rs->parts[RESCAN_ITERATE][i] = *iterate;
                rs->parts[RESCAN_SCAN][i] = *iterate + *built;
                rs->parts[RESCAN_REPLACE][i] = (double) a / 1000;
                rs->parts[RESCAN_STORE][i] = (double) b / 1000;
                rs->pass_tasks = tasks;
        }
}

/* RESCANS - 1 more Rescans (the first was timed already), and the parts of all of them from the
 * daemon's log. */
static int rescans_measure(DaemonFixture *d, Rescans *rs) {
        _cleanup_free_ char *log = NULL;
        double iterate = 0, built = 0;
        int r = 0;

        pid_t pid = daemon_fixture_daemon_pid(d);
        for (rs->n_calls = 1; r >= 0 && rs->n_calls < RESCANS; rs->n_calls++) {
                double before = bench_minor_faults(pid);
                r = rescan(d, &rs->parts[RESCAN_CALL][rs->n_calls]);
                rs->faults[rs->n_calls - 1] = bench_minor_faults(pid) - before;
        }
        if (r >= 0)
                r = daemon_fixture_read_log(d, &log);
        for (char *line = log, *end; r >= 0 && line && *line; line = end ? end + 1 : NULL) {
                end = strchr(line, '\n');
                if (end)
                        *end = 0;
                rescan_log_line(line, rs, &iterate, &built);
        }
        return r;
}

static int churn(const BenchOptions *o) {
        _cleanup_(loadgen_freep) LoadGen *g = NULL;
        LoadGenOptions lo = { .rate = CHURN_RATE, .seconds = o->smoke ? SMOKE_CHURN_SECONDS : CHURN_SECONDS,
                              .filter_len = o->filter_len };
        int r = loadgen_start(&lo, &g);
        if (r < 0)
                return r;
        while (!loadgen_done(g))
                usleep(10 * 1000);
        return 0;
}

/* CreateSnapshot of the whole machine, ExportSnapshot as JSON into a pipe read to its end,
 * DeleteSnapshot. */
static int snapshot_round(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *export = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = 0;
        int p[2], r;

        r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "CreateSnapshot", &error,
                               &reply, "ua{sv}", 0, 1, "include_argv", "b", 1);
        if (r >= 0)
                r = sd_bus_message_read(reply, "t", &id);
        if (r < 0) {
                log_error_errno(r, "CreateSnapshot failed: %s", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        r = sd_bus_call_method_async(bus, NULL, "org.sectree1", "/org/sectree1", "org.sectree1.Manager",
                                     "ExportSnapshot", NULL, NULL, "ths", id, p[1], "json");
        close(p[1]);
        if (r >= 0)
                r = sd_bus_flush(bus); /* the call (and our end's copy) is with the daemon */
        char buf[65536];
        while (r >= 0) {
                ssize_t k = read(p[0], buf, sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
        }
        close(p[0]);
        if (r >= 0)
                r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "DeleteSnapshot",
                                       &error, NULL, "t", id);
        if (r < 0)
                log_error_errno(r, "Exporting or deleting snapshot %" PRIu64 " failed: %s", id,
                                error.message ?: strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

static int measure_daemon(const BenchOptions *o, bool go_on, MemoryUse *ret) {
        _cleanup_(daemon_fixture_freep) DaemonFixture *d = NULL;
        char *env[] = { (char *) "SYSTEMD_LOG_LEVEL=debug", NULL };
        DaemonFixtureOptions fo = { .env = env, .ready_timeout_sec = 120 };
        int r = daemon_fixture_new(&fo, &d);

        if (r < 0)
                return r;
        *ret = (MemoryUse) { .ready_msec = (double) daemon_fixture_ready_nsec(d) / 1e6 };
        r = rescan(d, &ret->rescan_msec);
        if (r < 0)
                return r;
        pid_t pid = daemon_fixture_daemon_pid(d);
        r = read_status(pid, ret);
        ret->bpf_map_kib = bpf_map_rss_kib(pid);
        ret->rescans.parts[RESCAN_CALL][0] = ret->rescan_msec;
        if (r >= 0)
                r = rescans_measure(d, &ret->rescans);
        if (r < 0 || !go_on)
                return r;

        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        double msec;
        r = churn(o);
        if (r >= 0)
                r = daemon_fixture_connect(d, &bus);
        for (int i = 0; r >= 0 && i < SNAPSHOTS; i++)
                r = snapshot_round(bus);
        if (r >= 0)
                r = rescan(d, &msec);
        MemoryUse after = {};
        if (r >= 0)
                r = read_status(pid, &after);
        ret->after_rss_kib = after.rss_kib;
        ret->after_hwm_kib = after.hwm_kib;
        return r;
}

static int add_row(Report *report, const BenchOptions *o, size_t tasks, const char *figure, const MemoryUse *m,
                   const MemoryUse *idle) {
        double mib = (double) m->hwm_kib / KIB_PER_MIB;
        char note[128];

        if (idle && tasks > 0)
                snprintf(note, sizeof(note), "+%.2f MiB/1k tasks; anon %.1f, bpf maps %.1f MiB; ready %.0f, rescan %.0f ms",
                         (double) (m->hwm_kib - (m->hwm_kib > idle->hwm_kib ? idle->hwm_kib : m->hwm_kib)) /
                                 KIB_PER_MIB / ((double) tasks / 1000),
                         (double) m->anon_kib / KIB_PER_MIB, (double) m->bpf_map_kib / KIB_PER_MIB, m->ready_msec,
                         m->rescan_msec);
        else
                snprintf(note, sizeof(note), "anon %.1f, bpf maps %.1f MiB; ready %.0f, rescan %.0f ms",
                         (double) m->anon_kib / KIB_PER_MIB, (double) m->bpf_map_kib / KIB_PER_MIB, m->ready_msec,
                         m->rescan_msec);
        return report_add(report, &(BenchRow) {
                .figure = figure,
                .tasks = tasks,
                .value = mib,
                .unit = "MiB",
                .ratio = idle ? (double) m->hwm_kib / (double) idle->hwm_kib : 0,
                .ratio_to = "idle daemon",
                .target = idle ? "≤ 64 MiB" : NULL,
                .verdict = idle ? verdict_for(o, tasks, mib, TARGET_MIB, false) : VERDICT_NONE,
                .note = note,
        });
}

/* Rescan from call to reply, and its parts from the daemon's log (medians of RESCANS). */
static int add_rescan_row(Report *report, size_t tasks, Rescans *rs) {
        double m[_RESCAN_PART_MAX];
        size_t n_logged = MIN(rs->n_logged, (size_t) RESCANS);
        char note[192];

        m[RESCAN_CALL] = median(rs->parts[RESCAN_CALL], rs->n_calls);
        for (RescanPart i = RESCAN_ITERATE; i < _RESCAN_PART_MAX; i++)
                m[i] = median(rs->parts[i], n_logged);
        if (n_logged == 0)
                snprintf(note, sizeof(note), "median of %zu; no parts in the daemon's log", rs->n_calls);
        else
                snprintf(note, sizeof(note),
                         "%zu tasks in the pass; scan %.1f (iterators %.1f), replace %.1f, store %.1f, rest %.1f ms; "
                         "%.0f page faults",
                         rs->pass_tasks, m[RESCAN_SCAN], m[RESCAN_ITERATE], m[RESCAN_REPLACE], m[RESCAN_STORE],
                         m[RESCAN_CALL] - m[RESCAN_SCAN] - m[RESCAN_REPLACE] - m[RESCAN_STORE],
                         median(rs->faults, rs->n_calls > 1 ? rs->n_calls - 1 : 0));
        return report_add_ms(report, tasks, "Rescan (call to reply)", m[RESCAN_CALL], 0, NULL, NULL, VERDICT_NONE,
                             note);
}

static int add_after_row(Report *report, const BenchOptions *o, size_t tasks, const MemoryUse *m) {
        double mib = (double) m->after_rss_kib / KIB_PER_MIB;
        char note[128];

        snprintf(note, sizeof(note), "%.1f s of churn at %d/s, %d snapshots exported; VmHWM %.1f MiB",
                 o->smoke ? SMOKE_CHURN_SECONDS : CHURN_SECONDS, CHURN_RATE, SNAPSHOTS,
                 (double) m->after_hwm_kib / KIB_PER_MIB);
        return report_add(report, &(BenchRow) {
                .figure = "daemon RSS after churn and snapshots (VmRSS)",
                .tasks = tasks,
                .value = mib,
                .unit = "MiB",
                .target = "≤ 64 MiB",
                .verdict = verdict_for(o, tasks, mib, TARGET_MIB, false),
                .note = note,
        });
}

/* ---- --long: memory under sustained churn (issue 23) ---- */

/* At the target size, LONG_CHURN_RATE installs/s for LONG_CHURN_SECONDS on one daemon: VmHWM at
 * the end (the peak since start, refresh passes and all), VmRSS sampled every second, and the
 * largest the WAL file grew, against the size the store checkpoints at (STORE_CHECKPOINT_PAGES). */
#define LONG_CHURN_RATE 500
#define LONG_CHURN_SECONDS 300.0
/* The log is checkpointed from STORE_CHECKPOINT_PAGES on, by a thread, while commits go on adding
 * to it: its file is bounded by that size and what is committed while a checkpoint runs. */
#define WAL_SLACK 1.5

typedef struct LongChurn {
        uint64_t hwm_kib, rss_kib, rss_max_kib, db_bytes;
        uint64_t wal_max;        /* the largest the log's file was, sampled every second */
        uint64_t wal_steady_max; /* the same over the second half of the churn */
        double seconds;
} LongChurn;

static int long_churn_sample(DaemonFixture *d, LongChurn *lc, bool steady) {
        MemoryUse m = {};
        int r = read_status(daemon_fixture_daemon_pid(d), &m);
        uint64_t wal = daemon_fixture_wal_bytes(d);

        if (r < 0)
                return r;
        lc->hwm_kib = m.hwm_kib;
        lc->rss_kib = m.rss_kib;
        lc->rss_max_kib = MAX(lc->rss_max_kib, m.rss_kib);
        lc->wal_max = MAX(lc->wal_max, wal);
        if (steady)
                lc->wal_steady_max = MAX(lc->wal_steady_max, wal);
        return 0;
}

static int long_churn_run(const BenchOptions *o, LongChurn *lc) {
        _cleanup_(daemon_fixture_freep) DaemonFixture *d = NULL;
        _cleanup_(loadgen_freep) LoadGen *g = NULL;
        DaemonFixtureOptions fo = {};
        const char *e = getenv("SECTREE_BENCH_LONG_SECONDS"); /* a shorter look, while investigating */
        LoadGenOptions lo = { .rate = LONG_CHURN_RATE, .seconds = o->smoke ? SMOKE_CHURN_SECONDS : LONG_CHURN_SECONDS,
                              .filter_len = o->filter_len };
        if (e && atof(e) > 0)
                lo.seconds = atof(e);
        uint64_t start;
        int r = daemon_fixture_new(&fo, &d);

        if (r >= 0)
                r = loadgen_start(&lo, &g);
        if (r < 0)
                return r;
        start = now_nsec();
        *lc = (LongChurn) {};
        while (r >= 0 && !loadgen_done(g)) {
                r = long_churn_sample(d, lc, (double) (now_nsec() - start) / 1e9 >= lo.seconds / 2);
                usleep(1000 * 1000);
        }
        if (r >= 0)
                r = long_churn_sample(d, lc, true);
        lc->seconds = (double) (now_nsec() - start) / 1e9;
        lc->db_bytes = daemon_fixture_state_bytes(d);
        return r;
}

static int measure_long_churn(const BenchOptions *o, Report *report) {
        _cleanup_(workload_freep) Workload *w = NULL;
        size_t tasks = o->smoke ? o->sizes[0] : o->target_size;
        WorkloadOptions wo = { .n_tasks = tasks, .threads_per_process = o->threads_per_process,
                               .filter_len = o->filter_len };
        uint64_t wal_limit = STORE_WAL_LIMIT_BYTES;
        char note[160];
        LongChurn lc;
        int r = workload_new(&wo, &w);

        if (r >= 0)
                r = long_churn_run(o, &lc);
        if (r < 0)
                return r;
        snprintf(note, sizeof(note), "%.0f s at %d/s; VmRSS at the end %.1f, largest sampled %.1f MiB; state.db %.1f MiB",
                 lc.seconds, LONG_CHURN_RATE, (double) lc.rss_kib / KIB_PER_MIB, (double) lc.rss_max_kib / KIB_PER_MIB,
                 (double) lc.db_bytes / (1024.0 * 1024.0));
        r = report_add(report, &(BenchRow) {
                .figure = "daemon peak RSS after sustained churn (VmHWM)",
                .tasks = tasks,
                .value = (double) lc.hwm_kib / KIB_PER_MIB,
                .unit = "MiB",
                .target = "≤ 64 MiB",
                .verdict = verdict_for(o, tasks, (double) lc.hwm_kib / KIB_PER_MIB, TARGET_MIB, false),
                .note = note,
        });
        if (r < 0)
                return r;
        snprintf(note, sizeof(note), "checkpoints at %u pages (%.1f MiB); largest over the whole run %.1f MiB",
                 STORE_CHECKPOINT_PAGES, (double) wal_limit / (1024.0 * 1024.0),
                 (double) lc.wal_max / (1024.0 * 1024.0));
        return report_add(report, &(BenchRow) {
                .figure = "largest WAL file, 2nd half of that churn",
                .tasks = tasks,
                .value = (double) lc.wal_steady_max / (1024.0 * 1024.0),
                .unit = "MiB",
                .target = "≤ 1.5× checkpoint size",
                .verdict = verdict_for(o, tasks, (double) lc.wal_steady_max, WAL_SLACK * (double) wal_limit, false),
                .note = note,
        });
}

int figure_memory_run(const BenchOptions *o, Report *report) {
        MemoryUse idle;
        int r = measure_daemon(o, false, &idle);

        if (r < 0)
                return r;
        r = add_row(report, o, 0, "floor: idle daemon (VmHWM)", &idle, NULL);
        if (r >= 0)
                r = add_rescan_row(report, 0, &idle.rescans);
        for (size_t i = 0; r >= 0 && i < o->n_sizes; i++) {
                _cleanup_(workload_freep) Workload *w = NULL;
                WorkloadOptions wo = {
                        .n_tasks = o->sizes[i],
                        .threads_per_process = o->threads_per_process,
                        .filter_len = o->filter_len,
                };
                MemoryUse m;
                r = workload_new(&wo, &w);
                if (r >= 0)
                        r = measure_daemon(o, true, &m);
                if (r >= 0)
                        r = add_row(report, o, o->sizes[i], "daemon peak RSS (VmHWM)", &m, &idle);
                if (r >= 0)
                        r = add_rescan_row(report, o->sizes[i], &m.rescans);
                if (r >= 0)
                        r = add_after_row(report, o, o->sizes[i], &m);
        }
        if (r >= 0 && o->long_run)
                r = measure_long_churn(o, report);
        return r;
}
