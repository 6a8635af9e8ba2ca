/* test-ptrace-daemon.c: the real sectreed with the ptrace backend on a private dbus-daemon, where
 * the ptrace backend differs from the bpf one: snapshots refused to unprivileged callers, listeners
 * held by processes they may not see, and tasks another tracer holds */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "scenario.h"
#include "tests-util.h"

#define NOBODY 65534

static char *ptrace_args[] = { (char *) "--backend=ptrace", NULL };

/* ---- a refused snapshot leaves the daemon's fds alone ---- */

/* A process of nobody under a filter, with a child that made itself not dumpable (nobody may not
 * stop it): *ret_child is the child. */
static pid_t spawn_nobody_with_hidden_child(pid_t *ret_child) {
        int ready[2];
        pid_t parent = getpid();
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_filter insns[16];
                size_t n = scenario_filter_errno(insns, SYS_acct, 3, 0);
                struct sock_fprog prog = { .len = (unsigned short) n, .filter = insns };
                close(ready[0]);
                tests_become(NOBODY);
                /* dumpable again: the change of credentials made it not */
                if (getppid() != parent || prctl(PR_SET_DUMPABLE, 1) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(2);
                pid_t child = fork();
                if (child == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        prctl(PR_SET_DUMPABLE, 0);
                        (void) !write(ready[1], &(pid_t) { getpid() }, sizeof(pid_t));
                        pause();
                        _exit(0);
                }
                pause();
                _exit(0);
        }
        close(ready[1]);
        g_assert_cmpint(read(ready[0], ret_child, sizeof(pid_t)), ==, sizeof(pid_t));
        close(ready[0]);
        return pid;
}

typedef struct RefusedCase {
        pid_t refused_root, hidden, mine;
} RefusedCase;

static void refused_part(void *userdata) {
        RefusedCase *c = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        /* each refusal runs in the lane's worker, whose eventfd may be the lowest free fd */
        for (int i = 0; i < 4; i++) {
                g_assert_cmpuint(bus_client_create_snapshot(bus, c->refused_root, NULL, &error), ==, 0);
                if (!sd_bus_error_has_name(&error, SD_BUS_ERROR_ACCESS_DENIED))
                        g_error("refused snapshot %d: expected AccessDenied, got %s: %s", i, error.name, error.message);
                g_autofree char *pid = g_strdup_printf("Process %d ", (int) c->hidden);
                if (!strstr(error.message, pid))
                        g_error("refused snapshot %d does not name process %d: %s", i, (int) c->hidden, error.message);
                sd_bus_error_free(&error);
        }
        /* and the lane still serves */
        for (int i = 0; i < 2; i++)
                g_assert_cmpuint(bus_client_create_ok(bus, c->mine, NULL), >, 0);
        sd_bus_flush_close_unref(bus);
}

/* A non-root caller's snapshot of a subtree holding a process it may not stop is refused by the
 * ptrace scan before anything is stopped; the refusal closes no fd of the daemon's (it once closed
 * fd 0, and later the eventfd of the transfer lane that landed there: the lane was stuck). */
static void test_refused_snapshot(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, ptrace_args, NULL))
                return;
        RefusedCase c;
        c.refused_root = spawn_nobody_with_hidden_child(&c.hidden);
        c.mine = tests_spawn_nobody("ptrace-mine", true); /* after them: above them in /proc */
        int status = tests_as_nobody(refused_part, &c);
        if (status != 0)
                g_error("the part run as nobody failed (status %d)", status);
        /* the daemon's stdin is still what it was started with */
        g_autofree char *fd0 = g_strdup_printf("/proc/%d/fd/0", (int) b.daemon_pid);
        g_autofree char *target = g_file_read_link(fd0, NULL);
        g_assert_nonnull(target);
        g_assert_null(strstr(target, "eventfd"));
        kill(c.refused_root, SIGKILL);
        kill(c.mine, SIGKILL);
        waitpid(c.refused_root, NULL, 0);
        waitpid(c.mine, NULL, 0);
        bus_fixture_finish(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/ptrace-daemon/refused-snapshot", test_refused_snapshot);
        return g_test_run();
}
