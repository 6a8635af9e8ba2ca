/* sectree-restore.c: the restore executor: reads a request (options, and the snapshot as an fd) on
 * the socket that is its stdin, plans the restore, runs the plan on the kernel, and answers with
 * the mapping, a pidfd per restored process and a copy of every listener (docs/restore.md) */
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "config.h"
#include "controller.h"
#include "core/util.h"
#include "plan/plan-protocol.h"
#include "plan/plan.h"
#include "snapshot/snapshot.h"

#define REQUEST_TIMEOUT_USEC (30 * 1000 * 1000ULL)
#define DEFAULT_STEP_TIMEOUT_USEC (10 * 1000 * 1000ULL)
#define HEARTBEAT_MSEC 200
#define SOCKET_FD STDIN_FILENO

extern char **environ;

typedef struct Request {
        PlanExec *exec;
        size_t n_exec;
        uint64_t step_timeout_usec;
        bool check_syscalls;
        bool original_ids;
        bool pid_namespace;
        int snapshot_fd;
        int stdio[3]; /* with "stdio": the exec'd processes' stdin, stdout, stderr; else -1 */
} Request;

static void request_done(Request *r) {
        for (size_t i = 0; i < r->n_exec; i++)
                strv_free(r->exec[i].argv);
        free(r->exec);
        if (r->snapshot_fd >= 0)
                close(r->snapshot_fd);
        for (int k = 0; k < 3; k++)
                if (r->stdio[k] >= 0)
                        close(r->stdio[k]);
}

/* ---- replies ---- */

static int send_json(RestoreFrameType type, json_t *doc) {
        _cleanup_free_ char *s = json_dumps(doc, JSON_COMPACT);
        int r;

        if (!s)
                return log_oom();
        r = restore_frame_send(SOCKET_FD, type, s, strlen(s), NULL, 0);
        if (r == -EPIPE || r == -ECONNRESET) /* the caller left: nobody to tell */
                return log_debug_errno(r, "Caller gone, %s reply not sent: %m", restore_frame_type_to_string(type));
        if (r < 0)
                return log_error_errno(r, "Failed to send the %s reply: %m", restore_frame_type_to_string(type));
        return 0;
}

/* ERROR: what failed, at which stage; for a failed step its index, operation, task, system call
 * and errno. */
static int send_error(const char *stage, const char *message, const Controller *c) {
        json_auto_t *doc = json_pack("{s:s, s:s}", "stage", stage, "message", message ?: "failed");

        if (!doc)
                return log_oom();
        if (c && c->failed_step != SIZE_MAX) {
                const PlanStep *st = &c->plan->steps[c->failed_step];
                _cleanup_free_ char *what = plan_step_describe(c->plan, c->failed_step);
                json_object_set_new(doc, "step", json_integer((json_int_t) c->failed_step));
                json_object_set_new(doc, "op", json_string(plan_op_to_string(st->op)));
                json_object_set_new(doc, "description", what ? json_string(what) : json_null());
        }
        if (c && c->failed_errno) {
                json_object_set_new(doc, "errno", json_integer(c->failed_errno));
                json_object_set_new(doc, "error", json_string(strerrorname_np(c->failed_errno) ?: "?"));
        }
        if (c && c->failed_call != RUNTIME_CALL_NONE)
                json_object_set_new(doc, "call", json_string(runtime_call_to_string(c->failed_call)));
        if (c && c->pids && c->pids[0] > 0)
                json_object_set_new(doc, "restore_root", json_integer(c->pids[0]));
        log_error("Restore failed (%s): %s", stage, message ?: "failed");
        return send_json(RESTORE_FRAME_ERROR, doc);
}

static json_t *pid_array(const pid_t *v, size_t n) {
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_integer(v[i]));
        return a;
}

/* The fds READY indexes, in the order they will be sent. */
typedef struct FdList {
        int *v;
        size_t n;
} FdList;

static void fd_list_push(FdList *l, int fd) {
        l->v[l->n++] = fd; /* sized for every process and filter */
}

static json_t *ready_processes(const Controller *c, FdList *fds) {
        const Plan *p = c->plan;
        json_t *a = json_array();

        for (size_t pp = 0; a && pp < p->n_processes; pp++) {
                if (p->processes[pp].kind != PLAN_PROCESS_RESTORED)
                        continue;
                json_array_append_new(a, json_pack("{s:i, s:i, s:i}", "snapshot_pid", p->processes[pp].snapshot->pid,
                                                   "pid", c->pids[pp], "fd", (int) fds->n));
                fd_list_push(fds, c->pidfds[pp]);
        }
        return a;
}

static json_t *ready_threads(const Controller *c) {
        const Plan *p = c->plan;
        json_t *a = json_array();

        for (size_t t = 0; a && t < p->n_tasks; t++)
                if (p->tasks[t].kind == PLAN_TASK_RESTORED)
                        json_array_append_new(a, json_pack("{s:i, s:i}", "snapshot_tid", p->tasks[t].snapshot->tid, "tid",
                                                           c->tids[t]));
        return a;
}

static json_t *ready_listeners(const Controller *c, FdList *fds) {
        const Forest *s = c->plan->snapshot;
        json_t *a = json_array();

        for (size_t i = 0; a && i < s->n_listeners; i++) {
                if (c->listener_fds[i] < 0)
                        continue;
                json_array_append_new(a, json_pack("{s:I, s:I, s:i}", "snapshot_listener", (json_int_t) s->listeners[i]->id,
                                                   "filter", (json_int_t) s->listeners[i]->filter_id, "fd", (int) fds->n));
                fd_list_push(fds, c->listener_fds[i]);
        }
        for (size_t j = 0; a && j < s->n_filters; j++) {
                if (c->filter_listener_fds[j] < 0)
                        continue;
                json_array_append_new(a, json_pack("{s:n, s:I, s:i}", "snapshot_listener", "filter",
                                                   (json_int_t) s->filters[j]->id, "fd", (int) fds->n));
                fd_list_push(fds, c->filter_listener_fds[j]);
        }
        return a;
}

/* READY, then the fds it indexes in FDS frames. */
static int send_ready(const Controller *c, bool unprivileged) {
        const Plan *p = c->plan;
        _cleanup_free_ int *fdv = calloc(p->n_processes + p->snapshot->n_listeners + p->snapshot->n_filters + 1, sizeof(int));
        FdList fds = { .v = fdv };
        json_auto_t *doc = NULL;
        int r;

        if (!fdv)
                return log_oom();
        doc = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:{s:I, s:I}, s:I, s:b}", "restore_root", c->pids[0],
                        "processes", ready_processes(c, &fds), "threads", ready_threads(c), "listeners",
                        ready_listeners(c, &fds), "no_new_privs_added", pid_array(p->nnp_added, p->n_nnp_added),
                        "subreapers", pid_array(p->subreapers, p->n_subreapers), "helpers", "processes",
                        (json_int_t) p->n_helper_processes, "threads", (json_int_t) p->n_helper_threads, "steps",
                        (json_int_t) p->n_steps, "unprivileged", unprivileged);
        if (!doc)
                return log_oom();
        json_object_set_new(doc, "n_fds", json_integer((json_int_t) fds.n));
        r = send_json(RESTORE_FRAME_READY, doc);
        for (size_t i = 0; r >= 0 && i < fds.n; i += RESTORE_FRAME_MAX_FDS) {
                size_t n = fds.n - i < RESTORE_FRAME_MAX_FDS ? fds.n - i : RESTORE_FRAME_MAX_FDS;
                r = restore_frame_send(SOCKET_FD, RESTORE_FRAME_FDS, NULL, 0, fds.v + i, n);
                if (r < 0)
                        log_error_errno(r, "Failed to send the fds: %m");
        }
        return r;
}

/* ---- the request ---- */

static int parse_exec_entry(json_t *e, PlanExec *ret) {
        json_t *argv, *x;
        json_int_t pid;
        size_t i, n;

        if (json_unpack(e, "{s:I, s:o !}", "pid", &pid, "argv", &argv) < 0 || !json_is_array(argv) || pid <= 0 ||
            pid > SNAPSHOT_MAX_PID || json_array_size(argv) == 0)
                return -EINVAL;
        n = json_array_size(argv);
        ret->pid = (pid_t) pid;
        ret->argv = calloc(n + 1, sizeof(char *));
        if (!ret->argv)
                return -ENOMEM;
        json_array_foreach(argv, i, x) {
                if (!json_is_string(x) || !(ret->argv[i] = strdup(json_string_value(x))))
                        return -EINVAL;
        }
        return 0;
}

static int parse_request(const RestoreFrame *f, Request *r, char **error) {
        json_error_t je;
        json_auto_t *doc = NULL;
        json_t *exec = NULL, *e;
        json_int_t version = 0, timeout = 0;
        int check = 1, original_ids = 0, pid_namespace = 0, stdio = 0;
        size_t i;

        if (f->type != RESTORE_FRAME_REQUEST || f->n_fds < 1 || !f->payload)
                return asprintf(error, "expected a request frame with one fd (the snapshot)") < 0 ? -ENOMEM : -EINVAL;
        doc = json_loads(f->payload, 0, &je);
        if (!doc)
                return asprintf(error, "request: %s", je.text) < 0 ? -ENOMEM : -EINVAL;
        if (json_unpack_ex(doc, &je, JSON_STRICT, "{s:I, s?o, s?I, s?b, s?b, s?b, s?b}", "version", &version, "exec",
                           &exec, "step_timeout_usec", &timeout, "check_syscalls", &check, "original_ids", &original_ids,
                           "pid_namespace", &pid_namespace, "stdio", &stdio) < 0)
                return asprintf(error, "request: %s", je.text) < 0 ? -ENOMEM : -EINVAL;
        if (f->n_fds != (stdio ? 4U : 1U))
                return asprintf(error, "request: expected %s, not %zu fds",
                                stdio ? "4 fds (the snapshot, stdin, stdout, stderr)" : "one fd (the snapshot)",
                                (size_t) f->n_fds) < 0 ? -ENOMEM : -EINVAL;
        if (version != RESTORE_PROTOCOL_VERSION)
                return asprintf(error, "request: version %lld is not %d", (long long) version, RESTORE_PROTOCOL_VERSION) < 0
                               ? -ENOMEM : -EINVAL;
        if (timeout < 0)
                return asprintf(error, "request: step_timeout_usec must not be negative") < 0 ? -ENOMEM : -EINVAL;
        r->step_timeout_usec = timeout ? (uint64_t) timeout : DEFAULT_STEP_TIMEOUT_USEC;
        r->check_syscalls = check;
        r->original_ids = original_ids;
        r->pid_namespace = pid_namespace;
        if ((original_ids || pid_namespace) && geteuid() != 0)
                return asprintf(error, "request: %s needs an executor running as root",
                                original_ids ? "original_ids" : "pid_namespace") < 0 ? -ENOMEM : -EINVAL;
        if (exec && !json_is_array(exec))
                return asprintf(error, "request: exec must be an array") < 0 ? -ENOMEM : -EINVAL;
        r->exec = calloc(json_array_size(exec) ?: 1, sizeof(PlanExec));
        if (!r->exec)
                return -ENOMEM;
        json_array_foreach(exec, i, e) {
                int k = parse_exec_entry(e, &r->exec[i]);
                r->n_exec = i + 1;
                if (k < 0)
                        return k == -ENOMEM ? k : (asprintf(error, "request: exec[%zu]: expected {\"pid\": N, \"argv\": "
                                                           "[\"command\", ...]}", i) < 0 ? -ENOMEM : -EINVAL);
        }
        return 0;
}

/* ---- checks on where it runs ---- */

static bool have_cap_sys_admin(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return false;
        return d[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32));
}

/* A clean context: no filters of its own (they would be inherited by every restored task). */
static int check_clean(char **error) {
        int mode = prctl(PR_GET_SECCOMP);

        if (mode != 0)
                return asprintf(error, "sectree-restore runs under seccomp itself (mode %d): every restored chain would "
                                "start with its filters; start it from a context without any", mode) < 0
                               ? -ENOMEM : -EINVAL;
        return 0;
}

static int check_arch(const Forest *s, char **error) {
        struct utsname u;

        if (uname(&u) < 0)
                return -errno;
        if (s->host.arch && !streq(s->host.arch, u.machine))
                return asprintf(error, "the snapshot was taken on %s, this machine is %s: its filters check the "
                                "architecture", s->host.arch, u.machine) < 0 ? -ENOMEM : -EINVAL;
        return 0;
}

/* argv[0] as execve() needs it: as given when it holds a slash, else found in $PATH. */
static char *find_command(const char *name) {
        const char *path = getenv("PATH") ?: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        if (strchr(name, '/'))
                return strdup(name);
        copy = strdup(path);
        for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
                char *candidate;
                if (asprintf(&candidate, "%s/%s", dir, name) < 0)
                        return NULL;
                if (access(candidate, X_OK) == 0)
                        return candidate;
                free(candidate);
        }
        return NULL;
}

static int resolve_exec_paths(const Plan *p, char ***ret, char **error) {
        char **paths = calloc(p->n_processes, sizeof(char *));

        if (!paths)
                return -ENOMEM;
        for (size_t pp = 0; pp < p->n_processes; pp++) {
                const PlanProcess *x = &p->processes[pp];
                if (x->exec == PLAN_NONE)
                        continue;
                paths[pp] = find_command(p->options.exec[x->exec].argv[0]);
                if (!paths[pp]) {
                        int k = asprintf(error, "exec: command %s for process %d not found", p->options.exec[x->exec].argv[0],
                                         x->snapshot->pid);
                        for (size_t i = 0; i < pp; i++)
                                free(paths[i]);
                        free(paths);
                        return k < 0 ? -ENOMEM : -EINVAL;
                }
        }
        *ret = paths;
        return 0;
}

/* ---- after READY: wait for the caller ---- */

static int setup_signals(void) {
        sigset_t mask;
        int fd;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m");
        fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to create a signalfd: %m");
        signal(SIGPIPE, SIG_IGN);
        return fd;
}

/* Serve START and RELEASE until the caller releases, closes the socket, or a signal asks. */
static int serve(Controller *c, int sfd) {
        bool started = false;

        for (;;) {
                struct pollfd pfd[2] = { { .fd = SOCKET_FD, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
                RestoreFrame f = {};
                int r;

                controller_heartbeat(c);
                r = poll(pfd, 2, HEARTBEAT_MSEC);
                if (r < 0 && errno != EINTR)
                        return log_error_errno(-errno, "poll() failed: %m");
                if (pfd[1].revents & POLLIN) {
                        log_info("Signal received, releasing the restored tasks.");
                        return 0;
                }
                if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                r = restore_frame_recv(SOCKET_FD, REQUEST_TIMEOUT_USEC, &f);
                if (r < 0)
                        return r == -ECONNRESET ? 0 : log_error_errno(r, "Failed to read from the caller: %m");
                if (f.type == RESTORE_FRAME_RELEASE) {
                        restore_frame_done(&f);
                        return 1;
                }
                if (f.type == RESTORE_FRAME_START && !started) {
                        started = true;
                        r = controller_start(c);
                        if (r < 0) {
                                send_error("start", c->failure, c);
                                controller_kill_all(c);
                                restore_frame_done(&f);
                                return r;
                        }
                        send_json(RESTORE_FRAME_STARTED, json_object());
                } else
                        log_warning("Ignoring an unexpected %s frame.", restore_frame_type_to_string(f.type) ?: "unknown");
                restore_frame_done(&f);
        }
}

/* ---- main ---- */

static int run_restore(const Forest *snapshot, Request *req, int sfd) {
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_free_ char *error = NULL;
        Controller c = {};
        PlanOptions o = PLAN_OPTIONS_DEFAULT;
        int r;

        o.unprivileged = !have_cap_sys_admin();
        o.check_syscalls = req->check_syscalls;
        o.exec = req->exec;
        o.n_exec = req->n_exec;
        o.original_ids = req->original_ids;
        o.pid_namespace = req->pid_namespace;
        if (controller_nofile_saved && controller_nofile.rlim_cur != RLIM_INFINITY)
                o.max_fds = controller_nofile.rlim_cur; /* what the restore root puts back */
        r = plan_build(snapshot, &o, &plan, &error);
        if (r < 0)
                return send_error("plan", error ?: strerror(-r), NULL), r;
        r = resolve_exec_paths(plan, &runtime.exec_path, &error);
        if (r < 0)
                return send_error("plan", error ?: strerror(-r), NULL), r;
        runtime.envp = environ;
        r = controller_init(&c, plan, req->step_timeout_usec);
        if (r >= 0 && req->stdio[0] >= 0)
                memcpy(c.stdio, req->stdio, sizeof(c.stdio));
        if (r >= 0)
                r = controller_run(&c);
        if (r < 0) {
                send_error("execute", c.failure ?: strerror(-r), &c);
                controller_done(&c);
                return r;
        }
        log_info("Restored %zu processes and %zu threads in %zu steps.", snapshot->n_processes,
                 plan->n_tasks - plan->n_helper_threads, plan->n_steps);
        r = send_ready(&c, o.unprivileged);
        if (r >= 0)
                r = serve(&c, sfd);
        controller_release(&c);
        if (r >= 0)
                send_json(RESTORE_FRAME_RELEASED, json_object());
        controller_done(&c);
        return r < 0 ? r : 0;
}

static int check_socket(void) {
        int type = 0;
        socklen_t len = sizeof(type);

        if (getsockopt(SOCKET_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                return log_error_errno(-errno, "stdin is not a socket (%m): sectree-restore takes its request on a "
                                       "connected AF_UNIX stream socket as stdin; see docs/restore.md");
        if (type != SOCK_STREAM)
                return log_error_errno(-EPROTOTYPE, "stdin is a socket, but not a stream socket.");
        return 0;
}

/* The executor keeps a pidfd per restored process: allow as many as the hard limit lets (the
 * restore root puts the limit it was started with back for the restored tasks). */
static void raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        controller_nofile = rl;
        controller_nofile_saved = true;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static void help(void) {
        printf("Usage: sectree-restore [--help] [--version]\n"
               "\n"
               "Rebuild a seccomp snapshot's process tree with its filter inheritance intact.\n"
               "Started by sectreed (or a test): stdin is a connected AF_UNIX stream socket that\n"
               "carries the request (the snapshot as an fd, the options) and the answers (the\n"
               "mapping of pids and tids, a pidfd per restored process, a copy of each listener).\n"
               "See the restore documentation for the protocol.\n");
}

static int parse_args(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        int o;

        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (o) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("sectree-restore %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("sectree-restore takes no arguments.");
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char *argv[]) {
        _cleanup_(forest_freep) Forest *snapshot = NULL;
        _cleanup_(request_done) Request req = { .snapshot_fd = -1, .stdio = { -1, -1, -1 } };
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int sfd = -1;
        RestoreFrame f = {};
        int r;

        r = parse_args(argc, argv);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : 2;
        if (check_socket() < 0)
                return EXIT_FAILURE;
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return log_error_errno(-errno, "Failed to become a child subreaper: %m"), EXIT_FAILURE;
        raise_nofile();
        sfd = setup_signals();
        if (sfd < 0)
                return EXIT_FAILURE;

        r = restore_frame_recv(SOCKET_FD, REQUEST_TIMEOUT_USEC, &f);
        if (r < 0)
                return log_error_errno(r, "Failed to read the request: %m"), EXIT_FAILURE;
        r = parse_request(&f, &req, &error);
        if (r >= 0)
                req.snapshot_fd = TAKE_FD(f.fds[0]);
        for (unsigned k = 0; r >= 0 && k < 3 && f.n_fds == 4; k++)
                req.stdio[k] = TAKE_FD(f.fds[k + 1]);
        restore_frame_done(&f);
        if (r < 0)
                return send_error("request", error ?: strerror(-r), NULL), EXIT_FAILURE;
        r = check_clean(&error);
        if (r < 0)
                return send_error("executor", error ?: strerror(-r), NULL), EXIT_FAILURE;
        r = snapshot_read_any(req.snapshot_fd, &snapshot, &error);
        if (r < 0)
                return send_error("snapshot", error ?: strerror(-r), NULL), EXIT_FAILURE;
        r = check_arch(snapshot, &error);
        if (r < 0)
                return send_error("plan", error ?: strerror(-r), NULL), EXIT_FAILURE;
        r = run_restore(snapshot, &req, sfd);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
