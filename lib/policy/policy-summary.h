/* policy-summary.h: the whole policy of a chain: the decision for every system call libseccomp
 * names on each architecture the chain tells apart, and for the numbers it does not name */
#pragma once

#include <jansson.h>

#include "core/util.h"
#include "policy/policy-arch.h"
#include "policy/policy.h"

typedef struct PolicyEntry {
        const PolicySyscallName *syscall;
        PolicyDecision *decision;
} PolicyEntry;

typedef struct PolicyArchSummary {
        const PolicyArch *arch;
        PolicyEntry *entries; /* every named system call, by number */
        size_t n_entries;
        PolicyDecision *other; /* the numbers libseccomp does not name for it */
        bool uniform;          /* every entry and other: one unconditional value, uniform_ret */
        uint32_t uniform_ret;
} PolicyArchSummary;

typedef struct PolicySummary {
        Arena arena;
        PolicyArchSummary *arches; /* the native one first */
        size_t n_arches;
        size_t chain_length;
} PolicySummary;

/* Decide every system call for the architectures the chain tells apart (policy_chain_arches()), or
 * for only. Errors as policy_decide(). */
int policy_summarize(const ChainProgram *chain, size_t n, const PolicyArch *only, PolicySummary **ret);
/* The same, asking stop (may be NULL) as it goes: -ECANCELED once it says so. */
int policy_summarize_stoppable(const ChainProgram *chain, size_t n, const PolicyArch *only, const PolicyStop *stop,
                               PolicySummary **ret);
/* The same for the chain on kernel (a KERNEL_VERSION, e.g. a snapshot's; 0: the running one), whose
 * exceptions apply (seccomp_kernel_exempts()). */
int policy_summarize_kernel(const ChainProgram *chain, size_t n, const PolicyArch *only, uint32_t kernel,
                            const PolicyStop *stop, PolicySummary **ret);
PolicySummary *policy_summary_free(PolicySummary *s);
DEFINE_CLEANUP(PolicySummary *, policy_summary_free);

const PolicyArchSummary *policy_summary_find_arch(const PolicySummary *s, uint32_t arch);
/* The entry of a named system call, or NULL. */
const PolicyEntry *policy_arch_summary_find(const PolicyArchSummary *a, const char *name);
