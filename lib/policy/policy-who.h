/* policy-who.h: which tasks of a forest may make a system call, each distinct chain decided once */
#pragma once

#include <jansson.h>

#include "core/forest.h"
#include "core/prog-wants.h"
#include "policy/policy-arch.h"
#include "policy/policy.h"

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

/* Why a chain was not decided. */
typedef enum WhoCanUndecided {
        WHO_CAN_DECIDED,         /* it was */
        WHO_CAN_PROGRAM_MISSING, /* a program of it was not at hand */
        WHO_CAN_OVER_BUDGET,     /* too many paths or steps for the analysis */
        WHO_CAN_OUT_OF_TIME,     /* the call's time ran out before it was decided */
        _WHO_CAN_UNDECIDED_MAX,
        _WHO_CAN_UNDECIDED_INVALID = -EINVAL,
} WhoCanUndecided;

const char *who_can_undecided_to_string(WhoCanUndecided u);
WhoCanUndecided who_can_undecided_from_string(const char *s);

/* The tasks of one chain that can: the cases of its decision that give the action. */
typedef struct WhoCanChain {
        uint64_t head; /* the head filter's id; 0: strict mode (read, write, exit, rt_sigreturn only) */
        size_t depth;
        const PolicyDecision *decision; /* NULL for strict mode */
        const PolicyCase **cases; /* those that match: all of them when always */
        size_t n_cases;
        struct PolicyReportCase *report; /* the n_cases rendered (who_can_report()), or received */
        bool always; /* for every value of the free arguments */
        WhoCanTask *tasks;
        size_t n_tasks;
        WhoCanUndecided why; /* of a chain in WhoCan.undecided */
} WhoCanChain;

/* Tasks whose chain never gives it, by what it gives instead (ret; or conditional). */
typedef struct WhoCanOther {
        uint32_t ret;
        bool conditional; /* several values, by argument, none of them the one looked for */
        size_t n_tasks, n_chains;
} WhoCanOther;

/* The tasks of a forest made ready for who-can questions: grouped by head filter, the heads by
 * byte-identical chain, with everything the questions need (the programs, the tasks' names)
 * copied out of the forest, so that the forest may change, or be freed, while the plan is decided
 * (in another thread, say). */
typedef struct WhoCanPlan WhoCanPlan;

/* The plan of the threads of a linked forest, of the processes visible() says yes to (NULL: every
 * process). A filter kept without its instructions (over its uid's budget) leaves its program
 * wanted (who_can_plan_wants()); a chain still without one when it is decided is not decided. */
int who_can_plan_new(const Forest *f, bool (*visible)(const Process *p, void *userdata), void *userdata,
                     WhoCanPlan **ret);
WhoCanPlan *who_can_plan_free(WhoCanPlan *p);
DEFINE_CLEANUP(WhoCanPlan *, who_can_plan_free);
/* Tasks in the plan, and byte-distinct chains (what a question decides). */
size_t who_can_plan_tasks(const WhoCanPlan *p);
size_t who_can_plan_chains(const WhoCanPlan *p);
/* The programs the plan lacks, to be supplied (prog_wants_supply()) into *ret_arena, the plan's,
 * before it is decided. */
ProgWants *who_can_plan_wants(WhoCanPlan *p, Arena **ret_arena);

typedef struct WhoCan {
        Arena arena;
        WhoCanPlan *plan;    /* what the tasks point into */
        WhoCanChain *chains; /* by head filter id */
        size_t n_chains;
        WhoCanTask *unfiltered; /* tasks without filters in the forest: they may call anything */
        size_t n_unfiltered;
        WhoCanOther *others;
        size_t n_others;
        WhoCanChain *undecided; /* chains a program of which was not at hand, over the analysis's
                                 * budget (too many paths), or left when stop said to stop:
                                 * not decided, by head filter id (head, depth, tasks and why
                                 * only) */
        size_t n_undecided;
        size_t n_tasks;      /* tasks looked at */
        size_t n_decisions;  /* chains decided (byte-identical chains once) */
} WhoCan;

/* Decide q for every task of the plan (taken, whatever the outcome), each byte-distinct chain
 * once, asking stop (may be NULL) as it goes; a chain policy_decide() finds too large (-E2BIG) is
 * left undecided, so that no chain fails the whole question, and so are those left when stop says
 * to stop if stop->leave_undecided. -EINVAL for a query outside the architecture, -ECANCELED,
 * the other errors of policy_decide(). */
int who_can_plan_decide(WhoCanPlan *plan, const WhoCanQuery *q, const PolicyStop *stop, WhoCan **ret);

/* who_can_plan_new() of every process of f, decided. */
int policy_who_can(const Forest *f, const WhoCanQuery *q, WhoCan **ret);
WhoCan *who_can_free(WhoCan *w);
DEFINE_CLEANUP(WhoCan *, who_can_free);

/* Does value v answer q? */
bool who_can_query_matches(const WhoCanQuery *q, uint32_t v);

/* A question as people and callers spell it: syscall a name of arch (NULL: the native one;
 * libseccomp's names: "x86_64", "x86", ...) or a number, the first n_args arguments fixed, and
 * action NULL (the call runs: ALLOW or LOG), an action ("ERRNO": any errno) or an action with its
 * data ("ERRNO(1)"). -EINVAL with *ret_error (malloc'ed) saying which part is wrong. */
int who_can_query_parse(const char *arch, const char *syscall, const uint64_t *args, size_t n_args,
                        const char *action, WhoCanQuery *ret, char **ret_error);
