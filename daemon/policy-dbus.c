/* policy-dbus.c: GetPolicy and WhoCan: the analysis of lib/policy* over the live forest, for the
 * tasks the caller may see */
#include "policy-dbus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "access.h"
#include "manager.h"
#include "policy-report.h"
#include "procinfo.h"
#include "snapshot.h"

#define ERROR_NO_SUCH_TASK "org.sectree1.Error.NoSuchTask"
#define ERROR_SCAN_FAILED "org.sectree1.Error.ScanFailed"

static bool past_deadline(void *userdata) {
        return now_usec(CLOCK_MONOTONIC) >= *(const uint64_t *) userdata;
}

/* The named error for an analysis that failed. */
static int analysis_error(sd_bus_error *error, int r, const char *what) {
        if (r == -ECANCELED)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The analysis of %s took longer than %llu s and was stopped.", what,
                                         POLICY_DBUS_DEADLINE_USEC / 1000000ULL);
        if (r == -E2BIG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "A chain of %s has too many paths to analyse.", what);
        log_error_errno(r, "Failed to analyse %s: %m", what);
        return sd_bus_error_set_errno(error, r);
}

static int live_or_fail(Manager *m, const Forest **ret, sd_bus_error *error) {
        int r = manager_live(m, ret);
        if (r < 0)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The live state could not be rebuilt: %s",
                                         strerror(-r));
        return 0;
}

/* ---- the reply's parts ---- */

static int append_case(sd_bus_message *reply, const PolicyReportCase *c) {
        return sd_bus_message_append(reply, POLICY_CASE_TYPE, c->action, c->condition ?: "",
                                     (uint32_t) c->n_conditions, c->ret, c->constant, c->json);
}

static int append_cases(sd_bus_message *reply, const PolicyReportCase *cases, size_t n) {
        int r = sd_bus_message_open_container(reply, 'a', POLICY_CASE_TYPE);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = append_case(reply, &cases[i]);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int append_decision(sd_bus_message *reply, const PolicyReportDecision *d) {
        int r = sd_bus_message_open_container(reply, 'r', "bua" POLICY_CASE_TYPE);
        if (r >= 0)
                r = sd_bus_message_append(reply, "bu", d->unconditional, d->ret);
        if (r >= 0)
                r = append_cases(reply, d->cases, d->n_cases);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int append_arch(sd_bus_message *reply, const PolicyReportArch *a) {
        int r = sd_bus_message_open_container(reply, 'r', "sbbua(si" POLICY_DECISION_TYPE ")" POLICY_DECISION_TYPE);
        if (r >= 0)
                r = sd_bus_message_append(reply, "sbbu", a->name, a->native, a->uniform, a->uniform_ret);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(si" POLICY_DECISION_TYPE ")");
        for (size_t i = 0; r >= 0 && i < a->n_syscalls; i++) {
                r = sd_bus_message_open_container(reply, 'r', "si" POLICY_DECISION_TYPE);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "si", a->syscalls[i].name, a->syscalls[i].nr);
                if (r >= 0)
                        r = append_decision(reply, &a->syscalls[i].decision);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_decision(reply, &a->other);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* ---- GetPolicy ---- */

/* The task's mode and chain, if the caller may see it: a task the daemon does not track runs
 * without filters. A hidden task and a missing one get the same error. */
static int find_task(Caller *c, const Forest *f, uint32_t tid, const Task **ret, sd_bus_error *error) {
        Process *p;
        const Task *t = forest_find_task(f, (pid_t) tid, &p);
        bool visible;
        if (t)
                visible = caller_may_see(c, p);
        else {
                ProcStatus st;
                visible = proc_read_status((pid_t) tid, &st) >= 0 && caller_may_see_process(c, st.tgid);
        }
        if (!visible)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_TASK, "No task with tid %" PRIu32 ".", tid);
        *ret = t;
        return 0;
}

static int chain_of(const Task *t, struct sock_filter *strict, ChainProgram **ret, size_t *ret_n) {
        size_t n = t && t->mode == TASK_MODE_FILTER && t->filter ? t->filter->depth : 1;
        _cleanup_free_ ChainProgram *c = calloc(n, sizeof(ChainProgram));
        size_t k = 0;
        if (!c)
                return -ENOMEM;
        if (t && t->mode == TASK_MODE_STRICT)
                c[k++] = (ChainProgram) { .insns = strict, .len = policy_strict_program(strict) };
        else if (t && t->mode == TASK_MODE_FILTER)
                for (const Filter *x = t->filter; x && k < n; x = x->parent)
                        c[k++] = (ChainProgram) { .insns = x->insns, .len = x->len };
        *ret = TAKE_PTR(c);
        *ret_n = k;
        return 0;
}

int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        _cleanup_(policy_report_freep) PolicyReport *rep = NULL;
        _cleanup_free_ ChainProgram *chain = NULL;
        struct sock_filter strict[POLICY_STRICT_PROGRAM_MAX];
        const Forest *f;
        const Task *t = NULL;
        uint32_t tid;
        size_t n;
        int r = sd_bus_message_read(msg, "u", &tid);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        if (tid == 0 || tid > INT32_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid tid %" PRIu32 ".", tid);
        if ((r = live_or_fail(m, &f, error)) < 0 || (r = find_task(&c, f, tid, &t, error)) < 0)
                return r;
        if (t && t->mode == TASK_MODE_FILTER && !t->filter)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The chain of task %" PRIu32 " is not known.", tid);
        if ((r = chain_of(t, strict, &chain, &n)) < 0)
                return r;

        char what[64];
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + POLICY_DBUS_DEADLINE_USEC;
        snprintf(what, sizeof(what), "the chain of task %" PRIu32, tid);
        r = policy_summarize_stoppable(chain, n, NULL, &(PolicyStop) { .check = past_deadline, .userdata = &deadline },
                                       &s);
        if (r >= 0)
                r = policy_report_new(s, &rep);
        if (r < 0)
                return analysis_error(error, r, what);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", task_mode_to_string(t ? t->mode : TASK_MODE_DISABLED));
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "t");
        for (const Filter *x = t && t->mode == TASK_MODE_FILTER ? t->filter : NULL; r >= 0 && x; x = x->parent)
                r = sd_bus_message_append(reply, "t", x->id);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', POLICY_ARCH_TYPE);
        for (size_t i = 0; r >= 0 && i < rep->n_arches; i++)
                r = append_arch(reply, &rep->arches[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

/* ---- WhoCan ---- */

typedef struct WhoCanOptions {
        const char *action, *arch;
} WhoCanOptions;

static int read_string_option(sd_bus_message *msg, const char *key, const char **ret, sd_bus_error *error) {
        const char *contents;
        int r = sd_bus_message_peek_type(msg, NULL, &contents);
        if (r < 0)
                return r;
        if (!streq(contents, "s"))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Option \"%s\" takes a value of type 's', not '%s'.", key, contents);
        return sd_bus_message_read(msg, "v", "s", ret);
}

static int read_who_can_options(sd_bus_message *msg, WhoCanOptions *o, sd_bus_error *error) {
        const char *key;
        int r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                r = sd_bus_message_read(msg, "s", &key);
                if (r >= 0) {
                        if (streq(key, "action"))
                                r = read_string_option(msg, key, &o->action, error);
                        else if (streq(key, "arch"))
                                r = read_string_option(msg, key, &o->arch, error);
                        else
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option \"%s\".",
                                                         key);
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
        }
        return r < 0 ? r : sd_bus_message_exit_container(msg);
}

static bool plan_visible(const Process *p, void *userdata) {
        return caller_may_see(userdata, p);
}

/* The visible threads of the machine without filters, which the live forest does not hold: for
 * root, the kernel's count of every thread (the fourth field of /proc/loadavg, nr_threads: one
 * read) less the filtered ones; for others, the Threads: of each process the caller may see, less
 * its filtered threads. */
static int count_all_threads(Caller *c, size_t *ret) {
        if (c->privileged) {
                _cleanup_fclose_ FILE *f = fopen("/proc/loadavg", "re");
                unsigned long running, total;
                if (!f)
                        return -errno;
                if (fscanf(f, "%*s %*s %*s %lu/%lu", &running, &total) != 2)
                        return -EBADMSG;
                *ret = total;
                return 0;
        }
        _cleanup_free_ pid_t *pids = NULL;
        size_t n_pids, n = 0;
        int r = proc_list_pids(&pids, &n_pids);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_pids; i++) {
                ProcStatus st;
                if (!caller_may_see_process(c, pids[i]) || proc_read_status(pids[i], &st) < 0)
                        continue; /* hidden, or gone */
                n += st.threads;
        }
        *ret = n;
        return 0;
}

static int count_unfiltered(Caller *c, const Forest *f, size_t *ret) {
        size_t all = 0, filtered = 0;
        int r = count_all_threads(c, &all);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (!c->privileged && !caller_may_see(c, p))
                        continue;
                for (size_t j = 0; j < p->n_threads; j++)
                        filtered += p->threads[j].mode != TASK_MODE_DISABLED;
        }
        *ret = all > filtered ? all - filtered : 0;
        return 0;
}

static int append_tasks(sd_bus_message *reply, const WhoCanTask *tasks, size_t n) {
        int r = sd_bus_message_open_container(reply, 'a', "(uus)");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                /* comm is whatever bytes the task set (PR_SET_NAME); D-Bus strings must be UTF-8 */
                _cleanup_free_ char *comm = snapshot_utf8_sanitize(tasks[i].comm);
                if (!comm)
                        return -ENOMEM;
                r = sd_bus_message_append(reply, "(uus)", (uint32_t) tasks[i].pid, (uint32_t) tasks[i].tid, comm);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int append_who_can(sd_bus_message *reply, const WhoCanQuery *q, const WhoCan *w) {
        int r = sd_bus_message_append(reply, "siuu", q->arch->name, q->nr, (uint32_t) w->n_tasks,
                                      (uint32_t) w->n_decisions);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', WHO_CAN_CHAIN_TYPE);
        for (size_t i = 0; r >= 0 && i < w->n_chains; i++) {
                const WhoCanChain *ch = &w->chains[i];
                r = sd_bus_message_open_container(reply, 'r', "tuba" POLICY_CASE_TYPE "a(uus)");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "tub", ch->head, (uint32_t) ch->depth, ch->always);
                if (r >= 0)
                        r = append_cases(reply, ch->report, ch->n_cases);
                if (r >= 0)
                        r = append_tasks(reply, ch->tasks, ch->n_tasks);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "u", (uint32_t) w->n_unfiltered);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', WHO_CAN_OTHER_TYPE);
        for (size_t i = 0; r >= 0 && i < w->n_others; i++)
                r = sd_bus_message_append(reply, WHO_CAN_OTHER_TYPE, w->others[i].conditional, w->others[i].ret,
                                          (uint32_t) w->others[i].n_tasks, (uint32_t) w->others[i].n_chains);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

int method_who_can(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(who_can_freep) WhoCan *w = NULL;
        _cleanup_free_ char *why = NULL;
        WhoCanOptions o = {};
        WhoCanQuery q;
        WhoCanPlan *plan;
        const char *syscall;
        const void *args;
        size_t size, unfiltered;
        const Forest *f;
        int r = sd_bus_message_read(msg, "s", &syscall);
        if (r >= 0)
                r = sd_bus_message_read_array(msg, 't', &args, &size);
        if (r < 0 || (r = read_who_can_options(msg, &o, error)) < 0)
                return r;
        r = who_can_query_parse(o.arch, syscall, args, size / sizeof(uint64_t), o.action, &q, &why);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s.", why);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0 || (r = live_or_fail(m, &f, error)) < 0)
                return r;

        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + POLICY_DBUS_DEADLINE_USEC;
        r = who_can_plan_new(f, c.privileged ? NULL : plan_visible, &c, &plan);
        if (r >= 0)
                r = who_can_plan_decide(plan, &q, &(PolicyStop) { .check = past_deadline, .userdata = &deadline }, &w);
        if (r >= 0)
                r = who_can_report(w);
        if (r < 0)
                return analysis_error(error, r, "the chains");
        r = count_unfiltered(&c, f, &unfiltered);
        if (r < 0) {
                log_warning_errno(r, "Could not count the tasks without filters: %m");
                return sd_bus_error_set_errno(error, r);
        }
        /* the live forest holds the filtered threads (and perhaps a few others of their processes) */
        w->n_tasks += unfiltered > w->n_unfiltered ? unfiltered - w->n_unfiltered : 0;
        w->n_unfiltered = MAX(unfiltered, w->n_unfiltered);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = append_who_can(reply, &q, w);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}
