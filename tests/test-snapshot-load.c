/* test-snapshot-load.c: one user must not stall everyone. While nobody pushes the heaviest
 * snapshot loads (two 60 MiB imports at once, then exports of what was stored), root's calls keep
 * being answered and root may still start a transfer; nobody's stored bytes have a budget; the
 * transfers of four other users cannot lock root out; the daemon gives the memory of a large
 * import back. The figures (root's call latency, the daemon's memory) are printed, not asserted. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#include "bus-client.h"
#include "bus-fixture.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot-json.h"
#include "store/store-snapshot.h"
#include "tests-util.h"

#define MIB (1024.0 * 1024.0)
#define RSS_SLACK_KIB (96 * 1024) /* what the daemon may keep of a load's memory */

/* The JSON of a snapshot as large as an import may be: filters of one instruction, about
 * 226 bytes each: 61.5 MiB. */
static char *write_big_snapshot(const char *dir, size_t *ret_size) {
        g_autoptr(Forest) f = sample_forest_many_filters(285000);
        g_assert_nonnull(f);
        char *json = NULL;
        size_t size = 0;
        g_assert_cmpint(snapshot_json_format_buffer(f, 0, &json, &size), ==, 0);
        g_assert_cmpuint(size, <, 64u * 1024 * 1024);
        char *path = g_build_filename(dir, "big.json", NULL);
        g_assert_true(g_file_set_contents(path, json, (gssize) size, NULL));
        g_assert_cmpint(chmod(path, 0644), ==, 0);
        free(json);
        *ret_size = size;
        return path;
}

static uint64_t status_kib(pid_t pid, const char *field) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", pid), *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        const char *p = strstr(text, field);
        g_assert_nonnull(p);
        return g_ascii_strtoull(p + strlen(field) + 1, NULL, 10);
}

/* ---- root keeps being answered ---- */

typedef struct Load {
        const char *big;
} Load;

static void import_async(sd_bus *bus, const char *path, BusPending *p) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ImportSnapshot", bus_client_on_reply, p, "h", fd),
                        >=, 0);
        close(fd);
}

/* As nobody: two imports of the big file at once (as many as one user may run), then three
 * exports of the one that was stored. */
static void nobody_load(void *userdata) {
        const Load *l = userdata;
        sd_bus *bus = bus_client_open();
        BusPending a = {}, b = {};
        import_async(bus, l->big, &a);
        import_async(bus, l->big, &b);
        bus_client_wait(bus, &a, 110000, "nobody's first import");
        bus_client_wait(bus, &b, 110000, "nobody's second import");
        uint64_t id = a.id ? a.id : b.id;
        if (id == 0)
                g_error("neither of nobody's imports was stored: %s; %s", a.error.message, b.error.message);
        for (int i = 0; i < 3; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                g_autoptr(GBytes) json = bus_client_export_pipe(bus, id, "json", &error);
                if (!json)
                        g_error("nobody's export %d: %s", i, error.message);
        }
        sd_bus_error_free(&a.error);
        sd_bus_error_free(&b.error);
        sd_bus_flush_close_unref(bus);
}

static int cmp_int64(const void *a, const void *b) {
        gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
        return (x > y) - (x < y);
}

static gint64 timed_call(sd_bus *bus, const char *member) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        gint64 t0 = g_get_monotonic_time();
        if (bus_client_call(bus, member, &error, NULL, "") < 0)
                g_error("root's %s while nobody loads the daemon: %s", member, error.message);
        return g_get_monotonic_time() - t0;
}

static void test_root_keeps_answering(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        g_assert_cmpint(chmod(b.dir, 0755), ==, 0);
        size_t size;
        g_autofree char *big = write_big_snapshot(b.dir, &size);
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        uint64_t rss_before = status_kib(b.daemon_pid, "VmRSS:");

        Load l = { .big = big };
        pid_t child = tests_as_nobody_start(nobody_load, &l);
        g_autoptr(GArray) lat = g_array_new(false, false, sizeof(gint64));
        int status = -1;
        while (waitpid(child, &status, WNOHANG) == 0) {
                gint64 dt = timed_call(bus, (lat->len & 1) ? "ListSnapshots" : "ListTasks");
                g_array_append_val(lat, dt);
                g_usleep(5000);
        }
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_assert_cmpuint(lat->len, >, 0);
        g_array_sort(lat, cmp_int64);
        g_test_message("root's ListTasks/ListSnapshots while nobody imported a %.1f MiB snapshot twice at once and "
                       "exported it three times: %u calls, median %.1f ms, p99 %.1f ms, max %.1f ms",
                       (double) size / MIB, lat->len, g_array_index(lat, gint64, lat->len / 2) / 1000.0,
                       g_array_index(lat, gint64, lat->len * 99 / 100) / 1000.0,
                       g_array_index(lat, gint64, lat->len - 1) / 1000.0);
        /* what the imports took is given back (freeing may still run in a thread of the daemon) */
        uint64_t peak = status_kib(b.daemon_pid, "VmHWM:"), rss_after;
        gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while ((rss_after = status_kib(b.daemon_pid, "VmRSS:")) > rss_before + RSS_SLACK_KIB &&
               g_get_monotonic_time() < end)
                g_usleep(50000);
        g_test_message("the daemon's memory: %.0f MiB before, %.0f MiB at the peak, %.0f MiB after", rss_before / 1024.0,
                       peak / 1024.0, rss_after / 1024.0);
        g_assert_cmpuint(peak, >, rss_before + RSS_SLACK_KIB); /* the load was real */
        g_assert_cmpuint(rss_after, <=, rss_before + RSS_SLACK_KIB);
        bus_fixture_finish(&b);
}

/* ---- the bytes one user may store ---- */

static char *write_json(const char *dir, const char *name, const Forest *f, size_t *ret_size) {
        char *json = NULL;
        size_t size = 0;
        g_assert_cmpint(snapshot_json_format_buffer(f, 0, &json, &size), ==, 0);
        char *path = g_build_filename(dir, name, NULL);
        g_assert_true(g_file_set_contents(path, json, (gssize) size, NULL));
        g_assert_cmpint(chmod(path, 0644), ==, 0);
        free(json);
        if (ret_size)
                *ret_size = size;
        return path;
}

static uint64_t import_file(sd_bus *bus, const char *path, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        uint64_t id = 0;
        if (bus_client_call(bus, "ImportSnapshot", error, &reply, "h", fd) >= 0)
                g_assert_cmpint(sd_bus_message_read(reply, "t", &id), >, 0);
        close(fd);
        return id;
}

/* As nobody: two imports of about 24 MiB of stored rows each fit the budget of 64 MiB, the third
 * does not; a delete makes room again. */
static void nobody_fills_budget(void *userdata) {
        const char *path = userdata;
        sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t a = import_file(bus, path, &error), b = import_file(bus, path, &error);
        if (a == 0 || b == 0)
                g_error("nobody's imports within the budget: %s", error.message);
        g_assert_cmpuint(import_file(bus, path, &error), ==, 0);
        if (!sd_bus_error_is_set(&error) || !strstr(error.message, "64 MiB stored"))
                g_error("the third import: expected LimitsExceeded naming the budget, got %s: %s", error.name,
                        error.message);
        bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
        g_assert_cmpint(bus_client_call(bus, "DeleteSnapshot", &error, NULL, "t", a), >=, 0);
        g_assert_cmpuint(import_file(bus, path, &error), >, 0);
        sd_bus_flush_close_unref(bus);
}

static void test_budget(void) {
        BusFixture b;
        if (!bus_fixture_start_all(&b, NULL, NULL))
                return;
        g_assert_cmpint(chmod(b.dir, 0755), ==, 0);
        g_autoptr(Forest) f = sample_forest_long_argv(12, 2000000);
        g_assert_nonnull(f);
        g_test_message("one import counts for %.1f MiB", store_snapshot_bytes(f) / MIB);
        g_assert_cmpuint(store_snapshot_bytes(f), >, 22u << 20);
        g_assert_cmpuint(store_snapshot_bytes(f), <, 32u << 20);
        g_autofree char *path = write_json(b.dir, "argv.json", f, NULL);
        g_assert_cmpint(tests_as_nobody(nobody_fills_budget, path), ==, 0);

        /* root has no budget; the stored rows are what the budget counts */
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        sd_bus_error error = SD_BUS_ERROR_NULL;
        for (int i = 0; i < 3; i++)
                if (import_file(bus, path, &error) == 0)
                        g_error("root's import %d: %s", i, error.message);
        g_autofree char *db = g_build_filename(b.state_dir, "state.db", NULL);
        g_autofree char *sum = tests_sqlite_query(
                db,
                "SELECT sum(bytes) = 2 * (SELECT bytes FROM snapshots LIMIT 1), count(*) FROM snapshots "
                "WHERE owner_uid = 65534 AND complete");
        g_assert_cmpstr(sum, ==, "1|2");
        bus_fixture_finish(&b);
}

/* ---- root is never locked out by other users' transfers ---- */

typedef struct Holder {
        const char *path;
        int imports;   /* to start, and to see accepted (held at the gate) */
        bool refused;  /* the one more after them is refused */
        int ready;     /* pipe: a byte once they are registered */
} Holder;

static void hold_transfers(void *userdata) {
        const Holder *h = userdata;
        sd_bus *bus = bus_client_open();
        BusPending p[2] = {};
        for (int i = 0; i < h->imports; i++)
                import_async(bus, h->path, &p[i]);
        /* the daemon takes one connection's messages in order: after this answer, the imports are
         * running (or refused) */
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(bus, "ListSnapshots", &error, NULL, ""), >=, 0);
        bus_client_pump(bus, -1, 0);
        for (int i = 0; i < h->imports; i++)
                if (p[i].done)
                        g_error("uid %u's import %d ended at once: %s", getuid(), i, p[i].error.message);
        if (h->refused) {
                g_assert_cmpuint(import_file(bus, h->path, &error), ==, 0);
                bus_client_assert_error(&error, SD_BUS_ERROR_LIMITS_EXCEEDED);
        }
        g_assert_cmpint(write(h->ready, "x", 1), ==, 1);
        for (int i = 0; i < h->imports; i++) {
                bus_client_wait(bus, &p[i], 60000, "an import held at the gate");
                if (p[i].id == 0)
                        g_error("uid %u's import %d: %s", getuid(), i, p[i].error.message);
        }
        sd_bus_flush_close_unref(bus);
}

static void test_root_not_locked_out(void) {
        BusFixture b;
        if (!tests_require_root())
                return;
        g_autofree char *dir = g_dir_make_tmp("sectree-gate-XXXXXX", NULL);
        g_autofree char *gate = g_build_filename(dir, "open", NULL);
        g_autofree char *env_gate = g_strdup_printf("SECTREE_TEST_SNAPSHOT_GATE=%s", gate);
        char *env[] = { env_gate, NULL };
        g_assert_true(bus_fixture_start_all(&b, NULL, env));
        g_assert_cmpint(chmod(b.dir, 0755), ==, 0);
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        g_autofree char *path = write_json(b.dir, "basic.json", f, NULL);

        /* uid 1 runs two transfers, uids 2 to 5 one each, as many as users other than root may
         * together (a user's second only while fewer than three of the users' run); uid 6 may not */
        int ready[2];
        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        pid_t users[6];
        for (uid_t uid = 1; uid <= 6; uid++) {
                Holder h = { .path = path, .imports = uid == 1 ? 2 : uid < 6 ? 1 : 0, .refused = uid == 6,
                             .ready = ready[1] };
                users[uid - 1] = tests_as_uid_start(uid, hold_transfers, &h);
                char c;
                g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        }
        /* root still may */
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        BusPending mine = {};
        import_async(bus, path, &mine);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_assert_cmpint(bus_client_call(bus, "ListSnapshots", &error, NULL, ""), >=, 0);
        bus_client_pump(bus, -1, 0);
        if (mine.done)
                g_error("root's import next to six of other users' ended at once: %s", mine.error.message);
        g_assert_true(g_file_set_contents(gate, "", 0, NULL));
        bus_client_wait(bus, &mine, 60000, "root's import");
        if (mine.id == 0)
                g_error("root's import: %s", mine.error.message);
        for (int i = 0; i < 6; i++)
                g_assert_cmpint(tests_wait_status(users[i]), ==, 0);
        close(ready[0]);
        close(ready[1]);
        bus_fixture_finish(&b);
        g_assert_cmpint(unlink(gate), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/snapshot-load/root-keeps-answering", test_root_keeps_answering);
        g_test_add_func("/snapshot-load/budget", test_budget);
        g_test_add_func("/snapshot-load/root-not-locked-out", test_root_not_locked_out);
        return g_test_run();
}
