/* executor-run.c: one restore from request to release: check where it runs, plan, run the plan
 * through the controller, answer READY, then serve START and RELEASE */
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

#include "executor-run.h"

#include "controller.h"
#include "core/util.h"
#include "executor-reply.h"
#include "executor-request.h"
#include "plan/plan-protocol.h"
#include "plan/plan.h"
#include "snapshot/snapshot.h"

#define EXECUTOR_REQUEST_TIMEOUT_USEC (30 * 1000 * 1000ULL)
#define HEARTBEAT_MSEC 200

extern char **environ;

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
                struct pollfd pfd[2] = { { .fd = EXECUTOR_SOCKET_FD, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
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
                r = restore_frame_recv(EXECUTOR_SOCKET_FD, EXECUTOR_REQUEST_TIMEOUT_USEC, &f);
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
                                executor_reply_error("start", c->failure, c);
                                controller_kill_all(c);
                                restore_frame_done(&f);
                                return r;
                        }
                        executor_reply_json(RESTORE_FRAME_STARTED, json_object());
                } else
                        log_warning("Ignoring an unexpected %s frame.", restore_frame_type_to_string(f.type) ?: "unknown");
                restore_frame_done(&f);
        }
}

static void free_paths(char **paths, size_t n) {
        for (size_t i = 0; paths && i < n; i++)
                free(paths[i]);
        free(paths);
}

/* The controller set up for plan with root as its restore root, and the plan run up to its
 * start. */
static int controller_start_plan(Controller *c, const Plan *plan, const ExecutorRequest *req, RestoreRoot *root,
                                 char **exec_paths) {
        int r = controller_init(c, plan, req->step_timeout_usec, root, exec_paths, req->stdio);

        free_paths(exec_paths, plan->n_processes);
        if (r < 0)
                return r;
        return controller_run(c);
}

/* READY, then START and RELEASE until the caller releases. */
static int answer(Controller *c, bool unprivileged, int sfd) {
        int r = executor_reply_ready(c, unprivileged);

        if (r < 0)
                return r;
        return serve(c, sfd);
}

/* An ERROR reply once the root that waits is gone (an ERROR says every task is). */
static int refuse(RestoreRoot *root, const char *stage, const char *error, int r) {
        restore_root_done(root);
        executor_reply_error(stage, error ?: strerror(-r), NULL);
        return r;
}

static int run_restore(const Forest *snapshot, ExecutorRequest *req, RestoreRoot *root, int sfd) {
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_free_ char *error = NULL;
        Controller c = {};
        PlanOptions o = PLAN_OPTIONS_DEFAULT;
        char **exec_paths = NULL;
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
                return refuse(root, "plan", error, r);
        r = resolve_exec_paths(plan, &exec_paths, &error);
        if (r < 0)
                return refuse(root, "plan", error, r);
        r = controller_start_plan(&c, plan, req, root, exec_paths);
        if (r < 0) {
                restore_root_done(root); /* a root the controller did not take yet */
                executor_reply_error("execute", c.failure ?: strerror(-r), &c);
                controller_done(&c);
                return r;
        }
        log_info("Restored %zu processes and %zu threads in %zu steps.", snapshot->n_processes,
                 plan->n_tasks - plan->n_helper_threads, plan->n_steps);
        r = answer(&c, o.unprivileged, sfd);
        controller_release(&c);
        if (r >= 0)
                executor_reply_json(RESTORE_FRAME_RELEASED, json_object());
        controller_done(&c);
        return r < 0 ? r : 0;
}

static int check_socket(void) {
        int type = 0;
        socklen_t len = sizeof(type);

        if (getsockopt(EXECUTOR_SOCKET_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
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

/* Everything after the arguments: the request, the checks, the restore, serving the caller until
 * the release. */
int executor_run(void) {
        _cleanup_(forest_freep) Forest *snapshot = NULL;
        _cleanup_(executor_request_done) ExecutorRequest req = { .snapshot_fd = -1, .stdio = { -1, -1, -1 } };
        _cleanup_(restore_root_done) RestoreRoot root = RESTORE_ROOT_NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int sfd = -1;
        RestoreFrame f = {};
        int r;

        r = check_socket();
        if (r < 0)
                return r;
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return log_error_errno(-errno, "Failed to become a child subreaper: %m");
        raise_nofile();
        sfd = setup_signals();
        if (sfd < 0)
                return sfd;

        r = restore_frame_recv(EXECUTOR_SOCKET_FD, EXECUTOR_REQUEST_TIMEOUT_USEC, &f);
        if (r < 0)
                return log_error_errno(r, "Failed to read the request: %m");
        r = executor_request_take(&f, &req, &error);
        restore_frame_done(&f);
        if (r < 0)
                return executor_reply_error("request", error ?: strerror(-r), NULL), r;
        r = check_clean(&error);
        if (r < 0)
                return executor_reply_error("executor", error ?: strerror(-r), NULL), r;
        /* The root before the snapshot is read and planned: what it forks copies its memory. */
        r = restore_root_fork(&root, req.pid_namespace, req.exec, &error);
        if (r < 0)
                return refuse(&root, "execute", error, r);
        r = snapshot_read_any(req.snapshot_fd, &snapshot, &error);
        if (r < 0)
                return refuse(&root, "snapshot", error, r);
        r = check_arch(snapshot, &error);
        if (r < 0)
                return refuse(&root, "plan", error, r);
        return run_restore(snapshot, &req, &root, sfd);
}
