/* restore-run.c: a test talking to sectree-restore as the daemon does: started (as root or another
 * uid) with a snapshot in a memfd and a request, READY and its fds read, released */
#include "restore-run.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "tests-util.h"

extern char **environ;

rlim_t restore_run_executor_nofile;

/* The executor is opened before the change of credentials and exec'd through that fd, so that
 * nobody needs no access to the directories of the build tree (a CI clone may sit in /root). */
static void executor_child(int sock, uid_t uid) {
        const char *path = g_getenv("SECTREE_RESTORE");
        char *argv[] = { (char *) "sectree-restore", NULL };
        int null = open("/dev/null", O_RDWR | O_CLOEXEC), exe = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

        if (exe < 0 || null < 0 || dup2(sock, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
            (exe != 3 && dup3(exe, 3, O_CLOEXEC) < 0) || close_range(4, ~0U, 0) < 0)
                _exit(126);
        if (restore_run_executor_nofile) {
                struct rlimit rl;
                if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(124);
                rl.rlim_cur = restore_run_executor_nofile;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(124);
        }
        if (uid != 0 && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
                _exit(125);
        fexecve(3, argv, environ);
        _exit(127);
}

int snapshot_memfd_as(const Forest *f, SnapshotFormat format) {
        int fd = memfd_create("snapshot", MFD_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(snapshot_write_fd(f, format, fd), ==, 0);
        g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
        return fd;
}

int snapshot_memfd(const Forest *f) {
        return snapshot_memfd_as(f, SNAPSHOT_FORMAT_JSON);
}

RestoreFrame recv_frame(RestoreRun *r) {
        RestoreFrame f = {};
        int k = restore_frame_recv(r->sock, FRAME_TIMEOUT_USEC, &f);

        if (k < 0)
                g_error("no answer from sectree-restore: %s", g_strerror(-k));
        return f;
}

static void mapping_from_ready(RestoreRun *r) {
        json_t *x;
        size_t i;

        r->root_pid = (pid_t) json_integer_value(json_object_get(r->ready, "restore_root"));
        r->map.root_pid = r->root_pid;
        json_array_foreach(json_object_get(r->ready, "processes"), i, x)
                g_assert_cmpint(plan_mapping_add_process(&r->map, (pid_t) json_integer_value(json_object_get(x, "snapshot_pid")),
                                                         (pid_t) json_integer_value(json_object_get(x, "pid"))), ==, 0);
        json_array_foreach(json_object_get(r->ready, "threads"), i, x)
                g_assert_cmpint(plan_mapping_add_thread(&r->map, (pid_t) json_integer_value(json_object_get(x, "snapshot_tid")),
                                                        (pid_t) json_integer_value(json_object_get(x, "tid"))), ==, 0);
}

/* READY and the fds after it, or ERROR. */
void read_outcome(RestoreRun *r) {
        RestoreFrame f = recv_frame(r);
        json_error_t je;
        size_t n;

        if (f.type == RESTORE_FRAME_ERROR) {
                r->error = json_loads(f.payload, 0, &je);
                g_assert_nonnull(r->error);
                restore_frame_done(&f);
                return;
        }
        g_assert_cmpint(f.type, ==, RESTORE_FRAME_READY);
        r->ready = json_loads(f.payload, 0, &je);
        g_assert_nonnull(r->ready);
        restore_frame_done(&f);
        n = (size_t) json_integer_value(json_object_get(r->ready, "n_fds"));
        r->fds = g_new0(int, n + 1);
        while (r->n_fds < n) {
                f = recv_frame(r);
                g_assert_cmpint(f.type, ==, RESTORE_FRAME_FDS);
                memcpy(r->fds + r->n_fds, f.fds, f.n_fds * sizeof(int));
                r->n_fds += f.n_fds;
                f.n_fds = 0; /* kept */
                restore_frame_done(&f);
        }
        mapping_from_ready(r);
}

/* Start sectree-restore as uid, without sending anything yet. */
void spawn_executor_as(RestoreRun *r, uid_t uid) {
        int pair[2];

        *r = (RestoreRun) { .sock = -1 };
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
        fflush(NULL);
        r->executor = fork();
        g_assert_cmpint(r->executor, >=, 0);
        if (r->executor == 0)
                executor_child(pair[1], uid);
        close(pair[1]);
        r->sock = pair[0];
}

/* Start sectree-restore as uid with the snapshot (as a file of the given format) and the request's
 * options (a JSON object text without its braces, e.g. "\"exec\":[...]"). */
void restore_start_with(const Forest *snapshot, SnapshotFormat format, uid_t uid, const char *options,
                               RestoreRun *ret) {
        _cleanup_close_ int memfd = snapshot_memfd_as(snapshot, format);
        g_autofree char *request = g_strdup_printf("{\"version\":%d%s%s}", RESTORE_PROTOCOL_VERSION,
                                                   options ? "," : "", options ?: "");

        spawn_executor_as(ret, uid);
        g_assert_cmpint(restore_frame_send(ret->sock, RESTORE_FRAME_REQUEST, request, strlen(request), &memfd, 1), ==, 0);
        read_outcome(ret);
}

void restore_start(const Forest *snapshot, uid_t uid, const char *options, RestoreRun *ret) {
        restore_start_with(snapshot, SNAPSHOT_FORMAT_JSON, uid, options, ret);
}

/* Wait for the executor's exit; returns its status. */
int wait_executor(RestoreRun *r) {
        int status = 0;

        g_assert_cmpint(waitpid(r->executor, &status, 0), ==, r->executor);
        r->executor = 0;
        return status;
}

void restore_done(RestoreRun *r) {
        for (size_t i = 0; i < r->n_fds; i++)
                close(r->fds[i]);
        g_free(r->fds);
        json_decref(r->ready);
        json_decref(r->error);
        plan_mapping_done(&r->map);
        if (r->sock >= 0)
                close(r->sock);
        *r = (RestoreRun) { .sock = -1 };
}

/* RELEASE: the executor ends every stub and says RELEASED, then exits 0. */
void restore_release(RestoreRun *r) {
        RestoreFrame f;

        g_assert_cmpint(restore_frame_send(r->sock, RESTORE_FRAME_RELEASE, NULL, 0, NULL, 0), ==, 0);
        f = recv_frame(r);
        g_assert_cmpint(f.type, ==, RESTORE_FRAME_RELEASED);
        restore_frame_done(&f);
        g_assert_cmpint(wait_executor(r), ==, 0);
        /* nothing of the restore is left: its root is gone */
        g_assert_cmpint(kill(r->root_pid, 0), <, 0);
        restore_done(r);
}
