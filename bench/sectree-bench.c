/* sectree-bench.c: measures sectree's figures against their physical floors, side by side in one
 * run, on workloads of real processes it builds and tears down itself */
#include <getopt.h>

#include "figures.h"

/* Sizes the targets are stated for, and those a full run measures. */
#define TARGET_TASKS 10000
#define SMOKE_TASKS 1000
#define DEFAULT_PASSES 5
#define SMOKE_PASSES 3
#define DEFAULT_THREADS_PER_PROCESS 10
#define DEFAULT_FILTER_LEN 50

typedef struct Figure {
        const char *name;
        const char *title; /* the table's heading */
        int (*run)(const BenchOptions *o, Report *report);
} Figure;

/* One entry per figure of issue 5; store, watch latency, snapshot, memory and restore go here
 * as the capabilities they measure land. */
static const Figure figures[] = {
        { "scan", "Figure 1: full scan into the in-memory forest (no argv, exe or other per-task /proc reads)",
          figure_scan_run },
};

static const Figure *figure_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(figures); i++)
                if (streq(figures[i].name, name))
                        return &figures[i];
        return NULL;
}

static void help(void) {
        printf("sectree-bench [OPTIONS...]\n\n"
               "Measure sectree's figures against their floors on workloads of real processes.\n"
               "Needs root (BPF iterators, ptrace).\n\n"
               "  -h --help                 Show this help\n"
               "     --smoke                Smallest size (%d tasks), %d passes: checks that every figure works\n"
               "     --only=NAME            Run one figure only\n"
               "     --tasks=N[,N...]       Workload sizes (default 1000,5000,%d)\n"
               "     --passes=N             Measured passes after the warm-up (default %d; median reported)\n"
               "     --threads-per-process=N  Tasks per workload process, leader included (default %d)\n"
               "     --filter-len=N         Instructions per filter (default %d)\n"
               "  -v --verbose              Log debug messages (the backends' own timings)\n\n"
               "Figures:\n",
               SMOKE_TASKS, SMOKE_PASSES, TARGET_TASKS, DEFAULT_PASSES, DEFAULT_THREADS_PER_PROCESS,
               DEFAULT_FILTER_LEN);
        for (size_t i = 0; i < ELEMENTSOF(figures); i++)
                printf("  %-8s %s\n", figures[i].name, figures[i].title);
}

static int parse_size(const char *s, const char *what, size_t min, size_t max, size_t *ret) {
        uint64_t v;

        if (safe_atou64(s, &v) < 0 || v < min || v > max)
                return log_error_errno(-EINVAL, "Invalid %s (%zu..%zu): %s", what, min, max, s);
        *ret = (size_t) v;
        return 0;
}

static int parse_sizes(const char *arg, BenchOptions *o) {
        _cleanup_free_ char *copy = strdup(arg);
        char *save = NULL;

        if (!copy)
                return log_oom();
        o->n_sizes = 0;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (o->n_sizes >= BENCH_MAX_SIZES)
                        return log_error_errno(-E2BIG, "At most %d sizes.", BENCH_MAX_SIZES);
                int r = parse_size(w, "task count", 2, 1000000, &o->sizes[o->n_sizes]);
                if (r < 0)
                        return r;
                o->n_sizes++;
        }
        return o->n_sizes > 0 ? 0 : log_error_errno(-EINVAL, "No task count given.");
}

enum {
        ARG_SMOKE = 0x100,
        ARG_ONLY,
        ARG_TASKS,
        ARG_PASSES,
        ARG_THREADS_PER_PROCESS,
        ARG_FILTER_LEN,
};

/* 1: run, 0: exit successfully (--help), negative errno: bad arguments. */
static int parse_argv(int argc, char *argv[], BenchOptions *o, const Figure **ret_only) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "verbose", no_argument, NULL, 'v' },
                { "smoke", no_argument, NULL, ARG_SMOKE },
                { "only", required_argument, NULL, ARG_ONLY },
                { "tasks", required_argument, NULL, ARG_TASKS },
                { "passes", required_argument, NULL, ARG_PASSES },
                { "threads-per-process", required_argument, NULL, ARG_THREADS_PER_PROCESS },
                { "filter-len", required_argument, NULL, ARG_FILTER_LEN },
                {},
        };
        bool sizes_given = false, passes_given = false;
        size_t passes;
        int c, r = 0;

        *o = (BenchOptions) {
                .sizes = { 1000, 5000, TARGET_TASKS },
                .n_sizes = 3,
                .target_size = TARGET_TASKS,
                .passes = DEFAULT_PASSES,
                .threads_per_process = DEFAULT_THREADS_PER_PROCESS,
                .filter_len = DEFAULT_FILTER_LEN,
        };
        *ret_only = NULL;

        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'v':
                        log_set_max_level(LOG_LEVEL_DEBUG);
                        break;
                case ARG_SMOKE:
                        o->smoke = true;
                        break;
                case ARG_ONLY:
                        *ret_only = figure_find(optarg);
                        if (!*ret_only)
                                return log_error_errno(-EINVAL, "No figure named '%s' (see --help).", optarg);
                        break;
                case ARG_TASKS:
                        r = parse_sizes(optarg, o);
                        sizes_given = true;
                        break;
                case ARG_PASSES:
                        r = parse_size(optarg, "pass count", 1, BENCH_MAX_PASSES, &passes);
                        o->passes = (unsigned) passes;
                        passes_given = true;
                        break;
                case ARG_THREADS_PER_PROCESS:
                        r = parse_size(optarg, "thread count", 1, 4096, &o->threads_per_process);
                        break;
                case ARG_FILTER_LEN:
                        r = parse_size(optarg, "filter length", 8, 261, &o->filter_len);
                        break;
                default:
                        return -EINVAL;
                }
                if (r < 0)
                        return r;
        }
        if (optind < argc)
                return log_error_errno(-EINVAL, "Unexpected argument: %s", argv[optind]);

        if (o->smoke && !sizes_given) {
                o->sizes[0] = SMOKE_TASKS;
                o->n_sizes = 1;
        }
        if (o->smoke && !passes_given)
                o->passes = SMOKE_PASSES;
        return 1;
}

static void print_command(int argc, char *argv[]) {
        printf("command:");
        for (int i = 0; i < argc; i++)
                printf(" %s", argv[i]);
        printf("\n");
}

static double elapsed_sec(uint64_t start) {
        return (double) (now_nsec() - start) / 1e9;
}

static int run_figure(const Figure *fig, const BenchOptions *o, unsigned *n_miss, unsigned *n_check_failed) {
        Report report;
        uint64_t start = now_nsec();
        int r;

        report_init(&report, fig->title);
        r = fig->run(o, &report);
        if (r >= 0) {
                report_print(&report, stdout);
                printf("(%s: %.1f s)\n", fig->name, elapsed_sec(start));
        }
        *n_miss += report.n_miss;
        *n_check_failed += report.n_check_failed;
        report_deinit(&report);
        return r;
}

int main(int argc, char *argv[]) {
        const Figure *only;
        BenchOptions o;
        unsigned n_miss = 0, n_check_failed = 0, n_failed = 0;
        int r;

        r = parse_argv(argc, argv, &o, &only);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (geteuid() != 0) {
                log_error("sectree-bench needs root (BPF iterators, ptrace).");
                return EXIT_FAILURE;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);

        print_command(argc, argv);
        machine_facts_print(stdout);
        printf("workload: a root process with a shared filter; processes of %zu tasks each; every other task adds "
               "a private filter; %zu instructions per filter; median of %u passes after a warm-up\n",
               o.threads_per_process, o.filter_len, o.passes);
        printf("targets: judged at %zu tasks; (PASS) and (MISS) at other sizes are for information\n", o.target_size);

        for (size_t i = 0; i < ELEMENTSOF(figures); i++) {
                if (only && only != &figures[i])
                        continue;
                r = run_figure(&figures[i], &o, &n_miss, &n_check_failed);
                if (r < 0) {
                        log_error_errno(r, "Figure %s failed: %m", figures[i].name);
                        n_failed++;
                }
        }

        printf("%u target(s) missed, %u check(s) failed, %u figure(s) failed\n", n_miss, n_check_failed, n_failed);
        /* A missed target is a finding, not a failure; a wrong result or a broken figure is. */
        return n_failed > 0 || n_check_failed > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
