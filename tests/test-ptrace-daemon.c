/* test-ptrace-daemon.c: the real sectreed with the ptrace backend on a private dbus-daemon, where
 * the ptrace backend differs from the bpf one: snapshots refused to unprivileged callers, listeners
 * held by processes they may not see, and tasks another tracer holds; and each failure of a ptrace
 * scan logged once */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "ctl-run.h"
#include "scenario.h"
#include "tests-util.h"

#define NOBODY 65534

static char *ptrace_args[] = { (char *) "--backend=ptrace", NULL };

/* ---- a refused snapshot leaves the daemon's fds alone ---- */

/* A process of nobody under a filter, with a child that made itself not dumpable (nobody may not
 * stop it): *ret_child is the child. */
static pid_t spawn_nobody_with_hidden_child(pid_t *ret_child) {
        int ready[2];
        pid_t parent = getpid();
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_filter insns[16];
                size_t n = scenario_filter_errno(insns, SYS_acct, 3, 0);
                struct sock_fprog prog = { .len = (unsigned short) n, .filter = insns };
                close(ready[0]);
                tests_become(NOBODY);
                /* dumpable again: the change of credentials made it not */
                if (getppid() != parent || prctl(PR_SET_DUMPABLE, 1) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(2);
                pid_t child = fork();
                if (child == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        prctl(PR_SET_DUMPABLE, 0);
                        (void) !write(ready[1], &(pid_t) { getpid() }, sizeof(pid_t));
                        pause();
                        _exit(0);
                }
                pause();
                _exit(0);
        }
        close(ready[1]);
        g_assert_cmpint(read(ready[0], ret_child, sizeof(pid_t)), ==, sizeof(pid_t));
        close(ready[0]);
        return pid;
}

typedef struct RefusedCase {
        pid_t refused_root, hidden, mine;
} RefusedCase;

static void refused_part(void *userdata) {
        RefusedCase *c = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        /* each refusal runs in the lane's worker, whose eventfd may be the lowest free fd */
        for (int i = 0; i < 4; i++) {
                g_assert_cmpuint(bus_client_create_snapshot(bus, c->refused_root, NULL, &error), ==, 0);
                if (!sd_bus_error_has_name(&error, SD_BUS_ERROR_ACCESS_DENIED))
                        g_error("refused snapshot %d: expected AccessDenied, got %s: %s", i, error.name, error.message);
                g_autofree char *pid = g_strdup_printf("Process %d ", (int) c->hidden);
                if (!strstr(error.message, pid))
                        g_error("refused snapshot %d does not name process %d: %s", i, (int) c->hidden, error.message);
                sd_bus_error_free(&error);
        }
        /* and the lane still serves */
        for (int i = 0; i < 2; i++)
                g_assert_cmpuint(bus_client_create_ok(bus, c->mine, NULL), >, 0);
        sd_bus_flush_close_unref(bus);
}

/* The lines of text that contain one of a and b. */
static unsigned count_lines_with(const char *text, const char *a, const char *b) {
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        unsigned n = 0;
        for (char **l = lines; *l; l++)
                n += strstr(*l, a) || strstr(*l, b);
        return n;
}

/* A non-root caller's snapshot of a subtree holding a process it may not stop is refused by the
 * ptrace scan before anything is stopped; the refusal closes no fd of the daemon's (it once closed
 * fd 0, and later the eventfd of the transfer lane that landed there: the lane was stuck). */
static void test_refused_snapshot(void) {
        BusFixture b;
        DaemonLog dl;
        char *args[] = { (char *) "--backend=ptrace", (char *) "--log-level=debug", NULL };
        daemon_log_begin(&dl);
        bool started = bus_fixture_start_all(&b, args, NULL);
        daemon_log_started(&dl);
        if (!started) {
                daemon_log_end(&dl);
                return;
        }
        RefusedCase c;
        c.refused_root = spawn_nobody_with_hidden_child(&c.hidden);
        c.mine = tests_spawn_nobody("ptrace-mine", true); /* after them: above them in /proc */
        int status = tests_as_nobody(refused_part, &c);
        if (status != 0)
                g_error("the part run as nobody failed (status %d)", status);
        /* the daemon's stdin is still what it was started with */
        g_autofree char *fd0 = g_strdup_printf("/proc/%d/fd/0", (int) b.daemon_pid);
        g_autofree char *target = g_file_read_link(fd0, NULL);
        g_assert_nonnull(target);
        g_assert_null(strstr(target, "eventfd"));
        /* each refusal logged once, even at debug level: the scan's reason, not a second line */
        g_autofree char *log = daemon_log_text(&dl);
        g_autofree char *hidden = g_strdup_printf("process %d may not be stopped", (int) c.hidden);
        g_assert_cmpuint(count_lines_with(log, hidden, "ptrace scan failed"), ==, 4);
        kill(c.refused_root, SIGKILL);
        kill(c.mine, SIGKILL);
        waitpid(c.refused_root, NULL, 0);
        waitpid(c.mine, NULL, 0);
        bus_fixture_finish(&b);
        daemon_log_end(&dl);
}

/* ---- a listener held by a process the caller may not see ---- */

static void send_fd(int sock, int fd) {
        char control[CMSG_SPACE(sizeof(int))] = {}, byte = 'L';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        if (sendmsg(sock, &mh, 0) != 1)
                _exit(4);
}

static int recv_fd(int sock) {
        char control[CMSG_SPACE(sizeof(int))] = {}, byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        if (recvmsg(sock, &mh, 0) != 1)
                return -1;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        int fd;
        if (!cm || cm->cmsg_type != SCM_RIGHTS)
                return -1;
        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        return fd;
}

static void install(const struct sock_filter *insns, size_t n) {
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = (struct sock_filter *) insns };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(2);
}

typedef struct HeldListener {
        pid_t supervisor; /* root's: holds an fd of the listener */
        pid_t installer;  /* nobody's: installed the filter, passed its listener on */
        bool keep;        /* and kept its own copy */
        int result_fd;    /* write end: the pid the refusal names */
} HeldListener;

/* Whether process pid holds a seccomp listener fd (root reads its fds: the daemon's test). */
static bool holds_listener(pid_t pid) {
        g_autofree char *dir = g_strdup_printf("/proc/%d/fd", (int) pid);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
                g_autofree char *path = g_build_filename(dir, name, NULL);
                g_autofree char *target = g_file_read_link(path, NULL);
                if (target && strstr(target, "seccomp notify"))
                        return true;
        }
        return false;
}

/* Root's supervisor (under a filter of its own if filtered: a sandboxed one), and nobody's
 * process whose listener it holds; the installer keeps a copy only if keep. */
static void spawn_held_listener(bool filtered, bool keep, HeldListener *ret) {
        int sp[2], ready[2];
        char c;
        pid_t parent = getpid();
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), ==, 0);
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        ret->supervisor = fork();
        g_assert_cmpint(ret->supervisor, >=, 0);
        if (ret->supervisor == 0) {
                struct sock_filter insns[16];
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (filtered)
                        install(insns, scenario_filter_errno(insns, SYS_acct, 1, 0));
                int fd = recv_fd(sp[0]);
                (void) !write(ready[1], fd >= 0 ? "x" : "-", 1);
                pause();
                _exit(0);
        }
        ret->keep = keep;
        ret->installer = fork();
        g_assert_cmpint(ret->installer, >=, 0);
        if (ret->installer == 0) {
                struct sock_filter insns[16];
                size_t n = tests_filter_notify(insns, SYS_syslog);
                struct sock_fprog prog = { .len = (unsigned short) n, .filter = insns };
                tests_become(NOBODY);
                if (getppid() != parent || prctl(PR_SET_DUMPABLE, 1) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        _exit(2);
                int fd = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
                if (fd < 0)
                        _exit(3);
                send_fd(sp[1], fd);
                if (!keep)
                        close(fd);
                pause();
                _exit(0);
        }
        g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        g_assert_cmpint(c, ==, 'x');
        close(ready[0]);
        close(ready[1]);
        close(sp[0]);
        close(sp[1]);
}

static void held_listener_part(void *userdata) {
        HeldListener *h = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = bus_client_create_snapshot(bus, h->installer, NULL, &error);
        if (id > 0)
                g_error("nobody's snapshot of %d, whose listener root's %d holds, was taken (%" PRIu64 ")",
                        (int) h->installer, (int) h->supervisor, id);
        if (!sd_bus_error_has_name(&error, SD_BUS_ERROR_ACCESS_DENIED))
                g_error("expected AccessDenied, got %s: %s", error.name, error.message);
        pid_t named;
        if (sscanf(error.message, "Process %d ", &named) != 1)
                g_error("the refusal names no process: %s", error.message);
        g_test_message("refused: %s", error.message);
        g_assert_cmpint(write(h->result_fd, &named, sizeof(named)), ==, sizeof(named));
        sd_bus_error_free(&error);
        sd_bus_flush_close_unref(bus);
}

/* nobody's snapshot of its process whose listener root's supervisor holds (alone, or with the
 * installer) is refused, naming the supervisor, with both backends alike (the ptrace backend used
 * to leave the supervisor, which it may not stop for nobody, out, and the listener with it:
 * "listener": null, or the listener without that holder). */
static void held_listener_with(char **args, bool filtered, bool keep) {
        BusFixture b;
        HeldListener h;
        if (!bus_fixture_start_all(&b, args, NULL))
                return;
        spawn_held_listener(filtered, keep, &h);
        int result[2];
        pid_t named;
        g_assert_cmpint(pipe2(result, O_CLOEXEC), ==, 0);
        h.result_fd = result[1];
        int status = tests_as_nobody(held_listener_part, &h);
        close(result[1]);
        if (status != 0)
                g_error("the part run as nobody failed (status %d)", status);
        g_assert_cmpint(read(result[0], &named, sizeof(named)), ==, sizeof(named));
        close(result[0]);
        /* the holder; where the ptrace backend cannot tell whose listener an fd is (the installer
         * kept none), it may name another process of root's holding some listener (another test's) */
        if (named != h.supervisor && (keep || !holds_listener(named)))
                g_error("the refusal names %d, not the holder %d", (int) named, (int) h.supervisor);
        kill(h.installer, SIGKILL);
        kill(h.supervisor, SIGKILL);
        waitpid(h.installer, NULL, 0);
        waitpid(h.supervisor, NULL, 0);
        bus_fixture_finish(&b);
}

static void test_held_listener_bpf(void) {
        held_listener_with(NULL, false, false);
        held_listener_with(NULL, true, false);
        held_listener_with(NULL, true, true);
}

static void test_held_listener(void) {
        held_listener_with(ptrace_args, false, false);
        held_listener_with(ptrace_args, true, false);
        held_listener_with(ptrace_args, true, true);
}

/* ---- another tracer ---- */

/* A process of root's under two filters of its own, pausing (no fork, no exec: no event). */
/* go: -1, or a pipe's read end: the child installs its filters once a byte comes (before, it runs
 * without any, and only a full pass can see them come). */
static pid_t spawn_two_filters_after(int go) {
        int ready[2];
        char c;
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_filter a[16], b[16];
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (go >= 0 && read(go, &c, 1) != 1)
                        _exit(2);
                install(a, scenario_filter_errno(a, SYS_acct, 1, 0));
                install(b, scenario_filter_errno(b, SYS_swapon, 2, 0));
                (void) !write(ready[1], "x", 1);
                for (;;)
                        pause();
        }
        close(ready[1]);
        if (go < 0)
                g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        close(ready[0]);
        return pid;
}

static pid_t spawn_two_filters(void) {
        return spawn_two_filters_after(-1);
}

/* GetTaskChain(tid) as "id,id" (newest first), or the error's name. */
static char *task_chain(sd_bus *bus, pid_t tid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "GetTaskChain", &error, &reply, "u", (uint32_t) tid) < 0) {
                char *name = g_strdup(error.name);
                sd_bus_error_free(&error);
                return name;
        }
        const uint64_t *ids;
        size_t size;
        g_assert_cmpint(sd_bus_message_read_array(reply, 't', (const void **) &ids, &size), >=, 0);
        GString *s = g_string_new(NULL);
        for (size_t i = 0; i < size / sizeof(uint64_t); i++)
                g_string_append_printf(s, "%s%" PRIu64, i ? "," : "", ids[i]);
        return g_string_free(s, false);
}

typedef struct ChainIs {
        sd_bus *bus;
        pid_t tid;
        size_t depth;
} ChainIs;

static bool chain_has_depth(void *userdata) {
        ChainIs *c = userdata;
        g_autofree char *chain = task_chain(c->bus, c->tid);
        size_t commas = 0;
        for (const char *p = chain; *p; p++)
                commas += *p == ',';
        return g_ascii_isdigit(chain[0]) && commas + 1 == c->depth;
}

typedef struct StaleIs {
        sd_bus *bus;
        pid_t tid;
        bool stale;
} StaleIs;

/* Whether ListStaleTasks lists s->tid as s->stale wants. */
static bool stale_is(void *userdata) {
        StaleIs *s = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const uint32_t *tids;
        size_t size;
        bool listed = false;
        if (bus_client_call(s->bus, "ListStaleTasks", &error, &reply, "") < 0)
                g_error("ListStaleTasks: %s", error.message);
        g_assert_cmpint(sd_bus_message_read_array(reply, 'u', (const void **) &tids, &size), >=, 0);
        for (size_t i = 0; i < size / sizeof(uint32_t); i++)
                listed = listed || tids[i] == (uint32_t) s->tid;
        return listed == s->stale;
}

/* What sectreectl shows of tid: ps --json's "stale", and whether its process's line in tree says
 * "(stale)". */
static void ctl_shows_stale(BusFixture *b, pid_t tid, bool want) {
        g_autofree char *arg = g_strdup_printf("%d", (int) tid);
        json_t *doc = ctl_run_json(b, CTL_ARGS("ps", "--json", arg));
        json_t *task = json_array_get(json_object_get(doc, "tasks"), 0);
        if (!task || json_boolean_value(json_object_get(task, "stale")) != want)
                g_error("ps --json %d: \"stale\" should be %s", (int) tid, want ? "true" : "false");
        json_decref(doc);
        g_autofree char *tree = ctl_run_ok(b, CTL_ARGS("tree"));
        g_autofree char *needle = g_strdup_printf("[%d]", (int) tid);
        const char *line = strstr(tree, needle);
        g_assert_nonnull(line);
        g_autofree char *rest = g_strndup(line, strcspn(line, "\n"));
        if ((strstr(rest, "(stale)") != NULL) != want)
                g_error("tree: the line of %d is '%s', %s(stale)", (int) tid, rest, want ? "without " : "with ");
}

/* Another tracer: one that holds the task seized (strace), or one that seizes, stops and lets go of
 * it again and again (a second ptrace observer), until killed. */
static pid_t start_tracer(pid_t tracee, bool flap) {
        int ready[2];
        char c;
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                while (ptrace(PTRACE_SEIZE, tracee, NULL, NULL) < 0) /* EPERM: the daemon's pass holds it now */
                        if (errno != EPERM)
                                _exit(2);
                (void) !write(ready[1], "x", 1);
                while (flap) {
                        int status;
                        if (ptrace(PTRACE_INTERRUPT, tracee, NULL, NULL) < 0 || waitpid(tracee, &status, __WALL) < 0 ||
                            ptrace(PTRACE_DETACH, tracee, NULL, NULL) < 0)
                                _exit(3);
                        while (ptrace(PTRACE_SEIZE, tracee, NULL, NULL) < 0)
                                if (errno != EPERM)
                                        _exit(4);
                }
                for (;;)
                        pause();
        }
        close(ready[1]);
        g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        close(ready[0]);
        return pid;
}

static char *format_attached(sd_bus_message *m) {
        uint64_t id, parent;
        uint32_t tid, pid;
        const char *comm;
        if (!sd_bus_message_is_signal(m, BUS_CLIENT_IFACE, "FilterAttached") ||
            sd_bus_message_read(m, "ttuus", &id, &parent, &tid, &pid, &comm) < 0)
                return NULL;
        return g_strdup_printf("%u", tid);
}

/* While another tracer holds a task (or keeps seizing it), the passes that cannot read it keep its
 * last known state: it stays in the view with the same filter ids, and no FilterAttached is sent
 * for it; once the tracer lets go, it reads the same. It used to drop out at the next pass and
 * come back with new ids. */
static void tracer_with(bool flap) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=200000", NULL };
        if (!bus_fixture_start_all(&b, ptrace_args, env))
                return;
        pid_t tracee = spawn_two_filters();
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_assert_true(tests_wait_for(chain_has_depth, &(ChainIs) { bus, tracee, 2 }, TESTS_PATIENCE_MS));
        g_autofree char *chain = task_chain(bus, tracee);
        BusSignalLog log;
        bus_signal_log_start(&log, bus, format_attached);

        int go[2];
        g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
        pid_t twin = flap ? 0 : spawn_two_filters_after(go[0]);
        close(go[0]);
        pid_t tracer = start_tracer(tracee, flap);
        if (!flap) { /* held: no pass can read it, and it is shown as stale */
                g_assert_true(tests_wait_for(stale_is, &(StaleIs) { bus, tracee, true }, TESTS_PATIENCE_MS));
                ctl_shows_stale(&b, tracee, true);
                /* A process installs the same two filters (bytes and all) now, which only a full pass
                 * sees: its filters are its own, not the held task's (which it once took, by their
                 * bytes, at the pass that found them). */
                g_assert_cmpint(write(go[1], "x", 1), ==, 1);
                g_assert_true(tests_wait_for(chain_has_depth, &(ChainIs) { bus, twin, 2 }, TESTS_PATIENCE_MS));
                g_autofree char *twin_chain = task_chain(bus, twin);
                g_auto(GStrv) ours = g_strsplit(chain, ",", -1), theirs = g_strsplit(twin_chain, ",", -1);
                for (char **a = ours; *a; a++)
                        for (char **t = theirs; *t; t++)
                                if (streq(*a, *t))
                                        g_error("the new process %d (chain %s) took filter %s of the held task %d (chain %s)",
                                                (int) twin, twin_chain, *a, (int) tracee, chain);
        }
        for (int i = 0; i < 20; i++) { /* 2 s: about ten passes */
                g_usleep(100 * 1000);
                g_autofree char *now = task_chain(bus, tracee);
                if (!streq(now, chain))
                        g_error("%s another tracer, the chain of %d went from %s to %s", flap ? "with" : "held by",
                                (int) tracee, chain, now);
        }
        kill(tracer, SIGKILL);
        waitpid(tracer, NULL, 0);
        g_usleep(600 * 1000);
        g_autofree char *after = task_chain(bus, tracee);
        g_assert_cmpstr(after, ==, chain);
        g_assert_true(tests_wait_for(stale_is, &(StaleIs) { bus, tracee, false }, TESTS_PATIENCE_MS));
        ctl_shows_stale(&b, tracee, false);
        while (sd_bus_process(bus, NULL) > 0)
                ;
        g_autofree char *tid = g_strdup_printf("%d", (int) tracee);
        for (guint i = 0; i < log.lines->len; i++)
                if (streq(g_ptr_array_index(log.lines, i), tid))
                        g_error("FilterAttached for %d, whose chain did not change", (int) tracee);
        g_ptr_array_unref(log.lines);
        close(go[1]);
        kill(tracee, SIGKILL);
        waitpid(tracee, NULL, 0);
        if (twin > 0) {
                kill(twin, SIGKILL);
                waitpid(twin, NULL, 0);
        }
        bus_fixture_finish(&b);
}

/* ---- a scan that fails is logged once ---- */

/* The child of g_spawn: under an allow-all filter, which the ptrace backend cannot run under. */
static void under_seccomp(gpointer userdata) {
        struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = { .len = 1, .filter = &allow };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(126);
        tests_die_with_parent(NULL);
}

/* sectreed with args under seccomp: it fails (exit status 1), and says why in one line. */
static void assert_fails_once(BusFixture *b, char **args) {
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREED"), (const char *const *) args);
        g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), "DBUS_SYSTEM_BUS_ADDRESS", b->address, true);
        g_autofree char *out = NULL, *err = NULL;
        g_autoptr(GError) error = NULL;
        int status;
        if (!g_spawn_sync(NULL, (char **) argv->pdata, envp, 0, under_seccomp, NULL, &out, &err, &status, &error))
                g_error("running sectreed: %s", error->message);
        g_assert_cmpint(WIFEXITED(status) ? WEXITSTATUS(status) : -1, ==, 1);
        g_assert_cmpuint(count_lines_with(err, "ptrace", "seccomp"), ==, 1);
        g_assert_nonnull(strstr(err, "ptrace scan failed: The ptrace backend cannot run under seccomp"));
}

static void test_failure_logged_once(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        bus_fixture_start_bus(&b);
        g_autofree char *state = g_strdup_printf("--state-dir=%s", b.state_dir);
        /* the one-shot scan, and the service's first pass */
        assert_fails_once(&b, (char *[]) { (char *) "--backend=ptrace", (char *) "scan", NULL });
        assert_fails_once(&b, (char *[]) { (char *) "--backend=ptrace", state, NULL });
        bus_fixture_stop(&b);
}

static void test_tracer_holds(void) {
        tracer_with(false);
}

static void test_tracer_flaps(void) {
        tracer_with(true);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/ptrace-daemon/refused-snapshot", test_refused_snapshot);
        g_test_add_func("/ptrace-daemon/held-listener/ptrace", test_held_listener);
        g_test_add_func("/ptrace-daemon/held-listener/bpf", test_held_listener_bpf);
        g_test_add_func("/ptrace-daemon/tracer/holds", test_tracer_holds);
        g_test_add_func("/ptrace-daemon/tracer/flaps", test_tracer_flaps);
        g_test_add_func("/ptrace-daemon/failure-logged-once", test_failure_logged_once);
        return g_test_run();
}
