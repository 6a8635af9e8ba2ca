/* policy-term.h: a term of the symbolic evaluation (the words in their domains and the opaque
 * conditions), and the way to end an analysis early; the bottom of the policy analysis */
#pragma once

#include <stdbool.h>

#include "policy/policy-expr.h"
#include "policy/policy-word.h"

/* A conjunction: the words are in their domains and every opaque condition holds. */
typedef struct PolicyTerm {
        WordDomain words[POLICY_WORDS];
        const Opaque *opaque; /* conditions outside the one-word forms (exact, but only described) */
        bool maybe_empty;     /* opaque conditions no member was found for: the term may never hold */
} PolicyTerm;

/* A way to end an analysis early (a deadline, a request cancelled): asked every few thousand
 * steps; once it returns true, the analysis ends with -ECANCELED. The callback may run in any
 * thread the analysis runs in. */
typedef struct PolicyStop {
        bool (*check)(void *userdata);
        void *userdata;
        /* who_can_plan_decide(): once check says to stop, the chains not decided yet are named
         * undecided and the rest is answered, instead of failing with -ECANCELED */
        bool leave_undecided;
} PolicyStop;

static inline bool policy_stop_now(const PolicyStop *s) {
        return s && s->check(s->userdata);
}
