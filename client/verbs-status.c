/* verbs-status.c: `status` (the daemon's properties) and `rescan` */
#include "verbs-status.h"

#include "core/escape.h"
#include "json-out.h"
#include "manager-calls.h"
#include "manager-properties.h"
#include "output.h"

static json_t *timestamp_json(uint64_t usec) {
        char ts[TIMESTAMP_MAX];
        return usec ? json_string(format_timestamp_rfc3339(usec, ts, sizeof(ts))) : json_null();
}

static json_t *status_json(const ManagerProperties *p) {
        return json_pack("{s:s?, s:s?, s:s?, s:I, s:I, s:I, s:I, s:o}",
                         "version", p->version, "backend", p->backend, "identity", p->identity,
                         "tasks", (json_int_t) p->tasks, "filters", (json_int_t) p->filters,
                         "listeners", (json_int_t) p->listeners, "last_scan_usec", (json_int_t) p->last_scan_usec,
                         "last_scan", timestamp_json(p->last_scan_usec));
}

/* A property's string, escaped for the terminal (escape.h); "(unknown)" for none. */
static char *text_or_unknown(const char *s) {
        return str_escape(s ? s : "(unknown)");
}

static int status_print(const ManagerProperties *p) {
        char ts[TIMESTAMP_MAX], rel[TIMESTAMP_MAX];
        _cleanup_free_ char *version = text_or_unknown(p->version), *backend = text_or_unknown(p->backend),
                            *identity = text_or_unknown(p->identity);
        if (!version || !backend || !identity)
                return log_oom();
        printf("  Version: %s\n", version);
        printf("  Backend: %s\n", backend);
        printf(" Identity: %s\n", identity);
        printf("    Tasks: %" PRIu32 "\n", p->tasks);
        printf("  Filters: %" PRIu32 "\n", p->filters);
        printf("Listeners: %" PRIu32 "\n", p->listeners);
        printf("Last scan: %s", format_timestamp(p->last_scan_usec, ts, sizeof(ts)));
        if (p->last_scan_usec)
                printf(" (%s)", format_timestamp_relative(p->last_scan_usec, now_usec(CLOCK_REALTIME), rel, sizeof(rel)));
        putchar('\n');
        return 0;
}

int verb_status(Context *c, char **args, size_t n_args) {
        sd_bus *bus;
        _cleanup_(manager_properties_done) ManagerProperties p = {};
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = manager_get_properties(bus, &p);
        if (r < 0)
                return r;
        if (c->json) {
                json_auto_t *doc = status_json(&p);
                return json_print_document(doc);
        }
        r = status_print(&p);
        return r < 0 ? r : output_flush();
}

int verb_rescan(Context *c, char **args, size_t n_args) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        return r < 0 ? r : manager_rescan(bus);
}
