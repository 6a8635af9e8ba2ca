/* policy-diff.h: where two decisions of the same question differ, proven: the terms of one
 * intersected with the terms of the other, and an input found in each intersection on which the
 * two decisions give different values */
#pragma once

#include "policy/policy.h"

/* A place where they differ: the intersection of a term of a with a term of b, an input in it
 * (witness) on which a and b give different values, and what each gives there. */
typedef struct PolicyDifference {
        PolicyTerm term;
        struct seccomp_data witness;
        uint32_t a, b;
        bool a_computed, b_computed;
} PolicyDifference;

/* The differences of a and b (decisions of the same query, e.g. of two chains). effective:
 * compare the values as the kernel acts on them (policy_ret_effective()), not bit for bit. Two
 * terms that overlap are a difference only where an input is found on which the two decisions,
 * evaluated (policy_decision_match()), give different values: no input found, nothing said.
 * A decision against itself, or against one of the same chain, never differs. Up to max into
 * ret (may be NULL with max 0); returns how many there are (0: no input was found where they
 * decide differently), negative errno on failure. Terms live in arena. */
int policy_decisions_diff(Arena *arena, const PolicyDecision *a, const PolicyDecision *b, bool effective,
                          PolicyDifference *ret, size_t max);
