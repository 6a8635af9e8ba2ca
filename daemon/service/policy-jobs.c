/* policy-jobs.c: GetPolicy's and WhoCan's analyses: the question copied out of the live forest on
 * the loop, answered in a worker lane */
#include "service/policy-jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "observe/procinfo.h"
#include "policy/policy-baseline.h"
#include "service/program-fetch.h"

static void job_free_owner(void *owner);

int policy_jobs_new(sd_event *event, WorkerLanes **ret) {
        WorkerLanesOptions o = { .burst_usec = POLICY_UID_BURST_USEC, .percent = POLICY_UID_SHARE_PERCENT,
                                 .wait_for_share = true, .max_root = POLICY_JOBS_MAX_ROOT,
                                 .max_users = POLICY_JOBS_MAX_USERS, .max_per_uid = POLICY_JOBS_MAX_PER_UID,
                                 .free_owner = job_free_owner };
        return worker_lanes_new(event, &o, ret);
}

void policy_baseline_done(PolicyBaseline *b) {
        free(b->text);
        free(b->error);
        *b = (PolicyBaseline) {};
}

PolicyJob *policy_job_free(PolicyJob *j) {
        if (!j)
                return NULL;
        worker_item_cancel(&j->worker);
        if (j->userdata_free)
                j->userdata_free(j->userdata);
        prog_wants_done(&j->wants);
        arena_done(&j->arena);
        free(j->chain);
        free(j->filter_ids);
        free(j->listeners);
        policy_baseline_done(&j->baseline);
        audit_findings_done(&j->findings);
        who_can_plan_free(j->plan);
        policy_report_free(j->report);
        who_can_free(j->who);
        caller_deinit(&j->caller);
        free(j);
        return NULL;
}

static void job_free_owner(void *owner) {
        policy_job_free(owner); /* each job is its item's container */
}

static void job_run(void *userdata);
static void job_done(void *userdata);
static void job_failed(void *userdata, int r);

PolicyJob *policy_job_new(Source *source, const Caller *c, PolicyJobKind kind, const char *what) {
        PolicyJob *j = calloc(1, sizeof(PolicyJob));
        if (!j)
                return NULL;
        *j = (PolicyJob) { .source = source, .kind = kind, .gate = secure_getenv("SECTREE_TEST_POLICY_GATE") };
        worker_item_init(&j->worker, j, c->privileged, c->uid, job_run, job_done, job_failed);
        snprintf(j->what, sizeof(j->what), "%s", what);
        return j;
}

/* ---- the question, on the loop ---- */

int policy_find_task(Caller *c, const Forest *f, uint32_t tid, const Task **ret) {
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
                return -ESRCH;
        *ret = t;
        return 0;
}

/* x's program copied at the end of the chain; one kept without it (over budget) is wanted there. */
static int chain_add(PolicyJob *j, const Filter *x) {
        ChainProgram *c = &j->chain[j->n_chain++];
        *c = (ChainProgram) { .len = x->len };
        j->filter_ids[j->n_filter_ids++] = x->id;
        if (x->len == 0)
                return -ENODATA; /* nothing the kernel would have installed */
        if (!x->insns)
                return prog_wants_add(&j->wants, x->digest, x->len, &c->insns);
        c->insns = arena_memdup(&j->arena, x->insns, x->len * sizeof(struct sock_filter));
        return c->insns ? 0 : -ENOMEM;
}

int policy_job_set_chain(PolicyJob *j, const Task *t) {
        size_t n = t && t->mode == TASK_MODE_FILTER && t->filter ? t->filter->depth : 1;
        j->chain = calloc(n, sizeof(ChainProgram));
        j->filter_ids = calloc(n, sizeof(uint64_t));
        j->listeners = calloc(n, sizeof(bool));
        if (!j->chain || !j->filter_ids || !j->listeners)
                return -ENOMEM;
        j->mode = t ? t->mode : TASK_MODE_DISABLED;
        if (j->mode == TASK_MODE_STRICT) {
                struct sock_filter *strict = arena_alloc(&j->arena, POLICY_STRICT_PROGRAM_MAX * sizeof(struct sock_filter));
                if (!strict)
                        return -ENOMEM;
                j->chain[j->n_chain++] = (ChainProgram) { .insns = strict, .len = policy_strict_program(strict) };
        } else if (j->mode == TASK_MODE_FILTER)
                for (const Filter *x = t->filter; x && j->n_chain < n; x = x->parent) {
                        j->listeners[j->n_chain] = x->has_listener;
                        int r = chain_add(j, x);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static bool plan_visible(const Process *p, void *userdata) {
        return caller_may_see(userdata, p);
}

/* The visible threads of the forest in filter or strict mode. */
static size_t count_filtered(Caller *c, const Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (!c->privileged && !caller_may_see(c, p))
                        continue;
                for (size_t j = 0; j < p->n_threads; j++)
                        n += p->threads[j].mode != TASK_MODE_DISABLED;
        }
        return n;
}

int policy_job_set_who_can(PolicyJob *j, const Forest *f, const WhoCanQuery *q, Caller *c) {
        j->query = *q;
        int r = who_can_plan_new(f, c->privileged ? NULL : plan_visible, c, &j->plan);
        j->filtered = count_filtered(c, f);
        j->caller = *c; /* the worker's now */
        *c = (Caller) {};
        return r;
}

/* ---- the answer, in the worker ---- */

static bool job_stop(void *userdata) {
        PolicyJob *j = userdata;
        return atomic_load(&j->worker.cancelled) ||
               now_usec(CLOCK_MONOTONIC) >= j->worker.launched_at + POLICY_JOB_DEADLINE_USEC;
}

/* The programs the live forest kept no copy of, read again (bounded; freed with the job). What
 * still cannot be had stays missing: GetPolicy fails for it, WhoCan names its tasks undecided. */
static void fetch_missing(Source *s, ProgWants *w, Arena *arena) {
        int r = program_fetch(s, w, arena, PROGRAM_FETCH_MAX_INSNS);
        if (r < 0)
                log_debug_errno(r, "Could not read programs kept over budget again: %m");
        if (prog_wants_missing(w) > 0)
                log_debug("%zu program(s) of an analysis are not available.", prog_wants_missing(w));
}

/* The visible threads of the machine without filters, which the live forest does not hold, are
 * every visible thread less the filtered ones. Every visible thread (in the worker): for root, the
 * kernel's count of every thread (the fourth field of /proc/loadavg, nr_threads: one read); for
 * others, the Threads: of each process the caller may see. */
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

static int get_policy_run(PolicyJob *j, const PolicyStop *stop) {
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        fetch_missing(j->source, &j->wants, &j->arena);
        if (prog_wants_missing(&j->wants) > 0)
                return -ENODATA;
        int r = policy_summarize_stoppable(j->chain, j->n_chain, NULL, stop, &s);
        if (r < 0)
                return r;
        return policy_report_new(s, &j->report);
}

/* The baseline's text built into its program (some 14 ms for containers-common's: not on the
 * loop) and decided as a chain of one. -EINVAL with j->baseline.error for a text that is no
 * profile. */
static int baseline_summarize(PolicyJob *j, const PolicyStop *stop, PolicySummary **ret) {
        _cleanup_free_ struct sock_filter *insns = NULL;
        size_t n = 0;
        int r = policy_baseline_build(j->baseline.text, strlen(j->baseline.text), &insns, &n, &j->baseline.error);
        if (r == -EINVAL && !j->baseline.error && !(j->baseline.error = strdup("not a profile")))
                return -ENOMEM;
        if (r < 0)
                return r;
        ChainProgram p = { .insns = insns, .len = n };
        return policy_summarize_stoppable(&p, 1, NULL, stop, ret);
}

/* Audit: a task in strict mode or without filters has nothing to audit (its baseline is still
 * checked: a bad one is refused whatever the task). */
static int audit_run(PolicyJob *j, const PolicyStop *stop) {
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL, *baseline = NULL;
        int r = j->baseline.text ? baseline_summarize(j, stop, &baseline) : 0;
        if (r < 0 || j->mode != TASK_MODE_FILTER)
                return r;
        fetch_missing(j->source, &j->wants, &j->arena);
        if (prog_wants_missing(&j->wants) > 0)
                return -ENODATA;
        r = policy_summarize_stoppable(j->chain, j->n_chain, NULL, stop, &s);
        if (r < 0)
                return r;
        AuditInput in = { .chain = j->chain, .n = j->n_chain, .has_listener = j->listeners, .summary = s,
                          .baseline = baseline };
        return policy_audit(&in, &j->findings);
}

static int who_can_run(PolicyJob *j, PolicyStop *stop) {
        Arena *arena;
        ProgWants *w = who_can_plan_wants(j->plan, &arena);
        fetch_missing(j->source, w, arena);
        /* past the deadline, the chains left are named undecided: WhoCan never fails as a whole for
         * one user's chains */
        stop->leave_undecided = true;
        int r = who_can_plan_decide(TAKE_PTR(j->plan), &j->query, stop, &j->who);
        if (r < 0)
                return r;
        r = who_can_report(j->who);
        if (r < 0)
                return r;
        return count_all_threads(&j->caller, &j->all);
}

static void job_run(void *userdata) {
        PolicyJob *j = userdata;
        PolicyStop stop = { .check = job_stop, .userdata = j };
        worker_item_gate(&j->worker, j->gate);
        switch (j->kind) {
        case POLICY_JOB_GET_POLICY:
                j->r = get_policy_run(j, &stop);
                return;
        case POLICY_JOB_WHO_CAN:
                j->r = who_can_run(j, &stop);
                return;
        case POLICY_JOB_AUDIT:
                j->r = audit_run(j, &stop);
                return;
        }
        j->r = -EINVAL;
}

/* ---- the lanes ---- */

/* The lanes free the job after these (job_free_owner()). */
static void job_done(void *userdata) {
        PolicyJob *j = userdata;
        j->done(j, j->userdata);
}

static void job_failed(void *userdata, int r) {
        PolicyJob *j = userdata;
        log_warning_errno(r, "Could not start a policy analysis: %m");
        j->r = r;
        j->not_started = true;
        j->done(j, j->userdata);
}

int policy_jobs_submit(WorkerLanes *lanes, PolicyJob *j, uint64_t loop_cpu_usec, PolicyJobDone done) {
        j->worker.loop_cpu_usec = loop_cpu_usec;
        j->done = done;
        int r = worker_lanes_submit(lanes, &j->worker); /* j is the lanes' now, or freed */
        if (r < 0 && r != -EBUSY)
                log_warning_errno(r, "Could not start a policy analysis: %m");
        return r;
}
