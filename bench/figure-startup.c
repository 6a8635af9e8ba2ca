/* figure-startup.c: figure 8, the daemon's start-up: from exec to READY=1, and its parts measured
 * in this process (loading the BPF units, the first full pass against a warm one, the first write
 * of the state database) */
#include "daemon-fixture.h"
#include "figures.h"
#include "observe/scanner.h"
#include "store/store.h"
#include "workload.h"

/*
 * For each size, with the workload built (rounds of each, the median reported):
 *   - load: bpf_scanner_new_with_first_id(), the long-lived scanner the service makes: both BPF
 *     units loaded and the naming tracepoints attached;
 *   - first pass: the first bpf_scanner_scan() of that new scanner over the whole machine with the
 *     service's options (exe, no argv), dropped and linked as the service does: every filter is
 *     new to it (an id each, its instructions sent and digested);
 *   - warm pass: the same again right after: what every later pass of the service costs;
 *   - first write: store_replace_all() of the first pass into an empty state database;
 *   - READY: the real sectreed, started on a private bus with a fresh state directory, from spawn
 *     to its READY=1 (loading, the first pass, the first write, the bus name). The rest of READY
 *     beyond the parts above is exec, libraries, the bus and the watch set-up.
 */

#define READY_TARGET_MSEC 400.0

typedef enum StartupPart {
        PART_LOAD,
        PART_FIRST,
        PART_WARM,
        PART_WRITE,
        PART_READY,
        _PART_MAX,
} StartupPart;

typedef struct StartupBench {
        const BenchOptions *opts;
        Report *report;
        double samples[_PART_MAX][BENCH_MAX_PASSES];
        double ready_faults[BENCH_MAX_PASSES]; /* the daemon's minor page faults until READY=1 */
} StartupBench;

static int full_pass(BpfScanner *s, Forest **ret, double *ret_msec) {
        ScanOptions opts = { .root = 0, .include_argv = false, .include_exe = true };
        _cleanup_(forest_freep) Forest *f = NULL;
        uint64_t start = now_nsec();
        int r = bpf_scanner_scan(s, &opts, &f);

        if (r >= 0) {
                forest_drop_unfiltered_processes(f);
                r = forest_link(f, NULL);
        }
        *ret_msec = msec_since(start);
        if (r < 0)
                return log_error_errno(r, "The full pass failed: %m");
        *ret = TAKE_PTR(f);
        return 0;
}

static int first_write(const Forest *f, double *ret_msec) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_(store_freep) Store *st = NULL;
        int r = bench_mkdtemp("startup", &dir);

        if (r < 0)
                return r;
        r = store_open(dir, &st);
        if (r >= 0) {
                uint64_t start = now_nsec();
                r = store_replace_all(st, f, now_usec(CLOCK_REALTIME));
                *ret_msec = msec_since(start);
        }
        st = store_free(st);
        bench_rm_rf(dir);
        return r < 0 ? log_error_errno(r, "The first write failed: %m") : 0;
}

/* One round of the in-process parts. */
static int measure_parts(StartupBench *b, Workload *w, unsigned i) {
        _cleanup_(bpf_scanner_freep) BpfScanner *s = NULL;
        _cleanup_(forest_freep) Forest *first = NULL, *warm = NULL;
        char why[160];
        uint64_t start = now_nsec();
        int r = bpf_scanner_new_with_first_id(&s, 1);

        b->samples[PART_LOAD][i] = msec_since(start);
        if (r < 0)
                return log_error_errno(r, "Failed to load the BPF scanner: %m");
        r = full_pass(s, &first, &b->samples[PART_FIRST][i]);
        if (r >= 0)
                r = full_pass(s, &warm, &b->samples[PART_WARM][i]);
        if (r >= 0)
                r = first_write(first, &b->samples[PART_WRITE][i]);
        if (r < 0)
                return r;
        if (i == 0 && w) {
                /* The whole machine: the workload's filters are among the forest's. */
                Forest *sub = NULL;
                ScanOptions o = { .root = workload_root(w) };
                if (bpf_scanner_scan(s, &o, &sub) >= 0 && !workload_matches_forest(w, sub, why, sizeof(why)))
                        report_check_failed(b->report, "start-up scanner, %zu tasks: %s.", workload_n_tasks(w), why);
                forest_free(sub);
                if (first->n_filters < workload_n_filters(w))
                        report_check_failed(b->report, "first pass: %zu filters, the workload alone has %zu.",
                                            first->n_filters, workload_n_filters(w));
        }
        return 0;
}

static int measure_ready(StartupBench *b, unsigned i) {
        _cleanup_(daemon_fixture_freep) DaemonFixture *d = NULL;
        DaemonFixtureOptions fo = { .ready_timeout_sec = 120 };
        int r = daemon_fixture_new(&fo, &d);

        if (r < 0)
                return r;
        b->samples[PART_READY][i] = (double) daemon_fixture_ready_nsec(d) / 1e6;
        b->ready_faults[i] = bench_minor_faults(daemon_fixture_daemon_pid(d));
        return 0;
}

static int report_size(StartupBench *b, size_t tasks) {
        unsigned n = b->opts->passes;
        double m[_PART_MAX];
        char note[128];
        int r;

        for (StartupPart p = 0; p < _PART_MAX; p++)
                m[p] = median(b->samples[p], n);
        snprintf(note, sizeof(note), "rest (exec, bus, watch): %.0f ms; %.0f page faults",
                 m[PART_READY] - m[PART_LOAD] - m[PART_FIRST] - m[PART_WRITE], median(b->ready_faults, n));
        r = report_add_ms(b->report, tasks, "load BPF units", m[PART_LOAD], 0, NULL, NULL, VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add_ms(b->report, tasks, "warm pass", m[PART_WARM], 0, NULL, NULL, VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add_ms(b->report, tasks, "first pass", m[PART_FIRST], m[PART_FIRST] / m[PART_WARM], "warm pass", NULL,
                            VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add_ms(b->report, tasks, "store: first write", m[PART_WRITE], 0, NULL, NULL, VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add_ms(b->report, tasks, "sectreed: spawn to READY=1", m[PART_READY], 0, NULL, "≤ 400 ms",
                            verdict_for(b->opts, tasks, m[PART_READY], READY_TARGET_MSEC, false), note);
        return r;
}

static int measure_size(StartupBench *b, size_t n) {
        _cleanup_(workload_freep) Workload *w = NULL;
        WorkloadOptions wo = {
                .n_tasks = n,
                .threads_per_process = b->opts->threads_per_process,
                .filter_len = b->opts->filter_len,
        };
        int r = n > 0 ? workload_new(&wo, &w) : 0;

        for (unsigned i = 0; r >= 0 && i < b->opts->passes; i++) {
                r = measure_parts(b, w, i);
                if (r >= 0)
                        r = measure_ready(b, i);
        }
        return r < 0 ? r : report_size(b, n);
}

int figure_startup_run(const BenchOptions *o, Report *report) {
        StartupBench b = { .opts = o, .report = report };
        int r = measure_size(&b, 0);

        for (size_t i = 0; r >= 0 && i < o->n_sizes; i++)
                r = measure_size(&b, o->sizes[i]);
        return r;
}
