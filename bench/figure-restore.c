/* figure-restore.c: restore: the plan of a snapshot of the workload, and its execution by
 * sectree-restore with the verification (a bpf scan of the restored tree compared with the
 * snapshot), against the floor of forking the same process and thread tree without filters */
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
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
 *   - the floor: the same tree forked with no filters (a root forking processes of
 *     threads_per_process threads each, every task blocking), until every task is there.
 * Targets, for 1,000 tasks: execute + verify <= 1 s and <= 3x the floor.
 */

#define RESTORE_TARGET_MSEC 1000.0
#define RESTORE_TARGET_RATIO 3.0
#define FRAME_TIMEOUT_USEC (120 * 1000000ULL)

extern char **environ;

static const char *executor_path(void) {
        const char *e = getenv("SECTREE_RESTORE");
        return e && *e ? e : SECTREE_RESTORE_BUILD_PATH;
}

/* ---- the floor: the same tree, no filters ---- */

static void *floor_thread(void *arg) {
        for (;;)
                pause();
        return NULL;
}

/* A process of n threads (its leader included) that says so on fd, then blocks. */
__attribute__((noreturn)) static void floor_process(size_t n, int fd) {
        pthread_t t;
        for (size_t i = 1; i < n; i++)
                if (pthread_create(&t, NULL, floor_thread, NULL) != 0)
                        _exit(1);
        if (write(fd, "x", 1) != 1)
                _exit(1);
        for (;;)
                pause();
}

/* Fork a root that forks the processes; ms until every one has all its threads. */
static int floor_fork_tree(size_t n_tasks, size_t per_process, double *ret_msec) {
        size_t n_processes = (n_tasks + per_process - 1) / per_process, got = 0;
        int p[2];
        char buf[256];
        uint64_t start;
        pid_t root;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        start = now_nsec();
        root = fork();
        if (root < 0)
                return -errno;
        if (root == 0) {
                (void) setpgid(0, 0);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (size_t i = 1; i < n_processes; i++) {
                        pid_t c = fork();
                        if (c == 0)
                                floor_process(per_process, p[1]);
                        if (c < 0)
                                _exit(1);
                }
                floor_process(per_process, p[1]);
        }
        (void) setpgid(root, root);
        close(p[1]);
        while (got < n_processes) {
                ssize_t k = read(p[0], buf, sizeof(buf));
                if (k <= 0)
                        break;
                got += (size_t) k;
        }
        *ret_msec = msec_since(start);
        close(p[0]);
        (void) kill(-root, SIGKILL);
        (void) kill(root, SIGKILL);
        while (waitpid(-1, NULL, WNOHANG | __WALL) > 0 || waitpid(root, NULL, WNOHANG) > 0)
                ;
        (void) waitpid(root, NULL, 0);
        return got == n_processes ? 0 : -EIO;
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

/* One verified restore: ms from the executor's start to the verification's answer. */
static int restore_once(BpfScanner *bpf, const Forest *snapshot, int memfd, double *ret_msec, bool *ret_verified) {
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
        if (k >= 0)
                k = mapping_of(r.ready, &map);
        if (k >= 0) {
                opts.root = map.root_pid;
                k = bpf_scanner_scan(bpf, &opts, &restored);
        }
        if (k >= 0) {
                json_t *nnp = json_object_get(r.ready, "no_new_privs_added");
                _cleanup_free_ pid_t *added = calloc(json_array_size(nnp) + 1, sizeof(pid_t));
                PlanVerifyOptions vo = { .nnp_added = added, .n_nnp_added = json_array_size(nnp) };
                for (size_t i = 0; added && i < vo.n_nnp_added; i++)
                        added[i] = (pid_t) json_integer_value(json_array_get(nnp, i));
                k = added ? plan_verify(snapshot, restored, &map, &vo, ret_verified, &diffs) : -ENOMEM;
        }
        *ret_msec = msec_since(start);
        if (k >= 0 && !*ret_verified && diffs && diffs[0])
                log_warning("Restore not verified: %s", diffs[0]);
        plan_mapping_done(&map);
        run_done(&r);
        return k;
}

/* ---- the figure ---- */

static Verdict verdict_of(bool at_target, bool pass) {
        if (at_target)
                return pass ? VERDICT_PASS : VERDICT_MISS;
        return pass ? VERDICT_PASS_INFO : VERDICT_MISS_INFO;
}

static int measure(const BenchOptions *o, Report *report, BpfScanner *bpf, size_t n_tasks) {
        _cleanup_(workload_freep) Workload *w = NULL;
        _cleanup_(forest_freep) Forest *snapshot = NULL;
        _cleanup_close_ int memfd = -1;
        WorkloadOptions wo = { .n_tasks = n_tasks, .threads_per_process = o->threads_per_process,
                               .filter_len = o->filter_len };
        ScanOptions so = { .root = 0 };
        unsigned passes = o->passes ? o->passes : 1;
        _cleanup_free_ double *plan_ms = calloc(passes, sizeof(double)), *run_ms = calloc(passes, sizeof(double)),
                             *floor_ms = calloc(passes, sizeof(double));
        bool all_verified = true, at_target = n_tasks == 1000;
        int r;

        if (!plan_ms || !run_ms || !floor_ms)
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

        for (unsigned pass = 0; pass <= passes; pass++) { /* pass 0 warms up */
                _cleanup_(plan_freep) Plan *plan = NULL;
                _cleanup_free_ char *error = NULL;
                PlanOptions po = PLAN_OPTIONS_DEFAULT;
                double p_ms, r_ms = 0, f_ms = 0;
                bool verified = false;
                uint64_t start = now_nsec();

                r = plan_build(snapshot, &po, &plan, &error);
                p_ms = msec_since(start);
                if (r < 0)
                        return log_error_errno(r, "The workload cannot be planned: %s", error ?: "?");
                r = restore_once(bpf, snapshot, memfd, &r_ms, &verified);
                if (r < 0)
                        return log_error_errno(r, "The restore of %zu tasks failed: %m", n_tasks);
                all_verified = all_verified && verified;
                r = floor_fork_tree(n_tasks, o->threads_per_process, &f_ms);
                if (r < 0)
                        return log_error_errno(r, "The floor tree of %zu tasks failed: %m", n_tasks);
                if (pass > 0) {
                        plan_ms[pass - 1] = p_ms;
                        run_ms[pass - 1] = r_ms;
                        floor_ms[pass - 1] = f_ms;
                }
        }
        double p = median(plan_ms, passes), x = median(run_ms, passes), fl = median(floor_ms, passes);
        double ratio = fl > 0 ? x / fl : 0;
        bool pass = x <= RESTORE_TARGET_MSEC && ratio <= RESTORE_TARGET_RATIO;
        r = report_add_ms(report, n_tasks, "restore: plan", p, fl > 0 ? p / fl : 0, "fork floor", NULL, VERDICT_NONE,
                          NULL);
        if (r >= 0)
                r = report_add(report, &(BenchRow) {
                        .figure = "restore: execute + verify",
                        .tasks = n_tasks,
                        .value = x,
                        .unit = "ms",
                        .ratio = ratio,
                        .ratio_to = "fork floor",
                        .target = "<= 1 s, <= 3x",
                        .verdict = all_verified ? verdict_of(at_target, pass) : VERDICT_MISS,
                        .note = all_verified ? NULL : "NOT verified",
                });
        if (r >= 0)
                r = report_add_ms(report, n_tasks, "restore: fork floor", fl, 0, NULL, NULL, VERDICT_NONE,
                                  NULL);
        if (r >= 0 && !all_verified)
                report->n_check_failed++;
        return r;
}

int figure_restore_run(const BenchOptions *o, Report *report) {
        _cleanup_(bpf_scanner_freep) BpfScanner *bpf = NULL;
        static const size_t sizes[] = { 100, 1000 };
        int r = bpf_scanner_new(&bpf);
        if (r < 0)
                return log_error_errno(r, "Failed to load the bpf scanner: %m");
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(sizes); i++)
                r = measure(o, report, bpf, sizes[i]);
        return r;
}
