/* test-scan-ptrace.c: the ptrace backend on real scenarios: bytes and flags per chain position,
 * inferred sharing, depths, tasks left running, unreadable tasks, listeners grouped by kcmp */
#include <linux/seccomp.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "core/forest-iso.h"
#include "observe/procinfo.h"
#include "observe/scanner.h"
#include "tests-util.h"

#define MAX_FILTER 64

static void scenario_freep(Scenario **s) {
        scenario_free(*s);
}
#define _cleanup_scenario_ _cleanup_(scenario_freep)

static ScenarioTask fork_task(Scenario *s, ScenarioTask parent) {
        ScenarioTask t = scenario_fork(s, parent);
        g_assert_cmpint(t, >=, 0);
        return t;
}

static ScenarioTask thread_task(Scenario *s, ScenarioTask t) {
        ScenarioTask n = scenario_thread(s, t);
        g_assert_cmpint(n, >=, 0);
        return n;
}

/* A filter returning ERRNO(errno_value) for nr; pad makes byte-different variants. */
static int install_errno(Scenario *s, ScenarioTask t, int nr, int errno_value, size_t pad, unsigned flags) {
        struct sock_filter insns[MAX_FILTER];
        size_t n = scenario_filter_errno(insns, nr, errno_value, pad);
        int node = scenario_install(s, t, insns, n, flags);
        g_assert_cmpint(node, >=, 0);
        return node;
}

static pid_t tid_of(Scenario *s, ScenarioTask t) {
        return scenario_task(s, t)->tid;
}

static bool seized_elsewhere(const UnreadableTask *bad, size_t n_bad, pid_t root);

static Forest *scan_once(const ScanOptions *opts, UnreadableTask **bad, size_t *n_bad) {
        Forest *f = NULL;
        int r = ptrace_scan(opts, &f, bad, n_bad);
        if (r < 0)
                g_error("ptrace_scan: %s", g_strerror(-r));
        g_assert_nonnull(f);
        g_assert_true(f->linked);
        return f;
}

/* A caller that does not ask for the unreadable tasks expects every task read: a scan that met a
 * task of the subtree held by another program's ptrace scan (seized_elsewhere()) is made again. */
static Forest *scan_opts(const ScanOptions *opts, UnreadableTask **bad, size_t *n_bad) {
        if (bad)
                return scan_once(opts, bad, n_bad);
        for (unsigned tries = 0;; tries++) {
                _cleanup_free_ UnreadableTask *mine = NULL;
                size_t n_mine = 0;
                Forest *f = scan_once(opts, &mine, &n_mine);
                if (!seized_elsewhere(mine, n_mine, opts->root) || tries == 100)
                        return f;
                forest_free(f);
                g_usleep(50 * 1000);
        }
}

/* A scan of root's subtree with the default options. */
static Forest *scan_root(pid_t root, UnreadableTask **bad, size_t *n_bad) {
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        opts.root = root;
        return scan_opts(&opts, bad, n_bad);
}

static Forest *scan_scenario(Scenario *s, UnreadableTask **bad, size_t *n_bad) {
        return scan_root(scenario_root_pid(s), bad, n_bad);
}

static void kill_and_reap(pid_t pid) {
        kill(pid, SIGKILL);
        g_assert_cmpint(waitpid(pid, NULL, 0), ==, pid);
}

/* ERRNO(EPERM) for uname, which no agent calls: the filter of processes forked here by hand. */
typedef struct UnameFilter {
        struct sock_filter insns[MAX_FILTER];
        size_t n;
        struct sock_fprog prog;
} UnameFilter;

static void uname_filter_init(UnameFilter *u) {
        u->n = scenario_filter_errno(u->insns, __NR_uname, EPERM, 0);
        u->prog = (struct sock_fprog) { .len = (unsigned short) u->n, .filter = u->insns };
}

/* In a process forked here by hand: die with the test, set no_new_privs and install prog. False if
 * any of that failed. */
static bool child_install(const struct sock_fprog *prog) {
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog) == 0;
}

/* The filter at chain position depth (1 = the oldest) of tid's chain. */
static const Filter *filter_at(const Forest *f, pid_t tid, unsigned depth) {
        const Task *t = forest_find_task(f, tid, NULL);
        g_assert_nonnull(t);
        const Filter *chain[256];
        size_t n = filter_chain(t->filter, chain, G_N_ELEMENTS(chain));
        g_assert_cmpuint(depth, >=, 1);
        g_assert_cmpuint(depth, <=, n);
        return chain[n - depth];
}

static const Filter *head_of(const Forest *f, pid_t tid) {
        const Task *t = forest_find_task(f, tid, NULL);
        g_assert_nonnull(t);
        return t->filter;
}

/* Neither stopped nor traced (or gone). A ptrace scan of the whole machine by another program (a
 * parallel test run) may hold any of our tasks for a moment, and the kernel detaches the tracees
 * of a tracer thread that gave one up only at the end of its exit: so this is waited for, and
 * only a task left so fails. */
static bool running_or_gone(void *userdata) {
        ProcStatus st;
        if (proc_read_status(GPOINTER_TO_INT(userdata), &st) < 0)
                return true;
        return st.state != 't' && st.state != 'T' && st.tracer_pid == 0;
}

/* The same for a task that may have exited meanwhile (a zombie is not stopped either). */
static void assert_running_or_gone(pid_t tid) {
        if (tests_wait_for(running_or_gone, GINT_TO_POINTER(tid), TESTS_PATIENCE_MS))
                return;
        ProcStatus st;
        if (proc_read_status(tid, &st) == 0)
                g_error("task %d left stopped or traced (State %c, TracerPid %d)", tid, st.state, st.tracer_pid);
}

/* No task we seized is left stopped or traced. */
static void assert_running(pid_t tid) {
        ProcStatus st;
        g_assert_cmpint(proc_read_status(tid, &st), ==, 0);
        assert_running_or_gone(tid);
}

/* tid's process is root or descends from it, as /proc says now (root 0: the whole machine). */
static bool in_subtree(pid_t tid, pid_t root) {
        ProcStatus st;
        if (root <= 0)
                return true;
        for (pid_t p = tid; p > 0; p = st.ppid) {
                if (proc_read_status(p, &st) < 0)
                        return false;
                if (st.tgid == root)
                        return true;
        }
        return false;
}

/* Another program's ptrace scan holding one of our tasks makes our PTRACE_SEIZE fail with EPERM
 * for a moment: a scan that met that in root's subtree is made again. The report also has the
 * listener holders of the whole machine, which come and go with other programs; one held by its
 * own tracer for good would make every scan again, and is none of the test's business. */
static bool seized_elsewhere(const UnreadableTask *bad, size_t n_bad, pid_t root) {
        for (size_t i = 0; i < n_bad; i++)
                if (bad[i].error == -EPERM && in_subtree(bad[i].tid, root))
                        return true;
        return false;
}

static void assert_scenario_running(const Scenario *s) {
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *info = scenario_task(s, (ScenarioTask) i);
                if (info->alive)
                        assert_running(info->tid);
        }
}

/* Chain depths equal the kernel's Seccomp_filters:, now and as recorded during the scan. */
static void assert_depths(const Forest *f) {
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        const Task *t = &f->processes[i]->threads[j];
                        ProcStatus st;
                        g_assert_cmpint(proc_read_status(t->tid, &st), ==, 0);
                        unsigned depth = t->filter ? t->filter->depth : 0;
                        g_assert_cmpuint(depth, ==, (unsigned) st.seccomp_filters);
                        g_assert_cmpuint(t->filter_count, ==, (unsigned) st.seccomp_filters);
                }
}

static void assert_inferred(const Forest *f) {
        g_assert_cmpstr(f->backend, ==, "ptrace");
        g_assert_cmpint(f->identity, ==, IDENTITY_INFERRED);
        for (size_t i = 0; i < f->n_filters; i++)
                g_assert_cmpint(f->filters[i]->identity, ==, IDENTITY_INFERRED);
}

static void assert_scan_matches(const Forest *f, const Scenario *s) {
        tests_assert_forest_matches(f, s, false);
        assert_inferred(f);
        assert_depths(f);
        assert_scenario_running(s);
}

static bool unreadable_has(const UnreadableTask *bad, size_t n, pid_t tid, int *ret_error) {
        for (size_t i = 0; i < n; i++)
                if (bad[i].tid == tid) {
                        if (ret_error)
                                *ret_error = bad[i].error;
                        return true;
                }
        return false;
}

static void test_chain(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        install_errno(s, a, __NR_uname, EPERM, 0, 0);
        install_errno(s, a, __NR_getcwd, EACCES, 1, SECCOMP_FILTER_FLAG_LOG);
        ScenarioTask b = fork_task(s, a);
        /* b's own filter is byte-identical to a's newest one (same bytes, same LOG flag) */
        install_errno(s, b, __NR_getcwd, EACCES, 1, SECCOMP_FILTER_FLAG_LOG);
        struct sock_filter insns[MAX_FILTER];
        size_t n = scenario_filter_errno(insns, __NR_sync, ENOSYS, 2);
        g_assert_cmpint(scenario_install_prctl(s, b, insns, n), >=, 0);

        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        _cleanup_(forest_freep) Forest *f = scan_scenario(s, &bad, &n_bad);
        assert_scan_matches(f, s);
        g_assert_cmpuint(n_bad, ==, 0);

        pid_t ta = tid_of(s, a), tb = tid_of(s, b);
        g_assert_true(filter_at(f, ta, 2)->log);
        g_assert_false(filter_at(f, ta, 1)->log);
        g_assert_true(filter_at(f, tb, 3)->log);
        g_assert_false(filter_at(f, tb, 4)->log);
        /* inherited filters are one node; b's copy of a's newest filter is not a's */
        g_assert_true(filter_at(f, ta, 1) == filter_at(f, tb, 1));
        g_assert_true(filter_at(f, ta, 2) == filter_at(f, tb, 2));
        g_assert_true(filter_at(f, tb, 3) != filter_at(f, ta, 2));
        g_assert_cmpuint(f->n_filters, ==, 4);
        /* the scenario root and its unfiltered tasks are reported in a subtree scan */
        const Task *root = forest_find_task(f, scenario_root_pid(s), NULL);
        g_assert_nonnull(root);
        g_assert_cmpint(root->mode, ==, TASK_MODE_DISABLED);
        Process *pb = forest_find_process(f, scenario_task(s, b)->tgid);
        g_assert_nonnull(pb);
        g_assert_cmpint(pb->ppid, ==, scenario_task(s, a)->tgid);
        g_assert_nonnull(pb->exe);
        g_assert_nonnull(pb->argv);
}

static void test_siblings(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask p = fork_task(s, scenario_root(s));
        install_errno(s, p, __NR_uname, EPERM, 0, 0);
        ScenarioTask s1 = fork_task(s, p), s2 = fork_task(s, p);
        install_errno(s, s1, __NR_getcwd, EPERM, 0, 0);
        install_errno(s, s2, __NR_getcwd, EPERM, 0, 0); /* byte-identical to s1's */
        ScenarioTask g = fork_task(s, s1);

        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);
        assert_scan_matches(f, s);

        pid_t tp = tid_of(s, p), t1 = tid_of(s, s1), t2 = tid_of(s, s2), tg = tid_of(s, g);
        g_assert_true(filter_at(f, t1, 1) == head_of(f, tp));
        g_assert_true(filter_at(f, t2, 1) == head_of(f, tp));
        g_assert_true(head_of(f, t1) != head_of(f, t2)); /* siblings' private tops stay apart */
        g_assert_true(head_of(f, tg) == head_of(f, t1)); /* but a descendant shares its ancestor's */
        g_assert_cmpuint(f->n_filters, ==, 3);
}

static void test_threads(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        install_errno(s, a, __NR_uname, EPERM, 0, 0);
        ScenarioTask t1 = thread_task(s, a), t2 = thread_task(s, a);
        install_errno(s, t1, __NR_getcwd, EPERM, 0, SECCOMP_FILTER_FLAG_TSYNC);
        install_errno(s, t2, __NR_sync, EPERM, 0, 0); /* private to t2 */
        ScenarioTask t3 = thread_task(s, t2);           /* inherits t2's chain */

        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);
        assert_scan_matches(f, s);

        pid_t ta = tid_of(s, a);
        const Filter *tsynced = head_of(f, ta);
        g_assert_true(head_of(f, tid_of(s, t1)) == tsynced);
        g_assert_true(head_of(f, tid_of(s, t2))->parent == tsynced);
        g_assert_true(head_of(f, tid_of(s, t3)) == head_of(f, tid_of(s, t2)));
        g_assert_cmpuint(f->n_filters, ==, 3);
        Process *pa = forest_find_process(f, scenario_task(s, a)->tgid);
        g_assert_cmpuint(pa->n_threads, ==, 4);
}

static void test_strict(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        ScenarioTask b = fork_task(s, scenario_root(s));
        install_errno(s, b, __NR_uname, EPERM, 0, 0);
        g_assert_cmpint(scenario_strict(s, a), >=, 0);

        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        _cleanup_(forest_freep) Forest *f = scan_scenario(s, &bad, &n_bad);
        assert_scan_matches(f, s);
        const Task *t = forest_find_task(f, tid_of(s, a), NULL);
        g_assert_cmpint(t->mode, ==, TASK_MODE_STRICT);
        g_assert_null(t->filter);
        g_assert_false(unreadable_has(bad, n_bad, tid_of(s, a), NULL));
}

static void test_exec(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        install_errno(s, a, __NR_uname, EPERM, 0, SECCOMP_FILTER_FLAG_LOG);
        ScenarioTask b = fork_task(s, a);
        install_errno(s, b, __NR_getcwd, EPERM, 0, 0);
        g_assert_cmpint(scenario_exec_sleep(s, b), >=, 0);

        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);
        assert_scan_matches(f, s);
        g_assert_true(filter_at(f, tid_of(s, b), 1) == head_of(f, tid_of(s, a)));
        Process *pb = forest_find_process(f, scenario_task(s, b)->tgid);
        g_assert_cmpstr(pb->comm, ==, "sleep");
}

/* M installs a base filter, forks O1 and O2 that each add a byte-identical top, and exits: the
 * orphans are reparented to the scenario root, which has no filters. Documented choice: with the
 * common parent gone nothing relates O1 and O2, so their bases are two inferred nodes. */
static void test_orphans(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask m = fork_task(s, scenario_root(s));
        install_errno(s, m, __NR_uname, EPERM, 0, 0);
        ScenarioTask o1 = fork_task(s, m), o2 = fork_task(s, m);
        install_errno(s, o1, __NR_getcwd, EPERM, 0, 0);
        install_errno(s, o2, __NR_getcwd, EPERM, 0, 0);
        ScenarioTask c = fork_task(s, o1);
        g_assert_cmpint(scenario_exit(s, m), ==, 0);

        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);
        assert_scan_matches(f, s);

        pid_t root = scenario_root_pid(s);
        Process *p1 = forest_find_process(f, scenario_task(s, o1)->tgid);
        g_assert_nonnull(p1);
        g_assert_cmpint(p1->ppid, ==, root);
        g_assert_null(forest_find_process(f, scenario_task(s, m)->tgid));
        g_assert_true(filter_at(f, tid_of(s, o1), 1) != filter_at(f, tid_of(s, o2), 1));
        g_assert_true(head_of(f, tid_of(s, c)) == head_of(f, tid_of(s, o1)));
        g_assert_cmpuint(f->n_filters, ==, 4);
}

static int seize_and_hold(pid_t tid) {
        if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
                return -errno;
        return 0;
}

/* Detach from a task we seized but never stopped: stop it, then detach. */
static void release(pid_t tid) {
        g_assert_cmpint(ptrace(PTRACE_INTERRUPT, tid, NULL, NULL), ==, 0);
        siginfo_t si = {};
        g_assert_cmpint(waitid(P_PID, tid, &si, WSTOPPED | __WALL), ==, 0);
        g_assert_cmpint(ptrace(PTRACE_DETACH, tid, NULL, NULL), ==, 0);
}

static void test_traced(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        int node = install_errno(s, a, __NR_uname, EPERM, 0, 0);
        ScenarioTask t = thread_task(s, a);
        pid_t ta = tid_of(s, a), tt = tid_of(s, t);
        g_assert_cmpint(seize_and_hold(ta), ==, 0);

        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        _cleanup_(forest_freep) Forest *f = scan_scenario(s, &bad, &n_bad);

        int error = 0;
        g_assert_true(unreadable_has(bad, n_bad, ta, &error));
        g_assert_true(error == -EPERM || error == -EBUSY);
        g_assert_false(unreadable_has(bad, n_bad, tt, NULL));
        g_assert_null(forest_find_task(f, ta, NULL)); /* not guessed */
        const Task *other = forest_find_task(f, tt, NULL);
        g_assert_nonnull(other);
        g_assert_cmpuint(other->filter->depth, ==, 1);
        g_assert_true(prog_equal(other->filter->insns, other->filter->len, scenario_node(s, node)->insns,
                                 scenario_node(s, node)->len));
        assert_inferred(f);
        assert_running(tt);

        /* still ours, untouched by the scan */
        ProcStatus st;
        g_assert_cmpint(proc_read_status(ta, &st), ==, 0);
        g_assert_cmpint(st.tracer_pid, ==, getpid());
        release(ta);
        assert_running(ta);
}

static char task_state(pid_t tid, pid_t *ret_tracer) {
        ProcStatus st;
        if (proc_read_status(tid, &st) < 0)
                return 0;
        if (ret_tracer)
                *ret_tracer = st.tracer_pid;
        return st.state;
}

static pid_t first_child_of(pid_t pid) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
        g_autofree char *text = NULL;
        if (!g_file_get_contents(path, &text, NULL, NULL))
                return 0;
        return (pid_t) strtol(text, NULL, 10);
}

/* A task in a group stop (SIGSTOP) before the scan is read, and is left in that group stop. */
static void test_group_stopped(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        install_errno(s, a, __NR_uname, EPERM, 0, 0);
        pid_t ta = tid_of(s, a);
        g_assert_cmpint(kill(ta, SIGSTOP), ==, 0);
        for (int i = 0; i < 1000 && task_state(ta, NULL) != 'T'; i++)
                usleep(1000);
        g_assert_cmpint(task_state(ta, NULL), ==, 'T');

        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);

        /* Detaching wakes it and it re-enters the group stop on its own: give it a moment. Look
         * first, resume it, then assert, so that a failure does not leave it stopped. */
        pid_t tracer = -1;
        char state = 0;
        for (int i = 0; i < 1000 && (state = task_state(ta, &tracer)) != 'T'; i++)
                usleep(1000);
        g_assert_cmpint(kill(ta, SIGCONT), ==, 0);
        g_assert_cmpint(state, ==, 'T'); /* stopped as before, not ptrace-stopped ('t') */
        g_assert_cmpint(tracer, ==, 0);
        tests_assert_forest_matches(f, s, false);
        for (int i = 0; i < 1000 && task_state(ta, NULL) == 'T'; i++)
                usleep(1000);
        assert_running(ta);
}

typedef struct TaskWait {
        pid_t tid, child;
        char state;
} TaskWait;

static bool vfork_waiting(void *userdata) {
        TaskWait *w = userdata;
        return task_state(w->tid, NULL) == 'D' && (w->child = first_child_of(w->tid)) > 0;
}

static bool state_is(void *userdata) {
        TaskWait *w = userdata;
        return task_state(w->tid, NULL) == w->state;
}

/* A vfork parent waits killably for its child and cannot be stopped by PTRACE_INTERRUPT: the scan
 * must give it up (-ETIMEDOUT), leave it neither stopped nor traced, and go on with the others. */
static void test_unstoppable(void) {
        if (!tests_require_root())
                return;
        UnameFilter u;
        uname_filter_init(&u);

        pid_t x = fork();
        g_assert_cmpint(x, >=, 0);
        if (x == 0) {
                if (!child_install(&u.prog))
                        _exit(1);
                if (vfork() == 0) {
                        /* until the scan is over (the test kills it), however long that takes */
                        struct timespec ts = { .tv_sec = 3600 };
                        nanosleep(&ts, NULL);
                        _exit(0);
                }
                for (;;)
                        pause();
        }
        TaskWait w = { .tid = x };
        g_assert_true(tests_wait_for(vfork_waiting, &w, TESTS_PATIENCE_MS));
        pid_t child = w.child;

        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        _cleanup_(forest_freep) Forest *f = NULL;
        for (unsigned tries = 0;; tries++) {
                f = scan_root(x, &bad, &n_bad);
                if (!seized_elsewhere(bad, n_bad, x) || tries == 100)
                        break;
                forest_free(f);
                g_clear_pointer(&bad, free);
                assert_running_or_gone(x); /* untraced again, by us too */
        }

        int error = 0;
        g_assert_true(unreadable_has(bad, n_bad, x, &error));
        g_assert_cmpint(error, ==, -ETIMEDOUT);
        g_assert_null(forest_find_task(f, x, NULL));
        const Task *c = forest_find_task(f, child, NULL); /* dumped by the next tracer thread */
        g_assert_nonnull(c);
        g_assert_cmpuint(c->filter->depth, ==, 1);
        g_assert_true(prog_equal(c->filter->insns, c->filter->len, u.insns, u.n));
        assert_running(child);
        g_assert_cmpint(kill(child, SIGKILL), ==, 0);

        /* the tracer thread that gave x up detaches it at the end of its exit (assert_running) */
        assert_running(x);
        /* the vfork child is gone: x is back in pause(), not stopped */
        w.state = 'S';
        g_assert_true(tests_wait_for(state_is, &w, TESTS_PATIENCE_MS));
        assert_running(x);
        kill_and_reap(x);
}

static void *pause_forever(void *arg) {
        for (;;)
                pause();
        return NULL;
}

/* A process whose leader exited (a zombie) while another thread lives on is reported with the live
 * thread only. */
static void test_zombie_leader(void) {
        if (!tests_require_root())
                return;
        UnameFilter u;
        uname_filter_init(&u);

        pid_t x = fork();
        g_assert_cmpint(x, >=, 0);
        if (x == 0) {
                pthread_t thread;
                if (!child_install(&u.prog) || pthread_create(&thread, NULL, pause_forever, NULL) != 0)
                        _exit(1);
                syscall(SYS_exit, 0); /* the leader alone */
        }
        for (int i = 0; i < 1000 && task_state(x, NULL) != 'Z'; i++)
                usleep(1000);
        g_assert_cmpint(task_state(x, NULL), ==, 'Z');
        _cleanup_free_ pid_t *tids = NULL;
        size_t n_tids = 0;
        g_assert_cmpint(proc_list_threads(x, &tids, &n_tids), ==, 0);
        g_assert_cmpuint(n_tids, ==, 2);
        pid_t live = tids[0] == x ? tids[1] : tids[0];

        _cleanup_(forest_freep) Forest *f = scan_root(x, NULL, NULL);
        const Process *p = forest_find_process(f, x);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->n_threads, ==, 1);
        g_assert_cmpint(p->threads[0].tid, ==, live);
        g_assert_cmpuint(p->threads[0].filter->depth, ==, 1);
        g_assert_true(prog_equal(p->threads[0].filter->insns, p->threads[0].filter->len, u.insns, u.n));
        assert_running(live);
        kill_and_reap(x);
}

static void test_listeners(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        struct sock_filter insns[MAX_FILTER];
        size_t n = tests_filter_notify(insns, __NR_uname);

        ScenarioTask a = fork_task(s, scenario_root(s));
        ScenarioTask b = fork_task(s, scenario_root(s)); /* a supervisor, not under any filter */
        ScenarioTask c = fork_task(s, scenario_root(s));
        int na = scenario_install(s, a, insns, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(na, >=, 0);
        install_errno(s, a, __NR_getcwd, EPERM, 0, 0); /* a newer filter that cannot notify */
        int nc = scenario_install(s, c, insns, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(nc, >=, 0);
        int fd_b = scenario_share_listener(s, na, b);
        g_assert_cmpint(fd_b, >=, 0);

        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);
        assert_scan_matches(f, s);

        pid_t pa = scenario_task(s, a)->tgid, pb = scenario_task(s, b)->tgid, pc = scenario_task(s, c)->tgid;
        const Listener *la = tests_listener_held_by(f, pa, scenario_node(s, na)->listener_fd);
        const Listener *lb = tests_listener_held_by(f, pb, fd_b);
        const Listener *lc = tests_listener_held_by(f, pc, scenario_node(s, nc)->listener_fd);
        g_assert_nonnull(la);
        g_assert_nonnull(lc);
        g_assert_true(la == lb);        /* two holders of one listener: one Listener */
        g_assert_true(la != lc);        /* two listeners apart */
        g_assert_cmpuint(la->n_holders, ==, 2);
        g_assert_cmpuint(lc->n_holders, ==, 1);
        g_assert_cmpuint(f->n_listeners, ==, 2);
        g_assert_cmpint(la->identity, ==, IDENTITY_INFERRED);
        g_assert_cmpuint(la->filter_id, ==, filter_at(f, tid_of(s, a), 1)->id);
        g_assert_cmpuint(lc->filter_id, ==, head_of(f, tid_of(s, c))->id);
        g_assert_true(filter_at(f, tid_of(s, a), 1)->has_listener);

        /* a second collection finds nothing new */
        g_assert_cmpint(listeners_collect(f, &(ScanError) {}, NULL), ==, 0);
        g_assert_cmpuint(f->n_listeners, ==, 2);
        g_assert_cmpuint(la->n_holders, ==, 2);
}

/* A listener fd in a process whose leader has exited while a thread lives on: the leader's file
 * table went with it (/proc/PID/fd is empty), and the fd is found in the thread's. */
static void test_listener_exited_leader(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        struct sock_filter insns[MAX_FILTER];
        size_t n = tests_filter_notify(insns, __NR_uname);

        ScenarioTask a = fork_task(s, scenario_root(s));
        int node = scenario_install(s, a, insns, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(node, >=, 0);
        thread_task(s, a);
        g_assert_cmpint(scenario_exit_leader(s, a), ==, 0);

        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);
        assert_scan_matches(f, s);
        pid_t pid = scenario_task(s, a)->tgid;
        g_assert_cmpuint(f->n_listeners, ==, 1);
        const Listener *l = tests_listener_held_by(f, pid, scenario_node(s, node)->listener_fd);
        g_assert_nonnull(l);
        g_assert_cmpuint(l->n_holders, ==, 1);
        g_assert_nonnull(forest_find_filter(f, l->filter_id));
        g_assert_true(forest_find_filter(f, l->filter_id)->has_listener);
}

/* A supervisor without filters outside the subtree holds the listener fd of a filter inside it:
 * the subtree's scan includes it with all of its threads, as the whole machine's does. */
static void test_listener_holder_outside(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        struct sock_filter insns[MAX_FILTER];
        size_t n = tests_filter_notify(insns, __NR_uname);

        ScenarioTask sandbox = fork_task(s, scenario_root(s));
        ScenarioTask worker = fork_task(s, sandbox);
        int node = scenario_install(s, sandbox, insns, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(node, >=, 0);
        ScenarioTask super = fork_task(s, scenario_root(s));
        thread_task(s, super);
        ScenarioTask lone = fork_task(s, scenario_root(s));
        int fd_super = scenario_share_listener(s, node, super), fd_lone = scenario_share_listener(s, node, lone);
        g_assert_cmpint(fd_super, >=, 0);
        g_assert_cmpint(fd_lone, >=, 0);
        pid_t sandbox_pid = scenario_task(s, sandbox)->tgid;

        for (int freeze = 0; freeze <= 1; freeze++) {
                ScanOptions opts = SCAN_OPTIONS_DEFAULT;
                opts.root = sandbox_pid;
                opts.freeze = freeze;
                _cleanup_(forest_freep) Forest *f = scan_opts(&opts, NULL, NULL);
                g_assert_cmpint(f->snapshot.consistency, ==, freeze ? SNAPSHOT_CONSISTENCY_FROZEN : SNAPSHOT_CONSISTENCY_NONE);
                g_assert_nonnull(forest_find_process(f, scenario_task(s, worker)->tgid));
                g_assert_null(forest_find_process(f, scenario_root_pid(s)));
                g_assert_cmpuint(f->n_processes, ==, 4);
                g_assert_cmpuint(f->n_listeners, ==, 1);
                const Listener *l = tests_listener_held_by(f, sandbox_pid, scenario_node(s, node)->listener_fd);
                g_assert_nonnull(l);
                g_assert_cmpuint(l->n_holders, ==, 3);
                g_assert_cmpuint(l->filter_id, ==, head_of(f, tid_of(s, sandbox))->id);
                tests_assert_holder_present(f, l, s, super, fd_super, 2);
                tests_assert_holder_present(f, l, s, lone, fd_lone, 1);
                tests_assert_valid_snapshot(f);
                assert_scenario_running(s);
        }

        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        _cleanup_(forest_freep) Forest *f = scan_opts(&opts, NULL, NULL);
        const Listener *l = tests_listener_held_by(f, sandbox_pid, scenario_node(s, node)->listener_fd);
        g_assert_nonnull(l);
        tests_assert_holder_present(f, l, s, super, fd_super, 2);
        tests_assert_holder_present(f, l, s, lone, fd_lone, 1);
        g_assert_null(forest_find_process(f, scenario_root_pid(s)));
        tests_assert_valid_snapshot(f);
        assert_scenario_running(s);
}

static void add_process_with_thread(Forest *f, pid_t pid, uint64_t filter_id) {
        Process *p;
        Task *t;
        g_assert_cmpint(forest_add_process(f, pid, &p), ==, 0);
        g_assert_cmpint(process_add_thread(p, pid, &t), ==, 0);
        t->mode = filter_id ? TASK_MODE_FILTER : TASK_MODE_DISABLED;
        t->filter_id = filter_id;
}

/* An exact forest (as the bpf backend makes it) keeps its listeners and their filters; holders
 * kcmp finds join them, and a listener fd the backend did not report gets an inferred link. */
static void test_listeners_exact(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        struct sock_filter insns[MAX_FILTER];
        size_t n = tests_filter_notify(insns, __NR_uname);
        ScenarioTask a = fork_task(s, scenario_root(s));
        ScenarioTask b = fork_task(s, scenario_root(s));
        ScenarioTask c = fork_task(s, scenario_root(s));
        int na = scenario_install(s, a, insns, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        int nc = scenario_install(s, c, insns, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(na, >=, 0);
        g_assert_cmpint(nc, >=, 0);
        int fd_b = scenario_share_listener(s, na, b);
        g_assert_cmpint(fd_b, >=, 0);
        pid_t pa = scenario_task(s, a)->tgid, pb = scenario_task(s, b)->tgid, pc = scenario_task(s, c)->tgid;

        _cleanup_(forest_freep) Forest *f = forest_new();
        Filter *fa, *fc;
        Listener *l;
        g_assert_cmpint(forest_add_filter(f, 7, 0, insns, n, &fa), ==, 0);
        g_assert_cmpint(forest_add_filter(f, 8, 0, insns, n, &fc), ==, 0);
        fa->has_listener = fc->has_listener = true;
        add_process_with_thread(f, pa, 7);
        add_process_with_thread(f, pb, 0);
        add_process_with_thread(f, pc, 8);
        g_assert_cmpint(forest_add_listener(f, 3, 7, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, pa, scenario_node(s, na)->listener_fd), ==, 0);
        g_assert_cmpint(forest_link(f, NULL), ==, 0);

        g_assert_cmpint(listeners_collect(f, &(ScanError) {}, NULL), ==, 0);
        g_assert_true(f->linked);
        g_assert_cmpuint(f->n_listeners, ==, 2);
        const Listener *la = tests_listener_held_by(f, pa, scenario_node(s, na)->listener_fd);
        g_assert_nonnull(la);
        g_assert_cmpuint(la->id, ==, 3);
        g_assert_cmpuint(la->filter_id, ==, 7);
        g_assert_cmpint(la->identity, ==, IDENTITY_EXACT);
        g_assert_true(tests_listener_held_by(f, pb, fd_b) == la);
        const Listener *lc = tests_listener_held_by(f, pc, scenario_node(s, nc)->listener_fd);
        g_assert_nonnull(lc);
        g_assert_cmpuint(lc->id, ==, 4);
        g_assert_cmpuint(lc->filter_id, ==, 8);
        g_assert_cmpint(lc->identity, ==, IDENTITY_INFERRED);

        /* A given holder that is another file is noted (to be logged after a pass's thaw), not logged
         * while the pass may hold tasks stopped. */
        _cleanup_(forest_freep) Forest *g = forest_new();
        g_assert_cmpint(forest_add_filter(g, 7, 0, insns, n, &fa), ==, 0);
        fa->has_listener = true;
        add_process_with_thread(g, pa, 7);
        add_process_with_thread(g, pc, 0);
        g_assert_cmpint(forest_add_listener(g, 3, 7, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, pa, scenario_node(s, na)->listener_fd), ==, 0);
        g_assert_cmpint(listener_add_holder(l, pc, scenario_node(s, nc)->listener_fd), ==, 0);
        g_assert_cmpint(forest_link(g, NULL), ==, 0);
        ListenerNotes notes;
        g_assert_cmpint(listeners_collect(g, &(ScanError) {}, &notes), ==, 0);
        g_assert_cmpuint(notes.mismatched, ==, 1);
        g_assert_cmpuint(notes.mismatched_listener, ==, 3);
        g_assert_cmpuint(notes.left_out, ==, 0);
}

static bool forest_has_pid(const Forest *f, pid_t pid) {
        return forest_find_process(f, pid) != NULL;
}

static size_t count_filter_tasks(const Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++)
                        n += f->processes[i]->threads[j].mode == TASK_MODE_FILTER;
        return n;
}

/* Whole machine: filtered scenario processes are in, unfiltered ones are not. */
static void test_machine(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        ScenarioTask b = fork_task(s, scenario_root(s));
        install_errno(s, a, __NR_uname, EPERM, 0, 0);
        ScenarioTask t = thread_task(s, b);
        install_errno(s, t, __NR_uname, EPERM, 0, 0); /* b's leader stays disabled */

        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        _cleanup_(forest_freep) Forest *f = scan_opts(&opts, &bad, &n_bad);
        uint64_t elapsed = now_usec(CLOCK_MONOTONIC) - start;
        size_t n_tasks = count_filter_tasks(f);
        g_test_message("whole machine: %zu processes, %zu filter tasks, %zu unreadable, whole pass %" PRIu64 " us",
                       f->n_processes, n_tasks, n_bad, elapsed);

        g_assert_true(forest_has_pid(f, scenario_task(s, a)->tgid));
        g_assert_true(forest_has_pid(f, scenario_task(s, b)->tgid));
        g_assert_false(forest_has_pid(f, scenario_root_pid(s)));
        /* a process with one filtered thread is reported with all of its threads */
        const Task *leader = forest_find_task(f, tid_of(s, b), NULL);
        g_assert_nonnull(leader);
        g_assert_cmpint(leader->mode, ==, TASK_MODE_DISABLED);
        g_assert_nonnull(forest_find_task(f, tid_of(s, t), NULL));
        assert_inferred(f);
        assert_scenario_running(s);
}

/* Many tasks: the stop window per task, printed (not asserted). */
static void test_many(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask p = fork_task(s, scenario_root(s));
        install_errno(s, p, __NR_uname, EPERM, 0, 0);
        for (int i = 0; i < 100; i++) {
                ScenarioTask c = fork_task(s, p);
                install_errno(s, c, __NR_getcwd, EPERM, (size_t) (i % 4), 0);
                if (i % 10 == 0)
                        thread_task(s, c);
        }

        uint64_t start = now_usec(CLOCK_MONOTONIC);
        _cleanup_(forest_freep) Forest *f = scan_scenario(s, NULL, NULL);
        uint64_t elapsed = now_usec(CLOCK_MONOTONIC) - start;
        size_t n_tasks = count_filter_tasks(f);
        g_test_message("subtree: %zu filter tasks, whole pass %" PRIu64 " us (%.1f us per filter task; "
                       "SECTREE_DEBUG=1 shows the dump phase alone)",
                       n_tasks, elapsed, (double) elapsed / n_tasks);
        assert_scan_matches(f, s);
        g_assert_cmpuint(f->n_filters, ==, 101);
}

/* Freezing: the same forest as ground truth, every task stopped before any was read and running
 * again afterwards, and the snapshot says it was frozen. */
static void test_freeze(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        install_errno(s, a, __NR_uname, EPERM, 0, 0);
        ScenarioTask t = thread_task(s, a);
        install_errno(s, t, __NR_getcwd, EPERM, 0, 0);
        ScenarioTask b = fork_task(s, a);
        install_errno(s, b, __NR_acct, EPERM, 1, SECCOMP_FILTER_FLAG_LOG);
        fork_task(s, b);
        fork_task(s, scenario_root(s)); /* disabled: frozen too */
        g_assert_cmpint(scenario_strict(s, fork_task(s, scenario_root(s))), ==, 0);

        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        opts.root = scenario_root_pid(s);
        opts.freeze = true;
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        _cleanup_(forest_freep) Forest *f = scan_opts(&opts, &bad, &n_bad);
        g_assert_cmpuint(n_bad, ==, 0);
        g_assert_cmpint(f->snapshot.consistency, ==, SNAPSHOT_CONSISTENCY_FROZEN);
        assert_scan_matches(f, s); /* ground truth, and every task runs, untraced */
        tests_assert_valid_snapshot(f);
        g_assert_true(filter_at(f, tid_of(s, b), 1) == filter_at(f, tid_of(s, a), 1));

        /* Without freeze the same forest, and no such claim. */
        opts.freeze = false;
        _cleanup_(forest_freep) Forest *g = scan_opts(&opts, NULL, NULL);
        g_assert_cmpint(g->snapshot.consistency, ==, SNAPSHOT_CONSISTENCY_NONE);
        g_assert_cmpint(forest_isomorphic(f, g, NULL, 0, NULL), ==, 1);
}

/* A task that cannot be stopped (we trace it already) cannot be frozen: the snapshot is not
 * frozen, that task is unreadable, the others are read and released. */
static void test_freeze_traced(void) {
        if (!tests_require_root())
                return;
        _cleanup_scenario_ Scenario *s = tests_scenario_new();
        ScenarioTask a = fork_task(s, scenario_root(s));
        install_errno(s, a, __NR_uname, EPERM, 0, 0);
        ScenarioTask other = fork_task(s, scenario_root(s));
        install_errno(s, other, __NR_getcwd, EPERM, 0, 0);
        pid_t ta = tid_of(s, a);
        g_assert_cmpint(seize_and_hold(ta), ==, 0);

        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        opts.root = scenario_root_pid(s);
        opts.freeze = true;
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        _cleanup_(forest_freep) Forest *f = scan_opts(&opts, &bad, &n_bad);
        int error = 0;
        g_assert_true(unreadable_has(bad, n_bad, ta, &error));
        g_assert_true(error == -EPERM || error == -EBUSY);
        g_assert_cmpint(f->snapshot.consistency, ==, SNAPSHOT_CONSISTENCY_NONE);
        g_assert_nonnull(forest_find_task(f, tid_of(s, other), NULL));
        assert_running(tid_of(s, other));
        assert_running(scenario_root_pid(s));
        ProcStatus st;
        g_assert_cmpint(proc_read_status(ta, &st), ==, 0);
        g_assert_cmpint(st.tracer_pid, ==, getpid()); /* still ours */
        release(ta);
        assert_running(ta);
}

typedef struct ForkCount {
        volatile uint64_t *forks;
        uint64_t want;
} ForkCount;

static bool forks_reached(void *userdata) {
        ForkCount *c = userdata;
        return __atomic_load_n(c->forks, __ATOMIC_RELAXED) >= c->want;
}

/* A frozen scan of the churn under root: true if it froze everything (the only tasks it could not
 * read exited before they could be stopped). False if it could not, and honestly says it is not
 * frozen: a task held by another program's ptrace scan (EPERM), or one just forked that a loaded
 * machine did not run within the scan's stop timeout (ETIMEDOUT); the caller scans again. The scan
 * also tried the listener holders of the whole machine, which the forest then dropped: one of
 * those not stopped says nothing of the subtree, and the snapshot may be frozen all the same. */
static bool frozen_or_retry(const Forest *f, const UnreadableTask *bad, size_t n_bad, pid_t root) {
        bool unstopped = false, ours_unstopped = false;
        for (size_t i = 0; i < n_bad; i++) {
                if (bad[i].error != -EPERM && bad[i].error != -ETIMEDOUT) {
                        g_assert_cmpint(bad[i].error, ==, -ESRCH); /* exited before it could be stopped */
                        continue;
                }
                unstopped = true;
                ours_unstopped = ours_unstopped || in_subtree(bad[i].tid, root);
        }
        if (f->snapshot.consistency == SNAPSHOT_CONSISTENCY_FROZEN) {
                g_assert_false(ours_unstopped);
                return true;
        }
        g_assert_cmpint(f->snapshot.consistency, ==, SNAPSHOT_CONSISTENCY_NONE);
        g_assert_true(unstopped); /* not frozen, and it says why */
        return false;
}

/* A subtree that forks and exits as fast as it can: every frozen scan is a consistent snapshot
 * (every task's chain complete, every filter there), the churner's children share its filter,
 * and the churner goes on churning afterwards. */
static void test_freeze_churn(void) {
        if (!tests_require_root())
                return;
        struct sock_filter a[MAX_FILTER], b[MAX_FILTER];
        size_t na = scenario_filter_errno(a, __NR_uname, EPERM, 0), nb = scenario_filter_errno(b, __NR_getcwd, EPERM, 2);
        struct sock_fprog pa = { .len = (unsigned short) na, .filter = a }, pb = { .len = (unsigned short) nb, .filter = b };
        volatile uint64_t *forks = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        g_assert_true(forks != MAP_FAILED);
        *forks = 0;

        pid_t x = fork();
        g_assert_cmpint(x, >=, 0);
        if (x == 0) {
                if (!child_install(&pa))
                        _exit(1);
                /* Up to four children at a time, each gone after 0 to 4 milliseconds. */
                for (uint64_t i = 0, live = 0;; i++) {
                        pid_t c = fork();
                        if (c == 0) {
                                if (i % 2 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &pb) < 0)
                                        _exit(1);
                                usleep((useconds_t) (i % 5) * 1000);
                                _exit(0);
                        }
                        if (c > 0)
                                live++;
                        if (live >= 4 && waitpid(-1, NULL, 0) > 0)
                                live--;
                        __atomic_add_fetch(forks, 1, __ATOMIC_RELAXED);
                }
        }
        ForkCount started = { forks, 100 };
        g_assert_true(tests_wait_for(forks_reached, &started, TESTS_PATIENCE_MS));

        /* At least 20 frozen scans, and as many more as it takes to catch a child (they live for
         * milliseconds: on a loaded machine many scans may catch none), 1000 scans at most. */
        size_t with_child = 0;
        unsigned frozen = 0, again = 0;
        while ((frozen < 20 || with_child == 0) && frozen + again < 1000) {
                ScanOptions opts = SCAN_OPTIONS_DEFAULT;
                opts.root = x;
                opts.freeze = true;
                _cleanup_free_ UnreadableTask *bad = NULL;
                size_t n_bad = 0;
                _cleanup_(forest_freep) Forest *f = scan_opts(&opts, &bad, &n_bad);
                if (!frozen_or_retry(f, bad, n_bad, x)) {
                        again++;
                        continue;
                }
                frozen++;
                tests_assert_valid_snapshot(f);
                const Task *tx = forest_find_task(f, x, NULL);
                g_assert_nonnull(tx);
                g_assert_cmpuint(tx->filter->depth, ==, 1);
                g_assert_true(prog_equal(tx->filter->insns, tx->filter->len, a, na));
                for (size_t i = 0; i < f->n_processes; i++) {
                        const Process *p = f->processes[i];
                        if (p->pid == x)
                                continue;
                        with_child++;
                        g_assert_cmpint(p->ppid, ==, x);
                        g_assert_cmpuint(p->n_threads, ==, 1);
                        assert_running_or_gone(p->pid);
                        const Filter *head = p->threads[0].filter;
                        g_assert_nonnull(head);
                        g_assert_cmpuint(head->depth, <=, 2);
                        const Filter *base = head->depth == 2 ? head->parent : head;
                        g_assert_true(base == tx->filter); /* inherited: one node */
                        if (head->depth == 2)
                                g_assert_true(prog_equal(head->insns, head->len, b, nb));
                }
                assert_running(x);
                ForkCount churn = { forks, __atomic_load_n(forks, __ATOMIC_RELAXED) + 10 };
                g_assert_true(tests_wait_for(forks_reached, &churn, TESTS_PATIENCE_MS)); /* churns on */
        }
        g_test_message("churn: %zu children caught in %u frozen scans (%u not frozen, made again)", with_child, frozen,
                       again);
        g_assert_cmpuint(frozen, >=, 20);
        g_assert_cmpuint(with_child, >, 0);
        kill_and_reap(x);
        munmap((void *) forks, sizeof(uint64_t));
}

/* Signals that arrive while a task is frozen are taken once it is released: none is lost. A
 * real-time signal queues, so every one sent must be handled exactly once. */
typedef struct SignalCounts {
        uint64_t ready, handled;
} SignalCounts;

static SignalCounts *signal_counts;

static void count_signal(int sig) {
        __atomic_add_fetch(&signal_counts->handled, 1, __ATOMIC_RELAXED);
}

typedef struct Sender {
        pid_t target;
        bool stop;
        uint64_t sent;
} Sender;

static void *send_signals(void *userdata) {
        Sender *x = userdata;
        while (!__atomic_load_n(&x->stop, __ATOMIC_RELAXED)) {
                if (sigqueue(x->target, SIGRTMIN, (union sigval) { .sival_int = 0 }) == 0)
                        x->sent++;
                usleep(20);
        }
        return NULL;
}

static void test_freeze_signals(void) {
        if (!tests_require_root())
                return;
        UnameFilter u;
        uname_filter_init(&u);
        signal_counts = mmap(NULL, sizeof(SignalCounts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        g_assert_true(signal_counts != MAP_FAILED);
        *signal_counts = (SignalCounts) {};

        pid_t x = fork();
        g_assert_cmpint(x, >=, 0);
        if (x == 0) {
                struct sigaction sa = { .sa_handler = count_signal, .sa_flags = SA_RESTART };
                if (sigaction(SIGRTMIN, &sa, NULL) < 0 || !child_install(&u.prog))
                        _exit(1);
                __atomic_store_n(&signal_counts->ready, 1, __ATOMIC_RELAXED);
                for (;;)
                        pause();
        }
        for (int i = 0; i < 2000 && !__atomic_load_n(&signal_counts->ready, __ATOMIC_RELAXED); i++)
                usleep(1000);
        g_assert_cmpuint(signal_counts->ready, ==, 1);

        Sender sender = { .target = x };
        pthread_t thread;
        g_assert_cmpint(pthread_create(&thread, NULL, send_signals, &sender), ==, 0);
        for (int round = 0; round < 50; round++) {
                ScanOptions opts = SCAN_OPTIONS_DEFAULT;
                opts.root = x;
                opts.freeze = true;
                _cleanup_(forest_freep) Forest *f = scan_opts(&opts, NULL, NULL);
                g_assert_cmpint(f->snapshot.consistency, ==, SNAPSHOT_CONSISTENCY_FROZEN);
                g_assert_nonnull(forest_find_task(f, x, NULL));
        }
        __atomic_store_n(&sender.stop, true, __ATOMIC_RELAXED);
        g_assert_cmpint(pthread_join(thread, NULL), ==, 0);
        for (int i = 0; i < 2000 && __atomic_load_n(&signal_counts->handled, __ATOMIC_RELAXED) < sender.sent; i++)
                usleep(1000);
        g_test_message("signals: %" PRIu64 " sent, %" PRIu64 " handled", sender.sent, signal_counts->handled);
        g_assert_cmpuint(sender.sent, >, 0);
        g_assert_cmpuint(signal_counts->handled, ==, sender.sent);
        assert_running(x);
        kill_and_reap(x);
        munmap(signal_counts, sizeof(SignalCounts));
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        if (getenv("SECTREE_DEBUG"))
                log_set_max_level(LOG_LEVEL_DEBUG);
        g_test_add_func("/scan-ptrace/chain", test_chain);
        g_test_add_func("/scan-ptrace/siblings", test_siblings);
        g_test_add_func("/scan-ptrace/threads", test_threads);
        g_test_add_func("/scan-ptrace/strict", test_strict);
        g_test_add_func("/scan-ptrace/exec", test_exec);
        g_test_add_func("/scan-ptrace/orphans", test_orphans);
        g_test_add_func("/scan-ptrace/traced", test_traced);
        g_test_add_func("/scan-ptrace/group-stopped", test_group_stopped);
        g_test_add_func("/scan-ptrace/unstoppable", test_unstoppable);
        g_test_add_func("/scan-ptrace/zombie-leader", test_zombie_leader);
        g_test_add_func("/scan-ptrace/listeners", test_listeners);
        g_test_add_func("/scan-ptrace/listener-exited-leader", test_listener_exited_leader);
        g_test_add_func("/scan-ptrace/listeners-exact", test_listeners_exact);
        g_test_add_func("/scan-ptrace/listener-holder-outside", test_listener_holder_outside);
        g_test_add_func("/scan-ptrace/freeze", test_freeze);
        g_test_add_func("/scan-ptrace/freeze-traced", test_freeze_traced);
        g_test_add_func("/scan-ptrace/freeze-churn", test_freeze_churn);
        g_test_add_func("/scan-ptrace/freeze-signals", test_freeze_signals);
        g_test_add_func("/scan-ptrace/machine", test_machine);
        g_test_add_func("/scan-ptrace/many", test_many);
        return g_test_run();
}
