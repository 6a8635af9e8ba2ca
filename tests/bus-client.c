/* bus-client.c: sd-bus helpers for tests that talk to sectreed on the private bus */
#include "bus-client.h"
#include "tests-util.h"

#include <fcntl.h>
#include <poll.h>

#include "core/forest.h"
#include "core/util.h"
#include "snapshot/snapshot.h"

sd_bus *bus_client_open(void) {
        sd_bus *bus = NULL;
        int r = sd_bus_open_system(&bus);
        if (r < 0)
                g_error("connecting to the private bus: %s", g_strerror(-r));
        return bus;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusSignalLog *log = userdata;
        char *line = log->format(m);
        if (line)
                g_ptr_array_add(log->lines, line);
        return 0;
}

void bus_signal_log_start(BusSignalLog *log, sd_bus *bus, BusSignalFormat format) {
        *log = (BusSignalLog) { .lines = g_ptr_array_new_with_free_func(g_free), .format = format };
        g_assert_cmpint(sd_bus_match_signal(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE, NULL,
                                            on_signal, log),
                        >=, 0);
}

static bool log_has(const BusSignalLog *log, const char *want) {
        for (guint i = 0; i < log->lines->len; i++)
                if (streq(g_ptr_array_index(log->lines, i), want))
                        return true;
        return false;
}

bool bus_signal_log_wait(BusSignalLog *log, sd_bus *bus, const char *want, unsigned timeout_ms) {
        gint64 end = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        while (g_get_monotonic_time() < end) {
                if (log_has(log, want))
                        return true;
                if (sd_bus_process(bus, NULL) > 0)
                        continue;
                sd_bus_wait(bus, 20000);
        }
        return log_has(log, want);
}

void bus_signal_log_assert(BusSignalLog *log, sd_bus *bus, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *want = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        if (!bus_signal_log_wait(log, bus, want, TESTS_PATIENCE_MS))
                g_error("no signal '%s' within %u s", want, TESTS_PATIENCE_MS / 1000);
}

int bus_client_call(sd_bus *bus, const char *member, sd_bus_error *error, sd_bus_message **reply, const char *types,
                    ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(bus, &m, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE, member);
        g_assert_cmpint(r, >=, 0);
        va_list ap;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        g_assert_cmpint(r, >=, 0);
        return sd_bus_call(bus, m, BUS_CLIENT_CALL_TIMEOUT_USEC, error, reply);
}

uint64_t bus_client_create_snapshot(sd_bus *bus, pid_t root, const char *name, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = name ? bus_client_call(bus, "CreateSnapshot", error, &reply, "ua{sv}", (uint32_t) root, 1, "name", "s",
                                       name)
                     : bus_client_call(bus, "CreateSnapshot", error, &reply, "ua{sv}", (uint32_t) root, 0);
        uint64_t id = 0;
        if (r >= 0)
                g_assert_cmpint(sd_bus_message_read(reply, "t", &id), >, 0);
        return id;
}

uint64_t bus_client_create_ok(sd_bus *bus, pid_t root, const char *name) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t id = bus_client_create_snapshot(bus, root, name, &error);
        if (id == 0)
                g_error("CreateSnapshot(%d): %s: %s", root, error.name, error.message);
        return id;
}

GHashTable *bus_client_listed_tgids(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        if (bus_client_call(bus, "ListTasks", &error, &reply, "") < 0)
                g_error("ListTasks: %s", error.message);
        GHashTable *set = g_hash_table_new(NULL, NULL);
        uint32_t tid, tgid, ppid, depth;
        const char *comm, *mode;
        uint64_t filter;
        g_assert_cmpint(sd_bus_message_enter_container(reply, 'a', "(uuusstu)"), >, 0);
        while (sd_bus_message_read(reply, "(uuusstu)", &tid, &tgid, &ppid, &comm, &mode, &filter, &depth) > 0)
                g_hash_table_add(set, GUINT_TO_POINTER(tgid));
        return set;
}

static bool listed(void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = bus_client_open();
        g_autoptr(GHashTable) set = bus_client_listed_tgids(bus);
        return g_hash_table_contains(set, GUINT_TO_POINTER(*(const pid_t *) userdata));
}

bool bus_client_wait_listed(pid_t tgid, unsigned timeout_ms) {
        return tests_wait_for(listed, &tgid, timeout_ms);
}

void bus_client_assert_error(sd_bus_error *error, const char *name) {
        if (!sd_bus_error_is_set(error))
                g_error("expected %s, got success", name);
        if (!streq(error->name, name))
                g_error("expected %s, got %s: %s", name, error->name, error->message);
        sd_bus_error_free(error);
}

int bus_client_on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        BusPending *p = userdata;
        p->done = true;
        if (sd_bus_message_is_method_error(m, NULL))
                sd_bus_error_copy(&p->error, sd_bus_message_get_error(m));
        else if (streq(sd_bus_message_get_signature(m, true), "t"))
                g_assert_cmpint(sd_bus_message_read(m, "t", &p->id), >, 0);
        return 0;
}

void bus_client_pump(sd_bus *bus, int fd, short events) {
        struct pollfd p[2] = { { .fd = sd_bus_get_fd(bus), .events = (short) sd_bus_get_events(bus) },
                               { .fd = fd, .events = events } };
        (void) poll(p, fd >= 0 ? 2 : 1, 50);
        while (sd_bus_process(bus, NULL) > 0)
                ;
}

void bus_client_wait(sd_bus *bus, BusPending *p, unsigned timeout_ms, const char *what) {
        gint64 end = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        while (!p->done) {
                if (g_get_monotonic_time() > end)
                        g_error("%s did not answer within %u ms", what, timeout_ms);
                bus_client_pump(bus, -1, 0);
        }
}

GBytes *bus_client_export_pipe(sd_bus *bus, uint64_t id, const char *format, sd_bus_error *error) {
        int p[2];
        BusPending pending = {};
        g_assert_cmpint(pipe2(p, O_CLOEXEC | O_NONBLOCK), ==, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ExportSnapshot", bus_client_on_reply, &pending, "ths", id, p[1],
                                                 format),
                        >=, 0);
        close(p[1]);
        GByteArray *buf = g_byte_array_new();
        bool eof = false;
        gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
        while (!pending.done || !eof) {
                if (g_get_monotonic_time() > end)
                        g_error("ExportSnapshot(%" PRIu64 ", %s) into a pipe did not finish in 30 s", id, format);
                bus_client_pump(bus, eof ? -1 : p[0], POLLIN);
                for (;;) {
                        uint8_t chunk[65536];
                        ssize_t k = eof ? 0 : read(p[0], chunk, sizeof(chunk));
                        if (k > 0)
                                g_byte_array_append(buf, chunk, (guint) k);
                        else {
                                eof = eof || k == 0;
                                break;
                        }
                }
        }
        close(p[0]);
        if (sd_bus_error_is_set(&pending.error)) {
                sd_bus_error_move(error, &pending.error);
                g_byte_array_unref(buf);
                return NULL;
        }
        return g_byte_array_free_to_bytes(buf);
}

uint64_t bus_client_import_pipe(sd_bus *bus, const void *data, size_t size, sd_bus_error *error) {
        int p[2];
        BusPending pending = {};
        size_t pos = 0;
        g_assert_cmpint(pipe2(p, O_CLOEXEC | O_NONBLOCK), ==, 0);
        g_assert_cmpint(sd_bus_call_method_async(bus, NULL, BUS_CLIENT_DEST, BUS_CLIENT_PATH, BUS_CLIENT_IFACE,
                                                 "ImportSnapshot", bus_client_on_reply, &pending, "h", p[0]),
                        >=, 0);
        close(p[0]);
        gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
        while (!pending.done) {
                if (g_get_monotonic_time() > end)
                        g_error("ImportSnapshot from a pipe did not finish in 30 s");
                while (p[1] >= 0 && pos < size) {
                        ssize_t k = write(p[1], (const char *) data + pos, size - pos);
                        if (k <= 0)
                                break;
                        pos += (size_t) k;
                }
                if (p[1] >= 0 && (pos == size || errno == EPIPE)) {
                        close(p[1]);
                        p[1] = -1;
                }
                bus_client_pump(bus, p[1], POLLOUT);
        }
        if (p[1] >= 0)
                close(p[1]);
        if (sd_bus_error_is_set(&pending.error))
                sd_bus_error_move(error, &pending.error);
        return pending.id;
}

Forest *bus_client_export_forest(sd_bus *bus, uint64_t id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GBytes) data = bus_client_export_pipe(bus, id, "json", &error);
        if (!data)
                g_error("ExportSnapshot %" PRIu64 ": %s", id, error.message);
        gsize size;
        const void *bytes = g_bytes_get_data(data, &size);
        Forest *f = NULL;
        g_autofree char *message = NULL;
        if (snapshot_read_data(bytes, size, &f, &message) < 0)
                g_error("snapshot %" PRIu64 " does not read back: %s", id, message);
        return f;
}
