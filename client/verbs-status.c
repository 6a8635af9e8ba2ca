/* verbs-status.c: `status` (the daemon's properties) and `rescan` */
#include "ctl.h"
#include "json-out.h"
#include "manager.h"
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

static const char *or_unknown(const char *s) {
        return s ? s : "(unknown)";
}

static void status_print(const ManagerProperties *p) {
        char ts[TIMESTAMP_MAX], rel[TIMESTAMP_MAX];
        printf("  Version: %s\n", or_unknown(p->version));
        printf("  Backend: %s\n", or_unknown(p->backend));
        printf(" Identity: %s\n", or_unknown(p->identity));
        printf("    Tasks: %" PRIu32 "\n", p->tasks);
        printf("  Filters: %" PRIu32 "\n", p->filters);
        printf("Listeners: %" PRIu32 "\n", p->listeners);
        printf("Last scan: %s", format_timestamp(p->last_scan_usec, ts, sizeof(ts)));
        if (p->last_scan_usec)
                printf(" (%s)", format_timestamp_relative(p->last_scan_usec, now_usec(CLOCK_REALTIME), rel, sizeof(rel)));
        putchar('\n');
}

int verb_status(Context *c, char **args, size_t n_args) {
        sd_bus *bus;
        _cleanup_(manager_properties_done) ManagerProperties p = {};
        int r = ctl_bus(c, &bus);
        if (r >= 0)
                r = manager_get_properties(bus, &p);
        if (r < 0)
                return r;
        if (c->json) {
                json_auto_t *doc = status_json(&p);
                return json_print_document(doc);
        }
        status_print(&p);
        return output_flush();
}

int verb_rescan(Context *c, char **args, size_t n_args) {
        sd_bus *bus;
        int r = ctl_bus(c, &bus);
        return r < 0 ? r : manager_rescan(bus);
}
