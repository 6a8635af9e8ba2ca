/* test-guard.c: a test program that fails (or is killed) right after its fixture started sandboxes,
 * a bus and a daemon, or scenario agents, leaves nothing behind: its output pipe reaches its end
 * as soon as it is gone, every process it named is gone, and so is its cgroup */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests-util.h"

typedef struct GuardCase {
        const char *program; /* in $SECTREE_TESTS_DIR */
        const char *path;    /* its test to run (-p) */
        const char *point;   /* $SECTREE_TEST_FAIL_AT */
        bool killed;         /* SIGKILL, not an assertion */
} GuardCase;

static const GuardCase cases[] = {
        { "test-policy-kernel", "/policy/kernel/bwrap", "bwrap", false },
        { "test-policy-kernel", "/policy/kernel/firejail", "firejail", false },
        { "test-sectreectl-policy", "/sectreectl-policy/policy", "bwrap:kill", true },
        { "test-daemon", "/daemon/startup", "scenario", false },
        { "test-daemon", "/daemon/startup", "daemon", false },
        { "test-daemon", "/daemon/startup", "daemon:kill", true },
        /* a shell in bwrap with "sleep 1000 &": only the guard kills that sleep */
        { "test-restore-daemon", "/restore-daemon/real-sandboxes", "restore-sandbox", false },
        { "test-restore-daemon", "/restore-daemon/real-sandboxes", "restore-sandbox:kill", true },
};

/* Everything the program wrote on its stdout and stderr (one pipe), read until its end: the end
 * comes only when no process holds the pipe. A bound far above what it takes (seconds) but far
 * below the runner's timeouts turns a leak into a failure rather than a hang. */
static char *read_to_end(int fd) {
        g_autoptr(GString) buf = g_string_new(NULL), out = g_string_new(NULL);
        gint64 deadline = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
        for (char *line; (line = tests_read_line(fd, buf, deadline)); g_free(line))
                g_string_append_printf(out, "%s\n", line);
        if (g_get_monotonic_time() >= deadline)
                g_error("the pipe is still open 120 s on: something the test program started outlived it");
        g_string_append(out, buf->str);
        return g_strdup(out->str);
}

/* The pids the fail point's message names ("... reached (bwrap 12, sleep 13)"). */
static GArray *named_pids(const char *out, const char *point) {
        g_autofree char *pre = g_strdup_printf("fail point %.*s reached (", (int) strcspn(point, ":"), point);
        const char *at = strstr(out, pre);
        if (!at)
                g_error("no \"%s\" in what the program wrote:\n%s", pre, out);
        GArray *pids = g_array_new(false, false, sizeof(pid_t));
        for (const char *p = at + strlen(pre); *p && *p != ')'; p++)
                if (g_ascii_isdigit(*p) && !g_ascii_isdigit(p[-1])) {
                        pid_t pid = (pid_t) atoi(p);
                        g_array_append_val(pids, pid);
                }
        g_assert_cmpuint(pids->len, >, 0);
        return pids;
}

/* Gone: no such process, or a zombie that its new parent has not reaped yet. */
static bool process_gone(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid), *stat = NULL;
        if (!g_file_get_contents(path, &stat, NULL, NULL))
                return true;
        const char *end = strrchr(stat, ')');
        return end && (end[2] == 'Z' || end[2] == 'X');
}

static bool cgroup_gone(void *path) {
        return access(path, F_OK) < 0 && errno == ENOENT;
}

static bool all_gone(void *pids) {
        GArray *a = pids;
        for (guint i = 0; i < a->len; i++)
                if (!process_gone(g_array_index(a, pid_t, i)))
                        return false;
        return true;
}

/* Wait (a minute at most) for cond; true if it came. */
static bool wait_for(bool (*cond)(void *), void *userdata) {
        for (unsigned i = 0; i < 6000; i++) {
                if (cond(userdata))
                        return true;
                g_usleep(10 * 1000);
        }
        return cond(userdata);
}

static pid_t spawn_failing(const GuardCase *c, int *ret_fd) {
        g_autofree char *program = g_build_filename(g_getenv("SECTREE_TESTS_DIR"), c->program, NULL);
        char *argv[] = { program, (char *) "-p", (char *) c->path, NULL };
        g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), "SECTREE_TEST_FAIL_AT", c->point, true);
        int fds[2];
        g_assert_cmpint(pipe2(fds, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                dup2(fds[1], STDOUT_FILENO);
                dup2(fds[1], STDERR_FILENO);
                execve(program, argv, envp);
                _exit(127);
        }
        close(fds[1]);
        *ret_fd = fds[0];
        return pid;
}

static void test_case(gconstpointer data) {
        const GuardCase *c = data;
        if (!tests_require_root() || !tests_require(tests_guard_cgroup() != NULL, "no cgroup2 hierarchy to run in"))
                return;
        int fd;
        pid_t pid = spawn_failing(c, &fd);
        g_autofree char *out = read_to_end(fd);
        close(fd);
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_test_message("%s -p %s with SECTREE_TEST_FAIL_AT=%s: status %#x", c->program, c->path, c->point, status);
        g_assert_true(WIFSIGNALED(status));
        if (c->killed)
                g_assert_cmpint(WTERMSIG(status), ==, SIGKILL);
        else
                g_assert_cmpint(WTERMSIG(status), !=, SIGKILL);

        g_autoptr(GArray) pids = named_pids(out, c->point);
        g_assert_true(wait_for(all_gone, pids));
        g_autofree char *cg_name = g_strdup_printf("sectree-test-%d", (int) pid);
        g_autofree char *cg = g_build_filename(tests_guard_cgroup(), cg_name, NULL);
        g_assert_true(wait_for(cgroup_gone, cg));
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *name = g_strdup_printf("/guard/%s/%s", cases[i].program, cases[i].point);
                g_test_add_data_func(name, &cases[i], test_case);
        }
        return g_test_run();
}
