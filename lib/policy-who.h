/* policy-who.h: which tasks of a forest may make a system call, each distinct chain decided once */
#pragma once

#include <jansson.h>

#include "forest.h"
#include "policy-arch.h"
#include "policy.h"

/* What to look for: a syscall (with arguments fixed or free), and an action. */
typedef struct WhoCanQuery {
        const PolicyArch *arch; /* NULL: the native one */
        int32_t nr;
        uint64_t args[6];       /* args[0..n_args) given; the others take any value */
        size_t n_args;
        bool allowed;   /* the call runs: ALLOW or LOG (action is then ignored) */
        uint32_t action; /* else this value, or (any_data) any value of its action */
        bool any_data;
} WhoCanQuery;

typedef struct WhoCanTask {
        pid_t tid, pid;
        const char *comm;
} WhoCanTask;

/* The tasks of one chain that can: the cases of its decision that give the action. */
typedef struct WhoCanChain {
        const Filter *head; /* NULL: strict mode (read, write, exit, rt_sigreturn only) */
        size_t depth;
        const PolicyDecision *decision;
        const PolicyCase **cases; /* those that match: all of them when always */
        size_t n_cases;
        bool always; /* for every value of the free arguments */
        WhoCanTask *tasks;
        size_t n_tasks;
} WhoCanChain;

/* Tasks whose chain never gives it, by what it gives instead (ret; or conditional). */
typedef struct WhoCanOther {
        uint32_t ret;
        bool conditional; /* several values, by argument, none of them the one looked for */
        size_t n_tasks, n_chains;
} WhoCanOther;

typedef struct WhoCan {
        Arena arena;
        WhoCanChain *chains; /* by head filter id */
        size_t n_chains;
        WhoCanTask *unfiltered; /* tasks without filters in the forest: they may call anything */
        size_t n_unfiltered;
        WhoCanOther *others;
        size_t n_others;
        size_t n_tasks;      /* tasks looked at */
        size_t n_decisions;  /* chains decided (byte-identical chains once) */
} WhoCan;

/* Decide q for every thread of a linked forest whose filters have instructions. -EINVAL for a
 * query outside the architecture, errors of policy_decide(). */
int policy_who_can(const Forest *f, const WhoCanQuery *q, WhoCan **ret);
WhoCan *who_can_free(WhoCan *w);
DEFINE_CLEANUP(WhoCan *, who_can_free);

/* Does value v answer q? */
bool who_can_query_matches(const WhoCanQuery *q, uint32_t v);
