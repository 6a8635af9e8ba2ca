/* policy-who.c: which tasks of a forest may make a system call, each distinct chain decided once */
#include "policy/policy-who.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/disasm.h"
#include "core/util.h"

bool who_can_query_matches(const WhoCanQuery *q, uint32_t v) {
        uint32_t action = v & SECCOMP_RET_ACTION_FULL;
        if (q->allowed)
                return action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG;
        return q->any_data ? action == (q->action & SECCOMP_RET_ACTION_FULL) : v == q->action;
}

/* ---- the plan: tasks grouped by head filter, everything copied out of the forest ---- */

typedef struct Group {
        uint64_t head; /* 0: strict mode */
        size_t depth;
        ChainProgram *programs; /* newest first; into the plan's arena */
        const uint8_t **digests;
        WhoCanTask *tasks;
        size_t n_tasks, allocated;
        size_t same_as; /* SIZE_MAX, or an earlier group with a byte-identical chain */
} Group;

struct WhoCanPlan {
        Arena arena; /* programs, digests, comms */
        Group *groups;
        size_t n, allocated;
        Hashmap by_head;     /* head filter id -> group index + 1 */
        Hashmap programs;    /* filter id -> its copied instructions (each filter once) */
        ProgWants wants;     /* the programs of filters the forest kept without them */
        WhoCanTask *unfiltered;
        size_t n_unfiltered, allocated_unfiltered;
        size_t n_tasks, n_distinct;
};

WhoCanPlan *who_can_plan_free(WhoCanPlan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++)
                free(p->groups[i].tasks);
        free(p->groups);
        free(p->unfiltered);
        hashmap_deinit(&p->by_head);
        hashmap_deinit(&p->programs);
        prog_wants_done(&p->wants);
        arena_done(&p->arena);
        free(p);
        return NULL;
}

size_t who_can_plan_tasks(const WhoCanPlan *p) {
        return p->n_tasks;
}

size_t who_can_plan_chains(const WhoCanPlan *p) {
        return p->n_distinct;
}

ProgWants *who_can_plan_wants(WhoCanPlan *p, Arena **ret_arena) {
        *ret_arena = &p->arena;
        return &p->wants;
}

/* x's program into *ret; one the forest did not keep (over its uid's budget) is wanted there. */
static int program_copy(WhoCanPlan *p, const Filter *x, const struct sock_filter **ret) {
        if (!x->insns && x->len > 0) {
                *ret = NULL;
                return prog_wants_add(&p->wants, x->digest, x->len, ret);
        }
        const struct sock_filter *c = hashmap_get(&p->programs, x->id);
        if (!c) {
                c = arena_memdup(&p->arena, x->insns, x->len * sizeof(struct sock_filter));
                if (!c)
                        return -ENOMEM;
                int r = hashmap_put(&p->programs, x->id, (void *) c);
                if (r < 0)
                        return r;
        }
        *ret = c;
        return 0;
}

static bool groups_same_bytes(const Group *a, const Group *b) {
        if (a->depth != b->depth)
                return false;
        for (size_t i = 0; i < a->depth; i++)
                if ((a->programs[i].insns != b->programs[i].insns || !a->programs[i].insns) &&
                    memcmp(a->digests[i], b->digests[i], PROG_DIGEST_SIZE) != 0)
                        return false;
        return true;
}

/* A new group for head (NULL: strict mode): its chain copied, and which earlier one it equals. */
static int group_new(WhoCanPlan *p, const Filter *head, Group **ret) {
        Group g = { .head = head ? head->id : 0, .depth = head ? head->depth : 0, .same_as = SIZE_MAX };
        if (head) {
                g.programs = arena_alloc(&p->arena, (g.depth + 1) * sizeof(ChainProgram));
                g.digests = arena_alloc(&p->arena, (g.depth + 1) * sizeof(uint8_t *));
                if (!g.programs || !g.digests)
                        return -ENOMEM;
                size_t k = 0;
                for (const Filter *x = head; x && k < g.depth; x = x->parent, k++) {
                        g.programs[k].len = x->len;
                        int r = program_copy(p, x, &g.programs[k].insns);
                        if (r < 0)
                                return r;
                        g.digests[k] = x->digest; /* read here only, while the forest is */
                }
                g.depth = k;
                for (size_t i = 0; i < p->n && g.same_as == SIZE_MAX; i++)
                        if (p->groups[i].head && p->groups[i].same_as == SIZE_MAX && groups_same_bytes(&p->groups[i], &g))
                                g.same_as = i;
                if (g.same_as == SIZE_MAX)
                        p->n_distinct++;
        }
        if (GROW(p->groups, p->allocated, p->n + 1) < 0)
                return -ENOMEM;
        p->groups[p->n++] = g;
        int r = hashmap_put(&p->by_head, g.head, (void *) (uintptr_t) p->n);
        if (r < 0)
                return r;
        *ret = &p->groups[p->n - 1];
        return 0;
}

static int group_of(WhoCanPlan *p, const Filter *head, Group **ret) {
        uintptr_t i = (uintptr_t) hashmap_get(&p->by_head, head ? head->id : 0);
        if (i == 0)
                return group_new(p, head, ret);
        *ret = &p->groups[i - 1];
        return 0;
}

static int task_add(WhoCanTask **list, size_t *n, size_t *allocated, const char *comm, const Process *p,
                    const Task *t) {
        if (GROW(*list, *allocated, *n + 1) < 0)
                return -ENOMEM;
        (*list)[(*n)++] = (WhoCanTask) { .tid = t->tid, .pid = p->pid, .comm = comm };
        return 0;
}

static int plan_process(WhoCanPlan *plan, const Process *p) {
        const char *comm = arena_strdup(&plan->arena, p->comm);
        if (!comm)
                return -ENOMEM;
        for (size_t j = 0; j < p->n_threads; j++) {
                const Task *t = &p->threads[j];
                Group *x;
                int r;
                plan->n_tasks++;
                if (t->mode == TASK_MODE_FILTER && !t->filter)
                        return -EINVAL; /* not linked */
                if (t->mode == TASK_MODE_DISABLED) {
                        r = task_add(&plan->unfiltered, &plan->n_unfiltered, &plan->allocated_unfiltered, comm, p, t);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = group_of(plan, t->mode == TASK_MODE_FILTER ? t->filter : NULL, &x);
                if (r >= 0)
                        r = task_add(&x->tasks, &x->n_tasks, &x->allocated, comm, p, t);
                if (r < 0)
                        return r;
        }
        return 0;
}

int who_can_plan_new(const Forest *f, bool (*visible)(const Process *p, void *userdata), void *userdata,
                     WhoCanPlan **ret) {
        _cleanup_(who_can_plan_freep) WhoCanPlan *plan = calloc(1, sizeof(WhoCanPlan));
        if (!plan)
                return -ENOMEM;
        if (!f->linked)
                return -EINVAL;
        for (size_t i = 0; i < f->n_processes; i++) {
                if (visible && !visible(f->processes[i], userdata))
                        continue;
                int r = plan_process(plan, f->processes[i]);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(plan);
        return 0;
}

/* ---- deciding each distinct chain once ---- */

/* Whether every program of x's chain is at hand. */
static bool group_complete(const Group *x) {
        for (size_t k = 0; k < x->depth; k++)
                if (!x->programs[k].insns && x->programs[k].len > 0)
                        return false;
        return true;
}

static const char *const who_can_undecided_table[_WHO_CAN_UNDECIDED_MAX] = {
        [WHO_CAN_DECIDED] = "decided",
        [WHO_CAN_PROGRAM_MISSING] = "program not available",
        [WHO_CAN_OVER_BUDGET] = "over the analysis budget",
        [WHO_CAN_OUT_OF_TIME] = "out of time",
};
DEFINE_STRING_TABLE_LOOKUP(who_can_undecided, WhoCanUndecided, _WHO_CAN_UNDECIDED_MAX);

/* A chain over the analysis's budget (-E2BIG: too many paths or steps), or stopped (-ECANCELED)
 * where stop leaves chains undecided, is not decided, like one whose program is not at hand:
 * whoever installed it, it fails no one's question, only its own tasks are not decided (and once
 * stop says to stop, every chain left is, quickly): *ret_why says which. */
static int decide_group(WhoCan *w, const Group *x, const PolicyQuery *pq, const PolicyStop *stop,
                        PolicyDecision **ret, WhoCanUndecided *ret_why) {
        int r = policy_decide_stoppable(&w->arena, x->programs, x->depth, pq, stop, ret);
        *ret_why = WHO_CAN_DECIDED;
        if (r == -E2BIG || (r == -ECANCELED && stop && stop->leave_undecided)) {
                *ret = NULL;
                *ret_why = r == -E2BIG ? WHO_CAN_OVER_BUDGET : WHO_CAN_OUT_OF_TIME;
                return 0;
        }
        return r;
}

/* Was a chain of these bytes already found to be undecidable, whatever programs it had? */
static bool undecidable(WhoCanUndecided why) {
        return why == WHO_CAN_OVER_BUDGET || why == WHO_CAN_OUT_OF_TIME;
}

/* decisions[i]: group i's, or NULL with why[i] saying why not (and so for every group of the
 * same bytes: same_as is always an earlier group). */
static int decide_groups(WhoCan *w, const WhoCanPlan *plan, const PolicyQuery *pq, const PolicyStop *stop,
                         const PolicyDecision **decisions, WhoCanUndecided *why) {
        for (size_t i = 0; i < plan->n; i++) {
                const Group *x = &plan->groups[i];
                if (!x->head)
                        continue;
                if (x->same_as != SIZE_MAX && (decisions[x->same_as] || undecidable(why[x->same_as]))) {
                        decisions[i] = decisions[x->same_as];
                        why[i] = why[x->same_as];
                        continue;
                }
                if (!group_complete(x)) {
                        why[i] = WHO_CAN_PROGRAM_MISSING; /* its decision stays NULL */
                        continue;
                }
                PolicyDecision *d;
                int r = decide_group(w, x, pq, stop, &d, &why[i]);
                if (r < 0)
                        return r;
                if (!d) {
                        if (x->same_as != SIZE_MAX)
                                why[x->same_as] = why[i];
                        continue;
                }
                decisions[i] = d;
                /* the bytes are the same: so is the decision of the group that lacked them */
                if (x->same_as != SIZE_MAX)
                        decisions[x->same_as] = d;
                w->n_decisions++;
        }
        return 0;
}

/* ---- what each chain answers ---- */

static bool case_matches(const WhoCanQuery *q, const PolicyCase *c) {
        uint32_t v;
        if (policy_case_constant(c, &v))
                return who_can_query_matches(q, v);
        /* computed from the arguments: its action, where its bits are fixed */
        if (c->ret.n_candidates > 0)
                return true;
        uint32_t mask, value;
        sym_known_bits(c->ret.value, &mask, &value);
        return (mask & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_ACTION_FULL ||
               who_can_query_matches(&(WhoCanQuery) { .allowed = q->allowed, .action = q->action, .any_data = true },
                                     value & SECCOMP_RET_ACTION_FULL);
}

static int other_add(WhoCan *w, uint32_t ret, bool conditional, size_t n_tasks) {
        for (size_t i = 0; i < w->n_others; i++)
                if (w->others[i].conditional == conditional && (conditional || w->others[i].ret == ret)) {
                        w->others[i].n_tasks += n_tasks;
                        w->others[i].n_chains++;
                        return 0;
                }
        WhoCanOther *o = arena_alloc(&w->arena, (w->n_others + 1) * sizeof(WhoCanOther));
        if (!o)
                return -ENOMEM;
        memcpy_safe(o, w->others, w->n_others * sizeof(WhoCanOther));
        o[w->n_others++] = (WhoCanOther) { .ret = conditional ? 0 : ret, .conditional = conditional, .n_tasks = n_tasks,
                                           .n_chains = 1 };
        w->others = o;
        return 0;
}

static int cmp_tasks(const void *a, const void *b) {
        const WhoCanTask *x = a, *y = b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_chains(const void *a, const void *b) {
        const WhoCanChain *x = a, *y = b;
        return x->head < y->head ? -1 : x->head > y->head;
}

static WhoCanTask *tasks_copy(Arena *arena, const WhoCanTask *tasks, size_t n) {
        WhoCanTask *c = arena_memdup(arena, tasks, n * sizeof(WhoCanTask));
        if (c)
                qsort_safe(c, n, sizeof(WhoCanTask), cmp_tasks);
        return c;
}

/* A group whose chain could not be decided (why): named, never left out. */
static int group_undecided(WhoCan *w, const Group *x, WhoCanUndecided why) {
        WhoCanChain c = { .head = x->head, .depth = x->depth, .n_tasks = x->n_tasks, .why = why };
        c.tasks = tasks_copy(&w->arena, x->tasks, x->n_tasks);
        if (!c.tasks)
                return -ENOMEM;
        w->undecided[w->n_undecided++] = c;
        return 0;
}

/* One group: a chain that can (with the cases that give it), an "other", or not decided. */
static int group_answer(WhoCan *w, const WhoCanQuery *q, const PolicyArch *a, const Group *x,
                        const PolicyDecision *decision, WhoCanUndecided why) {
        WhoCanChain c = { .head = x->head, .depth = x->depth, .decision = decision };
        uint32_t strict = 0, v;

        if (x->head && !decision)
                return group_undecided(w, x, why);
        if (!x->head) {
                strict = policy_arch_strict_verdict(a, q->nr);
                if (!who_can_query_matches(q, strict))
                        return other_add(w, strict, false, x->n_tasks);
                c.always = true;
        } else {
                c.cases = arena_alloc(&w->arena, (decision->n_cases + 1) * sizeof(PolicyCase *));
                if (!c.cases)
                        return -ENOMEM;
                for (size_t i = 0; i < decision->n_cases; i++)
                        if (case_matches(q, &decision->cases[i]))
                                c.cases[c.n_cases++] = &decision->cases[i];
                if (c.n_cases == 0) {
                        bool unconditional = policy_decision_unconditional(decision, &v);
                        return other_add(w, unconditional ? v : 0, !unconditional, x->n_tasks);
                }
                c.always = c.n_cases == decision->n_cases;
        }
        c.tasks = tasks_copy(&w->arena, x->tasks, x->n_tasks);
        if (!c.tasks)
                return -ENOMEM;
        c.n_tasks = x->n_tasks;
        w->chains[w->n_chains++] = c;
        return 0;
}

int who_can_plan_decide(WhoCanPlan *plan, const WhoCanQuery *q, const PolicyStop *stop, WhoCan **ret) {
        _cleanup_(who_can_plan_freep) WhoCanPlan *p = plan;
        const PolicyArch *a = q->arch ? q->arch : policy_arch_native();
        _cleanup_(who_can_freep) WhoCan *w = calloc(1, sizeof(WhoCan));
        if (!w)
                return -ENOMEM;
        w->plan = TAKE_PTR(p);
        if (!a || q->n_args > ELEMENTSOF(q->args))
                return -EINVAL;
        PolicyQuery pq = { .arch = a->arch, .nr = q->nr, .n_args = q->n_args };
        memcpy(pq.args, q->args, sizeof(pq.args));

        const PolicyDecision **decisions = arena_alloc(&w->arena, (plan->n + 1) * sizeof(PolicyDecision *));
        w->chains = arena_alloc(&w->arena, (plan->n + 1) * sizeof(WhoCanChain));
        w->undecided = arena_alloc(&w->arena, (plan->n + 1) * sizeof(WhoCanChain));
        WhoCanUndecided *why = arena_alloc(&w->arena, (plan->n + 1) * sizeof(WhoCanUndecided));
        if (!decisions || !w->chains || !w->undecided || !why)
                return -ENOMEM;
        int r = decide_groups(w, plan, &pq, stop, decisions, why);
        if (r < 0)
                return r;
        for (size_t i = 0; i < plan->n; i++)
                if ((r = group_answer(w, q, a, &plan->groups[i], decisions[i], why[i])) < 0)
                        return r;
        qsort_safe(w->chains, w->n_chains, sizeof(WhoCanChain), cmp_chains);
        qsort_safe(w->undecided, w->n_undecided, sizeof(WhoCanChain), cmp_chains);
        w->unfiltered = tasks_copy(&w->arena, plan->unfiltered, plan->n_unfiltered);
        if (!w->unfiltered && plan->n_unfiltered)
                return -ENOMEM;
        w->n_unfiltered = plan->n_unfiltered;
        w->n_tasks = plan->n_tasks;
        *ret = TAKE_PTR(w);
        return 0;
}

int policy_who_can(const Forest *f, const WhoCanQuery *q, WhoCan **ret) {
        WhoCanPlan *plan;
        int r = who_can_plan_new(f, NULL, NULL, &plan);
        return r < 0 ? r : who_can_plan_decide(plan, q, NULL, ret);
}

WhoCan *who_can_free(WhoCan *w) {
        if (!w)
                return NULL;
        arena_done(&w->arena);
        who_can_plan_free(w->plan);
        free(w);
        return NULL;
}

/* ---- questions as people and callers spell them ---- */

/* A name, or a number the architecture's calls are numbered in (as policy decides them: any of
 * its range, in decimal or 0x hex; on x32 the x32 bit is added to a number given without it). */
static int who_can_parse_nr(const PolicyArch *a, const char *syscall, int32_t *ret, char **ret_error) {
        const PolicySyscallName *names;
        size_t n;
        uint64_t v;
        char *end;

        if (isdigit((unsigned char) syscall[0])) {
                errno = 0;
                v = strtoull(syscall, &end, 0);
                if (errno != 0 || *end || v > UINT32_MAX)
                        return error_message(ret_error, "Invalid system call number '%s'", syscall);
                if (a->arch == SCMP_ARCH_X32 && v < a->nr_lo)
                        v |= a->nr_lo;
                if (v < a->nr_lo || v > a->nr_hi)
                        return error_message(ret_error, "System call number %" PRIu64 " is not one of %s's (%" PRIu32
                                             "..%" PRIu32 ")", v, a->name, a->nr_lo, a->nr_hi);
                *ret = (int32_t) (uint32_t) v;
                return 0;
        }
        *ret = seccomp_syscall_resolve_name_arch(a->arch, syscall);
        if (*ret >= 0)
                return 0;
        int r = policy_arch_syscalls(a, &names, &n); /* names libseccomp may lack (uprobe) */
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (streq(names[i].name, syscall)) {
                        *ret = names[i].nr;
                        return 0;
                }
        return error_message(ret_error, "Unknown system call '%s' on %s", syscall, a->name);
}

int who_can_query_parse(const char *arch, const char *syscall, const uint64_t *args, size_t n_args,
                        const char *action, WhoCanQuery *ret, char **ret_error) {
        const PolicyArch *a = arch ? policy_arch_from_name(arch) : policy_arch_native();
        WhoCanQuery q = { .arch = a, .allowed = true, .n_args = n_args };

        *ret_error = NULL;
        if (!a)
                return error_message(ret_error, "Unknown architecture '%s' (x86_64, x86, x32, aarch64, arm, ...)", arch);
        if (n_args > ELEMENTSOF(q.args))
                return error_message(ret_error, "%zu arguments given: a system call has at most %zu", n_args,
                                   ELEMENTSOF(q.args));
        int r = who_can_parse_nr(a, syscall, &q.nr, ret_error);
        if (r < 0)
                return r;
        if (action) {
                if (action_from_string(action, &q.action) < 0)
                        return error_message(ret_error, "Unknown action '%s' (ALLOW, LOG, ERRNO, ERRNO(1), USER_NOTIF, "
                                           "TRACE, TRAP, KILL_THREAD, KILL_PROCESS)", action);
                q.allowed = false;
                q.any_data = !strchr(action, '(');
        }
        memcpy_safe(q.args, args, n_args * sizeof(uint64_t));
        *ret = q;
        return 0;
}
