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
#include "core/warn-limit.h"
#include "observe/source.h"
#include "observe/watcher.h"
#include "service/manager.h"
#include "inproc.h"
#include "tests-util.h"

#define DEST "org.sectree1"
#define PATH "/org/sectree1"
#define IFACE "org.sectree1.Manager"

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
        if (!inproc_start(&ip, NULL, NULL))
                return;
        Scenario *s = tests_scenario_new();
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);
        inproc_run(&ip, NULL, NULL, 100);
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
        g_assert_true(inproc_run(&ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        inproc_run(&ip, NULL, NULL, 1500); /* a resync, had one been asked for, would run by now */
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
 * 'c' close the first fd, 'C' close the dup, 'f' fork a grandchild that only waits (with a copy of
 * the fds), 'x' exit. */
typedef struct ListenerChild {
        pid_t pid, grandchild;
        int cmd, reply, fd, dup_fd;
} ListenerChild;

static void listener_child_main(int cmd, int reply) {
        struct sock_filter f[16];
        size_t n = scenario_filter_errno(f, SYS_acct, 88, 2);
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
        int state[3] = { -1, -1, 0 }; /* fd, dup, grandchild */
        char c;
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        state[0] = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (write(reply, state, sizeof(state)) != sizeof(state))
                _exit(1);
        while (read(cmd, &c, 1) == 1) {
                if (c == 'd')
                        state[1] = dup(state[0]);
                else if (c == 'c')
                        close(state[0]);
                else if (c == 'C')
                        close(state[1]);
                else if (c == 'f') {
                        state[2] = fork();
                        if (state[2] == 0)
                                for (;;)
                                        pause();
                } else
                        _exit(0);
                if (write(reply, state, sizeof(state)) != sizeof(state))
                        _exit(1);
        }
        _exit(0);
}

static ListenerChild listener_child_start(void) {
        int cmd[2], reply[2], state[3];
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
        g_assert_cmpint(read(reply[0], state, sizeof(state)), ==, sizeof(state));
        g_assert_cmpint(state[0], >=, 0);
        return (ListenerChild) { .pid = pid, .cmd = cmd[1], .reply = reply[0], .fd = state[0], .dup_fd = -1 };
}

static void listener_child_do(ListenerChild *c, char what) {
        int state[3];
        g_assert_cmpint(write(c->cmd, &what, 1), ==, 1);
        if (what == 'x') {
                g_assert_cmpint(waitpid(c->pid, NULL, 0), ==, c->pid);
                close(c->cmd);
                close(c->reply);
                return;
        }
        g_assert_cmpint(read(c->reply, state, sizeof(state)), ==, sizeof(state));
        c->dup_fd = state[1];
        c->grandchild = state[2];
}

/* What the live view says of the listener of the child's filter: the filter's flag, the listener
 * with its holders (0: the child, 1: its grandchild), and whether the counts agree with the
 * listeners listed. */
static pid_t view_grandchild;
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
                        g_string_append_printf(s, " %d:%d", l->holders[i].pid == pid ? 0 :
                                               l->holders[i].pid == view_grandchild ? 1 : l->holders[i].pid,
                                               l->holders[i].fd);
        }
        g_assert_cmpuint(live_counts(m->live).listeners, ==, f->n_listeners);
        return g_string_free(s, false);
}

/* The view after the events, then after a Rescan of the unchanged machine: the same. */
static void assert_view(InProc *ip, pid_t pid, const char *want) {
        g_assert_true(inproc_run(ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        inproc_run(ip, NULL, NULL, 50);
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
        if (!inproc_start(&ip, NULL, NULL))
                return;
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);

        ListenerChild c = listener_child_start();
        g_autofree char *held = g_strdup_printf("flag 1 listener = filter = holders 0:%d", c.fd);
        assert_view(&ip, c.pid, held);
        listener_child_do(&c, 'd');
        g_autofree char *two = g_strdup_printf("flag 1 listener = filter = holders 0:%d 0:%d", c.fd, c.dup_fd);
        /* a dup makes no event: the pass sees it; events and passes agree once it is seen */
        g_assert_cmpint(manager_full_pass(ip.m, "rescan"), ==, 0);
        assert_view(&ip, c.pid, two);
        listener_child_do(&c, 'c');
        g_autofree char *one = g_strdup_printf("flag 1 listener = filter = holders 0:%d", c.dup_fd);
        assert_view(&ip, c.pid, one);
        listener_child_do(&c, 'C');
        assert_view(&ip, c.pid, "flag 0");
        listener_child_do(&c, 'x');

        /* closing a descriptor whose file is held elsewhere (a dup no event told of) leaves the
         * listener, without a holder known until a pass finds it */
        ListenerChild e = listener_child_start();
        g_assert_true(inproc_run(&ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        listener_child_do(&e, 'd');
        listener_child_do(&e, 'c');
        g_assert_true(inproc_run(&ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        inproc_run(&ip, NULL, NULL, 50);
        g_autofree char *unknown = listener_view(ip.m, e.pid);
        g_assert_cmpstr(unknown, ==, "flag 1 listener = filter = holders");
        g_autofree char *found = g_strdup_printf("flag 1 listener = filter = holders 0:%d", e.dup_fd);
        g_assert_cmpint(manager_full_pass(ip.m, "rescan"), ==, 0);
        assert_view(&ip, e.pid, found);
        listener_child_do(&e, 'x');

        /* a fork copies the holder's descriptors; the listener lives while one of them is open:
         * the child's exit leaves it to the grandchild, whose exit ends it */
        ListenerChild d = listener_child_start();
        listener_child_do(&d, 'f');
        view_grandchild = d.grandchild;
        g_autofree char *forked = g_strdup_printf("flag 1 listener = filter = holders 0:%d 1:%d", d.fd, d.fd);
        assert_view(&ip, d.pid, forked);
        uint64_t id = live_head(ip.m, d.pid);
        listener_child_do(&d, 'x');
        g_assert_true(inproc_run(&ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        inproc_run(&ip, NULL, NULL, 50);
        g_autofree char *left = g_strdup_printf("flag 1 listener = filter = holders 0:%d", d.fd); /* as seen from it */
        assert_view(&ip, d.grandchild, left);
        g_assert_cmpint(kill(d.grandchild, SIGKILL), ==, 0);
        (void) waitpid(d.grandchild, NULL, 0); /* ours if this process is a subreaper, else init's */
        g_assert_true(inproc_run(&ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        inproc_run(&ip, NULL, NULL, 200);
        g_assert_true(inproc_run(&ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        g_assert_null(forest_find_listener(live_forest(ip.m->live), id));
        view_grandchild = 0;
        inproc_stop(&ip);
}

/* ---- the real daemon on a private bus ---- */

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

/* ---- the soak: the quiet live view against an independent kernel walk ---- */

/* A view of one subtree, from the daemon or from a fresh scan, as comparable text. */
typedef struct View {
        GHashTable *chains;  /* tid -> "mode digest[+L] ..." head first (+L: flagged listener) */
        GHashTable *ids;     /* tid -> "id id ..." head first, for sharing */
        GHashTable *threads; /* tid -> tgid, every thread of the subtree's processes, any mode */
        GHashTable *holders; /* "pid:fd" of listener holders in the subtree */
} View;

static void view_init(View *v) {
        v->chains = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        v->ids = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        v->threads = g_hash_table_new(g_direct_hash, g_direct_equal);
        v->holders = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

static void view_done(View *v) {
        g_hash_table_destroy(v->chains);
        g_hash_table_destroy(v->ids);
        g_hash_table_destroy(v->threads);
        g_hash_table_destroy(v->holders);
}

/* The independent walk: `sectreed scan` (a one-shot BPF scanner of its own) of root's subtree. */
static void view_fresh(View *v, pid_t root) {
        g_autofree char *r = g_strdup_printf("--root=%d", root), *out = NULL, *err = NULL;
        char *argv[] = { (char *) g_getenv("SECTREED"), (char *) "scan", (char *) "--format=json", r, NULL };
        if (tests_run_capture(argv, &out, &err) != 0)
                g_error("sectreed scan failed: %s", err);
        json_t *doc = json_loads(out, 0, NULL);
        g_assert_nonnull(doc);
        json_t *filters = json_object_get(doc, "filters"), *p, *t, *l, *h;
        size_t i, j;
        view_init(v);
        json_array_foreach(json_object_get(doc, "processes"), i, p) {
                pid_t pid = (pid_t) json_integer_value(json_object_get(p, "pid"));
                bool seccomp = false;
                json_array_foreach(json_object_get(p, "threads"), j, t)
                        seccomp = seccomp || !streq(json_string_value(json_object_get(t, "mode")), "disabled");
                if (pid == root || !seccomp)
                        continue; /* a subtree scan has every process; the live view those under seccomp */
                json_array_foreach(json_object_get(p, "threads"), j, t) {
                        pid_t tid = (pid_t) json_integer_value(json_object_get(t, "tid"));
                        const char *mode = json_string_value(json_object_get(t, "mode"));
                        g_hash_table_insert(v->threads, GINT_TO_POINTER(tid), GINT_TO_POINTER(pid));
                        if (streq(mode, "disabled"))
                                continue;
                        GString *chain = g_string_new(mode), *ids = g_string_new(NULL);
                        for (json_int_t x = json_integer_value(json_object_get(t, "filter")); x;) {
                                json_t *flt = json_array_get(filters, (size_t) x - 1);
                                g_string_append_printf(chain, " %s%s", json_string_value(json_object_get(flt, "digest")),
                                                       json_is_null(json_object_get(flt, "listener")) ? "" : "+L");
                                g_string_append_printf(ids, " %lld", (long long) x);
                                x = json_integer_value(json_object_get(flt, "parent"));
                        }
                        g_hash_table_insert(v->chains, GINT_TO_POINTER(tid), g_string_free(chain, false));
                        g_hash_table_insert(v->ids, GINT_TO_POINTER(tid), g_string_free(ids, false));
                }
        }
        json_array_foreach(json_object_get(doc, "listeners"), i, l) json_array_foreach(json_object_get(l, "holders"), j, h) {
                pid_t pid = (pid_t) json_integer_value(json_object_get(h, "pid"));
                if (pid != root)
                        g_hash_table_add(v->holders, g_strdup_printf("%d:%lld", pid,
                                                                    (long long) json_integer_value(json_object_get(h, "fd"))));
        }
        json_decref(doc);
}

typedef struct DaemonFilter {
        uint64_t parent;
        char *digest;
        bool listener;
} DaemonFilter;

static void daemon_filter_free(gpointer p) {
        DaemonFilter *f = p;
        g_free(f->digest);
        g_free(f);
}

static GHashTable *daemon_filters(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        GHashTable *filters = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, daemon_filter_free);
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListFilters", &error, &reply, "") < 0)
                g_error("ListFilters: %s", error.message);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(ttusuas)"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "ttusuas") > 0) {
                uint64_t id;
                uint32_t len, tasks;
                const char *digest, *flag;
                DaemonFilter *f = g_new0(DaemonFilter, 1);
                g_assert_cmpint(sd_bus_message_read(reply, "ttusu", &id, &f->parent, &len, &digest, &tasks), >, 0);
                f->digest = g_strdup(digest);
                g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "s"), >, 0);
                while (sd_bus_message_read(reply, "s", &flag) > 0)
                        f->listener = f->listener || streq(flag, "listener");
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                g_hash_table_insert(filters, g_memdup2(&id, sizeof(id)), f);
        }
        return filters;
}

/* The daemon's view of root's subtree: processes whose parent is root (the churn's survivors and
 * orphans are reparented to it) and the listeners they hold. false when a chain names a filter the
 * listing did not have (the machine changed between the calls). */
static bool view_daemon(View *v, sd_bus *bus, pid_t root) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *lreply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GHashTable) filters = daemon_filters(bus);
        bool complete = true;
        view_init(v);
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListTasks", &error, &reply, "") < 0)
                g_error("ListTasks: %s", error.message);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uuusstu)"), >, 0);
        uint32_t tid, tgid, ppid, depth;
        const char *comm, *mode;
        uint64_t head;
        while (sd_bus_message_read(reply, "(uuusstu)", &tid, &tgid, &ppid, &comm, &mode, &head, &depth) > 0) {
                if (ppid != (uint32_t) root)
                        continue;
                g_hash_table_insert(v->threads, GUINT_TO_POINTER(tid), GUINT_TO_POINTER(tgid));
                if (streq(mode, "disabled"))
                        continue;
                GString *chain = g_string_new(mode), *ids = g_string_new(NULL);
                for (uint64_t x = head; x;) {
                        const DaemonFilter *f = g_hash_table_lookup(filters, &x);
                        if (!f) {
                                complete = false;
                                break;
                        }
                        g_string_append_printf(chain, " %s%s", f->digest, f->listener ? "+L" : "");
                        g_string_append_printf(ids, " %" PRIu64, x);
                        x = f->parent;
                }
                g_hash_table_insert(v->chains, GUINT_TO_POINTER(tid), g_string_free(chain, false));
                g_hash_table_insert(v->ids, GUINT_TO_POINTER(tid), g_string_free(ids, false));
        }
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListListeners", &error, &lreply, "") < 0)
                g_error("ListListeners: %s", error.message);
        g_assert_cmpint(sd_bus_message_enter_container(lreply, 'a', "(tta(uis))"), >, 0);
        while (sd_bus_message_enter_container(lreply, 'r', "tta(uis)") > 0) {
                uint64_t id, filter;
                uint32_t pid;
                int32_t fd;
                const char *hcomm;
                g_assert_cmpint(sd_bus_message_read(lreply, "tt", &id, &filter), >, 0);
                g_assert_cmpint(sd_bus_message_enter_container(lreply, 'a', "(uis)"), >, 0);
                while (sd_bus_message_read(lreply, "(uis)", &pid, &fd, &hcomm) > 0)
                        if (g_hash_table_contains(v->threads, GUINT_TO_POINTER(pid)))
                                g_hash_table_add(v->holders, g_strdup_printf("%u:%d", pid, fd));
                g_assert_cmpint(sd_bus_message_exit_container(lreply), >=, 0);
                g_assert_cmpint(sd_bus_message_exit_container(lreply), >=, 0);
        }
        return complete;
}

static bool same_keys(GHashTable *a, GHashTable *b, const char *what, GString *why) {
        GHashTableIter it;
        gpointer k;
        GHashTable *sides[2][2] = { { a, b }, { b, a } };
        for (int s = 0; s < 2; s++) {
                g_hash_table_iter_init(&it, sides[s][0]);
                while (g_hash_table_iter_next(&it, &k, NULL))
                        if (!g_hash_table_contains(sides[s][1], k)) {
                                if (what[0] == 'h')
                                        g_string_printf(why, "%s %s only in the %s", what, (char *) k, s ? "daemon" : "kernel");
                                else
                                        g_string_printf(why, "%s %d only in the %s", what, GPOINTER_TO_INT(k),
                                                        s ? "daemon" : "kernel");
                                return false;
                        }
        }
        return true;
}

/* Sharing: over every chain position, one kernel filter is one daemon filter and back. */
static bool same_sharing(GHashTable *fresh, GHashTable *live, GString *why) {
        g_autoptr(GHashTable) f2d = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GHashTable) d2f = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, fresh);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                g_auto(GStrv) a = g_strsplit(g_strstrip(g_strdup(v)), " ", -1);
                g_autofree char *dl = g_strdup(g_hash_table_lookup(live, k));
                g_auto(GStrv) b = g_strsplit(g_strstrip(dl), " ", -1);
                for (size_t i = 0; a[i] && b[i]; i++) {
                        const char *x = g_hash_table_lookup(f2d, a[i]), *y = g_hash_table_lookup(d2f, b[i]);
                        if ((x && !streq(x, b[i])) || (y && !streq(y, a[i]))) {
                                g_string_printf(why, "tid %d: kernel filter %s is daemon filter %s here, but %s/%s "
                                                "elsewhere", GPOINTER_TO_INT(k), a[i], b[i], x ?: "-", y ?: "-");
                                return false;
                        }
                        g_hash_table_insert(f2d, g_strdup(a[i]), g_strdup(b[i]));
                        g_hash_table_insert(d2f, g_strdup(b[i]), g_strdup(a[i]));
                }
        }
        return true;
}

typedef struct Compare {
        sd_bus *bus;
        pid_t root;
        GString *why;
        size_t threads, holders;
} Compare;

/* The daemon's view of the subtree equals the kernel's: the same threads (none missing, no ghost
 * of an exited one), the same chains (bytes and listener flags), the same sharing, the same
 * listener holders. */
static bool views_agree(void *userdata) {
        Compare *c = userdata;
        View fresh, live;
        while (sd_bus_process(c->bus, NULL) > 0)
                ;
        view_fresh(&fresh, c->root);
        bool ok = view_daemon(&live, c->bus, c->root);
        if (!ok)
                g_string_printf(c->why, "the daemon's listing changed between its calls");
        ok = ok && same_keys(fresh.threads, live.threads, "thread", c->why) &&
             same_keys(fresh.holders, live.holders, "holder", c->why);
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, fresh.chains);
        while (ok && g_hash_table_iter_next(&it, &k, &v)) {
                const char *d = g_hash_table_lookup(live.chains, k);
                if (!d || !streq(d, v)) {
                        g_string_printf(c->why, "tid %d: the daemon has '%s', the kernel '%s'", GPOINTER_TO_INT(k),
                                        d ?: "(nothing)", (char *) v);
                        ok = false;
                }
        }
        ok = ok && same_keys(fresh.chains, live.chains, "filtered thread", c->why) &&
             same_sharing(fresh.ids, live.ids, c->why);
        c->threads = g_hash_table_size(fresh.threads);
        c->holders = g_hash_table_size(fresh.holders);
        view_done(&fresh);
        view_done(&live);
        return ok;
}

static unsigned soak_seconds(void) {
        const char *e = g_getenv("SECTREE_SOAK_SECONDS");
        unsigned v = e ? (unsigned) g_ascii_strtoull(e, NULL, 10) : 0;
        return v >= 30 ? v : 30;
}

/* At least 30 s of mixed churn (TSYNC, threads, exec, listeners opened and closed, orphans), some
 * of whose processes stay: once quiet, the daemon's view of them equals an independent kernel walk,
 * and every filter the churn installed was announced by one FilterAttached (when no Resynced said
 * that some were not). */
static void test_soak(void) {
        BusFixture b;
        DaemonLog dl;
        if (!daemon_start(&b, &dl))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        Signals sig;
        signals_start(&sig, bus);
        Churn *c;
        g_assert_cmpint(churn_start(&(ChurnOptions) { .workers = 2, .survive_every = 29, .max_survivors = 24 }, &c), ==, 0);
        unsigned seconds = soak_seconds();
        pump(bus, seconds * 1000);
        churn_stop(c);
        ChurnCounts n;
        churn_counts(c, &n);
        g_test_message("%u s of churn: %" PRIu64 " installs (%.0f/s), %" PRIu64 " with TSYNC, %" PRIu64 " listeners (%" PRIu64
                       " closed), %" PRIu64 " execs, %" PRIu64 " orphans, %" PRIu64 " failures", seconds, n.installs,
                       (double) n.installs / seconds, n.tsync, n.listeners, n.listeners_closed, n.execs, n.orphans,
                       n.failures);
        Compare cmp = { .bus = bus, .root = churn_root(c), .why = g_string_new(NULL) };
        bool agree = tests_wait_for(views_agree, &cmp, TESTS_PATIENCE_MS);
        pump(bus, 500);
        g_test_message("quiet view: %zu threads, %zu listener holders; FilterAttached of the churn: %" PRIu64 " for %" PRIu64
                       " installs; Resynced: %u (%u lost-events, %u inconsistent)", cmp.threads, cmp.holders,
                       sig.churn_attached, n.installs, sig.resynced, sig.resynced_lost, sig.resynced_inconsistent);
        churn_free(c);
        bus_fixture_stop(&b);
        daemon_log_end(&dl);
        if (!agree)
                g_error("the quiet live view differs from a kernel walk: %s", cmp.why->str);
        g_string_free(cmp.why, true);
        g_assert_cmpuint(cmp.threads, >, 0);
        g_assert_cmpuint(n.listeners_closed, >, 0);
        if (sig.resynced == 0)
                g_assert_cmpuint(sig.churn_attached, ==, n.installs);
        else
                g_assert_cmpuint(sig.churn_attached, <=, n.installs);
        g_assert_cmpuint(sig.resynced_inconsistent, <=, sig.resynced_lost);
        signals_done(&sig);
}

/* ---- what the log says ---- */

/* The log names each cause of a loss, with its count since it last said so. */
static void test_loss_causes(void) {
        WatchLosses before = { .ring_full = 5, .no_id = 1, .skipped_runs = 2 };
        WatchLosses now = before;
        now.ring_full += 812;
        now.no_id += 1;
        g_autofree char *a = watch_losses_describe(&before, &now);
        g_assert_cmpstr(a, ==, "ring buffer full: 812, filter id not found (id map full): 1");
        g_assert_cmpuint(watch_losses_total(&now) - watch_losses_total(&before), ==, 813);
        now = before;
        now.task_gone++;
        g_autofree char *b = watch_losses_describe(&before, &now);
        g_assert_cmpstr(b, ==, "task not found: 1");
}

/* A warning is logged at once, then at most once per interval, saying how many were left out. */
static void test_warn_limit(void) {
        WarnLimit w = {};
        unsigned more = 99;
        uint64_t t = 1000;
        g_assert_true(warn_limit_pass(&w, t, &more));
        g_assert_cmpuint(more, ==, 0);
        for (int i = 0; i < 600; i++)
                g_assert_false(warn_limit_pass(&w, t + (uint64_t) i * 10000, &more));
        g_assert_true(warn_limit_pass(&w, t + WARN_LIMIT_INTERVAL_USEC, &more));
        g_assert_cmpuint(more, ==, 600);
        g_assert_false(warn_limit_pass(&w, t + WARN_LIMIT_INTERVAL_USEC + 1, &more));
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/live-view/loss-causes", test_loss_causes);
        g_test_add_func("/live-view/warn-limit", test_warn_limit);
        g_test_add_func("/live-view/tsync-while-stopped", test_tsync_while_stopped);
        g_test_add_func("/live-view/no-storm", test_no_storm);
        g_test_add_func("/live-view/listener-meaning", test_listener_meaning);
        g_test_add_func("/live-view/soak", test_soak);
        return g_test_run();
}
