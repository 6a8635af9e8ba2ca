/* figure-restore.c: restore: the plan of a snapshot of the workload, and its execution by
 * sectree-restore with the verification (a bpf scan of the restored tree compared with the
 * snapshot), against the floor of forking the same process and thread tree without filters */
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "figures.h"
#include "observe/scanner.h"
#include "plan/plan-protocol.h"
#include "plan/plan-verify.h"
#include "plan/plan.h"
#include "snapshot/snapshot.h"
#include "workload.h"

/*
 * For each size (100 and 1,000 tasks, with --smoke too), the workload is built and
 * scanned (bpf, its subtree): that is the snapshot. Then, after one warm-up pass each:
 *   - plan: plan_build() of the snapshot as root (every system call checked, the model run);
 *   - execute + verify: sectree-restore started (fork + exec, as root) with the snapshot in a
 *     memfd, until READY and every fd came back, then a bpf scan of the restored subtree and
 *     plan_verify(): what a verified restore costs the daemon; the restore is released after (not
 *     timed), and a pass that does not verify is a failed check;
 *   - release: closing the socket until the executor has ended every task and exited;
 *   - the floors: sectree-fork-floor (bench/fork-floor.c), a tiny process that is the root of the
 *     same tree (the same processes of the same tasks, every task blocking), timed from its spawn
 *     until every task is there: plainly, and with the workload's filters (the shared one
 *     installed once by the root, a private one by every task of an odd index: the installs a
 *     restore of it makes). A floor forked from this large process would pay for copying its page
 *     tables each fork and not be a floor.
 * Then the same for 1,000 and 4,000 single-thread processes (not with --smoke).
 * Targets: execute + verify <= 2x the fork+filter floor (and <= 1 s at 1,000 tasks), and its time
 * and the release's linear in N (exponent <= 1.1 from 1,000 to 4,000 processes).
 */

#define RESTORE_TARGET_MSEC 1000.0 /* at RESTORE_TARGET_TASKS */
#define RESTORE_TARGET_TASKS 1000
#define RESTORE_TARGET_RATIO 2.0    /* to the fork+filter floor */
#define RESTORE_LINEAR_EXPONENT 1.1
#define FRAME_TIMEOUT_USEC (120 * 1000000ULL)

extern char **environ;

static const char *executor_path(void) {
        const char *e = getenv("SECTREE_RESTORE");
        return e && *e ? e : SECTREE_RESTORE_BUILD_PATH;
}

/* ---- the floors: the same tree forked by a tiny process ---- */

static const char *fork_floor_path(void) {
        const char *e = getenv("SECTREE_FORK_FLOOR");
        return e && *e ? e : FORK_FLOOR_PATH;
}

/* sectree-fork-floor (bench/fork-floor.c) as the root of the workload's tree of n_tasks tasks in
 * processes of per_process, with the workload's filters of filter_len instructions (0: none): ms
 * from its spawn to its "ready" line; and in *ret_end_msec the ms it took to end and reap them, as
 * it says. */
static int floor_fork_tree(size_t n_tasks, size_t per_process, size_t filter_len, double *ret_msec,
                           double *ret_end_msec) {
        char tasks[32], threads[32], len[32], line[16], rest[64] = {};
        char *argv[] = { (char *) fork_floor_path(), tasks, threads, len, NULL };
        posix_spawn_file_actions_t fa;
        int p[2], status, r;
        uint64_t start;
        ssize_t k;
        pid_t pid;

        snprintf(tasks, sizeof(tasks), "%zu", n_tasks);
        snprintf(threads, sizeof(threads), "%zu", per_process);
        snprintf(len, sizeof(len), "%zu", filter_len);
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        r = posix_spawn_file_actions_init(&fa);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        start = now_nsec();
        if (r == 0)
                r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        if (r != 0) {
                close(p[0]);
                return log_error_errno(-r, "Failed to start %s: %m", argv[0]);
        }
        do
                k = read(p[0], line, sizeof(line));
        while (k < 0 && errno == EINTR);
        *ret_msec = msec_since(start);
        for (size_t got = 0; k == 6 && got < sizeof(rest) - 1;) {
                ssize_t m = read(p[0], rest + got, sizeof(rest) - 1 - got);
                if (m < 0 && errno == EINTR)
                        continue;
                if (m <= 0)
                        break;
                got += (size_t) m;
        }
        close(p[0]);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (k != 6 || memcmp(line, "ready\n", 6) != 0 || sscanf(rest, "ended %lf", ret_end_msec) != 1 ||
            !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return log_error_errno(-EIO, "%s %s %s %s failed (status 0x%x).", argv[0], tasks, threads, len,
                                       status);
        return 0;
}

/* ---- one restore through the executor ---- */

typedef struct Run {
        pid_t executor;
        int sock;
        json_t *ready;
        int *fds;
        size_t n_fds;
} Run;

static void run_done(Run *r) {
        for (size_t i = 0; i < r->n_fds; i++)
                close(r->fds[i]);
        free(r->fds);
        json_decref(r->ready);
        if (r->sock >= 0)
                close(r->sock); /* the executor ends every stub */
        if (r->executor > 0)
                (void) waitpid(r->executor, NULL, 0);
        *r = (Run) { .sock = -1 };
}

static int start_executor(Run *r, int memfd) {
        int pair[2], exe = open(executor_path(), O_RDONLY | O_CLOEXEC);
        char request[64];
        if (exe < 0)
                return log_error_errno(-errno, "Cannot open the executor %s: %m", executor_path());
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                close(exe);
                return -errno;
        }
        r->executor = fork();
        if (r->executor == 0) {
                char *argv[] = { (char *) "sectree-restore", NULL };
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null < 0 || dup2(pair[1], STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
                    dup2(null, STDERR_FILENO) < 0 || (exe != 3 && dup3(exe, 3, O_CLOEXEC) < 0) ||
                    close_range(4, ~0U, 0) < 0)
                        _exit(126);
                fexecve(3, argv, environ);
                _exit(127);
        }
        close(exe);
        close(pair[1]);
        r->sock = pair[0];
        if (r->executor < 0)
                return -errno;
        snprintf(request, sizeof(request), "{\"version\":%d}", RESTORE_PROTOCOL_VERSION);
        return restore_frame_send(r->sock, RESTORE_FRAME_REQUEST, request, strlen(request), &memfd, 1);
}

/* READY and every fd after it; an ERROR is -EPROTO. */
static int read_ready(Run *r) {
        RestoreFrame f = {};
        size_t n;
        int k = restore_frame_recv(r->sock, FRAME_TIMEOUT_USEC, &f);
        if (k < 0)
                return k;
        if (f.type != RESTORE_FRAME_READY) {
                log_error("sectree-restore: %s", f.payload ?: "no READY");
                restore_frame_done(&f);
                return -EPROTO;
        }
        r->ready = json_loads(f.payload, 0, NULL);
        restore_frame_done(&f);
        if (!r->ready)
                return -EBADMSG;
        n = (size_t) json_integer_value(json_object_get(r->ready, "n_fds"));
        r->fds = calloc(n + 1, sizeof(int));
        if (!r->fds)
                return -ENOMEM;
        while (r->n_fds < n) {
                k = restore_frame_recv(r->sock, FRAME_TIMEOUT_USEC, &f);
                if (k < 0)
                        return k;
                if (f.type != RESTORE_FRAME_FDS || r->n_fds + f.n_fds > n) {
                        restore_frame_done(&f);
                        return -EBADMSG;
                }
                memcpy(r->fds + r->n_fds, f.fds, f.n_fds * sizeof(int));
                r->n_fds += f.n_fds;
                f.n_fds = 0;
                restore_frame_done(&f);
        }
        return 0;
}

static int mapping_of(json_t *ready, PlanMapping *map) {
        json_t *x;
        size_t i;
        int k = 0;
        map->root_pid = (pid_t) json_integer_value(json_object_get(ready, "restore_root"));
        json_array_foreach(json_object_get(ready, "processes"), i, x)
                if (k >= 0)
                        k = plan_mapping_add_process(map, (pid_t) json_integer_value(json_object_get(x, "snapshot_pid")),
                                                     (pid_t) json_integer_value(json_object_get(x, "pid")));
        json_array_foreach(json_object_get(ready, "threads"), i, x)
                if (k >= 0)
                        k = plan_mapping_add_thread(map, (pid_t) json_integer_value(json_object_get(x, "snapshot_tid")),
                                                    (pid_t) json_integer_value(json_object_get(x, "tid")));
        return k;
}

/* One verified restore: ms from the executor's start to the verification's answer; then its
 * release: ms from closing the socket until the executor has ended every task and exited. */
static int restore_once(BpfScanner *bpf, const Forest *snapshot, int memfd, double *ret_msec, double *ret_release_msec,
                        bool *ret_verified) {
        _cleanup_(forest_freep) Forest *restored = NULL;
        _cleanup_strv_free_ char **diffs = NULL;
        PlanMapping map = {};
        Run r = { .sock = -1 };
        ScanOptions opts = { .root = 0 };
        uint64_t start;
        int k;

        if (lseek(memfd, 0, SEEK_SET) < 0)
                return -errno;
        start = now_nsec();
        k = start_executor(&r, memfd);
        if (k >= 0)
                k = read_ready(&r);
        double t_ready = msec_since(start);
        if (k >= 0)
                k = mapping_of(r.ready, &map);
        double t_mapped = msec_since(start);
        if (k >= 0) {
                opts.root = map.root_pid;
                k = bpf_scanner_scan(bpf, &opts, &restored);
        }
        double t_scanned = msec_since(start);
        if (k >= 0) {
                json_t *nnp = json_object_get(r.ready, "no_new_privs_added");
                _cleanup_free_ pid_t *added = calloc(json_array_size(nnp) + 1, sizeof(pid_t));
                PlanVerifyOptions vo = { .nnp_added = added, .n_nnp_added = json_array_size(nnp) };
                for (size_t i = 0; added && i < vo.n_nnp_added; i++)
                        added[i] = (pid_t) json_integer_value(json_array_get(nnp, i));
                k = added ? plan_verify(snapshot, restored, &map, &vo, ret_verified, &diffs) : -ENOMEM;
        }
        *ret_msec = msec_since(start);
        log_debug("Restore: READY and fds after %.1f ms, mapping %.1f ms, scan %.1f ms, verify %.1f ms.", t_ready,
                  t_mapped - t_ready, t_scanned - t_mapped, *ret_msec - t_scanned);
        if (k >= 0 && !*ret_verified && diffs && diffs[0])
                log_warning("Restore not verified: %s", diffs[0]);
        plan_mapping_done(&map);
        start = now_nsec();
        run_done(&r);
        *ret_release_msec = msec_since(start);
        return k;
}

/* ---- the figure ---- */

static Verdict verdict_of(bool at_target, bool pass) {
        if (at_target)
                return pass ? VERDICT_PASS : VERDICT_MISS;
        return pass ? VERDICT_PASS_INFO : VERDICT_MISS_INFO;
}

/* What one size measures: the restore of n_tasks tasks in processes of per_process tasks. */
typedef struct RestoreShape {
        size_t n_tasks, per_process;
        bool judged; /* the targets are judged on this shape */
} RestoreShape;

typedef struct RestoreTimes {
        double plan, run, release, floor_plain, floor_filter, floor_end;
} RestoreTimes;

static int measure(const BenchOptions *o, Report *report, BpfScanner *bpf, const RestoreShape *shape,
                   RestoreTimes *ret) {
        _cleanup_(workload_freep) Workload *w = NULL;
        _cleanup_(forest_freep) Forest *snapshot = NULL;
        _cleanup_close_ int memfd = -1;
        size_t n_tasks = shape->n_tasks, per = shape->per_process, n_processes = (n_tasks + per - 1) / per;
        WorkloadOptions wo = { .n_tasks = n_tasks, .threads_per_process = per, .filter_len = o->filter_len };
        ScanOptions so = { .root = 0 };
        unsigned passes = o->passes ? o->passes : 1;
        _cleanup_free_ double *samples = calloc(6 * (size_t) passes, sizeof(double));
        double *plan_ms = samples, *run_ms = samples + passes, *release_ms = samples + 2 * passes,
               *plain_ms = samples + 3 * passes, *filter_ms = samples + 4 * passes, *end_ms = samples + 5 * passes;
        bool all_verified = true;
        char note[96];
        int r;

        if (!samples)
                return log_oom();
        r = workload_new(&wo, &w);
        if (r < 0)
                return log_error_errno(r, "Failed to build the workload of %zu tasks: %m", n_tasks);
        so.root = workload_root(w);
        r = bpf_scanner_scan(bpf, &so, &snapshot);
        if (r < 0)
                return log_error_errno(r, "Failed to scan the workload: %m");
        memfd = memfd_create("bench-snapshot", MFD_CLOEXEC);
        if (memfd < 0 || snapshot_write_fd(snapshot, SNAPSHOT_FORMAT_JSON, memfd) < 0)
                return log_error_errno(-EIO, "Failed to write the snapshot into a memfd.");
        /* The snapshot is all the restore needs: the workload's own tasks go before the timing. */
        w = workload_free(w);

        for (unsigned pass = 0; pass <= passes; pass++) { /* pass 0 warms up */
                _cleanup_(plan_freep) Plan *plan = NULL;
                _cleanup_free_ char *error = NULL;
                PlanOptions po = PLAN_OPTIONS_DEFAULT;
                double p_ms, r_ms = 0, rel_ms = 0, f0_ms = 0, f1_ms = 0, e0_ms = 0, e1_ms = 0;
                bool verified = false;
                uint64_t start = now_nsec();

                r = plan_build(snapshot, &po, &plan, &error);
                p_ms = msec_since(start);
                if (r < 0)
                        return log_error_errno(r, "The workload cannot be planned: %s", error ?: "?");
                /* Rounds interleaved: the restore and both floors side by side. */
                r = restore_once(bpf, snapshot, memfd, &r_ms, &rel_ms, &verified);
                if (r < 0)
                        return log_error_errno(r, "The restore of %zu tasks failed: %m", n_tasks);
                all_verified = all_verified && verified;
                r = floor_fork_tree(n_tasks, per, 0, &f0_ms, &e0_ms);
                if (r >= 0)
                        r = floor_fork_tree(n_tasks, per, o->filter_len, &f1_ms, &e1_ms);
                if (r < 0)
                        return log_error_errno(r, "The floor tree of %zu tasks failed: %m", n_tasks);
                if (pass > 0) {
                        plan_ms[pass - 1] = p_ms;
                        run_ms[pass - 1] = r_ms;
                        release_ms[pass - 1] = rel_ms;
                        plain_ms[pass - 1] = f0_ms;
                        filter_ms[pass - 1] = f1_ms;
                        end_ms[pass - 1] = e1_ms;
                }
        }
        *ret = (RestoreTimes) {
                .plan = median(plan_ms, passes),
                .run = median(run_ms, passes),
                .release = median(release_ms, passes),
                .floor_plain = median(plain_ms, passes),
                .floor_filter = median(filter_ms, passes),
                .floor_end = median(end_ms, passes),
        };
        double x = ret->run, fl = ret->floor_filter, ratio = fl > 0 ? x / fl : 0;
        bool at_1000 = n_tasks == RESTORE_TARGET_TASKS;
        bool pass = ratio <= RESTORE_TARGET_RATIO && (!at_1000 || x <= RESTORE_TARGET_MSEC);
        /* The plan is a part of the restore, not the same work as a floor: its share of the restore
         * is a note, not a ratio to a floor (which would read as a restore below its floor). */
        snprintf(note, sizeof(note), "%zu processes of %zu tasks; %.1f%% of execute + verify", n_processes, per,
                 x > 0 ? 100.0 * ret->plan / x : 0);
        r = report_add_ms(report, n_tasks, "restore: plan", ret->plan, 0, NULL, NULL, VERDICT_NONE, note);
        if (r >= 0)
                r = report_add(report, &(BenchRow) {
                        .figure = "restore: execute + verify",
                        .tasks = n_tasks,
                        .value = x,
                        .unit = "ms",
                        .ratio = ratio,
                        .ratio_to = "fork+filter floor",
                        .target = at_1000 ? "<= 1 s, <= 2x fork+filter" : "<= 2x fork+filter",
                        .verdict = all_verified ? verdict_of(shape->judged, pass) : VERDICT_MISS,
                        .note = all_verified ? NULL : "NOT verified",
                });
        if (r >= 0)
                r = report_add_ms(report, n_tasks, "restore: release (end every task)", ret->release,
                                  ret->floor_end > 0 ? ret->release / ret->floor_end : 0, "end floor", NULL,
                                  VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add_ms(report, n_tasks, "floor: tiny process forks the tree", ret->floor_plain, 0, NULL,
                                  NULL, VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add_ms(report, n_tasks, "floor: ... with the workload's filters", fl,
                                  ret->floor_plain > 0 ? fl / ret->floor_plain : 0, "plain fork floor", NULL,
                                  VERDICT_NONE, NULL);
        if (r >= 0)
                r = report_add_ms(report, n_tasks, "floor: ... and ending and reaping them (end floor)", ret->floor_end,
                                  0, NULL, NULL, VERDICT_NONE, NULL);
        if (r >= 0 && !all_verified)
                report->n_check_failed++;
        return r;
}

/* How a time grows from n0 to n1 tasks: the exponent e of t ~ n^e. */
static double growth_exponent(double t0, double t1, size_t n0, size_t n1) {
        if (t0 <= 0 || t1 <= 0)
                return 0;
        return log(t1 / t0) / log((double) n1 / (double) n0);
}

/* judged: a target row (the restore's); else the floor's growth, for comparison. */
static int report_growth(Report *report, const char *figure, double t0, double t1, size_t n0, size_t n1,
                         bool judged) {
        double e = growth_exponent(t0, t1, n0, n1);
        char note[64];

        snprintf(note, sizeof(note), "%zu -> %zu single-thread processes", n0, n1);
        return report_add(report, &(BenchRow) {
                .figure = figure,
                .tasks = n1,
                .value = e,
                .unit = "exponent",
                .target = judged ? "<= 1.1 (linear)" : NULL,
                .verdict = !judged ? VERDICT_NONE : e <= RESTORE_LINEAR_EXPONENT ? VERDICT_PASS : VERDICT_MISS,
                .note = note,
        });
}

int figure_restore_run(const BenchOptions *o, Report *report) {
        _cleanup_(bpf_scanner_freep) BpfScanner *bpf = NULL;
        /* The workload's shape at 100 and 1,000 tasks, then single-thread processes at 1,000 and
         * 4,000 (where per-process costs show, and whether they grow with N). */
        const RestoreShape shapes[] = {
                { 100, o->threads_per_process, false },
                { 1000, o->threads_per_process, true },
                { 1000, 1, true },
                { 4000, 1, true },
        };
        size_t n_shapes = o->smoke ? 2 : ELEMENTSOF(shapes);
        RestoreTimes t[ELEMENTSOF(shapes)];
        int r = bpf_scanner_new(&bpf);
        if (r < 0)
                return log_error_errno(r, "Failed to load the bpf scanner: %m");
        for (size_t i = 0; r >= 0 && i < n_shapes; i++)
                r = measure(o, report, bpf, &shapes[i], &t[i]);
        if (r >= 0 && n_shapes == ELEMENTSOF(shapes))
                r = report_growth(report, "restore: execute + verify, growth", t[2].run, t[3].run, 1000, 4000, true);
        if (r >= 0 && n_shapes == ELEMENTSOF(shapes))
                r = report_growth(report, "restore: release, growth", t[2].release, t[3].release, 1000, 4000, true);
        if (r >= 0 && n_shapes == ELEMENTSOF(shapes))
                r = report_growth(report, "floor: fork + filter, growth", t[2].floor_filter, t[3].floor_filter, 1000,
                                  4000, false);
        if (r >= 0 && n_shapes == ELEMENTSOF(shapes))
                r = report_growth(report, "floor: end and reap, growth", t[2].floor_end, t[3].floor_end, 1000, 4000, false);
        return r;
}
