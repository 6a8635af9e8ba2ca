/* restore-executor.c: where a restore's executor runs (a transient unit of PID 1, or forked from
 * here), and the fork itself, as the restore's owner, with nothing of the daemon's */
#include "service/restore-executor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "config.h"
#include "service/snapshots.h"

static const char *const executor_table[_RESTORE_EXECUTOR_MAX] = {
        [RESTORE_EXECUTOR_AUTO] = "auto",
        [RESTORE_EXECUTOR_FORK] = "fork",
        [RESTORE_EXECUTOR_UNIT] = "unit",
};

RestoreExecutor restore_executor_from_string(const char *s) {
        return (RestoreExecutor) string_table_lookup(executor_table, _RESTORE_EXECUTOR_MAX, s);
}

/* Whether the daemon runs without seccomp and no_new_privs, as /proc/self/status says: only then
 * may it fork the executor, else it would hand its filters to every restored chain. */
static int check_unconfined(char **ret_message) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        bool confined = false;

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if ((strncmp(line, "Seccomp:", 8) == 0 && strtol(line + 8, NULL, 10) != 0) ||
                    (strncmp(line, "NoNewPrivs:", 11) == 0 && strtol(line + 11, NULL, 10) != 0))
                        confined = true;
        if (!confined)
                return 0;
        snapshot_set_message(ret_message, "sectreed runs under seccomp or with no_new_privs, which every task it starts "
                                 "would inherit, and not as a service of systemd, which could start the restore "
                                 "executor instead (--restore-executor=unit)");
        return -EOPNOTSUPP;
}

/* systemd runs the daemon as a service: booted with systemd, $INVOCATION_ID set, and the daemon's
 * own cgroup is a .service unit's. */
static bool under_service(void) {
        _cleanup_free_ char *unit = NULL;
        const char *id = getenv("INVOCATION_ID");

        if (!id || !*id || sd_booted() <= 0 || sd_pid_get_unit(0, &unit) < 0)
                return false;
        size_t n = strlen(unit);
        return n > 8 && streq(unit + n - 8, ".service");
}

/* Whether the executor runs as a transient unit (1) or forked (0) from here. */
int restore_executor_by_unit(RestoreExecutor e, char **ret_message) {
        switch (e) {
        case RESTORE_EXECUTOR_UNIT:
                return 1;
        case RESTORE_EXECUTOR_FORK:
                return check_unconfined(ret_message);
        default:
                return under_service() ? 1 : check_unconfined(ret_message);
        }
}

const char *restore_executor_path(void) {
        const char *e = getenv("SECTREE_RESTORE");
        return e && *e ? e : SECTREE_RESTORE_PATH;
}

/* What the executor (and so every restored task) gets as its environment when forked: nothing of
 * the daemon's; a PATH to find the commands of exec, as systemd gives its services. */
static char *const executor_env[] = {
        (char *) "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        NULL,
};

/* In the child: stdin the socket, stdout and stderr /dev/null (nothing of the daemon's: its log,
 * its terminal), the caller's limits and identity, a clean signal state, then the executor. */
__attribute__((noreturn)) static void executor_child(int sock, int exe, const RestoreCreds *c) {
        sigset_t none;
        char *argv[] = { (char *) "sectree-restore", NULL };
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < _NSIG; sig++)
                (void) signal(sig, SIG_DFL);
        if (null < 0 || dup2(sock, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
            dup2(null, STDERR_FILENO) < 0 || (exe != 3 && dup3(exe, 3, O_CLOEXEC) < 0) || close_range(4, ~0U, 0) < 0)
                _exit(126);
        if (restore_limits_apply(&c->limits) < 0)
                _exit(124);
        if (setgroups(c->n_groups, c->groups) < 0 || setresgid(c->gid, c->gid, c->gid) < 0 ||
            setresuid(c->uid, c->uid, c->uid) < 0)
                _exit(125);
        fexecve(3, argv, executor_env);
        _exit(127);
}

int restore_executor_fork(const RestoreCreds *c, int *ret_sock, pid_t *ret_pid, int *ret_pidfd, char **ret_message) {
        _cleanup_close_ int exe = open(restore_executor_path(), O_RDONLY | O_CLOEXEC);
        int pair[2];
        pid_t pid;

        if (exe < 0) {
                int k = -errno;
                snapshot_set_message(ret_message, "The restore executor %s cannot be opened: %s", restore_executor_path(), strerror(-k));
                return log_error_errno(k, "Cannot open the restore executor %s: %m", restore_executor_path());
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int k = -errno;
                close(pair[0]);
                close(pair[1]);
                return k;
        }
        if (pid == 0)
                executor_child(pair[1], exe, c);
        close(pair[1]);
        int pidfd = pidfd_open(pid, 0);
        if (pidfd < 0) {
                int k = -errno;
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                close(pair[0]);
                return k;
        }
        *ret_pid = pid;
        *ret_pidfd = pidfd;
        *ret_sock = pair[0];
        return 0;
}

uint64_t restore_executor_timeout_usec(void) {
        const char *e = getenv("SECTREE_RESTORE_TIMEOUT_USEC");
        uint64_t v;
        if (e && safe_atou64(e, &v) >= 0 && v > 0)
                return v;
        return RESTORE_TIMEOUT_USEC;
}
