/* restore-scenarios.c: the scenarios every restore test rebuilds (the executor's own test and the
 * daemon's), and the comparison of a restored tree that does not rest on forest_isomorphic() */
#include "restore-scenarios.h"

#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* Independent of forest_isomorphic(): through the mapping, every restored thread's chain has the
 * original's bytes and flags at every depth, and (original filter <-> restored filter) is a
 * bijection: two threads share a filter iff their originals did. */
Forest *(*restore_scenarios_scan)(pid_t root);

size_t restore_filter_for_calls(struct sock_filter *insns, const int *nrs, size_t n, uint32_t action) {
        size_t k = 0;

        insns[k++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (size_t i = 0; i < n; i++)
                insns[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned) nrs[i],
                                                           (uint8_t) (n - i), 0);
        insns[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        insns[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, action);
        return k;
}


void restore_assert_same_sharing(const Forest *a, const Forest *b, const PlanMapping *map) {
        g_autoptr(GHashTable) ab = g_hash_table_new(g_int64_hash, g_int64_equal);
        g_autoptr(GHashTable) ba = g_hash_table_new(g_int64_hash, g_int64_equal);

        for (size_t i = 0; i < map->n_threads; i++) {
                const Task *ta = forest_find_task(a, map->threads[i].a, NULL), *tb = forest_find_task(b, map->threads[i].b, NULL);
                const Filter *fa, *fb;

                g_assert_nonnull(ta);
                g_assert_nonnull(tb);
                g_assert_cmpint(ta->mode, ==, tb->mode);
                for (fa = ta->filter, fb = tb->filter; fa && fb; fa = fa->parent, fb = fb->parent) {
                        gpointer x;
                        g_assert_cmpuint(fa->len, ==, fb->len);
                        g_assert_cmpmem(fa->insns, fa->len * sizeof(struct sock_filter), fb->insns, fb->len * sizeof(struct sock_filter));
                        g_assert_cmpint(fa->log, ==, fb->log);
                        g_assert_cmpint(fa->wait_killable_recv, ==, fb->wait_killable_recv);
                        g_assert_cmpint(fa->has_listener, ==, fb->has_listener);
                        if (g_hash_table_lookup_extended(ab, &fa->id, NULL, &x))
                                g_assert_true(x == &fb->id);
                        else
                                g_hash_table_insert(ab, (gpointer) &fa->id, (gpointer) &fb->id);
                        if (g_hash_table_lookup_extended(ba, &fb->id, NULL, &x))
                                g_assert_true(x == &fa->id);
                        else
                                g_hash_table_insert(ba, (gpointer) &fb->id, (gpointer) &fa->id);
                }
                g_assert_true(!fa && !fb);
        }
}

/* ---- the scenarios ---- */


static void build_fork_shares(Scenario *s, const TestFilters *x) {
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);
        scenario_fork(s, a);
        tests_fork_install(s, a, x->b, x->nb, 0);
}

/* Byte-identical filters in siblings are distinct objects, and stay so. */
static void build_identical_siblings(Scenario *s, const TestFilters *x) {
        for (int i = 0; i < 3; i++)
                tests_fork_install(s, scenario_root(s), x->a, x->na, 0);
}

static void build_deep_chain(Scenario *s, const TestFilters *x) {
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        for (int i = 0; i < 40; i++) {
                g_assert_cmpint(i % 3 ? scenario_install(s, a, i % 2 ? x->b : x->c, i % 2 ? x->nb : x->nc, 0)
                                      : scenario_install_prctl(s, a, x->a, x->na), >=, 0);
                if (i % 10 == 9)
                        scenario_fork(s, a); /* children at depths 10, 20, 30, 40 */
        }
}

/* A filter of 4096 instructions, the kernel's maximum, below and above smaller ones. */
static void build_4096_instructions(Scenario *s, const TestFilters *x) {
        g_autofree struct sock_filter *big = g_new0(struct sock_filter, PROG_MAX_INSNS);
        size_t n = scenario_filter_errno(big, SYS_getpriority, 5, PROG_MAX_INSNS - 7);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);

        g_assert_cmpuint(n, ==, PROG_MAX_INSNS);
        g_assert_cmpint(scenario_install(s, a, big, n, 0), >=, 0);
        scenario_fork(s, a);
        g_assert_cmpint(scenario_install(s, a, x->b, x->nb, 0), >=, 0);
}

/* Threads synchronised with TSYNC, then one diverges. */
static void build_tsync(Scenario *s, const TestFilters *x) {
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x->a, x->na, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x->b, x->nb, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, x->c, x->nc, 0), >=, 0);
}

static void build_divergent_threads(Scenario *s, const TestFilters *x) {
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a);
        scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x->b, x->nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, x->b, x->nb, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x->c, x->nc, 0), >=, 0);
        scenario_fork(s, t1); /* a child of t1's chain */
}

/* A middle process exits: its children, sharing its filter, are reparented to the root agent
 * (a subreaper) and one of them goes on with a filter of its own. */
static void build_orphans_under_subreaper(Scenario *s, const TestFilters *x) {
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);
        ScenarioTask b = scenario_fork(s, a), c = scenario_fork(s, a);
        scenario_fork(s, c);
        g_assert_cmpint(scenario_install(s, b, x->b, x->nb, 0), >=, 0);
        g_assert_cmpint(scenario_exit(s, a), ==, 0);
}

/* Orphans whose chains come from a thread of a process that lives on without that filter: one
 * lands beside that process (CLONE_PARENT), one two levels above it (reparenting). */
static void build_orphans_of_a_thread(Scenario *s, const TestFilters *x) {
        ScenarioTask y = scenario_fork(s, scenario_root(s));
        ScenarioTask p = scenario_fork(s, scenario_root(s)), q = scenario_fork(s, y);
        ScenarioTask p1 = scenario_thread(s, p), q1 = scenario_thread(s, q);
        g_assert_cmpint(scenario_install(s, p1, x->a, x->na, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, q1, x->b, x->nb, 0), >=, 0);
        ScenarioTask dp = scenario_fork(s, p1), dq = scenario_fork(s, q1);
        scenario_fork(s, dp);
        scenario_fork(s, dq);
        g_assert_cmpint(scenario_exit(s, dp), ==, 0); /* to the root agent, p's parent */
        g_assert_cmpint(scenario_exit(s, dq), ==, 0); /* to the root agent, q's grandparent */
}

/* Listener fds held by the installer, by its parent and by an unrelated process. */
static void build_listeners(Scenario *s, const TestFilters *x) {
        struct sock_filter notify[8];
        size_t n = tests_filter_notify(notify, SYS_sysinfo);
        ScenarioTask sup = scenario_fork(s, scenario_root(s));
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        ScenarioTask a = scenario_fork(s, sup);
        int node = scenario_install(s, a, notify, n, SECCOMP_FILTER_FLAG_NEW_LISTENER);

        g_assert_cmpint(node, >=, 0);
        g_assert_cmpint(scenario_share_listener(s, node, sup), >=, 0);
        g_assert_cmpint(scenario_share_listener(s, node, other), >=, 0);
        scenario_fork(s, a);
}

static void build_log_and_wait_killable(Scenario *s, const TestFilters *x) {
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, SECCOMP_FILTER_FLAG_LOG);
        ScenarioTask b = scenario_fork(s, a);
        g_assert_cmpint(scenario_install(s, b, x->b, x->nb,
                                         SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), >=, 0);
        g_assert_cmpint(scenario_install(s, a, x->c, x->nc, SECCOMP_FILTER_FLAG_LOG), >=, 0);
}

/* Threads and processes in strict mode, beside filtered ones. */
static void build_strict(Scenario *s, const TestFilters *x) {
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask t1 = scenario_thread(s, a);
        g_assert_cmpint(scenario_strict(s, t1), ==, 0);
        g_assert_cmpint(scenario_install(s, a, x->a, x->na, 0), >=, 0);
        ScenarioTask b = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_strict(s, b), ==, 0);
}

static void build_no_new_privs(Scenario *s, const TestFilters *x) {
        ScenarioTask a = scenario_fork(s, scenario_root(s));
        ScenarioTask b = scenario_fork(s, a);
        g_assert_cmpint(scenario_no_new_privs(s, a), ==, 0);
        g_assert_cmpint(scenario_install(s, a, x->a, x->na, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, b, x->b, x->nb, 0), >=, 0);
}

/* no_new_privs, then a filter that answers prctl(2) with ERRNO(1) (sshd's pre-auth child, tor,
 * chrony): a restore as root too must set no_new_privs before that filter. */
static void build_no_new_privs_then_no_prctl(Scenario *s, const TestFilters *x) {
        const int prctl_nr[] = { SYS_prctl };
        struct sock_filter no_prctl[8];
        size_t n = restore_filter_for_calls(no_prctl, prctl_nr, 1, SECCOMP_RET_ERRNO | 1);
        ScenarioTask a = scenario_fork(s, scenario_root(s));

        g_assert_cmpint(scenario_no_new_privs(s, a), ==, 0);
        g_assert_cmpint(scenario_install(s, a, x->a, x->na, 0), >=, 0);
        g_assert_cmpint(scenario_install(s, a, no_prctl, n, 0), >=, 0);
        scenario_thread(s, scenario_fork(s, a));
}

/* After its last install a task may be denied anything: vsftpd's filter kills futex and exit.
 * Here futex and exit are killed: the restored task waits with nanosleep and ends with
 * exit_group (test-restore's killed-thread kills its report write too). */
static void build_futex_killed(Scenario *s, const TestFilters *x) {
        const int killed[] = { SYS_futex, SYS_exit };
        struct sock_filter insns[8];
        size_t n = restore_filter_for_calls(insns, killed, ELEMENTSOF(killed), SECCOMP_RET_KILL_THREAD);
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);

        g_assert_cmpint(scenario_no_new_privs(s, a), ==, 0);
        g_assert_cmpint(scenario_install(s, a, insns, n, 0), >=, 0);
}

/* no_new_privs is per thread: two threads set it (one installs a filter, the other is made after)
 * while the leader does not. */
static void build_thread_no_new_privs(Scenario *s, const TestFilters *x) {
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);
        ScenarioTask t1 = scenario_thread(s, a);

        g_assert_cmpint(scenario_no_new_privs(s, t1), ==, 0);
        g_assert_cmpint(scenario_install(s, t1, x->b, x->nb, 0), >=, 0);
        scenario_thread(s, t1);
}

/* A process whose leader installed a filter, started threads and exited: its threads live on
 * under a zombie leader whose state /proc/PID/status keeps showing (Seccomp 2, one filter). */
static void build_leader_exited(Scenario *s, const TestFilters *x) {
        ScenarioTask a = tests_fork_install(s, scenario_root(s), x->a, x->na, 0);
        ScenarioTask t1 = scenario_thread(s, a), t2 = scenario_thread(s, a);
        g_assert_cmpint(scenario_install(s, t1, x->b, x->nb, 0), >=, 0);
        scenario_fork(s, t2);
        g_assert_cmpint(scenario_exit_leader(s, a), ==, 0);
        if (!restore_scenarios_scan)
                return;
        g_autoptr(Forest) f = restore_scenarios_scan(scenario_root_pid(s));
        const Process *p = forest_find_process(f, scenario_task(s, a)->tgid);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->n_threads, ==, 2);
        g_assert_null(forest_find_task(f, p->pid, NULL)); /* scans leave the zombie leader out */
        /* but record what /proc/PID/status keeps showing of it: mode filter, one filter (x->a) */
        g_assert_true(p->has_exited_leader);
        g_assert_cmpint(p->exited_leader.mode, ==, TASK_MODE_FILTER);
        g_assert_cmpuint(p->exited_leader.filter_count, ==, 1);
}

const RestoreScenario restore_scenarios[] = {
        { "fork-shares", build_fork_shares },
        { "identical-siblings", build_identical_siblings },
        { "deep-chain", build_deep_chain },
        { "4096-instructions", build_4096_instructions },
        { "tsync", build_tsync },
        { "divergent-threads", build_divergent_threads },
        { "orphans-under-subreaper", build_orphans_under_subreaper },
        { "orphans-of-a-thread", build_orphans_of_a_thread },
        { "listeners", build_listeners },
        { "log-and-wait-killable", build_log_and_wait_killable },
        { "strict", build_strict },
        { "no-new-privs", build_no_new_privs },
        { "leader-exited", build_leader_exited },
        { "no-new-privs-then-no-prctl", build_no_new_privs_then_no_prctl },
        { "futex-killed", build_futex_killed },
        { "thread-no-new-privs", build_thread_no_new_privs },
};
const size_t restore_scenarios_n = ELEMENTSOF(restore_scenarios);

bool restore_process_alive(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid), *text = NULL;
        const char *close_paren;

        if (!g_file_get_contents(path, &text, NULL, NULL))
                return false;
        close_paren = strrchr(text, ')');
        return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X';
}

void restore_process_ids(pid_t pid, uid_t *ret_uid, gid_t *ret_gid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int) pid), *text = NULL;
        const char *u, *g;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        u = strstr(text, "\nUid:\t");
        g = strstr(text, "\nGid:\t");
        g_assert_nonnull(u);
        g_assert_nonnull(g);
        *ret_uid = (uid_t) strtoul(u + 6, NULL, 10);
        *ret_gid = (gid_t) strtoul(g + 6, NULL, 10);
}

/* ---- random histories ---- */

#define HISTORY_MAX_TASKS 24
#define HISTORY_PROGS 6

typedef struct History {
        Scenario *s;
        GRand *rng;
        struct sock_filter progs[HISTORY_PROGS][16];
        size_t prog_len[HISTORY_PROGS];
        struct sock_filter notify[8];
        size_t notify_len;
        bool strict[256];
} History;

/* A living agent that still takes commands (not in strict mode), or -1. */
static ScenarioTask random_agent(History *h) {
        size_t n = scenario_n_tasks(h->s);

        for (int tries = 0; tries < 64; tries++) {
                ScenarioTask t = (ScenarioTask) g_rand_int_range(h->rng, 0, (gint32) n);
                if (scenario_task(h->s, t)->alive && !h->strict[t])
                        return t;
        }
        return -1;
}

static size_t alive_tasks(History *h) {
        size_t n = 0;
        for (size_t t = 0; t < scenario_n_tasks(h->s); t++)
                n += scenario_task(h->s, (ScenarioTask) t)->alive;
        return n;
}

/* Install a filter from the pool (byte-identical ones make distinct objects), with random flags;
 * sometimes a listener filter whose fd then goes to another process. */
static void history_install(History *h, ScenarioTask t) {
        unsigned flags = g_rand_int_range(h->rng, 0, 4) == 0 ? SECCOMP_FILTER_FLAG_LOG : 0;
        int node;

        if (g_rand_int_range(h->rng, 0, 6) == 0) {
                flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER | (g_rand_int_range(h->rng, 0, 2) ? SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV : 0);
                node = scenario_install(h->s, t, h->notify, h->notify_len, flags);
                if (node >= 0 && g_rand_int_range(h->rng, 0, 2)) {
                        ScenarioTask to = random_agent(h);
                        if (to >= 0)
                                (void) scenario_share_listener(h->s, node, to);
                }
                return;
        }
        if (g_rand_int_range(h->rng, 0, 3) == 0)
                flags |= SECCOMP_FILTER_FLAG_TSYNC; /* may fail, as in the kernel: EBUSY */
        size_t k = g_rand_int_range(h->rng, 0, HISTORY_PROGS);
        (void) scenario_install(h->s, t, h->progs[k], h->prog_len[k], flags);
}

static void history_step(History *h) {
        ScenarioTask t = random_agent(h);
        const ScenarioTaskInfo *info;
        bool room = alive_tasks(h) < HISTORY_MAX_TASKS && scenario_n_tasks(h->s) < ELEMENTSOF(h->strict);

        if (t < 0)
                return;
        info = scenario_task(h->s, t);
        switch (g_rand_int_range(h->rng, 0, 12)) {
        case 0 ... 2:
                if (room)
                        (void) scenario_fork(h->s, t);
                break;
        case 3 ... 4:
                if (room)
                        (void) scenario_thread(h->s, t);
                break;
        case 5 ... 8:
                history_install(h, t);
                break;
        case 9: /* a middle process exits: its children go to the root agent */
        case 10: /* or a thread */
                if (t != scenario_root(h->s) && info->tgid != scenario_root_pid(h->s))
                        (void) scenario_exit(h->s, t);
                break;
        default:
                if (info->head < 0 && info->is_thread && g_rand_int_range(h->rng, 0, 2)) {
                        if (scenario_strict(h->s, t) == 0)
                                h->strict[t] = true;
                } else
                        (void) scenario_no_new_privs(h->s, t);
        }
}

Scenario *restore_history_play(uint64_t seed) {
        History h = { .rng = g_rand_new_with_seed((guint32) seed) };
        size_t n_steps = 10 + seed % 30;

        for (int k = 0; k < HISTORY_PROGS; k++)
                h.prog_len[k] = scenario_filter_errno(h.progs[k], SYS_getpriority, k % 3 + 1, (size_t) (k % 3));
        h.notify_len = tests_filter_notify(h.notify, SYS_sysinfo);
        h.s = tests_scenario_new();
        for (size_t i = 0; i < n_steps; i++)
                history_step(&h);
        g_rand_free(h.rng);
        return h.s;
}

/* ---- probes ---- */

#define NOTIFY_ANSWER 4242

const int restore_probe_calls[RESTORE_N_PROBE_CALLS] = { SYS_getpriority, SYS_sysinfo, SYS_personality, SYS_sched_yield };

void restore_wait_readable(int fd, const char *what) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (poll(&pfd, 1, 20000) != 1)
                g_error("timed out waiting for %s", what);
}

void restore_answer_notification(int listener, int nr) {
        struct seccomp_notif req = {};
        struct seccomp_notif_resp resp = {};

        restore_wait_readable(listener, "a notification");
        g_assert_cmpint(ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req), ==, 0);
        g_assert_cmpint(req.data.nr, ==, nr);
        resp.id = req.id;
        resp.val = NOTIFY_ANSWER;
        g_assert_cmpint(ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp), ==, 0);
}

char *restore_probe_path(const char *dir, const char *side, size_t i) {
        return g_strdup_printf("%s/%s-%zu", dir, side, i);
}
