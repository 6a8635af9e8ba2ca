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

/* One distinct chain of a unit's tasks: its head, and the tasks under it (any one of them tells
 * the chain). */
typedef struct GroupChain {
        uint64_t head;
        uint32_t *tids;
        size_t n_tids, allocated;
} GroupChain;

/* The tasks of one unit (or user unit, or machine; or of none). */
typedef struct UnitGroup {
        const UnitRecord *unit; /* the first process met of it; NULL: processes without a unit */
        size_t tasks, unconfined, strict;
        GroupChain *chains;     /* the distinct chains of its tasks */
        size_t n_chains, chains_allocated;
        uint64_t *filters;      /* the distinct filters of those chains */
        size_t n_filters, filters_allocated;
        unsigned denied;        /* the calls every chain denies */
        bool unreadable;        /* a chain's programs could not be read */
} UnitGroup;

typedef struct UnitGroups {
        UnitGroup *items;
        size_t n, allocated;
} UnitGroups;

static void unit_group_done(UnitGroup *g) {
        for (size_t i = 0; i < g->n_chains; i++)
                free(g->chains[i].tids);
        free(g->chains);
        free(g->filters);
}

static void unit_groups_done(UnitGroups *g) {
        for (size_t i = 0; i < g->n; i++)
                unit_group_done(&g->items[i]);
        free(g->items);
}

static bool unit_is_none(const UnitRecord *u) {
        return !u || (!u->unit && !u->user_unit && !u->machine);
}

/* A process the cgroup names no unit of and one ListProcessUnits did not list are both of none:
 * one "(no unit)" group. */
static bool same_unit(const UnitRecord *a, const UnitRecord *b) {
        if (unit_is_none(a) || unit_is_none(b))
                return unit_is_none(a) && unit_is_none(b);
        return streq_ptr(a->unit, b->unit) && streq_ptr(a->user_unit, b->user_unit) &&
               streq_ptr(a->machine, b->machine);
}

static UnitGroup *unit_group_find(UnitGroups *g, const UnitRecord *u) {
        for (size_t i = 0; i < g->n; i++)
                if (same_unit(g->items[i].unit, u))
                        return &g->items[i];
        return NULL;
}

static UnitGroup *unit_group_get(UnitGroups *g, const UnitRecord *u) {
        UnitGroup *x = unit_group_find(g, u);
        if (x)
                return x;
        if (GROW(g->items, g->allocated, g->n + 1) < 0)
                return NULL;
        g->items[g->n] = (UnitGroup) { .unit = unit_is_none(u) ? NULL : u };
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
        size_t i = 0;
        g->tasks++;
        if (!t->head) {
                g->strict += streq(t->mode, "strict");
                g->unconfined += !streq(t->mode, "strict");
                return 0;
        }
        while (i < g->n_chains && g->chains[i].head != t->head)
                i++;
        if (i == g->n_chains) {
                if (GROW(g->chains, g->chains_allocated, g->n_chains + 1) < 0)
                        return -ENOMEM;
                g->chains[g->n_chains++] = (GroupChain) { .head = t->head };
        }
        GroupChain *ch = &g->chains[i];
        if (GROW(ch->tids, ch->allocated, ch->n_tids + 1) < 0)
                return -ENOMEM;
        ch->tids[ch->n_tids++] = t->tid;
        return 0;
}

/* The tasks grouped by unit, keeping those --unit, --machine and --user name. A process that
 * ListProcessUnits left out exited between the two calls: its tasks are dropped (a daemon without
 * that method lists none, and then every task is of no unit). */
static int unit_groups_build(const Context *c, const TaskList *tasks, const UnitList *units, UnitGroups *g) {
        for (size_t i = 0; i < tasks->n; i++) {
                const UnitRecord *u = unit_list_find(units, tasks->items[i].tgid);
                if ((!u && units->n > 0) || !unit_filter_matches(c, u))
                        continue;
                UnitGroup *x = unit_group_get(g, u);
                if (!x || unit_group_add_task(x, &tasks->items[i]) < 0)
                        return log_oom();
        }
        return 0;
}

/* The processes the daemon does not list (ListUnfilteredProcesses) of the units shown: their threads
 * are unconfined. The units asked for by --unit, --machine or --user are
 * shown even when none of their processes has a filter; without those options, only the units with
 * a process the daemon lists. */
static int unit_groups_add_unlisted(const Context *c, const UnitList *unlisted, UnitGroups *g) {
        for (size_t i = 0; i < unlisted->n; i++) {
                const UnitRecord *u = &unlisted->items[i];
                if (!unit_filter_matches(c, u) || (!unit_filter_given(c) && !unit_group_find(g, u)))
                        continue;
                UnitGroup *x = unit_group_get(g, u);
                if (!x)
                        return log_oom();
                x->tasks += u->threads;
                x->unconfined += u->threads;
        }
        return 0;
}

/* The chain of task tid, headed by filter head, with its programs; -ESRCH, not logged, when the
 * task exited since ListTasks (a busy machine): the daemon no longer lists it, gives another chain
 * (the tid reused) or none, or a filter of the chain went with it before it was read. Other
 * failures are logged. */
static int chain_fetch_live(sd_bus *bus, uint32_t tid, uint64_t head, Chain *ret) {
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
        if (size < sizeof(uint64_t) || ids[0] != head)
                return -ESRCH;
        ret->tid = tid;
        ret->filters = calloc(size / sizeof(uint64_t) + 1, sizeof(FilterDetail));
        if (!ret->filters)
                return log_oom();
        for (; ret->n < size / sizeof(uint64_t); ret->n++) {
                r = manager_get_filter_if_there(bus, ids[ret->n], &ret->filters[ret->n]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The chain of ch, from the first of its tasks still there; the tasks that exited since ListTasks
 * are dropped from it and from the group's count. -ESRCH when none is left. */
static int group_chain_fetch(sd_bus *bus, UnitGroup *g, GroupChain *ch, Chain *ret) {
        int r = -ESRCH;
        while (ch->n_tids > 0) {
                r = chain_fetch_live(bus, ch->tids[0], ch->head, ret);
                if (r != -ESRCH)
                        return r;
                chain_done(ret);
                *ret = (Chain) {};
                memmove(ch->tids, ch->tids + 1, (--ch->n_tids) * sizeof(uint32_t));
                g->tasks--;
        }
        return r;
}

/* Read each distinct chain of the group: its filters, and the calls every one denies. Chains
 * whose tasks all exited meanwhile say nothing of the unit any more: they are dropped. */
static int unit_group_judge(sd_bus *bus, UnitGroup *g) {
        size_t judged = 0, kept = 0;
        g->denied = (1u << UNIT_VERDICT_N_CALLS) - 1;
        for (size_t i = 0; i < g->n_chains; i++) {
                _cleanup_(chain_done) Chain ch = {};
                unsigned denied = 0;
                bool added;
                int r = group_chain_fetch(bus, g, &g->chains[i], &ch);
                if (r == -ESRCH) {
                        free(g->chains[i].tids);
                        continue;
                }
                g->chains[kept++] = g->chains[i];
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
        g->n_chains = kept;
        if (judged == 0)
                g->denied = 0;
        return 0;
}

/* Judge each group; a group whose tasks all exited meanwhile is dropped. */
static int unit_groups_judge(sd_bus *bus, UnitGroups *g) {
        size_t kept = 0;
        for (size_t i = 0; i < g->n; i++) {
                int r = unit_group_judge(bus, &g->items[i]);
                if (r < 0)
                        return r;
                if (g->items[i].tasks > 0)
                        g->items[kept++] = g->items[i];
                else
                        unit_group_done(&g->items[i]);
        }
        g->n = kept;
        return 0;
}

static const char *unit_group_label(const UnitGroup *g, char *buf, size_t len) {
        return unit_record_label(g->unit, buf, len) ?: "(no unit)";
}

static void unit_group_verdict(const UnitGroup *g, char *buf, size_t len) {
        unit_verdict_format(g->n_filters, g->denied, g->tasks, g->unconfined, g->strict, buf, len);
        if (g->unreadable)
                snprintf(buf + strlen(buf), len - strlen(buf), "%s", buf[0] ? " (some chains could not be read)"
                                                                           : "its chains could not be read");
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
                snprintf(chains, sizeof(chains), "%zu", x->n_chains);
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

static json_t *heads_array(const GroupChain *chains, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, json_integer((json_int_t) chains[i].head)) < 0)
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
                         (json_int_t) g->strict, "chains", heads_array(g->chains, g->n_chains), "filters",
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
        _cleanup_(unit_list_done) UnitList units = {}, unlisted = {};
        _cleanup_(unit_groups_done) UnitGroups g = {};
        sd_bus *bus;
        int r = context_list_tasks(c, &tasks);
        if (r >= 0)
                r = context_list_units(c, &units);
        if (r >= 0)
                r = unit_groups_build(c, &tasks, &units, &g);
        if (r >= 0 && (units.n > 0 || tasks.n == 0)) /* a daemon without ListProcessUnits: no units known */
                r = context_list_unfiltered(c, &unlisted);
        if (r >= 0)
                r = unit_groups_add_unlisted(c, &unlisted, &g);
        if (r >= 0)
                r = context_bus(c, &bus);
        if (r >= 0)
                r = unit_groups_judge(bus, &g);
        if (r < 0)
                return r;
        qsort(g.items, g.n, sizeof(UnitGroup), unit_group_cmp);
        if (c->json)
                return units_print_json(&g);
        pager_open(c->no_pager);
        return units_print_table(&g, c->legend);
}
