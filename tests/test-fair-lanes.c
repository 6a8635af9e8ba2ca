/* test-fair-lanes.c: the real sectreed on a private dbus-daemon stays up for everyone: one user's
 * filters cannot fail another's WhoCan, one user's analyses cannot starve another's nor outlive
 * their caller, and a few users' transfers cannot lock the others out */
#include <fcntl.h>
#include <linux/filter.h>
#include <pwd.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "scenario.h"
#include "tests-util.h"

#define NOBODY 65534
#define TEST_USER "sectree-test" /* more unprivileged users: sectree-test, sectree-test2, ... */

/* The uid of unprivileged user i (0: TEST_USER, 1: TEST_USER "2", ...), which is made if it does
 * not exist (CI runs as root on a fresh machine; the bus refuses uids without a passwd entry). */
static uid_t test_user(unsigned i) {
        g_autofree char *name = i == 0 ? g_strdup(TEST_USER) : g_strdup_printf(TEST_USER "%u", i + 1);
        struct passwd *pw = getpwnam(name);
        if (!pw) {
                char *argv[] = { (char *) "useradd", (char *) "-M", (char *) "-s", (char *) "/usr/sbin/nologin",
                                 name, NULL };
                g_autofree char *out = NULL, *err = NULL;
                if (tests_run_capture(argv, &out, &err) != 0)
                        g_error("useradd %s: %s", name, err ? err : "?");
                pw = getpwnam(name);
        }
        g_assert_nonnull(pw);
        g_assert_cmpuint(pw->pw_uid, !=, 0);
        g_assert_cmpuint(pw->pw_uid, !=, NOBODY);
        return pw->pw_uid;
}

/* ---- processes under filters ---- */

/* A filter of BPF_MAXINSNS instructions alternating loads of argument words and jset on them,
 * each jset skipping the next load when false: every jset doubles the paths to its RET. Each
 * variant has other bytes. */
static size_t hostile_filter(struct sock_filter *insns, unsigned variant) {
        size_t n = 0;
        unsigned i;
        for (i = 0; n + 4 <= BPF_MAXINSNS; i++) {
                uint32_t off = offsetof(struct seccomp_data, args) + 8 * ((i / 32) % 6);
                insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off);
                insns[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 1U << ((i + variant) % 32), 0, 1);
        }
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args));
        insns[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        return n;
}

/* A process of uid that installs insns and pauses (dumpable, dies with the test). */
static pid_t spawn_filtered(uid_t uid, const struct sock_filter *insns, size_t n) {
        int ready[2];
        pid_t parent = getpid();
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_fprog prog = { .len = (unsigned short) n, .filter = (struct sock_filter *) insns };
                close(ready[0]);
                if (uid != 0)
                        tests_become(uid);
                if (getppid() != parent || prctl(PR_SET_DUMPABLE, 1) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(2);
                (void) !write(ready[1], "x", 1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        char c;
        g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        close(ready[0]);
        return pid;
}

static void stop_process(pid_t pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* ---- WhoCan ---- */

typedef struct WhoCanAnswer {
        GHashTable *can;       /* tids */
        GHashTable *undecided; /* tid -> why its chain was not decided (the reply's last field) */
} WhoCanAnswer;

static void who_can_answer_done(WhoCanAnswer *w) {
        g_clear_pointer(&w->can, g_hash_table_unref);
        g_clear_pointer(&w->undecided, g_hash_table_unref);
}

static void read_tasks(sd_bus_message *reply, GHashTable *into) {
        uint32_t pid, tid;
        const char *comm;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uus)"), >, 0);
        while (sd_bus_message_read(reply, "(uus)", &pid, &tid, &comm) > 0)
                g_hash_table_add(into, GUINT_TO_POINTER(tid));
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
}

static void read_chains(sd_bus_message *reply, GHashTable *into) {
        uint64_t head;
        uint32_t depth, n_conditions, value;
        int always, constant;
        const char *action, *condition, *json;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(tuba(ssuubs)a(uus))"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "tuba(ssuubs)a(uus)") > 0) {
                g_assert_cmpint(sd_bus_message_read(reply, "tub", &head, &depth, &always), >, 0);
                g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(ssuubs)"), >, 0);
                while (sd_bus_message_read(reply, "(ssuubs)", &action, &condition, &n_conditions, &value, &constant,
                                           &json) > 0)
                        ;
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                read_tasks(reply, into);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        }
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
}

/* The undecided chains and, from the field after them, why each was not decided. */
static void read_undecided(sd_bus_message *reply, GHashTable *into) {
        uint64_t head;
        uint32_t depth;
        g_autoptr(GPtrArray) chains = g_ptr_array_new_with_free_func((GDestroyNotify) g_hash_table_unref);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(tua(uus))"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "tua(uus)") > 0) {
                GHashTable *tids = g_hash_table_new(NULL, NULL);
                g_assert_cmpint(sd_bus_message_read(reply, "tu", &head, &depth), >, 0);
                read_tasks(reply, tids);
                g_ptr_array_add(chains, tids);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        }
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        const char *why;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "s"), >, 0);
        for (guint i = 0; sd_bus_message_read(reply, "s", &why) > 0; i++) {
                g_assert_cmpuint(i, <, chains->len);
                GHashTableIter it;
                gpointer tid;
                g_hash_table_iter_init(&it, chains->pdata[i]);
                while (g_hash_table_iter_next(&it, &tid, NULL))
                        g_hash_table_insert(into, tid, g_strdup(why));
        }
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        g_assert_cmpuint(g_hash_table_size(into), >=, chains->len);
}

/* WhoCan(syscall) with no arguments nor options: 0 and *ret, or a negative errno with *error. */
static int who_can(sd_bus *bus, const char *syscall, sd_bus_error *error, WhoCanAnswer *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *arch;
        int32_t nr;
        uint32_t tasks, decided, unfiltered, n, m;
        int conditional;
        int r = bus_client_call(bus, "WhoCan", error, &reply, "sata{sv}", syscall, 0, 0);
        if (r < 0)
                return r;
        *ret = (WhoCanAnswer) { .can = g_hash_table_new(NULL, NULL), .undecided = g_hash_table_new_full(NULL, NULL, NULL, g_free) };
        g_assert_cmpint(sd_bus_message_read(reply, "siuu", &arch, &nr, &tasks, &decided), >, 0);
        read_chains(reply, ret->can);
        g_assert_cmpint(sd_bus_message_read(reply, "u", &unfiltered), >, 0);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(buuu)"), >, 0);
        while (sd_bus_message_read(reply, "(buuu)", &conditional, &n, &m, &tasks) > 0)
                ;
        g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        read_undecided(reply, ret->undecided);
        return 0;
}

typedef struct WhoCanWait {
        sd_bus *bus;
        pid_t tid;
} WhoCanWait;

/* WhoCan(acct) answers, and names tid among the tasks that can or are not decided. */
static bool who_can_names(void *userdata) {
        WhoCanWait *w = userdata;
        WhoCanAnswer a;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (who_can(w->bus, "acct", &error, &a) < 0) {
                g_test_message("WhoCan: %s: %s", error.name, error.message);
                sd_bus_error_free(&error);
                return false;
        }
        bool named = g_hash_table_contains(a.can, GUINT_TO_POINTER(w->tid)) ||
                     g_hash_table_contains(a.undecided, GUINT_TO_POINTER(w->tid));
        who_can_answer_done(&a);
        return named;
}

#define HOSTILE_CHAINS 8 /* distinct, each taking the analysis's budget: longer than a call may take */

/* A chain over the analysis's budget (too many paths) fails no one's WhoCan: it is reported as
 * not decided for its tasks, and the rest is answered; so are the chains left when the call's time
 * is up (one user's many such chains). */
static void test_chain_over_budget(void) {
        BusFixture b;
        struct sock_filter hostile[BPF_MAXINSNS], simple[16];
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        size_t n = hostile_filter(hostile, 0), k = scenario_filter_errno(simple, SYS_getpriority, 1, 0);
        pid_t theirs = spawn_filtered(NOBODY, hostile, n), mine = spawn_filtered(0, simple, k);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_assert_true(tests_wait_for(who_can_names, &(WhoCanWait) { bus, theirs }, TESTS_PATIENCE_MS));

        WhoCanAnswer a;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t start = g_get_monotonic_time();
        if (who_can(bus, "acct", &error, &a) < 0)
                g_error("WhoCan(acct) as root: %s: %s", error.name, error.message);
        g_test_message("WhoCan(acct) with a chain over the budget: %" PRIu64 " ms",
                       (g_get_monotonic_time() - start) / 1000);
        /* over the budget, or "out of time" where a busy machine reached the call's deadline first:
         * never "program not available", which would be false */
        const char *why = g_hash_table_lookup(a.undecided, GUINT_TO_POINTER(theirs));
        g_assert_nonnull(why);
        g_assert_true(g_str_equal(why, "over the analysis budget") || g_str_equal(why, "out of time"));
        g_assert_false(g_hash_table_contains(a.can, GUINT_TO_POINTER(theirs)));
        g_assert_true(g_hash_table_contains(a.can, GUINT_TO_POINTER(mine)));
        who_can_answer_done(&a);

        pid_t more[HOSTILE_CHAINS];
        for (unsigned i = 0; i < HOSTILE_CHAINS; i++)
                more[i] = spawn_filtered(NOBODY, hostile, hostile_filter(hostile, i + 1));
        g_assert_true(tests_wait_for(who_can_names, &(WhoCanWait) { bus, more[HOSTILE_CHAINS - 1] }, TESTS_PATIENCE_MS));
        start = g_get_monotonic_time();
        if (who_can(bus, "acct", &error, &a) < 0)
                g_error("WhoCan(acct) as root with %d chains over the budget: %s: %s", HOSTILE_CHAINS + 1, error.name,
                        error.message);
        g_test_message("WhoCan(acct) with %d chains over the budget: %" PRIu64 " ms", HOSTILE_CHAINS + 1,
                       (g_get_monotonic_time() - start) / 1000);
        for (unsigned i = 0; i < HOSTILE_CHAINS; i++) {
                why = g_hash_table_lookup(a.undecided, GUINT_TO_POINTER(more[i]));
                g_assert_nonnull(why);
                g_assert_true(g_str_equal(why, "over the analysis budget") || g_str_equal(why, "out of time"));
        }
        g_assert_true(g_hash_table_contains(a.can, GUINT_TO_POINTER(mine)));
        who_can_answer_done(&a);

        for (unsigned i = 0; i < HOSTILE_CHAINS; i++)
                stop_process(more[i]);
        stop_process(theirs);
        stop_process(mine);
        bus_fixture_finish(&b);
}

/* ---- analyses: one user's many calls do not starve another's ---- */

#define FLOOD_CALLS 6   /* WhoCan calls of one user in flight at once */
#define PROBE_CALLS 5   /* another user's calls, one at a time */

typedef struct FloodCase {
        int reply_fd; /* write end: the CLOCK_MONOTONIC µs of each reply to the flood, as uint64 */
} FloodCase;

/* As nobody: FLOOD_CALLS WhoCan calls in flight at all times, each one long (its chain is decided
 * to the analysis's budget), until killed. */
static void flood_part(void *userdata) {
        FloodCase *c = userdata;
        sd_bus *bus = bus_client_open();
        BusPending p[FLOOD_CALLS] = {};
        bool in_flight[FLOOD_CALLS] = {};
        for (;;) {
                for (size_t i = 0; i < FLOOD_CALLS; i++) {
                        if (in_flight[i] && !p[i].done)
                                continue;
                        if (in_flight[i]) {
                                uint64_t now = (uint64_t) g_get_monotonic_time();
                                (void) !write(c->reply_fd, &now, sizeof(now));
                                sd_bus_error_free(&p[i].error);
                                p[i] = (BusPending) {};
                        }
                        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH,
                                                                 BUS_CLIENT_IFACE, "WhoCan", bus_client_on_reply, &p[i],
                                                                 "sata{sv}", "acct", 0, 0),
                                        >=, 0);
                        in_flight[i] = true;
                }
                bus_client_pump(bus, -1, 0);
        }
}

typedef struct ProbeCase {
        int times_fd; /* write end: (sent, answered) CLOCK_MONOTONIC µs of each call */
} ProbeCase;

/* As the other user: PROBE_CALLS WhoCan calls, one at a time, each answered. */
static void probe_part(void *userdata) {
        ProbeCase *c = userdata;
        sd_bus *bus = bus_client_open();
        for (int i = 0; i < PROBE_CALLS; i++) {
                WhoCanAnswer a;
                sd_bus_error error = SD_BUS_ERROR_NULL;
                uint64_t t[2] = { (uint64_t) g_get_monotonic_time(), 0 };
                if (who_can(bus, "acct", &error, &a) < 0)
                        g_error("WhoCan of the other user: %s: %s", error.name, error.message);
                t[1] = (uint64_t) g_get_monotonic_time();
                who_can_answer_done(&a);
                (void) !write(c->times_fd, t, sizeof(t));
                g_usleep(200 * 1000);
        }
        sd_bus_flush_close_unref(bus);
}

/* The CPU time process pid took so far (utime + stime of /proc/PID/stat), in clock ticks. */
static uint64_t process_cpu_ticks(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid), *stat = NULL;
        unsigned long long utime, stime;
        g_assert_true(g_file_get_contents(path, &stat, NULL, NULL));
        const char *p = strrchr(stat, ')');
        g_assert_nonnull(p);
        g_assert_cmpint(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime), ==, 2);
        return utime + stime;
}

static GArray *read_u64s(int fd) {
        GArray *a = g_array_new(false, false, sizeof(uint64_t));
        uint64_t v;
        while (read(fd, &v, sizeof(v)) == sizeof(v))
                g_array_append_val(a, v);
        return a;
}

/* Six WhoCan calls of nobody in flight at all times, each taking the analysis's budget, do not
 * make another user's calls wait behind them all: the lane takes the next call from the uid that
 * used the least of it, so each of the other user's calls waits for at most the one running (and
 * one that started as it was sent). The flood used to be served first come, first served: every
 * probe waited for the six. */
static void test_analyses_fair(void) {
        BusFixture b;
        struct sock_filter hostile[BPF_MAXINSNS];
        if (!tests_require_root())
                return;
        uid_t other = test_user(0);
        g_assert_true(bus_fixture_start_all(&b, NULL, NULL));
        pid_t theirs = spawn_filtered(NOBODY, hostile, hostile_filter(hostile, 0));
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_assert_true(tests_wait_for(who_can_names, &(WhoCanWait) { bus, theirs }, TESTS_PATIENCE_MS));

        int flood_pipe[2], probe_pipe[2];
        g_assert_cmpint(pipe2(flood_pipe, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(probe_pipe, O_CLOEXEC), ==, 0);
        pid_t flood = tests_as_uid_start(NOBODY, flood_part, &(FloodCase) { flood_pipe[1] });
        close(flood_pipe[1]);
        uint64_t ticks = process_cpu_ticks(b.daemon_pid), start = (uint64_t) g_get_monotonic_time();
        g_usleep(1500 * 1000); /* its calls queued */
        int status = tests_wait_status(tests_as_uid_start(other, probe_part, &(ProbeCase) { probe_pipe[1] }));
        close(probe_pipe[1]);
        /* for the log only (no test asserts a time): the share of a CPU the daemon took meanwhile */
        g_test_message("sectreed took %.0f%% of one CPU during the flood",
                       100.0 * (double) (process_cpu_ticks(b.daemon_pid) - ticks) / (double) sysconf(_SC_CLK_TCK) /
                               ((double) ((uint64_t) g_get_monotonic_time() - start) / 1e6));
        kill(flood, SIGKILL);
        (void) tests_wait_status(flood);
        if (status != 0)
                g_error("the other user's part failed (status %d)", status);

        g_autoptr(GArray) replies = read_u64s(flood_pipe[0]), probes = read_u64s(probe_pipe[0]);
        close(flood_pipe[0]);
        close(probe_pipe[0]);
        g_assert_cmpuint(probes->len, ==, 2 * PROBE_CALLS);
        g_assert_cmpuint(replies->len, >, 0);
        for (guint i = 0; i < probes->len; i += 2) {
                uint64_t sent = g_array_index(probes, uint64_t, i), answered = g_array_index(probes, uint64_t, i + 1);
                unsigned between = 0;
                for (guint j = 0; j < replies->len; j++) {
                        uint64_t t = g_array_index(replies, uint64_t, j);
                        between += t > sent && t < answered;
                }
                g_test_message("call %u of the other user: %" PRIu64 " ms, %u of nobody's answered meanwhile", i / 2,
                               (answered - sent) / 1000, between);
                g_assert_cmpuint(between, <=, 2);
        }
        stop_process(theirs);
        bus_fixture_finish(&b);
}

/* ---- the bound of a uid's analyses waiting ---- */

#define ANALYSES_PER_UID 8 /* POLICY_JOBS_MAX_PER_UID (policy-jobs.h) */

typedef struct BoundedCase {
        pid_t tid;        /* nobody's filtered process */
        TestsHandshake h; /* nobody's calls are held; the test opened the gate */
} BoundedCase;

/* GetPolicy of tid into p[from..ANALYSES_PER_UID), asynchronously; then one call more, which is
 * refused at once (LimitsExceeded): they are all queued. */
static void queue_analyses(sd_bus *bus, pid_t tid, BusPending *p, size_t from) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        for (size_t i = from; i < ANALYSES_PER_UID; i++)
                g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                         "GetPolicy", p ? bus_client_on_reply : NULL, p ? &p[i] : NULL,
                                                         "u", (uint32_t) tid),
                                >=, 0);
        g_assert_cmpint(bus_client_call(bus, "GetPolicy", &error, NULL, "u", (uint32_t) tid), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
}

/* Held until the test opens the gate; then every one of p answered. */
static void analyses_answered(sd_bus *bus, BusPending *p, TestsHandshake *h) {
        tests_handshake_hold(h);
        for (size_t i = 0; i < ANALYSES_PER_UID; i++) {
                bus_client_wait(bus, &p[i], TESTS_PATIENCE_MS, "GetPolicy");
                if (sd_bus_error_is_set(&p[i].error))
                        g_error("GetPolicy %zu: %s", i, p[i].error.message);
                sd_bus_error_free(&p[i].error);
        }
}

/* As nobody, the analyses held at their gate: ANALYSES_PER_UID GetPolicy calls wait, the next is
 * refused at once (LimitsExceeded); with the gate open, every one of them is answered. */
static void bounded_part(void *userdata) {
        BoundedCase *c = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusPending p[ANALYSES_PER_UID] = {};
        queue_analyses(bus, c->tid, p, 0);
        for (size_t i = 0; i < ANALYSES_PER_UID; i++)
                g_assert_false(p[i].done);
        analyses_answered(bus, p, &c->h);
}

/* As nobody: ANALYSES_PER_UID analyses held at their gate, then gone, connection closed, without
 * waiting for their answers. */
static void leaving_part(void *userdata) {
        const BoundedCase *c = userdata;
        sd_bus *bus = bus_client_open();
        queue_analyses(bus, c->tid, NULL, 0);
        sd_bus_flush_close_unref(bus);
}

/* As nobody again, on a connection of its own: once the daemon has seen the first caller leave,
 * nobody's places are free again: ANALYSES_PER_UID analyses wait at the gate (the next refused),
 * and are answered once it opens. Before, the analyses of the caller that had left held them, each
 * waiting its turn and then running for nobody. */
static void returning_part(void *userdata) {
        BoundedCase *c = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusPending p[ANALYSES_PER_UID] = {};
        int64_t end = g_get_monotonic_time() + (int64_t) TESTS_PATIENCE_MS * 1000;

        for (;;) { /* the first call is refused until the daemon has dropped the others */
                p[0] = (BusPending) {};
                g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                         "GetPolicy", bus_client_on_reply, &p[0], "u",
                                                         (uint32_t) c->tid),
                                >=, 0);
                for (int i = 0; i < 10 && !p[0].done; i++)
                        bus_client_pump(bus, -1, 0);
                if (!p[0].done)
                        break; /* waiting at the gate: taken */
                bus_client_assert_error(&p[0].error, SD_BUS_ERROR_LIMITS_EXCEEDED);
                sd_bus_error_free(&p[0].error);
                if (g_get_monotonic_time() > end)
                        g_error("the analyses of a caller that left the bus still hold nobody's places");
                g_usleep(100 * 1000);
        }
        queue_analyses(bus, c->tid, p, 1);
        analyses_answered(bus, p, &c->h);
}

/* The daemon tracks the filtered process (GetTaskChain answers with its filter): answered on the
 * loop, where WhoCan would wait at the gate. */
static bool chain_known(void *userdata) {
        WhoCanWait *w = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const void *ids;
        size_t bytes = 0;
        return bus_client_call(w->bus, "GetTaskChain", &error, &reply, "u", (uint32_t) w->tid) >= 0 &&
               sd_bus_message_read_array(reply, 't', &ids, &bytes) >= 0 && bytes > 0;
}

/* The daemon with its analyses held at a gate, nobody's filtered process known to it, before()
 * run as nobody; then part run as nobody, the gate opened once part holds. */
static void run_gated(void (*before)(void *userdata), void (*part)(void *userdata)) {
        BusFixture b;
        struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        if (!tests_require_root())
                return;
        g_autofree char *dir = g_dir_make_tmp("sectree-lanes-XXXXXX", NULL);
        g_assert_nonnull(dir);
        g_autofree char *gate = g_build_filename(dir, "go", NULL);
        g_autofree char *gate_env = g_strconcat("SECTREE_TEST_POLICY_GATE=", gate, NULL);
        char *env[] = { gate_env, NULL };
        g_assert_true(bus_fixture_start_all(&b, NULL, env));
        BoundedCase c = { .tid = spawn_filtered(NOBODY, allow, ELEMENTSOF(allow)) };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_assert_true(tests_wait_for(chain_known, &(WhoCanWait) { bus, c.tid }, TESTS_PATIENCE_MS));
        if (before)
                g_assert_cmpint(tests_as_nobody(before, &c), ==, 0);
        tests_handshake_open(&c.h);
        pid_t pid = tests_as_uid_start(NOBODY, part, &c);
        tests_handshake_wait_held(&c.h);
        g_assert_true(g_file_set_contents(gate, "", 0, NULL));
        tests_handshake_go(&c.h);
        g_assert_cmpint(tests_wait_status(pid), ==, 0);
        stop_process(c.tid);
        bus_fixture_finish(&b);
        (void) unlink(gate);
        (void) rmdir(dir);
}

static void test_analyses_bounded(void) {
        run_gated(NULL, bounded_part);
}

static void test_analyses_caller_gone(void) {
        run_gated(leaving_part, returning_part);
}

/* ---- transfers: a few users cannot lock the others out ---- */

#define HOLDERS 3       /* uids holding import pipes they never write into nor close */
#define HELD_PER_UID 2  /* what each of them tries to hold */

typedef struct HolderCase {
        int ready_fd; /* write end: one byte once its calls are sent */
} HolderCase;

/* As one of the holders: HELD_PER_UID imports from pipes it keeps open and never writes into, then
 * waits to be killed (answering nothing but its own replies). */
static void holder_part(void *userdata) {
        HolderCase *c = userdata;
        sd_bus *bus = bus_client_open();
        BusPending p[HELD_PER_UID] = {};
        int keep[HELD_PER_UID];
        for (size_t i = 0; i < HELD_PER_UID; i++) {
                int fds[2];
                g_assert_cmpint(pipe2(fds, O_CLOEXEC), ==, 0);
                g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                         "ImportSnapshot", bus_client_on_reply, &p[i], "h", fds[0]),
                                >=, 0);
                close(fds[0]);
                keep[i] = fds[1];
        }
        g_assert_cmpint(sd_bus_flush(bus), >=, 0);
        for (int i = 0; i < 10; i++)
                bus_client_pump(bus, -1, 0); /* a refusal comes at once */
        (void) !write(c->ready_fd, "x", 1);
        for (;;)
                bus_client_pump(bus, -1, 0);
        (void) keep;
}

typedef struct ImportCase {
        GBytes *data;
} ImportCase;

/* As another user: an import, and an export of what it imported. */
static void import_part(void *userdata) {
        ImportCase *c = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        gsize n;
        const void *data = g_bytes_get_data(c->data, &n);
        uint64_t id = bus_client_import_pipe(bus, data, n, &error);
        if (id == 0)
                g_error("ImportSnapshot of a user while %d others hold pipes: %s: %s", HOLDERS, error.name, error.message);
        g_autoptr(GBytes) back = bus_client_export_pipe(bus, id, "json", &error);
        if (!back)
                g_error("ExportSnapshot of a user while %d others hold pipes: %s: %s", HOLDERS, error.name, error.message);
        sd_bus_flush_close_unref(bus);
}

/* Three uids holding two import pipes each that they never write into nor close (each held until
 * its deadline, and started again) do not lock every other user out of imports and exports: a uid
 * may start a second transfer only while fewer than half of the users' transfers are in
 * progress. Before, the six took every slot of the users' for 30 s at a time. */
static void test_transfers_fair(void) {
        BusFixture b;
        struct sock_filter simple[16];
        if (!tests_require_root())
                return;
        uid_t holders[HOLDERS] = { NOBODY, test_user(0), test_user(1) }, other = test_user(2);
        g_assert_true(bus_fixture_start_all(&b, NULL, NULL));
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        pid_t mine = spawn_filtered(0, simple, scenario_filter_errno(simple, SYS_getpriority, 1, 0));
        sd_bus_error error = SD_BUS_ERROR_NULL;
        ImportCase ic = { .data = bus_client_export_pipe(bus, bus_client_create_ok(bus, mine, NULL), "json", &error) };
        g_assert_nonnull(ic.data);

        pid_t held[HOLDERS];
        for (unsigned i = 0; i < HOLDERS; i++) {
                int ready[2];
                char c;
                g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
                held[i] = tests_as_uid_start(holders[i], holder_part, &(HolderCase) { ready[1] });
                close(ready[1]);
                g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
                close(ready[0]);
        }
        int status = tests_wait_status(tests_as_uid_start(other, import_part, &ic));
        if (status != 0)
                g_error("the other user's part failed (status %d)", status);
        /* and root, whatever the users hold */
        gsize n;
        const void *data = g_bytes_get_data(ic.data, &n);
        g_assert_cmpuint(bus_client_import_pipe(bus, data, n, &error), >, 0);

        for (unsigned i = 0; i < HOLDERS; i++) {
                kill(held[i], SIGKILL);
                (void) tests_wait_status(held[i]);
        }
        g_bytes_unref(ic.data);
        stop_process(mine);
        bus_fixture_finish(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/fair-lanes/chain-over-budget", test_chain_over_budget);
        g_test_add_func("/fair-lanes/analyses", test_analyses_fair);
        g_test_add_func("/fair-lanes/analyses-bounded", test_analyses_bounded);
        g_test_add_func("/fair-lanes/analyses-caller-gone", test_analyses_caller_gone);
        g_test_add_func("/fair-lanes/transfers", test_transfers_fair);
        return g_test_run();
}
