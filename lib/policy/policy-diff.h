/* policy-diff.h: where two decisions of the same question differ, exactly: the terms of one
 * intersected with the terms of the other */
#pragma once

#include "policy/policy.h"

/* A place where they differ: the intersection of a term of a with a term of b, and what each
 * gives there (for a computed value: at the term's witness). */
typedef struct PolicyDifference {
        PolicyTerm term;
        uint32_t a, b;
        bool a_computed, b_computed;
} PolicyDifference;

/* The differences of a and b (decisions of the same query, e.g. of two chains). effective:
 * compare the values as the kernel acts on them (policy_ret_effective()), not bit for bit. Up
 * to max into ret (may be NULL with max 0); returns how many there are (0: they decide alike
 * for every value of the words), negative errno on failure. Terms live in arena. */
int policy_decisions_diff(Arena *arena, const PolicyDecision *a, const PolicyDecision *b, bool effective,
                          PolicyDifference *ret, size_t max);
