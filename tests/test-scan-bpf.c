/* test-scan-bpf.c: the bpf backend reports exactly the filter sharing that scenarios build */
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "observe/backends.h"
#include "observe/procinfo.h"
#include "observe/source.h"
#include "observe/scanner.h"
#include "observe/scan-bpf-pass.h"
#include "observe/scan-bpf-select.h"
#include "snapshot/snapshot.h"
#include "listener-holder.h"
#include "tests-util.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif

#define MAX_DEPTH 64
#define INSNS_ONCE_FILTERS 30

static BpfScanner *scanner;

static BpfScanner *get_scanner(void) {
        if (!scanner)
                g_assert_cmpint(bpf_scanner_new(&scanner), ==, 0);
        return scanner;
}

static Forest *scan(pid_t root) {
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        Forest *f = NULL;

        opts.root = root;
        g_assert_cmpint(bpf_scanner_scan(get_scanner(), &opts, &f), ==, 0);
        g_assert_nonnull(f);
        g_assert_true(f->linked);
        g_assert_cmpstr(f->backend, ==, "bpf");
        g_assert_cmpint(f->identity, ==, IDENTITY_EXACT);
        g_assert_cmpint(f->root, ==, root);
        return f;
}

/* Ids are small counters, never anything that looks like a kernel address. */
static void assert_ids_opaque(const Forest *f) {
        for (size_t i = 0; i < f->n_filters; i++) {
                g_assert_cmpuint(f->filters[i]->id, >, 0);
                g_assert_cmpuint(f->filters[i]->id, <, UINT64_C(1) << 32);
                g_assert_cmpint(f->filters[i]->identity, ==, IDENTITY_EXACT);
        }
}

/* Chain depths and counts agree with what the kernel says in /proc. */
static void assert_proc_agrees(const Forest *f, const Task *t, const Process *p) {
        ProcStatus st;
        uint64_t start;

        g_assert_cmpint(proc_read_status(t->tid, &st), ==, 0);
        g_assert_cmpint(st.seccomp_filters, ==, t->filter ? (int) t->filter->depth : 0);
        g_assert_cmpint(st.seccomp_filters, ==, (int) t->filter_count);
        g_assert_cmpint(st.seccomp_mode, ==, t->mode == TASK_MODE_FILTER ? SECCOMP_MODE_FILTER :
                                             t->mode == TASK_MODE_STRICT ? SECCOMP_MODE_STRICT : SECCOMP_MODE_DISABLED);
        g_assert_cmpint(proc_read_start_time(t->tid, &start), ==, 0);
        g_assert_cmpuint(start, ==, t->start_time);

        if (t->tid == p->pid) {
                g_assert_cmpint(st.ppid, ==, p->ppid);
                g_assert_cmpint(st.uid, ==, p->uid);
                g_assert_cmpint(st.gid, ==, p->gid);
                g_assert_cmpint(st.no_new_privs, ==, p->no_new_privs);
                g_assert_cmpuint(start, ==, p->start_time);
        }
}

/* The bytes of every filter of the chain agree with PTRACE_SECCOMP_GET_FILTER (index 0 = oldest). */
static void assert_ptrace_agrees(const Task *t) {
        const Filter *chain[MAX_DEPTH];
        struct sock_filter buf[PROG_MAX_INSNS];
        size_t depth;
        int status;

        if (t->mode != TASK_MODE_FILTER)
                return;
        depth = filter_chain(t->filter, chain, MAX_DEPTH);
        g_assert_cmpuint(depth, <=, MAX_DEPTH);

        g_assert_cmpint(ptrace(PTRACE_SEIZE, t->tid, NULL, NULL), ==, 0);
        g_assert_cmpint(ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL), ==, 0);
        g_assert_cmpint(waitpid(t->tid, &status, __WALL), ==, t->tid);
        for (size_t i = 0; i < depth; i++) {
                const Filter *flt = chain[depth - 1 - i];
                long n = ptrace(PTRACE_SECCOMP_GET_FILTER, t->tid, (void *) i, buf);
                g_assert_cmpint(n, ==, (long) flt->len);
                g_assert_cmpmem(buf, n * sizeof(struct sock_filter), flt->insns, flt->len * sizeof(struct sock_filter));
        }
        g_assert_cmpint(ptrace(PTRACE_SECCOMP_GET_FILTER, t->tid, (void *) depth, buf), ==, -1);
        g_assert_cmpint(errno, ==, ENOENT);
        g_assert_cmpint(ptrace(PTRACE_DETACH, t->tid, NULL, NULL), ==, 0);
}

static void assert_kernel_agrees(const Forest *f) {
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        assert_proc_agrees(f, &f->processes[i]->threads[j], f->processes[i]);
                        assert_ptrace_agrees(&f->processes[i]->threads[j]);
                }
}

static uint64_t head_id(const Forest *f, const Scenario *s, ScenarioTask t) {
        return tests_find_task(f, s, t)->filter_id;
}

/* The filter standing for node, found through a live task whose chain contains it. */
static const Filter *node_filter(const Forest *f, const Scenario *s, int node) {
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *info = scenario_task(s, (ScenarioTask) i);
                if (!info->alive || info->head < 0)
                        continue;
                const Filter *flt = forest_find_task(f, info->tid, NULL)->filter;
                for (int n = info->head; n >= 0; n = scenario_node(s, n)->parent, flt = flt->parent)
                        if (n == node)
                                return flt;
        }
        g_assert_not_reached();
}

/* Each filter's digest is that of its own program (filters with the same program take the digest
 * of the first such filter of the pass rather than hash it again). */
static void assert_digests(const Forest *f) {
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = f->filters[i];
                uint8_t d[PROG_DIGEST_SIZE];
                g_assert_nonnull(x->insns);
                prog_digest(x->insns, x->len, d);
                g_assert_cmpmem(d, sizeof(d), x->digest, sizeof(d));
        }
}

/* Scan the scenario's subtree and hold it against the ground truth and the kernel's own views. */
static Forest *scan_and_check(const Scenario *s) {
        Forest *f = scan(scenario_root_pid(s));

        tests_assert_forest_matches(f, s, true);
        assert_digests(f);
        assert_ids_opaque(f);
        assert_kernel_agrees(f);

        /* Nothing outside the subtree: every process is a live scenario process. */
        for (size_t i = 0; i < f->n_processes; i++) {
                bool found = false;
                for (size_t j = 0; j < scenario_n_tasks(s); j++) {
                        const ScenarioTaskInfo *info = scenario_task(s, (ScenarioTask) j);
                        if (info->alive && info->tgid == f->processes[i]->pid) {
                                found = true;
                                g_assert_cmpint(f->processes[i]->ppid, ==, info->ppid);
                        }
                }
                g_assert_true(found);
        }
        return f;
}

static void test_single(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_install(s, a, x.a, x.na, 0), ==, 0);

        Forest *f = scan_and_check(s);
        g_assert_cmpuint(f->n_filters, ==, 1);
        g_assert_cmpuint(f->n_processes, ==, 2); /* the root agent and a */
        g_assert_cmpuint(f->filters[0]->parent_id, ==, 0);
        forest_free(f);
        scenario_free(s);
}

static void test_chain(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        g_assert_cmpint(scenario_install_prctl(s, a, x.b, x.nb), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x.c, x.nc, 0), >=, 0);

        Forest *f = scan_and_check(s);
        g_assert_cmpuint(f->n_filters, ==, 3);
        g_assert_cmpuint(tests_find_task(f, s, a)->filter->depth, ==, 3);

        /* Ids stay what they were on the next pass. */
        Forest *g = scan_and_check(s);
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *again = forest_find_filter(g, f->filters[i]->id);
                g_assert_nonnull(again);
                g_assert_cmpuint(again->parent_id, ==, f->filters[i]->parent_id);
                g_assert_cmpmem(again->digest, sizeof(again->digest), f->filters[i]->digest, sizeof(again->digest));
        }
        forest_free(g);
        forest_free(f);
        scenario_free(s);
}

static void test_fork_shares(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, a);
        ScenarioTask c = tests_fork_install(s, a, x.b, x.nb, 0);

        Forest *f = scan_and_check(s);
        g_assert_cmpuint(head_id(f, s, a), ==, head_id(f, s, b));
        g_assert_cmpuint(tests_find_task(f, s, c)->filter->parent_id, ==, head_id(f, s, a));
        g_assert_cmpuint(f->n_filters, ==, 2);
        forest_free(f);
        scenario_free(s);
}

static void test_siblings_identical(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask p = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, p);
        ScenarioTask c = scenario_fork(s, p);
        g_assert_cmpint(scenario_install(s, b, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, c, x.b, x.nb, 0), >=, 0);

        Forest *f = scan_and_check(s);
        const Filter *fb = tests_find_task(f, s, b)->filter, *fc = tests_find_task(f, s, c)->filter;
        g_assert_cmpuint(fb->id, !=, fc->id); /* byte-identical, yet two objects */
        g_assert_cmpmem(fb->digest, sizeof(fb->digest), fc->digest, sizeof(fc->digest));
        g_assert_cmpuint(fb->parent_id, ==, fc->parent_id);
        g_assert_cmpuint(fb->parent_id, ==, head_id(f, s, p));
        bool exact;
        g_assert_cmpint(filter_cmp(fb, fc, &exact), !=, 0);
        g_assert_true(exact);
        g_assert_cmpint(filter_cmp(fb->parent, fc->parent, &exact), ==, 0);
        g_assert_true(exact);
        forest_free(f);
        scenario_free(s);
}

static void test_child_identical_to_parent(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask p = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask c = tests_fork_install(s, p, x.a, x.na, 0);

        Forest *f = scan_and_check(s);
        const Filter *fc = tests_find_task(f, s, c)->filter;
        g_assert_cmpuint(fc->depth, ==, 2);
        g_assert_cmpuint(fc->parent_id, ==, head_id(f, s, p));
        g_assert_cmpuint(fc->id, !=, fc->parent_id);
        g_assert_cmpmem(fc->digest, sizeof(fc->digest), fc->parent->digest, sizeof(fc->digest));
        forest_free(f);
        scenario_free(s);
}

static void test_tsync(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x.b, x.nb, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);

        Forest *f = scan_and_check(s);
        g_assert_cmpuint(head_id(f, s, a), ==, head_id(f, s, t1));
        g_assert_cmpuint(head_id(f, s, a), ==, head_id(f, s, t2));
        g_assert_cmpuint(forest_find_process(f, scenario_task(s, a)->tgid)->n_threads, ==, 3);
        g_assert_cmpuint(tests_find_task(f, s, t2)->filter->n_tasks, ==, 3);
        forest_free(f);
        scenario_free(s);
}

static void test_threads_diverge(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a), t3 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, x.c, x.nc, 0), >=, 0);

        Forest *f = scan_and_check(s);
        g_assert_cmpuint(tests_find_task(f, s, t1)->filter->parent_id, ==, head_id(f, s, a));
        g_assert_cmpuint(tests_find_task(f, s, t1)->filter->id, !=, tests_find_task(f, s, t2)->filter->parent_id);
        g_assert_cmpuint(head_id(f, s, t3), ==, head_id(f, s, a));
        g_assert_cmpuint(f->n_filters, ==, 4);
        forest_free(f);
        scenario_free(s);
}

/* A process with a filtered thread whose leader has none is reported whole, disabled leader too. */
static void test_disabled_leader(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask t1 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x.a, x.na, 0), >=, 0);
        Forest *f = scan(0); /* the whole machine: processes with at least one filtered thread */
        const Process *p = forest_find_process(f, scenario_task(s, a)->tgid);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->n_threads, ==, 2);
        g_assert_cmpint(tests_find_task(f, s, a)->mode, ==, TASK_MODE_DISABLED);
        g_assert_cmpint(tests_find_task(f, s, t1)->mode, ==, TASK_MODE_FILTER);
        g_assert_null(forest_find_process(f, scenario_root_pid(s))); /* no seccomp at all */
        assert_ids_opaque(f);
        forest_free(f);
        scenario_free(s);
}

static void test_log_flag(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        int n0 = scenario_install(s, a, x.a, x.na, SECCOMP_FILTER_FLAG_LOG);
        int n1 = scenario_install(s, a, x.b, x.nb, 0);
        g_assert_cmpint(n1, >, n0);

        Forest *f = scan_and_check(s);
        g_assert_true(node_filter(f, s, n0)->log);
        g_assert_false(node_filter(f, s, n1)->log);
        forest_free(f);
        scenario_free(s);
}

static void test_listener(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        tests_filters_init(&x);
        x.a[x.na - 3].k = SECCOMP_RET_USER_NOTIF; /* getpriority would notify; nobody calls it */
        Scenario *s = tests_scenario_new();
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        int n0 = scenario_install(s, a, x.b, x.nb, 0);
        int n1 = scenario_install(s, a, x.a, x.na, SECCOMP_FILTER_FLAG_NEW_LISTENER |
                                                   SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
        g_assert_cmpint(n1, >, n0);
        ScenarioTask child = scenario_fork(s, a); /* inherits the filter and the listener fd */
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        int fd = scenario_share_listener(s, n1, other);
        g_assert_cmpint(fd, >=, 0);

        Forest *f = scan_and_check(s);
        const Filter *flt = node_filter(f, s, n1);
        g_assert_true(flt->has_listener);
        g_assert_true(flt->wait_killable_recv);
        g_assert_false(node_filter(f, s, n0)->has_listener);
        g_assert_cmpuint(flt->listener_id, !=, 0);
        g_assert_cmpuint(f->n_listeners, ==, 1);

        const Listener *l = forest_find_listener(f, flt->listener_id);
        g_assert_nonnull(l);
        g_assert_cmpuint(l->filter_id, ==, flt->id);
        g_assert_cmpint(l->identity, ==, IDENTITY_EXACT);
        int lfd = scenario_node(s, n1)->listener_fd;
        g_assert_cmpuint(l->n_holders, ==, 3);
        g_assert_true(tests_listener_has_holder(l, scenario_task(s, a)->tgid, lfd));
        g_assert_true(tests_listener_has_holder(l, scenario_task(s, child)->tgid, lfd));
        g_assert_true(tests_listener_has_holder(l, scenario_task(s, other)->tgid, fd));
        g_assert_cmpuint(flt->refs, >=, 3); /* two tasks and the listener file */
        forest_free(f);

        /* The installer and its child go: the filter lives on through the other holder's fd. */
        g_assert_cmpint(scenario_exit(s, child), ==, 0);
        g_assert_cmpint(scenario_exit(s, a), ==, 0);
        usleep(100 * 1000);
        f = scan(scenario_root_pid(s));
        g_assert_cmpuint(f->n_listeners, ==, 1);
        l = f->listeners[0];
        g_assert_cmpuint(l->n_holders, ==, 1);
        g_assert_true(tests_listener_has_holder(l, scenario_task(s, other)->tgid, fd));
        flt = forest_find_filter(f, l->filter_id);
        g_assert_nonnull(flt);
        g_assert_cmpuint(flt->n_tasks, ==, 0);
        g_assert_cmpuint(flt->depth, ==, 2);
        forest_free(f);
        scenario_free(s);
}

/* A listener fd in a process whose leader has exited while a thread lives on: the leader's file
 * table went with it, and the fd is found in the thread's (and kcmp() asked of the thread). */
static void test_listener_exited_leader(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        tests_filters_init(&x);
        x.a[x.na - 3].k = SECCOMP_RET_USER_NOTIF;
        Scenario *s = tests_scenario_new();
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        int node = scenario_install(s, a, x.a, x.na, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(node, >=, 0);
        ScenarioTask t = scenario_thread(s, a);
        g_assert_cmpint(t, >=, 0);
        g_assert_cmpint(scenario_exit_leader(s, a), ==, 0);

        Forest *f = scan_and_check(s);
        pid_t pid = scenario_task(s, a)->tgid;
        g_assert_cmpuint(f->n_listeners, ==, 1);
        const Listener *l = f->listeners[0];
        g_assert_cmpuint(l->n_holders, ==, 1);
        g_assert_true(tests_listener_has_holder(l, pid, scenario_node(s, node)->listener_fd));
        g_assert_cmpuint(l->filter_id, ==, node_filter(f, s, node)->id);
        g_assert_cmpint(l->identity, ==, IDENTITY_EXACT);
        forest_free(f);
        scenario_free(s);
}

/* A supervisor without filters, outside the subtree, holds the listener fd of a filter inside it:
 * the subtree's scan includes the supervisor with all of its threads, and so does a scan of the
 * whole machine, where a single-threaded process without filters is no member otherwise. */
static void test_listener_holder_outside(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        x.a[x.na - 3].k = SECCOMP_RET_USER_NOTIF;
        ScenarioTask sandbox = scenario_fork(s, scenario_root(s));
        ScenarioTask worker = scenario_fork(s, sandbox);
        int n = scenario_install(s, sandbox, x.a, x.na, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(n, >=, 0);
        ScenarioTask super = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_thread(s, super), >=, 0);
        ScenarioTask lone = scenario_fork(s, scenario_root(s)); /* one thread, no filters */
        int fd_super = scenario_share_listener(s, n, super), fd_lone = scenario_share_listener(s, n, lone);
        g_assert_cmpint(fd_super, >=, 0);
        g_assert_cmpint(fd_lone, >=, 0);
        pid_t sandbox_pid = scenario_task(s, sandbox)->tgid;

        Forest *f = scan(sandbox_pid);
        g_assert_cmpint(f->snapshot.consistency, ==, SNAPSHOT_CONSISTENCY_ITERATOR);
        g_assert_nonnull(forest_find_process(f, sandbox_pid));
        g_assert_nonnull(forest_find_process(f, scenario_task(s, worker)->tgid));
        g_assert_null(forest_find_process(f, scenario_root_pid(s))); /* no holder: outside */
        g_assert_cmpuint(f->n_processes, ==, 4);
        g_assert_cmpuint(f->n_listeners, ==, 1);
        const Listener *l = f->listeners[0];
        g_assert_cmpuint(l->n_holders, ==, 3);
        g_assert_true(tests_listener_has_holder(l, sandbox_pid, scenario_node(s, n)->listener_fd));
        tests_assert_holder_present(f, l, s, super, fd_super, 2);
        tests_assert_holder_present(f, l, s, lone, fd_lone, 1);
        tests_assert_valid_snapshot(f);
        forest_free(f);

        f = scan(0);
        l = forest_find_listener(f, forest_find_task(f, scenario_task(s, sandbox)->tid, NULL)->filter->listener_id);
        g_assert_nonnull(l);
        tests_assert_holder_present(f, l, s, super, fd_super, 2);
        tests_assert_holder_present(f, l, s, lone, fd_lone, 1);
        /* The whole machine holds other people's processes, whose names may be any bytes: made
         * UTF-8 as CreateSnapshot makes them before it validates. */
        for (size_t i = 0; i < f->n_processes; i++)
                g_assert_cmpint(snapshot_process_make_utf8(f->processes[i]), ==, 0);
        tests_assert_valid_snapshot(f);
        forest_free(f);
        scenario_free(s);
}

/* A listener whose installer went before any pass met its filter: only the fd, held by a
 * process without filters, keeps it alive — the task_file iterator must still run and find it. */
static void test_listener_orphaned_early(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        x.a[x.na - 3].k = SECCOMP_RET_USER_NOTIF;
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        Forest *f = scan_and_check(s); /* nothing of the scenario holds a listener yet */
        g_assert_cmpuint(f->n_listeners, ==, 0);
        forest_free(f);

        int n0 = scenario_install(s, a, x.b, x.nb, 0);
        int n1 = scenario_install(s, a, x.a, x.na, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(n1, >, n0);
        int fd = scenario_share_listener(s, n1, other);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(scenario_exit(s, a), ==, 0);
        usleep(100 * 1000);

        f = scan(scenario_root_pid(s));
        g_assert_cmpuint(f->n_listeners, ==, 1);
        const Listener *l = f->listeners[0];
        g_assert_true(tests_listener_has_holder(l, scenario_task(s, other)->tgid, fd));
        const Filter *flt = forest_find_filter(f, l->filter_id);
        g_assert_nonnull(flt);
        g_assert_true(flt->has_listener);
        g_assert_cmpuint(flt->n_tasks, ==, 0);
        g_assert_cmpuint(flt->depth, ==, 2);
        g_assert_cmpmem(flt->insns, flt->len * sizeof(struct sock_filter), x.a, x.na * sizeof(struct sock_filter));
        g_assert_cmpmem(flt->parent->insns, flt->parent->len * sizeof(struct sock_filter), x.b,
                        x.nb * sizeof(struct sock_filter));
        uint64_t id = flt->id;
        forest_free(f);

        /* The next pass knows it under the same id. */
        f = scan(scenario_root_pid(s));
        g_assert_cmpuint(f->n_listeners, ==, 1);
        g_assert_cmpuint(f->listeners[0]->filter_id, ==, id);
        forest_free(f);
        scenario_free(s);
}

/* Listeners held among many fds (a bitmap of several words, with gaps, one fd above 1024) by a
 * process under no filter, their installers gone: the pass finds every one, with its filter,
 * which no task holds. */
static void test_listeners_many_fds(void) {
        if (!tests_require_root())
                return;
        pid_t holder = listener_holder_start(LISTENER_HOLDER_FDS, G_N_ELEMENTS(LISTENER_HOLDER_FDS));
        Forest *f = scan(holder);
        listener_holder_assert(f, holder, LISTENER_HOLDER_FDS, G_N_ELEMENTS(LISTENER_HOLDER_FDS), false);
        forest_free(f);
        listener_holder_stop(holder);
}

/* TestFilters are immutable: a pass sends a filter's instructions the first time the scanner meets
 * it, later passes take them from what the scanner kept, and they are still the kernel's. The
 * scanner walks the whole machine, where other programs install filters between two passes: each
 * of those is given an id and sent once, so what the second pass sent beyond the ids it gave out is
 * what it sent again, and a scanner that sends every filter every time sends ours again. */
static void test_insns_once(void) {
        if (!tests_require_root())
                return;
        struct sock_filter insns[32];
        BpfScannerStats before, after;
        Scenario *s = tests_scenario_new();
        ScenarioTask p = scenario_fork(s, scenario_root(s));
        size_t n = scenario_filter_errno(insns, SYS_acct, 1, 4);
        g_assert_cmpint(scenario_install(s, p, insns, n, 0), >=, 0);
        for (int i = 0; i < INSNS_ONCE_FILTERS; i++) {
                ScenarioTask c = scenario_fork(s, p);
                n = scenario_filter_errno(insns, SYS_getpriority, 10 + i, i % 8);
                g_assert_cmpint(scenario_install(s, c, insns, n, 0), >=, 0);
        }

        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &before), ==, 0);
        Forest *f = scan_and_check(s);
        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &after), ==, 0);
        g_assert_cmpuint(f->n_filters, ==, INSNS_ONCE_FILTERS + 1);
        g_assert_cmpuint(after.insns_sent - before.insns_sent, >=, INSNS_ONCE_FILTERS + 1);
        forest_free(f);

        /* Only filters new to the machine since then (other programs' doing) come with theirs. */
        before = after;
        f = scan_and_check(s); /* the bytes, held against PTRACE_SECCOMP_GET_FILTER */
        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &after), ==, 0);
        uint64_t sent = after.insns_sent - before.insns_sent, new_ids = after.ids_assigned - before.ids_assigned;
        g_test_message("second pass: %" PRIu64 " filters sent with their instructions, %" PRIu64 " new ids", sent,
                       new_ids);
        g_assert_cmpuint(sent, <, new_ids + INSNS_ONCE_FILTERS / 2);
        forest_free(f);
        scenario_free(s);
}

static void test_strict(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask b = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        g_assert_cmpint(scenario_strict(s, a), ==, 0);

        Forest *f = scan_and_check(s);
        const Task *t = tests_find_task(f, s, a);
        g_assert_cmpint(t->mode, ==, TASK_MODE_STRICT);
        g_assert_null(t->filter);
        forest_free(f);

        f = scan(0); /* strict mode counts as seccomp for the whole machine */
        g_assert_nonnull(forest_find_process(f, scenario_task(s, a)->tgid));
        g_assert_nonnull(forest_find_process(f, scenario_task(s, b)->tgid));
        forest_free(f);
        scenario_free(s);
}

static void test_reparent(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, a);
        ScenarioTask c = scenario_fork(s, b);
        g_assert_cmpint(scenario_install(s, b, x.b, x.nb, 0), >=, 0);
        g_assert_cmpint(scenario_exit(s, a), ==, 0);
        g_assert_cmpint(scenario_exit(s, b), ==, 0);
        usleep(100 * 1000);
        g_assert_cmpint(scenario_task(s, c)->ppid, ==, scenario_root_pid(s));

        Forest *f = scan_and_check(s);
        const Process *p = forest_find_process(f, scenario_task(s, c)->tgid);
        g_assert_cmpint(p->ppid, ==, scenario_root_pid(s));
        g_assert_cmpuint(f->n_filters, ==, 1); /* b's filter went with b */
        g_assert_null(forest_find_process(f, scenario_task(s, a)->tgid));
        forest_free(f);
        scenario_free(s);
}

static void test_root_restriction(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = tests_fork_install(s, a, x.b, x.nb, 0);
        ScenarioTask c = tests_fork_install(s, scenario_root(s), x.c, x.nc, 0);
        ScenarioTask d = scenario_fork(s, b); /* inherits b's chain */
        ScenarioTask e = scenario_fork(s, scenario_root(s));
        ScenarioTask e1 = scenario_fork(s, e); /* no seccomp anywhere below e */

        Forest *f = scan(scenario_task(s, a)->tgid);
        g_assert_cmpuint(f->n_processes, ==, 3);
        g_assert_nonnull(forest_find_process(f, scenario_task(s, a)->tgid));
        g_assert_nonnull(forest_find_process(f, scenario_task(s, b)->tgid));
        g_assert_nonnull(forest_find_process(f, scenario_task(s, d)->tgid));
        g_assert_cmpuint(f->n_filters, ==, 2);
        g_assert_cmpuint(head_id(f, s, d), ==, head_id(f, s, b));
        assert_kernel_agrees(f);
        forest_free(f);

        /* A subtree without any seccomp is reported whole, with no filters. */
        f = scan(scenario_task(s, e)->tgid);
        g_assert_cmpuint(f->n_processes, ==, 2);
        g_assert_nonnull(forest_find_process(f, scenario_task(s, e1)->tgid));
        g_assert_cmpuint(f->n_filters, ==, 0);
        forest_free(f);

        /* The whole machine: every filtered scenario process, not the unfiltered ones. */
        f = scan(0);
        g_assert_nonnull(forest_find_process(f, scenario_task(s, c)->tgid));
        g_assert_nonnull(forest_find_process(f, scenario_task(s, d)->tgid));
        g_assert_null(forest_find_process(f, scenario_task(s, e)->tgid));
        g_assert_null(forest_find_process(f, scenario_root_pid(s)));
        assert_ids_opaque(f);
        forest_free(f);

        /* A root that does not exist is an error. */
        ScanOptions opts = { .root = scenario_task(s, e1)->tgid };
        g_assert_cmpint(scenario_exit(s, e1), ==, 0);
        usleep(100 * 1000);
        g_assert_cmpint(bpf_scanner_scan(get_scanner(), &opts, &f), ==, -ESRCH);
        scenario_free(s);
}

static void test_exec(void) {
        if (!tests_require_root())
                return;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, a);
        g_assert_cmpint(scenario_exec_sleep(s, b), ==, 0);
        usleep(100 * 1000);

        Forest *f = scan_and_check(s);
        const Process *p = forest_find_process(f, scenario_task(s, b)->tgid);
        g_assert_cmpstr(p->comm, ==, "sleep");
        g_assert_nonnull(p->exe);
        g_assert_true(g_str_has_suffix(p->exe, "/sleep"));
        g_assert_nonnull(p->argv);
        g_assert_cmpstr(p->argv[0], ==, "sleep");
        g_assert_cmpstr(p->argv[1], ==, "infinity");
        g_assert_cmpuint(head_id(f, s, b), ==, head_id(f, s, a));
        forest_free(f);
        scenario_free(s);
}

/* A copy of /bin/sleep at path, executable. */
static void copy_sleep(const char *path) {
        g_autofree char *data = NULL;
        gsize len;

        g_assert_true(g_file_get_contents("/bin/sleep", &data, &len, NULL));
        g_assert_true(g_file_set_contents(path, data, (gssize) len, NULL));
        g_assert_cmpint(chmod(path, 0755), ==, 0);
}

/* dir/ddd.../ddd... (components of 250 bytes) until the path is at least len bytes long. */
static char *make_long_dir(const char *dir, size_t len) {
        GString *p = g_string_new(dir);
        char name[251];

        memset(name, 'd', sizeof(name) - 1);
        name[sizeof(name) - 1] = 0;
        while (p->len < len) {
                g_string_append_printf(p, "/%s", name);
                g_assert_cmpint(mkdir(p->str, 0755), ==, 0);
        }
        return g_string_free(p, FALSE);
}

/* The executable a pass reads in the kernel is what readlink(2) of /proc/PID/exe says, for a plain
 * one, one 3,500 bytes deep in 14 directories, one deleted after the exec and one on a file system
 * mounted for the test — and none of them is read from /proc. */
static void test_exe(void) {
        if (!tests_require_root())
                return;
        g_autofree char *tmp = g_dir_make_tmp("sectree-exe-XXXXXX", NULL);
        g_autofree char *deep = make_long_dir(tmp, 3500);
        g_autofree char *long_exe = g_strdup_printf("%s/sleep-deep", deep);
        g_autofree char *gone_exe = g_strdup_printf("%s/sleep-gone", tmp);
        g_autofree char *mnt = g_strdup_printf("%s/mnt", tmp);
        g_autofree char *mnt_exe = g_strdup_printf("%s/sleep-mounted", mnt);
        BpfScannerStats before, after;
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask plain = scenario_fork(s, a), deep_task = scenario_fork(s, a), gone = scenario_fork(s, a);
        ScenarioTask mounted = scenario_fork(s, a);

        copy_sleep(long_exe);
        copy_sleep(gone_exe);
        g_assert_cmpint(mkdir(mnt, 0755), ==, 0);
        g_assert_cmpint(mount("sectree-test", mnt, "tmpfs", 0, "size=64m"), ==, 0);
        copy_sleep(mnt_exe);
        g_assert_cmpint(scenario_exec_sleep_at(s, mounted, mnt_exe), ==, 0);
        g_assert_cmpint(scenario_exec_sleep(s, plain), ==, 0);
        g_assert_cmpint(scenario_exec_sleep_at(s, deep_task, long_exe), ==, 0);
        g_assert_cmpint(scenario_exec_sleep_at(s, gone, gone_exe), ==, 0);
        g_assert_cmpint(unlink(gone_exe), ==, 0);

        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &before), ==, 0);
        Forest *f = scan_and_check(s);
        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &after), ==, 0);
        g_assert_cmpuint(after.exe_proc_reads, ==, before.exe_proc_reads);

        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                char path[64], link[2 * PATH_MAX];
                snprintf(path, sizeof(path), "/proc/%d/exe", (int) p->pid);
                ssize_t n = readlink(path, link, sizeof(link) - 1);
                g_assert_cmpint(n, >, 0);
                link[n] = 0;
                g_assert_cmpstr(p->exe, ==, link);
        }
        const Process *p = forest_find_process(f, scenario_task(s, deep_task)->tgid);
        g_assert_cmpstr(p->exe, ==, long_exe);
        g_assert_cmpuint(strlen(p->exe), >, 3500);
        p = forest_find_process(f, scenario_task(s, gone)->tgid);
        g_autofree char *gone_shown = g_strdup_printf("%s (deleted)", gone_exe);
        g_assert_cmpstr(p->exe, ==, gone_shown);
        p = forest_find_process(f, scenario_task(s, mounted)->tgid);
        g_assert_cmpstr(p->exe, ==, mnt_exe);

        forest_free(f);
        scenario_free(s);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
        g_assert_cmpint(rmdir(mnt), ==, 0);
        g_assert_cmpint(unlink(long_exe), ==, 0);
        for (char *slash; (slash = strrchr(deep, '/')) && strlen(deep) > strlen(tmp); *slash = 0)
                g_assert_cmpint(rmdir(deep), ==, 0);
        g_assert_cmpint(rmdir(tmp), ==, 0);
}

/* /proc/PID/cmdline of pid as a strv. */
static char **proc_cmdline(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/cmdline", (int) pid), *data = NULL;
        GPtrArray *a = g_ptr_array_new();
        gsize len;

        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        for (gsize off = 0; off < len; off += strlen(data + off) + 1)
                g_ptr_array_add(a, g_strdup(data + off));
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

/* argv is there only when asked for, and then read by the argv iterator (no /proc read) as
 * /proc/PID/cmdline has it: agents (the test binary's own arguments) and exec'd sleeps. */
static void test_argv(void) {
        if (!tests_require_root())
                return;
        BpfScannerStats before, after;
        ScanOptions opts = { .root = 0, .include_exe = true };
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        ScenarioTask b = scenario_fork(s, a);
        Forest *f = NULL;

        (void) scenario_thread(s, a);
        g_assert_cmpint(scenario_exec_sleep(s, b), ==, 0);
        opts.root = scenario_root_pid(s);

        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &before), ==, 0);
        g_assert_cmpint(bpf_scanner_scan(get_scanner(), &opts, &f), ==, 0);
        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &after), ==, 0);
        g_assert_cmpuint(f->n_processes, ==, 3);
        for (size_t i = 0; i < f->n_processes; i++)
                g_assert_null(f->processes[i]->argv);
        g_assert_cmpuint(after.argv_passes, ==, before.argv_passes);
        g_assert_cmpuint(after.argv_proc_reads, ==, before.argv_proc_reads);
        forest_free(f);

        opts.include_argv = true;
        g_assert_cmpint(bpf_scanner_scan(get_scanner(), &opts, &f), ==, 0);
        g_assert_cmpint(bpf_scanner_get_stats(get_scanner(), &before), ==, 0);
        g_assert_cmpuint(before.argv_passes, ==, after.argv_passes + 1);
        g_assert_cmpuint(before.argv_proc_reads, ==, after.argv_proc_reads);
        for (size_t i = 0; i < f->n_processes; i++) {
                g_auto(GStrv) want = proc_cmdline(f->processes[i]->pid);
                g_assert_nonnull(f->processes[i]->argv);
                g_assert_cmpstrv(f->processes[i]->argv, want);
        }
        g_assert_cmpstr(forest_find_process(f, scenario_task(s, b)->tgid)->argv[1], ==, "infinity");
        forest_free(f);
        scenario_free(s);
}

/* Many tasks sharing and stacking long filters, scanned through a ring buffer far smaller than
 * a pass: objects are retried after each drain, and nothing may be lost or doubled. */
static void test_many_small_ring(void) {
        if (!tests_require_root())
                return;
        static struct sock_filter big[PROG_MAX_INSNS];
        BpfScanner *small = NULL;
        Scenario *s = tests_scenario_new();
        ScenarioTask parent = scenario_fork(s, scenario_root(s));

        for (int i = 0; i < 6; i++) {
                size_t n = scenario_filter_errno(big, SYS_getpriority, i + 1, 3000 - 8 - i);
                g_assert_cmpint(scenario_install(s, parent, big, n, 0), >=, 0);
        }
        for (int i = 0; i < 40; i++) {
                ScenarioTask c = scenario_fork(s, parent);
                size_t n = scenario_filter_errno(big, SYS_getpriority, 100 + i, 2000 + i);
                g_assert_cmpint(scenario_install(s, c, big, n, 0), >=, 0);
                if (i % 4 == 0)
                        (void) scenario_thread(s, c);
        }

        Forest *f = scan_and_check(s);
        g_assert_cmpuint(f->n_filters, ==, 46);

        g_assert_cmpint(setenv("SECTREE_BPF_RINGBUF_SIZE", "65536", 1), ==, 0);
        g_assert_cmpint(bpf_scanner_new(&small), ==, 0);
        g_assert_cmpint(unsetenv("SECTREE_BPF_RINGBUF_SIZE"), ==, 0);
        for (int pass = 0; pass < 2; pass++) {
                ScanOptions opts = { .root = scenario_root_pid(s) };
                Forest *g = NULL;
                g_assert_cmpint(bpf_scanner_scan(small, &opts, &g), ==, 0);
                tests_assert_forest_matches(g, s, true);
                g_assert_cmpuint(g->n_filters, ==, 46);
                g_assert_cmpuint(g->n_processes, ==, f->n_processes);
                forest_free(g);
        }
        bpf_scanner_free(small);
        forest_free(f);
        scenario_free(s);
}

/* A pid that named a process a moment ago and names none now. */
static pid_t dead_pid(void) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                _exit(0);
        g_assert_cmpint(waitpid(pid, NULL, 0), ==, pid);
        return pid;
}

/* A scan that fails is logged once, by the scanner, with its cause: the source does not log it
 * again. */
static void test_failure_logged_once(void) {
        _cleanup_(source_freep) Source *src = NULL;
        _cleanup_(forest_freep) Forest *f = NULL;
        g_autofree char *path = g_build_filename(g_get_tmp_dir(), "test-scan-bpf-log-XXXXXX", NULL);
        g_autofree char *text = NULL;
        int fd = g_mkstemp(path), saved = dup(STDERR_FILENO);
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;

        g_assert_cmpint(source_new(&(SourceOptions) { .backend = BACKEND_BPF, .oneshot = true }, &src), ==, 0);
        opts.root = dead_pid();
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
        int r = source_scan(src, &opts, &f);
        g_assert_cmpint(dup2(saved, STDERR_FILENO), ==, STDERR_FILENO);
        close(saved);
        close(fd);
        g_assert_cmpint(r, <, 0);
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        (void) unlink(path);
        g_autofree char *want = g_strdup_printf("Process %d not found.\n", opts.root);
        g_assert_cmpstr(text, ==, want);
}

static int cmp_rec_tgid_tid(const void *a, const void *b) {
        const struct scan_rec_task *x = a, *y = b;
        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The pass's task records come in tid order; spans need them by process and thread. Nearly
 * sorted input (a process's later threads after other processes, pids wrapped around at the
 * end), and shuffled input, come out as a full sort puts them, each record whole. */
static void test_spans_order(void) {
        GRand *rand = g_rand_new_with_seed(23);
        for (int trial = 0; trial < 300; trial++) {
                PassRecords r = {};
                size_t n = 1 + (size_t) g_rand_int_range(rand, 0, 400);
                g_assert_cmpint(GROW(r.tasks, r.n_tasks_allocated, n), ==, 0);
                uint32_t next = 300 + (uint32_t) g_rand_int_range(rand, 0, 1000);
                for (size_t i = 0; i < n; i++) {
                        struct scan_rec_task *t = &r.tasks[i];
                        *t = (struct scan_rec_task) { .type = SCAN_REC_TASK };
                        int kind = trial % 3 == 2 ? 3 : g_rand_int_range(rand, 0, 10);
                        t->tid = next++;
                        if (kind == 0 && i > 0) /* a thread of an earlier process */
                                t->tgid = r.tasks[g_rand_int_range(rand, 0, (int32_t) i)].tgid;
                        else if (kind == 1 && i > n / 2) /* pids wrapped around */
                                t->tid = t->tgid = (uint32_t) g_rand_int_range(rand, 2, 300);
                        else if (kind == 3) /* shuffled */
                                t->tid = t->tgid = (uint32_t) g_rand_int_range(rand, 2, 5000);
                        else
                                t->tgid = t->tid;
                        t->ppid = t->tgid + 7; /* a mark of the record, checked below */
                }
                r.n_tasks = n;
                g_autofree struct scan_rec_task *want = g_memdup2(r.tasks, n * sizeof(*want));
                qsort(want, n, sizeof(*want), cmp_rec_tgid_tid);

                ProcSpan *spans = NULL;
                size_t n_spans = 0, covered = 0;
                g_assert_cmpint(bpf_spans_build(&r, &spans, &n_spans), ==, 0);
                g_assert_cmpuint(r.n_tasks, ==, n);
                for (size_t i = 0; i < n; i++) {
                        g_assert_cmpuint(r.tasks[i].tgid, ==, want[i].tgid);
                        g_assert_cmpuint(r.tasks[i].tid, ==, want[i].tid);
                        g_assert_cmpuint(r.tasks[i].ppid, ==, r.tasks[i].tgid + 7);
                }
                for (size_t i = 0; i < n_spans; i++) {
                        g_assert_true(i == 0 || spans[i - 1].pid < spans[i].pid);
                        for (size_t j = spans[i].first; j < spans[i].first + spans[i].n; j++)
                                g_assert_cmpint((pid_t) r.tasks[j].tgid, ==, spans[i].pid);
                        covered += spans[i].n;
                }
                g_assert_cmpuint(covered, ==, n);
                free(spans);
                bpf_pass_records_free(&r);
        }
        g_rand_free(rand);
}

int main(int argc, char **argv) {
        int r;

        tests_init(&argc, &argv);
        g_test_add_func("/scan-bpf/spans-order", test_spans_order);
        g_test_add_func("/scan-bpf/single", test_single);
        g_test_add_func("/scan-bpf/chain", test_chain);
        g_test_add_func("/scan-bpf/fork-shares", test_fork_shares);
        g_test_add_func("/scan-bpf/siblings-identical", test_siblings_identical);
        g_test_add_func("/scan-bpf/child-identical-to-parent", test_child_identical_to_parent);
        g_test_add_func("/scan-bpf/tsync", test_tsync);
        g_test_add_func("/scan-bpf/threads-diverge", test_threads_diverge);
        g_test_add_func("/scan-bpf/disabled-leader", test_disabled_leader);
        g_test_add_func("/scan-bpf/log-flag", test_log_flag);
        g_test_add_func("/scan-bpf/listener", test_listener);
        g_test_add_func("/scan-bpf/listener-exited-leader", test_listener_exited_leader);
        g_test_add_func("/scan-bpf/listener-orphaned-early", test_listener_orphaned_early);
        g_test_add_func("/scan-bpf/listener-holder-outside", test_listener_holder_outside);
        g_test_add_func("/scan-bpf/listeners-many-fds", test_listeners_many_fds);
        g_test_add_func("/scan-bpf/insns-once", test_insns_once);
        g_test_add_func("/scan-bpf/strict", test_strict);
        g_test_add_func("/scan-bpf/reparent", test_reparent);
        g_test_add_func("/scan-bpf/root-restriction", test_root_restriction);
        g_test_add_func("/scan-bpf/exec", test_exec);
        g_test_add_func("/scan-bpf/exe", test_exe);
        g_test_add_func("/scan-bpf/argv", test_argv);
        g_test_add_func("/scan-bpf/many-small-ring", test_many_small_ring);
        g_test_add_func("/scan-bpf/failure-logged-once", test_failure_logged_once);
        r = g_test_run();
        bpf_scanner_free(scanner);
        return r;
}
