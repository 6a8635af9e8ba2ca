/* verbs-snapshot-file.c: the offline verbs: `show --file F` (a snapshot's metadata), `validate F`
 * and `diff A B`; no daemon is needed unless diff is given a stored snapshot's id */
#include "verbs-snapshot-file.h"

#include "core/escape.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "output.h"
#include "snapshot-load.h"
#include "snapshot/snapshot-diff.h"
#include "snapshot/snapshot-units.h"

/* diff's exit status, as diff(1): 0 same, 1 different (2, trouble, is the verb's failure status). */
#define DIFF_EXIT_DIFFERENT 1

typedef struct SnapshotCounts {
        size_t filters, processes, threads, listeners, holders;
} SnapshotCounts;

static SnapshotCounts snapshot_counts(const Forest *f) {
        SnapshotCounts n = { .filters = f->n_filters, .processes = f->n_processes, .listeners = f->n_listeners };
        for (size_t i = 0; i < f->n_processes; i++)
                n.threads += f->processes[i]->n_threads;
        for (size_t i = 0; i < f->n_listeners; i++)
                n.holders += f->listeners[i]->n_holders;
        return n;
}

static const char *input_name(const char *path) {
        return streq(path, "-") ? "(stdin)" : path;
}

/* ---- show --file F ---- */

static const char *consistency_note(SnapshotConsistency c) {
        switch (c) {
        case SNAPSHOT_CONSISTENCY_ITERATOR:
                return " (one BPF iterator pass saw every task)";
        case SNAPSHOT_CONSISTENCY_FROZEN:
                return " (every task was stopped before any was read)";
        default:
                return " (not said)";
        }
}

/* A string of the file, escaped for the terminal (escape.h); "(unknown)" for none. */
static char *text_or_unknown(const char *s) {
        return str_escape(s ? s : "(unknown)");
}

static void print_root(const Forest *f) {
        const Process *p = f->root ? forest_find_process(f, f->root) : NULL;
        if (!f->root)
                puts("       Root: the whole machine");
        else if (p) {
                char comm[COMM_ESCAPED_MAX];
                printf("       Root: process %d (%s)\n", f->root, str_escape_buf(p->comm, comm, sizeof(comm)));
        }
        else
                printf("       Root: process %d\n", f->root);
}

/* The distinct (unit, user unit, machine) of the snapshot's processes (format version 2), each with
 * its first process and the number of processes in it, sorted by unit. */
typedef struct UnitGroup {
        const Process *p;
        size_t n;
} UnitGroup;

static int cmp_or_null(const char *a, const char *b) {
        return a && b ? strcmp(a, b) : (a != NULL) - (b != NULL);
}

static int process_units_cmp(const void *a, const void *b) {
        const Process *x = *(const Process *const *) a, *y = *(const Process *const *) b;
        int c = cmp_or_null(x->unit, y->unit);
        if (c == 0)
                c = cmp_or_null(x->user_unit, y->user_unit);
        return c ?: cmp_or_null(x->machine, y->machine);
}

static int unit_groups(const Forest *f, UnitGroup **ret, size_t *ret_n) {
        _cleanup_free_ const Process **ps = calloc(f->n_processes + 1, sizeof(Process *));
        _cleanup_free_ UnitGroup *g = calloc(f->n_processes + 1, sizeof(UnitGroup));
        size_t n = 0, k = 0;
        if (!ps || !g)
                return log_oom();
        for (size_t i = 0; i < f->n_processes; i++)
                if (f->processes[i]->unit || f->processes[i]->user_unit || f->processes[i]->machine)
                        ps[n++] = f->processes[i];
        qsort_safe(ps, n, sizeof(Process *), process_units_cmp);
        for (size_t i = 0; i < n; i++) {
                if (k == 0 || process_units_cmp(&ps[i], &g[k - 1].p) != 0)
                        g[k++] = (UnitGroup) { .p = ps[i] };
                g[k - 1].n++;
        }
        *ret = TAKE_PTR(g);
        *ret_n = k;
        return 0;
}

/* "sshd.service", "user@1000.service/app.service", "machine-bar.scope (machine bar)", escaped. */
static void print_unit_group(const UnitGroup *g) {
        _cleanup_free_ char *unit = str_escape(g->p->unit ?: ""), *user = str_escape(g->p->user_unit ?: ""),
                            *machine = str_escape(g->p->machine ?: "");
        if (!unit || !user || !machine)
                return (void) log_oom();
        printf("             %s%s%s", unit, *unit && *user ? "/" : "", user);
        if (*machine)
                printf("%smachine %s%s", *unit || *user ? " (" : "", machine, *unit || *user ? ")" : "");
        printf(": %zu process%s\n", g->n, g->n == 1 ? "" : "es");
}

static int units_print(const Forest *f) {
        _cleanup_free_ UnitGroup *g = NULL;
        size_t n;
        int r = unit_groups(f, &g, &n);
        if (r < 0)
                return r;
        if (n > 0) /* none recorded (a version 1 snapshot, or no process in a unit): no line */
                printf("      Units: %zu\n", n);
        for (size_t i = 0; i < n; i++)
                print_unit_group(&g[i]);
        return 0;
}

static json_t *units_json(const Forest *f) {
        _cleanup_free_ UnitGroup *g = NULL;
        size_t n;
        json_t *a = json_array();
        if (!a || unit_groups(f, &g, &n) < 0)
                return json_decref(a), NULL;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(a, json_pack("{s:s?, s:s?, s:s?, s:I}", "unit", g[i].p->unit, "user_unit",
                                                       g[i].p->user_unit, "machine", g[i].p->machine, "processes",
                                                       (json_int_t) g[i].n)) < 0)
                        return json_decref(a), NULL;
        return a;
}

static int metadata_print(const char *path, const Forest *f, const SnapshotFileInfo *info) {
        char ts[TIMESTAMP_MAX], rel[TIMESTAMP_MAX];
        SnapshotCounts n = snapshot_counts(f);
        _cleanup_free_ char *file = str_escape(input_name(path)), *name = str_escape(f->snapshot.name ?: "(none)"),
                            *host = text_or_unknown(f->host.hostname), *kernel = text_or_unknown(f->host.kernel),
                            *arch = text_or_unknown(f->host.arch), *backend = text_or_unknown(f->backend);
        if (!file || !name || !host || !kernel || !arch || !backend)
                return log_oom();
        printf("       File: %s (%s, %zu bytes)\n", file, snapshot_format_to_string(info->format), info->size);
        printf("       Name: %s\n", name);
        printf("      Taken: %s", format_timestamp(f->created_at_usec, ts, sizeof(ts)));
        if (f->created_at_usec)
                printf(" (%s)", format_timestamp_relative(f->created_at_usec, now_usec(CLOCK_REALTIME), rel, sizeof(rel)));
        printf("\n   Taken by: uid %" PRIu32 "\n", f->snapshot.taken_by_uid);
        printf("       Host: %s (kernel %s, %s)\n", host, kernel, arch);
        printf("    Backend: %s\n", backend);
        printf("   Identity: %s\n", identity_kind_to_string(f->identity));
        printf("Consistency: %s%s\n", snapshot_consistency_to_string(f->snapshot.consistency) ?: "(unknown)",
               consistency_note(f->snapshot.consistency));
        print_root(f);
        printf("  Processes: %zu\n", n.processes);
        printf("    Threads: %zu\n", n.threads);
        printf("    Filters: %zu\n", n.filters);
        printf("  Listeners: %zu (%zu holder%s)\n", n.listeners, n.holders, n.holders == 1 ? "" : "s");
        return units_print(f);
}

static json_t *metadata_json(const char *path, const Forest *f, const SnapshotFileInfo *info) {
        char ts[TIMESTAMP_MAX];
        SnapshotCounts n = snapshot_counts(f);
        return json_pack("{s:s, s:s, s:I, s:s?, s:s, s:I, s:I, s:{s:s?, s:s?, s:s?}, s:s?, s:s, s:s?, s:i, "
                         "s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                         "file", input_name(path), "format", snapshot_format_to_string(info->format),
                         "size", (json_int_t) info->size, "name", f->snapshot.name,
                         "created", format_timestamp_rfc3339(f->created_at_usec, ts, sizeof(ts)),
                         "created_usec", (json_int_t) f->created_at_usec,
                         "taken_by_uid", (json_int_t) f->snapshot.taken_by_uid,
                         "host", "kernel", f->host.kernel, "arch", f->host.arch, "hostname", f->host.hostname,
                         "backend", f->backend, "identity", identity_kind_to_string(f->identity),
                         "consistency", snapshot_consistency_to_string(f->snapshot.consistency),
                         "root", (int) f->root, "processes", (json_int_t) n.processes,
                         "threads", (json_int_t) n.threads, "filters", (json_int_t) n.filters,
                         "listeners", (json_int_t) n.listeners, "holders", (json_int_t) n.holders,
                         "version", (json_int_t) snapshot_format_version_of(f), "units", units_json(f));
}

int show_snapshot_file(Context *c) {
        _cleanup_(forest_freep) Forest *f = NULL;
        SnapshotFileInfo info;
        int r = snapshot_file_load(c->file, &f, &info);
        if (r < 0)
                return r;
        if (c->json) {
                json_auto_t *doc = metadata_json(c->file, f, &info);
                return json_print_document(doc);
        }
        r = metadata_print(c->file, f, &info);
        return r < 0 ? r : output_flush();
}

/* ---- validate F ---- */

static int validate_json(const char *path, const Forest *f, const SnapshotFileInfo *info, const char *error) {
        json_auto_t *doc = NULL;
        if (error)
                doc = json_pack("{s:s, s:b, s:s}", "file", input_name(path), "valid", false, "error", error);
        else {
                SnapshotCounts n = snapshot_counts(f);
                doc = json_pack("{s:s, s:b, s:s, s:I, s:I, s:I, s:I}", "file", input_name(path), "valid", true,
                                "format", snapshot_format_to_string(info->format), "processes",
                                (json_int_t) n.processes, "threads", (json_int_t) n.threads, "filters",
                                (json_int_t) n.filters, "listeners", (json_int_t) n.listeners);
        }
        return json_print_document(doc);
}

int verb_validate(Context *c, char **args, size_t n_args) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *error = NULL;
        SnapshotFileInfo info = {};
        const char *path = args[0];
        int r = snapshot_file_read(path, &f, &info, &error);
        if (r < 0 && !(r == -EINVAL && error))
                return ctl_error_errno(r, "Failed to read %s: %m", input_name(path));
        if (c->json) {
                int k = validate_json(path, f, &info, error);
                if (k < 0)
                        return k;
        }
        if (r < 0) /* refused: the validator's message, on one line */
                return ctl_error_errno(r, "Invalid snapshot %s: %s", input_name(path), error);
        if (!c->json) {
                SnapshotCounts n = snapshot_counts(f);
                printf("valid: %zu process%s, %zu thread%s, %zu filter%s\n", n.processes,
                       n.processes == 1 ? "" : "es", n.threads, n.threads == 1 ? "" : "s", n.filters,
                       n.filters == 1 ? "" : "s");
        }
        return output_flush();
}

/* ---- diff A B ---- */

static int diff_print_json(const SnapshotDiff *d) {
        _cleanup_free_ char *text = NULL;
        json_error_t error;
        int r = snapshot_diff_format_json(d, &text);
        if (r < 0)
                return log_oom();
        json_auto_t *doc = json_loads(text, 0, &error);
        if (!doc)
                return ctl_error_errno(-EINVAL, "Failed to format the differences: %s", error.text);
        return json_print_document(doc);
}

int verb_diff(Context *c, char **args, size_t n_args) {
        _cleanup_(forest_freep) Forest *a = NULL, *b = NULL;
        _cleanup_(snapshot_diff_freep) SnapshotDiff *d = NULL;
        if (streq(args[0], "-") && streq(args[1], "-"))
                return usage_error("Only one of the two snapshots can be read from stdin");
        int r = snapshot_load_operand(c, args[0], &a);
        if (r < 0)
                return r;
        r = snapshot_load_operand(c, args[1], &b);
        if (r < 0)
                return r;
        r = snapshot_diff(a, b, &d);
        if (r < 0)
                return ctl_error_errno(r, "Failed to compare the snapshots: %m");
        if (c->json)
                r = diff_print_json(d);
        else if ((r = snapshot_diff_print(d, stdout)) < 0)
                r = ctl_error_errno(r, "Failed to write the output: %m");
        if (r < 0)
                return r;
        return snapshot_diff_is_empty(d) ? 0 : DIFF_EXIT_DIFFERENT;
}
