/* test-scan-bpf-oneshot.c: one-shot bpf scanners (`sectreed scan`): their scan unit loads through a
 * light skeleton, the kernel resolving its CO-RE relocations, so that the process reads none of
 * the kernel's BTF; and their passes, which walk the file tables beside the task walk or in it,
 * report what a live scanner's do, listeners and a ring buffer far smaller than a pass included */
#include <linux/seccomp.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "observe/scanner.h"
#include "listener-holder.h"
#include "tests-util.h"

/* What this process has read so far (rchar of /proc/self/io). */
static uint64_t bytes_read(void) {
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents("/proc/self/io", &text, NULL, NULL));
        const char *p = strstr(text, "rchar: ");
        g_assert_nonnull(p);
        return g_ascii_strtoull(p + strlen("rchar: "), NULL, 10);
}

/* The size of the kernel's BTF, which libbpf's skeleton reads whole and a light one does not. */
static uint64_t kernel_btf_size(void) {
        struct stat st;
        g_assert_cmpint(stat("/sys/kernel/btf/vmlinux", &st), ==, 0);
        return (uint64_t) st.st_size;
}

/* A scenario whose root has a child under two filters stacked. */
static Scenario *scenario_child_two_filters(void) {
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_install(s, a, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x.a, x.na, 0), >=, 0);
        return s;
}

static BpfScanner *oneshot_new_from(BpfScannerOptions o) {
        BpfScanner *s = NULL;
        o.oneshot = true;
        g_assert_cmpint(bpf_scanner_new_with_options(&o, &s), ==, 0);
        bpf_scanner_set_beside_min_tasks(s, 0); /* whatever the tasks of the machine */
        return s;
}

static BpfScanner *oneshot_new_with(bool no_argv, bool no_exe) {
        return oneshot_new_from((BpfScannerOptions) { .no_argv = no_argv, .no_exe = no_exe });
}

static BpfScanner *oneshot_new(bool no_argv) {
        return oneshot_new_with(no_argv, false);
}

static Forest *oneshot_scan(BpfScanner *b, pid_t root) {
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        Forest *f = NULL;

        opts.root = root;
        g_assert_cmpint(bpf_scanner_scan(b, &opts, &f), ==, 0);
        g_assert_nonnull(f);
        g_assert_cmpint(f->identity, ==, IDENTITY_EXACT);
        return f;
}

/* A scan of the whole machine by b finds every listener of the holder (listener-holder.h). */
static void assert_machine_holds(BpfScanner *b, pid_t holder) {
        Forest *f = oneshot_scan(b, 0);
        listener_holder_assert(f, holder, LISTENER_HOLDER_FDS, G_N_ELEMENTS(LISTENER_HOLDER_FDS), true);
        forest_free(f);
}

/* Loading a one-shot scanner, with the command-line iterator, without, and without the
 * executables' code too (the tree's), reads far less than the kernel's BTF (libbpf's skeleton
 * reads all of /sys/kernel/btf/vmlinux, megabytes); its scans still see the scenario as it is, the
 * executables from the pass where the scanner has the code for them, else from /proc. */
static void test_no_btf_read(void) {
        if (!tests_require_root())
                return;
        uint64_t btf_size = kernel_btf_size();
        Scenario *s = scenario_child_two_filters();

        for (int variant = 0; variant <= 2; variant++) {
                bool no_exe = variant == 2;
                uint64_t before = bytes_read();
                BpfScanner *b = oneshot_new_with(variant >= 1, no_exe);
                uint64_t read = bytes_read() - before;
                g_assert_cmpuint(read, <, btf_size / 4);

                BpfScannerStats stats;
                Forest *f = oneshot_scan(b, scenario_root_pid(s));
                tests_assert_forest_matches(f, s, true);
                g_assert_cmpint(bpf_scanner_get_stats(b, &stats), ==, 0);
                if (no_exe)
                        g_assert_cmpuint(stats.exe_proc_reads, >=, f->n_processes);
                else
                        g_assert_cmpuint(stats.exe_proc_reads, ==, 0);
                g_assert_cmpuint(f->n_processes, >=, 2);
                for (size_t i = 0; i < f->n_processes; i++)
                        g_assert_nonnull(f->processes[i]->exe);
                forest_free(f);
                bpf_scanner_free(b);
        }
        scenario_free(s);
}

/* n children of parent, each under a long filter of its own: getpriority gets ERRNO(100 + i), and
 * the program is padded to pad + i instructions. */
static void fork_long_filters(Scenario *s, ScenarioTask parent, int n, size_t pad) {
        static struct sock_filter big[PROG_MAX_INSNS];
        for (int i = 0; i < n; i++) {
                ScenarioTask c = scenario_fork(s, parent);
                size_t len = scenario_filter_errno(big, SYS_getpriority, 100 + i, pad + i);
                g_assert_cmpint(scenario_install(s, c, big, len, 0), >=, 0);
        }
}

/* A listener whose filter no task holds any more: only the task_file iterator, run beside the task
 * iterator, finds it; through a ring buffer far smaller than the pass, so that both iterators wait
 * for drains, and again with the scanner kept. */
static void test_listener_beside_small_ring(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        x.a[x.na - 3].k = SECCOMP_RET_USER_NOTIF;
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask parent = scenario_fork(s, scenario_root(s));

        fork_long_filters(s, parent, 30, 2000);
        int n0 = scenario_install(s, a, x.b, x.nb, 0);
        int n1 = scenario_install(s, a, x.a, x.na, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(n1, >, n0);
        int fd = scenario_share_listener(s, n1, other);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(scenario_exit(s, a), ==, 0);
        usleep(100 * 1000);

        g_assert_cmpint(setenv("SECTREE_BPF_RINGBUF_SIZE", "65536", 1), ==, 0);
        BpfScanner *b = oneshot_new(true);
        g_assert_cmpint(unsetenv("SECTREE_BPF_RINGBUF_SIZE"), ==, 0);
        for (int pass = 0; pass < 2; pass++) {
                Forest *f = oneshot_scan(b, scenario_root_pid(s));
                g_assert_cmpuint(f->n_filters, ==, 32);
                g_assert_cmpuint(f->n_listeners, ==, 1);
                const Listener *l = f->listeners[0];
                g_assert_true(tests_listener_has_holder(l, scenario_task(s, other)->tgid, fd));
                const Filter *flt = forest_find_filter(f, l->filter_id);
                g_assert_nonnull(flt);
                g_assert_true(flt->has_listener);
                g_assert_cmpuint(flt->n_tasks, ==, 0);
                g_assert_cmpuint(flt->depth, ==, 2);
                g_assert_cmpmem(flt->insns, flt->len * sizeof(struct sock_filter), x.a,
                                x.na * sizeof(struct sock_filter));
                forest_free(f);
        }
        bpf_scanner_free(b);
        scenario_free(s);
}

static int cmp_digest(const void *a, const void *b) {
        return memcmp(a, b, PROG_DIGEST_SIZE);
}

/* The digests of f's programs, sorted, in one array of f->n_filters * PROG_DIGEST_SIZE bytes. */
static uint8_t *sorted_digests(const Forest *f) {
        uint8_t *d = g_malloc0(f->n_filters * PROG_DIGEST_SIZE + 1);
        for (size_t i = 0; i < f->n_filters; i++)
                memcpy(d + i * PROG_DIGEST_SIZE, f->filters[i]->digest, PROG_DIGEST_SIZE);
        qsort(d, f->n_filters, PROG_DIGEST_SIZE, cmp_digest);
        return d;
}

/* Many long programs behind listeners no task holds (sent by the task_file iterator) and many held
 * by tasks (sent by the task iterator), so that both iterators put records with instructions
 * together at the same time: each pass reports every program as a live scanner (which runs them
 * one after the other) does. */
static void test_programs_beside(void) {
        if (!tests_require_root())
                return;
        static struct sock_filter big[PROG_MAX_INSNS];
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        ScenarioTask parent = scenario_fork(s, scenario_root(s));

        fork_long_filters(s, parent, 40, 3000);
        for (int i = 0; i < 40; i++) {
                ScenarioTask a = scenario_fork(s, scenario_root(s));
                size_t n = scenario_filter_errno(big, SYS_getpriority, 200 + i, 3000 + i);
                big[n - 3].k = SECCOMP_RET_USER_NOTIF;
                int node = scenario_install(s, a, big, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
                g_assert_cmpint(node, >=, 0);
                g_assert_cmpint(scenario_share_listener(s, node, other), >=, 0);
                g_assert_cmpint(scenario_exit(s, a), ==, 0);
        }
        usleep(100 * 1000);

        BpfScanner *live = NULL;
        g_assert_cmpint(bpf_scanner_new(&live), ==, 0);
        Forest *want = oneshot_scan(live, scenario_root_pid(s));
        g_assert_cmpuint(want->n_filters, ==, 80);
        g_assert_cmpuint(want->n_listeners, ==, 40);
        g_autofree uint8_t *want_digests = sorted_digests(want);

        BpfScanner *b = oneshot_new(true);
        for (int pass = 0; pass < 5; pass++) {
                Forest *f = oneshot_scan(b, scenario_root_pid(s));
                g_assert_cmpuint(f->n_filters, ==, want->n_filters);
                g_assert_cmpuint(f->n_listeners, ==, want->n_listeners);
                g_autofree uint8_t *digests = sorted_digests(f);
                g_assert_cmpmem(digests, f->n_filters * PROG_DIGEST_SIZE, want_digests,
                                want->n_filters * PROG_DIGEST_SIZE);
                forest_free(f);
        }
        bpf_scanner_free(b);
        forest_free(want);
        bpf_scanner_free(live);
        scenario_free(s);
}

/* The chain of filters of the task tid in f (head first) as programs. */
static void assert_same_chains(const Forest *f, const Forest *want, pid_t tid) {
        const Task *t = forest_find_task(f, tid, NULL), *w = forest_find_task(want, tid, NULL);
        g_assert_nonnull(t);
        g_assert_nonnull(w);
        const Filter *x = t->filter, *y = w->filter;
        for (; x && y; x = x->parent, y = y->parent) {
                uint8_t digest[PROG_DIGEST_SIZE];
                g_assert_nonnull(x->insns);
                g_assert_cmpmem(x->insns, x->len * sizeof(struct sock_filter), y->insns, y->len * sizeof(struct sock_filter));
                prog_digest(x->insns, x->len, digest);
                g_assert_cmpmem(x->digest, PROG_DIGEST_SIZE, digest, PROG_DIGEST_SIZE);
                g_assert_cmpmem(x->digest, PROG_DIGEST_SIZE, y->digest, PROG_DIGEST_SIZE);
        }
        g_assert_null(x);
        g_assert_null(y);
}

/* The forest of root's subtree as a live scanner sees it. */
static Forest *live_scan(pid_t root) {
        BpfScanner *live = NULL;
        g_assert_cmpint(bpf_scanner_new(&live), ==, 0);
        Forest *f = oneshot_scan(live, root);
        bpf_scanner_free(live); /* the forest copied what it holds */
        return f;
}

/* A scanner that scans once, as `sectreed scan`'s tree output makes it; its first id map of
 * id_map_entries entries (0: sized for the machine). */
static BpfScanner *once_new(uint32_t id_map_entries) {
        return oneshot_new_from((BpfScannerOptions) { .once = true, .no_argv = true, .no_exe = true,
                                                      .id_map_entries = id_map_entries });
}

/* A scanner that scans once (`sectreed scan`) hands its programs to the forest rather than copying
 * them, and keeps none by their bytes: its forest owns them once the scanner is gone, each with
 * the digest of its bytes, as a live scanner's forest has them (two filters of the same bytes
 * included). */
static void test_once_hands_programs(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        g_assert_cmpint(scenario_install(s, b, x.b, x.nb, 0), >=, 0);
        ScenarioTask c = tests_fork_install(s, scenario_root(s), x.c, x.nc, 0);

        Forest *want = live_scan(scenario_root_pid(s));
        BpfScanner *once = once_new(0);
        Forest *f = oneshot_scan(once, scenario_root_pid(s));
        bpf_scanner_free(once); /* what the forest holds is its own */

        g_assert_cmpuint(f->n_filters, ==, want->n_filters);
        g_assert_cmpuint(f->n_filters, >=, 4);
        assert_same_chains(f, want, scenario_task(s, a)->tid);
        assert_same_chains(f, want, scenario_task(s, b)->tid);
        assert_same_chains(f, want, scenario_task(s, c)->tid);
        tests_assert_forest_matches(f, s, true);
        forest_free(f);
        forest_free(want);
        scenario_free(s);
}

/* A one-shot scanner's id map, its entries allocated when it is made, is sized for the tasks of the
 * machine; where filters outnumber its room (here a chain of 24 filters against a map of 8
 * entries), the pass finds it full and the scanner loads one four times as large, until the pass
 * fits: the forest is whole, and the same as a live scanner's. */
static void test_id_map_grows(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        for (int i = 1; i < 24; i++)
                g_assert_cmpint(scenario_install(s, a, i % 2 ? x.b : x.c, i % 2 ? x.nb : x.nc, 0), >=, 0);

        Forest *want = live_scan(scenario_root_pid(s));
        BpfScanner *once = once_new(8);
        BpfScannerStats stats;
        g_assert_cmpint(bpf_scanner_get_stats(once, &stats), ==, 0);
        g_assert_cmpuint(stats.id_map_entries, ==, 8);
        Forest *f = oneshot_scan(once, scenario_root_pid(s));
        g_assert_cmpint(bpf_scanner_get_stats(once, &stats), ==, 0);
        g_assert_cmpuint(stats.id_map_entries, >=, 32);
        bpf_scanner_free(once);

        g_assert_cmpuint(f->n_filters, ==, want->n_filters);
        g_assert_cmpuint(f->n_filters, >=, 24);
        const Task *t = forest_find_task(f, scenario_task(s, a)->tid, NULL);
        g_assert_nonnull(t);
        g_assert_cmpuint(t->filter_count, ==, 24);
        assert_same_chains(f, want, scenario_task(s, a)->tid);
        tests_assert_forest_matches(f, s, true);
        forest_free(f);
        forest_free(want);
        scenario_free(s);
}

/* A one-shot scanner's passes end without a sweep of its id map: each renews the ids of earlier
 * passes it meets. Processes come and go between passes, each with a filter of its own bytes (the
 * freed filters' memory taken again by the next): every pass reports each chain with its own
 * program, and one id per filter. */
static void test_passes_renew_ids(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        BpfScanner *b = oneshot_new(true);
        for (int pass = 0; pass < 6; pass++) {
                struct sock_filter insns[32];
                memcpy(insns, pass % 2 ? x.a : x.b, sizeof(insns));
                size_t n = pass % 2 ? x.na : x.nb;
                ScenarioTask kept = tests_fork_install(s, scenario_root(s), insns, n, 0);
                ScenarioTask gone = tests_fork_install(s, scenario_root(s), x.c, x.nc, 0);
                g_assert_cmpint(scenario_exit(s, gone), ==, 0);

                Forest *f = oneshot_scan(b, scenario_root_pid(s));
                const Task *t = forest_find_task(f, scenario_task(s, kept)->tid, NULL);
                g_assert_nonnull(t);
                g_assert_nonnull(t->filter);
                g_assert_cmpmem(t->filter->insns, t->filter->len * sizeof(struct sock_filter), insns,
                                n * sizeof(struct sock_filter));
                for (size_t i = 0; i < f->n_filters; i++)
                        for (size_t j = i + 1; j < f->n_filters; j++)
                                g_assert_cmpuint(f->filters[i]->id, !=, f->filters[j]->id);
                tests_assert_valid_snapshot(f);
                forest_free(f);
                g_assert_cmpint(scenario_exit(s, kept), ==, 0);
        }
        bpf_scanner_free(b);
        scenario_free(s);
}

/* Listeners held among many fds by a process under no filter, their installers gone: found by a
 * one-shot pass that reads the file tables beside the task walk, and by one that reads them in it
 * (beside only on machines of more tasks than this one has). */
static void test_listeners_many_fds(void) {
        if (!tests_require_root())
                return;
        pid_t holder = listener_holder_start(LISTENER_HOLDER_FDS, G_N_ELEMENTS(LISTENER_HOLDER_FDS));
        for (int beside = 0; beside < 2; beside++) {
                BpfScanner *b = oneshot_new(true);
                if (!beside)
                        bpf_scanner_set_beside_min_tasks(b, ULONG_MAX);
                Forest *f = oneshot_scan(b, holder);
                listener_holder_assert(f, holder, LISTENER_HOLDER_FDS, G_N_ELEMENTS(LISTENER_HOLDER_FDS), false);
                forest_free(f);
                assert_machine_holds(b, holder);
                bpf_scanner_free(b);
        }
        listener_holder_stop(holder);
}

/* On a kernel without may_goto (before 6.9) the light skeleton does not load and a one-shot
 * scanner loads libbpf's, whose loops are the number iterator: that scanner reads the kernel's BTF,
 * and finds the scenario and the listeners among many fds as the light one does. */
static void test_libbpf_fallback(void) {
        if (!tests_require_root())
                return;
        uint64_t btf_size = kernel_btf_size();
        Scenario *s = scenario_child_two_filters();
        pid_t holder = listener_holder_start(LISTENER_HOLDER_FDS, G_N_ELEMENTS(LISTENER_HOLDER_FDS));

        g_assert_true(g_setenv("SECTREE_TEST_BPF_NO_LIGHT", "1", true));
        uint64_t before = bytes_read();
        BpfScanner *b = oneshot_new(true);
        g_assert_cmpuint(bytes_read() - before, >=, btf_size); /* libbpf's: it read the BTF */
        g_unsetenv("SECTREE_TEST_BPF_NO_LIGHT");

        Forest *f = oneshot_scan(b, scenario_root_pid(s));
        tests_assert_forest_matches(f, s, true);
        forest_free(f);
        assert_machine_holds(b, holder);
        bpf_scanner_free(b);
        listener_holder_stop(holder);
        scenario_free(s);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/scan-bpf-oneshot/no-btf-read", test_no_btf_read);
        g_test_add_func("/scan-bpf-oneshot/listener-beside-small-ring", test_listener_beside_small_ring);
        g_test_add_func("/scan-bpf-oneshot/programs-beside", test_programs_beside);
        g_test_add_func("/scan-bpf-oneshot/listeners-many-fds", test_listeners_many_fds);
        g_test_add_func("/scan-bpf-oneshot/passes-renew-ids", test_passes_renew_ids);
        g_test_add_func("/scan-bpf-oneshot/once-hands-programs", test_once_hands_programs);
        g_test_add_func("/scan-bpf-oneshot/id-map-grows", test_id_map_grows);
        g_test_add_func("/scan-bpf-oneshot/libbpf-fallback", test_libbpf_fallback);
        return g_test_run();
}
