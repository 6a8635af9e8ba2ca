/* policy.h: symbolic evaluation of seccomp chains: what a chain decides for one system call, as a
 * function of the arguments and the instruction pointer, and for every system call at once */
#pragma once

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/eval.h"
#include "policy/policy-expr.h"
#include "policy/policy-term.h"
#include "policy/policy-word.h"

/* What the kernel acts on under a term: one value, or (when the filters compute their return
 * values from the arguments, and which one wins depends on them) the values of the filters that
 * return something, newest first, for the kernel's precedence to rank. */
typedef struct PolicyRet {
        SymVal value;               /* when n_candidates == 0 */
        const SymVal *candidates;
        size_t n_candidates;
} PolicyRet;

/* One action, and the terms (disjoint) under which the chain takes it. */
typedef struct PolicyCase {
        PolicyRet ret;
        const PolicyTerm *terms;
        size_t n_terms;
} PolicyCase;

/* The question: one architecture and one system call number, or every number the architecture
 * does not name (what the chain does with system calls libseccomp does not know). */
typedef struct PolicyQuery {
        uint32_t arch;  /* SCMP_ARCH_* (AUDIT_ARCH_* values, and SCMP_ARCH_X32) */
        bool other;     /* every number not named for arch (nr is ignored) */
        int32_t nr;     /* for x32 with __X32_SYSCALL_BIT, as libseccomp resolves it */
        uint64_t args[6]; /* args[0..n_args) fixed to these values; the others free */
        size_t n_args;
        uint32_t kernel; /* the KERNEL_VERSION whose exceptions apply (seccomp_kernel_exempts()); 0:
                          * the running kernel's */
} PolicyQuery;

/* The complete decision: the cases cover every value of the words, each exactly once. */
typedef struct PolicyDecision {
        PolicyQuery query;
        PolicyTerm base; /* what the query fixes (nr and arch); terms say what they add to it */
        PolicyCase *cases;
        size_t n_cases;
} PolicyDecision;

/* Decide q for chain (newest first, each program valid per prog_validate()), with the kernel's
 * precedence across filters; a call q's kernel exempts from seccomp is an unconditional ALLOW. Everything lives in arena. -E2BIG when a filter has more than
 * 65,536 paths for the question, -EINVAL for an unknown architecture, -ENOMEM. */
int policy_decide(Arena *arena, const ChainProgram *chain, size_t n, const PolicyQuery *q, PolicyDecision **ret);

/* policy_decide() that asks stop (may be NULL) as it goes. */
int policy_decide_stoppable(Arena *arena, const ChainProgram *chain, size_t n, const PolicyQuery *q,
                            const PolicyStop *stop, PolicyDecision **ret);

/* Whether the term holds for d; the second for a d already known to be in the question's base
 * (faster where the question excludes many numbers). */
bool policy_term_holds(const PolicyTerm *t, const struct seccomp_data *d);
bool policy_term_holds_within(const PolicyTerm *t, const PolicyTerm *base, const struct seccomp_data *d);
/* The case whose terms hold for d (NULL: none, which a correct decision never gives), and the
 * value the kernel acts on. */
const PolicyCase *policy_decision_match(const PolicyDecision *dec, const struct seccomp_data *d, uint32_t *ret);

/* The action when the decision does not depend on the arguments at all: true and *ret. */
bool policy_decision_unconditional(const PolicyDecision *dec, uint32_t *ret);
/* The largest errno the kernel returns: ERRNO(data) with data above it returns -4095. */
#define POLICY_MAX_ERRNO 4095

/* The value as the kernel acts on it: the data of actions that ignore it cleared, an errno
 * capped at POLICY_MAX_ERRNO, unknown actions as KILL_PROCESS. Two chains with equal effective values behave alike (what the
 * differences and the OCI profiles compare). */
uint32_t policy_ret_effective(uint32_t ret);
/* The case's value when it is a constant: true and *ret (false when computed from the words). */
bool policy_case_constant(const PolicyCase *c, uint32_t *ret);
/* Whether the case can be described without opaque conditions, computed values or terms that
 * may never hold. */
bool policy_case_exact(const PolicyCase *c);
/* No condition on anything beyond the query: the term of an unconditional decision. */
bool policy_term_is_unconstrained(const PolicyTerm *t, const PolicyTerm *base);

/* The seccomp_data the query fixes (arch as the kernel reports it, nr), the rest zero: a start
 * for samples. For an "other" query, nr is one of its numbers. */
void policy_query_data(const PolicyDecision *dec, struct seccomp_data *ret);
