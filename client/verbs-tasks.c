/* verbs-tasks.c: `ps [PID|COMM...]` (the tasks the daemon lists) and `chain TID` (one task's filters, live or
 * with --file in a snapshot) */
#include "verbs-tasks.h"

#include <fnmatch.h>

#include "chain.h"
#include "ctl-args.h"
#include "json-out.h"
#include "manager-calls.h"
#include "manager-units.h"
#include "output.h"
#include "pager.h"
#include "table.h"

#define NUM_BUF 24

static char *format_u64(uint64_t v, char *buf) {
        snprintf(buf, NUM_BUF, "%" PRIu64, v);
        return buf;
}

static char *format_id(uint64_t id, char *buf) {
        return id ? format_u64(id, buf) : strcpy(buf, "-");
}

/* MODE, and "(stale)" after it when the daemon could not read the task at its last pass; UNIT,
 * the process's unit (or user unit under its manager), "-" for none. */
static int ps_add_row(Table *t, const TaskRecord *x, const UnitList *units) {
        char tid[NUM_BUF], tgid[NUM_BUF], ppid[NUM_BUF], depth[NUM_BUF], head[NUM_BUF], mode[NUM_BUF + 8], unit[512];
        const char *label = unit_record_label(unit_list_find(units, x->tgid), unit, sizeof(unit));
        snprintf(mode, sizeof(mode), "%s%s", x->mode, x->stale ? " (stale)" : "");
        const char *cells[] = { format_u64(x->tid, tid), format_u64(x->tgid, tgid), format_u64(x->ppid, ppid), x->comm,
                                mode, format_u64(x->depth, depth), format_id(x->head, head), label ?: "-" };
        return table_add_row(t, cells);
}

static int ps_print_table(const TaskList *l, const UnitList *units, bool legend) {
        static const char *const headers[] = { "TID", "TGID", "PPID", "COMM", "MODE", "DEPTH", "FILTER", "UNIT" };
        _cleanup_(table_freep) Table *t = table_new(headers, ELEMENTSOF(headers),
                                                 TABLE_COLUMN(0) | TABLE_COLUMN(1) | TABLE_COLUMN(2) |
                                                 TABLE_COLUMN(5) | TABLE_COLUMN(6));
        if (!t)
                return log_oom();
        for (size_t i = 0; i < l->n; i++)
                if (ps_add_row(t, &l->items[i], units) < 0)
                        return log_oom();
        int r = table_print(t, stdout, legend);
        if (r < 0)
                return r;
        if (legend)
                printf("\n%zu task%s listed.\n", l->n, l->n == 1 ? "" : "s");
        return output_flush();
}

/* A string, or null for none. */
static json_t *json_string_or_null(const char *s) {
        return s ? json_string(s) : json_null();
}

/* The table's row as JSON, with the process's units as units --json names them. */
static json_t *ps_json_task(const TaskRecord *x, const UnitList *units) {
        const UnitRecord *u = unit_list_find(units, x->tgid);
        json_t *o = json_task_record(x);
        if (o && (json_set(o, "unit", json_string_or_null(u ? u->unit : NULL)) < 0 ||
                  json_set(o, "user_unit", json_string_or_null(u ? u->user_unit : NULL)) < 0)) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static json_t *ps_json(const TaskList *l, const UnitList *units) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < l->n; i++)
                if (json_array_append_new(a, ps_json_task(&l->items[i], units)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a ? json_pack("{s:o}", "tasks", a) : NULL;
}

/* ps's arguments: a number names a process (its tasks) or a thread; anything else is a glob on the
 * task's name. A task is shown when it matches one of them, or when there are none. */
static bool task_matches(const TaskRecord *t, char **args, size_t n_args) {
        for (size_t i = 0; i < n_args; i++) {
                uint64_t pid;
                if (safe_atou64(args[i], &pid) >= 0) {
                        if (t->tgid == pid || t->tid == pid)
                                return true;
                } else if (fnmatch(args[i], t->comm, 0) == 0)
                        return true;
        }
        return n_args == 0;
}

/* Keep only the tasks the arguments name, in the units --unit, --machine and --user name. */
static void task_list_filter(TaskList *l, char **args, size_t n_args, const Context *c, const UnitList *units) {
        size_t k = 0;
        for (size_t i = 0; i < l->n; i++) {
                if (task_matches(&l->items[i], args, n_args) &&
                    unit_filter_matches(c, unit_list_find(units, l->items[i].tgid))) {
                        l->items[k++] = l->items[i];
                        continue;
                }
                free(l->items[i].comm);
                free(l->items[i].mode);
        }
        l->n = k;
}

int verb_ps(Context *c, char **args, size_t n_args) {
        _cleanup_(task_list_done) TaskList l = {};
        _cleanup_(unit_list_done) UnitList units = {};
        int r = context_list_tasks(c, &l);
        if (r < 0)
                return r;
        r = context_list_units(c, &units);
        if (r < 0)
                return r;
        task_list_filter(&l, args, n_args, c, &units);
        if (c->json) {
                json_auto_t *doc = ps_json(&l, &units);
                return json_print_document(doc);
        }
        pager_open(c->no_pager);
        return ps_print_table(&l, &units, c->legend);
}

static char *flags_join(char * const *flags, char *buf, size_t len) {
        size_t k = 0;
        buf[0] = 0;
        for (size_t i = 0; flags && flags[i]; i++)
                k += snprintf(buf + k, k < len ? len - k : 0, "%s%s", i ? "," : "", flags[i]);
        if (!buf[0])
                snprintf(buf, len, "-");
        return buf;
}

static int chain_print_table(const Chain *ch, bool legend) {
        static const char *const headers[] = { "POS", "ID", "LENGTH", "DIGEST", "FLAGS" };
        _cleanup_(table_freep) Table *t = table_new(headers, ELEMENTSOF(headers),
                                                 TABLE_COLUMN(0) | TABLE_COLUMN(1) | TABLE_COLUMN(2));
        if (!t)
                return log_oom();
        for (size_t i = 0; i < ch->n; i++) {
                const FilterRecord *f = &ch->filters[i].meta;
                char pos[NUM_BUF], id[NUM_BUF], len[NUM_BUF], flags[128];
                const char *cells[] = { format_u64(i, pos), format_u64(f->id, id), format_u64(f->length, len),
                                        f->digest, flags_join(f->flags, flags, sizeof(flags)) };
                if (table_add_row(t, cells) < 0)
                        return log_oom();
        }
        int r = table_print(t, stdout, legend);
        if (r < 0)
                return r;
        if (legend)
                printf("\n%zu filter%s, newest first.\n", ch->n, ch->n == 1 ? "" : "s");
        return output_flush();
}

static json_t *chain_json(const Chain *ch) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < ch->n; i++) {
                json_t *x = json_filter_record(&ch->filters[i].meta);
                if (json_array_append_new(a, x) < 0 || json_set(x, "position", json_integer((json_int_t) i)) < 0 ||
                    json_set(x, "identity", json_string(ch->filters[i].identity)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a ? json_pack("{s:I, s:o}", "tid", (json_int_t) ch->tid, "filters", a) : NULL;
}

int verb_chain(Context *c, char **args, size_t n_args) {
        uint32_t tid;
        _cleanup_(chain_done) Chain ch = {};
        int r = parse_pid_arg("task id", args[0], &tid);
        if (r < 0)
                return r;
        r = chain_get(c, tid, &ch);
        if (r < 0)
                return r;
        if (c->json) {
                json_auto_t *doc = chain_json(&ch);
                return json_print_document(doc);
        }
        return chain_print_table(&ch, c->legend);
}
