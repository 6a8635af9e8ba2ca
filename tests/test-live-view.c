/* test-live-view.c: the bpf backend's live view stays exact when the daemon lags behind the kernel
 * and under churn: what TSYNC reached is taken at the event, a batch that does not fit leads to one
 * repair instead of a storm, and a listener means one thing in events and passes. The Manager runs
 * in this process without a bus: the test drives its loop, and not running it is the daemon being
 * stopped (SIGSTOP) while the kernel goes on. */
#include <jansson.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "churn.h"
#include "manager.h"
#include "source.h"
#include "tests-util.h"

#define DEST "org.sectree1"
#define PATH "/org/sectree1"
#define IFACE "org.sectree1.Manager"

typedef struct InProc {
        char *dir;
        Manager *m;
} InProc;

static bool inproc_start(InProc *ip) {
        if (!tests_require_root())
                return false;
        tests_ensure_tracefs();
        g_assert_cmpint(unsetenv("SECTREE_BPF_EVENTS_SIZE"), ==, 0);
        g_assert_cmpint(setenv("SECTREE_REFRESH_USEC", "600000000", 1), ==, 0);
        ip->dir = g_dir_make_tmp("sectree-live-view-XXXXXX", NULL);
        g_assert_nonnull(ip->dir);
        ManagerOptions o = { .backend = BACKEND_BPF, .state_dir = ip->dir };
        g_assert_cmpint(manager_new(&o, &ip->m), ==, 0);
        g_assert_cmpint(manager_open(ip->m), ==, 0);
        return true;
}

static void inproc_stop(InProc *ip) {
        manager_free(ip->m);
        tests_remove_dir(ip->dir);
        g_free(ip->dir);
        (void) unsetenv("SECTREE_REFRESH_USEC");
}

/* Run the manager's loop for timeout_ms, or until stop (if not NULL) says so. */
static bool inproc_run(InProc *ip, bool (*stop)(InProc *ip), unsigned timeout_ms) {
        gint64 end = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        while (g_get_monotonic_time() < end) {
                if (stop && stop(ip))
                        return true;
                g_assert_cmpint(sd_event_run(ip->m->event, 20000), >=, 0);
        }
        return stop && stop(ip);
}

static bool watch_drained(InProc *ip) {
        return !source_events_pending(ip->m->source);
}

/* The head of tid in the live forest, 0 if untracked. */
static uint64_t live_head(const Manager *m, pid_t tid) {
        const Task *t = forest_find_task(live_forest(m->live), tid, NULL);
        return t ? t->filter_id : 0;
}

/* The repro of the issue: thread T installs F with TSYNC and exits; 800 other events follow; the
 * leader forks C and exits; only then does the daemon read its events. Read from /proc when the
 * event is handled, TSYNC reached nobody (the process is gone): F was retired with T, C's fork named
 * a filter the live view no longer had, and a resync followed. Taken from the kernel at the event,
 * the leader has F, C inherits it, and nothing needs repairing. */
static void test_tsync_while_stopped(void) {
        InProc ip;
        if (!inproc_start(&ip))
                return;
        Scenario *s = tests_scenario_new();
        inproc_run(&ip, watch_drained, 2000);
        inproc_run(&ip, NULL, 100);
        unsigned passes = ip.m->stats.full_passes, inconsistent = ip.m->stats.inconsistent;

        /* The daemon is stopped from here on: nothing reads its events. */
        struct sock_filter f[PROG_MAX_INSNS];
        size_t n = scenario_filter_errno(f, SYS_acct, 19, 3);
        ScenarioTask p = scenario_fork(s, scenario_root(s));
        ScenarioTask t = scenario_thread(s, p);
        g_assert_cmpint(scenario_install(s, t, f, n, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_exit(s, t), ==, 0);
        for (int i = 0; i < 400; i++) { /* a fork and an exit each */
                ScenarioTask x = scenario_fork(s, p);
                g_assert_cmpint(x, >=, 0);
                g_assert_cmpint(scenario_exit(s, x), ==, 0);
        }
        ScenarioTask c = scenario_fork(s, p);
        g_assert_cmpint(c, >=, 0);
        pid_t c_tid = scenario_task(s, c)->tid;
        g_assert_cmpint(scenario_exit(s, p), ==, 0);

        /* The daemon goes on. */
        g_assert_true(inproc_run(&ip, watch_drained, TESTS_PATIENCE_MS));
        inproc_run(&ip, NULL, 1500); /* a resync, had one been asked for, would run by now */
        uint64_t head = live_head(ip.m, c_tid);
        if (head == 0)
                g_error("child %d, made under the TSYNC'ed filter while the daemon was stopped, is not in the live view",
                        c_tid);
        const Filter *flt = forest_find_filter(live_forest(ip.m->live), head);
        g_assert_nonnull(flt);
        g_assert_cmpuint(flt->len, ==, n);
        g_assert_cmpmem(flt->insns, n * sizeof(struct sock_filter), f, n * sizeof(struct sock_filter));
        g_assert_cmpuint(ip.m->stats.inconsistent, ==, inconsistent);
        g_assert_cmpuint(ip.m->stats.failed_batches, ==, 0);
        g_assert_cmpuint(ip.m->stats.full_passes, ==, passes);
        scenario_free(s);
        inproc_stop(&ip);
}

/* A child that makes a listener and then does what it is told through a pipe: 'd' dup the fd,
 * 'c' close the first fd, 'C' close the dup, 'x' exit. */
typedef struct ListenerChild {
        pid_t pid;
        int cmd, fd, dup_fd;
} ListenerChild;

static void listener_child_main(int cmd, int reply) {
        struct sock_filter f[16];
        size_t n = scenario_filter_errno(f, SYS_acct, 88, 2);
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
        int fds[2] = { -1, -1 };
        char c;
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        fds[0] = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (write(reply, fds, sizeof(fds)) != sizeof(fds))
                _exit(1);
        while (read(cmd, &c, 1) == 1) {
                if (c == 'd')
                        fds[1] = dup(fds[0]);
                else if (c == 'c')
                        close(fds[0]);
                else if (c == 'C')
                        close(fds[1]);
                else
                        _exit(0);
                if (write(reply, fds, sizeof(fds)) != sizeof(fds))
                        _exit(1);
        }
        _exit(0);
}

static ListenerChild listener_child_start(void) {
        int cmd[2], reply[2], fds[2];
        g_assert_cmpint(pipe(cmd), ==, 0);
        g_assert_cmpint(pipe(reply), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(cmd[1]);
                close(reply[0]);
                listener_child_main(cmd[0], reply[1]);
        }
        close(cmd[0]);
        close(reply[1]);
        g_assert_cmpint(read(reply[0], fds, sizeof(fds)), ==, sizeof(fds));
        g_assert_cmpint(fds[0], >=, 0);
        ListenerChild c = { .pid = pid, .cmd = cmd[1], .fd = fds[0] };
        c.dup_fd = reply[0]; /* kept here until the first dup */
        return c;
}

static void listener_child_do(ListenerChild *c, char what, int *reply_fd) {
        int fds[2];
        g_assert_cmpint(write(c->cmd, &what, 1), ==, 1);
        if (what == 'x') {
                g_assert_cmpint(waitpid(c->pid, NULL, 0), ==, c->pid);
                return;
        }
        g_assert_cmpint(read(*reply_fd, fds, sizeof(fds)), ==, sizeof(fds));
        if (what == 'd')
                c->dup_fd = fds[1];
}

/* What the live view says of the listener of the child's filter: the filter's flag, the listener
 * with its holders, and whether the counts agree with the listeners listed. */
static char *listener_view(const Manager *m, pid_t pid) {
        const Forest *f = live_forest(m->live);
        const Task *t = forest_find_task(f, pid, NULL);
        if (!t)
                return g_strdup("(untracked)");
        const Filter *flt = forest_find_filter(f, t->filter_id);
        g_assert_nonnull(flt);
        GString *s = g_string_new(NULL);
        g_string_append_printf(s, "flag %d", flt->has_listener);
        const Listener *l = forest_find_listener(f, flt->id);
        if (l) {
                g_string_append_printf(s, " listener %s filter %s holders", l->id == flt->id ? "=" : "!=",
                                       l->filter_id == flt->id ? "=" : "!=");
                for (size_t i = 0; i < l->n_holders; i++)
                        g_string_append_printf(s, " %d:%d", l->holders[i].pid == pid ? 0 : l->holders[i].pid,
                                               l->holders[i].fd);
        }
        g_assert_cmpuint(live_counts(m->live).listeners, ==, f->n_listeners);
        return g_string_free(s, false);
}

/* The view after the events, then after a Rescan of the unchanged machine: the same. */
static void assert_view(InProc *ip, pid_t pid, const char *want) {
        g_assert_true(inproc_run(ip, watch_drained, TESTS_PATIENCE_MS));
        inproc_run(ip, NULL, 50);
        g_autofree char *events = listener_view(ip->m, pid);
        g_assert_cmpstr(events, ==, want);
        g_assert_cmpint(manager_full_pass(ip->m, "rescan"), ==, 0);
        g_autofree char *pass = listener_view(ip->m, pid);
        g_assert_cmpstr(pass, ==, want);
}

/* One meaning for listener, in events and in passes: a listener of a filter exists while some
 * process holds a descriptor of it; then the filter is flagged, the listener is listed with its
 * holders under its filter's id, and the count says so; when the last descriptor goes (closed, or
 * its process exited), all three say it is gone. A Rescan over the unchanged machine changes
 * nothing of it. */
static void test_listener_meaning(void) {
        InProc ip;
        if (!inproc_start(&ip))
                return;
        inproc_run(&ip, watch_drained, 2000);

        ListenerChild c = listener_child_start();
        int reply = c.dup_fd;
        g_autofree char *held = g_strdup_printf("flag 1 listener = filter = holders 0:%d", c.fd);
        assert_view(&ip, c.pid, held);
        listener_child_do(&c, 'd', &reply);
        g_autofree char *two = g_strdup_printf("flag 1 listener = filter = holders 0:%d 0:%d", c.fd, c.dup_fd);
        /* a dup makes no event: the pass sees it; events and passes agree once it is seen */
        g_assert_cmpint(manager_full_pass(ip.m, "rescan"), ==, 0);
        assert_view(&ip, c.pid, two);
        listener_child_do(&c, 'c', &reply);
        g_autofree char *one = g_strdup_printf("flag 1 listener = filter = holders 0:%d", c.dup_fd);
        assert_view(&ip, c.pid, one);
        listener_child_do(&c, 'C', &reply);
        assert_view(&ip, c.pid, "flag 0");
        listener_child_do(&c, 'x', &reply);
        close(reply);
        close(c.cmd);

        /* a holder that exits with its descriptor open takes the listener with it */
        ListenerChild d = listener_child_start();
        reply = d.dup_fd;
        g_autofree char *held_d = g_strdup_printf("flag 1 listener = filter = holders 0:%d", d.fd);
        assert_view(&ip, d.pid, held_d);
        uint64_t id = live_head(ip.m, d.pid);
        listener_child_do(&d, 'x', &reply);
        close(reply);
        close(d.cmd);
        g_assert_true(inproc_run(&ip, watch_drained, TESTS_PATIENCE_MS));
        inproc_run(&ip, NULL, 50);
        g_assert_null(forest_find_listener(live_forest(ip.m->live), id));
        inproc_stop(&ip);
}

/* ---- the real daemon on a private bus ---- */

/* What a daemon started between daemon_log_begin() and daemon_log_started() writes on its stderr:
 * a file the test reads, copied to the test's stderr by daemon_log_end(). */
typedef struct DaemonLog {
        int saved_fd;
        char *path;
} DaemonLog;

static void daemon_log_begin(DaemonLog *l) {
        g_autoptr(GError) error = NULL;
        int fd = g_file_open_tmp("sectree-live-view-XXXXXX.log", &l->path, &error);
        if (fd < 0)
                g_error("daemon log: %s", error->message);
        l->saved_fd = dup(STDERR_FILENO);
        g_assert_cmpint(l->saved_fd, >=, 0);
        g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
        close(fd);
}

static void daemon_log_started(DaemonLog *l) {
        g_assert_cmpint(dup2(l->saved_fd, STDERR_FILENO), ==, STDERR_FILENO);
        close(l->saved_fd);
        l->saved_fd = -1;
}

/* Lines of the log that contain what. */
static unsigned daemon_log_count(const DaemonLog *l, const char *what) {
        g_autofree char *text = NULL;
        unsigned n = 0;
        if (!g_file_get_contents(l->path, &text, NULL, NULL))
                return 0;
        for (const char *at = text; (at = strstr(at, what)); at += strlen(what))
                n++;
        return n;
}

static void daemon_log_end(DaemonLog *l) {
        g_autofree char *text = NULL;
        if (g_file_get_contents(l->path, &text, NULL, NULL))
                fputs(text, stderr);
        unlink(l->path);
        g_free(l->path);
}

/* The daemon with its stderr in l; false (l ended) when the test cannot run here. */
static bool daemon_start(BusFixture *b, DaemonLog *l) {
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        daemon_log_begin(l);
        bool ok = bus_fixture_start_all(b, NULL, env);
        daemon_log_started(l);
        if (!ok)
                daemon_log_end(l);
        return ok;
}

/* The signals counted as they come. */
typedef struct Signals {
        GHashTable *attached_by_tid; /* tid -> filter id of its last FilterAttached */
        uint64_t churn_attached;     /* FilterAttached of filters the churn installed (by its comm) */
        unsigned resynced, resynced_lost, resynced_inconsistent;
} Signals;

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Signals *s = userdata;
        const char *member = sd_bus_message_get_member(m);
        if (streq(member, "FilterAttached")) {
                uint64_t id, parent;
                uint32_t tid, pid;
                const char *comm;
                g_assert_cmpint(sd_bus_message_read(m, "ttuus", &id, &parent, &tid, &pid, &comm), >, 0);
                g_hash_table_insert(s->attached_by_tid, GUINT_TO_POINTER(tid), g_memdup2(&id, sizeof(id)));
                s->churn_attached += streq(comm, CHURN_COMM);
        } else if (streq(member, "Resynced")) {
                const char *reason;
                g_assert_cmpint(sd_bus_message_read(m, "s", &reason), >, 0);
                s->resynced++;
                s->resynced_lost += streq(reason, "lost-events");
                s->resynced_inconsistent += streq(reason, "inconsistent");
        }
        return 0;
}

static void signals_start(Signals *s, sd_bus *bus) {
        *s = (Signals) { .attached_by_tid = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free) };
        g_assert_cmpint(sd_bus_match_signal(bus, NULL, DEST, PATH, IFACE, NULL, on_signal, s), >=, 0);
        g_assert_cmpint(sd_bus_process(bus, NULL), >=, 0);
}

static void signals_done(Signals *s) {
        g_hash_table_destroy(s->attached_by_tid);
}

/* Take in the signals for ms milliseconds. */
static void pump(sd_bus *bus, unsigned ms) {
        gint64 end = g_get_monotonic_time() + (gint64) ms * 1000;
        do {
                int r = sd_bus_process(bus, NULL);
                g_assert_cmpint(r, >=, 0);
                if (r == 0)
                        g_assert_cmpint(sd_bus_wait(bus, 10000), >=, 0);
        } while (g_get_monotonic_time() < end);
}

/* A probe: a scenario process installs a filter of its own bytes; its tid. */
static pid_t probe_install(Scenario *s, int i) {
        struct sock_filter f[16];
        size_t n = scenario_filter_errno(f, SYS_getpriority, 600 + i, (size_t) (i % 5));
        ScenarioTask t = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(t, >=, 0);
        g_assert_cmpint(scenario_install(s, t, f, n, 0), >=, 0);
        return scenario_task(s, t)->tid;
}

#define PROBES 25

/* Under heavy mixed churn (forks, threads, TSYNC, exec, orphans, listeners), with the daemon stopped
 * now and then so that it reads its events late, no storm: a batch that
 * does not fit leads to one repair, not to the failure of every batch after it; each warning comes
 * at most once per 10 s with a count; every probe filter installed meanwhile is announced by
 * FilterAttached. */
static void test_no_storm(void) {
        BusFixture b;
        DaemonLog dl;
        if (!daemon_start(&b, &dl))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        Signals sig;
        signals_start(&sig, bus);
        Scenario *s = tests_scenario_new();
        Churn *c;
        g_assert_cmpint(churn_start(&(ChurnOptions) { .workers = 2 }, &c), ==, 0);
        gint64 start = g_get_monotonic_time();
        pid_t probes[PROBES];
        for (int i = 0; i < PROBES; i++) {
                /* The daemon lags: stopped now and then, it reads its events late. */
                bool stop = i % 5 == 2;
                if (stop)
                        g_assert_cmpint(kill(b.daemon_pid, SIGSTOP), ==, 0);
                pump(bus, 200);
                probes[i] = probe_install(s, i);
                if (stop)
                        g_assert_cmpint(kill(b.daemon_pid, SIGCONT), ==, 0);
        }
        churn_stop(c);
        double seconds = (double) (g_get_monotonic_time() - start) / 1e6;
        ChurnCounts n;
        churn_counts(c, &n);
        g_test_message("%.1f s of churn: %" PRIu64 " installs (%.0f/s), %" PRIu64 " with TSYNC, %" PRIu64
                       " listeners, %" PRIu64 " execs, %" PRIu64 " orphans", seconds, n.installs,
                       (double) n.installs / seconds, n.tsync, n.listeners, n.execs, n.orphans);
        gint64 end = g_get_monotonic_time() + TESTS_PATIENCE_MS * 1000;
        unsigned announced = 0;
        while (g_get_monotonic_time() < end) {
                pump(bus, 100);
                announced = 0;
                for (int i = 0; i < PROBES; i++)
                        announced += g_hash_table_contains(sig.attached_by_tid, GUINT_TO_POINTER(probes[i]));
                if (announced == PROBES)
                        break;
        }
        pump(bus, 1500); /* a repair asked for last runs by now */
        unsigned limit = 2 + (unsigned) (seconds / 10);
        unsigned failed = daemon_log_count(&dl, "Applying events failed"), left_out = daemon_log_count(&dl, "Left out "),
                 lost = daemon_log_count(&dl, "Events were lost");
        g_test_message("%u of %d probes announced; log: %u 'Applying events failed', %u 'Left out', %u 'Events were "
                       "lost'; Resynced: %u (%u lost-events, %u inconsistent)", announced, PROBES, failed, left_out,
                       lost, sig.resynced, sig.resynced_lost, sig.resynced_inconsistent);
        churn_free(c);
        scenario_free(s);
        bus_fixture_stop(&b);
        daemon_log_end(&dl);
        g_assert_cmpuint(announced, ==, PROBES);
        /* events that do not fit come only from events lost */
        g_assert_cmpuint(sig.resynced_inconsistent, <=, sig.resynced_lost);
        g_assert_cmpuint(failed, <=, limit);
        g_assert_cmpuint(left_out, <=, limit);
        g_assert_cmpuint(lost, <=, limit);
        signals_done(&sig);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/live-view/tsync-while-stopped", test_tsync_while_stopped);
        g_test_add_func("/live-view/no-storm", test_no_storm);
        g_test_add_func("/live-view/listener-meaning", test_listener_meaning);
        return g_test_run();
}
