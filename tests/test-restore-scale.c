/* test-restore-scale.c: what makes a restore of thousands of processes cost time in proportion to
 * their number: the restored processes are forked from a small restore root, whatever the size of
 * the snapshot the executor holds (fork copies the page tables of the forker's private memory, and
 * exit tears them down); and every task is released when the caller lets go */
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "restore-run.h"
#include "snapshot-samples.h"
#include "tests-util.h"

#define KIB 1024UL
#define MIB (1024UL * 1024)

/* The number after field in /proc/PID/file (status: kB for sizes; io: counts). */
static unsigned long proc_number(pid_t pid, const char *file, const char *field) {
        g_autofree char *path = g_strdup_printf("/proc/%d/%s", pid, file), *text = NULL;
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
        g_test_message("restore root %d: RssAnon %lu kB, executor %d: RssAnon %lu kB", root,
                       proc_number(root, "status", "RssAnon:"), r.executor, proc_number(r.executor, "status", "RssAnon:"));
        g_assert_cmpuint(proc_number(r.executor, "status", "RssAnon:"), >, 16 * KIB); /* the executor does hold it */
        g_assert_cmpuint(proc_number(root, "status", "RssAnon:"), <, 8 * KIB);
        g_assert_cmpuint(json_array_size(json_object_get(r.ready, "processes")), ==, 16);
        json_array_foreach(json_object_get(r.ready, "processes"), i, x) {
                pid_t pid = (pid_t) json_integer_value(json_object_get(x, "pid"));
                g_assert_cmpuint(proc_number(pid, "status", "RssAnon:"), <, 8 * KIB);
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
        waits = proc_number(root, "status", "voluntary_ctxt_switches:");
        g_test_message("restore root %d: %lu voluntary context switches for 300 forks", root, waits);
        g_assert_cmpuint(waits, <, 100);
        restore_release(&r);
}

/* The shared objects of /proc/PID/maps, one per mapping, and the number of mappings in *ret_n. */
static GString *shared_objects(pid_t pid, size_t *ret_n) {
        g_autofree char *path = g_strdup_printf("/proc/%d/maps", pid), *text = NULL;
        g_auto(GStrv) lines = NULL;
        GString *objects = g_string_new(NULL);

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        *ret_n = 0;
        for (size_t i = 0; lines[i] && lines[i][0]; i++) {
                const char *file = strchr(lines[i], '/');
                (*ret_n)++;
                if (file && strstr(file, ".so"))
                        g_string_append_printf(objects, "%s\n", file);
        }
        return objects;
}

/* A restored process maps what the runtime runs and nothing else: the executor is linked
 * statically (executor/meson.build), so no library at all. Its libraries were a third of its 54
 * mappings once, libc and the loader half of the 28 left after the root unmapped the others; each
 * is copied by every fork and torn down by every exit. */
static void test_no_executor_libraries(void) {
        _cleanup_(forest_freep) Forest *f = sample_forest_long_argv(4, 64);
        size_t i, n;
        json_t *x;
        RestoreRun r;

        g_assert_nonnull(f);
        restore_start(f, 0, NULL, &r);
        json_array_foreach(json_object_get(r.ready, "processes"), i, x) {
                pid_t pid = (pid_t) json_integer_value(json_object_get(x, "pid"));
                g_autoptr(GString) objects = shared_objects(pid, &n);
                g_test_message("process %d: %zu mappings", pid, n);
                if (objects->len > 0)
                        g_error("restored process %d maps shared objects:\n%s", pid, objects->str);
                g_assert_cmpuint(n, <, 20);
        }
        g_autoptr(GString) root_objects = shared_objects(r.root_pid, &n);
        g_assert_cmpstr(root_objects->str, ==, "");
        restore_release(&r);
}

/* The workload's shape: process 100 under a filter forks n children with no_new_privs, every other
 * one with a filter of its own on top. */
static Forest *fan_forest(size_t n) {
        static const struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        Forest *f = forest_new();
        Filter *flt;
        Process *p;
        Task *t;

        g_assert_nonnull(f);
        f->backend = g_strdup("bpf");
        f->identity = IDENTITY_EXACT;
        f->created_at_usec = 1764745249123456ULL;
        f->root = 100;
        f->snapshot.consistency = SNAPSHOT_CONSISTENCY_ITERATOR;
        g_assert_cmpint(forest_add_filter(f, 1, 0, allow, 1, &flt), ==, 0);
        for (size_t i = 0; i <= n; i++) {
                pid_t pid = 100 + (pid_t) i;
                uint64_t filter = i % 2 == 1 ? 1 + (uint64_t) pid : 1;
                if (filter != 1)
                        g_assert_cmpint(forest_add_filter(f, filter, 1, allow, 1, &flt), ==, 0);
                g_assert_cmpint(forest_add_process(f, pid, &p), ==, 0);
                p->ppid = i == 0 ? 1 : 100;
                p->start_time = 10 + i;
                p->no_new_privs = true;
                snprintf(p->comm, sizeof(p->comm), "fan");
                g_assert_cmpint(process_add_thread(p, pid, &t), ==, 0);
                t->mode = TASK_MODE_FILTER;
                t->filter_id = filter;
        }
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        return f;
}

/* The sum of field in /proc/PID/file for each restored child of the fan's root (snapshot
 * pid 100), of which there must be n. */
static unsigned long children_sum(const RestoreRun *r, const char *file, const char *field, size_t n) {
        unsigned long sum = 0;
        size_t got = 0, i;
        json_t *x;

        json_array_foreach(json_object_get(r->ready, "processes"), i, x) {
                if (json_integer_value(json_object_get(x, "snapshot_pid")) == 100)
                        continue;
                sum += proc_number((pid_t) json_integer_value(json_object_get(x, "pid")), file, field);
                got++;
        }
        g_assert_cmpuint(got, ==, n);
        return sum;
}

/* Each child of a process that forks a thousand runs its steps (its filter, no_new_privs, park) as
 * soon as it is made, in one go: issued with the fork that makes it, it does not wait for the
 * executor to take the fork in, nor for the window of steps the executor looks at to reach its
 * last steps, which the plan lists after every fork (2.4-2.7 waits each before, one now: its
 * park). */
static void test_children_run_ahead(void) {
        _cleanup_(forest_freep) Forest *f = fan_forest(1000);
        size_t n = 1000;
        RestoreRun r;

        restore_start(f, 0, NULL, &r);
        unsigned long waits = children_sum(&r, "status", "voluntary_ctxt_switches:", n);
        g_test_message("1000 children: %lu voluntary context switches (%.2f each)", waits, (double) waits / (double) n);
        g_assert_cmpuint(waits, <, 3 * n / 2); /* one each: its park */
        restore_release(&r);
}

/* A child that runs its filter, no_new_privs and park in one go wakes the executor once, after
 * the last (the executor issued them together and has nothing to do between them): one write(2)
 * to the report eventfd per child, where each step wrote one before (2.5 each). */
static void test_one_report_per_child(void) {
        _cleanup_(forest_freep) Forest *f = fan_forest(1000);
        size_t n = 1000;
        RestoreRun r;

        restore_start(f, 0, NULL, &r);
        unsigned long writes = children_sum(&r, "io", "syscw:", n);
        g_test_message("1000 children: %lu write(2) calls (%.2f each)", writes, (double) writes / (double) n);
        g_assert_cmpuint(writes, <, 3 * n / 2);
        restore_release(&r);
}

int main(int argc, char *argv[]) {
        tests_init(&argc, &argv);
        g_test_add_func("/restore-scale/small-root", test_small_root);
        g_test_add_func("/restore-scale/root-runs-ahead", test_root_runs_ahead);
        g_test_add_func("/restore-scale/children-run-ahead", test_children_run_ahead);
        g_test_add_func("/restore-scale/no-executor-libraries", test_no_executor_libraries);
        g_test_add_func("/restore-scale/one-report-per-child", test_one_report_per_child);
        return g_test_run();
}
