/* policy-format.c: decisions as people and programs read them: conditions on whole 64-bit
 * arguments where the halves allow it, as text and as JSON */
#include "policy/policy-format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "core/disasm.h"
#include "core/util.h"

/* ---- terms into conditions ---- */

typedef struct ConstraintList {
        PolicyConstraint *items;
        size_t n, allocated;
} ConstraintList;

static int constraint_add(ConstraintList *l, const PolicyConstraint *c) {
        if (GROW(l->items, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->items[l->n++] = *c;
        return 0;
}

/* Is d a range with holes of single values only (no known bits, no masked exclusions)? */
static bool domain_is_interval_list(const WordDomain *d, const WordExcl *base) {
        if (d->lo == d->hi)
                return true;
        if (d->known_mask)
                return false;
        for (const WordExcl *e = d->excl; e && e != base; e = e->next)
                if (e->mask != UINT32_MAX)
                        return false;
        return true;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

/* The 64-bit values of an interval list d of one half: with the other half fixed to other, or
 * (high_half) with the low half free. */
static PolicyInterval half_to_field(uint64_t from, uint64_t to, bool high_half, uint32_t other) {
        if (high_half)
                return (PolicyInterval) { from << 32, (to << 32) | UINT32_MAX };
        return (PolicyInterval) { ((uint64_t) other << 32) | from, ((uint64_t) other << 32) | to };
}

static int domain_intervals(Arena *arena, const WordDomain *d, const WordExcl *base, bool high_half, uint32_t other,
                            PolicyConstraint *c) {
        uint32_t holes[256];
        size_t n_holes = 0, n = 0;

        for (const WordExcl *e = d->excl; d->lo != d->hi && e && e != base; e = e->next) {
                if (n_holes == ELEMENTSOF(holes))
                        return -E2BIG;
                holes[n_holes++] = e->value;
        }
        qsort_safe(holes, n_holes, sizeof(uint32_t), cmp_u32);
        PolicyInterval *out = arena_alloc(arena, (n_holes + 1) * sizeof(PolicyInterval));
        if (!out)
                return -ENOMEM;
        uint64_t from = d->lo;
        for (size_t i = 0; i < n_holes; i++) {
                if (holes[i] < from || holes[i] > d->hi)
                        continue;
                if (holes[i] > from)
                        out[n++] = half_to_field(from, holes[i] - 1, high_half, other);
                from = (uint64_t) holes[i] + 1;
        }
        if (from <= d->hi)
                out[n++] = half_to_field(from, d->hi, high_half, other);
        c->intervals = out;
        c->n_intervals = n;
        return 0;
}

static bool domain_is_full(const WordDomain *d, const WordDomain *base) {
        return word_domain_is_unconstrained(d, base);
}

/* One word alone: RANGES where it is an interval list, else WORD. */
static int word_constraint(Arena *arena, const PolicyTerm *t, const PolicyTerm *base, unsigned w, bool half_alone,
                           ConstraintList *l) {
        PolicyConstraint c = { .kind = CONSTRAINT_RANGES, .word = w };
        if (domain_is_interval_list(&t->words[w], base->words[w].excl)) {
                int r = domain_intervals(arena, &t->words[w], base->words[w].excl, false, 0, &c);
                if (r >= 0)
                        return constraint_add(l, &c);
                if (r != -E2BIG)
                        return r;
        }
        c = (PolicyConstraint) { .kind = CONSTRAINT_WORD, .word = w, .domain = t->words[w],
                                 .excl_base = base->words[w].excl, .half_alone = half_alone };
        return constraint_add(l, &c);
}

/* One field of a term: a FIELD constraint when its halves combine, else a WORD one per half. */
static int term_field(Arena *arena, const PolicyTerm *t, const PolicyTerm *base, unsigned field, ConstraintList *l) {
        unsigned wl = policy_field_word(field, false), wh = policy_field_word(field, true);
        const WordDomain *lo = &t->words[wl], *hi = &t->words[wh];
        bool lo_full = domain_is_full(lo, &base->words[wl]), hi_full = domain_is_full(hi, &base->words[wh]);
        PolicyConstraint c = { .kind = CONSTRAINT_FIELD, .field = field };
        uint32_t h;
        int r = 0;

        if (lo_full && hi_full)
                return 0;
        if (word_domain_is_point(hi, &h) && domain_is_interval_list(lo, base->words[wl].excl))
                r = domain_intervals(arena, lo, base->words[wl].excl, false, h, &c);
        else if (lo_full && domain_is_interval_list(hi, base->words[wh].excl))
                r = domain_intervals(arena, hi, base->words[wh].excl, true, 0, &c);
        else
                r = -E2BIG;
        if (r >= 0)
                return constraint_add(l, &c);
        if (r != -E2BIG)
                return r;
        /* the halves, each where it is constrained */
        if (!hi_full && (r = word_constraint(arena, t, base, wh, lo_full, l)) < 0)
                return r;
        if (!lo_full && (r = word_constraint(arena, t, base, wl, hi_full, l)) < 0)
                return r;
        return 0;
}

static int term_condition(Arena *arena, const PolicyTerm *t, const PolicyTerm *base, PolicyCondition *ret) {
        _cleanup_free_ PolicyConstraint *items = NULL;
        ConstraintList l = {};
        int r = 0;

        for (unsigned w = POLICY_WORD_NR; r >= 0 && w <= POLICY_WORD_ARCH; w++)
                if (!domain_is_full(&t->words[w], &base->words[w]))
                        r = word_constraint(arena, t, base, w, false, &l);
        for (unsigned f = 0; r >= 0 && f < POLICY_FIELDS; f++)
                r = term_field(arena, t, base, f, &l);
        for (const Opaque *o = t->opaque; r >= 0 && o; o = o->next)
                r = constraint_add(&l, &(PolicyConstraint) { .kind = CONSTRAINT_OPAQUE, .opaque = o });
        items = l.items;
        if (r < 0)
                return r;
        PolicyConstraint *copy = arena_memdup(arena, l.items, l.n * sizeof(PolicyConstraint));
        if (!copy && l.n > 0)
                return -ENOMEM;
        *ret = (PolicyCondition) { .constraints = copy, .n_constraints = l.n, .maybe_empty = t->maybe_empty };
        return 0;
}

/* ---- merging ---- */

static bool intervals_equal(const PolicyConstraint *a, const PolicyConstraint *b) {
        if (a->n_intervals != b->n_intervals)
                return false;
        for (size_t i = 0; i < a->n_intervals; i++)
                if (a->intervals[i].lo != b->intervals[i].lo || a->intervals[i].hi != b->intervals[i].hi)
                        return false;
        return true;
}

static bool constraint_equal(const PolicyConstraint *a, const PolicyConstraint *b, const PolicyTerm *base) {
        if (a->kind != b->kind)
                return false;
        switch (a->kind) {
        case CONSTRAINT_FIELD:
                return a->field == b->field && intervals_equal(a, b);
        case CONSTRAINT_RANGES:
                return a->word == b->word && intervals_equal(a, b);
        case CONSTRAINT_WORD:
                return a->word == b->word && word_domain_equal(&a->domain, &b->domain, base->words[a->word].excl);
        case CONSTRAINT_OPAQUE:
                return a->opaque->op == b->opaque->op && a->opaque->truth == b->opaque->truth &&
                       sym_equal(a->opaque->l, b->opaque->l) && sym_equal(a->opaque->r, b->opaque->r);
        }
        return false;
}

static bool constraint_has_intervals(const PolicyConstraint *c) {
        return c->kind == CONSTRAINT_FIELD || c->kind == CONSTRAINT_RANGES;
}

static uint64_t constraint_max(const PolicyConstraint *c) {
        return c->kind == CONSTRAINT_FIELD ? UINT64_MAX : UINT32_MAX;
}

/* Two conditions alike but for the intervals of one field or word: its position, or -1. */
static ssize_t conditions_differ_in_field(const PolicyCondition *a, const PolicyCondition *b, const PolicyTerm *base) {
        ssize_t diff = -1;
        if (a->n_constraints != b->n_constraints || a->maybe_empty != b->maybe_empty)
                return -1;
        for (size_t i = 0; i < a->n_constraints; i++) {
                const PolicyConstraint *x = &a->constraints[i], *y = &b->constraints[i];
                if (constraint_equal(x, y, base))
                        continue;
                if (diff >= 0 || x->kind != y->kind || !constraint_has_intervals(x) || x->field != y->field ||
                    x->word != y->word)
                        return -1;
                diff = (ssize_t) i;
        }
        return diff;
}

static int cmp_intervals(const void *a, const void *b) {
        const PolicyInterval *x = a, *y = b;
        return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The union of two interval lists, sorted and coalesced. */
static int intervals_union(Arena *arena, const PolicyConstraint *a, const PolicyConstraint *b, PolicyConstraint *ret) {
        size_t n = a->n_intervals + b->n_intervals, k = 0;
        PolicyInterval *all = arena_alloc(arena, (n + 1) * sizeof(PolicyInterval));
        if (!all)
                return -ENOMEM;
        memcpy_safe(all, a->intervals, a->n_intervals * sizeof(PolicyInterval));
        memcpy_safe(all + a->n_intervals, b->intervals, b->n_intervals * sizeof(PolicyInterval));
        qsort_safe(all, n, sizeof(PolicyInterval), cmp_intervals);
        for (size_t i = 0; i < n; i++)
                if (k > 0 && (all[k - 1].hi == UINT64_MAX || all[i].lo <= all[k - 1].hi + 1)) {
                        if (all[i].hi > all[k - 1].hi)
                                all[k - 1].hi = all[i].hi;
                } else
                        all[k++] = all[i];
        *ret = *a;
        ret->intervals = all;
        ret->n_intervals = k;
        return 0;
}

static bool constraint_is_everything(const PolicyConstraint *c) {
        return constraint_has_intervals(c) && c->n_intervals == 1 && c->intervals[0].lo == 0 &&
               c->intervals[0].hi == constraint_max(c);
}

/* a := a | b, for conditions that differ in the field at position i only. */
static int conditions_merge(Arena *arena, PolicyCondition *a, const PolicyCondition *b, size_t i) {
        PolicyConstraint *items = arena_memdup(arena, a->constraints, a->n_constraints * sizeof(PolicyConstraint));
        if (!items)
                return -ENOMEM;
        int r = intervals_union(arena, &a->constraints[i], &b->constraints[i], &items[i]);
        if (r < 0)
                return r;
        if (constraint_is_everything(&items[i])) {
                memmove(items + i, items + i + 1, (a->n_constraints - i - 1) * sizeof(PolicyConstraint));
                a->n_constraints--;
        }
        a->constraints = items;
        return 0;
}

static int conditions_merge_all(Arena *arena, PolicyCondition *conds, size_t *n, const PolicyTerm *base) {
        for (bool changed = true; changed;) {
                changed = false;
                for (size_t i = 0; i < *n; i++)
                        for (size_t j = i + 1; j < *n; j++) {
                                ssize_t k = conditions_differ_in_field(&conds[i], &conds[j], base);
                                if (k < 0)
                                        continue;
                                int r = conditions_merge(arena, &conds[i], &conds[j], (size_t) k);
                                if (r < 0)
                                        return r;
                                conds[j--] = conds[--*n];
                                changed = true;
                        }
        }
        return 0;
}

/* The terms of a case as conditions, merged where they differ in one argument. */
static int case_conditions(Arena *arena, const PolicyDecision *dec, const PolicyCase *c, PolicyCondition **ret, size_t *ret_n) {
        PolicyCondition *conds = arena_alloc(arena, (c->n_terms + 1) * sizeof(PolicyCondition));
        size_t n = 0;
        if (!conds)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_terms; i++) {
                int r = term_condition(arena, &c->terms[i], &dec->base, &conds[n]);
                if (r < 0)
                        return r;
                n++;
        }
        int r = conditions_merge_all(arena, conds, &n, &dec->base);
        if (r < 0)
                return r;
        *ret = conds;
        *ret_n = n;
        return 0;
}

/* ---- relaxing: dropping what the other cases do not need ---- */

/* The values one constraint allows for one word: intervals, a domain, or anything (not known). */
typedef struct WordSet {
        const PolicyInterval *intervals; /* sorted */
        size_t n_intervals;
        PolicyInterval storage[8];
        const WordDomain *domain;
        bool any;
} WordSet;

static bool intervals_disjoint(const PolicyInterval *a, size_t na, const PolicyInterval *b, size_t nb) {
        for (size_t i = 0, j = 0; i < na && j < nb;) {
                if (a[i].hi < b[j].lo)
                        i++;
                else if (b[j].hi < a[i].lo)
                        j++;
                else
                        return false;
        }
        return true;
}

static bool domain_misses_intervals(const WordDomain *d, const PolicyInterval *in, size_t n) {
        for (size_t i = 0; i < n; i++) {
                WordDomain t = *d;
                if (word_domain_restrict_range(&t, (uint32_t) in[i].lo, (uint32_t) in[i].hi) != SAT_NO)
                        return false;
        }
        return true;
}

/* The set of word w a constraint allows (FIELD constraints projected onto their halves). */
static void constraint_word_set(const PolicyConstraint *k, unsigned w, WordSet *ret) {
        bool high;
        *ret = (WordSet) { .any = true };
        if (k->kind == CONSTRAINT_RANGES && k->word == w)
                *ret = (WordSet) { .intervals = k->intervals, .n_intervals = k->n_intervals };
        else if (k->kind == CONSTRAINT_WORD && k->word == w)
                *ret = (WordSet) { .domain = &k->domain };
        else if (k->kind == CONSTRAINT_FIELD && policy_word_field(w, &high) == (int) k->field && k->n_intervals <= 8) {
                /* the halves of each interval: the high one always, the low one when the high is fixed */
                uint64_t h = k->intervals[0].lo >> 32;
                bool one_high = true;
                for (size_t i = 0; i < k->n_intervals; i++)
                        one_high = one_high && k->intervals[i].lo >> 32 == h && k->intervals[i].hi >> 32 == h;
                if (!high && !one_high)
                        return;
                ret->any = false;
                for (size_t i = 0; i < k->n_intervals; i++)
                        ret->storage[i] = high ? (PolicyInterval) { k->intervals[i].lo >> 32, k->intervals[i].hi >> 32 }
                                               : (PolicyInterval) { k->intervals[i].lo & UINT32_MAX, k->intervals[i].hi & UINT32_MAX };
                ret->intervals = ret->storage;
                ret->n_intervals = k->n_intervals;
        }
}

static bool word_sets_disjoint(const WordSet *a, const WordSet *b) {
        if (a->any || b->any)
                return false;
        if (a->intervals && b->intervals)
                return intervals_disjoint(a->intervals, a->n_intervals, b->intervals, b->n_intervals);
        if (a->domain && b->intervals)
                return domain_misses_intervals(a->domain, b->intervals, b->n_intervals);
        if (a->intervals && b->domain)
                return domain_misses_intervals(b->domain, a->intervals, a->n_intervals);
        /* two domains: their ranges and known bits (exclusions are not looked at) */
        WordDomain t = *a->domain;
        t.excl = NULL;
        return word_domain_restrict_range(&t, b->domain->lo, b->domain->hi) == SAT_NO ||
               word_domain_restrict_mask_eq(&t, b->domain->known_mask, b->domain->known_value) == SAT_NO;
}

/* Provably no value meets both constraints. */
static bool constraints_disjoint(const PolicyConstraint *x, const PolicyConstraint *y) {
        if (x->kind == CONSTRAINT_OPAQUE || y->kind == CONSTRAINT_OPAQUE)
                return false;
        if (x->kind == CONSTRAINT_FIELD && y->kind == CONSTRAINT_FIELD)
                return x->field == y->field && intervals_disjoint(x->intervals, x->n_intervals, y->intervals, y->n_intervals);
        for (unsigned w = 0; w < POLICY_WORDS; w++) {
                WordSet a, b;
                constraint_word_set(x, w, &a);
                constraint_word_set(y, w, &b);
                if (word_sets_disjoint(&a, &b))
                        return true;
        }
        return false;
}

static bool conditions_disjoint(const PolicyCondition *a, size_t skip, const PolicyCondition *b) {
        for (size_t i = 0; i < a->n_constraints; i++)
                for (size_t j = 0; i != skip && j < b->n_constraints; j++)
                        if (constraints_disjoint(&a->constraints[i], &b->constraints[j]))
                                return true;
        return false;
}

/* Drop from cond each constraint the other cases' conditions do not need: without it, it still
 * meets none of them. */
static int condition_relax(Arena *arena, PolicyCondition *cond, const PolicyCondition *others, size_t n_others) {
        for (size_t k = 0; k < cond->n_constraints;) {
                bool needed = false;
                for (size_t j = 0; j < n_others && !needed; j++)
                        needed = !conditions_disjoint(cond, k, &others[j]);
                if (needed) {
                        k++;
                        continue;
                }
                PolicyConstraint *items = arena_memdup(arena, cond->constraints, cond->n_constraints * sizeof(PolicyConstraint));
                if (!items)
                        return -ENOMEM;
                memmove(items + k, items + k + 1, (cond->n_constraints - k - 1) * sizeof(PolicyConstraint));
                cond->constraints = items;
                cond->n_constraints--;
        }
        return 0;
}

/* Is every constraint of b also in a (so a's set lies within b's)? */
static bool condition_within(const PolicyCondition *a, const PolicyCondition *b, const PolicyTerm *base) {
        for (size_t j = 0; j < b->n_constraints; j++) {
                bool found = false;
                for (size_t i = 0; i < a->n_constraints && !found; i++)
                        found = constraint_equal(&a->constraints[i], &b->constraints[j], base);
                if (!found)
                        return false;
        }
        return !b->maybe_empty || a->maybe_empty;
}

static void conditions_drop_within(PolicyCondition *conds, size_t *n, const PolicyTerm *base) {
        for (size_t i = 0; i < *n; i++)
                for (size_t j = 0; j < *n; j++)
                        if (i != j && condition_within(&conds[i], &conds[j], base)) {
                                conds[i--] = conds[--*n];
                                break;
                        }
}

int policy_case_view(Arena *arena, const PolicyDecision *dec, const PolicyCase *c, PolicyCaseView *ret) {
        PolicyCondition *conds, *others = NULL;
        size_t n, n_others = 0;
        int r = case_conditions(arena, dec, c, &conds, &n);
        if (r < 0)
                return r;
        /* the other cases' conditions, to see what this one's need */
        for (size_t i = 0; i < dec->n_cases; i++) {
                PolicyCondition *x;
                size_t nx;
                if (&dec->cases[i] == c)
                        continue;
                if ((r = case_conditions(arena, dec, &dec->cases[i], &x, &nx)) < 0)
                        return r;
                PolicyCondition *all = arena_alloc(arena, (n_others + nx + 1) * sizeof(PolicyCondition));
                if (!all)
                        return -ENOMEM;
                memcpy_safe(all, others, n_others * sizeof(PolicyCondition));
                memcpy_safe(all + n_others, x, nx * sizeof(PolicyCondition));
                others = all;
                n_others += nx;
        }
        for (size_t i = 0; i < n; i++)
                if ((r = condition_relax(arena, &conds[i], others, n_others)) < 0)
                        return r;
        conditions_drop_within(conds, &n, &dec->base);
        if ((r = conditions_merge_all(arena, conds, &n, &dec->base)) < 0)
                return r;
        /* a case that holds always (a condition without constraints) has none */
        for (size_t i = 0; i < n; i++)
                if (conds[i].n_constraints == 0 && !conds[i].maybe_empty)
                        n = 0;
        *ret = (PolicyCaseView) { .c = c, .conditions = conds, .n_conditions = n, .exact = policy_case_exact(c) };
        return 0;
}

static bool in_intervals(const PolicyInterval *in, size_t n, uint64_t v) {
        for (size_t i = 0; i < n; i++)
                if (v >= in[i].lo && v <= in[i].hi)
                        return true;
        return false;
}

static bool constraint_holds(const PolicyConstraint *k, const struct seccomp_data *d) {
        switch (k->kind) {
        case CONSTRAINT_FIELD: {
                uint64_t v = (uint64_t) policy_word_value(d, policy_field_word(k->field, true)) << 32 |
                             policy_word_value(d, policy_field_word(k->field, false));
                return in_intervals(k->intervals, k->n_intervals, v);
        }
        case CONSTRAINT_RANGES:
                return in_intervals(k->intervals, k->n_intervals, policy_word_value(d, k->word));
        case CONSTRAINT_WORD:
                return word_domain_contains_beyond(&k->domain, policy_word_value(d, k->word), k->excl_base);
        case CONSTRAINT_OPAQUE:
                return opaque_holds(k->opaque, d);
        }
        return false;
}

bool policy_condition_holds(const PolicyCondition *c, const struct seccomp_data *d) {
        for (size_t i = 0; i < c->n_constraints; i++)
                if (!constraint_holds(&c->constraints[i], d))
                        return false;
        return true;
}

bool policy_case_view_holds(const PolicyCaseView *v, const struct seccomp_data *d) {
        if (v->n_conditions == 0)
                return true;
        for (size_t i = 0; i < v->n_conditions; i++)
                if (policy_condition_holds(&v->conditions[i], d))
                        return true;
        return false;
}

/* ---- text ---- */

char *policy_format_value(uint64_t v, char *buf) {
        snprintf(buf, POLICY_VALUE_MAX, v < 65536 ? "%" PRIu64 : "0x%" PRIx64, v);
        return buf;
}

static void print_value(FILE *f, uint64_t v) {
        char buf[POLICY_VALUE_MAX];
        fputs(policy_format_value(v, buf), f);
}

static void print_piece(FILE *f, PolicyInterval i, uint64_t max) {
        print_value(f, i.lo);
        if (i.hi == i.lo)
                return;
        fputs(i.hi == i.lo + 1 ? ", " : "..", f);
        if (i.hi == max)
                fputs("max", f);
        else
                print_value(f, i.hi);
}

static void print_pieces(FILE *f, const PolicyInterval *p, size_t n, uint64_t max) {
        fputs("{", f);
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        fputs(", ", f);
                print_piece(f, p[i], max);
        }
        fputs("}", f);
}

/* The gaps of a sorted interval list in [0, max]: at most n + 1. */
static size_t intervals_complement(const PolicyInterval *in, size_t n, uint64_t max, PolicyInterval *out) {
        size_t k = 0;
        uint64_t from = 0;
        bool open = true;
        for (size_t i = 0; i < n; i++) {
                if (in[i].lo > from)
                        out[k++] = (PolicyInterval) { from, in[i].lo - 1 };
                if (in[i].hi == max) {
                        open = false;
                        break;
                }
                from = in[i].hi + 1;
        }
        if (open)
                out[k++] = (PolicyInterval) { from, max };
        return k;
}

static bool all_points(const PolicyInterval *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (p[i].lo != p[i].hi)
                        return false;
        return true;
}

/* name in the intervals, in the shortest form: == v, != v, <= b, >= a, in [a, b], in {...},
 * not in {...}. */
static void print_intervals(FILE *f, const char *name, const PolicyInterval *in, size_t n, uint64_t max) {
        _cleanup_free_ PolicyInterval *gaps = calloc(n + 1, sizeof(PolicyInterval));
        size_t n_gaps = gaps ? intervals_complement(in, n, max, gaps) : SIZE_MAX;

        fprintf(f, "%s ", name);
        if (n == 1 && in[0].lo == in[0].hi) {
                fputs("== ", f);
                print_value(f, in[0].lo);
        } else if (n_gaps == 1 && gaps[0].lo == gaps[0].hi) {
                fputs("!= ", f);
                print_value(f, gaps[0].lo);
        } else if (n == 1 && in[0].lo == 0) {
                fputs("<= ", f);
                print_value(f, in[0].hi);
        } else if (n == 1 && in[0].hi == max) {
                fputs(">= ", f);
                print_value(f, in[0].lo);
        } else if (n == 1) {
                fputs("in [", f);
                print_value(f, in[0].lo);
                fputs(", ", f);
                print_value(f, in[0].hi);
                fputs("]", f);
        } else if (n_gaps == 1 && gaps[0].hi - gaps[0].lo >= 2) {
                fputs("not in [", f);
                print_value(f, gaps[0].lo);
                fputs(", ", f);
                print_value(f, gaps[0].hi);
                fputs("]", f);
        } else if (n_gaps != SIZE_MAX && (n_gaps < n || (all_points(gaps, n_gaps) && !all_points(in, n)))) {
                fputs("not in ", f);
                print_pieces(f, gaps, n_gaps, max);
        } else {
                fputs("in ", f);
                print_pieces(f, in, n, max);
        }
}

/* A mask test on one half of a field whose other half is free is a mask test on the field:
 * "arg0 & 0x12 == 0x12" rather than "arg0.lo & ...". */
static void print_mask(FILE *f, const PolicyConstraint *c, const char *sep, uint32_t mask, uint32_t value, bool equal) {
        bool high = false;
        int field = policy_word_field(c->word, &high);
        uint64_t m = mask, v = value;
        if (c->half_alone && field >= 0) {
                if (high) {
                        m <<= 32;
                        v <<= 32;
                }
                fprintf(f, "%s%s", sep, policy_field_name((unsigned) field));
        } else
                fprintf(f, "%s%s", sep, policy_word_name(c->word));
        fprintf(f, v ? " & 0x%" PRIx64 " %s 0x%" PRIx64 : " & 0x%" PRIx64 " %s %" PRIu64, m, equal ? "==" : "!=", v);
}

static void print_word(FILE *f, const PolicyConstraint *c) {
        const WordDomain *d = &c->domain;
        const char *name = policy_word_name(c->word), *sep = "";
        char v[POLICY_VALUE_MAX];

        if (d->lo != 0 || d->hi != UINT32_MAX) {
                PolicyInterval range = { d->lo, d->hi };
                print_intervals(f, name, &range, 1, UINT32_MAX);
                sep = " and ";
        }
        if (d->known_mask && d->lo != d->hi) {
                print_mask(f, c, sep, d->known_mask, d->known_value, true);
                sep = " and ";
        }
        for (const WordExcl *e = d->excl; e != c->excl_base && d->lo != d->hi; e = e->next, sep = " and ") {
                if (e->mask == UINT32_MAX)
                        fprintf(f, "%s%s != %s", sep, name, policy_format_value(e->value, v));
                else
                        print_mask(f, c, sep, e->mask, e->value, false);
        }
}

static void print_constraint(FILE *f, const PolicyConstraint *c) {
        switch (c->kind) {
        case CONSTRAINT_FIELD:
                print_intervals(f, policy_field_name(c->field), c->intervals, c->n_intervals, UINT64_MAX);
                return;
        case CONSTRAINT_RANGES:
                print_intervals(f, policy_word_name(c->word), c->intervals, c->n_intervals, UINT32_MAX);
                return;
        case CONSTRAINT_WORD:
                print_word(f, c);
                return;
        case CONSTRAINT_OPAQUE: {
                _cleanup_free_ char *s = opaque_to_string(c->opaque);
                fputs(s ? s : "?", f);
                return;
        }
        }
}

static void print_condition(FILE *f, const PolicyCondition *c, bool parenthesize) {
        parenthesize = parenthesize && c->n_constraints > 1;
        if (parenthesize)
                fputs("(", f);
        for (size_t i = 0; i < c->n_constraints; i++) {
                if (i > 0)
                        fputs(" and ", f);
                print_constraint(f, &c->constraints[i]);
        }
        if (c->n_constraints == 0)
                fputs("always", f);
        if (parenthesize)
                fputs(")", f);
        if (c->maybe_empty)
                fputs(" (may never hold)", f);
}

typedef struct MemFile {
        FILE *f;
        char *buf;
        size_t size;
} MemFile;

static bool memfile_open(MemFile *m) {
        *m = (MemFile) {};
        m->f = open_memstream(&m->buf, &m->size);
        return m->f;
}

static char *memfile_close(MemFile *m) {
        if (fclose(m->f) != 0) {
                free(m->buf);
                return NULL;
        }
        return m->buf;
}

char *policy_case_view_string(const PolicyCaseView *v) {
        MemFile m;
        if (!memfile_open(&m))
                return NULL;
        for (size_t i = 0; i < v->n_conditions; i++) {
                if (i > 0)
                        fputs(" or ", m.f);
                print_condition(m.f, &v->conditions[i], v->n_conditions > 1);
        }
        if (v->n_conditions == 0)
                fputs("always", m.f);
        return memfile_close(&m);
}

/* The action's name without its data: "ERRNO" for ERRNO(n). */
static void print_action_name(FILE *f, uint32_t action) {
        char buf[ACTION_STRING_MAX];
        action_to_string(action, buf, sizeof(buf));
        buf[strcspn(buf, "(")] = 0;
        fputs(buf, f);
}

char *policy_case_action_string(const PolicyCase *c) {
        char buf[ACTION_STRING_MAX];
        uint32_t ret, mask, value;
        MemFile m;

        if (policy_case_constant(c, &ret))
                return strdup(action_to_string(ret, buf, sizeof(buf)));
        if (!memfile_open(&m))
                return NULL;
        if (c->ret.n_candidates == 0) {
                _cleanup_free_ char *e = sym_to_string(c->ret.value);
                sym_known_bits(c->ret.value, &mask, &value);
                if ((mask & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ACTION_FULL) {
                        print_action_name(m.f, value & SECCOMP_RET_ACTION_FULL);
                        fprintf(m.f, "(computed: %s)", e ? e : "?");
                } else
                        fprintf(m.f, "computed: %s", e ? e : "?");
        } else {
                fputs("computed: the most restrictive of ", m.f);
                for (size_t i = 0; i < c->ret.n_candidates; i++) {
                        _cleanup_free_ char *e = sym_to_string(c->ret.candidates[i]);
                        fprintf(m.f, "%s%s", i > 0 ? ", " : "", e ? e : "?");
                }
        }
        return memfile_close(&m);
}

/* ---- JSON ---- */

/* An unsigned 64-bit value: a JSON integer up to 2^53 (what every JSON reader holds exactly),
 * beyond that its decimal digits as a string. */
static json_t *json_u64(uint64_t v) {
        char buf[24];
        if (v <= POLICY_JSON_INTEGER_MAX)
                return json_integer((json_int_t) v);
        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return json_string(buf);
}

static json_t *constraint_json(const PolicyConstraint *c) {
        switch (c->kind) {
        case CONSTRAINT_FIELD:
        case CONSTRAINT_RANGES: {
                json_t *a = json_array();
                for (size_t i = 0; a && i < c->n_intervals; i++)
                        if (json_array_append_new(a, json_pack("[o, o]", json_u64(c->intervals[i].lo),
                                                               json_u64(c->intervals[i].hi))) < 0) {
                                json_decref(a);
                                return NULL;
                        }
                if (c->kind == CONSTRAINT_RANGES)
                        return json_pack("{s:s, s:o}", "word", policy_word_name(c->word), "intervals", a);
                return json_pack("{s:s, s:o}", "field", policy_field_name(c->field), "intervals", a);
        }
        case CONSTRAINT_WORD: {
                const WordDomain *d = &c->domain;
                json_t *not = json_array();
                for (const WordExcl *e = d->excl; not && e != c->excl_base && d->lo != d->hi; e = e->next)
                        if (json_array_append_new(not, json_pack("{s:I, s:I}", "mask", (json_int_t) e->mask, "value",
                                                                 (json_int_t) e->value)) < 0) {
                                json_decref(not);
                                return NULL;
                        }
                return json_pack("{s:s, s:I, s:I, s:I, s:I, s:o}", "word", policy_word_name(c->word), "min",
                                 (json_int_t) d->lo, "max", (json_int_t) d->hi, "mask",
                                 (json_int_t) (d->lo == d->hi ? 0 : d->known_mask), "value",
                                 (json_int_t) (d->lo == d->hi ? 0 : d->known_value), "not", not);
        }
        case CONSTRAINT_OPAQUE: {
                _cleanup_free_ char *s = opaque_to_string(c->opaque);
                return s ? json_pack("{s:s}", "depends", s) : NULL;
        }
        }
        return NULL;
}

static json_t *condition_json(const PolicyCondition *c) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < c->n_constraints; i++)
                if (json_array_append_new(a, constraint_json(&c->constraints[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

json_t *policy_case_view_json(const PolicyCaseView *v) {
        _cleanup_free_ char *action = policy_case_action_string(v->c);
        _cleanup_free_ char *text = v->n_conditions ? policy_case_view_string(v) : NULL;
        uint32_t ret;
        json_t *when = json_array();

        for (size_t i = 0; when && i < v->n_conditions; i++)
                if (json_array_append_new(when, condition_json(&v->conditions[i])) < 0) {
                        json_decref(when);
                        return NULL;
                }
        if (!action || (v->n_conditions && !text)) {
                json_decref(when);
                return NULL;
        }
        bool constant = policy_case_constant(v->c, &ret);
        return json_pack("{s:s, s:o, s:b, s:o, s:o}", "action", action, "ret",
                         constant ? json_integer(ret) : json_null(), "exact", v->exact, "condition",
                         text ? json_string(text) : json_null(), "when", when);
}

json_t *policy_decision_json(Arena *arena, const PolicyDecision *dec) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < dec->n_cases; i++) {
                PolicyCaseView v;
                if (policy_case_view(arena, dec, &dec->cases[i], &v) < 0 ||
                    json_array_append_new(a, policy_case_view_json(&v)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

char *policy_decision_string(Arena *arena, const PolicyDecision *dec) {
        MemFile m;
        if (!memfile_open(&m))
                return NULL;
        for (size_t i = 0; i < dec->n_cases; i++) {
                PolicyCaseView v;
                _cleanup_free_ char *action = policy_case_action_string(&dec->cases[i]);
                _cleanup_free_ char *cond = NULL;
                if (policy_case_view(arena, dec, &dec->cases[i], &v) < 0 || !action ||
                    (v.n_conditions && !(cond = policy_case_view_string(&v)))) {
                        free(memfile_close(&m));
                        return NULL;
                }
                fprintf(m.f, "%s%s", i > 0 ? "; " : "", action);
                if (cond)
                        fprintf(m.f, " if %s", cond);
        }
        return memfile_close(&m);
}
