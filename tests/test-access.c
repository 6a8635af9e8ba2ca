/* test-access.c: a caller that is not root sees the tasks the kernel would let it ptrace
 * (ptrace_may_access with PTRACE_MODE_READ_REALCREDS), and a snapshot asked for by it never stops
 * a process it may not see: the real sectreed on a private dbus-daemon, the caller as nobody */
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "tests-util.h"

#define NOBODY 65534
#define WAIT_MS 10000

/* ---- the rule, case by case ---- */

typedef struct Case {
        const char *name;
        TestsNobodyOptions how;
        bool visible; /* to nobody */
        pid_t pid;
} Case;

static Case cases[] = {
        { "ordinary", { .comm = "acc-ordinary" }, true },
        { "not dumpable", { .comm = "acc-nodump", .not_dumpable = true }, false },
        { "saved uid differs", { .comm = "acc-suid", .saved_uid = 1 }, false },
        { "saved gid differs", { .comm = "acc-sgid", .saved_gid = 1 }, false },
        { "capabilities nobody lacks", { .comm = "acc-caps", .keep_caps = true }, false },
        { "in a user namespace nobody owns", { .comm = "acc-userns", .new_userns = true }, true },
        { "with its leader exited", { .comm = "acc-noleader", .leader_exits = true }, true },
        /* the kernel checks a task without memory against its own credentials: a leader that
         * exited with capabilities nobody lacks hides its process, whatever its threads hold */
        { "with its leader exited holding capabilities", { .comm = "acc-capleader", .keep_caps = true,
                                                           .leader_exits = true, .thread_drops_caps = true }, false },
};

/* The tgids ListTasks lists to the bus's caller. */
static bool all_listed(void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_autoptr(GHashTable) set = bus_client_listed_tgids(bus);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                if (!g_hash_table_contains(set, GUINT_TO_POINTER(cases[i].pid)))
                        return false;
        return true;
}

/* As nobody: each case is listed, readable and snapshottable exactly when it is visible. */
static void nobody_sees_cases(void *userdata) {
        sd_bus *bus = bus_client_open();
        g_autoptr(GHashTable) set = bus_client_listed_tgids(bus);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                const Case *c = &cases[i];
                sd_bus_error error = SD_BUS_ERROR_NULL;
                if (g_hash_table_contains(set, GUINT_TO_POINTER(c->pid)) != c->visible)
                        g_error("ListTasks as nobody %s the process that is %s (%d)",
                                c->visible ? "leaves out" : "lists", c->name, c->pid);
                int r = bus_client_call(bus, "GetTaskChain", &error, NULL, "u", (uint32_t) c->pid);
                if (c->visible && r < 0)
                        g_error("GetTaskChain as nobody of the process that is %s: %s", c->name, error.message);
                if (!c->visible)
                        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
                uint64_t id = bus_client_create_snapshot(bus, c->pid, NULL, &error);
                if (c->visible && id == 0)
                        g_error("CreateSnapshot as nobody of the process that is %s: %s", c->name, error.message);
                if (!c->visible)
                        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
        }
        sd_bus_flush_close_unref(bus);
}

static void test_rule(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                cases[i].pid = tests_spawn_nobody_with(&cases[i].how);
        g_assert_true(bus_fixture_start_all(&b, NULL, NULL));
        if (!tests_wait_for(all_listed, NULL, WAIT_MS))
                g_error("root's ListTasks does not list every case within %d ms", WAIT_MS);
        g_assert_cmpint(tests_as_nobody(nobody_sees_cases, NULL), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                kill(cases[i].pid, SIGKILL);
                waitpid(cases[i].pid, NULL, 0);
        }
        bus_fixture_finish(&b);
}

/* ---- a caller's access depends on its credentials only, never on the user database ---- */

#define NO_PASSWD_UID 4242

/* As a uid sectreed's user database does not know: its own process is listed, readable,
 * snapshottable, and the snapshot its own to delete. */
static void unknown_uid_snapshots_itself(pid_t self) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_autoptr(GHashTable) set = bus_client_listed_tgids(bus);
        sd_bus_error error = SD_BUS_ERROR_NULL;

        if (!g_hash_table_contains(set, GUINT_TO_POINTER(self)))
                g_error("ListTasks as uid %d leaves out the caller's own process %d", NO_PASSWD_UID, self);
        if (bus_client_call(bus, "GetTaskChain", &error, NULL, "u", (uint32_t) self) < 0)
                g_error("GetTaskChain as uid %d of its own process: %s: %s", NO_PASSWD_UID, error.name, error.message);
        uint64_t id = bus_client_create_snapshot(bus, self, NULL, &error);
        if (id == 0)
                g_error("CreateSnapshot as uid %d of its own process: %s: %s", NO_PASSWD_UID, error.name, error.message);
        if (bus_client_call(bus, "DeleteSnapshot", &error, NULL, "t", id) < 0)
                g_error("DeleteSnapshot as uid %d of its own snapshot: %s: %s", NO_PASSWD_UID, error.name, error.message);
}

/* A child of uid NO_PASSWD_UID under a filter that waits for a byte on ready, then calls. */
static pid_t spawn_unknown_caller(int ready[2]) {
        struct sock_filter insns[16];
        struct sock_fprog prog = { .len = (unsigned short) scenario_filter_errno(insns, SYS_acct, 3, 0), .filter = insns };
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid > 0)
                return pid;
        tests_become(NO_PASSWD_UID);
        prctl(PR_SET_NAME, "acc-nopasswd");
        prctl(PR_SET_DUMPABLE, 1); /* as after an exec: the change of uid cleared it */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(98);
        close(ready[1]);
        char c;
        (void) !read(ready[0], &c, 1);
        alarm(120);
        unknown_uid_snapshots_itself(getpid());
        _exit(0);
}

/* dbus-daemon refuses to connect a uid it cannot look up (it reads the uid's groups from the user
 * database for its policy), so the bus alone is given a passwd entry for it: sectreed, in the
 * test's mount namespace, has none and must serve the caller all the same. */
static void test_uid_without_passwd_entry(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        g_assert_null(getpwuid(NO_PASSWD_UID));
        tests_ensure_tracefs();
        bus_fixture_start_bus_knowing(&b, G_STRINGIFY(NO_PASSWD_UID) ":x:" G_STRINGIFY(NO_PASSWD_UID) ":"
                                          G_STRINGIFY(NO_PASSWD_UID) "::/nonexistent:/usr/sbin/nologin");
        bus_fixture_start_daemon(&b, NULL, NULL, 30);
        int ready[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = spawn_unknown_caller(ready);
        close(ready[0]);
        if (!bus_client_wait_listed(pid, WAIT_MS))
                g_error("root's ListTasks does not list the process of uid %d within %d ms", NO_PASSWD_UID, WAIT_MS);
        close(ready[1]);
        g_assert_cmpint(tests_wait_status(pid), ==, 0);
        bus_fixture_finish(&b);
}

/* ---- the ptrace backend stops nothing the caller may not see ---- */

/* A process whose every interruption by a ptrace stop is counted: it waits in epoll_wait(), which
 * a stop ends with EINTR (seizing alone does not), and writes a byte for each into a pipe. It runs
 * under no filter, so the daemon's own passes (which stop filtered tasks only) leave it alone. */
typedef struct Observed {
        pid_t pid;
        int counter; /* read end, non-blocking */
} Observed;

static _Noreturn void count_interruptions(int fd) {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event e;
        for (;;)
                if (epoll_wait(ep, &e, 1, -1) < 0 && errno == EINTR)
                        (void) !write(fd, "i", 1);
}

static unsigned interruptions(const Observed *o) {
        unsigned n = 0;
        char buf[64];
        for (ssize_t k; (k = read(o->counter, buf, sizeof(buf))) > 0;)
                n += (unsigned) k;
        return n;
}

static void become_nobody(void) {
        tests_become(NOBODY);
        prctl(PR_SET_DUMPABLE, 1);
}

static void install_filter(const struct sock_filter *insns, size_t n, unsigned flags, int *ret_fd) {
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = (struct sock_filter *) insns };
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
        if (fd < 0)
                _exit(2);
        if (ret_fd)
                *ret_fd = (int) fd;
}

/* Fork a child that dies with the test. */
static pid_t fork_child(void) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                prctl(PR_SET_PDEATHSIG, SIGKILL);
        return pid;
}

/* In the parent: what the child wrote on ready once it was, as an int32. */
static int32_t wait_ready(int ready[2]) {
        int32_t v = 0;
        close(ready[1]);
        g_assert_cmpint(read(ready[0], &v, sizeof(v)), ==, sizeof(v));
        close(ready[0]);
        return v;
}

static void say_ready(int fd, int32_t v) {
        (void) !write(fd, &v, sizeof(v));
}

/* In the parent: pid counts its interruptions into counter. */
static void observe(Observed *o, pid_t pid, int counter[2]) {
        close(counter[1]);
        *o = (Observed) { .pid = pid, .counter = counter[0] };
        g_assert_cmpint(fcntl(o->counter, F_SETFL, O_NONBLOCK), ==, 0);
}

/* nobody's process under a filter, with a child forked before the filter that is nobody's too but
 * not dumpable: hidden from nobody, and observed. Returns the parent. */
static pid_t spawn_parent_of_hidden(Observed *child) {
        int ready[2], counter[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(counter, O_CLOEXEC), ==, 0);
        pid_t pid = fork_child();
        if (pid == 0) {
                become_nobody();
                pid_t c = fork_child();
                if (c == 0) {
                        prctl(PR_SET_DUMPABLE, 0);
                        count_interruptions(counter[1]);
                }
                struct sock_filter insns[16];
                install_filter(insns, scenario_filter_errno(insns, SYS_acct, 3, 0), 0, NULL);
                say_ready(ready[1], c);
                for (;;)
                        pause();
        }
        observe(child, wait_ready(ready), counter);
        return pid;
}

/* A process of uid under a filter with a listener (notifying acct, which nobody calls); *ret_fd is
 * the listener's fd number in it. */
static pid_t spawn_with_listener(uid_t uid, int *ret_fd) {
        int ready[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = fork_child();
        if (pid == 0) {
                if (uid != 0)
                        become_nobody();
                struct sock_filter insns[8];
                int fd;
                install_filter(insns, tests_filter_notify(insns, SYS_acct), SECCOMP_FILTER_FLAG_NEW_LISTENER, &fd);
                say_ready(ready[1], fd);
                for (;;)
                        pause();
        }
        *ret_fd = wait_ready(ready);
        return pid;
}

/* A process of root's, under no filter, that holds a copy of fd of process from (as a supervisor
 * or a dbus-daemon holding a message's fds would), and is observed. */
static void spawn_holder(pid_t from, int fd, Observed *o) {
        int ready[2], counter[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(counter, O_CLOEXEC), ==, 0);
        pid_t pid = fork_child();
        if (pid == 0) {
                int pidfd = (int) syscall(SYS_pidfd_open, from, 0);
                if (pidfd < 0 || syscall(SYS_pidfd_getfd, pidfd, fd, 0) < 0)
                        _exit(3);
                say_ready(ready[1], 0);
                count_interruptions(counter[1]);
        }
        (void) wait_ready(ready);
        observe(o, pid, counter);
}

static void assert_denied_naming(sd_bus_error *error, pid_t pid, const char *why) {
        g_autofree char *want = g_strdup_printf("Process %d %s", pid, why);
        if (!sd_bus_error_is_set(error) || !strstr(error->message, want))
                g_error("expected AccessDenied saying \"%s\", got %s: %s", want, error->name, error->message);
        bus_client_assert_error(error, SD_BUS_ERROR_ACCESS_DENIED);
}

typedef struct Attempt {
        pid_t root;
        pid_t named; /* the process the refusal names; 0: the snapshot is taken */
        const char *why; /* what the refusal says of it */
} Attempt;

/* As nobody: CreateSnapshot(root), refused naming the process, or taken. */
static void nobody_snapshot(void *userdata) {
        const Attempt *a = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = bus_client_create_snapshot(bus, a->root, NULL, &error);
        if (a->named == 0 && id == 0)
                g_error("CreateSnapshot(%d) as nobody: %s", a->root, error.message);
        if (a->named != 0) {
                g_assert_cmpuint(id, ==, 0);
                assert_denied_naming(&error, a->named, a->why);
        }
        sd_bus_flush_close_unref(bus);
}

static void attempt_as_nobody(pid_t root, pid_t named, const char *why) {
        Attempt a = { .root = root, .named = named, .why = why };
        g_assert_cmpint(tests_as_nobody(nobody_snapshot, &a), ==, 0);
}

static void kill_all(const pid_t *pids, size_t n) {
        for (size_t i = 0; i < n; i++)
                kill(pids[i], SIGKILL);
        for (size_t i = 0; i < n; i++)
                (void) waitpid(pids[i], NULL, __WALL | WNOHANG);
}

/* nobody's snapshots with the ptrace backend: a process of root's that holds nobody's listener
 * (and so is part of the snapshot), one that holds an unrelated listener (and is not), and a
 * child of nobody's that nobody may not see are never stopped. Root's snapshots of the same
 * subtrees do stop them: what is counted is a stop. The unrelated holder is started first: its
 * lower pid makes the scan ask about it (and leave it running) before it meets the hidden child,
 * and the refusal must still name the child that ended the pass, not the holder met first. */
static void test_ptrace_stops_nothing_hidden(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        Observed hidden, holder, unrelated;
        int fd, fd2;
        pid_t root_listener = spawn_with_listener(0, &fd2);
        spawn_holder(root_listener, fd2, &unrelated);
        pid_t parent_of_hidden = spawn_parent_of_hidden(&hidden);
        pid_t with_held_listener = spawn_with_listener(NOBODY, &fd);
        spawn_holder(with_held_listener, fd, &holder);
        pid_t plain = tests_spawn_nobody("acc-plain", false);
        char *args[] = { (char *) "--backend=ptrace", NULL };
        g_assert_true(bus_fixture_start_all(&b, args, NULL));

        attempt_as_nobody(with_held_listener, holder.pid, "holds a listener of the subtree of");
        g_assert_cmpuint(interruptions(&holder), ==, 0);
        attempt_as_nobody(plain, 0, NULL);
        g_assert_cmpuint(interruptions(&unrelated), ==, 0);
        attempt_as_nobody(parent_of_hidden, hidden.pid, "of the subtree of");
        g_assert_cmpuint(interruptions(&hidden), ==, 0);

        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        (void) bus_client_create_ok(bus, parent_of_hidden, NULL);
        (void) bus_client_create_ok(bus, with_held_listener, NULL);
        g_assert_cmpuint(interruptions(&hidden), >=, 1);
        g_assert_cmpuint(interruptions(&holder), >=, 1);

        pid_t all[] = { parent_of_hidden, hidden.pid, with_held_listener, holder.pid, root_listener, unrelated.pid,
                        plain };
        kill_all(all, G_N_ELEMENTS(all));
        bus_fixture_finish(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/access/rule", test_rule);
        g_test_add_func("/access/uid-without-passwd-entry", test_uid_without_passwd_entry);
        g_test_add_func("/access/ptrace-stops-nothing-hidden", test_ptrace_stops_nothing_hidden);
        return g_test_run();
}
