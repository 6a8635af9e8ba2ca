/* test-restore-scale.c: what makes a restore of thousands of processes cost time in proportion to
 * their number: the restored processes are forked from a small restore root, whatever the size of
 * the snapshot the executor holds (fork copies the page tables of the forker's private memory, and
 * exit tears them down); and every task is released when the caller lets go */
#include <fcntl.h>
#include <jansson.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "plan/plan-protocol.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot.h"
#include "tests-util.h"

#define FRAME_TIMEOUT_USEC (120 * 1000 * 1000ULL)
#define KIB 1024UL
#define MIB (1024UL * 1024)

extern char **environ;

typedef struct Run {
        pid_t executor;
        int sock;
        json_t *ready;
        int *fds;
        size_t n_fds;
} Run;

static void executor_child(int sock) {
        const char *path = g_getenv("SECTREE_RESTORE");
        char *argv[] = { (char *) "sectree-restore", NULL };
        int null = open("/dev/null", O_RDWR | O_CLOEXEC), exe = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

        if (exe < 0 || null < 0 || dup2(sock, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
            (exe != 3 && dup3(exe, 3, O_CLOEXEC) < 0) || close_range(4, ~0U, 0) < 0)
                _exit(126);
        fexecve(3, argv, environ);
        _exit(127);
}

/* sectree-restore with f as the snapshot, until READY and its fds. */
static void restore_start(const Forest *f, Run *r) {
        _cleanup_close_ int memfd = memfd_create("snapshot", MFD_CLOEXEC);
        g_autofree char *request = g_strdup_printf("{\"version\":%d}", RESTORE_PROTOCOL_VERSION);
        RestoreFrame fr = {};
        int pair[2];
        size_t n;

        g_assert_cmpint(memfd, >=, 0);
        g_assert_cmpint(snapshot_write_fd(f, SNAPSHOT_FORMAT_JSON, memfd), ==, 0);
        g_assert_cmpint(lseek(memfd, 0, SEEK_SET), ==, 0);
        *r = (Run) { .sock = -1 };
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
        fflush(NULL);
        r->executor = fork();
        g_assert_cmpint(r->executor, >=, 0);
        if (r->executor == 0)
                executor_child(pair[1]);
        close(pair[1]);
        r->sock = pair[0];
        g_assert_cmpint(restore_frame_send(r->sock, RESTORE_FRAME_REQUEST, request, strlen(request), &memfd, 1), ==, 0);
        g_assert_cmpint(restore_frame_recv(r->sock, FRAME_TIMEOUT_USEC, &fr), ==, 0);
        if (fr.type != RESTORE_FRAME_READY)
                g_error("sectree-restore answered %s: %s", restore_frame_type_to_string(fr.type) ?: "?",
                        fr.payload ?: "");
        r->ready = json_loads(fr.payload, 0, NULL);
        g_assert_nonnull(r->ready);
        restore_frame_done(&fr);
        n = (size_t) json_integer_value(json_object_get(r->ready, "n_fds"));
        r->fds = g_new0(int, n + 1);
        while (r->n_fds < n) {
                g_assert_cmpint(restore_frame_recv(r->sock, FRAME_TIMEOUT_USEC, &fr), ==, 0);
                g_assert_cmpint(fr.type, ==, RESTORE_FRAME_FDS);
                memcpy(r->fds + r->n_fds, fr.fds, fr.n_fds * sizeof(int));
                r->n_fds += fr.n_fds;
                fr.n_fds = 0;
                restore_frame_done(&fr);
        }
}

/* Closing the socket releases every task; the executor exits 0. */
static void restore_release(Run *r) {
        int status = 0;

        for (size_t i = 0; i < r->n_fds; i++)
                close(r->fds[i]);
        g_free(r->fds);
        json_decref(r->ready);
        close(r->sock);
        g_assert_cmpint(waitpid(r->executor, &status, 0), ==, r->executor);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A number of /proc/PID/status (kB for sizes). */
static unsigned long status_number(pid_t pid, const char *field) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", pid), *text = NULL;
        const char *at;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        at = strstr(text, field);
        g_assert_nonnull(at);
        return strtoul(at + strlen(field) + 1, NULL, 10);
}

/* A snapshot the executor holds tens of MiB for (long command lines): the restored processes and
 * their root must not carry that memory. Forked from the executor after it read the snapshot,
 * each had all of it mapped (RssAnon over 16 MiB here), and each fork copied its page tables. */
static void test_small_root(void) {
        _cleanup_(forest_freep) Forest *f = sample_forest_long_argv(16, 1 * MIB);
        json_t *x;
        size_t i;
        pid_t root;
        Run r;

        g_assert_nonnull(f);
        restore_start(f, &r);
        root = (pid_t) json_integer_value(json_object_get(r.ready, "restore_root"));
        g_assert_cmpint(root, >, 0);
        g_test_message("restore root %d: RssAnon %lu kB, executor %d: RssAnon %lu kB", root, status_number(root, "RssAnon:"),
                       r.executor, status_number(r.executor, "RssAnon:"));
        g_assert_cmpuint(status_number(r.executor, "RssAnon:"), >, 16 * KIB); /* the executor does hold it */
        g_assert_cmpuint(status_number(root, "RssAnon:"), <, 8 * KIB);
        g_assert_cmpuint(json_array_size(json_object_get(r.ready, "processes")), ==, 16);
        json_array_foreach(json_object_get(r.ready, "processes"), i, x) {
                pid_t pid = (pid_t) json_integer_value(json_object_get(x, "pid"));
                g_assert_cmpuint(status_number(pid, "RssAnon:"), <, 8 * KIB);
        }
        restore_release(&r);
        g_assert_cmpint(kill(root, 0), <, 0);
}

/* The restore root forks 300 processes: it runs its steps back to back as the executor lets it,
 * without waiting for the executor between two (each wait a round trip through the scheduler:
 * 300 of them, one per fork, before). */
static void test_root_runs_ahead(void) {
        _cleanup_(forest_freep) Forest *f = sample_forest_long_argv(300, 64);
        unsigned long waits;
        pid_t root;
        Run r;

        g_assert_nonnull(f);
        restore_start(f, &r);
        root = (pid_t) json_integer_value(json_object_get(r.ready, "restore_root"));
        g_assert_cmpuint(json_array_size(json_object_get(r.ready, "processes")), ==, 300);
        waits = status_number(root, "voluntary_ctxt_switches:");
        g_test_message("restore root %d: %lu voluntary context switches for 300 forks", root, waits);
        g_assert_cmpuint(waits, <, 100);
        restore_release(&r);
}

int main(int argc, char *argv[]) {
        tests_init(&argc, &argv);
        g_test_add_func("/restore-scale/small-root", test_small_root);
        g_test_add_func("/restore-scale/root-runs-ahead", test_root_runs_ahead);
        return g_test_run();
}
