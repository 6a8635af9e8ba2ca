/* policy-who.c: which tasks of a forest may make a system call, each distinct chain decided once */
#include "policy-who.h"

#include <errno.h>

#include "util.h"

bool who_can_query_matches(const WhoCanQuery *q, uint32_t v) {
        uint32_t action = v & SECCOMP_RET_ACTION_FULL;
        if (q->allowed)
                return action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG;
        return q->any_data ? action == (q->action & SECCOMP_RET_ACTION_FULL) : v == q->action;
}

/* ---- grouping the tasks by chain ---- */

typedef struct Group {
        const Filter *head; /* NULL: strict mode */
        WhoCanTask *tasks;
        size_t n_tasks, allocated;
        const PolicyDecision *decision;
} Group;

typedef struct Grouping {
        Group *groups;
        size_t n, allocated;
        Hashmap by_head; /* head filter id -> group index + 1 */
        WhoCanTask *unfiltered;
        size_t n_unfiltered, allocated_unfiltered;
        size_t n_tasks;
} Grouping;

static void grouping_done(Grouping *g) {
        for (size_t i = 0; i < g->n; i++)
                free(g->groups[i].tasks);
        free(g->groups);
        free(g->unfiltered);
        hashmap_deinit(&g->by_head);
}

static int group_of(Grouping *g, const Filter *head, Group **ret) {
        uint64_t key = head ? head->id : 0; /* 0: strict mode */
        uintptr_t i = (uintptr_t) hashmap_get(&g->by_head, key);
        if (i == 0) {
                if (GROW(g->groups, g->allocated, g->n + 1) < 0)
                        return -ENOMEM;
                g->groups[g->n] = (Group) { .head = head };
                i = ++g->n;
                int r = hashmap_put(&g->by_head, key, (void *) i);
                if (r < 0)
                        return r;
        }
        *ret = &g->groups[i - 1];
        return 0;
}

static int task_add(WhoCanTask **list, size_t *n, size_t *allocated, const Process *p, const Task *t) {
        if (GROW(*list, *allocated, *n + 1) < 0)
                return -ENOMEM;
        (*list)[(*n)++] = (WhoCanTask) { .tid = t->tid, .pid = p->pid, .comm = p->comm };
        return 0;
}

static int grouping_build(const Forest *f, Grouping *g) {
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j];
                        Group *x;
                        int r;
                        g->n_tasks++;
                        if (t->mode == TASK_MODE_FILTER && !t->filter)
                                return -EINVAL; /* not linked */
                        if (t->mode == TASK_MODE_DISABLED) {
                                r = task_add(&g->unfiltered, &g->n_unfiltered, &g->allocated_unfiltered, p, t);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        r = group_of(g, t->mode == TASK_MODE_FILTER ? t->filter : NULL, &x);
                        if (r >= 0)
                                r = task_add(&x->tasks, &x->n_tasks, &x->allocated, p, t);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ---- deciding each distinct chain once ---- */

static bool chains_same_bytes(const Filter *a, const Filter *b) {
        for (; a && b; a = a->parent, b = b->parent)
                if (a != b && memcmp(a->digest, b->digest, PROG_DIGEST_SIZE) != 0)
                        return false;
        return !a && !b;
}

static int chain_programs(Arena *arena, const Filter *head, ChainProgram **ret, size_t *ret_n) {
        size_t n = head->depth;
        ChainProgram *c = arena_alloc(arena, (n + 1) * sizeof(ChainProgram));
        if (!c)
                return -ENOMEM;
        size_t k = 0;
        for (const Filter *x = head; x && k < n; x = x->parent, k++) {
                if (!x->insns && x->len > 0)
                        return -EINVAL; /* a forest without instructions */
                c[k] = (ChainProgram) { .insns = x->insns, .len = x->len };
        }
        *ret = c;
        *ret_n = k;
        return 0;
}

static int decide_groups(WhoCan *w, Grouping *g, const PolicyQuery *pq) {
        for (size_t i = 0; i < g->n; i++) {
                Group *x = &g->groups[i];
                if (!x->head)
                        continue;
                for (size_t j = 0; j < i && !x->decision; j++)
                        if (g->groups[j].head && chains_same_bytes(g->groups[j].head, x->head))
                                x->decision = g->groups[j].decision;
                if (x->decision)
                        continue;
                ChainProgram *c;
                size_t n;
                PolicyDecision *d;
                int r = chain_programs(&w->arena, x->head, &c, &n);
                if (r >= 0)
                        r = policy_decide(&w->arena, c, n, pq, &d);
                if (r < 0)
                        return r;
                x->decision = d;
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
        uint64_t ix = x->head ? x->head->id : 0, iy = y->head ? y->head->id : 0;
        return ix < iy ? -1 : ix > iy;
}

static WhoCanTask *tasks_copy(Arena *arena, const WhoCanTask *tasks, size_t n) {
        WhoCanTask *c = arena_memdup(arena, tasks, n * sizeof(WhoCanTask));
        if (c)
                qsort_safe(c, n, sizeof(WhoCanTask), cmp_tasks);
        return c;
}

/* One group: a chain that can (with the cases that give it), or an "other". */
static int group_answer(WhoCan *w, const WhoCanQuery *q, const PolicyArch *a, const Group *x) {
        WhoCanChain c = { .head = x->head, .depth = x->head ? x->head->depth : 0, .decision = x->decision };
        uint32_t strict = 0, v;

        if (!x->head) {
                strict = policy_arch_strict_verdict(a, q->nr);
                if (!who_can_query_matches(q, strict))
                        return other_add(w, strict, false, x->n_tasks);
                c.always = true;
        } else {
                c.cases = arena_alloc(&w->arena, (x->decision->n_cases + 1) * sizeof(PolicyCase *));
                if (!c.cases)
                        return -ENOMEM;
                for (size_t i = 0; i < x->decision->n_cases; i++)
                        if (case_matches(q, &x->decision->cases[i]))
                                c.cases[c.n_cases++] = &x->decision->cases[i];
                if (c.n_cases == 0) {
                        bool unconditional = policy_decision_unconditional(x->decision, &v);
                        return other_add(w, unconditional ? v : 0, !unconditional, x->n_tasks);
                }
                c.always = c.n_cases == x->decision->n_cases;
        }
        c.tasks = tasks_copy(&w->arena, x->tasks, x->n_tasks);
        if (!c.tasks)
                return -ENOMEM;
        c.n_tasks = x->n_tasks;
        w->chains[w->n_chains++] = c;
        return 0;
}

int policy_who_can(const Forest *f, const WhoCanQuery *q, WhoCan **ret) {
        const PolicyArch *a = q->arch ? q->arch : policy_arch_native();
        _cleanup_(grouping_done) Grouping g = {};
        _cleanup_(who_can_freep) WhoCan *w = calloc(1, sizeof(WhoCan));
        if (!w)
                return -ENOMEM;
        if (!a || !f->linked || q->n_args > ELEMENTSOF(q->args))
                return -EINVAL;
        PolicyQuery pq = { .arch = a->arch, .nr = q->nr, .n_args = q->n_args };
        memcpy(pq.args, q->args, sizeof(pq.args));

        int r = grouping_build(f, &g);
        if (r >= 0)
                r = decide_groups(w, &g, &pq);
        if (r < 0)
                return r;
        w->chains = arena_alloc(&w->arena, (g.n + 1) * sizeof(WhoCanChain));
        if (!w->chains)
                return -ENOMEM;
        for (size_t i = 0; i < g.n; i++)
                if ((r = group_answer(w, q, a, &g.groups[i])) < 0)
                        return r;
        qsort_safe(w->chains, w->n_chains, sizeof(WhoCanChain), cmp_chains);
        w->unfiltered = tasks_copy(&w->arena, g.unfiltered, g.n_unfiltered);
        if (!w->unfiltered && g.n_unfiltered)
                return -ENOMEM;
        w->n_unfiltered = g.n_unfiltered;
        w->n_tasks = g.n_tasks;
        *ret = TAKE_PTR(w);
        return 0;
}

WhoCan *who_can_free(WhoCan *w) {
        if (!w)
                return NULL;
        arena_done(&w->arena);
        free(w);
        return NULL;
}
