/* figure-flood.c: figure 9, root's calls and the daemon's memory while one unprivileged user holds
 * tens of thousands of filters, with the per-uid filter budget (the default) and without it
 * (--filter-budget=0), side by side */
#include <systemd/sd-bus.h>

#include "daemon-fixture.h"
#include "figures.h"
#include "flood.h"

/*
 * For each daemon (budget, then none), on a private bus: root's calls are timed on the idle
 * machine, then nobody starts FLOOD_PROCESSES processes that each stack FLOOD_FILTERS filters of
 * FLOOD_LEN instructions (the kernel's limit per chain is about 150 such filters) while the daemon
 * watches; once the daemon counts them all, the same calls again, and Rescan (a full pass, as the
 * refresh every 60 s makes); and one ListTasks the moment the processes have installed them all,
 * while the daemon still reads their events. Each call's value is the median of CALLS calls from one client that
 * reads the whole reply. Memory: VmRSS and VmHWM with the flood in place after the passes. The
 * ratio is each figure against the same figure without a budget.
 */

#define FLOOD_PROCESSES 270
#define SMOKE_FLOOD_PROCESSES 27
#define FLOOD_FILTERS 100
#define FLOOD_LEN 200
#define CALLS 5
#define RESCANS 3
#define SETTLE_TIMEOUT_SEC 300

typedef enum Call {
        CALL_LIST_FILTERS,
        CALL_LIST_TASKS,
        CALL_GET_FILTER,
        CALL_COUNTS,
        CALL_RESCAN,
        _CALL_MAX,
} Call;

static const char *const call_names[_CALL_MAX] = {
        [CALL_LIST_FILTERS] = "ListFilters",
        [CALL_LIST_TASKS] = "ListTasks",
        [CALL_GET_FILTER] = "GetFilter",
        [CALL_COUNTS] = "Get Filters",
        [CALL_RESCAN] = "Rescan",
};

typedef struct FloodRun {
        double idle_msec[_CALL_MAX], flood_msec[_CALL_MAX];
        double catchup_msec; /* ListTasks the moment the filters are installed: the daemon still reads them */
        uint64_t rss_kib, hwm_kib, idle_rss_kib;
        uint32_t filters;
} FloodRun;

static uint64_t status_kib(pid_t pid, const char *name) {
        char path[64], line[256];
        unsigned long long v = 0;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, name, strlen(name)) == 0 && sscanf(line + strlen(name), " %llu", &v) == 1)
                        break;
        return v;
}

static int get_filters(sd_bus *bus, uint32_t *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_get_property_trivial(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "Filters",
                                            &error, 'u', ret);
        sd_bus_error_free(&error);
        return r;
}

/* The first filter ListFilters names, for GetFilter. */
static int first_filter(sd_bus *bus, uint64_t *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "ListFilters", &error,
                                   &reply, "");
        sd_bus_error_free(&error);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ttusuas)");
        if (r > 0)
                r = sd_bus_message_enter_container(reply, 'r', "ttusuas");
        if (r > 0)
                r = sd_bus_message_read(reply, "t", ret);
        return r > 0 ? 0 : -ENOENT;
}

static int time_call(sd_bus *bus, Call c, uint64_t filter, double *ret_msec) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint32_t n;
        uint64_t start = now_nsec();
        int r;

        if (c == CALL_COUNTS)
                r = get_filters(bus, &n);
        else if (c == CALL_GET_FILTER)
                r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", "GetFilter",
                                       &error, &reply, "t", filter);
        else
                r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager", call_names[c],
                                       &error, &reply, "");
        *ret_msec = msec_since(start);
        if (r < 0)
                log_error_errno(r, "%s failed: %s", call_names[c], error.message ?: strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

static int time_calls(sd_bus *bus, double ret[_CALL_MAX]) {
        uint64_t filter = 0;
        int r = first_filter(bus, &filter);

        if (r < 0)
                return log_error_errno(r, "ListFilters lists no filter.");
        for (Call c = 0; c < _CALL_MAX; c++) {
                double samples[CALLS];
                size_t n = c == CALL_RESCAN ? RESCANS : CALLS;
                for (size_t i = 0; i < n; i++) {
                        r = time_call(bus, c, filter, &samples[i]);
                        if (r < 0)
                                return r;
                }
                ret[c] = median(samples, n);
        }
        return 0;
}

/* Until the daemon counts at least want filters. */
static int wait_filters(sd_bus *bus, uint32_t want, uint32_t *ret) {
        uint64_t end = now_nsec() + SETTLE_TIMEOUT_SEC * 1000000000ULL;
        uint32_t n = 0;

        while (now_nsec() < end) {
                if (get_filters(bus, &n) >= 0 && n >= want) {
                        *ret = n;
                        return 0;
                }
                usleep(100 * 1000);
        }
        return log_error_errno(-ETIMEDOUT, "The daemon counts %" PRIu32 " filters after %d s, not %" PRIu32 ".", n,
                               SETTLE_TIMEOUT_SEC, want);
}

static int measure(const char *arg, size_t processes, FloodRun *ret) {
        _cleanup_(daemon_fixture_freep) DaemonFixture *d = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(flood_freep) Flood *witness = NULL, *flood = NULL;
        DaemonFixtureOptions fo = { .arg = arg, .ready_timeout_sec = 120 };
        uint32_t before = 0;
        int r = daemon_fixture_new(&fo, &d);

        if (r >= 0)
                r = daemon_fixture_connect(d, &bus);
        if (r >= 0)
                r = get_filters(bus, &before);
        /* One filter of our own, so that GetFilter has something to ask for also on a machine
         * where nothing else runs filtered. */
        if (r >= 0)
                r = flood_start(1, 1, 2, &witness);
        if (r >= 0)
                r = wait_filters(bus, before + 1, &before);
        if (r >= 0)
                r = time_calls(bus, ret->idle_msec);
        if (r < 0)
                return r;
        pid_t pid = daemon_fixture_daemon_pid(d);
        ret->idle_rss_kib = status_kib(pid, "VmRSS:");
        r = flood_start(processes, FLOOD_FILTERS, FLOOD_LEN, &flood);
        if (r >= 0)
                r = time_call(bus, CALL_LIST_TASKS, 0, &ret->catchup_msec);
        if (r >= 0)
                r = wait_filters(bus, before + (uint32_t) flood_filters(flood), &ret->filters);
        if (r >= 0)
                r = time_calls(bus, ret->flood_msec);
        if (r < 0)
                return r;
        ret->rss_kib = status_kib(pid, "VmRSS:");
        ret->hwm_kib = status_kib(pid, "VmHWM:");
        if (!daemon_fixture_daemon_alive(d))
                return log_error_errno(-ECHILD, "sectreed died under the flood.");
        return 0;
}

int figure_flood_run(const BenchOptions *o, Report *report) {
        size_t processes = o->smoke ? SMOKE_FLOOD_PROCESSES : FLOOD_PROCESSES;
        size_t filters = processes * FLOOD_FILTERS;
        FloodRun with, without;
        char name[128], note[160];
        int r = measure(NULL, processes, &with);

        if (r >= 0)
                r = measure("--filter-budget=0", processes, &without);
        if (r < 0)
                return r;
        for (Call c = 0; r >= 0 && c < _CALL_MAX; c++) {
                snprintf(name, sizeof(name), "root's %s, nobody holds %zu filters", call_names[c], filters);
                snprintf(note, sizeof(note), "idle %.1f ms; no budget: %.1f ms (idle %.1f)", with.idle_msec[c],
                         without.flood_msec[c], without.idle_msec[c]);
                r = report_add_ms(report, 0, name, with.flood_msec[c], with.flood_msec[c] / without.flood_msec[c],
                                  "no budget", NULL, VERDICT_NONE, note);
        }
        if (r >= 0) {
                snprintf(name, sizeof(name), "root's ListTasks as nobody's %zu filters come in", filters);
                snprintf(note, sizeof(note), "no budget: %.1f ms", without.catchup_msec);
                r = report_add_ms(report, 0, name, with.catchup_msec, with.catchup_msec / without.catchup_msec,
                                  "no budget", NULL, VERDICT_NONE, note);
        }
        if (r >= 0) {
                snprintf(note, sizeof(note), "idle %.1f MiB; no budget: %.1f MiB (peak %.1f)", with.idle_rss_kib / 1024.0,
                         without.rss_kib / 1024.0, without.hwm_kib / 1024.0);
                r = report_add_value(report, 0, "daemon RSS with the flood, after the passes", with.rss_kib / 1024.0,
                                     "MiB", (double) with.rss_kib / (double) without.rss_kib, "no budget", NULL,
                                     VERDICT_NONE, note);
        }
        if (r >= 0) {
                snprintf(note, sizeof(note), "no budget: %.1f MiB", without.hwm_kib / 1024.0);
                r = report_add_value(report, 0, "daemon peak RSS (VmHWM)", with.hwm_kib / 1024.0, "MiB",
                                     (double) with.hwm_kib / (double) without.hwm_kib, "no budget", NULL, VERDICT_NONE,
                                     note);
        }
        if (r >= 0 && (with.filters < filters || without.filters < filters))
                report_check_failed(report, "The daemon counted %" PRIu32 " and %" PRIu32 " filters, not %zu.",
                                    with.filters, without.filters, filters);
        return r;
}
