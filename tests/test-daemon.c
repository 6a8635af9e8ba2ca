/* test-daemon.c: the real sectreed on a private dbus-daemon: start-up, live updates, resync after
 * lost events, restart against an existing database, unprivileged callers, SIGKILL under churn,
 * and the introspection data against dbus/org.sectree1.Manager.xml; and, in this process without a
 * bus, the Manager's resync rules (losses during a pass, one resync per interval), split passes
 * and the incremental retiring of filters */
#include <fcntl.h>
#include <gio/gio.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <jansson.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "observe/source.h"
#include "service/manager.h"
#include "inproc.h"
#include "tests-util.h"

#define DEST "org.sectree1"
#define PATH "/org/sectree1"
#define IFACE "org.sectree1.Manager"


/* tid -> chain as a string of digests (or of filter ids), newest first, from the daemon. */
/* One ListFilters and one ListTasks. Other processes of the machine may change the state between
 * the two calls: a thread whose head or a parent of it is not in the filter list then is left out
 * (a test that needs it waits for a reading that has it). */
static GHashTable *daemon_chains_as(sd_bus *bus, bool ids) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *freply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        GHashTable *digests = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
        GHashTable *parents = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
        GHashTable *chains = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListFilters", &error, &freply, "") < 0)
                g_error("ListFilters: %s", error.message);
        g_assert_cmpint(sd_bus_message_enter_container(freply, 'a', "(ttusuas)"), >, 0);
        for (;;) {
                uint64_t id, parent;
                uint32_t len, tasks;
                const char *digest;
                if (sd_bus_message_enter_container(freply, 'r', "ttusuas") <= 0)
                        break;
                g_assert_cmpint(sd_bus_message_read(freply, "ttusu", &id, &parent, &len, &digest, &tasks), >, 0);
                g_assert_cmpint(sd_bus_message_skip(freply, "as"), >=, 0);
                g_assert_cmpint(sd_bus_message_exit_container(freply), >=, 0);
                g_hash_table_insert(digests, g_memdup2(&id, 8), g_strdup(digest));
                g_hash_table_insert(parents, g_memdup2(&id, 8), g_memdup2(&parent, 8));
        }
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListTasks", &error, &reply, "") < 0)
                g_error("ListTasks: %s", error.message);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uuusstu)"), >, 0);
        uint32_t tid, tgid, ppid, depth;
        const char *comm, *mode;
        uint64_t head;
        while (sd_bus_message_read(reply, "(uuusstu)", &tid, &tgid, &ppid, &comm, &mode, &head, &depth) > 0) {
                GString *chain = g_string_new(mode);
                for (uint64_t x = head; x && chain;) {
                        if (ids)
                                g_string_append_printf(chain, " %" PRIu64, x);
                        else
                                g_string_append_printf(chain, " %s", (char *) g_hash_table_lookup(digests, &x));
                        uint64_t *p = g_hash_table_lookup(parents, &x);
                        if (!p)
                                g_string_free(g_steal_pointer(&chain), true); /* changed between the calls */
                        else
                                x = *p;
                }
                if (chain)
                        g_hash_table_insert(chains, GUINT_TO_POINTER(tid), g_string_free(chain, false));
        }
        g_hash_table_destroy(digests);
        g_hash_table_destroy(parents);
        return chains;
}

static GHashTable *daemon_chains(sd_bus *bus) {
        return daemon_chains_as(bus, false);
}

/* The same from a fresh `sectreed scan --format=json` with the given backend (NULL: the default),
 * for the threads that are not disabled. */
static GHashTable *fresh_chains_as(pid_t root, const char *backend, bool ids) {
        g_autofree char *r = g_strdup_printf("--root=%d", root), *out = NULL, *err = NULL;
        g_autofree char *b = g_strdup_printf("--backend=%s", backend ? backend : "bpf");
        char *argv[] = { (char *) g_getenv("SECTREED"), (char *) "scan", (char *) "--format=json", r, b, NULL };
        if (tests_run_capture(argv, &out, &err) != 0)
                g_error("sectreed scan failed: %s", err);
        json_t *doc = json_loads(out, 0, NULL);
        g_assert_nonnull(doc);
        json_t *filters = json_object_get(doc, "filters");
        GHashTable *chains = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        size_t i, j;
        json_t *p, *t;
        json_array_foreach(json_object_get(doc, "processes"), i, p) json_array_foreach(json_object_get(p, "threads"), j, t) {
                const char *mode = json_string_value(json_object_get(t, "mode"));
                if (streq(mode, "disabled"))
                        continue;
                GString *chain = g_string_new(mode);
                for (json_int_t x = json_integer_value(json_object_get(t, "filter")); x;) {
                        json_t *flt = json_array_get(filters, (size_t) x - 1);
                        if (ids)
                                g_string_append_printf(chain, " %lld", (long long) x);
                        else
                                g_string_append_printf(chain, " %s", json_string_value(json_object_get(flt, "digest")));
                        x = json_integer_value(json_object_get(flt, "parent"));
                }
                g_hash_table_insert(chains, GUINT_TO_POINTER(json_integer_value(json_object_get(t, "tid"))),
                                    g_string_free(chain, false));
        }
        json_decref(doc);
        return chains;
}


/* Every thread of the fresh scan (the scenario's subtree) is in the daemon with the same chain. */
static bool chains_agree(GHashTable *fresh, GHashTable *live, GString *why) {
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, fresh);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                const char *l = g_hash_table_lookup(live, k);
                if (!l || !streq(l, v)) {
                        g_string_printf(why, "tid %u: daemon has '%s', a fresh scan '%s'", GPOINTER_TO_UINT(k),
                                        l ? l : "(nothing)", (char *) v);
                        return false;
                }
        }
        return true;
}

/* The same sharing: over every position of every chain of the fresh scan's threads, a filter of
 * the fresh scan is one filter in the daemon and the other way round. chains are id strings. */
static bool sharing_agrees(GHashTable *fresh, GHashTable *live, GString *why) {
        g_autoptr(GHashTable) f2d = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GHashTable) d2f = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, fresh);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                const char *l = g_hash_table_lookup(live, k);
                if (!l)
                        continue; /* chains_agree() says so */
                g_auto(GStrv) fs = g_strsplit(v, " ", -1), ls = g_strsplit(l, " ", -1);
                for (guint i = 1; fs[i] && ls[i]; i++) {
                        const char *d = g_hash_table_lookup(f2d, fs[i]), *f = g_hash_table_lookup(d2f, ls[i]);
                        if ((d && !streq(d, ls[i])) || (f && !streq(f, fs[i]))) {
                                g_string_printf(why, "tid %u at depth %u: fresh filter %s is daemon filter %s, but "
                                                "elsewhere %s and %s", GPOINTER_TO_UINT(k), i, fs[i], ls[i],
                                                d ? d : fs[i], f ? f : ls[i]);
                                return false;
                        }
                        g_hash_table_replace(f2d, g_strdup(fs[i]), g_strdup(ls[i]));
                        g_hash_table_replace(d2f, g_strdup(ls[i]), g_strdup(fs[i]));
                }
        }
        return true;
}

/* Every live scenario task with seccomp is in the fresh scan (a scan racing the daemon's own
 * ptrace can miss a task: then the comparison proves nothing and is retried). */
static bool fresh_has_scenario(GHashTable *fresh, const Scenario *s, GString *why) {
        for (size_t i = 0; s && i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *t = scenario_task(s, (ScenarioTask) i);
                if (t->alive && (t->head >= 0 || t->strict) && !g_hash_table_contains(fresh, GUINT_TO_POINTER(t->tid))) {
                        g_string_printf(why, "tid %d is missing from the fresh scan", t->tid);
                        return false;
                }
        }
        return true;
}

typedef struct Converge {
        sd_bus *bus;
        pid_t root;
        GString *why;
        const char *backend;      /* of the fresh scan; NULL: the default */
        const Scenario *scenario; /* if set, each of its live tasks with seccomp must be compared */
        bool sharing;             /* compare which chains share filters too */
} Converge;

static bool converged(void *userdata) {
        Converge *c = userdata;
        g_autoptr(GHashTable) fresh = fresh_chains_as(c->root, c->backend, false), live = daemon_chains(c->bus);
        if (!fresh_has_scenario(fresh, c->scenario, c->why) || !chains_agree(fresh, live, c->why))
                return false;
        if (!c->sharing)
                return true;
        g_autoptr(GHashTable) fresh_ids = fresh_chains_as(c->root, c->backend, true);
        g_autoptr(GHashTable) live_ids = daemon_chains_as(c->bus, true);
        return fresh_has_scenario(fresh_ids, c->scenario, c->why) && sharing_agrees(fresh_ids, live_ids, c->why);
}

static void assert_converges_with(Converge *c, unsigned timeout_ms) {
        c->why = g_string_new(NULL);
        if (!tests_wait_for(converged, c, timeout_ms))
                g_error("the daemon's state does not equal a fresh scan after %u ms: %s", timeout_ms, c->why->str);
        g_string_free(c->why, true);
}

static void assert_converges(sd_bus *bus, pid_t root, unsigned timeout_ms) {
        Converge c = { .bus = bus, .root = root };
        assert_converges_with(&c, timeout_ms);
}

/* The ptrace daemon against a fresh ptrace scan: chains, and which of them share filters. */
static void assert_converges_ptrace(sd_bus *bus, const Scenario *s, unsigned timeout_ms) {
        Converge c = { .bus = bus, .root = scenario_root_pid(s), .backend = "ptrace", .scenario = s, .sharing = true };
        assert_converges_with(&c, timeout_ms);
}

static Scenario *small_scenario(void) {
        Scenario *s;
        struct sock_filter a[16], b[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0), nb = scenario_filter_errno(b, SYS_getpriority, 2, 1);
        g_assert_cmpint(scenario_new(&s), ==, 0);
        g_assert_cmpint(scenario_install(s, scenario_root(s), a, na, 0), >=, 0);
        ScenarioTask c = tests_fork_install(s, scenario_root(s), b, nb, SECCOMP_FILTER_FLAG_LOG);
        g_assert_cmpint(scenario_thread(s, c), >, 0);
        return s;
}

static void test_startup(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, small_scenario, NULL, NULL);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *backend = NULL;
        g_assert_cmpint(sd_bus_get_property_string(bus, DEST, PATH, IFACE, "Backend", &error, &backend), >=, 0);
        g_assert_cmpstr(backend, ==, "bpf");
        free(backend);
        uint64_t last = 0;
        g_assert_cmpint(sd_bus_get_property_trivial(bus, DEST, PATH, IFACE, "LastScanUSec", &error, 't', &last), >=, 0);
        g_assert_cmpuint(last, >, 0);
        assert_converges(bus, scenario_root_pid(s), TESTS_PATIENCE_MS);

        /* busctl, as an administrator would use it */
        g_autofree char *out = NULL;
        char *argv[] = { (char *) "busctl", (char *) "--system", (char *) "get-property", (char *) DEST, (char *) PATH,
                         (char *) IFACE, (char *) "Identity", NULL };
        g_assert_cmpint(bus_fixture_run(&b, false, argv, &out, NULL), ==, 0);
        g_assert_cmpstr(out, ==, "s \"exact\"\n");
        bus_fixture_finish(&b);
        scenario_free(s);
}

/* A signal as a line "Member arg..." (the tid, ProcessRenamed's pid and name, or Resynced's
 * reason). */
static char *signal_line(sd_bus_message *m) {
        const char *member = sd_bus_message_get_member(m);
        GString *line = g_string_new(member);
        if (streq(member, "FilterAttached")) {
                uint64_t id, parent;
                uint32_t tid;
                if (sd_bus_message_read(m, "ttu", &id, &parent, &tid) > 0)
                        g_string_append_printf(line, " %u", tid);
        } else if (streq(member, "TaskAdded") || streq(member, "TaskExited")) {
                uint32_t tid;
                if (sd_bus_message_read(m, "u", &tid) > 0)
                        g_string_append_printf(line, " %u", tid);
        } else if (streq(member, "ProcessRenamed")) {
                uint32_t pid;
                const char *comm;
                if (sd_bus_message_read(m, "us", &pid, &comm) > 0)
                        g_string_append_printf(line, " %u %s", pid, comm);
        } else if (streq(member, "Resynced")) {
                const char *reason;
                if (sd_bus_message_read(m, "s", &reason) > 0)
                        g_string_append_printf(line, " %s", reason);
        }
        return g_string_free(line, false);
}

/* SQL on the daemon's state database through a connection of our own, as an admin would. */
static void db_exec(const char *state_dir, const char *sql) {
        g_autofree char *path = g_build_filename(state_dir, "state.db", NULL);
        sqlite3 *db = NULL;
        char *err = NULL;
        g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), ==, SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
                g_error("%s: %s", sql, err);
        sqlite3_close(db);
}

static char *db_query(const char *state_dir, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static char *db_query(const char *state_dir, const char *fmt, ...) {
        g_autofree char *path = g_build_filename(state_dir, "state.db", NULL);
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *sql = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        return tests_sqlite_query(path, sql);
}

/* The chain of tid as the bus says it, ids newest first as one string ("" for none). */
static char *bus_chain(sd_bus *bus, pid_t tid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "GetTaskChain", &error, &reply, "u", (uint32_t) tid) < 0)
                g_error("GetTaskChain %d: %s", tid, error.message);
        GString *s = g_string_new(NULL);
        uint64_t id;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "t"), >, 0);
        while (sd_bus_message_read(reply, "t", &id) > 0)
                g_string_append_printf(s, "%s%" PRIu64, s->len ? " " : "", id);
        return g_string_free(s, false);
}

/* The same from the database. */
static char *db_chain(const char *state_dir, pid_t tid) {
        return db_query(state_dir, "SELECT coalesce(group_concat(filter, ' '), '') FROM "
                        "(SELECT filter FROM task_chains WHERE tid = %d ORDER BY position)", tid);
}

static void test_live_updates(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line);
        sd_bus_process(bus, NULL);

        struct sock_filter a[16], b2[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0), nb = scenario_filter_errno(b2, SYS_syslog, 5, 2);
        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask root = scenario_root(s);
        g_assert_cmpint(scenario_install(s, root, a, na, 0), >=, 0);
        bus_signal_log_assert(&log, bus, "FilterAttached %d", scenario_task(s, root)->tid);
        /* a rename is signalled at once, not found by the next pass */
        g_assert_cmpint(scenario_rename(s, root, "renamed-root"), ==, 0);
        bus_signal_log_assert(&log, bus, "ProcessRenamed %d renamed-root", scenario_task(s, root)->tid);
        ScenarioTask c = scenario_fork(s, root);
        bus_signal_log_assert(&log, bus, "TaskAdded %d", scenario_task(s, c)->tid);
        ScenarioTask t1 = scenario_thread(s, c), t2 = scenario_thread(s, c);
        bus_signal_log_assert(&log, bus, "TaskAdded %d", scenario_task(s, t2)->tid);
        g_assert_cmpint(scenario_install(s, t1, b2, nb, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        bus_signal_log_assert(&log, bus, "FilterAttached %d", scenario_task(s, t1)->tid);
        assert_converges(bus, scenario_root_pid(s), TESTS_PATIENCE_MS);

        /* strict mode, entered by a thread of a process without filters, is watched too */
        Scenario *s2;
        g_assert_cmpint(scenario_new(&s2), ==, 0);
        ScenarioTask strict = scenario_thread(s2, scenario_root(s2));
        g_assert_cmpint(scenario_strict(s2, strict), ==, 0);
        bus_signal_log_assert(&log, bus, "TaskAdded %d", scenario_task(s2, strict)->tid);
        assert_converges(bus, scenario_root_pid(s2), TESTS_PATIENCE_MS);
        scenario_free(s2);

        g_assert_cmpint(scenario_exit(s, t2), ==, 0);
        bus_signal_log_assert(&log, bus, "TaskExited %d", scenario_task(s, t2)->tid);
        g_assert_cmpint(scenario_exec_sleep(s, c), ==, 0);
        bus_signal_log_assert(&log, bus, "ProcessRenamed %d sleep", scenario_task(s, c)->tid);
        assert_converges(bus, scenario_root_pid(s), TESTS_PATIENCE_MS);
        g_assert_cmpint(scenario_exit(s, c), ==, 0);
        bus_signal_log_assert(&log, bus, "TaskExited %d", scenario_task(s, c)->tid);

        sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "GetTaskChain", &error, &reply, "u",
                                           (uint32_t) scenario_task(s, c)->tid), <, 0);
        g_assert_cmpstr(error.name, ==, "org.sectree1.Error.NoSuchTask");
        sd_bus_error_free(&error);
        assert_converges(bus, scenario_root_pid(s), TESTS_PATIENCE_MS);
        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_finish(&b);
}

static const char *log_find_prefix(BusSignalLog *log, const char *prefix);

/* A signal as "Member id parent tid" for FilterAttached, as signal_line() for the others. */
static char *signal_line_ids(sd_bus_message *m) {
        if (!streq(sd_bus_message_get_member(m), "FilterAttached"))
                return signal_line(m);
        uint64_t id, parent;
        uint32_t tid;
        if (sd_bus_message_read(m, "ttu", &id, &parent, &tid) <= 0)
                return g_strdup("FilterAttached ?");
        return g_strdup_printf("FilterAttached %" PRIu64 " %" PRIu64 " %u", id, parent, tid);
}

typedef struct StoredPass {
        const DaemonLog *log;
        unsigned before; /* "Full pass (" lines then */
} StoredPass;

static bool pass_stored(void *userdata) {
        const StoredPass *p = userdata;
        return daemon_log_count(p->log, "Full pass (") > p->before;
}

/* The database refuses a batch half-way (a trigger that RAISEs on one filter): nothing of the
 * batch is stored, no signal announces what was not stored, and the full passes that follow are
 * refused as well until the database takes the filter again; meanwhile the bus answers no question
 * of the live view, which is only the last stored state (it used to answer from it: a task under
 * a new filter had none); then the state comes back to a fresh scan. */
static void test_store_fails_mid_batch(void) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        DaemonLog daemon_log;
        daemon_log_begin(&daemon_log);
        Scenario *s = bus_fixture_start_with_scenario(&b, small_scenario, NULL, env);
        daemon_log_started(&daemon_log);
        if (!s) {
                daemon_log_end(&daemon_log);
                return;
        }
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line_ids);
        sd_bus_process(bus, NULL);

        ScenarioTask c = scenario_fork(s, scenario_root(s));
        pid_t tid = scenario_task(s, c)->tid;
        bus_signal_log_assert(&log, bus, "TaskAdded %d", tid);
        g_autofree char *stored = db_chain(b.state_dir, tid), *said = bus_chain(bus, tid);
        g_assert_cmpstr(stored, !=, "");
        g_assert_cmpstr(said, ==, stored);

        struct sock_filter f[PROG_MAX_INSNS];
        size_t n = scenario_filter_errno(f, SYS_acct, 9, 271);
        g_autofree char *trigger = g_strdup_printf("CREATE TRIGGER refuse BEFORE INSERT ON filters WHEN NEW.length = %zu "
                                                   "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END", n);
        db_exec(b.state_dir, trigger);
        /* one batch: a thread of c, then the install the database refuses */
        ScenarioTask t = scenario_thread(s, c);
        g_assert_cmpint(scenario_install(s, t, f, n, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        /* the batch, and the resync a second later, both refused */
        daemon_log.lines = (const char *const[]) { "Storing events failed", "Failed to store the full pass", NULL };
        if (!tests_wait_for(daemon_log_has, &daemon_log, TESTS_PATIENCE_MS)) {
                daemon_log_end(&daemon_log);
                g_error("the daemon did not say within %d ms that it could not store the batch, then the pass",
                        TESTS_PATIENCE_MS);
        }

        /* (filters of that length that other runs of this test install are not the scenario's) */
        pid_t tid_t = scenario_task(s, t)->tid;
        g_autofree char *refused = db_query(b.state_dir, "SELECT count(DISTINCT f.id) FROM task_chains c JOIN filters f "
                                            "ON f.id = c.filter WHERE f.length = %zu AND c.tid IN (%d, %d)", n, tid, tid_t);
        g_assert_cmpstr(refused, ==, "0");
        {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "GetTaskChain", &error, &reply, "u",
                                                   (uint32_t) tid_t), <, 0);
                g_assert_cmpstr(error.name, ==, "org.sectree1.Error.ScanFailed");
                g_assert_true(g_str_has_prefix(error.message, "The state database cannot be written ("));
                /* nor are the counts it would give (sectreectl status) */
                uint32_t tasks;
                sd_bus_error_free(&error);
                g_assert_cmpint(sd_bus_get_property_trivial(bus, DEST, PATH, IFACE, "Tasks", &error, 'u', &tasks), <, 0);
                g_assert_cmpstr(error.name, ==, "org.sectree1.Error.ScanFailed");
        }
        /* A change the database takes (a process under no new filter) is stored and announced, but
         * the view still misses the refused batch: refused until a full pass is stored (a write
         * that succeeded used to end it, and a nearly full disk takes small batches, not passes) */
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        bus_signal_log_assert(&log, bus, "TaskAdded %d", scenario_task(s, other)->tid);
        {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                uint32_t tasks;
                g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "GetTaskChain", &error, NULL, "u",
                                                   (uint32_t) tid_t), <, 0);
                g_assert_cmpstr(error.name, ==, "org.sectree1.Error.ScanFailed");
                sd_bus_error_free(&error);
                g_assert_cmpint(sd_bus_get_property_trivial(bus, DEST, PATH, IFACE, "Tasks", &error, 'u', &tasks), <, 0);
                g_assert_cmpstr(error.name, ==, "org.sectree1.Error.ScanFailed");
        }
        /* every filter announced is stored (live, or gone into history) */
        sd_bus_process(bus, NULL);
        while (sd_bus_process(bus, NULL) > 0)
                ;
        for (guint i = 0; i < log.lines->len; i++) {
                uint64_t id, parent;
                unsigned by;
                if (sscanf(g_ptr_array_index(log.lines, i), "FilterAttached %" SCNu64 " %" SCNu64 " %u", &id, &parent, &by) != 3)
                        continue;
                g_autofree char *known = db_query(b.state_dir, "SELECT (SELECT count(*) FROM filters WHERE id = %" PRIu64
                                                  ") + (SELECT count(*) FROM history WHERE id = %" PRIu64 ")", id, id);
                if (!streq(known, "1"))
                        g_error("FilterAttached %" PRIu64 " (by %u) was announced but is not stored", id, by);
                g_assert_cmpuint(by, !=, (unsigned) scenario_task(s, t)->tid);
        }

        StoredPass stored_pass = { .log = &daemon_log, .before = daemon_log_count(&daemon_log, "Full pass (") };
        db_exec(b.state_dir, "DROP TRIGGER refuse");
        /* the bus answers again once a full pass is stored */
        if (!tests_wait_for(pass_stored, &stored_pass, TESTS_PATIENCE_MS)) {
                daemon_log_end(&daemon_log);
                g_error("no full pass was stored within %d ms of the trigger's drop", TESTS_PATIENCE_MS);
        }
        /* and says so, where it had said the writes failed */
        g_assert_cmpuint(daemon_log_count(&daemon_log, "The state database can be written again"), ==, 1);
        Converge conv = { .bus = bus, .root = scenario_root_pid(s), .scenario = s, .sharing = true };
        assert_converges_with(&conv, TESTS_PATIENCE_MS);
        /* only a full pass, after the refusals, could store the filter */
        while (sd_bus_process(bus, NULL) > 0)
                ;
        g_assert_nonnull(log_find_prefix(&log, "Resynced"));
        g_free(refused);
        refused = db_query(b.state_dir, "SELECT count(DISTINCT f.id) FROM task_chains c JOIN filters f "
                           "ON f.id = c.filter WHERE f.length = %zu AND c.tid IN (%d, %d)", n, tid, tid_t);
        g_assert_cmpstr(refused, ==, "1");
        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_finish(&b);
        daemon_log_end(&daemon_log);
}

/* Many installs while the daemon's event ring buffer is tiny: events are lost, the daemon
 * resynchronises and ends equal to a fresh scan. */
static void test_overflow_resync(void) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_BPF_EVENTS_SIZE=4096", NULL };
        if (!bus_fixture_start_all(&b, NULL, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line);
        sd_bus_process(bus, NULL);

        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        struct sock_filter f[PROG_MAX_INSNS];
        /* The event of a filter of ~500 instructions fills a 4 KiB ring buffer on its own: with the
         * daemon stopped, the first is queued and every later one is lost. (A daemon that runs may
         * empty the buffer between two installs: then some get through, one whose parent was lost
         * is "inconsistent", and that pass repairs the losses too.) 40 of them stay within the
         * kernel's 32768-instruction budget of a chain. */
        g_assert_cmpint(kill(b.daemon_pid, SIGSTOP), ==, 0);
        for (int i = 0; i < 40; i++) {
                size_t n = scenario_filter_errno(f, SYS_acct, 1 + i, 500);
                g_assert_cmpint(scenario_install(s, scenario_root(s), f, n, 0), >=, 0);
        }
        g_assert_cmpint(kill(b.daemon_pid, SIGCONT), ==, 0);
        if (!bus_signal_log_wait(&log, bus, "Resynced lost-events", TESTS_PATIENCE_MS)) {
                g_ptr_array_add(log.lines, NULL);
                g_autofree char *seen = g_strjoinv(", ", (char **) log.lines->pdata);
                g_error("no Resynced lost-events signal after overflowing the event ring buffer; signals: %s", seen);
        }
        assert_converges(bus, scenario_root_pid(s), TESTS_PATIENCE_MS);
        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* SIGTERM while the daemon starts (it loads its BPF units and opens the database before its
 * event loop runs): it still ends as sectreed(8) says, exit 0, not killed by the signal. */
static void test_term_while_starting(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        tests_ensure_tracefs();
        bus_fixture_start_bus(&b);
        g_autofree char *state = g_dir_make_tmp("sectree-term-XXXXXX", NULL), *arg = g_strdup_printf("--state-dir=%s", state);
        const char *argv[] = { g_getenv("SECTREED"), arg, NULL };
        for (int delay_ms = 5; delay_ms <= 45; delay_ms += 20) {
                GPid pid;
                g_assert_true(g_spawn_async(NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDERR_TO_DEV_NULL,
                                            NULL, NULL, &pid, NULL));
                g_usleep((gulong) delay_ms * 1000);
                g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
                int status;
                g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
                g_test_message("SIGTERM after %d ms: %s %d", delay_ms, WIFEXITED(status) ? "exit" : "signal",
                               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                g_assert_true(WIFEXITED(status));
                g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        }
        tests_remove_dir(state);
        bus_fixture_stop(&b);
}

/* A second daemon on the same bus (another state directory) says who holds the name, and exits 1. */
static void test_name_taken(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        g_autofree char *state = g_dir_make_tmp("sectree-second-XXXXXX", NULL), *arg = g_strdup_printf("--state-dir=%s", state);
        const char *argv[] = { g_getenv("SECTREED"), arg, NULL };
        g_autofree char *err = NULL;
        int status;
        g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status,
                                   NULL));
        g_test_message("second daemon: %d, %s", status, err);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 1);
        g_autofree char *want = g_strdup_printf("The bus name org.sectree1 is taken, by process %d: is another sectreed "
                                                "running on this bus?", (int) b.daemon_pid);
        g_assert_nonnull(strstr(err, want));
        tests_remove_dir(state);
        bus_fixture_finish(&b);
}

static void test_restart(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, small_scenario, NULL, NULL);
        if (!s)
                return;
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        g_autofree char *db = g_build_filename(b.state_dir, "state.db", NULL);
        g_autofree char *ok = tests_sqlite_query(db, "PRAGMA integrity_check");
        g_assert_cmpstr(ok, ==, "ok");
        g_autofree char *rows = tests_sqlite_query(db, "SELECT count(*) > 0 FROM tasks");
        g_assert_cmpstr(rows, ==, "1");

        /* changes while it is down, then a restart against the stale file */
        g_assert_cmpint(scenario_exit(s, 1), ==, 0);
        ScenarioTask c = scenario_fork(s, scenario_root(s));
        struct sock_filter f[16];
        size_t n = scenario_filter_errno(f, SYS_syslog, 9, 3);
        g_assert_cmpint(scenario_install(s, c, f, n, 0), >=, 0);
        bus_fixture_start_daemon(&b, NULL, NULL, 30);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        assert_converges(bus, scenario_root_pid(s), TESTS_PATIENCE_MS);
        g_autofree char *gone = g_strdup_printf("SELECT count(*) FROM tasks WHERE tid = %d", scenario_task(s, 1)->tid);
        g_autofree char *n_gone = tests_sqlite_query(db, gone);
        g_assert_cmpstr(n_gone, ==, "0");
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* ListTasks's mode of tid, NULL when it does not list tid. */
static char *bus_task_mode(sd_bus *bus, pid_t tid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListTasks", &error, &reply, "") < 0)
                g_error("ListTasks: %s", error.message);
        uint32_t t, tgid, ppid, depth;
        const char *comm, *mode;
        uint64_t head;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uuusstu)"), >, 0);
        while (sd_bus_message_read(reply, "(uuusstu)", &t, &tgid, &ppid, &comm, &mode, &head, &depth) > 0)
                if (t == (uint32_t) tid)
                        return g_strdup(mode);
        return NULL;
}

typedef struct WantMode {
        sd_bus *bus;
        pid_t tid;
        const char *mode; /* NULL: not listed */
} WantMode;

static bool task_mode_is(void *userdata) {
        WantMode *x = userdata;
        g_autofree char *mode = bus_task_mode(x->bus, x->tid);
        return g_strcmp0(mode, x->mode) == 0;
}

static void assert_task_mode(sd_bus *bus, pid_t tid, const char *mode) {
        WantMode x = { bus, tid, mode };
        if (!tests_wait_for(task_mode_is, &x, TESTS_PATIENCE_MS)) {
                g_autofree char *now = bus_task_mode(bus, tid);
                g_error("ListTasks says tid %d is %s, not %s", tid, now ?: "not listed", mode ?: "not listed");
        }
}

/* A thread made before its process installed a filter without TSYNC escaped the filter: ListTasks
 * lists it as "disabled", from the first pass and from events (a thread it makes escapes too), and
 * drops it with its process's last filtered thread. */
static Scenario *escaped_scenario(void) {
        Scenario *s;
        struct sock_filter a[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0);
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask c = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(scenario_thread(s, c), >, 0);
        g_assert_cmpint(scenario_install(s, c, a, na, 0), >=, 0);
        return s;
}

static void test_escaped_threads(void) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL }; /* no pass but those asked for */
        Scenario *s = bus_fixture_start_with_scenario(&b, escaped_scenario, NULL, env);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        ScenarioTask c = 1, escaped = 2;
        g_assert_false(scenario_task(s, escaped)->head >= 0);
        assert_task_mode(bus, scenario_task(s, c)->tid, "filter");
        assert_task_mode(bus, scenario_task(s, escaped)->tid, "disabled");
        assert_task_mode(bus, scenario_root_pid(s), NULL); /* a process without filters is not listed */

        ScenarioTask again = scenario_thread(s, escaped);
        g_assert_cmpint(again, >, 0);
        assert_task_mode(bus, scenario_task(s, again)->tid, "disabled");
        g_assert_cmpint(scenario_exit(s, again), ==, 0);
        assert_task_mode(bus, scenario_task(s, again)->tid, NULL);

        /* a process that installs its first filter while the daemon watches: the thread it had
         * before is listed at once, not at the next full pass */
        ScenarioTask c2 = scenario_fork(s, scenario_root(s));
        ScenarioTask escaped2 = scenario_thread(s, c2);
        g_assert_cmpint(escaped2, >, 0);
        struct sock_filter a[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0);
        g_assert_cmpint(scenario_install(s, c2, a, na, 0), >=, 0);
        assert_task_mode(bus, scenario_task(s, c2)->tid, "filter");
        assert_task_mode(bus, scenario_task(s, escaped2)->tid, "disabled");

        /* the filtered thread leaves alone: its escaped thread goes with it from the list */
        g_assert_cmpint(scenario_exit_leader(s, c), ==, 0);
        assert_task_mode(bus, scenario_task(s, escaped)->tid, NULL);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "Rescan", &error, NULL, ""), >=, 0);
        g_assert_null(bus_task_mode(bus, scenario_task(s, escaped)->tid));
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* FilterAttached as "FilterAttached tid pid comm". */
static char *signal_line_installer(sd_bus_message *m) {
        if (!streq(sd_bus_message_get_member(m), "FilterAttached"))
                return signal_line(m);
        uint64_t id, parent;
        uint32_t tid, pid;
        const char *comm;
        if (sd_bus_message_read(m, "ttuus", &id, &parent, &tid, &pid, &comm) <= 0)
                return g_strdup("FilterAttached ?");
        return g_strdup_printf("FilterAttached %u %u %s", tid, pid, comm);
}

static char *proc_comm(pid_t tid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/comm", tid), *comm = NULL;
        g_assert_true(g_file_get_contents(path, &comm, NULL, NULL));
        return g_strdup(g_strstrip(comm));
}

/* The installer's tid, pid, comm and exe, and whether the time is set, as GetFilter says. */
static char *bus_installer(sd_bus *bus, uint64_t id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "GetFilter", &error, &reply, "t", id) < 0)
                g_error("GetFilter %" PRIu64 ": %s", id, error.message);
        g_assert_cmpint(sd_bus_message_skip(reply, "tusasusa(qyyu)"), >=, 0);
        uint32_t tid, pid;
        const char *comm, *exe;
        uint64_t usec;
        g_assert_cmpint(sd_bus_message_read(reply, "uusst", &tid, &pid, &comm, &exe, &usec), >, 0);
        return g_strdup_printf("%u %u %s %s %s", tid, pid, comm, exe, usec > 0 ? "set" : "unset");
}

/* ListListeners as "filter: comm[pid]/fd comm[pid]/fd ..." lines. */
static char *bus_listeners(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListListeners", &error, &reply, "") < 0)
                g_error("ListListeners: %s", error.message);
        GString *out = g_string_new(NULL);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(tta(uis))"), >, 0);
        while (sd_bus_message_enter_container(reply, 'r', "tta(uis)") > 0) {
                uint64_t id, filter;
                g_assert_cmpint(sd_bus_message_read(reply, "tt", &id, &filter), >, 0);
                g_string_append_printf(out, "%" PRIu64 ":", filter);
                uint32_t pid;
                int32_t fd;
                const char *comm;
                g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uis)"), >, 0);
                while (sd_bus_message_read(reply, "(uis)", &pid, &fd, &comm) > 0)
                        g_string_append_printf(out, " %s[%u]/%d", comm, pid, fd);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                g_assert_cmpint(sd_bus_message_exit_container(reply), >=, 0);
                g_string_append_c(out, '\n');
        }
        return g_string_free(out, false);
}

/* What a client needs beside the forest: the installer of a filter (GetFilter, FilterAttached),
 * the holders of listeners (ListListeners), and a thread id standing for its process
 * (ListSubtree, CreateSnapshot). */
static void test_client_data(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line_installer);
        sd_bus_process(bus, NULL);

        struct sock_filter a[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0);
        a[na - 3].k = SECCOMP_RET_USER_NOTIF;
        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask sandbox = scenario_fork(s, scenario_root(s));
        int node = scenario_install(s, sandbox, a, na, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(node, >=, 0);
        pid_t pid = scenario_task(s, sandbox)->tid;
        g_autofree char *comm = proc_comm(pid);
        bus_signal_log_assert(&log, bus, "FilterAttached %d %d %s", pid, pid, comm);
        ScenarioTask thread = scenario_thread(s, sandbox);
        g_assert_cmpint(thread, >, 0);
        pid_t tid = scenario_task(s, thread)->tid;

        g_autofree char *chain = bus_chain(bus, tid);
        uint64_t id = g_ascii_strtoull(chain, NULL, 10);
        g_assert_cmpuint(id, >, 0);
        g_autofree char *exe_link = g_strdup_printf("/proc/%d/exe", pid);
        g_autofree char *exe = g_file_read_link(exe_link, NULL);
        g_autofree char *want = g_strdup_printf("%d %d %s %s set", pid, pid, comm, exe);
        g_autofree char *installer = bus_installer(bus, id);
        g_assert_cmpstr(installer, ==, want);

        /* a holder outside the sandbox, seen by the next full pass */
        ScenarioTask super = scenario_fork(s, scenario_root(s));
        int fd = scenario_share_listener(s, node, super);
        g_assert_cmpint(fd, >=, 0);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "Rescan", &error, NULL, ""), >=, 0);
        g_autofree char *listeners = bus_listeners(bus);
        const ScenarioNode *n = scenario_node(s, node);
        g_autofree char *line = g_strdup_printf("%" PRIu64 ":", id);
        const char *at = strstr(listeners, line);
        g_assert_nonnull(at);
        g_autofree char *mine = g_strndup(at, strcspn(at, "\n"));
        g_autofree char *h1 = g_strdup_printf(" %s[%d]/%d", comm, pid, n->listener_fd);
        g_autofree char *h2 = g_strdup_printf(" %s[%d]/%d", comm, scenario_task(s, super)->tid, fd);
        if (!strstr(mine, h1) || !strstr(mine, h2))
                g_error("ListListeners: '%s' lacks%s or%s", mine, h1, h2);
        /* a filter found by a pass keeps the installer the daemon saw */
        g_free(installer);
        installer = bus_installer(bus, id);
        g_assert_cmpstr(installer, ==, want);

        /* an installer that execs before the daemon gets to its event (stopped meanwhile): its
         * executable is unknown, never the program it exec'd, which /proc shows by then */
        ScenarioTask quick = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(kill(b.daemon_pid, SIGSTOP), ==, 0);
        g_assert_cmpint(scenario_install(s, quick, a, na, 0), >=, 0);
        g_assert_cmpint(scenario_exec_sleep(s, quick), ==, 0);
        g_assert_cmpint(kill(b.daemon_pid, SIGCONT), ==, 0);
        pid_t qpid = scenario_task(s, quick)->tid;
        uint64_t qid = 0;
        for (int tries = 0; tries < 200 && qid == 0; tries++) {
                g_autofree char *qchain = bus_chain(bus, qpid);
                qid = g_ascii_strtoull(qchain, NULL, 10);
                if (qid == 0)
                        g_usleep(10 * 1000);
        }
        g_autofree char *qinstaller = bus_installer(bus, qid);
        g_autofree char *qunknown = g_strdup_printf("%d %d %s  set", qpid, qpid, comm);
        g_assert_cmpstr(qinstaller, ==, qunknown);

        /* a thread id stands for its process */
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "ListSubtree", &error, &reply, "u", (uint32_t) tid), >=, 0);
        const uint32_t *pids;
        size_t size;
        g_assert_cmpint(sd_bus_message_read_array(reply, 'u', (const void **) &pids, &size), >=, 0);
        g_assert_cmpuint(size, ==, sizeof(uint32_t));
        g_assert_cmpuint(pids[0], ==, (uint32_t) pid);
        sd_bus_message_unref(reply);
        reply = NULL;
        g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "CreateSnapshot", &error, &reply, "ua{sv}",
                                           (uint32_t) tid, 0), >=, 0);
        uint64_t snap;
        g_assert_cmpint(sd_bus_message_read(reply, "t", &snap), >, 0);
        g_autofree char *root = db_query(b.state_dir, "SELECT root_pid FROM snapshots WHERE id = %" PRIu64, snap);
        g_autofree char *want_root = g_strdup_printf("%d", pid);
        g_assert_cmpstr(root, ==, want_root);
        /* no such task at all */
        sd_bus_message_unref(reply);
        reply = NULL;
        g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "ListSubtree", &error, &reply, "u",
                                           (uint32_t) INT32_MAX), <, 0);
        g_assert_cmpstr(error.name, ==, "org.sectree1.Error.NoSuchTask");
        sd_bus_error_free(&error);

        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_finish(&b);
}

/* A root process installs a filter while the daemon watches and forks a child that becomes
 * nobody: nobody may see the filter (it runs its task) and who installed it, but not the
 * installer's executable, a fact of root's process; root sees it all. */
static void test_installer_private(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        struct sock_filter f[16];
        size_t n = scenario_filter_errno(f, SYS_acct, 4, 0);
        int ready[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t installer = fork();
        g_assert_cmpint(installer, >=, 0);
        if (installer == 0) {
                struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(1);
                pid_t child = fork();
                if (child == 0) {
                        tests_become(65534);
                        if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0) /* a change of uid cleared it */
                                _exit(1);
                        (void) write(ready[1], "x", 1);
                        for (;;)
                                pause();
                }
                for (;;)
                        pause();
        }
        close(ready[1]);
        char c;
        g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        close(ready[0]);
        g_autofree char *comm = proc_comm(installer);
        uint64_t id = 0;
        for (int tries = 0; tries < 200 && id == 0; tries++) {
                g_autofree char *chain = bus_chain(bus, installer);
                id = g_ascii_strtoull(chain, NULL, 10);
                if (id == 0)
                        g_usleep(10 * 1000);
        }
        g_assert_cmpuint(id, >, 0);
        g_autofree char *exe_link = g_strdup_printf("/proc/%d/exe", installer);
        g_autofree char *exe = g_file_read_link(exe_link, NULL);
        g_autofree char *as_root = bus_installer(bus, id);
        g_autofree char *want_root = g_strdup_printf("%d %d %s %s set", installer, installer, comm, exe);
        g_assert_cmpstr(as_root, ==, want_root);

        g_autofree char *sid = g_strdup_printf("%" PRIu64, id), *out = NULL, *err = NULL;
        char *get[] = { (char *) "busctl", (char *) "--system", (char *) "--json=short", (char *) "call", (char *) DEST,
                        (char *) PATH, (char *) IFACE, (char *) "GetFilter", (char *) "t", sid, NULL };
        if (bus_fixture_run(&b, true, get, &out, &err) != 0)
                g_error("GetFilter %s as nobody: %s", sid, err);
        json_t *doc = json_loads(out, 0, NULL);
        g_assert_nonnull(doc);
        json_t *data = json_object_get(doc, "data");
        g_assert_cmpuint(json_array_size(data), ==, 12);
        g_assert_cmpint(json_integer_value(json_array_get(data, 8)), ==, installer);
        g_assert_cmpstr(json_string_value(json_array_get(data, 9)), ==, comm);
        g_assert_cmpstr(json_string_value(json_array_get(data, 10)), ==, "");
        json_decref(doc);
        kill(installer, SIGKILL);
        waitpid(installer, NULL, 0);
        bus_fixture_stop(&b);
}

/* The name of nobody's process (tests_spawn_nobody()), not UTF-8: anyone may name their tasks so,
 * and nobody else's listing may break on it. */
#define NOBODY_COMM "nobody\xff\xfe"

static void test_unprivileged(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        Scenario *s = small_scenario();
        pid_t mine = tests_spawn_nobody(NOBODY_COMM, false);
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        g_autofree char *out = NULL, *err = NULL;
        char *list[] = { (char *) "busctl", (char *) "--system", (char *) "--json=short", (char *) "call", (char *) DEST,
                         (char *) PATH, (char *) IFACE, (char *) "ListTasks", NULL };
        g_assert_cmpint(bus_fixture_run(&b, true, list, &out, &err), ==, 0);
        g_autofree char *mine_s = g_strdup_printf("[%d,%d,", mine, mine);
        g_autofree char *theirs = g_strdup_printf("[%d,%d,", scenario_root_pid(s), scenario_root_pid(s));
        if (!strstr(out, mine_s))
                g_error("nobody does not see its own task %d: %s", mine, out);
        if (strstr(out, theirs))
                g_error("nobody sees root's task %d: %s", scenario_root_pid(s), out);

        g_autofree char *tid = g_strdup_printf("%d", scenario_root_pid(s));
        g_clear_pointer(&err, g_free);
        char *chain[] = { (char *) "busctl", (char *) "--system", (char *) "call", (char *) DEST, (char *) PATH,
                          (char *) IFACE, (char *) "GetTaskChain", (char *) "u", tid, NULL };
        g_assert_cmpint(bus_fixture_run(&b, true, chain, NULL, &err), !=, 0);
        /* busctl prints the errno text of well-known error names: AccessDenied is "Access denied" */
        if (!strstr(err, "Access denied"))
                g_error("GetTaskChain of root's task as nobody: %s", err);
        g_clear_pointer(&err, g_free);
        char *rescan[] = { (char *) "busctl", (char *) "--system", (char *) "call", (char *) DEST, (char *) PATH,
                           (char *) IFACE, (char *) "Rescan", NULL };
        g_assert_cmpint(bus_fixture_run(&b, true, rescan, NULL, &err), !=, 0);
        g_assert_nonnull(strstr(err, "Access denied"));
        /* and root sees both */
        g_clear_pointer(&out, g_free);
        g_assert_cmpint(bus_fixture_run(&b, false, list, &out, NULL), ==, 0);
        g_assert_nonnull(strstr(out, mine_s));
        g_assert_nonnull(strstr(out, theirs));
        /* the name arrives with U+FFFD for each byte that is not UTF-8 */
        if (!strstr(out, "\"nobody\xef\xbf\xbd\xef\xbf\xbd\""))
                g_error("ListTasks does not show %d's name sanitised: %s", mine, out);
        kill(mine, SIGKILL);
        waitpid(mine, NULL, 0);
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* Forks and exits with filters as fast as it can until killed. */
static pid_t spawn_churn(void) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                struct sock_filter f[16];
                for (unsigned i = 0;; i++) {
                        size_t n = scenario_filter_errno(f, SYS_acct, 1 + (int) (i % 100), i % 7);
                        struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
                        pid_t c = fork();
                        if (c == 0) {
                                prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                                syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
                                _exit(0);
                        }
                        if (c > 0)
                                waitpid(c, NULL, 0);
                }
        }
        return pid;
}

static void test_kill_during_churn(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, small_scenario, NULL, NULL);
        if (!s)
                return;
        pid_t churn = spawn_churn();
        g_usleep(700 * 1000);
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGKILL), ==, 128 + SIGKILL);
        kill(churn, SIGKILL);
        waitpid(churn, NULL, 0);
        g_autofree char *db = g_build_filename(b.state_dir, "state.db", NULL);
        g_autofree char *ok = tests_sqlite_query(db, "PRAGMA integrity_check");
        g_assert_cmpstr(ok, ==, "ok");
        bus_fixture_start_daemon(&b, NULL, NULL, 30);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        assert_converges(bus, scenario_root_pid(s), TESTS_PATIENCE_MS);
        scenario_free(s);
        bus_fixture_stop(&b);
}

static GDBusInterfaceInfo *parse_interface(const char *xml) {
        g_autoptr(GError) error = NULL;
        GDBusNodeInfo *node = g_dbus_node_info_new_for_xml(xml, &error);
        if (!node)
                g_error("parsing introspection XML: %s", error->message);
        GDBusInterfaceInfo *i = g_dbus_node_info_lookup_interface(node, IFACE);
        g_assert_nonnull(i);
        g_dbus_interface_info_ref(i);
        g_dbus_node_info_unref(node);
        return i;
}

static char *args_signature(GDBusArgInfo **args) {
        GString *s = g_string_new(NULL);
        for (GDBusArgInfo **a = args; a && *a; a++)
                g_string_append_printf(s, "%s:%s ", (*a)->name, (*a)->signature);
        return g_string_free(s, false);
}

static void assert_same_interface(GDBusInterfaceInfo *want, GDBusInterfaceInfo *got) {
        guint n = 0;
        for (GDBusMethodInfo **m = want->methods; *m; m++, n++) {
                GDBusMethodInfo *g = g_dbus_interface_info_lookup_method(got, (*m)->name);
                if (!g)
                        g_error("method %s is documented but not served", (*m)->name);
                g_autofree char *wi = args_signature((*m)->in_args), *gi = args_signature(g->in_args);
                g_autofree char *wo = args_signature((*m)->out_args), *go = args_signature(g->out_args);
                g_assert_cmpstr(wi, ==, gi);
                g_assert_cmpstr(wo, ==, go);
        }
        g_assert_cmpuint(n, ==, g_strv_length((char **) got->methods));
        n = 0;
        for (GDBusSignalInfo **s = want->signals; *s; s++, n++) {
                GDBusSignalInfo *g = g_dbus_interface_info_lookup_signal(got, (*s)->name);
                if (!g)
                        g_error("signal %s is documented but not served", (*s)->name);
                g_autofree char *wa = args_signature((*s)->args), *ga = args_signature(g->args);
                g_assert_cmpstr(wa, ==, ga);
        }
        g_assert_cmpuint(n, ==, g_strv_length((char **) got->signals));
        n = 0;
        for (GDBusPropertyInfo **p = want->properties; *p; p++, n++) {
                GDBusPropertyInfo *g = g_dbus_interface_info_lookup_property(got, (*p)->name);
                if (!g)
                        g_error("property %s is documented but not served", (*p)->name);
                g_assert_cmpstr((*p)->signature, ==, g->signature);
                g_assert_cmpint((*p)->flags, ==, g->flags);
        }
        g_assert_cmpuint(n, ==, g_strv_length((char **) got->properties));
}

static void test_introspection(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, "org.freedesktop.DBus.Introspectable", "Introspect",
                                           &error, &reply, ""), >=, 0);
        const char *xml;
        g_assert_cmpint(sd_bus_message_read(reply, "s", &xml), >, 0);
        g_autofree char *path = g_build_filename(SECTREE_SOURCE_DIR, "dbus", "org.sectree1.Manager.xml", NULL);
        g_autofree char *documented = NULL;
        g_assert_true(g_file_get_contents(path, &documented, NULL, NULL));
        GDBusInterfaceInfo *want = parse_interface(documented), *got = parse_interface(xml);
        assert_same_interface(want, got);
        g_dbus_interface_info_unref(want);
        g_dbus_interface_info_unref(got);
        bus_fixture_stop(&b);
}


/* ---- the ptrace backend: proc connector events, subtree rescans, periodic full passes ---- */

static char *ptrace_args[] = { (char *) "--backend=ptrace", NULL };
/* No periodic full pass during a test: only events can explain what the daemon sees. */
#define NO_REFRESH "SECTREE_REFRESH_USEC=600000000"

/* The daemon's chain of tid (ids, newest first); NULL with *error_name set when it refuses. */
static GArray *task_chain(sd_bus *bus, pid_t tid, char **error_name) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "GetTaskChain", &error, &reply, "u", (uint32_t) tid) < 0) {
                if (error_name)
                        *error_name = g_strdup(error.name);
                sd_bus_error_free(&error);
                return NULL;
        }
        GArray *ids = g_array_new(false, false, sizeof(uint64_t));
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "t"), >, 0);
        uint64_t id;
        while (sd_bus_message_read(reply, "t", &id) > 0)
                g_array_append_val(ids, id);
        return ids;
}

/* What ListTasks says of tid: false if it does not list it. */
static bool list_task(sd_bus *bus, pid_t tid, pid_t *ret_ppid, char **ret_comm) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListTasks", &error, &reply, "") < 0)
                g_error("ListTasks: %s", error.message);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uuusstu)"), >, 0);
        uint32_t t, tgid, ppid, depth;
        const char *comm, *mode;
        uint64_t head;
        while (sd_bus_message_read(reply, "(uuusstu)", &t, &tgid, &ppid, &comm, &mode, &head, &depth) > 0)
                if (t == (uint32_t) tid) {
                        if (ret_ppid)
                                *ret_ppid = (pid_t) ppid;
                        if (ret_comm)
                                *ret_comm = g_strdup(comm);
                        return true;
                }
        return false;
}

/* The comm ListTasks reports for tid, or NULL. */
static char *task_comm(sd_bus *bus, pid_t tid) {
        char *comm = NULL;
        return list_task(bus, tid, NULL, &comm) ? comm : NULL;
}

typedef struct ChainWait {
        sd_bus *bus;
        pid_t tid;
        guint depth; /* wanted chain length */
        const char *comm; /* wanted comm, or NULL */
} ChainWait;

static bool chain_reached(void *userdata) {
        ChainWait *w = userdata;
        GArray *ids = task_chain(w->bus, w->tid, NULL);
        bool ok = ids && ids->len == w->depth;
        if (ids)
                g_array_unref(ids);
        if (ok && w->comm) {
                g_autofree char *comm = task_comm(w->bus, w->tid);
                ok = streq_ptr(comm, w->comm);
        }
        return ok;
}

static void assert_chain_within(sd_bus *bus, pid_t tid, guint depth, const char *comm, unsigned timeout_ms) {
        ChainWait w = { .bus = bus, .tid = tid, .depth = depth, .comm = comm };
        if (!tests_wait_for(chain_reached, &w, timeout_ms)) {
                g_autofree char *error = NULL, *got_comm = task_comm(bus, tid);
                GArray *ids = task_chain(bus, tid, &error);
                g_error("task %d: wanted %u filters%s%s within %u ms, the daemon has %d (%s), comm %s", tid, depth,
                        comm ? " and comm " : "", comm ? comm : "", timeout_ms, ids ? (int) ids->len : -1,
                        error ? error : "no error", got_comm ? got_comm : "(none)");
        }
}

typedef struct GoneWait {
        sd_bus *bus;
        pid_t tid;
} GoneWait;

static bool task_gone(void *userdata) {
        GoneWait *w = userdata;
        g_autofree char *error = NULL;
        GArray *ids = task_chain(w->bus, w->tid, &error);
        if (ids)
                g_array_unref(ids);
        return !ids && streq_ptr(error, "org.sectree1.Error.NoSuchTask");
}

static void assert_gone_within(sd_bus *bus, pid_t tid, unsigned timeout_ms) {
        GoneWait w = { .bus = bus, .tid = tid };
        if (!tests_wait_for(task_gone, &w, timeout_ms))
                g_error("task %d still known to the daemon after %u ms", tid, timeout_ms);
}

/* The first line of the log that starts with prefix, or NULL. */
static const char *log_find_prefix(BusSignalLog *log, const char *prefix) {
        for (guint i = 0; i < log->lines->len; i++)
                if (g_str_has_prefix(g_ptr_array_index(log->lines, i), prefix))
                        return g_ptr_array_index(log->lines, i);
        return NULL;
}

static void test_ptrace_startup(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, small_scenario, ptrace_args, NULL);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *value = NULL;
        g_assert_cmpint(sd_bus_get_property_string(bus, DEST, PATH, IFACE, "Backend", &error, &value), >=, 0);
        g_assert_cmpstr(value, ==, "ptrace");
        free(value);
        g_assert_cmpint(sd_bus_get_property_string(bus, DEST, PATH, IFACE, "Identity", &error, &value), >=, 0);
        g_assert_cmpstr(value, ==, "inferred");
        free(value);
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);
        bus_fixture_finish(&b);
        scenario_free(s);
}

/* Forks, threads, exec (by a thread that is not the leader) and exits, seen through the proc
 * connector alone: the periodic full pass is off, and no Resynced signal may come. */
static void test_ptrace_live_updates(void) {
        BusFixture b;
        char *env[] = { (char *) NO_REFRESH, NULL };
        if (!bus_fixture_start_all(&b, ptrace_args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line);
        sd_bus_process(bus, NULL);

        struct sock_filter a[16], f2[16], f3[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0), n2 = scenario_filter_errno(f2, SYS_syslog, 5, 2),
               n3 = scenario_filter_errno(f3, SYS_getpriority, 7, 1);
        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask root = scenario_root(s);
        /* No event tells of this filter; the fork that follows finds the forker's chain unknown
         * and reads its whole subtree. */
        g_assert_cmpint(scenario_install(s, root, a, na, 0), >=, 0);
        ScenarioTask c = scenario_fork(s, root);
        pid_t ctid = scenario_task(s, c)->tid;
        bus_signal_log_assert(&log, bus, "TaskAdded %d", ctid);
        bus_signal_log_assert(&log, bus, "FilterAttached %d", scenario_root_pid(s));
        assert_chain_within(bus, ctid, 1, NULL, 3000);
        assert_chain_within(bus, scenario_root_pid(s), 1, NULL, 3000);

        ScenarioTask t1 = scenario_thread(s, c), t2 = scenario_thread(s, c);
        bus_signal_log_assert(&log, bus, "TaskAdded %d", scenario_task(s, t1)->tid);
        bus_signal_log_assert(&log, bus, "TaskAdded %d", scenario_task(s, t2)->tid);
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);

        g_assert_cmpint(scenario_exit(s, t2), ==, 0);
        bus_signal_log_assert(&log, bus, "TaskExited %d", scenario_task(s, t2)->tid);
        assert_gone_within(bus, scenario_task(s, t2)->tid, 3000);

        /* A thread installs a filter for the whole process and execs: the exec is the event. */
        pid_t t1tid = scenario_task(s, t1)->tid;
        g_assert_cmpint(scenario_install(s, t1, f2, n2, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_exec_sleep(s, t1), ==, 0);
        bus_signal_log_assert(&log, bus, "FilterAttached %d", ctid);
        assert_chain_within(bus, ctid, 2, "sleep", 3000);
        assert_gone_within(bus, t1tid, 3000);

        /* A child installs a filter of its own (LOG), then execs. */
        ScenarioTask g = scenario_fork(s, root);
        pid_t gtid = scenario_task(s, g)->tid;
        g_assert_cmpint(scenario_install(s, g, f3, n3, SECCOMP_FILTER_FLAG_LOG), >=, 0);
        g_assert_cmpint(scenario_exec_sleep(s, g), ==, 0);
        bus_signal_log_assert(&log, bus, "FilterAttached %d", gtid);
        assert_chain_within(bus, gtid, 2, "sleep", 3000);
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);

        g_assert_cmpint(scenario_exit(s, g), ==, 0);
        bus_signal_log_assert(&log, bus, "TaskExited %d", gtid);
        assert_gone_within(bus, gtid, 3000);
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);
        const char *resynced = log_find_prefix(&log, "Resynced");
        if (resynced)
                g_error("a full pass ran during the test (%s): events alone should have done it", resynced);

        /* Full passes find the same and keep the inferred ids, even where byte-identical filters of
         * unrelated tasks (other tests, other sandboxes) share a key. */
        for (int pass = 0; pass < 2; pass++) {
                g_autoptr(GHashTable) before = daemon_chains_as(bus, true);
                sd_bus_error error = SD_BUS_ERROR_NULL;
                g_assert_cmpint(sd_bus_call_method(bus, DEST, PATH, IFACE, "Rescan", &error, NULL, ""), >=, 0);
                g_autoptr(GHashTable) after = daemon_chains_as(bus, true);
                for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                        const ScenarioTaskInfo *t = scenario_task(s, (ScenarioTask) i);
                        if (t->alive)
                                g_assert_cmpstr(g_hash_table_lookup(after, GUINT_TO_POINTER(t->tid)), ==,
                                                g_hash_table_lookup(before, GUINT_TO_POINTER(t->tid)));
                }
        }
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);

        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_finish(&b);
}

/* A filter installed by a task that neither forks nor execs has no event: the periodic full pass
 * finds it, and says what it found with the same signals. */
static void test_ptrace_refresh(void) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=500000", NULL };
        if (!bus_fixture_start_all(&b, ptrace_args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line);
        sd_bus_process(bus, NULL);

        struct sock_filter a[16], f2[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0), n2 = scenario_filter_errno(f2, SYS_syslog, 5, 2);
        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask c = scenario_fork(s, scenario_root(s));
        pid_t ctid = scenario_task(s, c)->tid;
        g_assert_cmpint(scenario_install(s, c, a, na, 0), >=, 0);
        bus_signal_log_assert(&log, bus, "TaskAdded %d", ctid);
        bus_signal_log_assert(&log, bus, "FilterAttached %d", ctid);
        assert_chain_within(bus, ctid, 1, NULL, 3000);
        g_assert_cmpint(scenario_install(s, c, f2, n2, 0), >=, 0);
        assert_chain_within(bus, ctid, 2, NULL, 3000);
        bus_signal_log_assert(&log, bus, "Resynced refresh");
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);
        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_finish(&b);
}

static void spawn_and_reap(unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                pid_t pid = fork();
                g_assert_cmpint(pid, >=, 0);
                if (pid == 0)
                        _exit(0);
                waitpid(pid, NULL, 0);
        }
}

/* Events the socket cannot hold (the daemon is stopped, its receive buffer tiny) are lost: the
 * daemon notices ENOBUFS, resynchronises with a full pass and ends equal to a fresh scan. */
static void test_ptrace_overflow_resync(void) {
        BusFixture b;
        char *env[] = { (char *) NO_REFRESH, (char *) "SECTREE_PROC_CN_RCVBUF=256", NULL };
        if (!bus_fixture_start_all(&b, ptrace_args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line);
        sd_bus_process(bus, NULL);

        struct sock_filter a[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0);
        Scenario *s;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        g_assert_cmpint(kill(b.daemon_pid, SIGSTOP), ==, 0);
        ScenarioTask c = tests_fork_install(s, scenario_root(s), a, na, 0);
        ScenarioTask g = scenario_fork(s, c);
        g_assert_cmpint(scenario_thread(s, g), >, 0);
        spawn_and_reap(200);
        g_assert_cmpint(kill(b.daemon_pid, SIGCONT), ==, 0);
        if (!bus_signal_log_wait(&log, bus, "Resynced lost-events", TESTS_PATIENCE_MS))
                g_error("no Resynced lost-events signal after overflowing the proc connector socket");
        assert_chain_within(bus, scenario_task(s, g)->tid, 1, NULL, 3000);
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);
        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_finish(&b);
}


/* Processes that fork, install a filter and exit as fast as they can: rescanning subtrees that
 * vanish under it never leaves the live forest inconsistent, the state ends equal to a fresh scan,
 * and a SIGKILL in the middle leaves an intact database that the next start reconciles. */
static void test_ptrace_churn(void) {
        BusFixture b;
        char *env[] = { (char *) NO_REFRESH, NULL };
        Scenario *s = bus_fixture_start_with_scenario(&b, small_scenario, ptrace_args, env);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line);
        sd_bus_process(bus, NULL);
        pid_t churn = spawn_churn();
        (void) bus_signal_log_wait(&log, bus, "(nothing: pump the signals)", 1500);
        kill(churn, SIGKILL);
        waitpid(churn, NULL, 0);
        if (log_find_prefix(&log, "Resynced inconsistent"))
                g_error("rescans under churn left the live forest inconsistent");
        assert_converges_ptrace(bus, s, TESTS_PATIENCE_MS);

        churn = spawn_churn();
        g_usleep(700 * 1000);
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGKILL), ==, 128 + SIGKILL);
        kill(churn, SIGKILL);
        waitpid(churn, NULL, 0);
        g_autofree char *db = g_build_filename(b.state_dir, "state.db", NULL);
        g_autofree char *ok = tests_sqlite_query(db, "PRAGMA integrity_check");
        g_assert_cmpstr(ok, ==, "ok");
        bus_fixture_start_daemon(&b, ptrace_args, env, 30);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus2 = bus_client_open();
        assert_converges_ptrace(bus2, s, TESTS_PATIENCE_MS);
        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* ---- a process's parent exits ---- */

/* The ppid ListTasks reports for tid, or -1. */
static pid_t task_ppid(sd_bus *bus, pid_t tid) {
        pid_t ppid = -1;
        return list_task(bus, tid, &ppid, NULL) ? ppid : -1;
}

typedef struct PpidWait {
        sd_bus *bus;
        pid_t tid, ppid;
} PpidWait;

static bool ppid_is(void *userdata) {
        PpidWait *w = userdata;
        return task_ppid(w->bus, w->tid) == w->ppid;
}

static void assert_ppid_within(sd_bus *bus, pid_t tid, pid_t ppid, unsigned timeout_ms) {
        PpidWait w = { .bus = bus, .tid = tid, .ppid = ppid };
        if (!tests_wait_for(ppid_is, &w, timeout_ms))
                g_error("ListTasks says thread %d has parent %d, not %d, %u ms on", tid, task_ppid(bus, tid), ppid, timeout_ms);
}

/* A filtered process under a parent without filters, and one under a parent with some. */
static Scenario *reparent_scenario(void) {
        Scenario *s;
        TestFilters x;
        tests_filters_init(&x);
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask plain = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(tests_fork_install(s, plain, x.a, x.na, 0), >=, 0);
        ScenarioTask filtered = tests_fork_install(s, scenario_root(s), x.b, x.nb, 0);
        g_assert_cmpint(scenario_fork(s, filtered), >=, 0);
        return s;
}

/* When a process's parent exits, its ppid follows the reparenting at once (within the time the
 * events take), in ListTasks, in `sectreectl tree --json` and in the database: not at the next
 * full pass (60 s away; here 10 minutes). */
static void reparent(char **args) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        Scenario *s = bus_fixture_start_with_scenario(&b, reparent_scenario, args, env);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        pid_t root = scenario_root_pid(s);
        const ScenarioTask parents[] = { 1, 3 }, children[] = { 2, 4 };
        for (size_t i = 0; i < ELEMENTSOF(parents); i++) {
                pid_t child = scenario_task(s, children[i])->tid, parent = scenario_task(s, parents[i])->tid;
                assert_ppid_within(bus, child, parent, 3000);
                g_assert_cmpint(scenario_exit(s, parents[i]), ==, 0);
                assert_ppid_within(bus, child, root, 3000);
                g_autofree char *stored = db_query(b.state_dir, "SELECT ppid FROM processes WHERE pid = %d", child);
                g_assert_cmpint(atoi(stored), ==, root);
        }
        g_autofree char *out = NULL;
        char *argv[] = { (char *) g_getenv("SECTREECTL"), (char *) "--json", (char *) "tree", NULL };
        g_assert_cmpint(bus_fixture_run(&b, false, argv, &out, NULL), ==, 0);
        json_t *doc = json_loads(out, 0, NULL), *p;
        g_assert_nonnull(doc);
        size_t i, seen = 0;
        json_array_foreach(json_object_get(doc, "processes"), i, p) {
                json_int_t pid = json_integer_value(json_object_get(p, "pid"));
                if (pid == scenario_task(s, children[0])->tid || pid == scenario_task(s, children[1])->tid) {
                        g_assert_cmpint(json_integer_value(json_object_get(p, "ppid")), ==, root);
                        seen++;
                }
        }
        g_assert_cmpuint(seen, ==, 2);
        json_decref(doc);
        scenario_free(s);
        bus_fixture_finish(&b);
}

static void test_reparent(void) {
        reparent(NULL);
}

static void test_ptrace_reparent(void) {
        reparent(ptrace_args);
}

/* ---- ids that survive restarts ---- */

/* tid -> its chain of ids oldest first ("5 7 9"), for the scenario's live tasks with seccomp: one
 * GetTaskChain each, which no change elsewhere on the machine can make inconsistent. */
static GHashTable *scenario_id_chains(sd_bus *bus, const Scenario *s) {
        GHashTable *chains = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *t = scenario_task(s, (ScenarioTask) i);
                g_autofree char *error = NULL;
                g_autoptr(GArray) ids = t->alive ? task_chain(bus, t->tid, &error) : NULL;
                if (!ids)
                        continue; /* not alive, or without seccomp (NoSuchTask) */
                GString *oldest_first = g_string_new(NULL);
                for (guint k = ids->len; k-- > 0;)
                        g_string_append_printf(oldest_first, "%s%" PRIu64, oldest_first->len ? " " : "",
                                               g_array_index(ids, uint64_t, k));
                g_hash_table_insert(chains, GUINT_TO_POINTER(t->tid), g_string_free(oldest_first, false));
        }
        return chains;
}

static uint64_t stored_max_id(const char *state_dir) {
        g_autofree char *v = db_query(state_dir, "SELECT max(max_filter_id, coalesce((SELECT max(id) FROM filters), 0), "
                                      "coalesce((SELECT max(id) FROM history), 0)) FROM meta");
        return g_ascii_strtoull(v, NULL, 10);
}

/* What the database holds, read while the daemon is down: the tasks in filter mode (tid -> "start
 * time: ids oldest first") and every filter it has named, live or in history (id -> "parent
 * digest"). */
typedef struct Stored {
        GHashTable *tasks, *filters;
} Stored;

static void stored_done(Stored *st) {
        g_clear_pointer(&st->tasks, g_hash_table_destroy);
        g_clear_pointer(&st->filters, g_hash_table_destroy);
}

/* The rows of a query, each split at '|'. */
static GPtrArray *db_rows(const char *state_dir, const char *sql) {
        g_autofree char *out = db_query(state_dir, "%s", sql);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify) g_strfreev);
        for (guint i = 0; lines[i]; i++)
                if (lines[i][0])
                        g_ptr_array_add(rows, g_strsplit(lines[i], "|", -1));
        return rows;
}

/* The chain under head as ids oldest first, walking parents in filters. */
static char *stored_chain(GHashTable *parents, const char *head) {
        GPtrArray *ids = g_ptr_array_new();
        for (const char *x = head; x && x[0] && ids->len < 10000; x = g_hash_table_lookup(parents, x))
                g_ptr_array_insert(ids, 0, (gpointer) x);
        g_ptr_array_add(ids, NULL);
        char *s = g_strjoinv(" ", (char **) ids->pdata);
        g_ptr_array_free(ids, true);
        return s;
}

static Stored stored_read(const char *state_dir) {
        Stored st = { .tasks = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free),
                      .filters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free) };
        g_autoptr(GHashTable) parents = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GPtrArray) f = db_rows(state_dir, "SELECT id, coalesce(parent, ''), digest, 1 FROM filters UNION ALL "
                                                    "SELECT id, coalesce(parent, ''), digest, 0 FROM history");
        for (guint i = 0; i < f->len; i++) {
                char **r = f->pdata[i];
                g_hash_table_insert(st.filters, g_strdup(r[0]), g_strdup_printf("%s %s", r[1], r[2]));
                if (streq(r[3], "1") && r[1][0])
                        g_hash_table_insert(parents, g_strdup(r[0]), g_strdup(r[1]));
        }
        g_autoptr(GPtrArray) t = db_rows(state_dir, "SELECT tid, start_time, filter FROM tasks WHERE mode = 'filter'");
        for (guint i = 0; i < t->len; i++) {
                char **r = t->pdata[i];
                g_autofree char *chain = stored_chain(parents, r[2]);
                g_hash_table_insert(st.tasks, GUINT_TO_POINTER(atoi(r[0])), g_strdup_printf("%s: %s", r[1], chain));
        }
        return st;
}

/* Across the whole stored state: every task stored before and after with the same start time
 * (restricted to the tids of only, when set) holds at each depth the id it held before; every id of
 * the after state that the database had named before (up to old_max) names a filter with the same
 * parent and bytes as then, live or retired: no id is handed to another filter. Returns the number
 * of tasks compared. */
static unsigned assert_stored_ids_kept(const Stored *before, const Stored *after, uint64_t old_max, GHashTable *only) {
        GHashTableIter it;
        gpointer k, v;
        unsigned kept = 0;
        g_hash_table_iter_init(&it, before->tasks);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                const char *now = g_hash_table_lookup(after->tasks, k);
                size_t n = strchr(v, ':') - (char *) v;
                if (!now || strncmp(now, v, n + 1) != 0 || (only && !g_hash_table_contains(only, k)))
                        continue; /* gone, or another task under that tid */
                if (!g_str_has_prefix(now, v) || (now[strlen(v)] != 0 && now[strlen(v)] != ' '))
                        g_error("tid %u (start time %.*s) was stored with filters %s and after the restart with %s",
                                GPOINTER_TO_UINT(k), (int) n, (char *) v, (char *) v + n + 1, now + n + 1);
                kept++;
        }
        g_hash_table_iter_init(&it, after->filters);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                const char *then = g_hash_table_lookup(before->filters, k);
                if (g_ascii_strtoull(k, NULL, 10) <= old_max && !streq_ptr(then, v))
                        g_error("filter %s is '%s' (parent, digest) after the restart; before, the database had %s",
                                (char *) k, (char *) v, then ? then : "no filter under that id");
        }
        return kept;
}

/* A holder: a process of the test's with two filters, that forks on request a child sharing them
 * under the pid the test names, with clone3(2)'s set_tid as root may: the kernel would give a
 * lower pid than the holder's only once pids wrap, which a test cannot wait for. */
typedef struct Holder {
        pid_t pid;
        int cmd, reply; /* the test's ends of the pipes */
} Holder;

/* clone3(2)'s arguments up to set_tid_size (CLONE_ARGS_SIZE_VER1). */
typedef struct CloneArgs {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size;
} CloneArgs;

/* A child under pid want that waits to be killed; -errno if the kernel refuses the pid. */
static pid_t clone_at(pid_t want) {
        CloneArgs a = { .exit_signal = SIGCHLD, .set_tid = (uint64_t) (uintptr_t) &want, .set_tid_size = 1 };
        pid_t c = (pid_t) syscall(SYS_clone3, &a, sizeof(a));
        if (c == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
        return c < 0 ? -errno : c;
}

static void holder_main(int cmd, int reply) {
        struct sock_filter f[16];
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        for (int salt = 71; salt <= 72; salt++) {
                struct sock_fprog prog = { .len = (unsigned short) scenario_filter_errno(f, SYS_acct, salt, 3), .filter = f };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(1);
        }
        pid_t want;
        while (read(cmd, &want, sizeof(want)) == sizeof(want)) {
                pid_t got = clone_at(want);
                if (write(reply, &got, sizeof(got)) != sizeof(got))
                        _exit(1);
        }
        _exit(0);
}

static Holder holder_start(void) {
        int cmd[2], reply[2];
        g_assert_cmpint(pipe2(cmd, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(reply, O_CLOEXEC), ==, 0);
        Holder h = { .pid = fork(), .cmd = cmd[1], .reply = reply[0] };
        g_assert_cmpint(h.pid, >=, 0);
        if (h.pid == 0)
                holder_main(cmd[0], reply[1]);
        close(cmd[0]);
        close(reply[1]);
        return h;
}

/* A child of the holder under a free pid below the holder's. */
static pid_t holder_fork_below(const Holder *h) {
        for (pid_t want = h->pid - 1; want > 1; want--) {
                g_autofree char *proc = g_strdup_printf("/proc/%d", want);
                if (access(proc, F_OK) == 0)
                        continue; /* a process or thread has it */
                pid_t got;
                g_assert_cmpint(write(h->cmd, &want, sizeof(want)), ==, sizeof(want));
                g_assert_cmpint(read(h->reply, &got, sizeof(got)), ==, sizeof(got));
                if (got == want)
                        return got;
                if (got != -EEXIST)
                        g_error("clone3 with set_tid %d: %s", want, strerror(-got));
        }
        g_error("no free pid below the holder's (%d)", h->pid);
}

static void holder_stop(Holder *h) {
        close(h->cmd);
        close(h->reply);
        kill(h->pid, SIGKILL);
        waitpid(h->pid, NULL, 0);
}

/* A churner that shares its filters: it installs one, keeps four children that live on (two of
 * them stack a filter of their own) and forks and kills four more as fast as it can, all of them
 * holding its filter, until killed. */
static pid_t spawn_sharing_churn(int ready) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid > 0)
                return pid;
        struct sock_filter f[16];
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        struct sock_fprog prog = { .len = (unsigned short) scenario_filter_errno(f, SYS_acct, 81, 2), .filter = f };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(1);
        pid_t ring[4] = {};
        for (unsigned i = 0;; i++) {
                pid_t c = fork();
                if (c == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        struct sock_fprog own = { .len = (unsigned short) scenario_filter_errno(f, SYS_acct, 82 + (int) (i % 5), 1),
                                                  .filter = f };
                        if (i % 2 == 1)
                                syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &own);
                        for (;;)
                                pause();
                }
                if (i == 3 && write(ready, "x", 1) != 1)
                        _exit(1);
                if (i < 4 || c < 0)
                        continue; /* the first four live on */
                if (ring[i % 4] > 0) {
                        kill(ring[i % 4], SIGKILL);
                        waitpid(ring[i % 4], NULL, 0);
                }
                ring[i % 4] = c;
                g_usleep(1000);
        }
}

/* The tids the daemon lists with ppid as their parent process. */
static GArray *children_of(sd_bus *bus, pid_t ppid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (sd_bus_call_method(bus, DEST, PATH, IFACE, "ListTasks", &error, &reply, "") < 0)
                g_error("ListTasks: %s", error.message);
        GArray *tids = g_array_new(false, false, sizeof(pid_t));
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uuusstu)"), >, 0);
        uint32_t t, tgid, pp, depth;
        const char *comm, *mode;
        uint64_t head;
        while (sd_bus_message_read(reply, "(uuusstu)", &t, &tgid, &pp, &comm, &mode, &head, &depth) > 0)
                if (pp == (uint32_t) ppid) {
                        pid_t tid = (pid_t) t;
                        g_array_append_val(tids, tid);
                }
        return tids;
}

/* Every child the daemon lists of the sharing churner holds the churner's filter under the id the
 * churner has (the one it had before the restart): returns how many it lists. */
static unsigned assert_churn_shares(sd_bus *bus, pid_t churner, const char *churner_chain) {
        g_autoptr(GArray) tids = children_of(bus, churner);
        unsigned n = 0;
        for (guint i = 0; i < tids->len; i++) {
                pid_t tid = g_array_index(tids, pid_t, i);
                g_autoptr(GArray) ids = task_chain(bus, tid, NULL);
                if (!ids || ids->len == 0)
                        continue; /* killed meanwhile (a child being reaped may be read without its filters) */
                g_autofree char *root = g_strdup_printf("%" PRIu64, g_array_index(ids, uint64_t, ids->len - 1));
                if (!streq(root, churner_chain))
                        g_error("the churner's child %d holds %s at depth 1; the churner holds %s", tid, root, churner_chain);
                n++;
        }
        return n;
}

/* Every task that lived through the restart holds at each depth the id it held before (its chain
 * only grew); every id that was not held before is above any the database ever had. */
static void assert_ids_kept(GHashTable *before, GHashTable *after, uint64_t old_max) {
        g_autoptr(GHashTable) old_ids = g_hash_table_new(g_str_hash, g_str_equal);
        GHashTableIter it;
        gpointer k, v;
        unsigned kept = 0;
        g_hash_table_iter_init(&it, before);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                const char *now = g_hash_table_lookup(after, k);
                if (!now)
                        continue; /* gone meanwhile */
                if (!g_str_has_prefix(now, v) || (now[strlen(v)] != 0 && now[strlen(v)] != ' '))
                        g_error("tid %u held filters %s before the restart and %s after", GPOINTER_TO_UINT(k),
                                (char *) v, now);
                kept++;
        }
        g_assert_cmpuint(kept, >, 0);
        g_hash_table_iter_init(&it, before);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                g_auto(GStrv) ids = g_strsplit(v, " ", -1);
                for (guint i = 0; ids[i]; i++)
                        g_hash_table_add(old_ids, g_strdup(ids[i]));
        }
        g_hash_table_iter_init(&it, after);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                g_auto(GStrv) ids = g_strsplit(v, " ", -1);
                for (guint i = 0; ids[i]; i++)
                        if (ids[i][0] && !g_hash_table_contains(old_ids, ids[i]) &&
                            g_ascii_strtoull(ids[i], NULL, 10) <= old_max)
                                g_error("tid %u holds filter %s after the restart: an id the database had used (up to "
                                        "%" PRIu64 ") for another filter", GPOINTER_TO_UINT(k), ids[i], old_max);
        }
        GHashTableIter it2;
        g_hash_table_iter_init(&it2, old_ids);
        while (g_hash_table_iter_next(&it2, &k, NULL))
                g_free(k);
}

/* Shared filters, private ones, threads, TSYNC, a grandchild. */
static Scenario *restart_scenario(void) {
        Scenario *s;
        TestFilters x;
        tests_filters_init(&x);
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask root = scenario_root(s);
        g_assert_cmpint(scenario_install(s, root, x.a, x.na, 0), >=, 0);
        ScenarioTask c1 = tests_fork_install(s, root, x.b, x.nb, 0);
        ScenarioTask t1 = scenario_thread(s, c1);
        g_assert_cmpint(scenario_install(s, t1, x.c, x.nc, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        ScenarioTask c2 = tests_fork_install(s, root, x.b, x.nb, 0);
        g_assert_cmpint(tests_fork_install(s, c2, x.c, x.nc, 0), >=, 0);
        g_assert_cmpint(scenario_fork(s, c1), >=, 0);
        return s;
}

/* While the daemon is down: a process exits, a thread stacks a filter, a new process installs. */
static void restart_changes(Scenario *s) {
        TestFilters x;
        tests_filters_init(&x);
        g_assert_cmpint(scenario_exit(s, 3), ==, 0); /* c2's first thread: c2 goes, its child lives on */
        g_assert_cmpint(scenario_install(s, 2, x.a, x.na, 0), >=, 0); /* t1 stacks one more */
        g_assert_cmpint(tests_fork_install(s, scenario_root(s), x.b, x.nb, 0), >=, 0);
}

/* The tids whose stored chains the ptrace daemon must keep: the scenario's, the holder's and its
 * child's, the sharing churner's and its children's. Its identity is inferred, so how unrelated
 * tasks of the machine share filters may change between readings, and then their ids (infer.c). */
static GHashTable *tracked_tids(sd_bus *bus, const Scenario *s, const pid_t *more, size_t n_more, pid_t churner) {
        GHashTable *t = g_hash_table_new(g_direct_hash, g_direct_equal);
        for (size_t i = 0; i < scenario_n_tasks(s); i++)
                g_hash_table_add(t, GINT_TO_POINTER(scenario_task(s, (ScenarioTask) i)->tid));
        for (size_t i = 0; i < n_more; i++)
                g_hash_table_add(t, GINT_TO_POINTER(more[i]));
        g_autoptr(GArray) children = churner ? children_of(bus, churner) : NULL;
        for (guint i = 0; children && i < children->len; i++)
                g_hash_table_add(t, GINT_TO_POINTER(g_array_index(children, pid_t, i)));
        return t;
}

/* The holder keeps its ids, and its child under a lower pid has them too; the sharing churner (if
 * any) keeps its id, and its children hold it. */
static void assert_holders_kept(sd_bus *bus, pid_t holder, pid_t low, const char *holder_ids, pid_t sharer,
                                const char *sharer_ids) {
        g_autofree char *holder_now = bus_chain(bus, holder), *low_now = bus_chain(bus, low);
        g_assert_cmpstr(holder_now, ==, holder_ids);
        g_assert_cmpstr(low_now, ==, holder_ids);
        if (!sharer)
                return;
        g_autofree char *sharer_now = bus_chain(bus, sharer);
        g_assert_cmpstr(sharer_now, ==, sharer_ids);
        g_assert_cmpuint(assert_churn_shares(bus, sharer, sharer_ids), >, 0);
}

static void kill_and_reap(pid_t pid) {
        if (pid <= 0)
                return;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* The restart with the changes made while the daemon is down: the scenario's, and a child of the
 * holder under a lower pid than the holder's, which the stored state lacks. */
static pid_t restart_with_changes(BusFixture *b, Scenario *s, const Holder *h, char **args, char **env) {
        restart_changes(s);
        pid_t low = holder_fork_below(h);
        bus_fixture_start_daemon(b, args, env, 30);
        return low;
}

static void restart_keeps_ids(char **args, bool churn) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        Scenario *s = bus_fixture_start_with_scenario(&b, restart_scenario, args, env);
        if (!s)
                return;
        g_assert_cmpstr(scenario_task(s, 3)->alive ? "alive" : "gone", ==, "alive");
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        Converge conv = { .bus = bus, .root = scenario_root_pid(s), .scenario = s, .sharing = true,
                          .backend = args ? "ptrace" : NULL };
        Holder h = holder_start();
        int ready[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t sharer = churn ? spawn_sharing_churn(ready[1]) : 0;
        char x;
        g_assert_cmpint(churn ? read(ready[0], &x, 1) : 1, ==, 1);
        assert_converges_with(&conv, TESTS_PATIENCE_MS);
        assert_chain_within(bus, h.pid, 2, NULL, TESTS_PATIENCE_MS);
        if (sharer)
                assert_chain_within(bus, sharer, 1, NULL, TESTS_PATIENCE_MS);
        g_autoptr(GHashTable) before = scenario_id_chains(bus, s);
        g_autofree char *holder_ids = bus_chain(bus, h.pid), *sharer_ids = sharer ? bus_chain(bus, sharer) : NULL;
        pid_t churner = churn ? spawn_churn() : 0;
        if (churn)
                g_usleep(300 * 1000);
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        uint64_t old_max = stored_max_id(b.state_dir);
        _cleanup_(stored_done) Stored stored_before = stored_read(b.state_dir);
        pid_t low = restart_with_changes(&b, s, &h, args, env);
        sd_bus_flush_close_unref(bus);
        bus = conv.bus = bus_client_open();
        assert_converges_with(&conv, TESTS_PATIENCE_MS);
        assert_chain_within(bus, low, 2, NULL, TESTS_PATIENCE_MS);
        g_autoptr(GHashTable) after = scenario_id_chains(bus, s);
        assert_ids_kept(before, after, old_max);
        assert_holders_kept(bus, h.pid, low, holder_ids, sharer, sharer_ids);
        /* and once more, with nothing changed while it was down: every id stays; what was stored
         * before the first restart and after it agree on every task and id of the machine */
        const pid_t more[] = { h.pid, low, sharer };
        g_autoptr(GHashTable) only = args ? tracked_tids(bus, s, more, ELEMENTSOF(more), sharer) : NULL;
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        _cleanup_(stored_done) Stored stored_after = stored_read(b.state_dir);
        g_assert_cmpuint(assert_stored_ids_kept(&stored_before, &stored_after, old_max, only), >, 0);
        bus_fixture_start_daemon(&b, args, env, 30);
        sd_bus_flush_close_unref(bus);
        bus = conv.bus = bus_client_open();
        assert_converges_with(&conv, TESTS_PATIENCE_MS);
        assert_chain_within(bus, low, 2, NULL, TESTS_PATIENCE_MS);
        g_autoptr(GHashTable) again = scenario_id_chains(bus, s);
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, after);
        while (g_hash_table_iter_next(&it, &k, &v))
                g_assert_cmpstr(g_hash_table_lookup(again, k), ==, v);
        assert_holders_kept(bus, h.pid, low, holder_ids, sharer, sharer_ids);
        kill_and_reap(churner);
        kill_and_reap(sharer);
        close(ready[0]);
        close(ready[1]);
        holder_stop(&h);
        scenario_free(s);
        bus_fixture_finish(&b);
}

static void test_restart_keeps_ids(void) {
        restart_keeps_ids(NULL, false);
}

static void test_restart_keeps_ids_churn(void) {
        restart_keeps_ids(NULL, true);
}

static void test_ptrace_restart_keeps_ids(void) {
        restart_keeps_ids(ptrace_args, false);
}

static void test_ptrace_restart_keeps_ids_churn(void) {
        restart_keeps_ids(ptrace_args, true);
}

/* ---- the Manager in this process, without a bus: the test drives its loop ---- */

/* inproc_start() with a scenario whose creation the daemon has seen already. */
static Scenario *inproc_start_scenario(InProc *ip, const char *events_size) {
        if (!inproc_start(ip, events_size, NULL))
                return NULL;
        Scenario *s = tests_scenario_new();
        inproc_run(ip, inproc_watch_drained, NULL, 2000);
        return s;
}

static bool passes_above(InProc *ip, void *userdata) {
        return ip->m->stats.full_passes > GPOINTER_TO_UINT(userdata);
}

/* The head of tid in the live forest has depth chain filters (0: untracked or none). */
static unsigned live_depth(const Manager *m, pid_t tid) {
        const Forest *f = live_forest(m->live);
        const Task *t = forest_find_task(f, tid, NULL);
        return t ? (unsigned) forest_chain_length(f, t->filter_id) : 0;
}

/* A filter whose event does not fit a 4 KiB ring buffer: installing it is always a lost event. */
static void install_unsendable(Scenario *s, ScenarioTask t, int salt) {
        struct sock_filter f[PROG_MAX_INSNS];
        size_t n = scenario_filter_errno(f, SYS_acct, 1 + salt, 500);
        g_assert_cmpint(scenario_install(s, t, f, n, 0), >=, 0);
}

static Scenario *hook_scenario;

static void install_after_scan(void *userdata) {
        Manager *m = userdata;
        install_unsendable(hook_scenario, scenario_root(hook_scenario), 0);
        source_set_after_scan_hook(m->source, NULL, NULL);
}

/* An event lost while a full pass runs, after its scan: the pass cannot have seen it, so another
 * pass must follow, and the state must end with the filter. */
static void test_lost_during_pass(void) {
        InProc ip;
        if (!inproc_start(&ip, "4096", NULL))
                return;
        g_assert_cmpint(scenario_new(&hook_scenario), ==, 0);
        pid_t root = scenario_task(hook_scenario, scenario_root(hook_scenario))->tid;
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);
        unsigned passes = ip.m->stats.full_passes;
        source_set_after_scan_hook(ip.m->source, install_after_scan, ip.m);
        g_assert_cmpint(manager_full_pass(ip.m, "test"), ==, 0);
        g_assert_cmpuint(live_depth(ip.m, root), ==, 0); /* installed after the scan, its event lost */
        if (!inproc_run(&ip, passes_above, GUINT_TO_POINTER(passes + 1), TESTS_PATIENCE_MS))
                g_error("no full pass followed an event lost during a pass");
        g_assert_cmpuint(live_depth(ip.m, root), ==, 1);
        scenario_free(hook_scenario);
        hook_scenario = NULL;
        inproc_stop(&ip);
}

static bool before_resync_allowed(InProc *ip, void *userdata) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        return now + 100000 >= pacing_last_pass_end(ip->m->pacing) + PACING_RESYNC_MIN_INTERVAL_USEC;
}

/* Losses come faster than full passes may: they are coalesced into one pass no sooner than
 * PACING_RESYNC_MIN_INTERVAL_USEC after the previous one, and that pass brings the state back. */
static void test_resync_rate_limit(void) {
        InProc ip;
        Scenario *s;
        if (!inproc_start(&ip, "4096", NULL))
                return;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask c = scenario_fork(s, scenario_root(s));
        g_assert_cmpint(c, >=, 0);
        pid_t root = scenario_task(s, scenario_root(s))->tid, child = scenario_task(s, c)->tid;
        g_assert_cmpint(manager_full_pass(ip.m, "test"), ==, 0);
        unsigned passes = ip.m->stats.full_passes;

        install_unsendable(s, scenario_root(s), 0);
        g_assert_false(inproc_run(&ip, passes_above, GUINT_TO_POINTER(passes), 100));
        install_unsendable(s, c, 1);
        /* Until the interval is over, no pass, however many losses. */
        g_assert_true(inproc_run(&ip, before_resync_allowed, NULL, 5000));
        g_assert_cmpuint(ip.m->stats.full_passes, ==, passes);
        g_assert_cmpuint(live_depth(ip.m, root), ==, 0);
        g_assert_cmpuint(live_depth(ip.m, child), ==, 0);
        /* Then one pass for both. */
        g_assert_true(inproc_run(&ip, passes_above, GUINT_TO_POINTER(passes), TESTS_PATIENCE_MS));
        g_assert_cmpuint(ip.m->stats.full_passes, ==, passes + 1);
        g_assert_cmpuint(live_depth(ip.m, root), ==, 1);
        g_assert_cmpuint(live_depth(ip.m, child), ==, 1);
        /* Nothing lost since: no more passes. (The ring buffer is the whole machine's: a pass is
         * only allowed if something else on the machine did lose an event meanwhile.) */
        uint64_t lost = source_lost(ip.m->source);
        if (inproc_run(&ip, passes_above, GUINT_TO_POINTER(passes + 1), 1500) && source_lost(ip.m->source) == lost)
                g_error("a full pass ran although no event was lost");
        scenario_free(s);
        inproc_stop(&ip);
}

/* A pass at once while a background pass is under way replaces it: the background scan is
 * waited for and its result let go, so that one pass is stored, not two. */
static void test_pass_replaces_background(void) {
        InProc ip;
        if (!inproc_start(&ip, NULL, NULL))
                return;
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);
        unsigned passes = ip.m->stats.full_passes;
        g_assert_cmpint(manager_full_pass_background(ip.m, "test"), ==, 0);
        g_assert_true(source_pass_waiting(ip.m->source));
        g_assert_cmpint(manager_full_pass(ip.m, "test"), ==, 0);
        g_assert_false(source_pass_waiting(ip.m->source));
        g_assert_cmpuint(ip.m->stats.full_passes, ==, passes + 1);
        inproc_run(&ip, NULL, NULL, 300);
        g_assert_cmpuint(ip.m->stats.full_passes, ==, passes + 1);
        inproc_stop(&ip);
}

/* Once the events are in: nothing unreachable is left, and nothing reachable went. */
static void assert_retired_exactly(InProc *ip, Scenario *s, const char *after) {
        inproc_run(ip, inproc_watch_drained, NULL, 2000);
        inproc_run(ip, NULL, NULL, 50);
        const Forest *live;
        g_assert_cmpint(manager_live(ip->m, &live), ==, 0);
        for (size_t i = 0; i < live->n_filters; i++)
                if (live->filters[i]->n_tasks == 0 && live->filters[i]->n_children == 0 && !live->filters[i]->listener_id)
                        g_error("after %s: filter %" PRIu64 " left unreachable", after, live->filters[i]->id);
        tests_assert_forest_matches(live, s, true);
        /* Counted once after the pass, then kept up to date by the events. */
        g_assert_cmpuint(live_uses_rebuilds(ip->m->live), ==, 1);
}

/* The ids of the filters that the chains of the scenario's live tasks reach in the live forest. */
static GHashTable *scenario_live_filters(const Manager *m, const Scenario *s) {
        GHashTable *ids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        const Forest *f = live_forest(m->live);
        for (size_t i = 0; i < scenario_n_tasks(s); i++) {
                const ScenarioTaskInfo *t = scenario_task(s, (ScenarioTask) i);
                const Task *task = t->alive ? forest_find_task(f, t->tid, NULL) : NULL;
                for (const Filter *x = task ? forest_find_filter(f, task->filter_id) : NULL; x; x = x->parent)
                        g_hash_table_add(ids, g_memdup2(&x->id, sizeof(x->id)));
        }
        return ids;
}

/* Filters retired as their last users exit are exactly those a walk of every chain finds
 * unreachable: nested chains, shared parents, TSYNC threads, exec, a whole process tree leaving.
 * Other processes of the machine install and retire filters meanwhile: what is counted is the
 * scenario's own. */
static void test_retire_incremental(void) {
        InProc ip;
        Scenario *s;
        struct sock_filter a[16], b[16], c[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0), nb = scenario_filter_errno(b, SYS_syslog, 2, 1),
               nc = scenario_filter_errno(c, SYS_getpriority, 3, 2);
        if (!inproc_start(&ip, NULL, NULL))
                return;
        g_assert_cmpint(scenario_new(&s), ==, 0);
        ScenarioTask root = scenario_root(s);
        g_assert_cmpint(scenario_install(s, root, a, na, 0), >=, 0);
        /* A first exit makes the daemon count the uses after its pass; from then on, events keep
         * the counts. */
        ScenarioTask p0 = scenario_fork(s, root);
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);
        g_assert_cmpint(scenario_exit(s, p0), ==, 0);
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);
        inproc_run(&ip, NULL, NULL, 50);
        g_assert_cmpuint(live_uses_rebuilds(ip.m->live), ==, 1);
        ScenarioTask p1 = scenario_fork(s, root), p2 = scenario_fork(s, root);
        g_assert_cmpint(scenario_install(s, p1, b, nb, 0), >=, 0);
        ScenarioTask p3 = tests_fork_install(s, p1, c, nc, 0);
        ScenarioTask t1 = scenario_thread(s, p2), t2 = scenario_thread(s, p2);
        g_assert_cmpint(scenario_install(s, t1, b, nb, SECCOMP_FILTER_FLAG_TSYNC), >=, 0);
        g_assert_cmpint(scenario_install(s, t2, c, nc, 0), >=, 0);
        ScenarioTask p4 = tests_fork_install(s, p3, a, na, 0);
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);
        inproc_run(&ip, NULL, NULL, 100);
        g_autoptr(GHashTable) before = scenario_live_filters(ip.m, s);

        /* exec ends the other threads of a process without their exits */
        ScenarioTask p5 = scenario_fork(s, root), t5 = scenario_thread(s, p5);
        g_assert_cmpint(scenario_install(s, t5, c, nc, 0), >=, 0);
        inproc_run(&ip, inproc_watch_drained, NULL, 2000);
        g_assert_cmpint(scenario_exec_sleep(s, t5), ==, 0); /* a thread: it takes the leader's tid */
        assert_retired_exactly(&ip, s, "exec");

        const ScenarioTask gone[] = { t2, p4, p3, t1, p2, p1, t5 };
        for (size_t i = 0; i < ELEMENTSOF(gone); i++) {
                g_assert_cmpint(scenario_exit(s, gone[i]), ==, 0);
                g_autofree char *what = g_strdup_printf("exit %zu", i);
                assert_retired_exactly(&ip, s, what);
        }
        /* the scenario's filters no live task of it reaches any more are gone, and there are some */
        g_autoptr(GHashTable) after = scenario_live_filters(ip.m, s);
        GHashTableIter it;
        uint64_t *id;
        unsigned retired = 0;
        g_hash_table_iter_init(&it, before);
        while (g_hash_table_iter_next(&it, (gpointer *) &id, NULL))
                if (!g_hash_table_contains(after, id)) {
                        if (forest_find_filter(live_forest(ip.m->live), *id))
                                g_error("filter %" PRIu64 ", which no task reaches any more, was not retired", *id);
                        retired++;
                }
        g_assert_cmpuint(retired, >, 0);
        g_assert_cmpuint(live_depth(ip.m, scenario_task(s, root)->tid), ==, 1);
        g_assert_cmpuint(ip.m->stats.full_passes, ==, 1);
        scenario_free(s);
        inproc_stop(&ip);
}

/* Defect: a batch whose transaction cannot start (the database is locked by someone else) must still
 * take its events out of the ring buffer and ask for a resync, not leave them there to be read again
 * at once (a loop that starved the bus and the watchdog). */
static void test_store_busy_drains(void) {
        InProc ip;
        Scenario *s = inproc_start_scenario(&ip, NULL);
        if (!s)
                return;
        g_autofree char *path = g_build_filename(ip.dir, "state.db", NULL);
        sqlite3 *locker = NULL;
        g_assert_cmpint(sqlite3_open_v2(path, &locker, SQLITE_OPEN_READWRITE, NULL), ==, SQLITE_OK);
        g_assert_cmpint(sqlite3_exec(locker, "BEGIN IMMEDIATE", NULL, NULL, NULL), ==, SQLITE_OK);
        unsigned failed = ip.m->stats.failed_batches;

        struct sock_filter f[16];
        size_t n = scenario_filter_errno(f, SYS_acct, 4, 0);
        ScenarioTask c = tests_fork_install(s, scenario_root(s), f, n, 0);
        g_assert_true(inproc_run(&ip, inproc_watch_drained, NULL, TESTS_PATIENCE_MS));
        g_assert_cmpuint(ip.m->stats.failed_batches, >, failed);
        g_assert_cmpuint(live_depth(ip.m, scenario_task(s, c)->tid), ==, 0); /* rolled back */

        g_assert_cmpint(sqlite3_exec(locker, "ROLLBACK", NULL, NULL, NULL), ==, SQLITE_OK);
        sqlite3_close(locker);
        unsigned passes = ip.m->stats.full_passes;
        g_assert_true(inproc_run(&ip, passes_above, GUINT_TO_POINTER(passes), TESTS_PATIENCE_MS));
        g_assert_cmpuint(live_depth(ip.m, scenario_task(s, c)->tid), ==, 1);
        scenario_free(s);
        inproc_stop(&ip);
}

/* Defect: a full pass that could not be stored left the resync clock in the past, so the next
 * pass followed at once (every 200 ms). Passes that keep failing are spaced 1 s, 2 s, 4 s ... */
static void test_failed_pass_paces(void) {
        InProc ip;
        Scenario *s = inproc_start_scenario(&ip, "4096");
        if (!s)
                return;
        db_exec(ip.dir, "CREATE TRIGGER refuse BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'refused'); END");
        unsigned failed = ip.m->stats.failed_passes, passes = ip.m->stats.full_passes;
        install_unsendable(s, scenario_root(s), 0); /* lost: a resync follows, and fails */
        inproc_run(&ip, NULL, NULL, 3500);
        unsigned n_failed = ip.m->stats.failed_passes - failed;
        g_test_message("%u full passes failed in 3.5 s", n_failed);
        g_assert_cmpuint(n_failed, >=, 1);
        g_assert_cmpuint(n_failed, <=, 3);
        g_assert_cmpuint(ip.m->stats.full_passes, ==, passes);
        db_exec(ip.dir, "DROP TRIGGER refuse");
        g_assert_true(inproc_run(&ip, passes_above, GUINT_TO_POINTER(passes), 10000));
        g_assert_cmpuint(live_depth(ip.m, scenario_task(s, scenario_root(s))->tid), ==, 1);
        scenario_free(s);
        inproc_stop(&ip);
}

/* Defect: each attached filter was hashed twice (the model, then the store). Once now: as many
 * digests as new filters stored, whatever else the machine installs meanwhile. */
static void test_filter_hashed_once(void) {
        InProc ip;
        Scenario *s = inproc_start_scenario(&ip, NULL);
        if (!s)
                return;
        for (int attempt = 0;; attempt++) {
                unsigned passes = ip.m->stats.full_passes, stored = ip.m->stats.filters_stored;
                uint64_t digests = prog_digest_count();
                struct sock_filter f[16];
                size_t n = scenario_filter_errno(f, SYS_acct, 10 + attempt, 0);
                g_assert_cmpint(scenario_install(s, scenario_root(s), f, n, 0), >=, 0);
                inproc_run(&ip, inproc_watch_drained, NULL, 2000);
                inproc_run(&ip, NULL, NULL, 50);
                if (ip.m->stats.full_passes != passes && attempt < 5)
                        continue; /* a pass digests what it met: measure again */
                g_assert_cmpuint(ip.m->stats.filters_stored, >, stored);
                g_assert_cmpuint(prog_digest_count() - digests, ==, ip.m->stats.filters_stored - stored);
                break;
        }
        scenario_free(s);
        inproc_stop(&ip);
}

/* The daemon says once that it is ready, with its backend, what it found and how long it took. */
/* The parents' pidfds take the open file limit the unit sets, less a reserve; a small limit is
 * shared half and half. */
static void test_parents_cap(void) {
        g_assert_cmpuint(parents_max_watched(65536), ==, 65536 - PARENTS_FD_RESERVE);
        g_assert_cmpuint(parents_max_watched(1024), ==, 512);
        g_assert_cmpuint(parents_max_watched(RLIM_INFINITY), ==, SIZE_MAX);
}

static void test_ready_line(void) {
        if (!tests_require_root())
                return;
        if (g_test_subprocess()) {
                InProc ip;
                g_assert_true(inproc_start(&ip, NULL, NULL));
                manager_ready(ip.m);
                inproc_stop(&ip);
                return;
        }
        g_test_trap_subprocess(NULL, 120 * G_USEC_PER_SEC, 0);
        g_test_trap_assert_passed();
        g_test_trap_assert_stderr("*Ready: bpf backend, * tasks, * filters, in * ms.*");
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/daemon/startup", test_startup);
        g_test_add_func("/daemon/introspection", test_introspection);
        g_test_add_func("/daemon/live-updates", test_live_updates);
        g_test_add_func("/daemon/store-fails-mid-batch", test_store_fails_mid_batch);
        g_test_add_func("/daemon/overflow-resync", test_overflow_resync);
        g_test_add_func("/daemon/restart", test_restart);
        g_test_add_func("/daemon/term-while-starting", test_term_while_starting);
        g_test_add_func("/daemon/name-taken", test_name_taken);
        g_test_add_func("/daemon/escaped-threads", test_escaped_threads);
        g_test_add_func("/daemon/client-data", test_client_data);
        g_test_add_func("/daemon/installer-private", test_installer_private);
        g_test_add_func("/daemon/reparent", test_reparent);
        g_test_add_func("/daemon/ptrace/reparent", test_ptrace_reparent);
        g_test_add_func("/daemon/restart/keeps-ids", test_restart_keeps_ids);
        g_test_add_func("/daemon/restart/keeps-ids-under-churn", test_restart_keeps_ids_churn);
        g_test_add_func("/daemon/ptrace/restart-keeps-ids", test_ptrace_restart_keeps_ids);
        g_test_add_func("/daemon/ptrace/restart-keeps-ids-under-churn", test_ptrace_restart_keeps_ids_churn);
        g_test_add_func("/daemon/unprivileged", test_unprivileged);
        g_test_add_func("/daemon/kill-during-churn", test_kill_during_churn);
        g_test_add_func("/daemon/ptrace/startup", test_ptrace_startup);
        g_test_add_func("/daemon/ptrace/live-updates", test_ptrace_live_updates);
        g_test_add_func("/daemon/ptrace/refresh", test_ptrace_refresh);
        g_test_add_func("/daemon/ptrace/overflow-resync", test_ptrace_overflow_resync);
        g_test_add_func("/daemon/ptrace/churn", test_ptrace_churn);
        g_test_add_func("/daemon/inproc/lost-during-pass", test_lost_during_pass);
        g_test_add_func("/daemon/inproc/resync-rate-limit", test_resync_rate_limit);
        g_test_add_func("/daemon/inproc/retire-incremental", test_retire_incremental);
        g_test_add_func("/daemon/inproc/pass-replaces-background", test_pass_replaces_background);
        g_test_add_func("/daemon/inproc/store-busy-drains", test_store_busy_drains);
        g_test_add_func("/daemon/inproc/failed-pass-paces", test_failed_pass_paces);
        g_test_add_func("/daemon/inproc/filter-hashed-once", test_filter_hashed_once);
        g_test_add_func("/daemon/inproc/ready-line", test_ready_line);
        g_test_add_func("/daemon/parents-cap", test_parents_cap);
        return g_test_run();
}
