/* verbs-policy-who.c: `who-can SYSCALL [ARG...]`: the tasks whose chain lets a call run (or gives
 * another action), each distinct chain decided once, grouped by chain; live or from a file */
#include "verbs-policy-who.h"

#include <seccomp.h>

#include "core/disasm.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "pager.h"
#include "manager-policy.h"
#include "manager-units.h"
#include "output.h"
#include "policy/policy-format.h"
#include "policy/policy-report.h"
#include "snapshot-load.h"
#include "table.h"
#include "verbs-policy.h"

#define WHO_CAN_ARGS_MAX 6

typedef struct WhoCanRequest {
        const char *syscall;
        WhoCanQuery query;
        const char *looked_for; /* "run" or the action as given */
        UnitList units;   /* each task's units: ListProcessUnits, or the snapshot's records */
        bool by_unit;     /* --unit, --machine or --user: only their tasks are kept */
        bool live;        /* the daemon counts tasks without filters, by unit it cannot */
        size_t unit_tasks; /* by_unit: the units' tasks (live, those under filters or in strict mode) */
} WhoCanRequest;

static void who_can_request_done(WhoCanRequest *req) {
        unit_list_done(&req->units);
}

/* ---- units ---- */

/* The unit column of a task: its unit (a user unit after a '/'), else its machine; NULL: none. */
static const char *task_unit(const WhoCanRequest *req, const WhoCanTask *t, char *buf, size_t len) {
        const UnitRecord *u = unit_list_find(&req->units, (uint32_t) t->pid);
        const char *l = unit_record_label(u, buf, len);
        if (!l && u && u->machine)
                snprintf(buf, len, "machine %s", u->machine), l = buf;
        return l;
}

/* Keep the tasks of the units asked for; n_tasks counts those kept. */
static size_t keep_tasks(const Context *c, const WhoCanRequest *req, WhoCanTask *tasks, size_t n) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (unit_filter_matches(c, unit_list_find(&req->units, (uint32_t) tasks[i].pid)))
                        tasks[k++] = tasks[i];
        return k;
}

static size_t keep_chains(const Context *c, const WhoCanRequest *req, WhoCanChain *chains, size_t n, size_t *n_tasks) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                chains[i].n_tasks = keep_tasks(c, req, chains[i].tasks, chains[i].n_tasks);
                *n_tasks += chains[i].n_tasks;
                if (chains[i].n_tasks > 0)
                        chains[k++] = chains[i];
        }
        return k;
}

/* --unit and its kin: the chains (decided or not) of the units' tasks, with those tasks only. The
 * others are counted by the daemon as a whole, and the tasks without filters too where it runs:
 * neither can be said by unit, so they are left out, and the units' tasks are counted apart
 * (req->unit_tasks); a snapshot lists its tasks without filters, and those of the units stay. */
static void who_can_keep_units(const Context *c, const WhoCanRequest *req, WhoCan *w) {
        size_t n = 0;
        w->n_chains = keep_chains(c, req, w->chains, w->n_chains, &n);
        w->n_undecided = keep_chains(c, req, w->undecided, w->n_undecided, &n);
        w->n_others = 0;
        w->n_unfiltered = req->live ? 0 : keep_tasks(c, req, w->unfiltered, w->n_unfiltered);
        w->n_tasks = MAX(req->unit_tasks, n + w->n_unfiltered); /* tasks that came since the count */
}

/* Live: the tasks of the units under filters or in strict mode, as ListTasks has them. */
static int count_unit_tasks_live(Context *c, WhoCanRequest *req) {
        _cleanup_(task_list_done) TaskList l = {};
        int r = context_list_tasks(c, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                const TaskRecord *t = &l.items[i];
                if ((t->head != 0 || streq(t->mode, "strict")) &&
                    unit_filter_matches(c, unit_list_find(&req->units, t->tgid)))
                        req->unit_tasks++;
        }
        return 0;
}

/* A snapshot: every thread of the units' processes, with filters or without. */
static void count_unit_tasks_file(const Context *c, const Forest *f, WhoCanRequest *req) {
        for (size_t i = 0; i < f->n_processes; i++)
                if (unit_filter_matches(c, unit_list_find(&req->units, (uint32_t) f->processes[i]->pid)))
                        req->unit_tasks += f->processes[i]->n_threads;
}

static int who_can_parse(Context *c, char **args, size_t n_args, WhoCanRequest *req) {
        uint64_t values[WHO_CAN_ARGS_MAX];
        _cleanup_free_ char *why = NULL;
        if (n_args - 1 > WHO_CAN_ARGS_MAX)
                return usage_error("At most %d arguments after the system call", WHO_CAN_ARGS_MAX);
        for (size_t i = 0; i + 1 < n_args; i++) {
                int r = parse_syscall_arg(args[1 + i], &values[i]);
                if (r < 0)
                        return r;
        }
        req->syscall = args[0];
        req->looked_for = c->action ? c->action : "run";
        int r = who_can_query_parse(c->arch, args[0], values, n_args - 1, c->action, &req->query, &why);
        if (r == -EINVAL)
                return usage_error("%s", why);
        return r < 0 ? log_oom() : 0;
}

/* ---- text ---- */

/* "always", or the conditions of the cases that give it, with their actions where there are
 * several. */
static char *chain_condition(const WhoCanChain *ch) {
        if (ch->always)
                return strdup("always");
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < ch->n_cases; i++) {
                const PolicyReportCase *c = &ch->report[i];
                fprintf(f, "%s%s", i > 0 ? "; or " : "if ", c->condition ? c->condition : "always");
                if (ch->n_cases > 1 || (c->constant && (c->ret & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_LOG))
                        fprintf(f, " (%s)", c->action);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* PID TID COMM, and UNIT where units are known. */
static int print_tasks(const WhoCanRequest *req, const WhoCanTask *tasks, size_t n, bool legend) {
        static const char *const headers[] = { "PID", "TID", "COMM", "UNIT" };
        bool units = req->units.n > 0;
        _cleanup_(table_freep) Table *t = table_new(headers, ELEMENTSOF(headers) - !units, TABLE_COLUMN(0) | TABLE_COLUMN(1));
        if (!t)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                char pid[16], tid[16], buf[2 * 256 + 16];
                snprintf(pid, sizeof(pid), "%d", (int) tasks[i].pid);
                snprintf(tid, sizeof(tid), "%d", (int) tasks[i].tid);
                const char *unit = units ? task_unit(req, &tasks[i], buf, sizeof(buf)) : NULL;
                const char *cells[] = { pid, tid, tasks[i].comm, unit ?: "-" };
                if (table_add_row(t, cells) < 0)
                        return log_oom();
        }
        return table_print(t, stdout, legend);
}

static void print_others(const WhoCan *w) {
        char action[ACTION_STRING_MAX];
        for (size_t i = 0; i < w->n_others; i++) {
                const WhoCanOther *o = &w->others[i];
                printf("%zu task%s under %zu chain%s: %s\n", o->n_tasks, o->n_tasks == 1 ? "" : "s", o->n_chains,
                       o->n_chains == 1 ? "" : "s",
                       o->conditional ? "other actions, by argument"
                                      : action_to_string(o->ret, action, sizeof(action)));
        }
}

static size_t undecided_tasks(const WhoCan *w) {
        size_t n = 0;
        for (size_t i = 0; i < w->n_undecided; i++)
                n += w->undecided[i].n_tasks;
        return n;
}

/* Chains not decided for one reason: their tasks are named, never left out. */
static int print_undecided_why(const WhoCanRequest *req, const WhoCan *w, WhoCanUndecided why, bool legend) {
        size_t n_chains = 0, n = 0;
        for (size_t i = 0; i < w->n_undecided; i++)
                if (w->undecided[i].why == why) {
                        n_chains++;
                        n += w->undecided[i].n_tasks;
                }
        if (n_chains == 0)
                return 0;
        printf("\nnot decided (%s): %zu task%s under %zu chain%s\n", who_can_undecided_to_string(why), n,
               n == 1 ? "" : "s", n_chains, n_chains == 1 ? "" : "s");
        for (size_t i = 0; i < w->n_undecided; i++) {
                const WhoCanChain *ch = &w->undecided[i];
                if (ch->why != why)
                        continue;
                printf("filter %" PRIu64 " (chain of %zu):\n", ch->head, ch->depth);
                int r = print_tasks(req, ch->tasks, ch->n_tasks, legend);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int print_undecided(const WhoCanRequest *req, const WhoCan *w, bool legend) {
        for (WhoCanUndecided why = WHO_CAN_PROGRAM_MISSING; why < _WHO_CAN_UNDECIDED_MAX; why++) {
                int r = print_undecided_why(req, w, why, legend);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void print_header(const WhoCanRequest *req, const WhoCan *w) {
        size_t n_can = 0;
        for (size_t i = 0; i < w->n_chains; i++)
                n_can += w->chains[i].n_tasks;
        printf("%s (%s %" PRIu32 ")%s%s: ", req->syscall, req->query.arch->name, (uint32_t) req->query.nr,
               req->query.n_args ? " with the arguments given" : "",
               req->by_unit ? ", the tasks of the units asked for" : "");
        if (req->query.allowed && req->by_unit && req->live)
                printf("%zu of their %zu task%s under filters may make it (ALLOW or LOG), under %zu chain%s "
                       "(tasks without filters are not counted by unit)", n_can, w->n_tasks,
                       w->n_tasks == 1 ? "" : "s", w->n_chains, w->n_chains == 1 ? "" : "s");
        else if (req->query.allowed)
                printf("%zu of %zu task%s may make it (ALLOW or LOG): %zu under %zu chain%s, %zu without filters",
                       n_can + w->n_unfiltered, w->n_tasks, w->n_tasks == 1 ? "" : "s", n_can, w->n_chains,
                       w->n_chains == 1 ? "" : "s", w->n_unfiltered);
        else
                printf("%zu of %zu task%s get %s, under %zu chain%s", n_can, w->n_tasks, w->n_tasks == 1 ? "" : "s",
                       req->looked_for, w->n_chains, w->n_chains == 1 ? "" : "s");
        printf("; %zu distinct chain%s decided", w->n_decisions, w->n_decisions == 1 ? "" : "s");
        if (w->n_undecided > 0)
                printf("; %zu task%s not decided", undecided_tasks(w),
                       undecided_tasks(w) == 1 ? "" : "s");
        printf(".\n");
}

static int who_can_print(const Context *c, const WhoCanRequest *req, const WhoCan *w) {
        if (c->legend)
                print_header(req, w);
        for (size_t i = 0; i < w->n_chains; i++) {
                const WhoCanChain *ch = &w->chains[i];
                _cleanup_free_ char *cond = chain_condition(ch);
                if (!cond)
                        return log_oom();
                if (ch->head)
                        printf("\nfilter %" PRIu64 " (chain of %zu): %s\n", ch->head, ch->depth, cond);
                else
                        printf("\nstrict mode: %s\n", cond);
                int r = print_tasks(req, ch->tasks, ch->n_tasks, c->legend);
                if (r < 0)
                        return r;
        }
        int r = print_undecided(req, w, c->legend);
        if (r < 0)
                return r;
        if (req->query.allowed && w->n_unfiltered > 0) {
                printf("\nunfiltered (may call anything): %zu task%s\n", w->n_unfiltered, w->n_unfiltered == 1 ? "" : "s");
                if (w->plan && (r = print_tasks(req, w->unfiltered, w->n_unfiltered, c->legend)) < 0)
                        return r; /* a snapshot lists them; the daemon counts them */
        }
        if (c->legend && (w->n_others > 0 || (!req->query.allowed && w->n_unfiltered > 0))) {
                printf("\nThe others:\n");
                print_others(w);
                if (!req->query.allowed && w->n_unfiltered > 0)
                        printf("%zu task%s without filters: ALLOW\n", w->n_unfiltered, w->n_unfiltered == 1 ? "" : "s");
        }
        return output_flush();
}

/* ---- JSON ---- */

/* Each task with its process's unit, user unit and machine (null: none, or not known). */
static json_t *tasks_json(const WhoCanRequest *req, const WhoCanTask *tasks, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
                const UnitRecord *u = unit_list_find(&req->units, (uint32_t) tasks[i].pid);
                if (json_array_append_new(a, json_pack("{s:i, s:i, s:s, s:s?, s:s?, s:s?}", "pid", (int) tasks[i].pid,
                                                       "tid", (int) tasks[i].tid, "comm", tasks[i].comm, "unit",
                                                       u ? u->unit : NULL, "user_unit", u ? u->user_unit : NULL,
                                                       "machine", u ? u->machine : NULL)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

static json_t *chain_json(const WhoCanRequest *req, const WhoCanChain *ch) {
        json_t *cases = json_array();
        for (size_t i = 0; cases && i < ch->n_cases; i++)
                if (json_array_append_new(cases, json_loads(ch->report[i].json, JSON_DECODE_ANY, NULL)) < 0) {
                        json_decref(cases);
                        return NULL;
                }
        return json_pack("{s:o, s:s, s:I, s:b, s:o, s:o}", "filter", json_id_or_null(ch->head), "mode",
                         ch->head ? "filter" : "strict", "depth", (json_int_t) ch->depth, "always", ch->always, "cases",
                         cases, "tasks", tasks_json(req, ch->tasks, ch->n_tasks));
}

static json_t *undecided_json(const WhoCanRequest *req, const WhoCan *w) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < w->n_undecided; i++) {
                const WhoCanChain *ch = &w->undecided[i];
                if (json_array_append_new(a, json_pack("{s:o, s:I, s:s, s:o}", "filter", json_id_or_null(ch->head),
                                                       "depth", (json_int_t) ch->depth, "reason",
                                                       who_can_undecided_to_string(ch->why), "tasks",
                                                       tasks_json(req, ch->tasks, ch->n_tasks))) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

static json_t *who_can_json(const WhoCanRequest *req, const WhoCan *w) {
        char action[ACTION_STRING_MAX];
        json_t *chains = json_array(), *others = json_array(), *args = json_array();
        for (size_t i = 0; chains && i < w->n_chains; i++)
                if (json_array_append_new(chains, chain_json(req, &w->chains[i])) < 0)
                        goto fail;
        for (size_t i = 0; others && i < w->n_others; i++)
                if (json_array_append_new(others, json_pack("{s:o, s:I, s:I}", "action",
                                                            w->others[i].conditional ? json_null()
                                                            : json_string(action_to_string(w->others[i].ret, action,
                                                                                           sizeof(action))),
                                                            "tasks", (json_int_t) w->others[i].n_tasks, "chains",
                                                            (json_int_t) w->others[i].n_chains)) < 0)
                        goto fail;
        for (size_t i = 0; args && i < req->query.n_args; i++)
                if (json_array_append_new(args, json_integer((json_int_t) req->query.args[i])) < 0)
                        goto fail;
        return json_pack("{s:s, s:I, s:s, s:o, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "syscall", req->syscall, "nr",
                         (json_int_t) (uint32_t) req->query.nr, "architecture", req->query.arch->name, "args", args, "looked_for",
                         req->looked_for, "tasks", (json_int_t) w->n_tasks, "chains_decided",
                         (json_int_t) w->n_decisions, "chains", chains, "unfiltered",
                         w->plan ? tasks_json(req, w->unfiltered, w->n_unfiltered) : json_null(), "unfiltered_count",
                         req->by_unit && req->live ? json_null() : json_integer((json_int_t) w->n_unfiltered), "others",
                         others, "undecided", undecided_json(req, w));
fail:
        json_decref(chains);
        json_decref(others);
        json_decref(args);
        return NULL;
}

/* From the snapshot file of --file: the forest analysed here. */
static int who_can_file(Context *c, WhoCanRequest *req, WhoCan **ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = snapshot_file_load(c->file, &f, NULL);
        if (r < 0)
                return r;
        if (unit_list_from_forest(f, &req->units) < 0)
                return log_oom();
        if (req->by_unit)
                count_unit_tasks_file(c, f, req);
        r = policy_who_can(f, &req->query, ret);
        if (r >= 0)
                r = who_can_report(*ret);
        if (r == -E2BIG)
                return ctl_error_errno(r, "A chain has too many paths to analyse for %s.", req->syscall);
        if (r < 0)
                return ctl_error_errno(r, "Failed to analyse the chains: %m");
        return 0;
}

int verb_who_can(Context *c, char **args, size_t n_args) {
        _cleanup_(who_can_freep) WhoCan *w = NULL;
        _cleanup_(who_can_request_done) WhoCanRequest req = { .by_unit = unit_filter_given(c), .live = !c->file };
        sd_bus *bus;
        int r = who_can_parse(c, args, n_args, &req);
        if (r < 0)
                return r;
        if (c->file)
                r = who_can_file(c, &req, &w);
        else if ((r = context_bus(c, &bus)) >= 0 &&
                 (r = manager_who_can(bus, args[0], req.query.args, req.query.n_args, c->arch, c->action, &w)) >= 0 &&
                 (r = context_list_units(c, &req.units)) >= 0 && req.by_unit)
                r = count_unit_tasks_live(c, &req);
        if (r < 0)
                return r;
        if (req.by_unit)
                who_can_keep_units(c, &req, w);
        if (c->json) {
                json_auto_t *doc = who_can_json(&req, w);
                return json_print_document(doc);
        }
        pager_open(c->no_pager); /* as the other verbs: a long list of chains and tasks on a terminal */
        return who_can_print(c, &req, w);
}
