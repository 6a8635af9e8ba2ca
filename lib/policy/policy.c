/* policy.c: what a seccomp chain decides for one system call, for all arguments at once: each
 * filter run symbolically, the paths combined with the kernel's precedence across filters */
#include "policy/policy.h"

#include <errno.h>

#include "core/util.h"
#include "policy/policy-arch.h"
#include "policy/policy-exec.h"

/* A term of the combination so far, and what the filters walked so far make of it. */
typedef struct Partial {
        PolicyTerm term;
        PolicyRet ret;
} Partial;

typedef struct Partials {
        Partial *items;
        size_t n, allocated;
} Partials;

static void partials_done(Partials *p) {
        free(p->items);
        *p = (Partials) {};
}

static int partials_add(Partials *p, const Partial *x) {
        if (p->n >= POLICY_MAX_PATHS)
                return -E2BIG;
        if (GROW(p->items, p->allocated, p->n + 1) < 0)
                return -ENOMEM;
        p->items[p->n++] = *x;
        return 0;
}

/* ---- the question ---- */

static int base_other_numbers(Arena *arena, const PolicyArch *a, WordDomain *d) {
        const PolicySyscallName *names;
        size_t n;
        int r = policy_arch_syscalls(a, &names, &n);
        if (r < 0)
                return r;
        /* the names are sorted by number */
        WordPoints *p = arena_alloc(arena, sizeof(WordPoints));
        uint32_t *values = arena_alloc(arena, (n + 1) * sizeof(uint32_t));
        if (!p || !values)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                values[i] = (uint32_t) names[i].nr;
        *p = (WordPoints) { .values = values, .n = n };
        *d = (WordDomain) { .lo = a->nr_lo, .hi = a->nr_hi, .witness = a->nr_lo, .points = p };
        /* tight bounds, so that terms do not repeat them (the exclusions stay as they are: each
         * names a number, none is redundant) */
        uint32_t lo, hi;
        if (word_domain_first(d, d->lo, &lo) != SAT_YES || word_domain_last(d, d->hi, &hi) != SAT_YES)
                return -EINVAL;
        d->lo = lo;
        d->hi = hi;
        d->witness = lo;
        return 0;
}

static WordDomain word_point(uint32_t v) {
        return (WordDomain) { .lo = v, .hi = v, .known_mask = UINT32_MAX, .known_value = v, .witness = v };
}

static int query_base(Arena *arena, const PolicyQuery *q, PolicyTerm *base) {
        const PolicyArch *a = policy_arch_lookup(q->arch);
        if (!a)
                return -EINVAL;
        for (unsigned w = 0; w < POLICY_WORDS; w++)
                base->words[w] = WORD_DOMAIN_FULL;
        base->words[POLICY_WORD_ARCH] = word_point(a->token);
        if (q->n_args > ELEMENTSOF(q->args))
                return -EINVAL;
        for (size_t i = 0; i < q->n_args; i++) {
                base->words[policy_field_word((unsigned) i, false)] = word_point((uint32_t) q->args[i]);
                base->words[policy_field_word((unsigned) i, true)] = word_point((uint32_t) (q->args[i] >> 32));
        }
        if (q->other)
                return base_other_numbers(arena, a, &base->words[POLICY_WORD_NR]);
        base->words[POLICY_WORD_NR] = word_point((uint32_t) q->nr);
        return 0;
}

/* ---- precedence ---- */

static bool ret_action_known(SymVal v, uint32_t *ret) {
        uint32_t mask, value;
        sym_known_bits(v, &mask, &value);
        if ((mask & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_ACTION_FULL)
                return false;
        *ret = value & SECCOMP_RET_ACTION_FULL;
        return true;
}

/* The kernel's walk, one filter further: cur is what the next (older) filter returns. */
static int ret_combine(Arena *arena, const PolicyRet *best, SymVal cur, PolicyRet *ret) {
        uint32_t a, b;
        if (best->n_candidates == 0 && ret_action_known(best->value, &a) && ret_action_known(cur, &b)) {
                *ret = action_outranks(b, a) ? (PolicyRet) { .value = cur } : *best;
                return 0;
        }
        /* which wins depends on the words: keep them all, for ranking value by value */
        size_t n = best->n_candidates ? best->n_candidates : 1;
        SymVal *c = arena_alloc(arena, (n + 1) * sizeof(SymVal));
        if (!c)
                return -ENOMEM;
        if (best->n_candidates)
                memcpy(c, best->candidates, n * sizeof(SymVal));
        else
                c[0] = best->value;
        c[n] = cur;
        *ret = (PolicyRet) { .candidates = c, .n_candidates = n + 1 };
        return 0;
}

static uint32_t ret_eval(const PolicyRet *r, const struct seccomp_data *d) {
        if (r->n_candidates == 0)
                return sym_eval(r->value, d);
        uint32_t best = SECCOMP_RET_ALLOW;
        for (size_t i = 0; i < r->n_candidates; i++) {
                uint32_t cur = sym_eval(r->candidates[i], d);
                if (action_outranks(cur, best))
                        best = cur;
        }
        return best;
}

static bool ret_equal(const PolicyRet *a, const PolicyRet *b) {
        if (a->n_candidates != b->n_candidates)
                return false;
        if (a->n_candidates == 0)
                return sym_equal(a->value, b->value);
        for (size_t i = 0; i < a->n_candidates; i++)
                if (!sym_equal(a->candidates[i], b->candidates[i]))
                        return false;
        return true;
}

/* ---- combining the filters ---- */

static bool term_is_base(const PolicyTerm *t, const PolicyTerm *base) {
        return policy_term_is_unconstrained(t, base);
}

/* acc x the leaves of one more (older) filter. */
static int fold_filter(Arena *arena, const PolicyTerm *base, const Partials *acc, const PolicyLeaves *leaves,
                       const PolicyStop *stop, Partials *ret) {
        uint64_t pairs = 0;
        for (size_t i = 0; i < acc->n; i++)
                for (size_t j = 0; j < leaves->n; j++) {
                        if (++pairs % POLICY_STOP_EVERY == 0 && policy_stop_now(stop))
                                return -ECANCELED;
                        const PolicyLeaf *l = &leaves->items[j];
                        const PolicyTerm *a = &acc->items[i].term;
                        Partial p = { .term = term_is_base(a, base) ? l->term : *a };
                        int r = term_is_base(a, base) || term_is_base(&l->term, base)
                                        ? SAT_YES
                                        : policy_term_intersect(arena, &p.term, &l->term, base);
                        if (r < 0)
                                return r;
                        if (r == SAT_NO)
                                continue;
                        r = ret_combine(arena, &acc->items[i].ret, l->ret, &p.ret);
                        if (r < 0)
                                return r;
                        r = partials_add(ret, &p);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static int fold_chain(Arena *arena, const ChainProgram *chain, size_t n, const PolicyTerm *base,
                      const PolicyStop *stop, Partials *ret) {
        Partial start = { .term = *base, .ret = { .value = SYM_CONST(SECCOMP_RET_ALLOW) } };
        int r = partials_add(ret, &start);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_(policy_leaves_done) PolicyLeaves leaves = {};
                Partials next = {};
                r = policy_stop_now(stop) ? -ECANCELED
                                          : policy_exec(arena, chain[i].insns, chain[i].len, base, stop, &leaves);
                if (r >= 0)
                        r = fold_filter(arena, base, ret, &leaves, stop, &next);
                partials_done(ret);
                *ret = next;
        }
        return r;
}

/* ---- cases ---- */

typedef struct CaseBuilder {
        PolicyRet ret;
        PolicyTerm *terms;
        size_t n_terms, allocated;
} CaseBuilder;

static int cmp_cases(const void *a, const void *b) {
        const PolicyCase *x = a, *y = b;
        uint32_t vx = 0, vy = 0;
        bool cx = policy_case_constant(x, &vx), cy = policy_case_constant(y, &vy);
        if (cx != cy)
                return cx ? -1 : 1;
        /* the most restrictive first, as the kernel ranks them */
        return (int32_t) vx < (int32_t) vy ? -1 : (int32_t) vx > (int32_t) vy;
}

static int cases_build(Arena *arena, const Partials *parts, PolicyDecision *dec) {
        CaseBuilder *b = calloc(parts->n + 1, sizeof(CaseBuilder));
        size_t n = 0;
        int r = 0;
        if (!b)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < parts->n; i++) {
                const Partial *p = &parts->items[i];
                size_t k = 0;
                while (k < n && !ret_equal(&b[k].ret, &p->ret))
                        k++;
                if (k == n)
                        b[n++].ret = p->ret;
                if (GROW(b[k].terms, b[k].allocated, b[k].n_terms + 1) < 0)
                        r = -ENOMEM;
                else
                        b[k].terms[b[k].n_terms++] = p->term;
        }
        dec->cases = r >= 0 ? arena_alloc(arena, (n + 1) * sizeof(PolicyCase)) : NULL;
        if (r >= 0 && !dec->cases)
                r = -ENOMEM;
        for (size_t k = 0; k < n; k++) {
                if (r >= 0) {
                        PolicyTerm *terms = arena_memdup(arena, b[k].terms, b[k].n_terms * sizeof(PolicyTerm));
                        if (!terms)
                                r = -ENOMEM;
                        dec->cases[k] = (PolicyCase) { .ret = b[k].ret, .terms = terms, .n_terms = b[k].n_terms };
                }
                free(b[k].terms);
        }
        free(b);
        if (r < 0)
                return r;
        dec->n_cases = n;
        qsort_safe(dec->cases, n, sizeof(PolicyCase), cmp_cases);
        return 0;
}

static int partials_settle(Arena *arena, Partials *parts, const PolicyTerm *base) {
        size_t kept = 0;
        for (size_t i = 0; i < parts->n; i++) {
                int r = policy_term_settle(arena, &parts->items[i].term, base);
                if (r < 0)
                        return r;
                if (r != SAT_NO)
                        parts->items[kept++] = parts->items[i];
        }
        parts->n = kept;
        return 0;
}

/* A single call the kernel runs without the filters (the uprobe exception). */
static bool query_exempt(const PolicyQuery *q) {
        const PolicyArch *a = policy_arch_lookup(q->arch);
        struct seccomp_data d = { .nr = q->nr, .arch = a ? a->token : 0 };
        return !q->other && a && seccomp_kernel_exempts(q->kernel, &d);
}

int policy_decide(Arena *arena, const ChainProgram *chain, size_t n, const PolicyQuery *q, PolicyDecision **ret) {
        return policy_decide_stoppable(arena, chain, n, q, NULL, ret);
}

int policy_decide_stoppable(Arena *arena, const ChainProgram *chain, size_t n, const PolicyQuery *q,
                            const PolicyStop *stop, PolicyDecision **ret) {
        PolicyDecision *dec = arena_alloc(arena, sizeof(PolicyDecision));
        _cleanup_(partials_done) Partials parts = {};
        if (!dec)
                return -ENOMEM;
        dec->query = *q;
        int r = query_base(arena, q, &dec->base);
        if (r < 0)
                return r;
        r = query_exempt(q) ? fold_chain(arena, NULL, 0, &dec->base, stop, &parts)
                            : fold_chain(arena, chain, n, &dec->base, stop, &parts);
        if (r < 0)
                return r;
        r = partials_settle(arena, &parts, &dec->base);
        if (r < 0)
                return r;
        r = cases_build(arena, &parts, dec);
        if (r < 0)
                return r;
        *ret = dec;
        return 0;
}

/* ---- reading a decision ---- */

bool policy_term_holds(const PolicyTerm *t, const struct seccomp_data *d) {
        for (unsigned w = 0; w < POLICY_WORDS; w++)
                if (!word_domain_contains(&t->words[w], policy_word_value(d, w)))
                        return false;
        for (const Opaque *o = t->opaque; o; o = o->next)
                if (!opaque_holds(o, d))
                        return false;
        return true;
}

bool policy_term_holds_within(const PolicyTerm *t, const PolicyTerm *base, const struct seccomp_data *d) {
        for (unsigned w = 0; w < POLICY_WORDS; w++)
                if (!word_domain_contains_beyond(&t->words[w], policy_word_value(d, w), base->words[w].excl))
                        return false;
        for (const Opaque *o = t->opaque; o; o = o->next)
                if (!opaque_holds(o, d))
                        return false;
        return true;
}

const PolicyCase *policy_decision_match(const PolicyDecision *dec, const struct seccomp_data *d, uint32_t *ret) {
        if (!policy_term_holds(&dec->base, d))
                return NULL;
        for (size_t i = 0; i < dec->n_cases; i++)
                for (size_t j = 0; j < dec->cases[i].n_terms; j++)
                        if (policy_term_holds_within(&dec->cases[i].terms[j], &dec->base, d)) {
                                if (ret)
                                        *ret = ret_eval(&dec->cases[i].ret, d);
                                return &dec->cases[i];
                        }
        return NULL;
}

bool policy_term_is_unconstrained(const PolicyTerm *t, const PolicyTerm *base) {
        if (t->opaque)
                return false;
        for (unsigned w = 0; w < POLICY_WORDS; w++)
                if (!word_domain_is_unconstrained(&t->words[w], &base->words[w]))
                        return false;
        return true;
}

bool policy_case_constant(const PolicyCase *c, uint32_t *ret) {
        if (c->ret.n_candidates > 0 || !sym_is_const(c->ret.value))
                return false;
        if (ret)
                *ret = c->ret.value.k;
        return true;
}

bool policy_decision_unconditional(const PolicyDecision *dec, uint32_t *ret) {
        return dec->n_cases == 1 && policy_case_constant(&dec->cases[0], ret);
}

bool policy_case_exact(const PolicyCase *c) {
        if (!policy_case_constant(c, NULL))
                return false;
        for (size_t i = 0; i < c->n_terms; i++)
                if (c->terms[i].opaque || c->terms[i].maybe_empty)
                        return false;
        return true;
}

void policy_query_data(const PolicyDecision *dec, struct seccomp_data *ret) {
        *ret = (struct seccomp_data) {
                .nr = (int) dec->base.words[POLICY_WORD_NR].witness,
                .arch = dec->base.words[POLICY_WORD_ARCH].witness,
        };
}

uint32_t policy_ret_effective(uint32_t ret) {
        switch (ret & SECCOMP_RET_ACTION_FULL) {
        case SECCOMP_RET_KILL_PROCESS:
        case SECCOMP_RET_KILL_THREAD:
        case SECCOMP_RET_USER_NOTIF:
        case SECCOMP_RET_LOG:
        case SECCOMP_RET_ALLOW:
                return ret & SECCOMP_RET_ACTION_FULL;
        case SECCOMP_RET_ERRNO: /* the kernel caps the errno at MAX_ERRNO */
                return SECCOMP_RET_ERRNO | MIN(ret & SECCOMP_RET_DATA, (uint32_t) POLICY_MAX_ERRNO);
        case SECCOMP_RET_TRAP:
        case SECCOMP_RET_TRACE:
                return ret;
        default:
                return SECCOMP_RET_KILL_PROCESS;
        }
}
