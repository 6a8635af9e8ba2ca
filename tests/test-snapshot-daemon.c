/* test-snapshot-daemon.c: snapshots in the real sectreed on a private dbus-daemon: create, list,
 * export (file and pipe), import, delete, signals, restarts, access as nobody, quotas, hostile
 * imports, transfer deadlines, and consistency under churn */
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "core/forest-iso.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot-json.h"
#include "snapshot-samples.h"
#include "store/state-migrations.h"
#include "tests-util.h"

#define DEST "org.sectree1"
#define PATH "/org/sectree1"
#define IFACE "org.sectree1.Manager"
#define NOBODY 65534

typedef struct ListedSnapshot {
        uint64_t id, created;
        char name[300], backend[16], identity[16];
        uint32_t owner, root, processes, threads, filters;
} ListedSnapshot;

/* ListSnapshots into an array of ListedSnapshot. */
static GArray *list_snapshots(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ListSnapshots", &error, &reply, "") < 0)
                g_error("ListSnapshots: %s", error.message);
        GArray *a = g_array_new(false, true, sizeof(ListedSnapshot));
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(tstuuuuuss)"), >, 0);
        ListedSnapshot x;
        const char *name, *backend, *identity;
        while (sd_bus_message_read(reply, "(tstuuuuuss)", &x.id, &name, &x.created, &x.owner, &x.root, &x.processes,
                                   &x.threads, &x.filters, &backend, &identity) > 0) {
                g_strlcpy(x.name, name, sizeof(x.name));
                g_strlcpy(x.backend, backend, sizeof(x.backend));
                g_strlcpy(x.identity, identity, sizeof(x.identity));
                g_array_append_val(a, x);
        }
        return a;
}

static const ListedSnapshot *find_listed(GArray *a, uint64_t id) {
        for (guint i = 0; i < a->len; i++)
                if (g_array_index(a, ListedSnapshot, i).id == id)
                        return &g_array_index(a, ListedSnapshot, i);
        return NULL;
}

static GBytes *export_pipe_ok(sd_bus *bus, uint64_t id, const char *format) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        GBytes *b = bus_client_export_pipe(bus, id, format, &error);
        if (!b)
                g_error("ExportSnapshot(%" PRIu64 ", %s): %s: %s", id, format, error.name, error.message);
        return b;
}

/* ExportSnapshot into a new regular file at path. */
static int export_file(sd_bus *bus, uint64_t id, const char *format, const char *path, sd_bus_error *error) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        int r = bus_client_call(bus, "ExportSnapshot", error, NULL, "ths", id, fd, format);
        close(fd);
        return r;
}

/* ImportSnapshot from a regular file holding data. 0 with *error set on failure. */
static uint64_t import_file(sd_bus *bus, const char *dir, const void *data, size_t size, sd_bus_error *error) {
        g_autofree char *path = g_build_filename(dir, "import", NULL);
        g_assert_true(g_file_set_contents(path, data, (gssize) size, NULL));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t id = 0;
        if (bus_client_call(bus, "ImportSnapshot", error, &reply, "h", fd) >= 0)
                g_assert_cmpint(sd_bus_message_read(reply, "t", &id), >, 0);
        close(fd);
        unlink(path);
        return id;
}

static Forest *read_snapshot(GBytes *b) {
        Forest *f = NULL;
        g_autofree char *error = NULL;
        gsize size;
        const void *data = g_bytes_get_data(b, &size);
        if (snapshot_read_data(data, size, &f, &error) < 0)
                g_error("the export does not read back: %s", error ? error : "?");
        return f;
}

static json_t *parse_json(GBytes *b) {
        gsize size;
        const char *data = g_bytes_get_data(b, &size);
        json_error_t e;
        json_t *doc = json_loadb(data, size, 0, &e);
        if (!doc)
                g_error("the JSON export does not parse: %s", e.text);
        return doc;
}

static Scenario *listener_scenario(void) {
        Scenario *s;
        struct sock_filter a[16], b[16], c[16];
        size_t na = scenario_filter_errno(a, SYS_acct, 1, 0), nb = scenario_filter_errno(b, SYS_getpriority, 2, 1);
        size_t nc = tests_filter_notify(c, SYS_syslog);
        g_assert_cmpint(scenario_new(&s), ==, 0);
        g_assert_cmpint(scenario_install(s, scenario_root(s), a, na, 0), >=, 0);
        ScenarioTask child = tests_fork_install(s, scenario_root(s), b, nb, SECCOMP_FILTER_FLAG_LOG);
        g_assert_cmpint(scenario_thread(s, child), >, 0);
        ScenarioTask other = scenario_fork(s, scenario_root(s));
        int node = scenario_install(s, other, c, nc, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        g_assert_cmpint(node, >=, 0);
        g_assert_cmpint(scenario_share_listener(s, node, scenario_root(s)), >=, 0);
        return s;
}

static char *state_query(BusFixture *b, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static char *state_query(BusFixture *b, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *sql = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        g_autofree char *db = g_build_filename(b->state_dir, "state.db", NULL);
        return tests_sqlite_query(db, sql);
}

/* ---- round trip ---- */

/* The live chain of a thread, as a string of ids. */
static char *live_chain(sd_bus *bus, pid_t tid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "GetTaskChain", &error, &reply, "u", (uint32_t) tid) < 0)
                g_error("GetTaskChain(%d): %s", tid, error.message);
        GString *chain = g_string_new(NULL);
        uint64_t id;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "t"), >, 0);
        while (sd_bus_message_read(reply, "t", &id) > 0)
                g_string_append_printf(chain, " %" PRIu64, id);
        return g_string_free(chain, false);
}

static void assert_round_trip(BusFixture *b, sd_bus *bus, Scenario *s, const char *consistency) {
        g_autofree char *dir = g_dir_make_tmp("sectree-snap-XXXXXX", NULL);
        pid_t child = scenario_task(s, 1)->tid;
        g_autofree char *live_before = live_chain(bus, child);
        uint64_t id = bus_client_create_ok(bus, scenario_root_pid(s), "round trip");

        g_autoptr(GArray) listed = list_snapshots(bus);
        const ListedSnapshot *l = find_listed(listed, id);
        g_assert_nonnull(l);
        g_assert_cmpstr(l->name, ==, "round trip");
        g_assert_cmpuint(l->root, ==, (uint32_t) scenario_root_pid(s));
        g_assert_cmpuint(l->owner, ==, 0);
        g_assert_cmpuint(l->processes, ==, 3);
        g_assert_cmpuint(l->threads, ==, 4);
        g_assert_cmpuint(l->filters, ==, 3);
        g_assert_cmpuint(l->created, >, 0);

        /* the stored rows, as an administrator reads them */
        g_autofree char *rows = state_query(b, "SELECT count(*), (SELECT consistency FROM snapshots WHERE id = %" PRIu64
                                               ") FROM snapshot_threads WHERE snapshot = %" PRIu64, id, id);
        g_autofree char *want_rows = g_strdup_printf("4|%s", consistency);
        g_assert_cmpstr(rows, ==, want_rows);

        /* sqlite into a file: what it holds is what was built */
        g_autofree char *file = g_build_filename(dir, "a.sqlite", NULL);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (export_file(bus, id, "sqlite", file, &error) < 0)
                g_error("ExportSnapshot sqlite: %s", error.message);
        g_autoptr(Forest) f = NULL;
        g_autofree char *why = NULL;
        if (snapshot_read_path(file, &f, &why) < 0)
                g_error("the sqlite export does not read back: %s", why ? why : "?");
        tests_assert_forest_matches(f, s, streq(l->identity, "exact"));
        g_assert_cmpuint(f->n_listeners, ==, 1);
        g_assert_cmpuint(f->listeners[0]->n_holders, ==, 2);
        g_assert_cmpstr(f->snapshot.name, ==, "round trip");
        g_assert_cmpstr(snapshot_consistency_to_string(f->snapshot.consistency), ==, consistency);

        /* import it (from a pipe), export both as JSON: the same document */
        g_autofree char *image = NULL;
        gsize size;
        g_assert_true(g_file_get_contents(file, &image, &size, NULL));
        uint64_t id2 = bus_client_import_pipe(bus, image, size, &error);
        if (id2 == 0)
                g_error("ImportSnapshot: %s: %s", error.name, error.message);
        g_assert_cmpuint(id2, >, id);
        g_autoptr(GBytes) j1 = export_pipe_ok(bus, id, "json"), j2 = export_pipe_ok(bus, id2, "json");
        json_t *d1 = parse_json(j1), *d2 = parse_json(j2);
        if (!json_equal(d1, d2))
                g_error("the JSON export of the imported snapshot differs:\n%.*s\n%.*s", (int) g_bytes_get_size(j1),
                        (const char *) g_bytes_get_data(j1, NULL), (int) g_bytes_get_size(j2),
                        (const char *) g_bytes_get_data(j2, NULL));
        json_decref(d1);
        json_decref(d2);
        g_autofree char *origin = state_query(b, "SELECT origin FROM snapshots WHERE id = %" PRIu64, id2);
        g_assert_cmpstr(origin, ==, "imported");
        /* taking snapshots left the live state as it was */
        g_autofree char *live_after = live_chain(bus, child);
        g_assert_cmpstr(live_before, ==, live_after);
        g_assert_cmpuint(strlen(live_after), >, 0);
        unlink(file);
        g_assert_cmpint(rmdir(dir), ==, 0);
}

static void round_trip_with(char **args, char **env, const char *consistency) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, listener_scenario, args, env);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        assert_round_trip(&b, bus, s, consistency);
        scenario_free(s);
        bus_fixture_stop(&b);
}

static void test_round_trip(void) {
        round_trip_with(NULL, NULL, "iterator");
}

static void test_ptrace_round_trip(void) {
        char *args[] = { (char *) "--backend=ptrace", NULL };
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        round_trip_with(args, env, "frozen");
}

/* ---- arguments ---- */

static void test_arguments(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, listener_scenario, NULL, NULL);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint32_t root = (uint32_t) scenario_root_pid(s);

        g_assert_cmpint(bus_client_call(bus, "CreateSnapshot", &error, NULL, "ua{sv}", root, 1, "colour", "s", "red"), <, 0);
        g_assert_nonnull(strstr(error.message, "colour"));
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpint(bus_client_call(bus, "CreateSnapshot", &error, NULL, "ua{sv}", root, 1, "include_argv", "s", "no"), <, 0);
        g_assert_nonnull(strstr(error.message, "include_argv"));
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpint(bus_client_call(bus, "CreateSnapshot", &error, NULL, "ua{sv}", root, 1, "name", "u", 7), <, 0);
        g_assert_nonnull(strstr(error.message, "name"));
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_autofree char *long_name = g_strnfill(SNAPSHOT_MAX_NAME + 1, 'x');
        g_assert_cmpint(bus_client_call(bus, "CreateSnapshot", &error, NULL, "ua{sv}", root, 1, "name", "s", long_name), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_cmpuint(list_snapshots(bus)->len, ==, 0);

        /* a pid that does not exist (pid_max is at most 4194304), a thread that is not a process */
        g_assert_cmpuint(bus_client_create_snapshot(bus, 4194304 + 7, NULL, &error), ==, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchTask");
        pid_t gone = fork();
        if (gone == 0)
                _exit(0);
        waitpid(gone, NULL, 0);
        g_assert_cmpuint(bus_client_create_snapshot(bus, gone, NULL, &error), ==, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchTask");

        /* include_argv: false leaves argv empty; the default keeps it */
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t bare = 0, full = bus_client_create_ok(bus, (pid_t) root, NULL);
        g_assert_cmpint(bus_client_call(bus, "CreateSnapshot", &error, &reply, "ua{sv}", root, 1, "include_argv", "b", 0), >=, 0);
        g_assert_cmpint(sd_bus_message_read(reply, "t", &bare), >, 0);
        g_autoptr(GBytes) jf = export_pipe_ok(bus, full, "json"), jb = export_pipe_ok(bus, bare, "json");
        g_autoptr(Forest) ff = read_snapshot(jf), fb = read_snapshot(jb);
        Process *pf = forest_find_process(ff, (pid_t) root), *pb = forest_find_process(fb, (pid_t) root);
        g_assert_nonnull(pf);
        g_assert_nonnull(pb);
        g_assert_true(pf->argv && pf->argv[0]);
        g_assert_true(!pb->argv || !pb->argv[0]);
        g_assert_null(ff->snapshot.name);

        /* formats */
        g_assert_null(bus_client_export_pipe(bus, full, "xml", &error));
        bus_client_assert_error(&error, SD_BUS_ERROR_INVALID_ARGS);
        g_assert_null(bus_client_export_pipe(bus, 9999, "json", &error));
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchSnapshot");
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* ---- signals, delete, restart ---- */

/* SnapshotCreated and SnapshotDeleted as lines "created ID 'NAME' OWNER" and "deleted ID". */
static char *signal_line(sd_bus_message *m) {
        const char *member = sd_bus_message_get_member(m), *name;
        uint64_t id;
        uint32_t owner;
        if (streq(member, "SnapshotCreated") && sd_bus_message_read(m, "tsu", &id, &name, &owner) > 0)
                return g_strdup_printf("created %" PRIu64 " '%s' %u", id, name, owner);
        if (streq(member, "SnapshotDeleted") && sd_bus_message_read(m, "t", &id) > 0)
                return g_strdup_printf("deleted %" PRIu64, id);
        return NULL;
}

static void test_lifecycle(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, listener_scenario, NULL, NULL);
        if (!s)
                return;
        sd_bus *bus = bus_client_open();
        BusSignalLog log;
        bus_signal_log_start(&log, bus, signal_line);
        uint64_t a = bus_client_create_ok(bus, scenario_root_pid(s), "kept"), d = bus_client_create_ok(bus, scenario_root_pid(s), NULL);
        bus_signal_log_assert(&log, bus, "created %" PRIu64 " 'kept' 0", a);
        bus_signal_log_assert(&log, bus, "created %" PRIu64 " '' 0", d);
        g_autoptr(GBytes) before = export_pipe_ok(bus, a, "json");
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", NULL, NULL, "t", d), >=, 0);
        bus_signal_log_assert(&log, bus, "deleted %" PRIu64, d);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", &error, NULL, "t", d), <, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchSnapshot");
        g_assert_null(bus_client_export_pipe(bus, d, "json", &error));
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchSnapshot");
        g_autofree char *left = state_query(&b, "SELECT count(*) FROM snapshot_filters WHERE snapshot = %" PRIu64, d);
        g_assert_cmpstr(left, ==, "0");
        sd_bus_flush_close_unref(bus);

        /* a restart keeps the snapshot as it was; ids are not reused */
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        bus_fixture_start_daemon(&b, NULL, NULL, 30);
        bus = bus_client_open();
        g_autoptr(GArray) listed = list_snapshots(bus);
        g_assert_cmpuint(listed->len, ==, 1);
        g_assert_nonnull(find_listed(listed, a));
        g_autoptr(GBytes) after = export_pipe_ok(bus, a, "json");
        g_assert_true(g_bytes_equal(before, after));
        uint64_t c = bus_client_create_ok(bus, scenario_root_pid(s), NULL);
        g_assert_cmpuint(c, >, d);
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", NULL, NULL, "t", a), >=, 0);
        g_autoptr(GArray) rest = list_snapshots(bus);
        g_assert_cmpuint(rest->len, ==, 1);
        g_assert_nonnull(find_listed(rest, c));
        sd_bus_flush_close_unref(bus);
        g_ptr_array_unref(log.lines);
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* A state database of schema version 1 (before snapshots) is migrated at start. */
static void test_upgrade(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        Scenario *s = listener_scenario();
        tests_ensure_tracefs();
        bus_fixture_start_bus(&b);
        g_assert_cmpint(g_mkdir_with_parents(b.state_dir, 0755), ==, 0);
        g_autofree char *db = g_build_filename(b.state_dir, "state.db", NULL);
        g_autofree char *v1 = g_build_filename(SECTREE_SOURCE_DIR, "schema", "state-001.sql", NULL);
        g_autofree char *sql = NULL;
        g_assert_true(g_file_get_contents(v1, &sql, NULL, NULL));
        g_autofree char *script = g_strdup_printf("PRAGMA application_id = 1397048148; BEGIN; %s; PRAGMA user_version = 1; "
                                                  "COMMIT;", sql);
        char *argv[] = { (char *) "sqlite3", db, script, NULL };
        g_autofree char *out = NULL, *err = NULL;
        if (tests_run_capture(argv, &out, &err) != 0)
                g_error("making a version 1 database: %s", err);
        bus_fixture_start_daemon(&b, NULL, NULL, 30);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        uint64_t id = bus_client_create_ok(bus, scenario_root_pid(s), NULL);
        g_autoptr(GBytes) json = export_pipe_ok(bus, id, "json");
        g_autoptr(Forest) f = read_snapshot(json);
        tests_assert_forest_matches(f, s, true);
        g_autofree char *version = tests_sqlite_query(db, "PRAGMA user_version");
        g_assert_cmpint(atoi(version), ==, STATE_MIGRATIONS_COUNT);
        g_autofree char *live = tests_sqlite_query(db, "SELECT count(*) > 0 FROM filters");
        g_assert_cmpstr(live, ==, "1");
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* ---- hostile imports and deadlines ---- */

static void assert_refused(sd_bus *bus, const char *dir, const void *data, size_t size, const char *want) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        for (int via_pipe = 0; via_pipe < 2; via_pipe++) {
                uint64_t id = via_pipe ? bus_client_import_pipe(bus, data, size, &error) : import_file(bus, dir, data, size, &error);
                if (id != 0)
                        g_error("a hostile import (%s) was stored as %" PRIu64, want, id);
                if (!streq(error.name, "org.sectree1.Error.InvalidSnapshot"))
                        g_error("hostile import (%s): %s: %s", want, error.name, error.message);
                if (!strstr(error.message, want) || !*error.message)
                        g_error("hostile import: the message '%s' does not say '%s'", error.message, want);
                g_test_message("refused (%s): %s", via_pipe ? "pipe" : "file", error.message);
                sd_bus_error_free(&error);
        }
}

/* A JSON export with filters[0] and filters[1] each the other's parent. */
static char *json_with_parent_cycle(GBytes *export) {
        json_t *doc = parse_json(export), *filters = json_object_get(doc, "filters");
        g_assert_cmpuint(json_array_size(filters), >=, 2);
        json_t *a = json_array_get(filters, 0), *b = json_array_get(filters, 1);
        json_object_set(a, "parent", json_object_get(b, "id"));
        json_object_set(b, "parent", json_object_get(a, "id"));
        char *s = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        return s;
}

/* Writes 65 MiB of spaces into fd, then exits. */
static pid_t spawn_flood(int fd) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                static char buf[1 << 16];
                memset(buf, ' ', sizeof(buf));
                int flags = fcntl(fd, F_GETFL);
                fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
                for (int i = 0; i < 65 * 16; i++)
                        if (write(fd, buf, sizeof(buf)) < 0)
                                _exit(0);
                _exit(0);
        }
        return pid;
}

static void test_hostile_import(void) {
        BusFixture b;
        Scenario *s = bus_fixture_start_with_scenario(&b, listener_scenario, NULL, NULL);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_autofree char *dir = g_dir_make_tmp("sectree-snap-XXXXXX", NULL);
        uint64_t id = bus_client_create_ok(bus, scenario_root_pid(s), NULL);
        g_autoptr(GBytes) json = export_pipe_ok(bus, id, "json"), sqlite = export_pipe_ok(bus, id, "sqlite");
        g_autofree char *before = state_query(&b, "SELECT count(*), (SELECT count(*) FROM snapshot_filters) FROM snapshots");

        static const char garbage[] = "this is not a snapshot \x01\x02\xff";
        assert_refused(bus, dir, garbage, sizeof(garbage), "");
        assert_refused(bus, dir, "", 0, "");
        gsize n;
        const char *image = g_bytes_get_data(sqlite, &n);
        assert_refused(bus, dir, image, n / 2, "");
        assert_refused(bus, dir, image, 4096 + 100, "");
        assert_refused(bus, dir, image, 2 * 4096, ""); /* whole pages, but fewer than the header says */
        g_autofree char *cycle = json_with_parent_cycle(json);
        assert_refused(bus, dir, cycle, strlen(cycle), "cycle");
        /* the JSON with one byte less is cut off */
        const char *text = g_bytes_get_data(json, &n);
        assert_refused(bus, dir, text, n - 3, "");

        /* more than 64 MiB from a pipe: refused once the limit is passed */
        int p[2];
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        pid_t flood = spawn_flood(p[1]);
        close(p[1]);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(bus, "ImportSnapshot", &error, &reply, "h", p[0]), <, 0);
        close(p[0]);
        g_assert_nonnull(strstr(error.message, "64 MiB"));
        bus_client_assert_error(&error, "org.sectree1.Error.InvalidSnapshot");
        kill(flood, SIGKILL);
        waitpid(flood, NULL, 0);

        /* nothing was stored, and the daemon still serves */
        g_autofree char *after = state_query(&b, "SELECT count(*), (SELECT count(*) FROM snapshot_filters) FROM snapshots");
        g_assert_cmpstr(before, ==, after);
        g_autoptr(GArray) listed = list_snapshots(bus);
        g_assert_cmpuint(listed->len, ==, 1);
        g_assert_cmpint(rmdir(dir), ==, 0);
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* A pipe nobody writes into and one nobody reads from: the daemon keeps serving, and gives up
 * after its deadline. */
static void test_deadlines(void) {
        BusFixture b;
        char *env[] = { (char *) "SECTREE_SNAPSHOT_TIMEOUT_USEC=1500000", NULL };
        Scenario *s = bus_fixture_start_with_scenario(&b, listener_scenario, NULL, env);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        uint64_t id = bus_client_create_ok(bus, scenario_root_pid(s), NULL);

        int in[2], out[2];
        g_assert_cmpint(pipe2(in, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(out, O_CLOEXEC), ==, 0);
        g_assert_cmpint(fcntl(out[1], F_SETPIPE_SZ, 4096), >=, 4096);
        BusPending import = {}, export = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "ImportSnapshot", bus_client_on_reply, &import,
                                                 "h", in[0]), >=, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "ExportSnapshot", bus_client_on_reply, &export,
                                                 "ths", id, out[1], "sqlite"), >=, 0);
        /* while both wait, other calls are answered (within the call timeout) */
        g_autoptr(GArray) listed = list_snapshots(bus);
        g_assert_cmpuint(listed->len, ==, 1);
        g_assert_false(import.done || export.done);
        gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (!(import.done && export.done) && g_get_monotonic_time() < end)
                bus_client_pump(bus, -1, 0);
        g_assert_true(import.done && export.done);
        bus_client_assert_error(&import.error, SD_BUS_ERROR_TIMEOUT);
        bus_client_assert_error(&export.error, SD_BUS_ERROR_TIMEOUT);
        /* the daemon let go of the pipes: the reader sees the end, the writer a broken pipe */
        close(in[0]);
        close(out[1]);
        g_assert_cmpint(fcntl(out[0], F_SETFL, O_NONBLOCK), ==, 0);
        char buf[8192];
        ssize_t k, total = 0;
        while ((k = read(out[0], buf, sizeof(buf))) > 0)
                total += k;
        g_assert_cmpint(k, ==, 0); /* not -1 with EAGAIN: no writer is left */
        g_assert_cmpint(total, >, 0);
        g_assert_cmpint(fcntl(in[1], F_SETFL, O_NONBLOCK), ==, 0);
        signal(SIGPIPE, SIG_IGN);
        g_assert_cmpint(write(in[1], "x", 1), ==, -1);
        g_assert_cmpint(errno, ==, EPIPE);
        close(in[1]);
        close(out[0]);
        g_autoptr(GArray) still = list_snapshots(bus);
        g_assert_cmpuint(still->len, ==, 1);

        /* at most 8 transfers at once: the 9th is refused at once */
        int silent[9][2];
        BusPending waiting[8] = {};
        for (int i = 0; i < 9; i++)
                g_assert_cmpint(pipe2(silent[i], O_CLOEXEC), ==, 0);
        for (int i = 0; i < 8; i++)
                g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "ImportSnapshot", bus_client_on_reply,
                                                         &waiting[i], "h", silent[i][0]), >=, 0);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(bus, "ImportSnapshot", &error, NULL, "h", silent[8][0]), <, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
        for (int i = 0; i < 8; i++) {
                while (!waiting[i].done && g_get_monotonic_time() < end + 5 * G_USEC_PER_SEC)
                        bus_client_pump(bus, -1, 0);
                bus_client_assert_error(&waiting[i].error, SD_BUS_ERROR_TIMEOUT);
        }
        for (int i = 0; i < 9; i++) {
                close(silent[i][0]);
                close(silent[i][1]);
        }
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* Stopping the daemon answers the transfers still waiting, and it exits cleanly. */
static void test_stop_during_transfer(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        int p[2];
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        BusPending import = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "ImportSnapshot", bus_client_on_reply, &import,
                                                 "h", p[0]), >=, 0);
        g_autoptr(GArray) listed = list_snapshots(bus); /* the import is under way */
        g_assert_cmpuint(listed->len, ==, 0);
        g_assert_false(import.done);
        g_assert_cmpint(kill(b.daemon_pid, SIGTERM), ==, 0);
        gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (!import.done && g_get_monotonic_time() < end)
                bus_client_pump(bus, -1, 0);
        g_assert_true(import.done);
        if (!import.error.message || !strstr(import.error.message, "stopping"))
                g_error("the import got %s: %s", import.error.name, import.error.message);
        sd_bus_error_free(&import.error);
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        close(p[0]);
        close(p[1]);
        bus_fixture_stop(&b);
}

/* Dispatch what has come in, without waiting. */
static void drain(sd_bus *bus) {
        while (sd_bus_process(bus, NULL) > 0)
                ;
}

/* Formatting and parsing run in a worker thread, not on the loop: with the daemon's workers held
 * ($SECTREE_TEST_SNAPSHOT_GATE), an export into a file and an import from one are still under
 * way while other calls are answered, and stopping the daemon cancels a held one. */
static void test_worker(void) {
        BusFixture b;
        g_autofree char *dir = g_dir_make_tmp("sectree-snap-XXXXXX", NULL);
        g_autofree char *gate = g_build_filename(dir, "go", NULL), *path = g_build_filename(dir, "export", NULL);
        g_autofree char *gate_env = g_strconcat("SECTREE_TEST_SNAPSHOT_GATE=", gate, NULL);
        char *env[] = { gate_env, NULL };
        Scenario *s = bus_fixture_start_with_scenario(&b, listener_scenario, NULL, env);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        uint64_t id = bus_client_create_ok(bus, scenario_root_pid(s), NULL);

        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        BusPending export = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "ExportSnapshot", bus_client_on_reply, &export,
                                                 "ths", id, fd, "json"), >=, 0);
        /* and a second one, which waits for the first one's worker */
        g_autofree char *path2 = g_build_filename(dir, "export2", NULL);
        int fd2 = open(path2, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(fd2, >=, 0);
        BusPending export2 = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "ExportSnapshot", bus_client_on_reply, &export2,
                                                 "ths", id, fd2, "sqlite"), >=, 0);
        g_autoptr(GArray) listed = list_snapshots(bus);
        g_assert_cmpuint(listed->len, ==, 1);
        drain(bus); /* a reply sent before ListSnapshots' would be here now */
        g_assert_false(export.done || export2.done);
        struct stat st;
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(st.st_size, ==, 0);

        g_assert_true(g_file_set_contents(gate, "", 0, NULL));
        gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (!(export.done && export2.done) && g_get_monotonic_time() < end)
                bus_client_pump(bus, -1, 0);
        g_assert_true(export.done && export2.done);
        g_assert_false(sd_bus_error_is_set(&export.error) || sd_bus_error_is_set(&export2.error));
        g_autoptr(Forest) f = NULL, f2 = NULL;
        g_autofree char *error = NULL;
        if (snapshot_read_path(path, &f, &error) < 0 || snapshot_read_path(path2, &f2, &error) < 0)
                g_error("an export does not read back: %s", error);
        g_assert_cmpuint(f->n_processes, >, 0);
        g_assert_cmpint(forest_isomorphic(f, f2, NULL, 0, NULL), ==, 1);
        close(fd2);
        g_assert_cmpint(unlink(path2), ==, 0);

        /* held in its worker, an import is cancelled when the daemon stops */
        g_assert_cmpint(unlink(gate), ==, 0);
        g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
        BusPending import = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "ImportSnapshot", bus_client_on_reply, &import,
                                                 "h", fd), >=, 0);
        g_autoptr(GArray) still = list_snapshots(bus);
        g_assert_cmpuint(still->len, ==, 1);
        drain(bus);
        g_assert_false(import.done);
        g_assert_cmpint(kill(b.daemon_pid, SIGTERM), ==, 0);
        end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (!import.done && g_get_monotonic_time() < end)
                bus_client_pump(bus, -1, 0);
        g_assert_true(import.done);
        if (!import.error.message || !strstr(import.error.message, "stopping"))
                g_error("the import got %s: %s", import.error.name, import.error.message);
        sd_bus_error_free(&import.error);
        g_assert_cmpint(bus_fixture_stop_daemon(&b, SIGTERM), ==, 0);
        close(fd);
        g_assert_cmpint(unlink(path), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* ---- access ---- */

#define NOBODY_COMM "nobody-snap" /* of the process of nobody (tests_spawn_nobody(), with a child) */
typedef struct NobodyCase {
        pid_t theirs, mine;
        uint64_t root_snapshot;
        uint64_t mine_snapshot; /* out, through a pipe */
        int result_fd;          /* its write end */
} NobodyCase;

/* What nobody tries, in a child with uid and gid 65534; every assertion failure makes it exit
 * non-zero. */
static void nobody_part(NobodyCase *c, int result_fd) {
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;

        g_assert_cmpuint(bus_client_create_snapshot(bus, c->theirs, NULL, &error), ==, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
        g_assert_cmpuint(bus_client_create_snapshot(bus, 0, NULL, &error), ==, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
        g_assert_cmpuint(bus_client_create_snapshot(bus, 1, NULL, &error), ==, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
        g_autoptr(GArray) none = list_snapshots(bus);
        g_assert_cmpuint(none->len, ==, 0);
        g_assert_null(bus_client_export_pipe(bus, c->root_snapshot, "json", &error));
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchSnapshot");
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", &error, NULL, "t", c->root_snapshot), <, 0);
        bus_client_assert_error(&error, "org.sectree1.Error.NoSuchSnapshot");

        /* its own subtree: the process and its child */
        uint64_t id = bus_client_create_ok(bus, c->mine, "mine");
        g_autoptr(GArray) listed = list_snapshots(bus);
        g_assert_cmpuint(listed->len, ==, 1);
        g_assert_cmpuint(find_listed(listed, id)->owner, ==, NOBODY);
        g_assert_cmpuint(find_listed(listed, id)->processes, ==, 2);
        g_autoptr(GBytes) json = export_pipe_ok(bus, id, "json");
        g_autoptr(Forest) f = read_snapshot(json);
        Process *p = forest_find_process(f, c->mine);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->uid, ==, NOBODY);
        g_assert_nonnull(p->threads[0].filter);
        g_assert_cmpuint(f->snapshot.taken_by_uid, ==, NOBODY);

        /* an import becomes its own */
        gsize n;
        const void *data = g_bytes_get_data(json, &n);
        uint64_t imported = bus_client_import_pipe(bus, data, n, &error);
        if (imported == 0)
                g_error("import as nobody: %s", error.message);
        g_autoptr(GArray) two = list_snapshots(bus);
        g_assert_cmpuint(two->len, ==, 2);
        g_assert_cmpuint(find_listed(two, imported)->owner, ==, NOBODY);

        /* a quota: SNAPSHOTS_MAX_PER_UID (32) in all */
        for (int i = 2; i < 32; i++)
                (void) bus_client_create_ok(bus, c->mine, NULL);
        g_assert_cmpuint(bus_client_create_snapshot(bus, c->mine, NULL, &error), ==, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
        g_assert_cmpuint(bus_client_import_pipe(bus, data, n, &error), ==, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", &error, NULL, "t", imported), >=, 0);
        g_assert_cmpuint(bus_client_create_snapshot(bus, c->mine, NULL, &error), >, 0);

        g_assert_cmpint(write(result_fd, &id, sizeof(id)), ==, sizeof(id));
        sd_bus_flush_close_unref(bus);
}

static void nobody_part_run(void *userdata) {
        NobodyCase *c = userdata;
        nobody_part(c, c->result_fd);
}

static void run_as_nobody(NobodyCase *c) {
        int p[2];
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        c->result_fd = p[1];
        int status = tests_as_nobody(nobody_part_run, c);
        close(p[1]);
        if (status != 0)
                g_error("the part run as nobody failed (status %d)", status);
        g_assert_cmpint(read(p[0], &c->mine_snapshot, sizeof(c->mine_snapshot)), ==, sizeof(c->mine_snapshot));
        close(p[0]);
}

static void test_access(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        Scenario *s = listener_scenario();
        pid_t mine = tests_spawn_nobody(NOBODY_COMM, true);
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        NobodyCase c = { .theirs = scenario_root_pid(s), .mine = mine };
        c.root_snapshot = bus_client_create_ok(bus, scenario_root_pid(s), "root's");
        run_as_nobody(&c);

        /* root sees everything, nobody's included, and may export it */
        g_autoptr(GArray) listed = list_snapshots(bus);
        g_assert_cmpuint(listed->len, ==, 33);
        g_assert_nonnull(find_listed(listed, c.root_snapshot));
        g_assert_cmpuint(find_listed(listed, c.mine_snapshot)->owner, ==, NOBODY);
        g_autoptr(GBytes) json = export_pipe_ok(bus, c.mine_snapshot, "json");
        g_autoptr(Forest) f = read_snapshot(json);
        g_assert_nonnull(forest_find_process(f, mine));
        /* and root's own quota is not nobody's */
        for (int i = 0; i < 33; i++)
                (void) bus_client_create_ok(bus, scenario_root_pid(s), NULL);
        kill(mine, SIGKILL);
        waitpid(mine, NULL, 0);
        scenario_free(s);
        bus_fixture_stop(&b);
}

/* ---- a process without its descendants ---- */

typedef struct AloneCase {
        pid_t mine; /* nobody's, with a child nobody cannot trace */
} AloneCase;

/* As nobody: its process's subtree is refused (the child is not one it could trace); the process
 * alone ("descendants": false, as run --like asks for it) is its snapshot, without the child. */
static void alone_part(void *userdata) {
        const AloneCase *c = userdata;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t id = 0;

        g_assert_cmpuint(bus_client_create_snapshot(bus, c->mine, NULL, &error), ==, 0);
        bus_client_assert_error(&error, SD_BUS_ERROR_ACCESS_DENIED);
        sd_bus_error_free(&error);
        if (bus_client_call(bus, "CreateSnapshot", &error, &reply, "ua{sv}", (uint32_t) c->mine, 1, "descendants", "b",
                            0) < 0)
                g_error("CreateSnapshot(%d, descendants false) as nobody: %s: %s", (int) c->mine, error.name,
                        error.message);
        g_assert_cmpint(sd_bus_message_read(reply, "t", &id), >, 0);
        g_autoptr(GBytes) json = export_pipe_ok(bus, id, "json");
        g_autoptr(Forest) f = read_snapshot(json);
        g_assert_cmpuint(f->n_processes, ==, 1);
        g_assert_cmpint(f->processes[0]->pid, ==, c->mine);
        g_assert_nonnull(f->processes[0]->threads[0].filter);
        g_assert_cmpint(f->root, ==, c->mine);
}

static void alone_with(char **args) {
        BusFixture b;
        if (!tests_require_root())
                return;
        AloneCase c = { .mine = tests_spawn_nobody_with(&(TestsNobodyOptions) { .comm = NOBODY_COMM, .with_child = true,
                                                                                 .child_not_dumpable = true }) };
        if (!bus_fixture_start_all(&b, args, NULL))
                return;
        g_assert_cmpint(tests_as_nobody(alone_part, &c), ==, 0);
        kill(c.mine, SIGKILL);
        waitpid(c.mine, NULL, 0);
        bus_fixture_stop(&b);
}

static void test_alone(void) {
        alone_with(NULL);
}

static void test_ptrace_alone(void) {
        alone_with((char *[]) { (char *) "--backend=ptrace", NULL });
}

/* ---- consistency under churn ---- */

/* A process with a filter whose children install one more and fork and exit as fast as they can. */
static pid_t spawn_churn_root(void) {
        int ready[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                struct sock_filter f[32];
                size_t n = scenario_filter_errno(f, SYS_acct, 1, 0);
                struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
                prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(2);
                (void) !write(ready[1], "x", 1);
                for (unsigned i = 0;; i++) {
                        size_t m = scenario_filter_errno(f, SYS_syslog, 1 + (int) (i % 50), i % 5);
                        struct sock_fprog p2 = { .len = (unsigned short) m, .filter = f };
                        pid_t c = fork();
                        if (c == 0) {
                                syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p2);
                                if (fork() == 0) {
                                        usleep(30000);
                                        _exit(0);
                                }
                                usleep(10000 * (i % 3));
                                _exit(0);
                        }
                        usleep(500);
                        while (waitpid(-1, NULL, WNOHANG) > 0)
                                ;
                }
        }
        close(ready[1]);
        char c;
        g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        close(ready[0]);
        return pid;
}

static void assert_churn_snapshot(const Forest *f, pid_t root) {
        const Process *r = forest_find_process(f, root);
        g_assert_nonnull(r);
        g_assert_nonnull(r->threads[0].filter);
        const Filter *base = r->threads[0].filter;
        g_assert_null(base->parent);
        /* every filtered task's chain is complete: it ends in the root process's filter */
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        const Filter *x = f->processes[i]->threads[j].filter;
                        if (!x)
                                continue;
                        while (x->parent)
                                x = x->parent;
                        g_assert_true(x == base);
                }
}

static void churn_with(char **args, char **env, const char *consistency) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, args, env))
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        pid_t churn = spawn_churn_root();
        size_t most = 0;
        for (int i = 0; i < 10; i++) {
                uint64_t id = bus_client_create_ok(bus, churn, NULL);
                /* read back through the validator: every referenced filter exists, no task half-seen */
                g_autoptr(GBytes) json = export_pipe_ok(bus, id, "json");
                g_autoptr(Forest) f = read_snapshot(json);
                assert_churn_snapshot(f, churn);
                g_assert_cmpstr(snapshot_consistency_to_string(f->snapshot.consistency), ==, consistency);
                g_autoptr(GBytes) image = export_pipe_ok(bus, id, "sqlite");
                g_autoptr(Forest) g = read_snapshot(image);
                assert_churn_snapshot(g, churn);
                most = MAX(most, f->n_processes);
                g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", NULL, NULL, "t", id), >=, 0);
        }
        kill(churn, SIGKILL);
        waitpid(churn, NULL, 0);
        g_test_message("most processes in one churn snapshot: %zu", most);
        bus_fixture_stop(&b);
}

static void test_churn(void) {
        churn_with(NULL, NULL, "iterator");
}

static void test_ptrace_churn(void) {
        char *args[] = { (char *) "--backend=ptrace", NULL };
        char *env[] = { (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        churn_with(args, env, "frozen");
}


/* CreateSnapshot stores in steps between other calls: with the store held
 * ($SECTREE_TEST_SNAPSHOT_STORE_GATE), a ListSnapshots sent after it is answered first, and does
 * not list the half-stored snapshot; once let go, the snapshot is there, complete. */
static void test_create_off_loop(void) {
        BusFixture b;
        g_autofree char *dir = g_dir_make_tmp("sectree-snap-XXXXXX", NULL);
        g_autofree char *gate = g_build_filename(dir, "go", NULL);
        g_autofree char *gate_env = g_strconcat("SECTREE_TEST_SNAPSHOT_STORE_GATE=", gate, NULL);
        char *env[] = { gate_env, NULL };
        Scenario *s = bus_fixture_start_with_scenario(&b, listener_scenario, NULL, env);
        if (!s)
                return;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusPending create = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "CreateSnapshot", bus_client_on_reply,
                                                 &create, "ua{sv}", (uint32_t) scenario_root_pid(s), 0), >=, 0);
        g_autoptr(GArray) listed = list_snapshots(bus);
        g_assert_cmpuint(listed->len, ==, 0);
        drain(bus);
        g_assert_false(create.done);

        g_assert_true(g_file_set_contents(gate, "", 0, NULL));
        bus_client_wait(bus, &create, 10000, "CreateSnapshot");
        g_assert_false(sd_bus_error_is_set(&create.error));
        g_assert_cmpuint(create.id, >, 0);
        g_autoptr(GArray) after = list_snapshots(bus);
        g_assert_cmpuint(after->len, ==, 1);
        g_autoptr(Forest) f = bus_client_export_forest(bus, create.id);
        tests_assert_forest_matches(f, s, true);
        unlink(gate);
        rmdir(dir);
        scenario_free(s);
        bus_fixture_finish(&b);
}


/* A large subtree: a root under one filter with n children that inherit it; on a byte on cmd the
 * root stacks a second filter. Says "r" (ready) and "i" (installed) on ack. */

static void flood_install(int errno_value) {
        struct sock_filter f[16];
        struct sock_fprog prog = { .len = (unsigned short) scenario_filter_errno(f, SYS_acct, errno_value, 0), .filter = f };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(3);
}

static void flood_root(int n, int cmd, int ack) {
        char c;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(2);
        flood_install(1);
        for (int i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid < 0)
                        _exit(4);
                if (pid == 0) {
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                        for (;;)
                                pause();
                }
        }
        if (write(ack, "r", 1) != 1 || read(cmd, &c, 1) != 1)
                _exit(5);
        flood_install(2);
        if (write(ack, "i", 1) != 1)
                _exit(6);
        for (;;)
                pause();
}

/* A flood_root() process and the pipes that drive it. */
typedef struct Flood {
        pid_t root;
        int cmd[2], ack[2];
} Flood;

/* The root of n processes sharing its first filter, once all of them are there. */
static pid_t flood_start(Flood *fl, int n) {
        char c;
        g_assert_cmpint(pipe2(fl->cmd, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(fl->ack, O_CLOEXEC), ==, 0);
        fl->root = fork();
        g_assert_cmpint(fl->root, >=, 0);
        if (fl->root == 0) {
                flood_root(n, fl->cmd[0], fl->ack[1]);
                _exit(0);
        }
        g_assert_cmpint(read(fl->ack[0], &c, 1), ==, 1);
        return fl->root;
}

/* The root installs its second filter; returns once it has. */
static void flood_second_filter(Flood *fl) {
        char c;
        g_assert_cmpint(write(fl->cmd[1], "x", 1), ==, 1);
        g_assert_cmpint(read(fl->ack[0], &c, 1), ==, 1);
}

static void flood_stop(Flood *fl) {
        kill(fl->root, SIGKILL);
        waitpid(fl->root, NULL, 0);
        close(fl->cmd[0]);
        close(fl->cmd[1]);
        close(fl->ack[0]);
        close(fl->ack[1]);
}

/* CreateSnapshot's scan runs in a worker thread, not on the loop: with the scan held
 * ($SECTREE_TEST_SNAPSHOT_SCAN_GATE), root's ListTasks and GetFilter sent after a CreateSnapshot of
 * a subtree of thousands of processes are answered first; a filter installed after those replies
 * is in the snapshot (the scan ran after them: on the loop it ran before), and the snapshot holds
 * the whole subtree, its children sharing their root's first filter. */
static void scan_off_loop_with(char **args, const char *backend, int n) {
        BusFixture b;
        g_autofree char *dir = g_dir_make_tmp("sectree-snap-XXXXXX", NULL);
        g_autofree char *gate = g_build_filename(dir, "go", NULL);
        g_autofree char *gate_env = g_strconcat("SECTREE_TEST_SNAPSHOT_SCAN_GATE=", gate, NULL);
        char *env[] = { gate_env, (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        Flood fl;
        if (!bus_fixture_start_all(&b, args, env))
                return;
        pid_t root = flood_start(&fl, n);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();

        BusPending create = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "CreateSnapshot", bus_client_on_reply,
                                                 &create, "ua{sv}", (uint32_t) root, 0), >=, 0);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ListTasks", &error, NULL, "") < 0)
                g_error("ListTasks: %s", error.message);
        if (bus_client_call(bus, "GetFilter", &error, NULL, "t", (uint64_t) 1) < 0)
                sd_bus_error_free(&error); /* answered: an error is an answer too */
        drain(bus);
        if (create.done)
                g_error("%s: CreateSnapshot answered before a ListTasks sent after it", backend);

        flood_second_filter(&fl);
        g_assert_true(g_file_set_contents(gate, "", 0, NULL));
        bus_client_wait(bus, &create, 120000, "CreateSnapshot");
        if (sd_bus_error_is_set(&create.error))
                g_error("%s: CreateSnapshot: %s", backend, create.error.message);

        g_autoptr(Forest) f = bus_client_export_forest(bus, create.id);
        /* the ptrace backend leaves out a task it could not stop in time (an overloaded machine) */
        if (f->snapshot.consistency != SNAPSHOT_CONSISTENCY_NONE)
                g_assert_cmpuint(f->n_processes, ==, (size_t) n + 1);
        else
                g_test_message("%s: not frozen: %zu of %d processes", backend, f->n_processes, n + 1);
        const Task *top = forest_find_task(f, root, NULL);
        g_assert_nonnull(top);
        if (top->filter->depth != 2)
                g_error("%s: the filter installed after ListTasks was answered is not in the snapshot", backend);
        const Filter *first = top->filter->parent;
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (p->pid == root)
                        continue;
                g_assert_cmpint(p->ppid, ==, root);
                g_assert_true(p->threads[0].filter == first);
        }
        flood_stop(&fl);
        unlink(gate);
        rmdir(dir);
        bus_fixture_finish(&b);
}

static void test_scan_off_loop(void) {
        scan_off_loop_with(NULL, "bpf", 2000);
}

static void test_ptrace_scan_off_loop(void) {
        char *args[] = { (char *) "--backend=ptrace", NULL };
        scan_off_loop_with(args, "ptrace", 500);
}

static bool file_exists(void *path) {
        return access(path, F_OK) == 0;
}

/* The depth of the chain the daemon knows for tid (its filter ids, head first); 0 for a task it
 * does not know. */
static unsigned chain_depth(sd_bus *bus, pid_t tid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const void *ids;
        size_t size;
        if (bus_client_call(bus, "GetTaskChain", &error, &reply, "u", (uint32_t) tid) < 0) {
                if (!sd_bus_error_has_name(&error, "org.sectree1.Error.NoSuchTask"))
                        g_error("GetTaskChain %d: %s", (int) tid, error.message);
                return 0;
        }
        g_assert_cmpint(sd_bus_message_read_array(reply, 't', &ids, &size), >=, 0);
        return (unsigned) (size / sizeof(uint64_t));
}

typedef struct ChainWait {
        sd_bus *bus;
        pid_t tid;
        unsigned depth;
} ChainWait;

static bool chain_has_depth(void *userdata) {
        ChainWait *w = userdata;
        return chain_depth(w->bus, w->tid) == w->depth;
}

/* Rescan() without the client's default 25 s limit: it may wait for a snapshot's scan. */
static void rescan_async(sd_bus *bus, BusPending *p) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        g_assert_cmpint(sd_bus_message_new_method_call(bus, &call, DEST, PATH, IFACE, "Rescan"), >=, 0);
        g_assert_cmpint(sd_bus_call_async(bus, NULL, call, bus_client_on_reply, p, 120 * 1000000ULL), >=, 0);
}

/* ptrace: a Rescan() sent while a snapshot's scan of a large subtree holds the scanners' lock
 * ($SECTREE_TEST_PTRACE_SCAN_HOLD) does not hold the loop: ListTasks sent after it is answered
 * while the scan still holds the lock, and the Rescan is not (its pass is queued). Once the scan
 * lets go, the Rescan is answered after a pass that ran then: it saw a filter installed while the
 * lock was held, which no event announces. The snapshot is whole. */
static void test_ptrace_rescan_during_snapshot(void) {
        const int n = 500;
        BusFixture b;
        g_autofree char *dir = g_dir_make_tmp("sectree-hold-XXXXXX", NULL);
        g_autofree char *held = g_build_filename(dir, "held", NULL), *go = g_build_filename(dir, "go", NULL);
        g_autofree char *hold_env = g_strconcat("SECTREE_TEST_PTRACE_SCAN_HOLD=", dir, NULL);
        char *env[] = { hold_env, (char *) "SECTREE_REFRESH_USEC=600000000", NULL };
        char *args[] = { (char *) "--backend=ptrace", NULL };
        Flood fl;
        if (!bus_fixture_start_all(&b, args, env))
                return;
        pid_t root = flood_start(&fl, n);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_true(tests_wait_for(chain_has_depth, &(ChainWait) { bus, root, 1 }, TESTS_PATIENCE_MS));

        BusPending create = {}, rescan = {};
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, DEST, PATH, IFACE, "CreateSnapshot", bus_client_on_reply,
                                                 &create, "ua{sv}", (uint32_t) root, 0), >=, 0);
        g_assert_true(tests_wait_for(file_exists, held, TESTS_PATIENCE_MS));
        rescan_async(bus, &rescan);
        uint64_t sent = g_get_monotonic_time();
        if (bus_client_call(bus, "ListTasks", &error, NULL, "") < 0)
                g_error("ListTasks while a snapshot's scan holds the lock: %s", error.message);
        g_test_message("ListTasks sent after a Rescan that waits for a snapshot's scan: answered in %" PRIu64 " ms",
                       (g_get_monotonic_time() - sent) / 1000);
        drain(bus);
        g_assert_false(rescan.done); /* its pass cannot scan yet */
        g_assert_false(create.done);

        flood_second_filter(&fl); /* announced by no event */
        g_assert_true(g_file_set_contents(go, "", 0, NULL));
        uint64_t opened = g_get_monotonic_time();
        bus_client_wait(bus, &rescan, 120000, "Rescan");
        g_test_message("Rescan answered %" PRIu64 " ms after the snapshot's scan could go on",
                       (g_get_monotonic_time() - opened) / 1000);
        if (sd_bus_error_is_set(&rescan.error))
                g_error("Rescan: %s", rescan.error.message);
        g_assert_cmpuint(chain_depth(bus, root), ==, 2);
        bus_client_wait(bus, &create, 120000, "CreateSnapshot");
        g_test_message("CreateSnapshot of %d processes answered %" PRIu64 " ms after its scan could go on", n + 1,
                       (g_get_monotonic_time() - opened) / 1000);
        if (sd_bus_error_is_set(&create.error))
                g_error("CreateSnapshot: %s", create.error.message);
        g_autoptr(Forest) f = bus_client_export_forest(bus, create.id);
        if (f->snapshot.consistency != SNAPSHOT_CONSISTENCY_NONE)
                g_assert_cmpuint(f->n_processes, ==, (size_t) n + 1);
        flood_stop(&fl);
        unlink(go);
        unlink(held);
        rmdir(dir);
        bus_fixture_finish(&b);
}

/* Anyone may give their process a name that is not UTF-8: root's snapshots of it (and of the
 * whole machine) still succeed, with U+FFFD for each invalid byte and the name cut to what fits. */
static void test_bad_comm(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        pid_t bad = tests_spawn_nobody("ab\xff\xfe\xfd\xfc\xfb\xfa\xf9", false);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_autoptr(Forest) f = bus_client_export_forest(bus, bus_client_create_ok(bus, bad, NULL));
        const Process *p = forest_find_process(f, bad);
        g_assert_nonnull(p);
        g_assert_cmpstr(p->comm, ==, "ab\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* 14 bytes of 15 */
        g_assert_cmpuint(bus_client_create_ok(bus, 0, NULL), >, 0); /* the whole machine, which holds it too */
        kill(bad, SIGKILL);
        waitpid(bad, NULL, 0);
        bus_fixture_finish(&b);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/snapshot-daemon/round-trip", test_round_trip);
        g_test_add_func("/snapshot-daemon/arguments", test_arguments);
        g_test_add_func("/snapshot-daemon/lifecycle", test_lifecycle);
        g_test_add_func("/snapshot-daemon/upgrade", test_upgrade);
        g_test_add_func("/snapshot-daemon/hostile-import", test_hostile_import);
        g_test_add_func("/snapshot-daemon/deadlines", test_deadlines);
        g_test_add_func("/snapshot-daemon/stop-during-transfer", test_stop_during_transfer);
        g_test_add_func("/snapshot-daemon/worker", test_worker);
        g_test_add_func("/snapshot-daemon/create-off-loop", test_create_off_loop);
        g_test_add_func("/snapshot-daemon/scan-off-loop", test_scan_off_loop);
        g_test_add_func("/snapshot-daemon/ptrace/scan-off-loop", test_ptrace_scan_off_loop);
        g_test_add_func("/snapshot-daemon/ptrace/rescan-during-snapshot", test_ptrace_rescan_during_snapshot);
        g_test_add_func("/snapshot-daemon/bad-comm", test_bad_comm);
        g_test_add_func("/snapshot-daemon/access", test_access);
        g_test_add_func("/snapshot-daemon/alone", test_alone);
        g_test_add_func("/snapshot-daemon/ptrace/alone", test_ptrace_alone);
        g_test_add_func("/snapshot-daemon/churn", test_churn);
        g_test_add_func("/snapshot-daemon/ptrace/churn", test_ptrace_churn);
        g_test_add_func("/snapshot-daemon/ptrace/round-trip", test_ptrace_round_trip);
        return g_test_run();
}
