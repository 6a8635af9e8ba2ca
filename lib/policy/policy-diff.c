/* policy-diff.c: where two decisions of the same question differ, each difference proven by an
 * input on which they give different values */
#include "policy/policy-diff.h"

#include <errno.h>
#include <string.h>

#include "core/util.h"
#include "policy/policy-exec.h"

/* Do two cases give the same value wherever both hold? */
static bool cases_alike(const PolicyCase *x, const PolicyCase *y, bool effective) {
        uint32_t a, b;
        bool ca = policy_case_constant(x, &a), cb = policy_case_constant(y, &b);
        if (ca && cb)
                return effective ? policy_ret_effective(a) == policy_ret_effective(b) : a == b;
        if (ca || cb || x->ret.n_candidates || y->ret.n_candidates)
                return false;
        return sym_equal(x->ret.value, y->ret.value);
}

static uint32_t value_at(const PolicyDecision *dec, const struct seccomp_data *d, bool *found, bool *computed) {
        uint32_t v = 0;
        const PolicyCase *c = policy_decision_match(dec, d, &v);
        *found = c;
        *computed = c && !policy_case_constant(c, NULL);
        return v;
}

/* Do a and b, evaluated on d, give different values? Fills the values of ret. */
static bool differ_at(const PolicyDecision *a, const PolicyDecision *b, bool effective, const struct seccomp_data *d,
                      PolicyDifference *ret) {
        bool fa, fb;
        ret->a = value_at(a, d, &fa, &ret->a_computed);
        ret->b = value_at(b, d, &fb, &ret->b_computed);
        if (!fa || !fb)
                return false;
        return effective ? policy_ret_effective(ret->a) != policy_ret_effective(ret->b) : ret->a != ret->b;
}

#define DIFF_SAMPLES 64

/* An input of t on which a and b differ: t's witness, then each word moved through the
 * boundaries of its domain (where a computed value or an opaque condition may part them). */
static bool find_witness(const PolicyDecision *a, const PolicyDecision *b, bool effective, const PolicyTerm *t,
                         PolicyDifference *ret) {
        struct seccomp_data d;
        policy_term_witness(t, &d);
        if (differ_at(a, b, effective, &d, ret)) {
                ret->witness = d;
                return true;
        }
        for (unsigned w = 0; w < POLICY_WORDS; w++) {
                uint32_t samples[DIFF_SAMPLES], saved;
                size_t n = word_domain_boundaries(&t->words[w], samples, ELEMENTSOF(samples));
                memcpy(&saved, (uint8_t *) &d + 4 * w, sizeof(saved));
                for (size_t i = 0; i < n; i++) {
                        memcpy((uint8_t *) &d + 4 * w, &samples[i], sizeof(uint32_t));
                        if (policy_term_holds(t, &d) && differ_at(a, b, effective, &d, ret)) {
                                ret->witness = d;
                                return true;
                        }
                }
                memcpy((uint8_t *) &d + 4 * w, &saved, sizeof(saved));
        }
        return false;
}

/* The difference under terms x (of a) and y (of b), if an input proves one: 1 and *ret. */
static int terms_differ(Arena *arena, const PolicyDecision *a, const PolicyDecision *b, bool effective,
                        const PolicyTerm *x, const PolicyTerm *y, PolicyDifference *ret) {
        PolicyTerm t = *x;
        int r = policy_term_intersect(arena, &t, y, &b->base);
        if (r >= 0 && r != SAT_NO)
                r = policy_term_settle(arena, &t, &a->base);
        if (r < 0)
                return r;
        if (r == SAT_NO || !find_witness(a, b, effective, &t, ret))
                return 0;
        ret->term = t;
        return 1;
}

int policy_decisions_diff(Arena *arena, const PolicyDecision *a, const PolicyDecision *b, bool effective,
                          PolicyDifference *ret, size_t max) {
        size_t n = 0;

        if (a->query.arch != b->query.arch || a->query.other != b->query.other ||
            (!a->query.other && a->query.nr != b->query.nr))
                return -EINVAL;
        if (a == b)
                return 0;
        for (size_t i = 0; i < a->n_cases; i++)
                for (size_t j = 0; j < b->n_cases; j++) {
                        if (cases_alike(&a->cases[i], &b->cases[j], effective))
                                continue;
                        for (size_t k = 0; k < a->cases[i].n_terms; k++)
                                for (size_t l = 0; l < b->cases[j].n_terms; l++) {
                                        PolicyDifference d;
                                        int r = terms_differ(arena, a, b, effective, &a->cases[i].terms[k],
                                                             &b->cases[j].terms[l], &d);
                                        if (r < 0)
                                                return r;
                                        if (r == 0)
                                                continue;
                                        if (n < max)
                                                ret[n] = d;
                                        n++;
                                }
                }
        return (int) MIN(n, (size_t) INT32_MAX);
}
