/* test-ctl-subtree.c: the processes of a subtree, filtered or not, from the daemon
 * (ListSubtreeProcesses) and in `sectreectl tree PID`: each with its parent and name, and only
 * those the caller may see, as ListTasks shows them */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "bus-client.h"
#include "ctl-run.h"
#include "tests-util.h"

/* nobody's subtree: top (unfiltered) -> hidden (not dumpable: nobody may not trace it) -> below
 * (dumpable again), and top -> filtered (a filter of its own). */
typedef struct Subtree {
        pid_t top, hidden, below, filtered;
} Subtree;

typedef struct Fixture {
        BusFixture b;
        bool ok;
        int fds[2]; /* the subtree's processes write "tag pid" here once they are ready */
        Subtree s;
        char *gate_dir, *gate; /* with a gate: the daemon's walks wait for the file gate */
} Fixture;

typedef struct Ready {
        char tag;
        pid_t pid;
} Ready;

static void ready(int fd, char tag) {
        Ready r = { .tag = tag, .pid = getpid() };
        if (write(fd, &r, sizeof(r)) != sizeof(r))
                _exit(98);
}

static void run_hidden(int fd) {
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                _exit(95);
        if (tests_fork_named("st-below") == 0) {
                if (prctl(PR_SET_DUMPABLE, 1) < 0) /* visible again, below a hidden parent */
                        _exit(95);
                ready(fd, 'c');
                tests_pause_forever();
        }
        ready(fd, 'b');
        tests_pause_forever();
}

static void run_filtered(int fd) {
        struct sock_fprog prog = { .len = ELEMENTSOF(tests_prog_allow), .filter = (struct sock_filter *) tests_prog_allow };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(94);
        ready(fd, 'e');
        tests_pause_forever();
}

static void run_top(void *userdata) {
        int fd = *(int *) userdata;
        if (prctl(PR_SET_NAME, "st-top") < 0 || prctl(PR_SET_DUMPABLE, 1) < 0) /* the uid change cleared it */
                _exit(96);
        if (tests_fork_named("st-hidden") == 0)
                run_hidden(fd);
        if (tests_fork_named("st-filtered") == 0)
                run_filtered(fd);
        tests_pause_forever();
}

static void subtree_start(Fixture *fx) {
        g_assert_cmpint(pipe2(fx->fds, O_CLOEXEC), ==, 0);
        fx->s.top = tests_as_nobody_start(run_top, &fx->fds[1]);
        for (int i = 0; i < 3; i++) {
                Ready r;
                g_assert_cmpint(read(fx->fds[0], &r, sizeof(r)), ==, sizeof(r));
                *(r.tag == 'b' ? &fx->s.hidden : r.tag == 'c' ? &fx->s.below : &fx->s.filtered) = r.pid;
        }
}

static void fixture_setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) { .fds = { -1, -1 } };
        if (!bus_fixture_start_all(&fx->b, NULL, NULL))
                return;
        subtree_start(fx);
        fx->ok = true;
}

/* The same with the daemon's walks of subtrees held until the file fx->gate exists
 * ($SECTREE_TEST_PROC_WALK_GATE). */
static void fixture_setup_gated(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) { .fds = { -1, -1 }, .gate_dir = g_dir_make_tmp("sectree-subtree-XXXXXX", NULL) };
        g_assert_nonnull(fx->gate_dir);
        fx->gate = g_build_filename(fx->gate_dir, "go", NULL);
        g_autofree char *gate_env = g_strconcat("SECTREE_TEST_PROC_WALK_GATE=", fx->gate, NULL);
        char *env[] = { gate_env, NULL };
        if (!bus_fixture_start_all(&fx->b, NULL, env))
                return;
        subtree_start(fx);
        fx->ok = true;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        if (fx->s.top > 0) {
                (void) kill(fx->s.top, SIGKILL); /* its children die with it */
                (void) tests_wait_status(fx->s.top);
        }
        for (int i = 0; i < 2; i++)
                if (fx->fds[i] >= 0)
                        close(fx->fds[i]);
        if (fx->ok)
                bus_fixture_finish(&fx->b);
        if (fx->gate) {
                (void) unlink(fx->gate);
                (void) rmdir(fx->gate_dir);
        }
        g_free(fx->gate);
        g_free(fx->gate_dir);
}

/* A reply of ListSubtreeProcesses as pid -> "ppid comm". */
static GHashTable *subtree_reply_read(sd_bus_message *reply) {
        GHashTable *h = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        uint32_t pid, ppid;
        const char *comm;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uus)"), >, 0);
        int r;
        while ((r = sd_bus_message_read(reply, "(uus)", &pid, &ppid, &comm)) > 0) {
                g_assert_false(g_hash_table_contains(h, GUINT_TO_POINTER(pid)));
                g_hash_table_insert(h, GUINT_TO_POINTER(pid), g_strdup_printf("%u %s", ppid, comm));
        }
        g_assert_cmpint(r, ==, 0);
        return h;
}

/* ListSubtreeProcesses(pid) as pid -> "ppid comm". */
static GHashTable *list_subtree_processes(pid_t root, sd_bus_error *error) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        if (bus_client_call(bus, "ListSubtreeProcesses", error, &reply, "u", (uint32_t) root) < 0)
                return NULL;
        return subtree_reply_read(reply);
}

static void assert_listed(GHashTable *h, pid_t pid, pid_t ppid, const char *comm) {
        g_autofree char *want = g_strdup_printf("%d %s", ppid, comm);
        g_assert_cmpstr(g_hash_table_lookup(h, GINT_TO_POINTER(pid)), ==, want);
}

static void test_method_root(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GHashTable) h = list_subtree_processes(fx->s.top, &error);
        g_assert_nonnull(h);
        g_assert_cmpuint(g_hash_table_size(h), ==, 4);
        assert_listed(h, fx->s.top, getpid(), "st-top");
        assert_listed(h, fx->s.hidden, fx->s.top, "st-hidden");
        assert_listed(h, fx->s.below, fx->s.hidden, "st-below");
        assert_listed(h, fx->s.filtered, fx->s.top, "st-filtered");
        /* a thread id stands for its process; a leaf is a subtree of one */
        g_autoptr(GHashTable) leaf = list_subtree_processes(fx->s.below, &error);
        g_assert_cmpuint(g_hash_table_size(leaf), ==, 1);
        g_assert_null(list_subtree_processes(0, &error));
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_null(list_subtree_processes(4194000, &error));
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchTask");
}

/* nobody: its own processes, not the one it may not trace (whose child it sees); root's refused. */
static void method_as_nobody(void *userdata) {
        const Fixture *fx = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GHashTable) h = list_subtree_processes(fx->s.top, &error);
        g_assert_nonnull(h);
        g_assert_cmpuint(g_hash_table_size(h), ==, 3);
        assert_listed(h, fx->s.top, getppid(), "st-top");
        assert_listed(h, fx->s.below, fx->s.hidden, "st-below");
        assert_listed(h, fx->s.filtered, fx->s.top, "st-filtered");
        g_assert_null(list_subtree_processes(getppid(), &error));
        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
}

/* A call whose reply is kept. */
typedef struct HeldCall {
        BusPending p;
        sd_bus_message *reply;
} HeldCall;

static int on_held_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        HeldCall *h = userdata;
        h->reply = sd_bus_message_ref(m);
        return bus_client_on_reply(m, &h->p, ret_error);
}

/* The walks of /proc run in a worker, not on the loop: while they are held at their gate, a
 * ListTasks sent after a ListSubtreeProcesses and a ListSubtree is answered and the walks are not;
 * with the gate open, both answer: every process of the subtree, and the tracked ones of it. */
static void test_method_off_loop(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        HeldCall processes = {}, tracked = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ListSubtreeProcesses", on_held_reply, &processes, "u",
                                                 (uint32_t) fx->s.top), >=, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ListSubtree", on_held_reply, &tracked, "u", (uint32_t) fx->s.top),
                        >=, 0);
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ListTasks", &error, NULL, "") < 0)
                g_error("ListTasks: %s", error.message);
        while (sd_bus_process(bus, NULL) > 0)
                ;
        g_assert_false(processes.p.done);
        g_assert_false(tracked.p.done);

        g_assert_true(g_file_set_contents(fx->gate, "", 0, NULL));
        bus_client_wait(bus, &processes.p, TESTS_PATIENCE_MS, "ListSubtreeProcesses");
        bus_client_wait(bus, &tracked.p, TESTS_PATIENCE_MS, "ListSubtree");
        g_assert_false(sd_bus_error_is_set(&processes.p.error));
        g_assert_false(sd_bus_error_is_set(&tracked.p.error));
        g_autoptr(GHashTable) h = subtree_reply_read(processes.reply);
        g_assert_cmpuint(g_hash_table_size(h), ==, 4);
        assert_listed(h, fx->s.top, getpid(), "st-top");
        assert_listed(h, fx->s.below, fx->s.hidden, "st-below");
        assert_listed(h, fx->s.filtered, fx->s.top, "st-filtered");
        /* ListSubtree: the tracked processes, the filtered one alone (once the daemon has it) */
        uint32_t pid;
        g_assert_cmpint(sd_bus_message_enter_container(tracked.reply, 'a', "u"), >, 0);
        while (sd_bus_message_read(tracked.reply, "u", &pid) > 0)
                g_assert_cmpuint(pid, ==, (uint32_t) fx->s.filtered);
        sd_bus_message_unref(processes.reply);
        sd_bus_message_unref(tracked.reply);
        sd_bus_error_free(&processes.p.error);
        sd_bus_error_free(&tracked.p.error);
}

/* A held call's reply as nobody's listing: ListTasks' tids, or ListFilters' "id tasks" entries. */
static GHashTable *listing_read(sd_bus_message *reply, bool filters) {
        GHashTable *h = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', filters ? "(ttusuas)" : "(uuusstu)"), >, 0);
        int r;
        while ((r = sd_bus_message_enter_container(reply, 'r', filters ? "ttusuas" : "uuusstu")) > 0) {
                uint64_t id, parent, head;
                uint32_t tid, pid, ppid, len, tasks, depth;
                const char *comm, *mode, *digest;
                if (filters) {
                        g_assert_cmpint(sd_bus_message_read(reply, "ttusu", &id, &parent, &len, &digest, &tasks), >, 0);
                        g_assert_cmpint(sd_bus_message_skip(reply, "as"), >=, 0);
                        g_hash_table_insert(h, GUINT_TO_POINTER((guint) id), g_strdup_printf("%u", tasks));
                } else {
                        g_assert_cmpint(sd_bus_message_read(reply, "uuusstu", &tid, &pid, &ppid, &comm, &mode, &head,
                                                            &depth), >, 0);
                        g_hash_table_insert(h, GUINT_TO_POINTER(tid), g_strdup(comm));
                }
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
        }
        g_assert_cmpint(r, ==, 0);
        return h;
}

typedef struct ListingsHeld {
        const Fixture *fx;
        uint64_t head;       /* the filter of nobody's filtered process */
        pid_t other;         /* root's filtered process */
        uint64_t other_head; /* and its filter */
        TestsHandshake h;    /* nobody's listings are held; the test opened the gate */
} ListingsHeld;

/* As nobody, with the daemon's walks held at their gate: ListTasks, ListFilters, GetFilter and
 * WhoCan (whose question is planned once its checks are made) wait,
 * and a call the loop answers itself (nobody's GetTaskChain) is answered meanwhile. With the gate
 * open, the listings have nobody's filtered process, and its filter with one task, and nothing of
 * root's; GetFilter gives nobody's filter and refuses root's. */
static void listings_as_nobody(void *userdata) {
        ListingsHeld *l = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *chain = NULL;
        HeldCall tasks = {}, filters = {}, mine = {}, roots = {}, who = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ListTasks", on_held_reply, &tasks, ""), >=, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ListFilters", on_held_reply, &filters, ""), >=, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "GetFilter", on_held_reply, &mine, "t", l->head), >=, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "GetFilter", on_held_reply, &roots, "t", l->other_head), >=, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "WhoCan", on_held_reply, &who, "sata{sv}", "getpid", 0, 0), >=, 0);
        if (bus_client_call(bus, "GetTaskChain", &error, &chain, "u", (uint32_t) l->fx->s.filtered) < 0)
                g_error("GetTaskChain: %s", error.message);
        uint64_t head = 0;
        g_assert_cmpint(sd_bus_message_read(chain, "at", 1, &head), >, 0);
        g_assert_cmpuint(head, ==, l->head);
        /* answered at once on the loop (a few ms for nobody's few processes); held here */
        for (gint64 end = g_get_monotonic_time() + G_USEC_PER_SEC; g_get_monotonic_time() < end;)
                bus_client_pump(bus, -1, 0);
        g_assert_false(tasks.p.done);
        g_assert_false(filters.p.done);
        g_assert_false(mine.p.done);
        g_assert_false(roots.p.done);
        g_assert_false(who.p.done);
        tests_handshake_hold(&l->h);

        bus_client_wait(bus, &tasks.p, TESTS_PATIENCE_MS, "ListTasks");
        bus_client_wait(bus, &filters.p, TESTS_PATIENCE_MS, "ListFilters");
        bus_client_wait(bus, &mine.p, TESTS_PATIENCE_MS, "GetFilter");
        bus_client_wait(bus, &roots.p, TESTS_PATIENCE_MS, "GetFilter of root's");
        bus_client_wait(bus, &who.p, TESTS_PATIENCE_MS, "WhoCan");
        if (sd_bus_error_is_set(&who.p.error))
                g_error("WhoCan: %s", who.p.error.message);
        g_assert_false(sd_bus_error_is_set(&mine.p.error));
        bus_client_assert_error(&roots.p.error, SD_BUS_ERROR_ACCESS_DENIED);
        uint64_t parent;
        uint32_t len, n_tasks;
        const char *digest, *identity;
        g_assert_cmpint(sd_bus_message_read(mine.reply, "tus", &parent, &len, &digest), >, 0);
        g_assert_cmpint(sd_bus_message_skip(mine.reply, "as"), >=, 0);
        g_assert_cmpint(sd_bus_message_read(mine.reply, "us", &n_tasks, &identity), >, 0);
        g_assert_cmpuint(len, ==, ELEMENTSOF(tests_prog_allow));
        g_assert_cmpuint(n_tasks, ==, 1);
        g_assert_false(sd_bus_error_is_set(&tasks.p.error));
        g_assert_false(sd_bus_error_is_set(&filters.p.error));
        g_autoptr(GHashTable) t = listing_read(tasks.reply, false), f = listing_read(filters.reply, true);
        g_assert_cmpstr(g_hash_table_lookup(t, GUINT_TO_POINTER(l->fx->s.filtered)), ==, "st-filtered");
        g_assert_false(g_hash_table_contains(t, GUINT_TO_POINTER(l->other)));
        g_assert_false(g_hash_table_contains(t, GUINT_TO_POINTER(getppid())));
        g_assert_cmpstr(g_hash_table_lookup(f, GUINT_TO_POINTER((guint) head)), ==, "1");
        g_assert_false(g_hash_table_contains(f, GUINT_TO_POINTER((guint) l->other_head)));
        sd_bus_message_unref(tasks.reply);
        sd_bus_message_unref(filters.reply);
        sd_bus_message_unref(mine.reply);
        sd_bus_message_unref(roots.reply);
        sd_bus_message_unref(who.reply);
        sd_bus_error_free(&tasks.p.error);
        sd_bus_error_free(&filters.p.error);
        sd_bus_error_free(&mine.p.error);
}

/* The head filter of pid as GetTaskChain (as root) says: 0 while the daemon does not have it. */
static uint64_t head_of(pid_t pid) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const uint64_t *ids;
        size_t bytes = 0;
        if (bus_client_call(bus, "GetTaskChain", &error, &reply, "u", (uint32_t) pid) < 0 ||
            sd_bus_message_read_array(reply, 't', (const void **) &ids, &bytes) < 0 || bytes == 0)
                return 0;
        return ids[0];
}

static bool tracked_filtered(void *userdata) {
        return head_of(*(const pid_t *) userdata) != 0;
}

/* Root's filtered process, which nobody's listings must leave out. */
static void run_root_filtered(void *userdata) {
        int fd = *(int *) userdata;
        run_filtered(fd);
}

/* A caller other than root has its listings' access checks made in a worker (a stat(2) or more
 * per tracked process would hold the loop): held at the gate, they wait while the loop answers;
 * then they list what the caller may see and nothing else. */
static void test_listings_off_loop(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        int fds[2];
        g_assert_cmpint(pipe2(fds, O_CLOEXEC), ==, 0);
        pid_t other = fork(); /* root's, filtered too */
        g_assert_cmpint(other, >=, 0);
        if (other == 0)
                run_root_filtered(&fds[1]);
        Ready r;
        g_assert_cmpint(read(fds[0], &r, sizeof(r)), ==, sizeof(r));
        close(fds[0]);
        close(fds[1]);
        /* both filtered processes tracked: root's listing (answered on the loop) has them */
        g_assert_true(tests_wait_for(tracked_filtered, &fx->s.filtered, TESTS_PATIENCE_MS));
        g_assert_true(tests_wait_for(tracked_filtered, &other, TESTS_PATIENCE_MS));

        ListingsHeld l = { .fx = fx, .head = head_of(fx->s.filtered), .other = other, .other_head = head_of(other) };
        g_assert_cmpuint(l.head, !=, 0);
        g_assert_cmpuint(l.other_head, !=, 0);
        tests_handshake_open(&l.h);
        pid_t nobody = tests_as_nobody_start(listings_as_nobody, &l);
        tests_handshake_wait_held(&l.h);
        g_assert_true(g_file_set_contents(fx->gate, "", 0, NULL));
        tests_handshake_go(&l.h);
        g_assert_cmpint(tests_wait_status(nobody), ==, 0);
        (void) kill(other, SIGKILL);
        (void) tests_wait_status(other);
}

/* As many of one uid's calls as its part of the users' lane holds (PROC_WALKS_MAX_PER_UID, 8 in
 * proc-walks.h), held at the gate: nobody's next one is refused at once, root's listing is
 * answered meanwhile; with the gate open, the eight are answered. */
#define LANE_PER_UID 8

typedef struct LimitsHeld {
        const Fixture *fx;
        TestsHandshake h; /* nobody's calls are held; the test opened the gate */
} LimitsHeld;

static void limits_as_nobody(void *userdata) {
        LimitsHeld *l = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        HeldCall calls[LANE_PER_UID] = {};
        for (size_t i = 0; i < LANE_PER_UID; i++)
                g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                         "ListTasks", on_held_reply, &calls[i], ""), >=, 0);
        /* the ninth: refused, not queued (the calls above were sent first, on one connection) */
        g_assert_cmpint(bus_client_call(bus, "ListTasks", &error, NULL, ""), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
        for (size_t i = 0; i < LANE_PER_UID; i++)
                g_assert_false(calls[i].p.done);
        tests_handshake_hold(&l->h);
        for (size_t i = 0; i < LANE_PER_UID; i++) {
                bus_client_wait(bus, &calls[i].p, TESTS_PATIENCE_MS, "ListTasks");
                if (sd_bus_error_is_set(&calls[i].p.error))
                        g_error("ListTasks %zu: %s", i, calls[i].p.error.message);
                g_autoptr(GHashTable) t = listing_read(calls[i].reply, false);
                g_assert_cmpstr(g_hash_table_lookup(t, GUINT_TO_POINTER(l->fx->s.filtered)), ==, "st-filtered");
                sd_bus_message_unref(calls[i].reply);
                sd_bus_error_free(&calls[i].p.error);
        }
}

static void test_listings_limits(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_assert_true(tests_wait_for(tracked_filtered, &fx->s.filtered, TESTS_PATIENCE_MS));
        LimitsHeld l = { .fx = fx };
        tests_handshake_open(&l.h);
        pid_t nobody = tests_as_nobody_start(limits_as_nobody, &l);
        tests_handshake_wait_held(&l.h);
        /* root's calls are no part of nobody's lane */
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ListTasks", &error, NULL, "") < 0)
                g_error("root's ListTasks: %s", error.message);
        g_assert_true(g_file_set_contents(fx->gate, "", 0, NULL));
        tests_handshake_go(&l.h);
        g_assert_cmpint(tests_wait_status(nobody), ==, 0);
}

static void test_method_nobody(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        g_assert_cmpint(tests_as_nobody(method_as_nobody, fx), ==, 0);
}

typedef struct TreeWait {
        Fixture *fx;
        char *out;
} TreeWait;

/* The daemon has the filtered process: it is printed under a filter, not without one. */
static bool tree_has_filtered(void *userdata) {
        TreeWait *w = userdata;
        g_autofree char *root = g_strdup_printf("%d", w->fx->s.top);
        g_autofree char *line = g_strdup_printf("st-filtered[%d]", w->fx->s.filtered);
        g_clear_pointer(&w->out, g_free);
        if (ctl_run(&w->fx->b, false, CTL_ARGS("tree", root), &w->out, NULL) != 0)
                return false;
        const char *at = strstr(w->out, line), *unfiltered = strstr(w->out, "without a filter:");
        return at && unfiltered && at < unfiltered;
}

static char *tree_as(Fixture *fx, bool as_nobody) {
        g_autofree char *root = g_strdup_printf("%d", fx->s.top), *err = NULL;
        char *out = NULL;
        int status = ctl_run(&fx->b, as_nobody, CTL_ARGS("tree", root), &out, &err);
        if (status != 0)
                g_error("tree %s%s: exit %d, stderr: %s", root, as_nobody ? " as nobody" : "", status, err);
        g_assert_cmpstr(err, ==, "");
        return out;
}

static void assert_line(const char *out, const char *comm, pid_t pid, bool present) {
        g_autofree char *line = g_strdup_printf(" %s[%d]\n", comm, pid);
        if ((strstr(out, line) != NULL) != present)
                g_error("tree: '%s' %s expected in:\n%s", line, present ? "is" : "is not", out);
}

/* `tree PID` lists the unfiltered processes the daemon lists, as the caller may see them. */
static void test_tree(Fixture *fx, gconstpointer data) {
        if (!fx->ok)
                return;
        TreeWait w = { .fx = fx };
        g_assert_true(tests_wait_for(tree_has_filtered, &w, TESTS_PATIENCE_MS));
        g_free(w.out);
        g_autofree char *mine = tree_as(fx, false), *nobody = tree_as(fx, true);
        assert_line(mine, "st-top", fx->s.top, true);
        assert_line(mine, "st-hidden", fx->s.hidden, true);
        assert_line(mine, "st-below", fx->s.below, true);
        assert_line(mine, "st-filtered", fx->s.filtered, true);
        assert_line(nobody, "st-top", fx->s.top, true);
        assert_line(nobody, "st-hidden", fx->s.hidden, false);
        assert_line(nobody, "st-below", fx->s.below, true);
        assert_line(nobody, "st-filtered", fx->s.filtered, true);
}

int main(int argc, char *argv[]) {
        tests_init(&argc, &argv);
        g_test_add("/ctl-subtree/method/root", Fixture, NULL, fixture_setup, test_method_root, fixture_teardown);
        g_test_add("/ctl-subtree/method/nobody", Fixture, NULL, fixture_setup, test_method_nobody, fixture_teardown);
        g_test_add("/ctl-subtree/method/off-loop", Fixture, NULL, fixture_setup_gated, test_method_off_loop,
                   fixture_teardown);
        g_test_add("/ctl-subtree/listings/off-loop", Fixture, NULL, fixture_setup_gated, test_listings_off_loop,
                   fixture_teardown);
        g_test_add("/ctl-subtree/listings/limits", Fixture, NULL, fixture_setup_gated, test_listings_limits,
                   fixture_teardown);
        g_test_add("/ctl-subtree/tree", Fixture, NULL, fixture_setup, test_tree, fixture_teardown);
        return g_test_run();
}
