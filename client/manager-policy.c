/* manager-policy.c: typed calls of the Manager's GetPolicy and WhoCan, read into the structures the
 * policy verbs print (the same ones a snapshot file's analysis fills) */
#include "manager-policy.h"

#include <errno.h>

#include "bus.h"
#include "ctl-log.h"

#define CASE_TYPE "(ssuubs)"
#define DECISION_CONTENTS "bua" CASE_TYPE

/* n elements of size at p (NULL when n is 0) into arena; never NULL but on OOM. */
static void *arena_copy(Arena *arena, const void *p, size_t n, size_t size) {
        void *c = arena_alloc(arena, (n ?: 1) * size);
        return c ? memcpy_safe(c, p, n * size) : NULL;
}

static const char *copy_string(Arena *arena, const char *s, bool empty_is_null) {
        if (empty_is_null && !*s)
                return NULL;
        return arena_strdup(arena, s);
}

/* One case; -ENOMEM, or the bus's error for a malformed reply. */
static int read_case(sd_bus_message *m, Arena *arena, PolicyReportCase *ret) {
        const char *action, *condition, *json;
        uint32_t n_conditions, value;
        int constant;
        int r = sd_bus_message_read(m, CASE_TYPE, &action, &condition, &n_conditions, &value, &constant, &json);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        *ret = (PolicyReportCase) {
                .action = copy_string(arena, action, false),
                .condition = copy_string(arena, condition, true),
                .n_conditions = n_conditions,
                .ret = value,
                .constant = constant,
                .json = copy_string(arena, json, false),
        };
        return !ret->action || !ret->json || (*condition && !ret->condition) ? -ENOMEM : 0;
}

static int read_cases(sd_bus_message *m, Arena *arena, PolicyReportCase **ret, size_t *ret_n) {
        PolicyReportCase *cases = NULL;
        size_t n = 0, allocated = 0;
        int r = sd_bus_message_enter_container(m, 'a', CASE_TYPE);
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                PolicyReportCase c;
                r = read_case(m, arena, &c);
                if (r >= 0 && GROW(cases, allocated, n + 1) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        cases[n++] = c;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0) {
                *ret = arena_copy(arena, cases, n, sizeof(PolicyReportCase));
                *ret_n = n;
                if (!*ret)
                        r = -ENOMEM;
        }
        free(cases);
        return r;
}

static int read_decision(sd_bus_message *m, Arena *arena, PolicyReportDecision *ret) {
        int unconditional;
        int r = sd_bus_message_enter_container(m, 'r', DECISION_CONTENTS);
        if (r >= 0)
                r = sd_bus_message_read(m, "bu", &unconditional, &ret->ret);
        if (r >= 0)
                r = read_cases(m, arena, &ret->cases, &ret->n_cases);
        ret->unconditional = unconditional;
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int read_syscalls(sd_bus_message *m, Arena *arena, PolicyReportArch *a) {
        size_t allocated = 0;
        PolicyReportSyscall *list = NULL;
        int r = sd_bus_message_enter_container(m, 'a', "(si(" DECISION_CONTENTS "))");
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                PolicyReportSyscall s = {};
                const char *name;
                r = sd_bus_message_enter_container(m, 'r', "si(" DECISION_CONTENTS ")");
                if (r >= 0)
                        r = sd_bus_message_read(m, "si", &name, &s.nr);
                if (r >= 0)
                        r = read_decision(m, arena, &s.decision);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r >= 0 && (!(s.name = arena_strdup(arena, name)) || GROW(list, allocated, a->n_syscalls + 1) < 0))
                        r = -ENOMEM;
                if (r >= 0)
                        list[a->n_syscalls++] = s;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0 && !(a->syscalls = arena_copy(arena, list, a->n_syscalls, sizeof(PolicyReportSyscall))))
                r = -ENOMEM;
        free(list);
        return r;
}

static int read_arch(sd_bus_message *m, Arena *arena, PolicyReportArch *ret) {
        const char *name;
        int native, uniform;
        int r = sd_bus_message_enter_container(m, 'r', "sbbua(si(" DECISION_CONTENTS "))(" DECISION_CONTENTS ")");
        if (r >= 0)
                r = sd_bus_message_read(m, "sbbu", &name, &native, &uniform, &ret->uniform_ret);
        if (r >= 0 && !(ret->name = arena_strdup(arena, name)))
                r = -ENOMEM;
        ret->native = native;
        ret->uniform = uniform;
        if (r >= 0)
                r = read_syscalls(m, arena, ret);
        if (r >= 0)
                r = read_decision(m, arena, &ret->other);
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

void task_policy_reply_done(TaskPolicyReply *r) {
        free(r->filters);
        r->filters = NULL;
        r->report = policy_report_free(r->report);
}

static int read_policy(sd_bus_message *m, TaskPolicyReply *ret) {
        _cleanup_free_ PolicyReportArch *arches = NULL;
        const char *mode;
        const void *ids;
        size_t size = 0, allocated = 0, n = 0;
        int r = sd_bus_message_read(m, "s", &mode);
        if (r >= 0 && (ret->mode = task_mode_from_string(mode)) < 0)
                r = -EBADMSG;
        if (r >= 0)
                r = sd_bus_message_read_array(m, 't', &ids, &size);
        if (r >= 0 && (!(ret->filters = malloc(size + 1)) || !(ret->report = calloc(1, sizeof(PolicyReport)))))
                r = -ENOMEM;
        if (r < 0)
                return r;
        memcpy_safe(ret->filters, ids, size);
        ret->n_filters = size / sizeof(uint64_t);
        r = sd_bus_message_enter_container(m, 'a', "(sbbua(si(" DECISION_CONTENTS "))(" DECISION_CONTENTS "))");
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                PolicyReportArch a = {};
                r = read_arch(m, &ret->report->arena, &a);
                if (r >= 0 && GROW(arches, allocated, n + 1) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        arches[n++] = a;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0 && !(ret->report->arches = arena_copy(&ret->report->arena, arches, n, sizeof(PolicyReportArch))))
                r = -ENOMEM;
        ret->report->n_arches = n;
        return r;
}

int manager_get_policy(sd_bus *bus, uint32_t tid, TaskPolicyReply *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(task_policy_reply_done) TaskPolicyReply p = {};
        int r = bus_call_manager(bus, "GetPolicy", &reply, "u", tid);
        if (r < 0)
                return r;
        r = read_policy(reply, &p);
        if (r < 0)
                return bus_log_parse_error(r, "GetPolicy");
        *ret = p;
        p = (TaskPolicyReply) {};
        return 0;
}

/* ---- WhoCan ---- */

static int read_tasks(sd_bus_message *m, Arena *arena, WhoCanTask **ret, size_t *ret_n) {
        _cleanup_free_ WhoCanTask *tasks = NULL;
        size_t n = 0, allocated = 0;
        int r = sd_bus_message_enter_container(m, 'a', "(uus)");
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                uint32_t pid, tid;
                const char *comm;
                r = sd_bus_message_read(m, "(uus)", &pid, &tid, &comm);
                if (r >= 0 && GROW(tasks, allocated, n + 1) < 0)
                        r = -ENOMEM;
                if (r >= 0) {
                        tasks[n] = (WhoCanTask) { .pid = (pid_t) pid, .tid = (pid_t) tid, .comm = arena_strdup(arena, comm) };
                        if (!tasks[n++].comm)
                                r = -ENOMEM;
                }
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0 && !(*ret = arena_copy(arena, tasks, n, sizeof(WhoCanTask))))
                r = -ENOMEM;
        *ret_n = n;
        return r;
}

static int read_chains(sd_bus_message *m, WhoCan *w) {
        _cleanup_free_ WhoCanChain *chains = NULL;
        size_t allocated = 0;
        int r = sd_bus_message_enter_container(m, 'a', "(tuba" CASE_TYPE "a(uus))");
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                WhoCanChain c = {};
                uint32_t depth;
                int always;
                r = sd_bus_message_enter_container(m, 'r', "tuba" CASE_TYPE "a(uus)");
                if (r >= 0)
                        r = sd_bus_message_read(m, "tub", &c.head, &depth, &always);
                if (r >= 0)
                        r = read_cases(m, &w->arena, &c.report, &c.n_cases);
                if (r >= 0)
                        r = read_tasks(m, &w->arena, &c.tasks, &c.n_tasks);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                c.depth = depth;
                c.always = always;
                if (r >= 0 && GROW(chains, allocated, w->n_chains + 1) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        chains[w->n_chains++] = c;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0 && !(w->chains = arena_copy(&w->arena, chains, w->n_chains, sizeof(WhoCanChain))))
                r = -ENOMEM;
        return r;
}

static int read_others(sd_bus_message *m, WhoCan *w) {
        _cleanup_free_ WhoCanOther *others = NULL;
        size_t allocated = 0;
        int r = sd_bus_message_enter_container(m, 'a', "(buuu)");
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                uint32_t value, tasks, chains;
                int conditional;
                r = sd_bus_message_read(m, "(buuu)", &conditional, &value, &tasks, &chains);
                if (r >= 0 && GROW(others, allocated, w->n_others + 1) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        others[w->n_others++] = (WhoCanOther) { .ret = value, .conditional = conditional,
                                                                .n_tasks = tasks, .n_chains = chains };
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0 && !(w->others = arena_copy(&w->arena, others, w->n_others, sizeof(WhoCanOther))))
                r = -ENOMEM;
        return r;
}

/* The chains the daemon could not decide; a daemon before them sends
 * none. */
static int read_undecided(sd_bus_message *m, WhoCan *w) {
        _cleanup_free_ WhoCanChain *chains = NULL;
        size_t allocated = 0;
        if (sd_bus_message_at_end(m, false) > 0)
                return 0;
        int r = sd_bus_message_enter_container(m, 'a', "(tua(uus))");
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                WhoCanChain c = {};
                uint32_t depth;
                r = sd_bus_message_enter_container(m, 'r', "tua(uus)");
                if (r >= 0)
                        r = sd_bus_message_read(m, "tu", &c.head, &depth);
                if (r >= 0)
                        r = read_tasks(m, &w->arena, &c.tasks, &c.n_tasks);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                c.depth = depth;
                if (r >= 0 && GROW(chains, allocated, w->n_undecided + 1) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        chains[w->n_undecided++] = c;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0 && !(w->undecided = arena_copy(&w->arena, chains, w->n_undecided, sizeof(WhoCanChain))))
                r = -ENOMEM;
        return r;
}

/* Why each undecided chain was not: a daemon before this field said nothing, and then it could
 * only have been a program not available. */
static int read_undecided_why(sd_bus_message *m, WhoCan *w) {
        for (size_t i = 0; i < w->n_undecided; i++)
                w->undecided[i].why = WHO_CAN_PROGRAM_MISSING;
        if (sd_bus_message_at_end(m, false) > 0)
                return 0;
        int r = sd_bus_message_enter_container(m, 'a', "s");
        for (size_t i = 0; r >= 0 && sd_bus_message_at_end(m, false) == 0; i++) {
                const char *why;
                r = sd_bus_message_read(m, "s", &why);
                if (r < 0)
                        break;
                WhoCanUndecided u = who_can_undecided_from_string(why);
                if (i >= w->n_undecided || u <= WHO_CAN_DECIDED)
                        return -EBADMSG;
                w->undecided[i].why = u;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int read_who_can(sd_bus_message *m, WhoCan *w) {
        const char *arch;
        int32_t nr;
        uint32_t tasks, decided, unfiltered;
        int r = sd_bus_message_read(m, "siuu", &arch, &nr, &tasks, &decided);
        if (r >= 0)
                r = read_chains(m, w);
        if (r >= 0)
                r = sd_bus_message_read(m, "u", &unfiltered);
        if (r >= 0)
                r = read_others(m, w);
        if (r >= 0)
                r = read_undecided(m, w);
        if (r >= 0)
                r = read_undecided_why(m, w);
        if (r < 0)
                return r;
        w->n_tasks = tasks;
        w->n_decisions = decided;
        w->n_unfiltered = unfiltered;
        return 0;
}

int manager_who_can(sd_bus *bus, const char *syscall, const uint64_t *args, size_t n_args, const char *arch,
                    const char *action, WhoCan **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(who_can_freep) WhoCan *w = calloc(1, sizeof(WhoCan));
        if (!w)
                return log_oom();
        int r = sd_bus_message_new_method_call(bus, &call, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH,
                                               SECTREE_MANAGER_INTERFACE, "WhoCan");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", syscall);
        if (r >= 0)
                r = sd_bus_message_append_array(call, 't', args, n_args * sizeof(uint64_t));
        if (r >= 0)
                r = sd_bus_message_append(call, "a{sv}", (arch != NULL) + (action != NULL), arch ? "arch" : "action",
                                          "s", arch ?: action, "action", "s", action);
        if (r < 0)
                return ctl_error_errno(r, "Failed to build the WhoCan call: %m");
        r = sd_bus_call(bus, call, 0, &error, &reply);
        if (r < 0)
                return bus_log_error(r, &error, "call WhoCan");
        r = read_who_can(reply, w);
        if (r < 0)
                return bus_log_parse_error(r, "WhoCan");
        *ret = TAKE_PTR(w);
        return 0;
}
