/* policy-format.h: decisions as people and programs read them: the terms of a case merged into
 * conditions on whole 64-bit arguments where the halves allow it, as text and as JSON */
#pragma once

#include <jansson.h>

#include "policy/policy.h"

/* An inclusive range of 64-bit values. */
typedef struct PolicyInterval {
        uint64_t lo, hi;
} PolicyInterval;

typedef enum PolicyConstraintKind {
        CONSTRAINT_FIELD,  /* a 64-bit field (argument, ip) in a union of intervals */
        CONSTRAINT_RANGES, /* one 32-bit word in a union of intervals (of one half where the halves
                            * do not combine) */
        CONSTRAINT_WORD,   /* one 32-bit word in a domain with known bits or masked exclusions */
        CONSTRAINT_OPAQUE, /* an opaque condition */
} PolicyConstraintKind;

typedef struct PolicyConstraint {
        PolicyConstraintKind kind;
        unsigned field;                 /* FIELD */
        const PolicyInterval *intervals; /* FIELD, RANGES: sorted, disjoint, not adjacent */
        size_t n_intervals;
        unsigned word;                  /* RANGES, WORD */
        WordDomain domain;              /* WORD */
        const WordExcl *excl_base;      /* WORD: where the question's own exclusions start */
        bool half_alone;                /* WORD: half of a field whose other half is free */
        const Opaque *opaque;           /* OPAQUE */
} PolicyConstraint;

/* A conjunction of constraints on different fields and words. */
typedef struct PolicyCondition {
        const PolicyConstraint *constraints;
        size_t n_constraints;
        bool maybe_empty;
} PolicyCondition;

/* A case as a disjunction of conditions: its terms merged where two differ in one argument only,
 * each relaxed by what no other case needs (so that "arg0 != 16 or arg2 != 9" reads as such), and
 * those within another dropped. The conditions of one case may overlap; no condition meets a
 * term of another case. */
typedef struct PolicyCaseView {
        const PolicyCase *c;
        const PolicyCondition *conditions; /* none: the case holds always */
        size_t n_conditions;
        bool exact; /* expressible without opaque conditions, computed values or maybe-empty terms */
} PolicyCaseView;

int policy_case_view(Arena *arena, const PolicyDecision *dec, const PolicyCase *c, PolicyCaseView *ret);
/* Whether the condition holds for d (d within the decision's question). */
bool policy_condition_holds(const PolicyCondition *c, const struct seccomp_data *d);
/* Whether some condition of the view holds for d (always, for a view without conditions). */
bool policy_case_view_holds(const PolicyCaseView *v, const struct seccomp_data *d);

/* A 64-bit value as the conditions print it: decimal below 65536, hex above. buf: 24 bytes. */
#define POLICY_VALUE_MAX 24
char *policy_format_value(uint64_t v, char *buf);

/* "ERRNO(1)", or for a value computed from the words "ERRNO(computed: (arg1.lo & 0xfff) | 0x50000)".
 * malloc'ed; NULL on OOM. */
char *policy_case_action_string(const PolicyCase *c);
/* "arg0 in {0, 8} and arg1.lo & 0x3 == 0", terms "or"-ed with parentheses where needed; "always"
 * for a case without conditions. malloc'ed; NULL on OOM. */
char *policy_case_view_string(const PolicyCaseView *v);
/* {"action":..., "ret":..., "exact":..., "condition": "<text>" or null, "when": [[constraint...]...]}
 * NULL on OOM. */
json_t *policy_case_view_json(const PolicyCaseView *v);

/* The largest value the JSON writes as a number (2^53); a larger 64-bit value (the intervals of a
 * field are unsigned) is written as a string of its decimal digits. */
#define POLICY_JSON_INTEGER_MAX (UINT64_C(1) << 53)

/* Every case of a decision: [{case}...]; NULL on OOM. */
json_t *policy_decision_json(Arena *arena, const PolicyDecision *dec);

/* The whole decision on one line: "ALLOW" when unconditional, else
 * "ALLOW if arg0 == 0; ERRNO(1) if arg0 != 0". malloc'ed; NULL on OOM. */
char *policy_decision_string(Arena *arena, const PolicyDecision *dec);
