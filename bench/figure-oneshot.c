/* figure-oneshot.c: figure 7, `sectreed scan` as a user runs it: a whole process, from start to
 * exit, with both backends, against a process that only loads and runs the pointer-only iterator */
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "figures.h"
#include "iter-floor.h"
#include "snapshot/snapshot.h"
#include "workload.h"

/*
 * Each measurement is a process, timed from posix_spawn() to its exit status (with the CPU time it
 * took, user and system: the scan's over the machine's CPUs is the least wall time it could have),
 * stdout and stderr to /dev/null:
 *   - floor: sectree-iter-floor (bench/floor-oneshot.c), which loads bpf/floor.bpf.c, runs one
 *     pass of it over every task and exits: what any one-shot BPF scanner pays to exist at all
 *     (exec, libraries, loading a program, one pass, exit). It loads through a light skeleton, as
 *     `sectreed scan` does: the kernel resolves the CO-RE relocations from the BTF it holds, and the
 *     process reads none of it (libbpf's skeleton reads and parses ~5 MiB of it first, 10 ms: with
 *     that, the scan measured 0.86x its floor). Its chain walk is a bpf_loop(), whose body the
 *     verifier checks once as it does the scanner's own loops (a plain bounded loop had the verifier
 *     walk it to its bound), and which names no kfunc the load would look up in the kernel's BTF
 *     (an open-coded bpf_iter_num loop has three: 0.7 ms more); the load's own time (open, load,
 *     attach, in this process) is a row of its own;
 *   - the same floor in its open-coded form (`sectree-iter-floor --open-coded`, bpf/floor-oc.bpf.c):
 *     one run of the program walks every thread itself (bpf_iter_task_*), without the task
 *     iterator's lookup and reference of each task: half the walk at 20,000 tasks, but three kfuncs
 *     looked up by name at load, some milliseconds. The cheaper of the two at each size is the
 *     floor the ratios are taken to;
 *   - `sectreed scan --no-argv`, the bpf backend, whole machine, tree output;
 *   - `sectreed scan --backend=ptrace --no-argv`, the same with the ptrace backend.
 * First with no workload at all (the machine's own tasks: the "idle machine" the one-shot target
 * is stated for), then with each workload size, then with single-thread processes (the shape where
 * per-process costs show), at 5,000 and at 20,000 of them. A checked warm-up of each comes first: both backends scan the
 * workload's subtree (--root, --format=json) and the file must read back as the workload. Then
 * rounds of one run of each; the median is reported.
 */

#define FLOOR_TARGET 1.5   /* bpf one-shot ≤ 1.5× the floor process, on an idle machine */
#define FLOOR_TARGET_BUSY 3.0 /* ≤ 3× at ONESHOT_BUSY_PROCESSES single-thread processes */
#define ONESHOT_BUSY_PROCESSES 20000
#define PTRACE_TARGET 4.0  /* ptrace one-shot ≥ 4× the bpf one, at ONESHOT_PROCESSES processes */
#define ONESHOT_PROCESSES 5000
#define RUN_TIMEOUT_SEC 300

typedef enum OneshotKind {
        ONESHOT_FLOOR,
        ONESHOT_FLOOR_OC, /* the floor's open-coded form (sectree-iter-floor --open-coded) */
        ONESHOT_BPF,
        ONESHOT_PTRACE,
        ONESHOT_BEFORE, /* only with $SECTREED_BEFORE */
        _ONESHOT_KIND_MAX,
} OneshotKind;

typedef struct OneshotBench {
        const BenchOptions *opts;
        Report *report;
        const char *sectreed, *floor, *before;
} OneshotBench;

/* Run argv to its end with stdout into out_fd and stderr into err_fd (-1: /dev/null); the time
 * from spawn to exit, and the CPU time it took (user and system, its threads' all; ret_cpu_msec
 * may be NULL). */
static int run_process_err(char *const argv[], int out_fd, int err_fd, double *ret_msec, double *ret_cpu_msec) {
        struct rusage ru;
        posix_spawn_file_actions_t fa;
        int status, r;
        pid_t pid;

        r = posix_spawn_file_actions_init(&fa);
        if (r != 0)
                return -r;
        if (out_fd >= 0)
                r = posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
        else
                r = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        if (r == 0 && err_fd >= 0)
                r = posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
        else if (r == 0)
                r = posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        if (r != 0) {
                posix_spawn_file_actions_destroy(&fa);
                return -r;
        }
        uint64_t start = now_nsec();
        r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                return log_error_errno(-r, "Failed to start %s: %m", argv[0]);
        while (wait4(pid, &status, 0, &ru) < 0)
                if (errno != EINTR)
                        return log_error_errno(-errno, "Failed to wait for %s: %m", argv[0]);
        *ret_msec = msec_since(start);
        if (ret_cpu_msec)
                *ret_cpu_msec = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                                (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return log_error_errno(-EPROTO, "%s %s failed (status 0x%x).", argv[0], argv[1] ?: "", status);
        return 0;
}

static int run_process(char *const argv[], int out_fd, double *ret_msec) {
        return run_process_err(argv, out_fd, -1, ret_msec, NULL);
}

/* Where one `sectreed --log-level=debug scan --no-argv` of this build spent its time, as it logs
 * it (daemon/sectreed.c's verb_scan, observe/scan-bpf-load.c): ms. */
typedef struct OneshotSplit {
        double process, load, source, scan, numbering, output;
} OneshotSplit;

static int measure_split(OneshotBench *b, OneshotSplit *ret) {
        _cleanup_close_ int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        char *argv[] = { (char *) b->sectreed, (char *) "--log-level=debug", (char *) "scan", (char *) "--no-argv",
                         NULL };
        unsigned long load = 0, source, scan, numbering, output;
        char text[16384];
        const char *p;
        ssize_t n;
        int r;

        if (fd < 0)
                return log_error_errno(-errno, "Failed to create a temporary file: %m");
        r = run_process_err(argv, -1, fd, &ret->process, NULL);
        if (r < 0)
                return r;
        n = pread(fd, text, sizeof(text) - 1, 0);
        if (n < 0)
                return -errno;
        text[n] = 0;
        if ((p = strstr(text, "Scan BPF programs loaded in ")))
                (void) sscanf(p, "Scan BPF programs loaded in %lu us", &load);
        p = strstr(text, "scan: source made in ");
        if (!p || sscanf(p, "scan: source made in %lu us, scan %lu us, numbering %lu us, output %lu us", &source, &scan,
                         &numbering, &output) != 4)
                return log_debug_errno(-EBADMSG, "%s did not log its phases.", b->sectreed);
        ret->load = load / 1000.0;
        ret->source = source / 1000.0;
        ret->scan = scan / 1000.0;
        ret->numbering = numbering / 1000.0;
        ret->output = output / 1000.0;
        return 0;
}

static int report_split(OneshotBench *b, size_t tasks) {
        OneshotSplit t;
        char note[160];
        int r = measure_split(b, &t);
        if (r == -EBADMSG)
                return 0; /* another build's ($SECTREED), which does not log them: no row */
        if (r < 0)
                return r;
        snprintf(note, sizeof(note), "one run of %.1f ms: load %.1f (source %.1f), pass and forest %.1f, numbering %.1f, "
                 "output %.1f ms", t.process, t.load, t.source, t.scan, t.numbering, t.output);
        return report_add_ms(b->report, tasks, "sectreed scan: its phases (-v)", t.source + t.scan + t.numbering + t.output,
                             0, NULL, NULL, VERDICT_NONE, note);
}

static int run_kind(OneshotBench *b, OneshotKind kind, double *ret_msec, double *ret_cpu_msec) {
        char *floor[] = { (char *) b->floor, NULL };
        char *floor_oc[] = { (char *) b->floor, (char *) "--open-coded", NULL };
        char *bpf[] = { (char *) b->sectreed, (char *) "scan", (char *) "--no-argv", NULL };
        char *ptrace[] = { (char *) b->sectreed, (char *) "scan", (char *) "--backend=ptrace", (char *) "--no-argv",
                           NULL };
        char *before[] = { (char *) b->before, (char *) "scan", (char *) "--no-argv", NULL };
        char *const *table[_ONESHOT_KIND_MAX] = { [ONESHOT_FLOOR] = floor, [ONESHOT_FLOOR_OC] = floor_oc, [ONESHOT_BPF] = bpf, [ONESHOT_PTRACE] = ptrace,
                                                  [ONESHOT_BEFORE] = before };

        return run_process_err(table[kind], -1, -1, ret_msec, ret_cpu_msec);
}

static bool kind_runs(const OneshotBench *b, OneshotKind kind) {
        return kind != ONESHOT_BEFORE || b->before;
}

#define CHECK_ATTEMPTS 3

/* The workload's subtree as backend scans it, read back from the JSON it prints: 1 if it matches
 * the workload, 0 if not (why says how). */
static int scan_matches(OneshotBench *b, Workload *w, const char *backend, char *why, size_t size) {
        _cleanup_free_ char *root = NULL, *be = NULL;
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        double msec;
        int r;

        if (fd < 0)
                return log_error_errno(-errno, "Failed to create a temporary file: %m");
        if (asprintf(&root, "--root=%d", (int) workload_root(w)) < 0 || asprintf(&be, "--backend=%s", backend) < 0)
                return log_oom();
        char *argv[] = { (char *) b->sectreed, (char *) "scan", be, root, (char *) "--format=json", (char *) "--no-argv",
                         NULL };
        r = run_process(argv, fd, &msec);
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        r = snapshot_read_any(fd, &f, &error);
        if (r < 0) {
                snprintf(why, size, "its JSON does not read back: %s", error ?: strerror(-r));
                return 0;
        }
        return workload_matches_forest(w, f, why, size);
}

/* A task another tracer holds for a moment (another ptrace scanner on a shared machine) cannot be
 * read by the ptrace backend: a mismatch is checked again before it counts. */
static int check_backend(OneshotBench *b, Workload *w, const char *backend) {
        char why[160];
        int r = 0;

        for (unsigned i = 0; i < CHECK_ATTEMPTS && r == 0; i++)
                r = scan_matches(b, w, backend, why, sizeof(why));
        if (r == 0)
                report_check_failed(b->report, "sectreed scan --backend=%s, %zu tasks: %s.", backend,
                                    workload_n_tasks(w), why);
        return r < 0 ? r : 0;
}

typedef struct OneshotTimes {
        double msec[_ONESHOT_KIND_MAX];
        double cpu_msec[_ONESHOT_KIND_MAX]; /* user and system, medians */
} OneshotTimes;

/* The kinds measured side by side, in rounds; the ptrace scan after them, in rounds of its own:
 * it stops and resumes every process of the workload, and the machine's memory monitor (DAMON,
 * kdamond.0) then took a sixth of a CPU for seconds (83 ticks in 5 s against 28), which the next
 * runs shared. Measured in the same rounds, the figures of the scan at 20,000 processes were
 * 58-67 ms where the same builds took 44-52 ms between ptrace scans that came seconds apart. */
static const OneshotKind side_by_side[] = { ONESHOT_FLOOR, ONESHOT_FLOOR_OC, ONESHOT_BPF, ONESHOT_BEFORE };

static int measure_kinds(OneshotBench *b, const OneshotKind *kinds, size_t n_kinds,
                         double samples[][BENCH_MAX_PASSES], double cpu_samples[][BENCH_MAX_PASSES]) {
        unsigned n = b->opts->passes;
        double msec, cpu;
        int r;

        for (size_t j = 0; j < n_kinds; j++) /* a warm-up run of each */
                if (kind_runs(b, kinds[j]) && (r = run_kind(b, kinds[j], &msec, &cpu)) < 0)
                        return r;
        /* Each round starts one kind later, so that no kind always runs right after the same
         * other. */
        for (unsigned i = 0; i < n; i++)
                for (size_t j = 0; j < n_kinds; j++) {
                        OneshotKind k = kinds[(i + j) % n_kinds];
                        if (kind_runs(b, k) && (r = run_kind(b, k, &samples[k][i], &cpu_samples[k][i])) < 0)
                                return r;
                }
        return 0;
}

static int measure(OneshotBench *b, Workload *w, OneshotTimes *ret) {
        static double samples[_ONESHOT_KIND_MAX][BENCH_MAX_PASSES], cpu_samples[_ONESHOT_KIND_MAX][BENCH_MAX_PASSES];
        const OneshotKind ptrace = ONESHOT_PTRACE;
        int r;

        r = w ? check_backend(b, w, "bpf") : 0;
        if (r >= 0)
                r = measure_kinds(b, side_by_side, ELEMENTSOF(side_by_side), samples, cpu_samples);
        if (r >= 0 && w)
                r = check_backend(b, w, "ptrace");
        if (r >= 0)
                r = measure_kinds(b, &ptrace, 1, samples, cpu_samples);
        if (r < 0)
                return r;
        for (OneshotKind k = 0; k < _ONESHOT_KIND_MAX; k++) {
                ret->msec[k] = kind_runs(b, k) ? median(samples[k], b->opts->passes) : 0;
                ret->cpu_msec[k] = kind_runs(b, k) ? median(cpu_samples[k], b->opts->passes) : 0;
        }
        return 0;
}

/* The floor: the cheaper of its two forms at this size (the open-coded walk's three kfuncs cost
 * more to load than it saves on a machine of few tasks, less than it saves on one of many). */
static OneshotKind floor_kind(const OneshotTimes *t) {
        return t->msec[ONESHOT_FLOOR_OC] < t->msec[ONESHOT_FLOOR] ? ONESHOT_FLOOR_OC : ONESHOT_FLOOR;
}

static Verdict verdict(bool judged, bool pass) {
        Verdict v = pass ? VERDICT_PASS : VERDICT_MISS;
        return judged ? v : verdict_info(v);
}

/* What the scan's CPU time allows at best: spread over every CPU of the machine, with none idle
 * from exec to exit, the process could not end sooner than its CPU time over the CPUs. Against
 * the floor process's wall time: when that is already above a target's ratio, no parallelism
 * reaches the target and only less work can. */
static int report_cpu(OneshotBench *b, size_t tasks, const OneshotTimes *t) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        double least = t->cpu_msec[ONESHOT_BPF] / (double) (cpus > 0 ? cpus : 1);
        char note[128];

        snprintf(note, sizeof(note), "CPU %.1f ms (user + system) over %ld CPUs; the floor's CPU %.1f ms",
                 t->cpu_msec[ONESHOT_BPF], cpus, t->cpu_msec[floor_kind(t)]);
        return report_add_ms(b->report, tasks, "sectreed scan: its CPU over the CPUs (the least wall time)", least,
                             least / t->msec[floor_kind(t)], "floor", NULL, VERDICT_NONE, note);
}

/* Rows of one workload: tasks (0: none), shape names it; judge_floor / judge_ptrace: the target
 * is judged on this row; busy: the row of the 20,000 processes, whose target is FLOOR_TARGET_BUSY. */
static int report_times(OneshotBench *b, size_t tasks, const char *shape, const OneshotTimes *t, bool judge_floor,
                        bool judge_ptrace, bool busy) {
        double limit = busy ? FLOOR_TARGET_BUSY : FLOOR_TARGET;
        double floor = t->msec[floor_kind(t)], bpf = t->msec[ONESHOT_BPF], ptrace = t->msec[ONESHOT_PTRACE];
        size_t machine = 0;
        char note[96];
        int r;

        (void) count_machine_tasks(&machine);
        snprintf(note, sizeof(note), "%s; %zu tasks on the machine", shape, machine);
        r = report_add_ms(b->report, tasks, "floor: iterator process", t->msec[ONESHOT_FLOOR], 0, NULL, NULL,
                          VERDICT_NONE, note);
        if (r >= 0)
                r = report_add_ms(b->report, tasks, "floor: open-coded task walk process", t->msec[ONESHOT_FLOOR_OC],
                                  t->msec[ONESHOT_FLOOR_OC] / t->msec[ONESHOT_FLOOR], "iterator process", NULL,
                                  VERDICT_NONE,
                                  floor_kind(t) == ONESHOT_FLOOR_OC ? "the floor here" : "the iterator process is the floor here");
        if (r >= 0)
                r = report_add_ms(b->report, tasks, "sectreed scan --no-argv (bpf)", bpf, bpf / floor, "floor",
                                  busy ? "≤ 3× floor (20000 processes)" : "≤ 1.5× floor (idle machine)",
                                  verdict(judge_floor, bpf / floor <= limit), NULL);
        if (r >= 0)
                r = report_cpu(b, tasks, t);
        if (r >= 0)
                r = report_split(b, tasks);
        if (r >= 0 && b->before)
                r = report_add_ms(b->report, tasks, "before: sectreed scan --no-argv (bpf)", t->msec[ONESHOT_BEFORE],
                                  t->msec[ONESHOT_BEFORE] / floor, "floor", NULL, VERDICT_NONE, "$SECTREED_BEFORE");
        if (r >= 0)
                /* The iterator process is the floor of a BPF scanner: not of a ptrace one, which loads no
                 * program and, on an idle machine, can end before it. */
                r = report_add_ms(b->report, tasks, "sectreed scan --no-argv --backend=ptrace", ptrace, 0, NULL,
                                  NULL, VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add(b->report, &(BenchRow) {
                        .figure = "ptrace / bpf", .tasks = tasks, .value = ptrace / bpf, .unit = "×",
                        .target = "ptrace ≥ 4× bpf (5000 processes)",
                        .verdict = verdict(judge_ptrace, ptrace / bpf >= PTRACE_TARGET),
                });
        return r;
}

static int measure_workload(OneshotBench *b, size_t n_tasks, size_t threads_per_process, bool judge_ptrace,
                            bool busy) {
        _cleanup_(workload_freep) Workload *w = NULL;
        WorkloadOptions wo = {
                .n_tasks = n_tasks,
                .threads_per_process = threads_per_process,
                .filter_len = b->opts->filter_len,
        };
        OneshotTimes t;
        char shape[64];
        int r;

        r = workload_new(&wo, &w);
        if (r >= 0)
                r = measure(b, w, &t);
        if (r < 0)
                return r;
        snprintf(shape, sizeof(shape), "%zu processes of %zu tasks", (n_tasks + threads_per_process - 1) /
                 threads_per_process, threads_per_process);
        return report_times(b, n_tasks, shape, &t, busy, judge_ptrace, busy);
}

/* The floor program's own load (open, verify, attach), in this process, in the form open_coded or
 * not: the median of the passes. */
static int report_floor_load(OneshotBench *b, bool open_coded) {
        static double samples[BENCH_MAX_PASSES];
        unsigned n = b->opts->passes;
        int r;

        for (unsigned i = 0; i <= n; i++) { /* the first warms up */
                _cleanup_(iter_floor_freep) IterFloor *f = NULL;
                r = iter_floor_new(open_coded, &f);
                if (r < 0)
                        return r;
                if (i > 0)
                        samples[i - 1] = iter_floor_load_msec(f);
        }
        return report_add_ms(b->report, 0,
                             open_coded ? "floor: the open-coded walk's load" : "floor: its program's load (open, verify, attach)",
                             median(samples, n), 0, NULL, NULL, VERDICT_NONE,
                             open_coded ? "three kfuncs looked up by name" : "bpf_loop() chain walk");
}

int figure_oneshot_run(const BenchOptions *o, Report *report) {
        OneshotBench b = {
                .opts = o,
                .report = report,
                .sectreed = getenv("SECTREED") ?: SECTREED_PATH,
                .floor = getenv("SECTREE_ITER_FLOOR") ?: ITER_FLOOR_PATH,
                .before = getenv("SECTREED_BEFORE"),
        };
        size_t single = o->smoke ? o->sizes[0] : ONESHOT_PROCESSES;
        OneshotTimes t;
        int r;

        if (access(b.sectreed, X_OK) < 0 || access(b.floor, X_OK) < 0)
                return log_error_errno(-errno, "Cannot run %s or %s (build them: ninja -C build): %m", b.sectreed,
                                       b.floor);
        if (b.before && access(b.before, X_OK) < 0)
                return log_error_errno(-errno, "Cannot run $SECTREED_BEFORE (%s): %m", b.before);
        r = report_floor_load(&b, false);
        if (r >= 0)
                r = report_floor_load(&b, true);
        if (r >= 0)
                r = measure(&b, NULL, &t);
        if (r >= 0)
                r = report_times(&b, 0, "no workload", &t, true, false, false);
        for (size_t i = 0; r >= 0 && i < o->n_sizes; i++)
                r = measure_workload(&b, o->sizes[i], o->threads_per_process, false, false);
        if (r >= 0)
                r = measure_workload(&b, single, 1, single == ONESHOT_PROCESSES, false);
        if (r >= 0 && !o->smoke)
                r = measure_workload(&b, ONESHOT_BUSY_PROCESSES, 1, false, true);
        return r;
}
