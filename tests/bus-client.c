/* bus-client.c: sd-bus helpers for tests that talk to sectreed on the private bus */
#include "bus-client.h"

#include "util.h"

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
        if (!bus_signal_log_wait(log, bus, want, 3000))
                g_error("no signal '%s' within 3 s", want);
}
