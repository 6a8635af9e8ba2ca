/* test-restore-contain.c: nothing of the daemon's reaches the caller of a restore, in the real
 * sectreed on a private dbus-daemon configured like Debian's system bus: no message carries more
 * fds than the bus allows (the rest come from TakeRestoreFds), the daemon leaves when the bus goes
 * away, a forged READY of the executor names nothing of anyone else's, and the executor runs with
 * the caller's limits, not the daemon's stdio, environment or limits. */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "plan/plan-verify.h"
#include "restore-fds.h"
#include "restore-scenarios.h"
#include "tests-util.h"

#define NOBODY 65534
#define RESTORE_CALL_TIMEOUT_USEC (120 * 1000000ULL)
/* What Debian's system bus (dbus/private-system-bus.conf.in) lets one message carry. */
#define BUS_MAX_MESSAGE_FDS 16

/* ---- the calls ---- */

typedef struct Reply {
        uint64_t id;
        bool verified;
        PlanMapping map;
        GArray *pidfds;       /* int, copies */
        GArray *listener_fds; /* int, copies */
        size_t n_message_fds; /* the most fds one message carried */
} Reply;

static void reply_done(Reply *r) {
        for (guint i = 0; r->pidfds && i < r->pidfds->len; i++)
                close(g_array_index(r->pidfds, int, i));
        for (guint i = 0; r->listener_fds && i < r->listener_fds->len; i++)
                close(g_array_index(r->listener_fds, int, i));
        if (r->pidfds)
                g_array_unref(r->pidfds);
        if (r->listener_fds)
                g_array_unref(r->listener_fds);
        plan_mapping_done(&r->map);
        *r = (Reply) {};
}

static void read_pairs(sd_bus_message *m, bool threads, PlanMapping *map) {
        uint32_t a, b;
        g_assert_cmpint(sd_bus_message_enter_container(m, 'a', "(uu)"), >, 0);
        while (sd_bus_message_read(m, "(uu)", &a, &b) > 0)
                g_assert_cmpint(threads ? plan_mapping_add_thread(map, (pid_t) a, (pid_t) b)
                                        : plan_mapping_add_process(map, (pid_t) a, (pid_t) b), ==, 0);
        g_assert_cmpint(sd_bus_message_exit_container(m), >=, 0);
}

/* "ah" into r->pidfds; returns how many. */
static size_t read_pidfds(sd_bus_message *m, Reply *r) {
        size_t n = 0;
        int fd;
        g_assert_cmpint(sd_bus_message_enter_container(m, 'a', "h"), >, 0);
        while (sd_bus_message_read(m, "h", &fd) > 0) {
                int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                g_assert_cmpint(copy, >=, 0);
                g_array_append_val(r->pidfds, copy);
                n++;
        }
        g_assert_cmpint(sd_bus_message_exit_container(m), >=, 0);
        return n;
}

/* "a(th)" into r->listener_fds; returns how many. */
static size_t read_listeners(sd_bus_message *m, Reply *r) {
        size_t n = 0;
        uint64_t id;
        int fd;
        g_assert_cmpint(sd_bus_message_enter_container(m, 'a', "(th)"), >, 0);
        while (sd_bus_message_read(m, "(th)", &id, &fd) > 0) {
                int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                g_assert_cmpint(copy, >=, 0);
                g_array_append_val(r->listener_fds, copy);
                n++;
        }
        g_assert_cmpint(sd_bus_message_exit_container(m), >=, 0);
        return n;
}

static void read_reply(sd_bus_message *m, Reply *r) {
        char **differences = NULL;
        int v;
        size_t n;

        *r = (Reply) { .pidfds = g_array_new(false, false, sizeof(int)),
                       .listener_fds = g_array_new(false, false, sizeof(int)) };
        g_assert_cmpint(sd_bus_message_read(m, "tb", &r->id, &v), >, 0);
        r->verified = v;
        g_assert_cmpint(sd_bus_message_read_strv(m, &differences), >=, 0);
        for (char **d = differences; d && *d; d++)
                g_test_message("difference: %s", *d);
        g_strfreev(differences);
        read_pairs(m, false, &r->map);
        n = read_pidfds(m, r);
        read_pairs(m, true, &r->map);
        n += read_listeners(m, r);
        r->n_message_fds = n;
}

/* TakeRestoreFds until nothing is left. */
static void take_rest(sd_bus *bus, Reply *r) {
        for (unsigned calls = 0;; calls++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
                sd_bus_error error = SD_BUS_ERROR_NULL;
                uint32_t left;
                g_assert_cmpuint(calls, <, 100);
                if (bus_client_call(bus, "TakeRestoreFds", &error, &m, "t", r->id) < 0)
                        g_error("TakeRestoreFds(%" PRIu64 "): %s: %s", r->id, error.name, error.message);
                size_t n = read_pidfds(m, r);
                n += read_listeners(m, r);
                g_assert_cmpint(sd_bus_message_read(m, "u", &left), >, 0);
                g_assert_cmpuint(n, <=, BUS_MAX_MESSAGE_FDS);
                r->n_message_fds = MAX(r->n_message_fds, n);
                if (left == 0)
                        return;
                g_assert_cmpuint(n, ==, BUS_MAX_MESSAGE_FDS);
        }
}

/* TakeRestoreFds as sectreectl calls it (client/restore-fds.c). */
static void take_rest_as_client(sd_bus *bus, Reply *r) {
        size_t n_pidfds = 0, n_listeners = 0;
        int *pidfds = NULL, *listener_fds = NULL;
        uint64_t *listener_ids = NULL;
        g_assert_cmpint(restore_fds_take(bus, r->id, &pidfds, &n_pidfds, &listener_ids, &listener_fds, &n_listeners), ==,
                        0);
        g_array_append_vals(r->pidfds, pidfds, (guint) n_pidfds);
        g_array_append_vals(r->listener_fds, listener_fds, (guint) n_listeners);
        free(pidfds);
        free(listener_fds);
        free(listener_ids);
}

/* Restore(id, {pidfds: true}) and every fd (through the client's code if as_client); 0, or a
 * negative errno with *error set. */
static int restore_fds(sd_bus *bus, uint64_t id, bool as_client, Reply *r, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        g_assert_cmpint(sd_bus_message_new_method_call(bus, &m, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                       "Restore"), >=, 0);
        g_assert_cmpint(sd_bus_message_append(m, "ta{sv}", id, 1, "pidfds", "b", 1), >=, 0);
        int k = sd_bus_call(bus, m, RESTORE_CALL_TIMEOUT_USEC, error, &reply);
        if (k < 0)
                return k;
        read_reply(reply, r);
        g_assert_cmpuint(r->n_message_fds, <=, BUS_MAX_MESSAGE_FDS);
        if (as_client)
                take_rest_as_client(bus, r);
        else
                take_rest(bus, r);
        return 0;
}

static int restore_all_fds(sd_bus *bus, uint64_t id, Reply *r, sd_bus_error *error) {
        return restore_fds(bus, id, false, r, error);
}

/* The pid a pidfd refers to, from its fdinfo. */
static pid_t pidfd_pid(int fd) {
        g_autofree char *path = g_strdup_printf("/proc/self/fdinfo/%d", fd), *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        const char *p = strstr(text, "\nPid:");
        g_assert_nonnull(p);
        return (pid_t) strtol(p + 5, NULL, 10);
}

static void release_ok(sd_bus *bus, uint64_t id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ReleaseRestore", &error, NULL, "t", id) < 0)
                g_error("ReleaseRestore(%" PRIu64 "): %s: %s", id, error.name, error.message);
}

static size_t n_restores(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ListRestores", &error, &reply, "") < 0)
                g_error("ListRestores: %s: %s", error.name, error.message);
        size_t n = 0;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(ttuuubs)"), >, 0);
        while (sd_bus_message_skip(reply, "(ttuuubs)") > 0)
                n++;
        return n;
}

/* ---- the fixture ---- */

typedef struct Fixture {
        BusFixture b;
        bool running;
        sd_bus *bus;
        Scenario *s;
        int daemon_status; /* once it exited by itself */
} Fixture;

static void fixture_setup(Fixture *fx, gconstpointer data) {
        *fx = (Fixture) {};
}

static bool fixture_start(Fixture *fx, char **env) {
        if (!bus_fixture_start_all(&fx->b, NULL, env))
                return false;
        fx->running = true;
        fx->bus = bus_client_open();
        return true;
}

static void fixture_teardown(Fixture *fx, gconstpointer data) {
        fx->bus = sd_bus_flush_close_unref(fx->bus);
        if (fx->running)
                bus_fixture_finish(&fx->b);
        else
                bus_fixture_stop(&fx->b);
        if (fx->s)
                scenario_free(fx->s);
}

#define ADD_TEST(path, func) g_test_add(path, Fixture, NULL, fixture_setup, func, fixture_teardown)

/* ---- more fds than a message may carry ---- */

#define MANY_CHILDREN 19
#define MANY_PROCESSES (MANY_CHILDREN + 2) /* and the scenario's root, and their parent */

/* A process with a filter and MANY_CHILDREN children under it: with the scenario's root, 21
 * processes, a pidfd each. */
static Scenario *many_processes(void) {
        TestFilters x;
        Scenario *s = tests_scenario_with_filters(&x);
        ScenarioTask p = tests_fork_install(s, scenario_root(s), x.a, x.na, 0);
        for (int i = 0; i < MANY_CHILDREN; i++)
                g_assert_cmpint(scenario_fork(s, p), >=, 0);
        return s;
}

typedef struct ManyFds {
        GBytes *json;
        size_t n_processes;
} ManyFds;

static void restore_many(sd_bus *bus, uint64_t id, size_t n_processes, bool as_client) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Reply r;
        if (restore_fds(bus, id, as_client, &r, &error) < 0)
                g_error("Restore of %zu processes: %s: %s", n_processes, error.name, error.message);
        g_assert_true(r.verified);
        g_assert_cmpuint(r.map.n_processes, ==, n_processes);
        g_assert_cmpuint(r.pidfds->len, ==, n_processes);
        for (size_t i = 0; i < n_processes; i++)
                g_assert_cmpint(pidfd_pid(g_array_index(r.pidfds, int, i)), ==, r.map.processes[i].b);
        /* the daemon is still on the bus, and answers */
        g_assert_cmpuint(n_restores(bus), ==, 1);
        release_ok(bus, r.id);
        reply_done(&r);
}

static void nobody_restores_many(void *userdata) {
        ManyFds *c = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        gsize n;
        const void *data = g_bytes_get_data(c->json, &n);
        uint64_t mine = bus_client_import_pipe(bus, data, n, &error);
        if (mine == 0)
                g_error("import as nobody: %s", error.message);
        restore_many(bus, mine, c->n_processes, false);
        sd_bus_flush_close_unref(bus);
}

/* sectreectl restore FILE of those processes, as nobody: verified, every process listed. */
static void sectreectl_restores_many(BusFixture *b, GBytes *json) {
        g_autofree char *dir = g_dir_make_tmp("sectree-many-XXXXXX", NULL);
        g_autofree char *file = g_build_filename(dir, "many.json", NULL);
        g_autofree char *out = NULL, *err = NULL;
        gsize n;
        const char *data = g_bytes_get_data(json, &n);
        g_assert_cmpint(chmod(dir, 0755), ==, 0);
        g_assert_true(g_file_set_contents(file, data, (gssize) n, NULL));
        g_assert_cmpint(chmod(file, 0644), ==, 0);
        char *restore[] = { (char *) g_getenv("SECTREECTL"), (char *) "--json=short", (char *) "restore", file, NULL };
        int status = bus_fixture_run(b, true, restore, &out, &err);
        g_test_message("sectreectl restore: %s%s", out, err);
        g_assert_cmpint(status, ==, 0);
        json_auto_t *doc = json_loads(out, 0, NULL);
        g_assert_nonnull(doc);
        g_assert_true(json_is_true(json_object_get(doc, "verified")));
        g_assert_cmpuint(json_array_size(json_object_get(doc, "processes")), ==, MANY_PROCESSES);
        g_autofree char *id = g_strdup_printf("%" JSON_INTEGER_FORMAT,
                                              json_integer_value(json_object_get(doc, "restore_id")));
        char *release[] = { (char *) g_getenv("SECTREECTL"), (char *) "release", id, NULL };
        g_clear_pointer(&err, g_free);
        g_assert_cmpint(bus_fixture_run(b, true, release, NULL, &err), ==, 0);
        (void) unlink(file);
        (void) rmdir(dir);
}

/* A restore of 21 processes with their pidfds, as root (taking the rest as sectreectl does) and as
 * nobody: no message carries more than 16 fds, every pidfd comes (the rest through TakeRestoreFds),
 * and the daemon stays on the bus; sectreectl restores them too. */
static void test_many_fds(Fixture *fx, gconstpointer data) {
        if (!tests_require_root())
                return;
        fx->s = many_processes();
        if (!fixture_start(fx, NULL))
                return;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = bus_client_create_ok(fx->bus, scenario_root_pid(fx->s), NULL);
        g_autoptr(GBytes) json = bus_client_export_pipe(fx->bus, id, "json", &error);
        g_assert_nonnull(json);
        restore_many(fx->bus, id, MANY_PROCESSES, true);

        ManyFds c = { .json = json, .n_processes = MANY_PROCESSES };
        g_assert_cmpint(tests_as_nobody(nobody_restores_many, &c), ==, 0);
        sectreectl_restores_many(&fx->b, json);
        g_assert_cmpuint(n_restores(fx->bus), ==, 0);
}

/* ---- the bus goes away ---- */

static bool daemon_exited(void *userdata) {
        Fixture *fx = userdata;
        int status;
        if (waitpid(fx->b.daemon_pid, &status, WNOHANG) != fx->b.daemon_pid)
                return false;
        fx->daemon_status = status;
        fx->b.daemon_pid = 0;
        fx->running = false;
        return true;
}

/* dbus-daemon dies: sectreed exits with an error status (not a signal), so that systemd restarts it. */
static void test_bus_lost(Fixture *fx, gconstpointer data) {
        if (!fixture_start(fx, NULL))
                return;
        fx->bus = sd_bus_flush_close_unref(fx->bus);
        g_assert_cmpint(kill(fx->b.bus_pid, SIGKILL), ==, 0);
        g_assert_cmpint(waitpid(fx->b.bus_pid, NULL, 0), ==, fx->b.bus_pid);
        fx->b.bus_pid = 0;
        if (!tests_wait_for(daemon_exited, fx, TESTS_PATIENCE_MS))
                g_error("sectreed stayed alive off the bus");
        g_assert_true(WIFEXITED(fx->daemon_status));
        g_assert_cmpint(WEXITSTATUS(fx->daemon_status), !=, 0);
}

/* ---- a forged READY ---- */

typedef struct Forged {
        GBytes *json;
        pid_t exec_pid;      /* a process of the snapshot */
        const char *setuid;  /* a setuid-root sleep */
} Forged;

/* Restore(id, {exec: {pid: ["hidden", setuid]}}): the forged executor's READY names a process
 * below its root, made after the call, that exec'd a setuid-root program: not the caller's. The
 * restore fails, naming it by its pid only. */
static void restore_hidden_refused(sd_bus *bus, uint64_t id, pid_t exec_pid, const char *setuid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(sd_bus_message_new_method_call(bus, &m, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                       "Restore"), >=, 0);
        g_assert_cmpint(sd_bus_message_append(m, "t", id), >=, 0);
        g_assert_cmpint(sd_bus_message_open_container(m, 'a', "{sv}"), >=, 0);
        g_assert_cmpint(sd_bus_message_append(m, "{sv}", "exec", "a{uas}", 1, (uint32_t) exec_pid, 2, "hidden", setuid),
                        >=, 0);
        g_assert_cmpint(sd_bus_message_close_container(m), >=, 0);
        g_assert_cmpint(sd_bus_call(bus, m, RESTORE_CALL_TIMEOUT_USEC, &error, &reply), <, 0);
        g_test_message("%s: %s", error.name, error.message);
        g_assert_cmpstr(error.name, ==, "org.sectree1.Error.RestoreFailed");
        g_assert_nonnull(strstr(error.message, "which this restore did not create"));
        sd_bus_error_free(&error);
}

/* Restore(id) fails: the forged READY is refused, naming the task, before anything is described. */
static void restore_refused(sd_bus *bus, uint64_t id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Reply r;
        g_assert_cmpint(restore_all_fds(bus, id, &r, &error), <, 0);
        g_test_message("%s: %s", error.name, error.message);
        g_assert_cmpstr(error.name, ==, "org.sectree1.Error.RestoreFailed");
        g_assert_nonnull(strstr(error.message, "which this restore did not create"));
        sd_bus_error_free(&error);
}

static void nobody_forges(void *userdata) {
        Forged *c = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        gsize n;
        const void *data = g_bytes_get_data(c->json, &n);
        uint64_t mine = bus_client_import_pipe(bus, data, n, &error);
        if (mine == 0)
                g_error("import as nobody: %s", error.message);
        restore_refused(bus, mine);
        restore_hidden_refused(bus, mine, c->exec_pid, c->setuid);
        sd_bus_flush_close_unref(bus);
}

static bool no_restores(void *userdata) {
        return n_restores(userdata) == 0;
}

/* An executor whose READY names the daemon itself (root's, not a descendant of the restore root,
 * older than the restore): the restore is refused, for root and for nobody; and for nobody, one
 * whose READY names a process below the root, made after the call, but running a setuid-root
 * program. */
static void test_forged_ready(Fixture *fx, gconstpointer data) {
        if (!tests_require_root())
                return;
        TestFilters x;
        fx->s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(fx->s, scenario_root(fx->s), x.a, x.na, 0);
        g_autofree char *forge = g_strdup_printf("SECTREE_RESTORE=%s", g_getenv("SECTREE_FORGE_EXECUTOR"));
        char *env[] = { forge, NULL };
        if (!fixture_start(fx, env))
                return;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = bus_client_create_ok(fx->bus, scenario_root_pid(fx->s), NULL);
        g_autoptr(GBytes) json = bus_client_export_pipe(fx->bus, id, "json", &error);
        g_assert_nonnull(json);
        restore_refused(fx->bus, id);
        g_autofree char *dir = g_dir_make_tmp("sectree-setuid-XXXXXX", NULL);
        g_autofree char *setuid = g_build_filename(dir, "sleep", NULL);
        g_autofree char *sleep_bin = NULL;
        gsize size;
        g_assert_true(g_file_get_contents("/bin/sleep", &sleep_bin, &size, NULL));
        g_assert_true(g_file_set_contents(setuid, sleep_bin, (gssize) size, NULL));
        g_assert_cmpint(chmod(dir, 0755), ==, 0);
        g_assert_cmpint(chmod(setuid, 04755), ==, 0);
        Forged c = { .json = json, .exec_pid = scenario_task(fx->s, a)->tgid, .setuid = setuid };
        int status = tests_as_nobody(nobody_forges, &c);
        (void) unlink(setuid);
        (void) rmdir(dir);
        g_assert_cmpint(status, ==, 0);
        g_assert_true(tests_wait_for(no_restores, fx->bus, TESTS_PATIENCE_MS));
}

/* ---- the caller's context, not the daemon's ---- */

#define CALLER_NOFILE_SOFT 200
#define CALLER_NOFILE_HARD 300
#define CALLER_NPROC_SOFT 1000
#define CALLER_NPROC_HARD 1001
#define CALLER_CORE_HARD 4096

/* The soft and hard values of a row of /proc/PID/limits ("unlimited": RLIM_INFINITY). */
static void read_limit(pid_t pid, const char *row, rlim_t *soft, rlim_t *hard) {
        g_autofree char *path = g_strdup_printf("/proc/%d/limits", (int) pid), *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        const char *p = strstr(text, row);
        g_assert_nonnull(p);
        g_auto(GStrv) words = g_strsplit_set(p + strlen(row), " ", -1);
        rlim_t v[2];
        int n = 0;
        for (char **w = words; *w && n < 2; w++)
                if (**w)
                        v[n++] = streq(*w, "unlimited") ? RLIM_INFINITY : g_ascii_strtoull(*w, NULL, 10);
        g_assert_cmpint(n, ==, 2);
        *soft = v[0];
        *hard = v[1];
}

static void assert_limits(pid_t pid, const char *who) {
        rlim_t soft, hard;
        g_test_message("limits of %s %d", who, (int) pid);
        read_limit(pid, "Max processes", &soft, &hard);
        g_assert_cmpuint(soft, ==, CALLER_NPROC_SOFT);
        g_assert_cmpuint(hard, ==, CALLER_NPROC_HARD);
        read_limit(pid, "Max open files", &soft, &hard);
        g_assert_cmpuint(hard, ==, CALLER_NOFILE_HARD);
        read_limit(pid, "Max core file size", &soft, &hard);
        g_assert_cmpuint(soft, ==, 0);
        g_assert_cmpuint(hard, ==, CALLER_CORE_HARD);
}

static void assert_devnull(pid_t pid, int fd) {
        g_autofree char *path = g_strdup_printf("/proc/%d/fd/%d", (int) pid, fd);
        g_autofree char *target = g_file_read_link(path, NULL);
        g_assert_cmpstr(target, ==, "/dev/null");
}

static pid_t parent_of(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int) pid), *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        const char *p = strstr(text, "\nPPid:");
        g_assert_nonnull(p);
        return (pid_t) strtol(p + 6, NULL, 10);
}

/* The restore's root (ListRestores) */
static pid_t restore_root(sd_bus *bus, uint64_t id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t rid, snapshot;
        uint32_t owner, root, procs;
        const char *state;
        int v;
        if (bus_client_call(bus, "ListRestores", &error, &reply, "") < 0)
                g_error("ListRestores: %s: %s", error.name, error.message);
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(ttuuubs)"), >, 0);
        while (sd_bus_message_read(reply, "(ttuuubs)", &rid, &snapshot, &owner, &root, &procs, &v, &state) > 0)
                if (rid == id)
                        return (pid_t) root;
        g_error("restore %" PRIu64 " is not listed", id);
}

typedef struct Context {
        GBytes *json;
} Context;

/* As nobody, under limits of its own: the executor and the restored tasks have them, stdio on
 * /dev/null and an environment with PATH only. */
static void nobody_restores_in_context(void *userdata) {
        Context *c = userdata;
        struct rlimit nofile = { CALLER_NOFILE_SOFT, CALLER_NOFILE_HARD }, nproc = { CALLER_NPROC_SOFT, CALLER_NPROC_HARD };
        struct rlimit core = { 0, CALLER_CORE_HARD };
        g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &nofile), ==, 0);
        g_assert_cmpint(setrlimit(RLIMIT_NPROC, &nproc), ==, 0);
        g_assert_cmpint(setrlimit(RLIMIT_CORE, &core), ==, 0);
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        gsize n;
        const void *data = g_bytes_get_data(c->json, &n);
        uint64_t mine = bus_client_import_pipe(bus, data, n, &error);
        Reply r;
        if (mine == 0)
                g_error("import as nobody: %s", error.message);
        if (restore_all_fds(bus, mine, &r, &error) < 0)
                g_error("Restore as nobody: %s: %s", error.name, error.message);
        pid_t root = restore_root(bus, r.id), executor = parent_of(root);
        g_test_message("executor %d, restore root %d", (int) executor, (int) root);

        assert_devnull(executor, STDOUT_FILENO);
        assert_devnull(executor, STDERR_FILENO);
        g_autofree char *path = g_strdup_printf("/proc/%d/environ", (int) executor), *env = NULL;
        gsize env_size;
        g_assert_true(g_file_get_contents(path, &env, &env_size, NULL));
        g_assert_cmpstr(env, ==, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        g_assert_cmpuint(env_size, ==, strlen(env) + 1);

        assert_limits(executor, "the executor");
        for (size_t i = 0; i < r.map.n_processes; i++) {
                assert_limits(r.map.processes[i].b, "restored process");
                for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
                        assert_devnull(r.map.processes[i].b, fd);
        }
        release_ok(bus, r.id);
        reply_done(&r);
        sd_bus_flush_close_unref(bus);
}

static void test_caller_context(Fixture *fx, gconstpointer data) {
        if (!tests_require_root())
                return;
        TestFilters x;
        fx->s = tests_scenario_with_filters(&x);
        ScenarioTask a = tests_fork_install(fx->s, scenario_root(fx->s), x.a, x.na, 0);
        (void) tests_fork_install(fx->s, a, x.b, x.nb, 0);
        if (!fixture_start(fx, NULL))
                return;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = bus_client_create_ok(fx->bus, scenario_root_pid(fx->s), NULL);
        g_autoptr(GBytes) json = bus_client_export_pipe(fx->bus, id, "json", &error);
        g_assert_nonnull(json);
        Context c = { .json = json };
        g_assert_cmpint(tests_as_nobody(nobody_restores_in_context, &c), ==, 0);
}

int main(int argc, char *argv[]) {
        tests_init(&argc, &argv);
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        ADD_TEST("/restore-contain/many-fds", test_many_fds);
        ADD_TEST("/restore-contain/bus-lost", test_bus_lost);
        ADD_TEST("/restore-contain/forged-ready", test_forged_ready);
        ADD_TEST("/restore-contain/caller-context", test_caller_context);
        return g_test_run();
}
