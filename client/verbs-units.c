/* verbs-units.c: `units`: each systemd unit or container with its tasks, distinct chains and a
 * one-line verdict */
#include "verbs-units.h"

#include "bus.h"
#include "chain.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-calls.h"
#include "manager-units.h"
#include "output.h"
#include "pager.h"
#include "table.h"
#include "unit-verdict.h"

#define VERDICT_MAX 256

/* The tasks of one unit (or user unit, or machine; or of none). */
typedef struct UnitGroup {
        const UnitRecord *unit; /* the first process met of it; NULL: processes without a unit */
        size_t tasks, unconfined, strict;
        uint64_t *heads;        /* the distinct heads of its tasks' chains */
        uint32_t *head_tids;    /* a task of each, to fetch its chain */
        size_t n_heads, heads_allocated;
        uint64_t *filters;      /* the distinct filters of those chains */
        size_t n_filters, filters_allocated;
        unsigned denied;        /* the calls every chain denies */
        bool unreadable;        /* a chain's programs could not be read */
} UnitGroup;

typedef struct UnitGroups {
        UnitGroup *items;
        size_t n, allocated;
} UnitGroups;

static void unit_groups_done(UnitGroups *g) {
        for (size_t i = 0; i < g->n; i++) {
                free(g->items[i].heads);
                free(g->items[i].head_tids);
                free(g->items[i].filters);
        }
        free(g->items);
}

static bool same_string(const char *a, const char *b) {
        return a == b || (a && b && streq(a, b));
}

static bool same_unit(const UnitRecord *a, const UnitRecord *b) {
        if (!a || !b)
                return a == b;
        return same_string(a->unit, b->unit) && same_string(a->user_unit, b->user_unit) &&
               same_string(a->machine, b->machine);
}

static UnitGroup *unit_group_get(UnitGroups *g, const UnitRecord *u) {
        for (size_t i = 0; i < g->n; i++)
                if (same_unit(g->items[i].unit, u))
                        return &g->items[i];
        if (GROW(g->items, g->allocated, g->n + 1) < 0)
                return NULL;
        g->items[g->n] = (UnitGroup) { .unit = u };
        return &g->items[g->n++];
}

static int add_u64_once(uint64_t **a, size_t *n, size_t *allocated, uint64_t v, bool *ret_added) {
        *ret_added = false;
        for (size_t i = 0; i < *n; i++)
                if ((*a)[i] == v)
                        return 0;
        if (GROW(*a, *allocated, *n + 1) < 0)
                return -ENOMEM;
        (*a)[(*n)++] = v;
        *ret_added = true;
        return 0;
}

static int unit_group_add_task(UnitGroup *g, const TaskRecord *t) {
        bool added;
        size_t allocated = g->heads_allocated;
        g->tasks++;
        if (!t->head) {
                g->strict += streq(t->mode, "strict");
                g->unconfined += !streq(t->mode, "strict");
                return 0;
        }
        if (add_u64_once(&g->heads, &g->n_heads, &g->heads_allocated, t->head, &added) < 0)
                return -ENOMEM;
        if (!added)
                return 0;
        uint32_t *tids = realloc(g->head_tids, g->heads_allocated * sizeof(uint32_t));
        if (!tids && g->heads_allocated > allocated)
                return -ENOMEM;
        g->head_tids = tids ?: g->head_tids;
        g->head_tids[g->n_heads - 1] = t->tid;
        return 0;
}

/* The tasks grouped by unit, keeping those --unit, --machine and --user name. */
static int unit_groups_build(const Context *c, const TaskList *tasks, const UnitList *units, UnitGroups *g) {
        for (size_t i = 0; i < tasks->n; i++) {
                const UnitRecord *u = unit_list_find(units, tasks->items[i].tgid);
                if (!unit_filter_matches(c, u))
                        continue;
                UnitGroup *x = unit_group_get(g, u);
                if (!x || unit_group_add_task(x, &tasks->items[i]) < 0)
                        return log_oom();
        }
        return 0;
}

/* The chain of task tid with its programs; -ESRCH, not logged, when the task exited since ListTasks
 * (a busy machine). Other failures are logged. */
static int chain_fetch_live(sd_bus *bus, uint32_t tid, Chain *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const uint64_t *ids;
        size_t size;
        int r = sd_bus_call_method(bus, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE,
                                   "GetTaskChain", &error, &reply, "u", tid);
        if (r < 0 && sd_bus_error_has_name(&error, "org.sectree1.Error.NoSuchTask"))
                return -ESRCH;
        if (r < 0)
                return bus_log_error(r, &error, "call GetTaskChain");
        r = sd_bus_message_read_array(reply, 't', (const void **) &ids, &size);
        if (r < 0)
                return bus_log_parse_error(r, "GetTaskChain");
        ret->tid = tid;
        ret->filters = calloc(size / sizeof(uint64_t) + 1, sizeof(FilterDetail));
        if (!ret->filters)
                return log_oom();
        for (; ret->n < size / sizeof(uint64_t); ret->n++) {
                r = manager_get_filter(bus, ids[ret->n], &ret->filters[ret->n]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Read each distinct chain of the group: its filters, and the calls every one denies. */
static int unit_group_judge(sd_bus *bus, UnitGroup *g) {
        size_t judged = 0;
        g->denied = (1u << UNIT_VERDICT_N_CALLS) - 1;
        for (size_t i = 0; i < g->n_heads; i++) {
                _cleanup_(chain_done) Chain ch = {};
                unsigned denied = 0;
                bool added;
                int r = chain_fetch_live(bus, g->head_tids[i], &ch);
                if (r == -ESRCH)
                        continue; /* it exited: its chain says nothing of the unit any more */
                if (r < 0 || chain_denied_calls(&ch, &denied) < 0) {
                        g->unreadable = true; /* logged */
                        continue;
                }
                g->denied &= denied;
                judged++;
                for (size_t k = 0; k < ch.n; k++)
                        if (add_u64_once(&g->filters, &g->n_filters, &g->filters_allocated, ch.filters[k].meta.id,
                                         &added) < 0)
                                return log_oom();
        }
        if (judged == 0)
                g->denied = 0;
        return 0;
}

static const char *unit_group_label(const UnitGroup *g, char *buf, size_t len) {
        return unit_record_label(g->unit, buf, len) ?: "(no unit)";
}

static void unit_group_verdict(const UnitGroup *g, char *buf, size_t len) {
        unit_verdict_format(g->n_filters, g->denied, g->tasks, g->unconfined, g->strict, buf, len);
        if (g->unreadable)
                snprintf(buf + strlen(buf), len - strlen(buf), " (some chains could not be read)");
}

static int unit_group_cmp(const void *a, const void *b) {
        const UnitGroup *x = a, *y = b;
        char lx[512], ly[512];
        if (!x->unit != !y->unit)
                return x->unit ? -1 : 1;
        return strcmp(unit_group_label(x, lx, sizeof(lx)), unit_group_label(y, ly, sizeof(ly)));
}

static int units_print_table(const UnitGroups *g, bool legend) {
        static const char *const headers[] = { "UNIT", "MACHINE", "TASKS", "CHAINS", "VERDICT" };
        _cleanup_(table_freep) Table *t = table_new(headers, ELEMENTSOF(headers), TABLE_COLUMN(2) | TABLE_COLUMN(3));
        if (!t)
                return log_oom();
        for (size_t i = 0; i < g->n; i++) {
                const UnitGroup *x = &g->items[i];
                char label[512], tasks[24], chains[24], verdict[VERDICT_MAX];
                snprintf(tasks, sizeof(tasks), "%zu", x->tasks);
                snprintf(chains, sizeof(chains), "%zu", x->n_heads);
                unit_group_verdict(x, verdict, sizeof(verdict));
                const char *cells[] = { unit_group_label(x, label, sizeof(label)),
                                        x->unit && x->unit->machine ? x->unit->machine : "-", tasks, chains, verdict };
                if (table_add_row(t, cells) < 0)
                        return log_oom();
        }
        int r = table_print(t, stdout, legend);
        if (r < 0)
                return r;
        if (legend)
                printf("\n%zu unit%s listed.\n", g->n, g->n == 1 ? "" : "s");
        return output_flush();
}

static json_t *string_or_null(const char *s) {
        return s ? json_string(s) : json_null();
}

static json_t *u64_array(const uint64_t *v, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, json_integer((json_int_t) v[i])) < 0)
                        return json_decref(a), NULL;
        return a;
}

static json_t *denied_array(unsigned denied) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < UNIT_VERDICT_N_CALLS; i++)
                if ((denied & (1u << i)) && json_array_append_new(a, json_string(unit_verdict_calls[i])) < 0)
                        return json_decref(a), NULL;
        return a;
}

static json_t *unit_group_json(const UnitGroup *g) {
        const UnitRecord *u = g->unit;
        char verdict[VERDICT_MAX];
        unit_group_verdict(g, verdict, sizeof(verdict));
        return json_pack("{s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:o, s:I, s:o, s:s}", "unit",
                         string_or_null(u ? u->unit : NULL), "user_unit", string_or_null(u ? u->user_unit : NULL),
                         "machine", string_or_null(u ? u->machine : NULL), "owner_uid",
                         u && u->owner != UNIT_OWNER_NONE ? json_integer(u->owner) : json_null(), "tasks",
                         (json_int_t) g->tasks, "unconfined_tasks", (json_int_t) g->unconfined, "strict_tasks",
                         (json_int_t) g->strict, "chains", u64_array(g->heads, g->n_heads), "filters",
                         (json_int_t) g->n_filters, "denies", denied_array(g->denied), "verdict", verdict);
}

static int units_print_json(const UnitGroups *g) {
        json_auto_t *a = json_array();
        for (size_t i = 0; a && i < g->n; i++)
                if (json_array_append_new(a, unit_group_json(&g->items[i])) < 0)
                        return log_oom();
        json_auto_t *doc = a ? json_pack("{s:O}", "units", a) : NULL;
        return json_print_document(doc);
}

int verb_units(Context *c, char **args, size_t n_args) {
        _cleanup_(task_list_done) TaskList tasks = {};
        _cleanup_(unit_list_done) UnitList units = {};
        _cleanup_(unit_groups_done) UnitGroups g = {};
        sd_bus *bus;
        int r = context_list_tasks(c, &tasks);
        if (r >= 0)
                r = context_list_units(c, &units);
        if (r >= 0)
                r = unit_groups_build(c, &tasks, &units, &g);
        if (r >= 0)
                r = context_bus(c, &bus);
        for (size_t i = 0; r >= 0 && i < g.n; i++)
                r = unit_group_judge(bus, &g.items[i]);
        if (r < 0)
                return r;
        qsort(g.items, g.n, sizeof(UnitGroup), unit_group_cmp);
        if (c->json)
                return units_print_json(&g);
        pager_open(c->no_pager);
        return units_print_table(&g, c->legend);
}
