/* plan-syscalls.c: every system call the executor makes in a restored task, checked against the
 * chain that task runs under at that point (the kernel's precedence, lib/core/eval.c), so that a plan
 * a filter would stop is refused with the filter named, or another system call is chosen */
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "core/disasm.h"
#include "core/eval.h"
#include "plan/plan-eval.h"
#include "plan/plan-syscalls.h"

#define FUTEX_WAIT_ 0

/* A pointer argument: filters see an address, not what it points to. */
#define PTR UINT64_C(0x7f0000001000)
#define CLONE_ARGS_SIZE 88 /* sizeof(struct clone_args), CLONE_ARGS_SIZE_VER2 */

typedef struct Call {
        const char *name;
        int nr;
        uint64_t args[6];
} Call;

#define CALL(n, ...) ((Call) { .name = #n, .nr = SYS_##n, .args = { __VA_ARGS__ } })

typedef struct Calls {
        Call v[4];
        size_t n;
} Calls;

static void add(Calls *c, Call x) {
        c->v[c->n++] = x;
}

static int runtime_fd(const Planner *p, int which) {
        return p->plan->runtime_fd + which;
}

/* The model's pid of the process made by plan process pp (for wait4). */
static uint64_t model_pid(const Planner *p, size_t pp) {
        return pp < p->km.n_processes ? (uint64_t) p->km.processes[pp].pid : 0;
}

/* The fd a received or installed listener lands on before it is moved: the lowest free one. */
static int lowest_free(const Planner *p, size_t kp) {
        int fd = KMODEL_FIRST_FD;

        while (kmodel_fd_listener(&p->km, kp, fd) != KMODEL_NONE)
                fd++;
        return fd;
}

/* What executor/runtime.c's move_fd() calls. */
static void add_move_fd(Calls *c, int from, int to) {
        if (to < 0)
                add(c, CALL(close, (uint64_t) from));
        else if (from == to)
                add(c, CALL(fcntl, (uint64_t) to, F_SETFD, 0));
        else {
                add(c, CALL(dup3, (uint64_t) from, (uint64_t) to, 0));
                add(c, CALL(close, (uint64_t) from));
        }
}

/* What executor/runtime.c's sleeps call: a 1 ms (waiting) or 100 ms (parked) sleep. */
static void add_sleep(Calls *c, PlanSyscall v) {
        if (v == PLAN_SYSCALL_NANOSLEEP)
                add(c, CALL(nanosleep, PTR, 0));
        else if (v == PLAN_SYSCALL_CLOCK_NANOSLEEP)
                add(c, CALL(clock_nanosleep, CLOCK_MONOTONIC, 0, PTR, 0));
}

/* The system calls step s makes with variant v; false if v does not apply to it. */
static bool calls_of(const Planner *p, const PlanStep *s, PlanSyscall v, Calls *c) {
        size_t kp = p->km.tasks[s->task].process;
        bool helper_process = p->plan->processes[p->plan->tasks[s->task].process].kind == PLAN_PROCESS_HELPER;
        int k;

        *c = (Calls) {};
        switch (s->op) {
        case PLAN_OP_SET_COMM:
                add(c, CALL(prctl, PR_SET_NAME, PTR, 0, 0, 0));
                return v == PLAN_SYSCALL_DEFAULT;
        case PLAN_OP_CLOSE_FD:
                add(c, CALL(close, (uint64_t) s->fd));
                return v == PLAN_SYSCALL_DEFAULT;
        case PLAN_OP_SET_NO_NEW_PRIVS:
                add(c, CALL(prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
                return v == PLAN_SYSCALL_DEFAULT;
        case PLAN_OP_SET_SUBREAPER:
                add(c, CALL(prctl, PR_SET_CHILD_SUBREAPER, (uint64_t) s->arg, 0, 0, 0));
                return v == PLAN_SYSCALL_DEFAULT;
        case PLAN_OP_FILL:
        case PLAN_OP_INSTALL:
                if (v == PLAN_SYSCALL_SECCOMP)
                        add(c, CALL(seccomp, SECCOMP_SET_MODE_FILTER, s->flags, PTR));
                else if (v == PLAN_SYSCALL_PRCTL && s->flags == 0)
                        add(c, CALL(prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PTR, 0, 0));
                return c->n > 0;
        case PLAN_OP_KEEP_LISTENER:
                k = s->task < p->sim.n_last_install_fd_allocated ? p->sim.last_install_fd[s->task] : KMODEL_FIRST_FD;
                add_move_fd(c, k, s->fd);
                return v == PLAN_SYSCALL_DEFAULT;
        case PLAN_OP_SPAWN_THREAD:
                if (p->o->pid_namespace) /* only clone3(2) takes set_tid */
                        v = v == PLAN_SYSCALL_CLONE3 ? v : PLAN_SYSCALL_DEFAULT;
                if (v == PLAN_SYSCALL_CLONE)
                        add(c, CALL(clone, PLAN_CLONE_THREAD_FLAGS, PTR, PTR, PTR, PTR));
                else if (v == PLAN_SYSCALL_CLONE3)
                        add(c, CALL(clone3, PTR, CLONE_ARGS_SIZE));
                return c->n > 0;
        case PLAN_OP_SPAWN_PROCESS:
                if (p->o->pid_namespace)
                        v = v == PLAN_SYSCALL_CLONE3 ? v : PLAN_SYSCALL_DEFAULT;
                if (v == PLAN_SYSCALL_CLONE)
                        add(c, CALL(clone, PLAN_CLONE_PROCESS_FLAGS | (s->arg ? PLAN_CLONE_PARENT : 0), 0, 0, PTR, 0));
                else if (v == PLAN_SYSCALL_CLONE3)
                        add(c, CALL(clone3, PTR, CLONE_ARGS_SIZE));
                else if (v == PLAN_SYSCALL_FORK && !s->arg)
                        add(c, CALL(fork));
                return c->n > 0;
        case PLAN_OP_EXIT:
                if (v == PLAN_SYSCALL_EXIT_GROUP && helper_process)
                        add(c, CALL(exit_group, 0));
                else if (v == PLAN_SYSCALL_EXIT)
                        add(c, CALL(exit, 0));
                return c->n > 0;
        case PLAN_OP_REAP:
                if (v == PLAN_SYSCALL_WAIT4)
                        add(c, CALL(wait4, model_pid(p, s->target), PTR, __WALL, 0));
                else if (v == PLAN_SYSCALL_WAITID)
                        add(c, CALL(waitid, P_PID, model_pid(p, s->target), PTR, WEXITED | __WALL, 0));
                return c->n > 0;
        case PLAN_OP_RECEIVE_LISTENER:
                add(c, CALL(recvmsg, (uint64_t) runtime_fd(p, PLAN_RUNTIME_FD_HANDOFF), PTR, 0));
                add_move_fd(c, lowest_free(p, kp), s->fd);
                return v == PLAN_SYSCALL_DEFAULT;
        case PLAN_OP_SET_CREDS: {
                const Process *sp = p->plan->processes[p->plan->tasks[s->task].process].snapshot;
                add(c, CALL(setgroups, 0, 0));
                add(c, CALL(setresgid, sp->gid, sp->gid, sp->gid));
                add(c, CALL(setresuid, sp->uid, sp->uid, sp->uid));
                add(c, CALL(prctl, PR_SET_DUMPABLE, 1, 0, 0, 0));
                return v == PLAN_SYSCALL_DEFAULT;
        }
        case PLAN_OP_STRICT: /* a strict task has no filter: nothing can stop it */
                return v == PLAN_SYSCALL_DEFAULT;
        case PLAN_OP_PARK:
                if (v == PLAN_SYSCALL_DEFAULT)
                        add(c, CALL(read, (uint64_t) runtime_fd(p, PLAN_RUNTIME_FD_CONTROL), PTR, 1));
                else
                        add_sleep(c, v);
                return c->n > 0;
        case PLAN_OP_EXEC:
                add(c, CALL(execve, PTR, PTR, PTR));
                return v == PLAN_SYSCALL_DEFAULT;
        default:
                return false;
        }
}

/* What a task does after a step: report (variant DEFAULT: write(2); NONE: nothing), wait for its
 * next step (DEFAULT: futex(2); NANOSLEEP, CLOCK_NANOSLEEP), end a park (DEFAULT: exit(2);
 * EXIT_GROUP). False if v does not apply. */
static bool calls_report(const Planner *p, PlanSyscall v, Calls *c) {
        *c = (Calls) {};
        if (v == PLAN_SYSCALL_DEFAULT)
                add(c, CALL(write, (uint64_t) runtime_fd(p, PLAN_RUNTIME_FD_REPORT), PTR, 8));
        return v == PLAN_SYSCALL_DEFAULT || v == PLAN_SYSCALL_NONE;
}

static bool calls_wait(PlanSyscall v, Calls *c) {
        *c = (Calls) {};
        if (v == PLAN_SYSCALL_DEFAULT)
                add(c, CALL(futex, PTR, FUTEX_WAIT_, 0, PTR, 0, 0));
        else
                add_sleep(c, v);
        return c->n > 0;
}

static bool calls_exit(PlanSyscall v, Calls *c) {
        *c = (Calls) {};
        if (v == PLAN_SYSCALL_DEFAULT)
                add(c, CALL(exit, 0));
        else if (v == PLAN_SYSCALL_EXIT_GROUP)
                add(c, CALL(exit_group, 0));
        return c->n > 0 || v == PLAN_SYSCALL_NONE;
}

/* ---- evaluation ---- */

typedef struct Verdict {
        uint32_t ret;
        uint64_t filter_id; /* the snapshot's id of the filter that decided, 0: none */
        bool depends_on_ip; /* the instruction pointer (unknown to the planner) decides */
} Verdict;

static bool verdict_allows(const Verdict *v) {
        uint32_t action = v->ret & SECCOMP_RET_ACTION_FULL;
        return action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG;
}

/* Run call c through the chain that starts at model filter head. */
static int evaluate_chain(const Planner *p, size_t head, const Call *c, Verdict *ret) {
        const KModel *km = &p->km;
        size_t n = head == KMODEL_NONE ? 0 : km->filters[head].depth, i = 0;
        _cleanup_free_ ChainProgram *chain = calloc(n ?: 1, sizeof(ChainProgram));
        _cleanup_free_ size_t *objects = calloc(n ?: 1, sizeof(size_t));
        struct seccomp_data d = { .nr = c->nr, .arch = seccomp_arch_native() };
        PlanEval r;

        if (!chain || !objects)
                return -ENOMEM;
        for (size_t f = head; f != KMODEL_NONE && i < n; f = km->filters[f].parent, i++) {
                chain[i] = (ChainProgram) { .insns = km->filters[f].insns, .len = km->filters[f].len };
                objects[i] = f;
        }
        memcpy(d.args, c->args, sizeof(d.args));
        plan_chain_evaluate(chain, n, &d, &r);
        *ret = (Verdict) { .ret = r.ret, .depends_on_ip = r.depends_on_ip };
        if (n > 0 && !verdict_allows(ret))
                ret->filter_id = p->s->filters[km->filters[objects[r.decided_by]].tag]->id;
        return 0;
}

/* Run call c through the snapshot's chain that ends at head (a chain not installed yet). */
static int evaluate_snapshot_chain(const Filter *head, const Call *c, Verdict *ret) {
        size_t n = head ? head->depth : 0, i = 0;
        _cleanup_free_ ChainProgram *chain = calloc(n ?: 1, sizeof(ChainProgram));
        _cleanup_free_ const Filter **objects = calloc(n ?: 1, sizeof(Filter *));
        struct seccomp_data d = { .nr = c->nr, .arch = seccomp_arch_native() };
        PlanEval r;

        if (!chain || !objects)
                return -ENOMEM;
        for (const Filter *f = head; f && i < n; f = f->parent, i++) {
                chain[i] = (ChainProgram) { .insns = f->insns, .len = f->len };
                objects[i] = f;
        }
        memcpy(d.args, c->args, sizeof(d.args));
        plan_chain_evaluate(chain, i, &d, &r);
        *ret = (Verdict) { .ret = r.ret, .depends_on_ip = r.depends_on_ip };
        if (i > 0 && !verdict_allows(ret))
                ret->filter_id = objects[r.decided_by]->id;
        return 0;
}

int plan_chain_stops_creds(Planner *p, const Filter *head, const Process *sp) {
        Calls c = {};
        Verdict v;

        (void) p;
        add(&c, CALL(setgroups, 0, 0));
        add(&c, CALL(setresgid, sp->gid, sp->gid, sp->gid));
        add(&c, CALL(setresuid, sp->uid, sp->uid, sp->uid));
        add(&c, CALL(prctl, PR_SET_DUMPABLE, 1, 0, 0, 0));
        for (size_t k = 0; k < c.n; k++) {
                int r = evaluate_snapshot_chain(head, &c.v[k], &v);
                if (r < 0)
                        return r;
                if (!verdict_allows(&v))
                        return 1;
        }
        return 0;
}

int plan_chain_stops_nnp(Planner *p, const Filter *head) {
        Call c = CALL(prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        Verdict v;
        int r = evaluate_snapshot_chain(head, &c, &v);

        (void) p;
        return r < 0 ? r : !verdict_allows(&v);
}

/* Many tasks run under one chain and make the same calls: verdicts are kept per (head, call). */
typedef struct CachedVerdict {
        size_t head;
        int nr;
        uint64_t args[6];
        Verdict verdict;
        struct CachedVerdict *next;
} CachedVerdict;

static uint64_t verdict_key(size_t head, const Call *c) {
        uint64_t h = 14695981039346656037ULL;
        uint64_t words[8] = { head, (uint64_t) c->nr, c->args[0], c->args[1], c->args[2], c->args[3], c->args[4], c->args[5] };

        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                h = (h ^ words[i]) * 1099511628211ULL;
        return h;
}

void plan_verdict_cache_free(Planner *p) {
        uint64_t key;
        void *value;

        for (size_t i = 0; hashmap_next(&p->verdicts, &i, &key, &value);)
                for (CachedVerdict *e = value, *next; e; e = next) {
                        next = e->next;
                        free(e);
                }
        hashmap_deinit(&p->verdicts);
}

/* Run call c through the chain task t runs under in the model. */
static int evaluate(Planner *p, size_t t, const Call *c, Verdict *ret) {
        size_t head = p->km.tasks[t].head;
        uint64_t key = verdict_key(head, c);
        CachedVerdict *first = hashmap_get(&p->verdicts, key), *e;
        int r;

        if (head == KMODEL_NONE) {
                *ret = (Verdict) { .ret = SECCOMP_RET_ALLOW };
                return 0;
        }
        for (e = first; e; e = e->next)
                if (e->head == head && e->nr == c->nr && memcmp(e->args, c->args, sizeof(e->args)) == 0) {
                        *ret = e->verdict;
                        return 0;
                }
        r = evaluate_chain(p, head, c, ret);
        if (r < 0)
                return r;
        e = malloc(sizeof(CachedVerdict));
        if (!e)
                return -ENOMEM;
        *e = (CachedVerdict) { .head = head, .nr = c->nr, .verdict = *ret, .next = first };
        memcpy(e->args, c->args, sizeof(e->args));
        r = hashmap_replace(&p->verdicts, key, e);
        if (r < 0)
                free(e);
        return r;
}

/* The first call of c the chain stops, or -1: 0 / 1 with *ret_call and *ret_verdict. */
static int first_stopped(Planner *p, size_t t, const Calls *c, size_t *ret_call, Verdict *ret_verdict) {
        for (size_t k = 0; k < c->n; k++) {
                int r = evaluate(p, t, &c->v[k], ret_verdict);
                if (r < 0)
                        return r;
                if (!verdict_allows(ret_verdict)) {
                        *ret_call = k;
                        return 1;
                }
        }
        return 0;
}

static const char *task_name(const Planner *p, size_t t, char *buf, size_t size) {
        const PlanTask *task = &p->plan->tasks[t];
        const PlanProcess *proc = &p->plan->processes[task->process];

        if (task->kind == PLAN_TASK_RESTORED)
                snprintf(buf, size, "thread %d of process %d", task->snapshot->tid, proc->snapshot->pid);
        else if (proc->kind == PLAN_PROCESS_RESTORED)
                snprintf(buf, size, "a helper thread of process %d", proc->snapshot->pid);
        else
                snprintf(buf, size, "a helper %s", proc->kind == PLAN_PROCESS_ROOT ? "thread of the restore root" : "process");
        return buf;
}

/* Append "NAME(2) gets ACTION from filter N" to a message being built. */
static int append_verdict(char **msg, const Call *c, const Verdict *v) {
        char action[ACTION_STRING_MAX];
        char *s;

        action_to_string(v->ret, action, sizeof(action));
        if (asprintf(&s, "%s%s%s(2) %s %s from filter %" PRIu64 "%s", *msg ?: "", *msg ? ", " : "", c->name,
                     v->depends_on_ip ? "may get" : "gets", action, v->filter_id,
                     v->depends_on_ip ? " (the instruction pointer decides, and a restore cannot know it)" : "") < 0)
                return -ENOMEM;
        free(*msg);
        *msg = s;
        return 0;
}

/* Pick the first variant of step s whose calls the chain lets through. With say, refuse naming
 * what stops each variant. */
static int choose(Planner *p, PlanStep *s, size_t i, bool say) {
        _cleanup_free_ char *why = NULL;
        Calls c;

        for (PlanSyscall v = 0; v < _PLAN_SYSCALL_MAX; v++) {
                size_t k;
                Verdict verdict;
                int r;

                if (!calls_of(p, s, v, &c))
                        continue;
                r = first_stopped(p, s->task, &c, &k, &verdict);
                if (r < 0)
                        return r;
                if (r == 0) {
                        s->syscall = v;
                        return 0;
                }
                if (say && append_verdict(&why, &c.v[k], &verdict) < 0)
                        return -ENOMEM;
        }
        if (!say)
                return -EINVAL;
        return plan_refuse(p, "step %zu: %s cannot %s: %s", i, task_name(p, s->task, (char[96]) {}, 96),
                           plan_op_to_string(s->op), why ?: "no system call for it");
}

int plan_check_step(Planner *p, size_t i) {
        return choose(p, &p->plan->steps[i], i, true);
}

static bool op_ends_task(PlanOp op) {
        return op == PLAN_OP_EXIT || op == PLAN_OP_STRICT || op == PLAN_OP_PARK || op == PLAN_OP_EXEC;
}

/* The first variant whose calls the chain of task t lets through, tried in order among vs; or
 * -EINVAL with *why saying what stops each (when why is not NULL). */
static int pick(Planner *p, size_t t, bool (*calls)(PlanSyscall v, Calls *c, const Planner *p), const PlanSyscall *vs,
                size_t n, PlanSyscall *ret, char **why) {
        for (size_t j = 0; j < n; j++) {
                Verdict verdict;
                size_t k;
                Calls c;
                int r;

                if (!calls(vs[j], &c, p))
                        continue;
                r = first_stopped(p, t, &c, &k, &verdict);
                if (r < 0)
                        return r;
                if (r == 0) {
                        *ret = vs[j];
                        return 0;
                }
                if (why && append_verdict(why, &c.v[k], &verdict) < 0)
                        return -ENOMEM;
        }
        return -EINVAL;
}

static bool report_calls(PlanSyscall v, Calls *c, const Planner *p) {
        return calls_report(p, v, c);
}

static bool wait_calls(PlanSyscall v, Calls *c, const Planner *p) {
        (void) p;
        return calls_wait(v, c);
}

static bool exit_calls(PlanSyscall v, Calls *c, const Planner *p) {
        (void) p;
        return calls_exit(v, c);
}

/* Choose how the task of step s reports it, waits for its next step and ends its park, under the
 * chain it runs after the step. A report needs no system call (the executor also watches the
 * shared memory), nor does the end of a park (the executor kills what is left at the release);
 * waiting does. -EINVAL (with *why when why is not NULL) when no way to wait is allowed. */
static int choose_after(Planner *p, PlanStep *s, char **why) {
        static const PlanSyscall reports[] = { PLAN_SYSCALL_DEFAULT, PLAN_SYSCALL_NONE };
        static const PlanSyscall waits[] = { PLAN_SYSCALL_DEFAULT, PLAN_SYSCALL_NANOSLEEP, PLAN_SYSCALL_CLOCK_NANOSLEEP };
        static const PlanSyscall exits[] = { PLAN_SYSCALL_DEFAULT, PLAN_SYSCALL_EXIT_GROUP, PLAN_SYSCALL_NONE };
        int r = pick(p, s->task, report_calls, reports, ELEMENTSOF(reports), &s->report, NULL);

        if (r >= 0 && s->op == PLAN_OP_PARK)
                r = pick(p, s->task, exit_calls, exits, ELEMENTSOF(exits), &s->exit, NULL);
        if (r >= 0 && !op_ends_task(s->op))
                r = pick(p, s->task, wait_calls, waits, ELEMENTSOF(waits), &s->wait, why);
        return r;
}

int plan_check_after_step(Planner *p, size_t i) {
        PlanStep *s = &p->plan->steps[i];
        _cleanup_free_ char *why = NULL;
        int r = choose_after(p, s, &why);

        if (r == -EINVAL)
                return plan_refuse(p, "step %zu: after it, %s cannot wait for its next step: %s", i,
                                   task_name(p, s->task, (char[96]) {}, 96), why ?: "no system call for it");
        if (r < 0)
                return r;
        if (s->op == PLAN_OP_SPAWN_THREAD || s->op == PLAN_OP_SPAWN_PROCESS)
                p->plan->tasks[s->target].wait_first = s->wait; /* it starts under this very chain */
        return 0;
}

bool plan_step_possible(Planner *p, PlanStep *s) {
        if (choose(p, s, 0, false) < 0)
                return false;
        return choose_after(p, s, NULL) >= 0;
}
