/* policy-exec.h: one program run symbolically (every path, as leaves), and the operations on
 * terms that the analysis and policy-diff share */
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "core/arena.h"
#include "core/eval.h"
#include "policy/policy-term.h"

/* One path through a program: under term it returns ret. */
typedef struct PolicyLeaf {
        PolicyTerm term;
        SymVal ret;
} PolicyLeaf;

typedef struct PolicyLeaves {
        PolicyLeaf *items; /* malloc'ed */
        size_t n, allocated;
} PolicyLeaves;

void policy_leaves_done(PolicyLeaves *l);

#define POLICY_MAX_PATHS 65536

/* Every path of the program (valid per prog_validate()) from base: the leaves partition base.
 * -E2BIG beyond POLICY_MAX_PATHS paths (or an absurd number of steps), -ECANCELED when stop (may
 * be NULL) says so, -ENOMEM. */
int policy_exec(Arena *arena, const struct sock_filter *insns, size_t n, const PolicyTerm *base,
                const PolicyStop *stop, PolicyLeaves *ret);

/* How many steps (of a program, or pairs of terms combined) go by between two questions to a
 * PolicyStop. */
#define POLICY_STOP_EVERY 4096

/* Narrow t by an atom: SAT_NO when nothing is left, SAT_UNKNOWN for an opaque one that cannot be
 * decided yet. Negative errno on failure. */
int policy_term_apply(Arena *arena, PolicyTerm *t, const Atom *a);
/* t &= o (both narrowed from base). */
int policy_term_intersect(Arena *arena, PolicyTerm *t, const PolicyTerm *o, const PolicyTerm *base);
/* Normal form of every word, opaque conditions decided where their words are fixed, and a member
 * searched for when opaque ones remain (maybe_empty when none is found). SAT_NO: t is empty. */
int policy_term_settle(Arena *arena, PolicyTerm *t, const PolicyTerm *base);
/* The witnesses of the words as one seccomp_data: a member when the term has no opaque part. */
void policy_term_witness(const PolicyTerm *t, struct seccomp_data *ret);
