/* sectreed.c: the daemon binary: its verbs and their options; `scan` here, the service from the
 * module it loads for it (sectreed-service.h), so that a scan maps none of the service's libraries */
#include <dlfcn.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>

#include "config.h"
#include "core/budget.h"
#include "core/forest-print.h"
#include "observe/backends.h"
#include "observe/privileges.h"
#include "observe/scanner.h"
#include "sectreed-service.h"
#include "service/manager.h" /* MANAGER_DEFAULT_STATE_DIR */
#include "snapshot/snapshot-json.h"

typedef enum OutputFormat {
        OUTPUT_TREE,
        OUTPUT_JSON,
        _OUTPUT_MAX,
        _OUTPUT_INVALID = -EINVAL,
} OutputFormat;

static const char *const output_format_table[_OUTPUT_MAX] = {
        [OUTPUT_TREE] = "tree",
        [OUTPUT_JSON] = "json",
};

typedef struct Args {
        Backend backend;
        OutputFormat format;
        ScanOptions scan;
        const char *state_dir;
        uint64_t budget_insns;
        const char *restore_executor; /* checked by the service */
} Args;

#define EXIT_USAGE SECTREED_EXIT_USAGE

static void help(void) {
        printf("Usage: sectreed [OPTIONS] [VERB [ARGS...]]\n"
               "\n"
               "The seccomp filter forest daemon.\n"
               "\n"
               "Verbs:\n"
               "  (none)               Run the service: keep the live forest in the state database\n"
               "                       and serve it on the system bus as org.sectree1\n"
               "  scan                 Read the filter forest once, print it and exit\n"
               "\n"
               "Options:\n"
               "  -b --backend=BACKEND bpf (default: exact identity from BPF task iterators)\n"
               "                       or ptrace (PTRACE_SECCOMP_GET_FILTER; identity inferred)\n"
               "     --state-dir=DIR   Where the service keeps state.db (default: %s)\n"
               "     --log-level=LEVEL emerg, alert, crit, err, warning, notice, info (default) or\n"
               "                       debug; SYSTEMD_LOG_LEVEL does the same\n"
               "     --filter-budget=N Keep the instructions of at most N instructions' worth of\n"
               "                       filters per uid other than root (default: %" PRIu64 ", 0: no\n"
               "                       limit); beyond it only their length and digest\n"
               "     --restore-executor=HOW\n"
               "                       How restores start sectree-restore: unit (a transient\n"
               "                       service of systemd), fork, or auto (default: unit when\n"
               "                       systemd runs sectreed as a service, else fork)\n"
               "\n"
               "Options for scan:\n"
               "  -r --root=PID        Only PID and its descendants\n"
               "  -f --format=FORMAT   tree (default) or json (the snapshot format, version 1)\n"
               "     --no-argv         Do not read command lines\n"
               "\n"
               "  -h --help            Show this help\n"
               "     --version         Show the version\n", MANAGER_DEFAULT_STATE_DIR, BUDGET_DEFAULT_INSNS_PER_UID);
}

static OutputFormat output_format_from_string(const char *s) {
        return (OutputFormat) string_table_lookup(output_format_table, _OUTPUT_MAX, s);
}

static int parse_root(const char *s, pid_t *ret) {
        int32_t v;
        if (safe_atoi32(s, &v) < 0 || v <= 0) {
                log_error("Invalid --root=%s: expected a process id > 0.", s);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* A --root that names no process is a failure, not bad usage: a pid is not known until run. */
static int check_root(pid_t root) {
        char path[32];
        snprintf(path, sizeof(path), "/proc/%d", (int) root);
        if (root > 0 && access(path, F_OK) < 0)
                return log_error_errno(-ESRCH, "No process %d (--root=%d).", (int) root, (int) root);
        return 0;
}

enum { ARG_VERSION = 0x100, ARG_NO_ARGV, ARG_STATE_DIR, ARG_LOG_LEVEL, ARG_FILTER_BUDGET, ARG_RESTORE_EXECUTOR };

/* Returns 1 to go on, 0 to exit successfully (help, version), negative on bad usage. */
static int parse_args(int argc, char *argv[], Args *a) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "backend", required_argument, NULL, 'b' },
                { "root", required_argument, NULL, 'r' },
                { "format", required_argument, NULL, 'f' },
                { "no-argv", no_argument, NULL, ARG_NO_ARGV },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "filter-budget", required_argument, NULL, ARG_FILTER_BUDGET },
                { "restore-executor", required_argument, NULL, ARG_RESTORE_EXECUTOR },
                {}
        };
        int c;
        opterr = 0; /* said here, with the hint getopt's own message lacks */
        while ((c = getopt_long(argc, argv, ":hb:r:f:", options, NULL)) >= 0)
                switch (c) {
                case ':':
                        return log_error_errno(-EINVAL, "Option '%s' needs a value (try --help).", argv[optind - 1]);
                case '?': {
                        const char *arg = argv[optind - 1];
                        if (strncmp(arg, "--", 2) == 0 && optopt != 0) /* a long option of ours, given a value */
                                return log_error_errno(-EINVAL, "Option '%.*s' takes no value (try --help).",
                                                       (int) strcspn(arg, "="), arg);
                        if (strncmp(arg, "--", 2) != 0 && optopt > 0)
                                return log_error_errno(-EINVAL, "Unknown option '-%c' (try --help).", optopt);
                        return log_error_errno(-EINVAL, "Unknown option '%s' (try --help).", arg);
                }
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("sectreed %s\n", PACKAGE_VERSION);
                        return 0;
                case 'b':
                        a->backend = backend_from_string(optarg);
                        if (a->backend < 0)
                                return log_error_errno(-EINVAL, "Unknown --backend=%s: expected bpf or ptrace.", optarg);
                        break;
                case 'r':
                        if (parse_root(optarg, &a->scan.root) < 0)
                                return -EINVAL;
                        break;
                case 'f':
                        a->format = output_format_from_string(optarg);
                        if (a->format < 0)
                                return log_error_errno(-EINVAL, "Unknown --format=%s: expected tree or json.", optarg);
                        break;
                case ARG_NO_ARGV:
                        a->scan.include_argv = false;
                        break;
                case ARG_STATE_DIR:
                        if (optarg[0] != '/')
                                return log_error_errno(-EINVAL, "Invalid --state-dir=%s: expected an absolute path.", optarg);
                        a->state_dir = optarg;
                        break;
                case ARG_FILTER_BUDGET:
                        if (safe_atou64(optarg, &a->budget_insns) < 0)
                                return log_error_errno(-EINVAL, "Invalid --filter-budget=%s: expected a number of "
                                                       "instructions (0: no limit).", optarg);
                        break;
                case ARG_RESTORE_EXECUTOR:
                        a->restore_executor = optarg;
                        break;
                case ARG_LOG_LEVEL: {
                        LogLevel l = log_level_from_string(optarg);
                        if (l < 0)
                                return log_error_errno(-EINVAL, "Invalid --log-level=%s: expected emerg, alert, crit, "
                                                       "err, warning, notice, info, debug or 0-7.", optarg);
                        log_set_max_level(l);
                        break;
                }
                default:
                        return -EINVAL;
                }
        return 1;
}

/* What the output shows: the tree names each process by its comm and pid, so that neither its
 * executable nor its command line is read for it (the JSON snapshot has both). */
static ScanOptions verb_scan_options(const Args *a) {
        ScanOptions o = a->scan;

        if (a->format == OUTPUT_TREE) {
                o.include_exe = false;
                o.include_argv = false;
        }
        return o;
}

static int verb_scan(const Args *a) {
        _cleanup_(bpf_scanner_freep) BpfScanner *s = NULL;
        _cleanup_(forest_freep) Forest *f = NULL;
        ScanOptions opts = verb_scan_options(a);
        uint64_t t0 = now_usec(CLOCK_MONOTONIC), t1, t2, t3;
        int r = 0;
        if (a->backend == BACKEND_BPF) {
                r = bpf_scanner_new_with_options(&(BpfScannerOptions) { .oneshot = true, .once = true,
                                                                        .no_argv = !opts.include_argv,
                                                                        .no_exe = !opts.include_exe }, &s);
                if (r < 0)
                        return log_error_errno(r, "Failed to load the BPF programs: %m (--backend=ptrace works without "
                                               "BPF)");
        }
        t1 = now_usec(CLOCK_MONOTONIC);
        r = s ? bpf_scanner_scan(s, &opts, &f) : ptrace_scan_reported(&opts, &f); /* each logs its failures */
        if (r < 0)
                return r;
        t2 = now_usec(CLOCK_MONOTONIC);
        r = forest_renumber(f);
        if (r < 0)
                return log_error_errno(r, "Failed to number the forest: %m");
        t3 = now_usec(CLOCK_MONOTONIC);
        f->snapshot.taken_by_uid = (uint32_t) getuid();
        /* A reader that goes away (`sectreed scan | head`) ends the process as it ends any filter
         * of a pipeline, quietly, where the write would have failed with EPIPE and said so. */
        signal(SIGPIPE, SIG_DFL);
        /* one write per 64 KiB, not one per line of a tree of tens of thousands of processes */
        static char obuf[64 << 10];
        (void) setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
        if (a->format == OUTPUT_JSON)
                r = snapshot_json_write(f, stdout, isatty(STDOUT_FILENO) ? SNAPSHOT_JSON_PRETTY : 0);
        else
                r = forest_print_tree(f, stdout, isatty(STDOUT_FILENO) ? FOREST_PRINT_UNICODE : 0);
        if (r >= 0 && fflush(stdout) != 0)
                r = -errno;
        if (r < 0)
                return log_error_errno(r, "Failed to write the output: %m");
        log_debug("scan: source made in %" PRIu64 " us, scan %" PRIu64 " us, numbering %" PRIu64 " us, output %" PRIu64
                  " us.", t1 - t0, t2 - t1, t3 - t2, now_usec(CLOCK_MONOTONIC) - t3);
        /* The process ends with this verb: the kernel takes back the forest, the scanner's memory
         * and its BPF objects at once, where freeing them one by one first takes milliseconds at
         * tens of thousands of processes. (On failure they are freed as usual.) */
        (void) TAKE_PTR(f);
        (void) TAKE_PTR(s);
        return 0;
}

/* Where the service module is: beside this executable when this one is the build's (the file is
 * owned by the executable's owner and writable by nobody else), else where it is installed. */
static int service_module_path(char **ret) {
        _cleanup_free_ char *exe = NULL, *beside = NULL;
        struct stat exe_st, mod_st;
        char *slash;

        exe = realpath("/proc/self/exe", NULL);
        if (exe && (slash = strrchr(exe, '/')) && stat(exe, &exe_st) >= 0) {
                *slash = 0;
                if (asprintf(&beside, "%s/%s", exe, SECTREED_SERVICE_MODULE) < 0)
                        return log_oom();
                if (stat(beside, &mod_st) >= 0 && S_ISREG(mod_st.st_mode) && mod_st.st_uid == exe_st.st_uid &&
                    !(mod_st.st_mode & (S_IWGRP | S_IWOTH))) {
                        *ret = TAKE_PTR(beside);
                        return 0;
                }
        }
        *ret = strdup(SECTREED_SERVICE_DIR "/" SECTREED_SERVICE_MODULE);
        return *ret ? 0 : log_oom();
}

/* Load the service module and run the service: the status to exit with. */
static int run_service(const Args *a) {
        _cleanup_free_ char *path = NULL;
        if (service_module_path(&path) < 0)
                return EXIT_FAILURE;
        void *module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!module) {
                log_error("Failed to load the service module %s: %s", path, dlerror());
                return EXIT_FAILURE;
        }
        SectreedServiceRun run = (SectreedServiceRun) dlsym(module, SECTREED_SERVICE_RUN);
        if (!run) {
                log_error("The service module %s has no %s().", path, SECTREED_SERVICE_RUN);
                return EXIT_FAILURE;
        }
        return run(&(ServiceArgs) {
                .abi = SECTREED_SERVICE_ABI,
                .version = PACKAGE_VERSION,
                .backend = a->backend,
                .state_dir = a->state_dir,
                .budget_insns = a->budget_insns,
                .restore_executor = a->restore_executor,
                .log_level = log_get_max_level(),
        }); /* the module stays loaded until the process exits */
}

int main(int argc, char *argv[]) {
        Args a = { .backend = BACKEND_BPF, .format = OUTPUT_TREE, .scan = SCAN_OPTIONS_DEFAULT,
                   .budget_insns = BUDGET_DEFAULT_INSNS_PER_UID };

        log_parse_environment();
        int r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : EXIT_USAGE;
        signal(SIGPIPE, SIG_IGN);
        if (privileges_check(a.backend, source_capabilities(a.backend)) < 0)
                return EXIT_FAILURE;
        if (optind >= argc)
                return run_service(&a);
        const char *verb = argv[optind];
        if (!streq(verb, "scan")) {
                log_error("Unknown verb '%s' (try --help).", verb);
                return EXIT_USAGE;
        }
        if (optind + 1 < argc) {
                log_error("Unexpected argument '%s' (try --help).", argv[optind + 1]);
                return EXIT_USAGE;
        }
        if (check_root(a.scan.root) < 0)
                return EXIT_FAILURE;
        return verb_scan(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
