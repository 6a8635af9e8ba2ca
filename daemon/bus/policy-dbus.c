/* policy-dbus.c: GetPolicy and WhoCan: the analysis of lib/policy* over the live forest, for the
 * tasks the caller may see */
#include "bus/policy-dbus.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bus/manager-dbus.h"
#include "observe/procinfo.h"
#include "policy/policy-report.h"
#include "service/access.h"
#include "service/program-fetch.h"
#include "service/uid-share.h"
#include "snapshot/snapshot.h"

/* The named error for an analysis that failed. */
static int analysis_error(sd_bus_error *error, int r, const char *what) {
        if (r == -ECANCELED)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The analysis of %s took longer than %llu s and was stopped.", what,
                                         POLICY_DBUS_DEADLINE_USEC / 1000000ULL);
        if (r == -E2BIG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "A chain of %s has too many paths to analyse.", what);
        if (r == -ENODATA)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED,
                                         "A program of %s is not available: its filter is kept without it (over its "
                                         "uid's budget) and it could not be read again.", what);
        log_error_errno(r, "Failed to analyse %s: %m", what);
        return bus_error_set_errno(error, BUS_ERROR_ANALYSIS, r);
}

/* ---- jobs: the analyses run in a worker thread, one per lane ---- */

typedef enum PolicyJobKind {
        JOB_GET_POLICY,
        JOB_WHO_CAN,
} PolicyJobKind;

struct PolicyJob {
        Manager *manager;
        Source *source;      /* the worker's: programs over budget are read again through it */
        PolicyJob *next;
        sd_bus_message *msg; /* answered when the worker is done */
        bool privileged;     /* its lane: root's, or everyone else's */
        uid_t uid;           /* the caller's: its share of everyone else's lane */
        uint64_t loop_cpu_usec; /* what the loop spent preparing it */
        PolicyJobKind kind;
        char what[64];       /* for errors: "the chain of task 4711" */

        /* the question, copied out of the live forest */
        Arena arena;            /* GetPolicy's programs */
        ProgWants wants;        /* GetPolicy: the programs its filters were kept without */
        ChainProgram *chain;    /* GetPolicy */
        size_t n_chain;
        TaskMode mode;
        uint64_t *filter_ids;
        size_t n_filter_ids;
        WhoCanPlan *plan;       /* WhoCan */
        WhoCanQuery query;
        Caller caller;          /* WhoCan: the worker counts the threads it may see */
        size_t filtered;        /* WhoCan: the visible threads of the forest in filter or strict mode */

        /* the worker: while it runs it alone touches what follows, and the loop waits for it
         * (pthread_join()) before it reads them */
        bool pending, running;
        pthread_t thread;
        int event_fd;
        sd_event_source *event_source;
        atomic_bool cancelled;
        uint64_t deadline; /* CLOCK_MONOTONIC */
        int r;
        uint64_t worker_cpu_usec;
        PolicyReport *report; /* GetPolicy */
        WhoCan *who;          /* WhoCan */
        size_t all;           /* WhoCan: every visible thread of the machine */
};

static int count_all_threads(Caller *c, size_t *ret);

/* Everyone else's lane is shared by uid (uid-share.h): the CPU its calls took, and a timer for
 * when a uid that took its share may go on. One manager per process. */
static struct {
        bool initialised;
        UidShare share;
        sd_event_source *timer;
} users_lane;

static UidShare *users_share(void) {
        if (!users_lane.initialised) {
                uid_share_init(&users_lane.share, POLICY_UID_BURST_USEC, POLICY_UID_SHARE_PERCENT);
                users_lane.initialised = true;
        }
        return &users_lane.share;
}

static unsigned lane_count(Manager *m, bool privileged) {
        unsigned n = 0;
        for (PolicyJob *j = m->policy_jobs; j; j = j->next)
                n += j->privileged == privileged;
        return n;
}

static unsigned uid_count(Manager *m, uid_t uid) {
        unsigned n = 0;
        for (PolicyJob *j = m->policy_jobs; j; j = j->next)
                n += !j->privileged && j->uid == uid;
        return n;
}

static void job_free(PolicyJob *j) {
        if (!j)
                return;
        sd_event_source_disable_unref(j->event_source);
        if (j->event_fd >= 0)
                close(j->event_fd);
        sd_bus_message_unref(j->msg);
        prog_wants_done(&j->wants);
        arena_done(&j->arena);
        free(j->chain);
        free(j->filter_ids);
        who_can_plan_free(j->plan);
        policy_report_free(j->report);
        who_can_free(j->who);
        caller_deinit(&j->caller);
        free(j);
}

static void job_unlink(PolicyJob *j) {
        for (PolicyJob **p = &j->manager->policy_jobs; *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        return;
                }
}

static bool job_stop(void *userdata) {
        PolicyJob *j = userdata;
        return atomic_load(&j->cancelled) || now_usec(CLOCK_MONOTONIC) >= j->deadline;
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

static void job_run(PolicyJob *j) {
        PolicyStop stop = { .check = job_stop, .userdata = j };
        if (j->kind == JOB_GET_POLICY) {
                _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
                fetch_missing(j->source, &j->wants, &j->arena);
                j->r = prog_wants_missing(&j->wants) > 0 ? -ENODATA : 0;
                if (j->r >= 0)
                        j->r = policy_summarize_stoppable(j->chain, j->n_chain, NULL, &stop, &s);
                if (j->r >= 0)
                        j->r = policy_report_new(s, &j->report);
        } else {
                Arena *arena;
                ProgWants *w = who_can_plan_wants(j->plan, &arena);
                fetch_missing(j->source, w, arena);
                /* past the deadline, the chains left are named undecided: WhoCan never fails as a
                 * whole for one user's chains */
                stop.leave_undecided = true;
                j->r = who_can_plan_decide(TAKE_PTR(j->plan), &j->query, &stop, &j->who);
                if (j->r >= 0)
                        j->r = who_can_report(j->who);
                if (j->r >= 0)
                        j->r = count_all_threads(&j->caller, &j->all);
        }
}

static void *job_worker(void *userdata) {
        PolicyJob *j = userdata;
        uint64_t cpu = thread_cpu_usec();
        job_run(j);
        j->worker_cpu_usec = thread_cpu_usec() - cpu;
        uint64_t one = 1;
        /* an eventfd write of 1 fails only on overflow, which one write cannot cause */
        while (write(j->event_fd, &one, sizeof(one)) < 0 && errno == EINTR)
                ;
        return NULL;
}

static int reply_get_policy(PolicyJob *j, sd_bus_message **ret);
static int reply_who_can(PolicyJob *j, sd_bus_message **ret);
static void jobs_schedule(Manager *m);

static int on_job_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PolicyJob *j = userdata;
        Manager *m = j->manager;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        (void) pthread_join(j->thread, NULL);
        j->running = false;
        if (!j->privileged && uid_share_charge(users_share(), j->uid, j->loop_cpu_usec + j->worker_cpu_usec,
                                               now_usec(CLOCK_MONOTONIC)) < 0)
                log_oom();
        int r = j->r;
        if (r >= 0)
                r = j->kind == JOB_GET_POLICY ? reply_get_policy(j, &reply) : reply_who_can(j, &reply);
        else {
                (void) analysis_error(&error, r, j->what);
                r = sd_bus_message_new_method_errorf(j->msg, &reply, error.name, "%s", error.message);
        }
        if (r < 0)
                r = sd_bus_message_new_method_errno(j->msg, &reply, r, NULL);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                log_debug_errno(r, "Could not answer a policy call: %m");
        job_unlink(j);
        job_free(j);
        jobs_schedule(m);
        return 0;
}

static int job_launch(PolicyJob *j) {
        j->pending = false;
        j->deadline = now_usec(CLOCK_MONOTONIC) + POLICY_DBUS_DEADLINE_USEC;
        j->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (j->event_fd < 0)
                return -errno;
        int r = sd_event_add_io(j->manager->event, &j->event_source, j->event_fd, EPOLLIN, on_job_done, j);
        if (r < 0)
                return r;
        r = pthread_create(&j->thread, NULL, job_worker, j);
        if (r != 0)
                return -r;
        j->running = true;
        return 0;
}

static int on_users_lane_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        jobs_schedule(userdata);
        return 0;
}

/* No uid with a pending call may go on yet: wake up when the first one may. */
static void users_lane_wait(Manager *m, uint64_t until) {
        int r;
        if (users_lane.timer)
                r = sd_event_source_set_time(users_lane.timer, until);
        else
                r = sd_event_add_time(m->event, &users_lane.timer, CLOCK_MONOTONIC, until, 0, on_users_lane_timer, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(users_lane.timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Could not wait for a uid's share of the analyses: %m");
}

/* Root's lane: the job that has waited longest (the list is newest first). Everyone else's: the
 * pending job of the uid with the most of its share left, the oldest on ties, among the uids with
 * some left; NULL (and the timer set) when none has. */
static PolicyJob *lane_next(Manager *m, bool privileged) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), ready_at = UINT64_MAX;
        PolicyJob *next = NULL;
        int64_t best = 0;
        for (PolicyJob *j = m->policy_jobs; j; j = j->next) {
                if (j->privileged != privileged || !j->pending)
                        continue;
                if (privileged) {
                        next = j;
                        continue;
                }
                int64_t balance = uid_share_balance(users_share(), j->uid, now);
                if (balance <= 0)
                        ready_at = MIN(ready_at, uid_share_ready_at(users_share(), j->uid, now));
                else if (!next || balance >= best) {
                        next = j;
                        best = balance;
                }
        }
        if (!next && ready_at != UINT64_MAX)
                users_lane_wait(m, ready_at);
        return next;
}

static bool lane_busy(Manager *m, bool privileged) {
        for (PolicyJob *j = m->policy_jobs; j; j = j->next)
                if (j->privileged == privileged && j->running)
                        return true;
        return false;
}

/* In each lane where no worker runs, start the next job. */
static void jobs_schedule(Manager *m) {
        for (int lane = 0; lane < 2; lane++) {
                if (lane_busy(m, lane))
                        continue;
                PolicyJob *next = lane_next(m, lane);
                if (!next)
                        continue;
                int r = job_launch(next);
                if (r < 0) {
                        log_warning_errno(r, "Could not start a policy analysis: %m");
                        (void) sd_bus_reply_method_errno(next->msg, r, NULL);
                        job_unlink(next);
                        job_free(next);
                        lane--; /* the next one of this lane, then */
                }
        }
}

/* Queue j (taken) for its lane, or refuse it when the lane is full. */
static int job_submit(PolicyJob *j, sd_bus_error *error) {
        Manager *m = j->manager;
        if (lane_count(m, j->privileged) >= (j->privileged ? POLICY_JOBS_MAX_ROOT : POLICY_JOBS_MAX_USERS) ||
            (!j->privileged && uid_count(m, j->uid) >= POLICY_JOBS_MAX_PER_UID)) {
                job_free(j);
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Too many policy analyses are waiting; try again later.");
        }
        j->pending = true;
        j->next = m->policy_jobs;
        m->policy_jobs = j;
        jobs_schedule(m);
        return 1; /* answered when done */
}

static PolicyJob *job_new(Manager *m, sd_bus_message *msg, const Caller *c, PolicyJobKind kind) {
        PolicyJob *j = calloc(1, sizeof(PolicyJob));
        if (!j)
                return NULL;
        *j = (PolicyJob) { .manager = m, .source = m->source, .msg = sd_bus_message_ref(msg), .privileged = c->privileged,
                           .uid = c->uid, .kind = kind, .event_fd = -EBADF };
        atomic_init(&j->cancelled, false);
        return j;
}

void manager_policy_jobs_cancel(Manager *m) {
        users_lane.timer = sd_event_source_disable_unref(users_lane.timer);
        for (PolicyJob *j = m->policy_jobs; j; j = j->next)
                atomic_store(&j->cancelled, true);
        while (m->policy_jobs) {
                PolicyJob *j = m->policy_jobs;
                if (j->running)
                        (void) pthread_join(j->thread, NULL);
                m->policy_jobs = j->next;
                job_free(j);
        }
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

/* The task's chain, newest first, its programs copied (strict mode as its program). */
static int job_chain(PolicyJob *j, const Task *t) {
        size_t n = t && t->mode == TASK_MODE_FILTER && t->filter ? t->filter->depth : 1;
        j->chain = calloc(n, sizeof(ChainProgram));
        j->filter_ids = calloc(n, sizeof(uint64_t));
        if (!j->chain || !j->filter_ids)
                return -ENOMEM;
        j->mode = t ? t->mode : TASK_MODE_DISABLED;
        if (j->mode == TASK_MODE_STRICT) {
                struct sock_filter *strict = arena_alloc(&j->arena, POLICY_STRICT_PROGRAM_MAX * sizeof(struct sock_filter));
                if (!strict)
                        return -ENOMEM;
                j->chain[j->n_chain++] = (ChainProgram) { .insns = strict, .len = policy_strict_program(strict) };
        } else if (j->mode == TASK_MODE_FILTER)
                for (const Filter *x = t->filter; x && j->n_chain < n; x = x->parent) {
                        int r = chain_add(j, x);
                        if (r < 0)
                                return r;
                }
        return 0;
}

int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        CALLER_CLEANUP Caller c = {};
        const Forest *f;
        const Task *t = NULL;
        uint64_t cpu = thread_cpu_usec();
        uint32_t tid;
        int r = sd_bus_message_read(msg, "u", &tid);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        if (tid == 0 || tid > INT32_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid tid %" PRIu32 ".", tid);
        if ((r = live_or_fail(m, &f, error)) < 0 || (r = find_task(&c, f, tid, &t, error)) < 0)
                return r;
        if (t && t->mode == TASK_MODE_FILTER && !t->filter)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The chain of task %" PRIu32 " is not known.", tid);
        PolicyJob *j = job_new(m, msg, &c, JOB_GET_POLICY);
        if (!j)
                return -ENOMEM;
        snprintf(j->what, sizeof(j->what), "the chain of task %" PRIu32, tid);
        r = job_chain(j, t);
        if (r < 0) {
                job_free(j);
                if (r == -ENODATA)
                        return sd_bus_error_setf(error, ERROR_SCAN_FAILED,
                                                 "The chain of task %" PRIu32 " is not known.", tid);
                return r;
        }
        j->loop_cpu_usec = thread_cpu_usec() - cpu;
        return job_submit(j, error);
}

static int reply_get_policy(PolicyJob *j, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_message_new_method_return(j->msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", task_mode_to_string(j->mode));
        if (r >= 0)
                r = sd_bus_message_append_array(reply, 't', j->filter_ids, j->n_filter_ids * sizeof(uint64_t));
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', POLICY_ARCH_TYPE);
        for (size_t i = 0; r >= 0 && i < j->report->n_arches; i++)
                r = append_arch(reply, &j->report->arches[i]);
        if (r >= 0)
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

static bool plan_visible(const Process *p, void *userdata) {
        return caller_may_see(userdata, p);
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

/* The filtered ones (on the loop: the live forest). */
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

/* The chains not decided, with their tasks. */
static int append_undecided(sd_bus_message *reply, const WhoCan *w) {
        int r = sd_bus_message_open_container(reply, 'a', WHO_CAN_UNDECIDED_TYPE);
        for (size_t i = 0; r >= 0 && i < w->n_undecided; i++) {
                const WhoCanChain *ch = &w->undecided[i];
                r = sd_bus_message_open_container(reply, 'r', "tua(uus)");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "tu", ch->head, (uint32_t) ch->depth);
                if (r >= 0)
                        r = append_tasks(reply, ch->tasks, ch->n_tasks);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
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
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_undecided(reply, w);
        return r < 0 ? r : append_undecided_why(reply, w);
}

int method_who_can(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_free_ char *why = NULL;
        uint64_t cpu = thread_cpu_usec();
        WhoCanOptions o = {};
        WhoCanQuery q;
        const char *syscall;
        const void *args;
        size_t size;
        const Forest *f;
        int r = sd_bus_message_read(msg, "s", &syscall);
        if (r >= 0)
                r = sd_bus_message_read_array(msg, 't', &args, &size);
        if (r < 0 || (r = bus_read_options(msg, read_who_can_option, &o, error)) < 0)
                return r;
        r = who_can_query_parse(o.arch, syscall, args, size / sizeof(uint64_t), o.action, &q, &why);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s.", why);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0 || (r = live_or_fail(m, &f, error)) < 0)
                return r;

        PolicyJob *j = job_new(m, msg, &c, JOB_WHO_CAN);
        if (!j)
                return -ENOMEM;
        snprintf(j->what, sizeof(j->what), "the chains");
        j->query = q;
        r = who_can_plan_new(f, c.privileged ? NULL : plan_visible, &c, &j->plan);
        j->filtered = count_filtered(&c, f);
        j->caller = c; /* the worker's now */
        c = (Caller) {};
        if (r < 0) {
                job_free(j);
                if (r == -ENOMEM)
                        return r;
                log_warning_errno(r, "Could not plan a who-can question: %m");
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The live state could not be read: %s",
                                         strerror(-r));
        }
        j->loop_cpu_usec = thread_cpu_usec() - cpu;
        return job_submit(j, error);
}

static int reply_who_can(PolicyJob *j, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        WhoCan *w = j->who;
        /* the live forest holds the filtered threads (and perhaps a few others of their processes) */
        size_t unfiltered = j->all > j->filtered ? j->all - j->filtered : 0;
        w->n_tasks += unfiltered > w->n_unfiltered ? unfiltered - w->n_unfiltered : 0;
        w->n_unfiltered = MAX(unfiltered, w->n_unfiltered);
        int r = sd_bus_message_new_method_return(j->msg, &reply);
        if (r >= 0)
                r = append_who_can(reply, &j->query, w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}
