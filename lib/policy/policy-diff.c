/* policy-diff.c: where two decisions of the same question differ */
#include "policy/policy-diff.h"

#include <errno.h>

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

static uint32_t case_value_at(const PolicyDecision *dec, const struct seccomp_data *d, bool *computed) {
        uint32_t v = 0;
        const PolicyCase *c = policy_decision_match(dec, d, &v);
        *computed = c && !policy_case_constant(c, NULL);
        return v;
}

int policy_decisions_diff(Arena *arena, const PolicyDecision *a, const PolicyDecision *b, bool effective,
                          PolicyDifference *ret, size_t max) {
        size_t n = 0;

        if (a->query.arch != b->query.arch || a->query.other != b->query.other ||
            (!a->query.other && a->query.nr != b->query.nr))
                return -EINVAL;
        for (size_t i = 0; i < a->n_cases; i++)
                for (size_t j = 0; j < b->n_cases; j++) {
                        if (cases_alike(&a->cases[i], &b->cases[j], effective))
                                continue;
                        for (size_t k = 0; k < a->cases[i].n_terms; k++)
                                for (size_t l = 0; l < b->cases[j].n_terms; l++) {
                                        PolicyTerm t = a->cases[i].terms[k];
                                        int r = policy_term_intersect(arena, &t, &b->cases[j].terms[l], &b->base);
                                        if (r >= 0 && r != SAT_NO)
                                                r = policy_term_settle(arena, &t, &a->base);
                                        if (r < 0)
                                                return r;
                                        if (r == SAT_NO)
                                                continue;
                                        if (n < max) {
                                                struct seccomp_data d;
                                                policy_term_witness(&t, &d);
                                                ret[n] = (PolicyDifference) { .term = t };
                                                ret[n].a = case_value_at(a, &d, &ret[n].a_computed);
                                                ret[n].b = case_value_at(b, &d, &ret[n].b_computed);
                                        }
                                        n++;
                                }
                }
        return (int) MIN(n, (size_t) INT32_MAX);
}
