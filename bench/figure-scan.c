/* figure-scan.c: figure 1, the full scan: the bpf and ptrace backends against their two floors */
#include <fcntl.h>

#include "figures.h"
#include "iter-floor.h"
#include "observe/scanner.h"
#include "workload.h"

/*
 * What is timed, each on the same live workload, a warm-up pass first and then the median of
 * the measured passes (taken in rounds of one pass of each):
 *   - the bpf backend: bpf_scanner_scan() into the in-memory Forest (freeing it is not timed);
 *   - the ptrace backend: ptrace_scan(), seize/interrupt/dump every index/detach per task;
 *   - the pointer-only iterator floor: an iter/task pass that follows every chain's pointers, and
 *     the same in its open-coded form (one run of the program walks every thread itself, without
 *     the task iterator's lookup and reference of each task; bench/bpf/floor-oc.bpf.c): the
 *     cheaper of the two is the floor the bpf backend's ratio is taken to;
 *   - the /proc floor: open, read and close /proc/TID/status, find Seccomp_filters:.
 * Both backends scan the workload's subtree (ScanOptions.root), without argv or exe. The bpf
 * backend and the iterator floor walk every task of the machine either way. Values are per
 * workload task.
 *
 * The warm-up pass is also where the results are checked against the workload's ground truth.
 */

typedef struct ScanBench {
        const BenchOptions *opts;
        Report *report;
        BpfScanner *bpf;
        IterFloor *floor, *floor_oc;
        Workload *w;
        ScanOptions scan;
} ScanBench;

/* One pass of a figure: *ret_nsec is what it took; with check, its result is compared to the
 * workload (failures go to the report). */
typedef int (*PassFunc)(ScanBench *b, bool check, uint64_t *ret_nsec);

static void forest_check(ScanBench *b, const Forest *f, const char *backend) {
        char why[160];

        if (!workload_matches_forest(b->w, f, why, sizeof(why)))
                report_check_failed(b->report, "%s backend, %zu tasks: %s.", backend, workload_n_tasks(b->w), why);
}

static int pass_floor(ScanBench *b, IterFloor *floor, bool check, uint64_t *ret_nsec) {
        struct floor_counts c;
        uint64_t start = now_nsec();
        int r = iter_floor_run(floor, &c);

        *ret_nsec = now_nsec() - start;
        if (r < 0)
                return r;
        /* Other tasks of the machine are visited too, and may hold filters. */
        if (check && (c.tasks < workload_n_tasks(b->w) || c.filters < workload_n_chain_filters(b->w) || c.truncated))
                report_check_failed(b->report, "iterator floor: %llu tasks, %llu filters, %llu truncated; expected "
                                    "at least %zu tasks and %zu filters.", (unsigned long long) c.tasks,
                                    (unsigned long long) c.filters, (unsigned long long) c.truncated,
                                    workload_n_tasks(b->w), workload_n_chain_filters(b->w));
        return 0;
}

static int pass_iter_floor(ScanBench *b, bool check, uint64_t *ret_nsec) {
        return pass_floor(b, b->floor, check, ret_nsec);
}

static int pass_iter_floor_oc(ScanBench *b, bool check, uint64_t *ret_nsec) {
        return pass_floor(b, b->floor_oc, check, ret_nsec);
}

/* Seccomp_filters: of one task, or negative errno. */
static long proc_read_seccomp_filters(pid_t tid) {
        char path[64], buf[8192];
        _cleanup_close_ int fd = -1;
        ssize_t n;
        char *p;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) tid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        p = strstr(buf, "\nSeccomp_filters:");
        if (!p)
                return -EBADMSG;
        return strtol(p + strlen("\nSeccomp_filters:"), NULL, 10);
}

static int pass_proc_floor(ScanBench *b, bool check, uint64_t *ret_nsec) {
        const WorkloadTask *tasks = workload_tasks(b->w);
        size_t n = workload_n_tasks(b->w), sum = 0, failed = 0;
        uint64_t start = now_nsec();

        for (size_t i = 0; i < n; i++) {
                long k = proc_read_seccomp_filters(tasks[i].tid);
                if (k < 0)
                        failed++;
                else
                        sum += (size_t) k;
        }
        *ret_nsec = now_nsec() - start;
        if (check && (failed > 0 || sum != workload_n_chain_filters(b->w)))
                report_check_failed(b->report, "/proc floor: %zu unreadable, %zu filters, expected %zu.", failed, sum,
                                    workload_n_chain_filters(b->w));
        return 0;
}

static int pass_bpf(ScanBench *b, bool check, uint64_t *ret_nsec) {
        _cleanup_(forest_freep) Forest *f = NULL;
        uint64_t start = now_nsec();
        int r = bpf_scanner_scan(b->bpf, &b->scan, &f);

        *ret_nsec = now_nsec() - start;
        if (r < 0)
                return log_error_errno(r, "bpf scan failed: %m");
        if (check)
                forest_check(b, f, "bpf");
        return 0;
}

static int pass_ptrace(ScanBench *b, bool check, uint64_t *ret_nsec) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ UnreadableTask *unreadable = NULL;
        size_t n_unreadable = 0;
        uint64_t start = now_nsec();
        int r = ptrace_scan(&b->scan, &f, &unreadable, &n_unreadable);

        *ret_nsec = now_nsec() - start;
        if (r < 0)
                return log_error_errno(r, "ptrace scan failed: %m");
        if (n_unreadable > 0)
                report_check_failed(b->report, "ptrace backend: %zu tasks unreadable (first: %d, %s).", n_unreadable,
                                    (int) unreadable[0].tid, strerror(-unreadable[0].error));
        if (check)
                forest_check(b, f, "ptrace");
        return 0;
}

/* What is measured, in the order of a round: ptrace last, since it stops and restarts every task. */
typedef enum ScanFigure {
        SCAN_ITER_FLOOR,
        SCAN_ITER_FLOOR_OC,
        SCAN_BPF,
        SCAN_PROC_FLOOR,
        SCAN_PTRACE,
        _SCAN_FIGURE_MAX,
} ScanFigure;

static const PassFunc pass_table[_SCAN_FIGURE_MAX] = {
        [SCAN_ITER_FLOOR] = pass_iter_floor,
        [SCAN_ITER_FLOOR_OC] = pass_iter_floor_oc,
        [SCAN_BPF] = pass_bpf,
        [SCAN_PROC_FLOOR] = pass_proc_floor,
        [SCAN_PTRACE] = pass_ptrace,
};

typedef struct Timing {
        double median, min; /* µs per pass */
} Timing;

/* A checked warm-up pass of each figure, then rounds of one pass of each, so that a change in the
 * machine's load meets every figure alike. */
static int measure_all(ScanBench *b, Timing ret[_SCAN_FIGURE_MAX]) {
        static double samples[_SCAN_FIGURE_MAX][BENCH_MAX_PASSES];
        unsigned n = b->opts->passes;
        uint64_t nsec;
        int r;

        for (ScanFigure fig = 0; fig < _SCAN_FIGURE_MAX; fig++) {
                r = pass_table[fig](b, true, &nsec);
                if (r < 0)
                        return r;
        }
        for (unsigned i = 0; i < n; i++)
                for (ScanFigure fig = 0; fig < _SCAN_FIGURE_MAX; fig++) {
                        r = pass_table[fig](b, false, &nsec);
                        if (r < 0)
                                return r;
                        samples[fig][i] = (double) nsec / 1000;
                }
        for (ScanFigure fig = 0; fig < _SCAN_FIGURE_MAX; fig++) {
                ret[fig].median = median(samples[fig], n);
                ret[fig].min = samples[fig][0]; /* sorted by median() */
        }
        return 0;
}

static int add_row(ScanBench *b, size_t tasks, const char *figure, const Timing *t, double ratio,
                   const char *ratio_to, const char *target, Verdict verdict) {
        char note[64];

        snprintf(note, sizeof(note), t->median < 10000 ? "%.2f ms/pass (min %.2f)" : "%.1f ms/pass (min %.1f)",
                 t->median / 1000, t->min / 1000);
        return report_add_value(b->report, tasks, figure, t->median / (double) tasks, "µs/task", ratio, ratio_to,
                                target, verdict, note);
}

static int report_size(ScanBench *b, size_t n, const Timing t[_SCAN_FIGURE_MAX]) {
        double floor = MIN(t[SCAN_ITER_FLOOR].median, t[SCAN_ITER_FLOOR_OC].median);
        double bpf_floor = t[SCAN_BPF].median / floor;
        double ptrace_bpf = t[SCAN_PTRACE].median / t[SCAN_BPF].median;
        double ptrace_proc = t[SCAN_PTRACE].median / t[SCAN_PROC_FLOOR].median;
        int r;

        r = add_row(b, n, "floor: pointer-only iterator", &t[SCAN_ITER_FLOOR], 0, NULL, NULL, VERDICT_NONE);
        if (r >= 0)
                r = add_row(b, n, "floor: the same, open-coded task walk", &t[SCAN_ITER_FLOOR_OC],
                            t[SCAN_ITER_FLOOR_OC].median / t[SCAN_ITER_FLOOR].median, "iterator floor", NULL,
                            VERDICT_NONE);
        if (r >= 0)
                r = add_row(b, n, "floor: /proc/TID/status", &t[SCAN_PROC_FLOOR], 0, NULL, NULL, VERDICT_NONE);
        if (r >= 0)
                r = add_row(b, n, "bpf backend", &t[SCAN_BPF], bpf_floor, "the cheaper floor", "bpf ≤ 3× floor",
                            verdict_for(b->opts, n, bpf_floor, 3, false));
        if (r >= 0)
                r = add_row(b, n, "ptrace backend", &t[SCAN_PTRACE], ptrace_proc, "/proc floor", NULL, VERDICT_NONE);
        if (r >= 0)
                r = report_add(b->report, &(BenchRow) {
                        .figure = "ptrace / bpf",
                        .tasks = n,
                        .value = ptrace_bpf,
                        .unit = "×",
                        .target = "ptrace ≥ 20× bpf",
                        .verdict = verdict_for(b->opts, n, ptrace_bpf, 20, true),
                });
        return r;
}

static int scan_size(ScanBench *b, size_t n) {
        WorkloadOptions wo = {
                .n_tasks = n,
                .threads_per_process = b->opts->threads_per_process,
                .filter_len = b->opts->filter_len,
        };
        Timing t[_SCAN_FIGURE_MAX] = {};
        uint64_t start = now_nsec();
        int r;

        r = workload_new(&wo, &b->w);
        if (r < 0)
                return r;
        log_info("%zu tasks ready in %.0f ms.", n, msec_since(start));
        b->scan = (ScanOptions) { .root = workload_root(b->w), .include_argv = false, .include_exe = false };

        r = measure_all(b, t);
        b->w = workload_free(b->w);
        if (r < 0)
                return r;
        return report_size(b, n, t);
}

int figure_scan_run(const BenchOptions *o, Report *report) {
        _cleanup_(bpf_scanner_freep) BpfScanner *bpf = NULL;
        _cleanup_(iter_floor_freep) IterFloor *floor = NULL, *floor_oc = NULL;
        int r;

        /* Before any workload: the scanner's tracepoints must see every filter being made. */
        r = bpf_scanner_new(&bpf);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the bpf scanner: %m");
        r = iter_floor_new(false, &floor);
        if (r >= 0)
                r = iter_floor_new(true, &floor_oc);
        if (r < 0)
                return r;

        ScanBench b = { .opts = o, .report = report, .bpf = bpf, .floor = floor, .floor_oc = floor_oc };
        for (size_t i = 0; i < o->n_sizes; i++) {
                r = scan_size(&b, o->sizes[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}
