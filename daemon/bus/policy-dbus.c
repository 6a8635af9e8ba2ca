/* policy-dbus.c: GetPolicy and WhoCan: the analysis of lib/policy* over the live forest, for the
 * tasks the caller may see */
#include "bus/policy-dbus.h"

#include <errno.h>
#include <stdio.h>

#include "bus/bus-args.h"
#include "bus/bus-errors.h"
#include "policy/policy-baseline.h"
#include "service/policy-jobs.h"
#include "snapshot/snapshot.h"

/* The named error for an analysis that failed. */
static int analysis_error(sd_bus_error *error, int r, const char *what) {
        if (r == -ECANCELED)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The analysis of %s took longer than %llu s and was stopped.", what,
                                         POLICY_JOB_DEADLINE_USEC / 1000000ULL);
        if (r == -E2BIG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Too many paths to analyse in %s.", what);
        if (r == -ENODATA)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED,
                                         "A program of %s is not available: its filter is kept without it (over its "
                                         "uid's budget) and it could not be read again.", what);
        log_error_errno(r, "Failed to analyse %s: %m", what);
        return bus_error_set_errno(error, BUS_ERROR_ANALYSIS, r);
}

static int reply_get_policy(PolicyJob *j, sd_bus_message **ret);
static int reply_who_can(PolicyJob *j, sd_bus_message **ret);
static int reply_audit(PolicyJob *j, sd_bus_message **ret);

static int reply_of(PolicyJob *j, sd_bus_message **ret) {
        switch (j->kind) {
        case POLICY_JOB_GET_POLICY:
                return reply_get_policy(j, ret);
        case POLICY_JOB_WHO_CAN:
                return reply_who_can(j, ret);
        case POLICY_JOB_AUDIT:
                return reply_audit(j, ret);
        }
        return -EINVAL;
}

/* What a job keeps of its call: the message to answer, and its caller followed on the bus, so
 * that the analysis of a caller that has left (its connection closed: a client given up, killed)
 * is dropped, waiting or running, rather than run for nobody while it holds the caller's lane. */
typedef struct JobCall {
        sd_bus_message *msg;
        sd_bus_track *track;
} JobCall;

static void job_call_free(void *userdata) {
        JobCall *call = userdata;
        sd_bus_track_unref(call->track);
        sd_bus_message_unref(call->msg);
        free(call);
}

static sd_bus_message *job_msg(const PolicyJob *j) {
        return ((const JobCall *) j->userdata)->msg;
}

/* A waiting analysis leaves its lane; a running one is told to stop, and ends as any does (its
 * worker is not waited for here, on the loop; its time is charged to its uid; its answer goes
 * nowhere). */
static int on_caller_gone(sd_bus_track *track, void *userdata) {
        PolicyJob *j = userdata;
        JobCall *call = j->userdata;
        log_debug("The caller of the analysis of %s has left the bus: the analysis is dropped.", j->what);
        call->track = sd_bus_track_unref(call->track); /* once: an empty track would be dispatched again */
        if (worker_item_running(&j->worker))
                atomic_store(&j->worker.cancelled, true);
        else
                policy_job_free(j); /* out of its lane */
        return 0;
}

/* The worker is done: its answer, or the error named. */
static void on_job_done(PolicyJob *j, void *userdata) {
        sd_bus_message *msg = job_msg(j);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = j->r;
        if (r >= 0)
                r = reply_of(j, &reply);
        else if (r == -EINVAL && j->baseline.error)
                r = sd_bus_message_new_method_errorf(msg, &reply, SD_BUS_ERROR_INVALID_ARGS,
                                                     "Invalid baseline profile: %s.", j->baseline.error);
        else if (!j->not_started) {
                (void) analysis_error(&error, r, j->what);
                r = sd_bus_message_new_method_errorf(msg, &reply, error.name, "%s", error.message);
        }
        if (r < 0)
                r = sd_bus_message_new_method_errno(msg, &reply, r, NULL);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                log_debug_errno(r, "Could not answer a policy call: %m");
}

static PolicyJob *job_new(ManagerBus *b, sd_bus_message *msg, const Caller *c, PolicyJobKind kind, const char *what) {
        PolicyJob *j = policy_job_new(b->manager->source, c, kind, what);
        if (!j)
                return NULL;
        JobCall *call = calloc(1, sizeof(JobCall));
        if (!call)
                return policy_job_free(j);
        call->msg = sd_bus_message_ref(msg);
        j->userdata = call;
        j->userdata_free = job_call_free;
        /* (adding the sender asks the bus whether it is still there: one round trip to dbus-daemon
         * per analysis, on the loop, against the analysis's own milliseconds) */
        int r = sd_bus_track_new(sd_bus_message_get_bus(msg), &call->track, on_caller_gone, j);
        if (r >= 0)
                r = sd_bus_track_add_sender(call->track, msg);
        if (r < 0) { /* answered all the same, only not dropped if its caller leaves */
                call->track = sd_bus_track_unref(call->track); /* a failed add queues the empty track */
                log_debug_errno(r, "Could not follow the caller of the analysis of %s: %m", j->what);
        }
        return j;
}

/* Queue j (taken), or refuse it when its lane is full. */
static int job_submit(ManagerBus *b, PolicyJob *j, uint64_t cpu, sd_bus_error *error) {
        int r = policy_jobs_submit(b->policy_jobs, j, thread_cpu_usec() - cpu, on_job_done);
        if (r == -EBUSY)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Too many policy analyses are waiting; try again later.");
        return r < 0 ? r : 1; /* answered when done */
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

static int append_syscall(sd_bus_message *reply, const char *name, int nr, const PolicyReportDecision *d) {
        int r = sd_bus_message_open_container(reply, 'r', "si" POLICY_DECISION_TYPE);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "si", name, nr);
        if (r < 0)
                return r;
        r = append_decision(reply, d);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int append_arch(sd_bus_message *reply, const PolicyReportArch *a) {
        int r = sd_bus_message_open_container(reply, 'r', "sbbua(si" POLICY_DECISION_TYPE ")" POLICY_DECISION_TYPE);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "sbbu", a->name, a->native, a->uniform, a->uniform_ret);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(si" POLICY_DECISION_TYPE ")");
        for (size_t i = 0; r >= 0 && i < a->n_syscalls; i++)
                r = append_syscall(reply, a->syscalls[i].name, a->syscalls[i].nr, &a->syscalls[i].decision);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        r = append_decision(reply, &a->other);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* ---- GetPolicy ---- */

/* GetPolicy's and Audit's call: the job for the chain of task tid (Audit: with its baseline's
 * program, taken). */
static int chain_method(sd_bus_message *msg, ManagerBus *b, PolicyJobKind kind, uint32_t tid, PolicyBaseline *baseline,
                        sd_bus_error *error) {
        Manager *m = b->manager;
        CALLER_CLEANUP Caller c = {};
        const Forest *f;
        const Task *t = NULL;
        uint64_t cpu = thread_cpu_usec();
        int r = caller_from_message(msg, &c);
        if (r < 0)
                return r;
        if (tid == 0 || tid > INT32_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid tid %" PRIu32 ".", tid);
        if ((r = live_or_fail(m, &f, error)) < 0)
                return r;
        if (policy_find_task(&c, f, tid, &t) < 0)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_TASK, "No task with tid %" PRIu32 ".", tid);
        if (t && t->mode == TASK_MODE_FILTER && !t->filter)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The chain of task %" PRIu32 " is not known.", tid);
        char what[64];
        snprintf(what, sizeof(what), "the chain of task %" PRIu32, tid);
        PolicyJob *j = job_new(b, msg, &c, kind, what);
        if (!j)
                return -ENOMEM;
        if (baseline) {
                j->baseline = *baseline;
                *baseline = (PolicyBaseline) {};
        }
        r = policy_job_set_chain(j, t);
        if (r < 0) {
                policy_job_free(j);
                if (r == -ENODATA)
                        return sd_bus_error_setf(error, ERROR_SCAN_FAILED,
                                                 "The chain of task %" PRIu32 " is not known.", tid);
                return r;
        }
        return job_submit(b, j, cpu, error);
}

int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        uint32_t tid;
        int r = sd_bus_message_read(msg, "u", &tid);
        return r < 0 ? r : chain_method(msg, userdata, POLICY_JOB_GET_POLICY, tid, NULL, error);
}

/* ---- Audit ---- */

/* Audit's options: "baseline", an OCI seccomp profile as JSON text (the caller reads the file:
 * the daemon opens no path a caller names). Its size is checked here; it is parsed and built in
 * the worker (some 14 ms for containers-common's), which refuses a text that is no profile. */
static int read_audit_option(sd_bus_message *msg, const char *key, void *userdata, sd_bus_error *error) {
        const char **baseline = userdata;
        if (streq(key, "baseline"))
                return bus_read_option(msg, key, "s", baseline, error);
        return bus_unknown_option(error, key);
}

static int audit_baseline(const char *text, PolicyBaseline *ret, sd_bus_error *error) {
        size_t n = strlen(text);
        if (n > POLICY_BASELINE_MAX_BYTES)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid baseline profile: %zu bytes, more than the limit of %u.", n,
                                         POLICY_BASELINE_MAX_BYTES);
        ret->text = strdup(text);
        return ret->text ? 0 : -ENOMEM;
}

int method_audit(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(policy_baseline_done) PolicyBaseline baseline = {};
        const char *text = NULL;
        uint32_t tid;
        int r = sd_bus_message_read(msg, "u", &tid);
        if (r < 0 || (r = bus_read_options(msg, read_audit_option, &text, error)) < 0)
                return r;
        if (text && (r = audit_baseline(text, &baseline, error)) < 0)
                return r;
        return chain_method(msg, userdata, POLICY_JOB_AUDIT, tid, text ? &baseline : NULL, error);
}

static int append_finding(sd_bus_message *reply, const AuditFinding *f) {
        int r = sd_bus_message_open_container(reply, 'r', "sssssbuuatu");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "sssssbuu", audit_rule_to_string(f->rule), audit_severity_to_string(f->severity),
                                  f->arch ?: "", f->syscall ?: "", f->message, f->has_witness, f->witness.arch,
                                  (uint32_t) f->witness.nr);
        if (r < 0)
                return r;
        uint64_t args[6];
        for (size_t i = 0; i < 6; i++)
                args[i] = f->witness.args[i];
        r = sd_bus_message_append_array(reply, 't', args, sizeof(args));
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "u", f->action);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The start GetPolicy's and Audit's replies share: the task's mode and its filters, newest first. */
static int reply_chain_begin(PolicyJob *j, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_message_new_method_return(job_msg(j), &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "s", task_mode_to_string(j->mode));
        if (r < 0)
                return r;
        r = sd_bus_message_append_array(reply, 't', j->filter_ids, j->n_filter_ids * sizeof(uint64_t));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}

static int reply_audit(PolicyJob *j, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = reply_chain_begin(j, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', AUDIT_FINDING_TYPE);
        for (size_t i = 0; r >= 0 && i < j->findings.n; i++)
                r = append_finding(reply, &j->findings.items[i]);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}

static int reply_get_policy(PolicyJob *j, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = reply_chain_begin(j, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', POLICY_ARCH_TYPE);
        for (size_t i = 0; r >= 0 && i < j->report->n_arches; i++)
                r = append_arch(reply, &j->report->arches[i]);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}

/* ---- WhoCan ---- */

typedef struct WhoCanOptions {
        const char *action, *arch;
} WhoCanOptions;

static int read_who_can_option(sd_bus_message *msg, const char *key, void *userdata, sd_bus_error *error) {
        WhoCanOptions *o = userdata;
        if (streq(key, "action"))
                return bus_read_option(msg, key, "s", &o->action, error);
        if (streq(key, "arch"))
                return bus_read_option(msg, key, "s", &o->arch, error);
        return bus_unknown_option(error, key);
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

/* Why each chain of the undecided field was not decided, in its order: a field of its own after
 * it, so that the reply's earlier fields keep their types. */
static int append_undecided_why(sd_bus_message *reply, const WhoCan *w) {
        int r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && i < w->n_undecided; i++)
                r = sd_bus_message_append(reply, "s", who_can_undecided_to_string(w->undecided[i].why));
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int append_undecided_chain(sd_bus_message *reply, const WhoCanChain *ch) {
        int r = sd_bus_message_open_container(reply, 'r', "tua(uus)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "tu", ch->head, (uint32_t) ch->depth);
        if (r < 0)
                return r;
        r = append_tasks(reply, ch->tasks, ch->n_tasks);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int append_chain(sd_bus_message *reply, const WhoCanChain *ch) {
        int r = sd_bus_message_open_container(reply, 'r', "tuba" POLICY_CASE_TYPE "a(uus)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "tub", ch->head, (uint32_t) ch->depth, ch->always);
        if (r < 0)
                return r;
        r = append_cases(reply, ch->report, ch->n_cases);
        if (r < 0)
                return r;
        r = append_tasks(reply, ch->tasks, ch->n_tasks);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The chains not decided, with their tasks. */
static int append_undecided(sd_bus_message *reply, const WhoCan *w) {
        int r = sd_bus_message_open_container(reply, 'a', WHO_CAN_UNDECIDED_TYPE);
        for (size_t i = 0; r >= 0 && i < w->n_undecided; i++)
                r = append_undecided_chain(reply, &w->undecided[i]);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int append_who_can(sd_bus_message *reply, const WhoCanQuery *q, const WhoCan *w) {
        int r = sd_bus_message_append(reply, "siuu", q->arch->name, q->nr, (uint32_t) w->n_tasks,
                                      (uint32_t) w->n_decisions);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', WHO_CAN_CHAIN_TYPE);
        for (size_t i = 0; r >= 0 && i < w->n_chains; i++)
                r = append_chain(reply, &w->chains[i]);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "u", (uint32_t) w->n_unfiltered);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', WHO_CAN_OTHER_TYPE);
        for (size_t i = 0; r >= 0 && i < w->n_others; i++)
                r = sd_bus_message_append(reply, WHO_CAN_OTHER_TYPE, w->others[i].conditional, w->others[i].ret,
                                          (uint32_t) w->others[i].n_tasks, (uint32_t) w->others[i].n_chains);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        r = append_undecided(reply, w);
        if (r < 0)
                return r;
        return append_undecided_why(reply, w);
}

/* WhoCan's arguments read (from the start of msg) into a question; InvalidArgs set in error for a
 * question that names no call. */
static int who_can_read(sd_bus_message *msg, WhoCanQuery *q, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        WhoCanOptions o = {};
        const char *syscall;
        const void *args;
        size_t size;
        int r = sd_bus_message_rewind(msg, true);
        if (r >= 0)
                r = sd_bus_message_read(msg, "s", &syscall);
        if (r >= 0)
                r = sd_bus_message_read_array(msg, 't', &args, &size);
        if (r < 0 || (r = bus_read_options(msg, read_who_can_option, &o, error)) < 0)
                return r;
        /* what the parser's messages quote, bounded: no name of a call, an architecture or an
         * action is longer */
        const char *given[] = { syscall, o.arch, o.action };
        for (size_t i = 0; i < ELEMENTSOF(given); i++)
                if (given[i] && strlen(given[i]) > BUS_QUOTE_MAX) {
                        char q_given[BUS_QUOTE_MAX + 4];
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "No system call, architecture or "
                                                 "action is named \"%s\".", bus_quote(given[i], q_given));
                }
        r = who_can_query_parse(o.arch, syscall, args, size / sizeof(uint64_t), o.action, q, &why);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s.", why);
        return r;
}

/* The question planned over the live forest for the caller (its access checks made, or to be made
 * here for root: none) and handed to the analysis worker, which answers the call. */
static int who_can_start(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error) {
        uint64_t cpu = thread_cpu_usec();
        WhoCanQuery q;
        int r = who_can_read(msg, &q, error);
        if (r < 0)
                return r;
        PolicyJob *j = job_new(b, msg, c, POLICY_JOB_WHO_CAN, "the chains");
        if (!j)
                return -ENOMEM;
        r = policy_job_set_who_can(j, f, &q, c);
        if (r < 0) {
                policy_job_free(j);
                if (r == -ENOMEM)
                        return r;
                log_warning_errno(r, "Could not plan a who-can question: %m");
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The live state could not be read: %s",
                                         strerror(-r));
        }
        return job_submit(b, j, cpu, error);
}

/* The question checked first (InvalidArgs at once); a non-root caller's access checks to every
 * tracked process in a worker lane before it is planned (bus_checked_call()). */
int method_who_can(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        WhoCanQuery q;
        int r = who_can_read(msg, &q, error);
        if (r < 0)
                return r;
        return bus_checked_call(msg, userdata, who_can_start, error);
}

static int reply_who_can(PolicyJob *j, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        WhoCan *w = j->who;
        /* the live forest holds the filtered threads (and perhaps a few others of their processes) */
        size_t unfiltered = j->all > j->filtered ? j->all - j->filtered : 0;
        w->n_tasks += unfiltered > w->n_unfiltered ? unfiltered - w->n_unfiltered : 0;
        w->n_unfiltered = MAX(unfiltered, w->n_unfiltered);
        int r = sd_bus_message_new_method_return(job_msg(j), &reply);
        if (r >= 0)
                r = append_who_can(reply, &j->query, w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}
