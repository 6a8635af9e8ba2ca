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

/* Reads one element of an array into ret (zeroed), its strings into arena. */
typedef int (*ReadElement)(sd_bus_message *m, Arena *arena, void *ret);

/* An array of contents, each element of size bytes read by read, copied into arena: *ret is never
 * NULL on success. -ENOMEM, or the bus's error for a malformed reply. */
static int read_array(sd_bus_message *m, const char *contents, size_t size, ReadElement read, Arena *arena,
                      void **ret, size_t *ret_n) {
        _cleanup_free_ void *items = NULL;
        size_t n = 0, allocated = 0;
        int r = sd_bus_message_enter_container(m, 'a', contents);
        if (r < 0)
                return r;
        while (sd_bus_message_at_end(m, false) == 0) {
                if (grow_array(&items, &allocated, n + 1, size) < 0)
                        return -ENOMEM;
                r = read(m, arena, (char *) items + n * size);
                if (r < 0)
                        return r;
                n++;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = arena_copy(arena, items, n, size);
        *ret_n = n;
        return *ret ? 0 : -ENOMEM;
}

/* One case; -ENOMEM, or the bus's error for a malformed reply. */
static int read_case(sd_bus_message *m, Arena *arena, void *ret) {
        PolicyReportCase *c = ret;
        const char *action, *condition, *json;
        uint32_t n_conditions, value;
        int constant;
        int r = sd_bus_message_read(m, CASE_TYPE, &action, &condition, &n_conditions, &value, &constant, &json);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        *c = (PolicyReportCase) {
                .action = copy_string(arena, action, false),
                .condition = copy_string(arena, condition, true),
                .n_conditions = n_conditions,
                .ret = value,
                .constant = constant,
                .json = copy_string(arena, json, false),
        };
        return !c->action || !c->json || (*condition && !c->condition) ? -ENOMEM : 0;
}

static int read_cases(sd_bus_message *m, Arena *arena, PolicyReportCase **ret, size_t *ret_n) {
        return read_array(m, CASE_TYPE, sizeof(PolicyReportCase), read_case, arena, (void **) ret, ret_n);
}

static int read_decision(sd_bus_message *m, Arena *arena, PolicyReportDecision *ret) {
        int unconditional;
        int r = sd_bus_message_enter_container(m, 'r', DECISION_CONTENTS);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "bu", &unconditional, &ret->ret);
        if (r < 0)
                return r;
        ret->unconditional = unconditional;
        r = read_cases(m, arena, &ret->cases, &ret->n_cases);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_syscall(sd_bus_message *m, Arena *arena, void *ret) {
        PolicyReportSyscall *s = ret;
        const char *name;
        int r = sd_bus_message_enter_container(m, 'r', "si(" DECISION_CONTENTS ")");
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "si", &name, &s->nr);
        if (r < 0)
                return r;
        r = read_decision(m, arena, &s->decision);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        s->name = arena_strdup(arena, name);
        return s->name ? 0 : -ENOMEM;
}

static int read_arch(sd_bus_message *m, Arena *arena, void *ret) {
        PolicyReportArch *a = ret;
        const char *name;
        int native, uniform;
        int r = sd_bus_message_enter_container(m, 'r', "sbbua(si(" DECISION_CONTENTS "))(" DECISION_CONTENTS ")");
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "sbbu", &name, &native, &uniform, &a->uniform_ret);
        if (r < 0)
                return r;
        a->name = arena_strdup(arena, name);
        if (!a->name)
                return -ENOMEM;
        a->native = native;
        a->uniform = uniform;
        r = read_array(m, "(si(" DECISION_CONTENTS "))", sizeof(PolicyReportSyscall), read_syscall, arena,
                       (void **) &a->syscalls, &a->n_syscalls);
        if (r < 0)
                return r;
        r = read_decision(m, arena, &a->other);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

void task_policy_reply_done(TaskPolicyReply *r) {
        free(r->filters);
        r->filters = NULL;
        r->report = policy_report_free(r->report);
}

static int read_policy(sd_bus_message *m, TaskPolicyReply *ret) {
        const char *mode;
        const void *ids;
        size_t size = 0;
        int r = sd_bus_message_read(m, "s", &mode);
        if (r < 0)
                return r;
        ret->mode = task_mode_from_string(mode);
        if (ret->mode < 0)
                return -EBADMSG;
        r = sd_bus_message_read_array(m, 't', &ids, &size);
        if (r < 0)
                return r;
        ret->filters = malloc(size + 1);
        ret->report = calloc(1, sizeof(PolicyReport));
        if (!ret->filters || !ret->report)
                return -ENOMEM;
        memcpy_safe(ret->filters, ids, size);
        ret->n_filters = size / sizeof(uint64_t);
        return read_array(m, "(sbbua(si(" DECISION_CONTENTS "))(" DECISION_CONTENTS "))", sizeof(PolicyReportArch),
                          read_arch, &ret->report->arena, (void **) &ret->report->arches, &ret->report->n_arches);
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

static int read_task(sd_bus_message *m, Arena *arena, void *ret) {
        WhoCanTask *t = ret;
        uint32_t pid, tid;
        const char *comm;
        int r = sd_bus_message_read(m, "(uus)", &pid, &tid, &comm);
        if (r < 0)
                return r;
        *t = (WhoCanTask) { .pid = (pid_t) pid, .tid = (pid_t) tid, .comm = arena_strdup(arena, comm) };
        return t->comm ? 0 : -ENOMEM;
}

static int read_tasks(sd_bus_message *m, Arena *arena, WhoCanTask **ret, size_t *ret_n) {
        return read_array(m, "(uus)", sizeof(WhoCanTask), read_task, arena, (void **) ret, ret_n);
}

static int read_chain(sd_bus_message *m, Arena *arena, void *ret) {
        WhoCanChain *c = ret;
        uint32_t depth;
        int always;
        int r = sd_bus_message_enter_container(m, 'r', "tuba" CASE_TYPE "a(uus)");
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "tub", &c->head, &depth, &always);
        if (r < 0)
                return r;
        c->depth = depth;
        c->always = always;
        r = read_cases(m, arena, &c->report, &c->n_cases);
        if (r < 0)
                return r;
        r = read_tasks(m, arena, &c->tasks, &c->n_tasks);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_other(sd_bus_message *m, Arena *arena, void *ret) {
        uint32_t value, tasks, chains;
        int conditional;
        int r = sd_bus_message_read(m, "(buuu)", &conditional, &value, &tasks, &chains);
        if (r < 0)
                return r;
        *(WhoCanOther *) ret = (WhoCanOther) { .ret = value, .conditional = conditional, .n_tasks = tasks,
                                               .n_chains = chains };
        return 0;
}

static int read_undecided_chain(sd_bus_message *m, Arena *arena, void *ret) {
        WhoCanChain *c = ret;
        uint32_t depth;
        int r = sd_bus_message_enter_container(m, 'r', "tua(uus)");
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "tu", &c->head, &depth);
        if (r < 0)
                return r;
        c->depth = depth;
        r = read_tasks(m, arena, &c->tasks, &c->n_tasks);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* The chains the daemon could not decide; a daemon before them sends
 * none. */
static int read_undecided(sd_bus_message *m, WhoCan *w) {
        if (sd_bus_message_at_end(m, false) > 0)
                return 0;
        return read_array(m, "(tua(uus))", sizeof(WhoCanChain), read_undecided_chain, &w->arena,
                          (void **) &w->undecided, &w->n_undecided);
}

/* Why each undecided chain was not: a daemon before this field said nothing, and then it could
 * only have been a program not available. */
static int read_undecided_why(sd_bus_message *m, WhoCan *w) {
        for (size_t i = 0; i < w->n_undecided; i++)
                w->undecided[i].why = WHO_CAN_PROGRAM_MISSING;
        if (sd_bus_message_at_end(m, false) > 0)
                return 0;
        int r = sd_bus_message_enter_container(m, 'a', "s");
        if (r < 0)
                return r;
        for (size_t i = 0; sd_bus_message_at_end(m, false) == 0; i++) {
                const char *why;
                r = sd_bus_message_read(m, "s", &why);
                if (r < 0)
                        return r;
                WhoCanUndecided u = who_can_undecided_from_string(why);
                if (i >= w->n_undecided || u <= WHO_CAN_DECIDED)
                        return -EBADMSG;
                w->undecided[i].why = u;
        }
        return sd_bus_message_exit_container(m);
}

static int read_who_can(sd_bus_message *m, WhoCan *w) {
        const char *arch;
        int32_t nr;
        uint32_t tasks, decided, unfiltered;
        int r = sd_bus_message_read(m, "siuu", &arch, &nr, &tasks, &decided);
        if (r < 0)
                return r;
        r = read_array(m, "(tuba" CASE_TYPE "a(uus))", sizeof(WhoCanChain), read_chain, &w->arena,
                       (void **) &w->chains, &w->n_chains);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "u", &unfiltered);
        if (r < 0)
                return r;
        r = read_array(m, "(buuu)", sizeof(WhoCanOther), read_other, &w->arena, (void **) &w->others,
                       &w->n_others);
        if (r < 0)
                return r;
        r = read_undecided(m, w);
        if (r < 0)
                return r;
        r = read_undecided_why(m, w);
        if (r < 0)
                return r;
        w->n_tasks = tasks;
        w->n_decisions = decided;
        w->n_unfiltered = unfiltered;
        return 0;
}

/* A WhoCan call: the system call, its arguments, and the options given (arch, action). */
static int new_who_can_call(sd_bus *bus, const char *syscall, const uint64_t *args, size_t n_args,
                            const char *arch, const char *action, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r = sd_bus_message_new_method_call(bus, &call, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH,
                                               SECTREE_MANAGER_INTERFACE, "WhoCan");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", syscall);
        if (r < 0)
                return r;
        r = sd_bus_message_append_array(call, 't', args, n_args * sizeof(uint64_t));
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "a{sv}", (arch != NULL) + (action != NULL), arch ? "arch" : "action", "s",
                                  arch ?: action, "action", "s", action);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(call);
        return 0;
}

int manager_who_can(sd_bus *bus, const char *syscall, const uint64_t *args, size_t n_args, const char *arch,
                    const char *action, WhoCan **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(who_can_freep) WhoCan *w = calloc(1, sizeof(WhoCan));
        if (!w)
                return log_oom();
        int r = new_who_can_call(bus, syscall, args, n_args, arch, action, &call);
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

/* ---- Audit ---- */

void task_audit_reply_done(TaskAuditReply *r) {
        audit_findings_done(&r->findings);
        arena_done(&r->arena);
        *r = (TaskAuditReply) {};
}

static int read_finding(sd_bus_message *m, TaskAuditReply *ret) {
        const char *rule, *severity, *arch, *syscall, *message;
        const void *args;
        size_t size;
        uint32_t warch, nr, action;
        int has;
        int r = sd_bus_message_enter_container(m, 'r', "sssssbuuatu");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(m, "sssssbuu", &rule, &severity, &arch, &syscall, &message, &has, &warch, &nr);
        if (r >= 0)
                r = sd_bus_message_read_array(m, 't', &args, &size);
        if (r >= 0)
                r = sd_bus_message_read(m, "u", &action);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        if (size != 6 * sizeof(uint64_t) || audit_rule_from_string(rule) < 0 || audit_severity_from_string(severity) < 0)
                return -EBADMSG;
        if (GROW(ret->findings.items, ret->findings.allocated, ret->findings.n + 1) < 0)
                return -ENOMEM;
        AuditFinding *f = &ret->findings.items[ret->findings.n];
        *f = (AuditFinding) { .rule = audit_rule_from_string(rule), .severity = audit_severity_from_string(severity),
                              .arch = copy_string(&ret->arena, arch, true), .syscall = copy_string(&ret->arena, syscall, true),
                              .message = strdup(message), .has_witness = has, .action = action,
                              .witness = { .arch = warch, .nr = (int) nr } };
        for (size_t i = 0; i < 6; i++)
                f->witness.args[i] = ((const uint64_t *) args)[i];
        if (!f->message || (*arch && !f->arch) || (*syscall && !f->syscall)) {
                free(f->message);
                return -ENOMEM;
        }
        ret->findings.n++;
        return 1;
}

static int read_audit(sd_bus_message *m, TaskAuditReply *ret) {
        const char *mode;
        const void *ids;
        size_t size;
        int r = sd_bus_message_read(m, "s", &mode);
        if (r >= 0 && (ret->mode = task_mode_from_string(mode)) < 0)
                return -EBADMSG;
        if (r >= 0)
                r = sd_bus_message_read_array(m, 't', &ids, &size);
        if (r < 0)
                return r;
        ret->head = size >= sizeof(uint64_t) ? ((const uint64_t *) ids)[0] : 0;
        r = sd_bus_message_enter_container(m, 'a', "(sssssbuuatu)");
        while (r >= 0 && (r = read_finding(m, ret)) > 0)
                ;
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

int manager_audit(sd_bus *bus, uint32_t tid, const char *baseline, TaskAuditReply *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(task_audit_reply_done) TaskAuditReply a = {};
        int r = sd_bus_message_new_method_call(bus, &call, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH,
                                               SECTREE_MANAGER_INTERFACE, "Audit");
        if (r >= 0)
                r = sd_bus_message_append(call, "u", tid);
        if (r >= 0)
                r = baseline ? sd_bus_message_append(call, "a{sv}", 1, "baseline", "s", baseline)
                             : sd_bus_message_append(call, "a{sv}", 0);
        if (r < 0)
                return ctl_error_errno(r, "Failed to make the Audit call: %m");
        r = sd_bus_call(bus, call, 0, &error, &reply);
        if (r < 0 && sd_bus_error_has_name(&error, "org.sectree1.Error.NoSuchTask"))
                return -ESRCH; /* gone since it was listed (or never visible): the caller decides */
        if (r < 0)
                return bus_log_error(r, &error, "call Audit");
        r = read_audit(reply, &a);
        if (r < 0)
                return bus_log_parse_error(r, "Audit");
        *ret = a;
        a = (TaskAuditReply) {};
        return 0;
}
