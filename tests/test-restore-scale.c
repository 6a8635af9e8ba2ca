/* test-restore-scale.c: what makes a restore of thousands of processes cost time in proportion to
 * their number: the restored processes are forked from a small restore root, whatever the size of
 * the snapshot the executor holds (fork copies the page tables of the forker's private memory, and
 * exit tears them down); and every task is released when the caller lets go */
#include "restore-run.h"
#include "snapshot-samples.h"
#include "tests-util.h"

#define KIB 1024UL
#define MIB (1024UL * 1024)

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
        RestoreRun r;

        g_assert_nonnull(f);
        restore_start(f, 0, NULL, &r);
        root = r.root_pid;
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
        restore_release(&r); /* its root is gone too */
}

/* The restore root forks 300 processes: it runs its steps back to back as the executor lets it,
 * without waiting for the executor between two (each wait a round trip through the scheduler:
 * 300 of them, one per fork, before). */
static void test_root_runs_ahead(void) {
        _cleanup_(forest_freep) Forest *f = sample_forest_long_argv(300, 64);
        unsigned long waits;
        pid_t root;
        RestoreRun r;

        g_assert_nonnull(f);
        restore_start(f, 0, NULL, &r);
        root = r.root_pid;
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
