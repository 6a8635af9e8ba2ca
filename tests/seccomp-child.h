/* seccomp-child.h: system calls made for real by a child process under a chain of filters, and
 * what the kernel did with each, next to what a decision predicts */
#pragma once

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy-check.h"

typedef enum OutcomeKind {
        OUTCOME_RETURNED, /* value: the raw return, -errno on failure */
        OUTCOME_RAN,      /* prediction only: the call ran (ALLOW, LOG); any return */
        OUTCOME_TRAPPED,  /* value: si_errno of the SIGSYS (the TRAP data) */
        OUTCOME_KILLED,   /* value: the signal that ended the child */
} OutcomeKind;

typedef struct Outcome {
        OutcomeKind kind;
        int64_t value;
} Outcome;

/* What the kernel does with a filter's value for the only thread of a process (no tracer, no
 * listener): kernel/seccomp.c __seccomp_filter(). */
Outcome outcome_from_ret(uint32_t ret);
bool outcome_is_fatal(const Outcome *o);
/* The prediction holds for what happened. */
bool outcome_agrees(const Outcome *predicted, const Outcome *got);
char *outcome_describe(const Outcome *o);

typedef struct ChildCall {
        struct seccomp_data data; /* nr and args are used */
        Outcome predicted, got;
        bool seen;
} ChildCall;

/* Fork children that drop to an unused uid (no capability left, no process of that uid to
 * harm), set no_new_privs, install the chain (oldest first) and make the calls: the ones
 * predicted to return in one child, each fatal one in a child of its own. Fills got and seen.
 * Write, exit_group and rt_sigreturn must be allowed by the chain (the child reports with them),
 * and seccomp by all but its oldest filter (the child installs the chain with it). */
void tests_child_run_calls(const TestProg *const *oldest_first, size_t n, ChildCall *calls, size_t n_calls);

/* Run them and compare: fails the test (going on) for every call where the kernel did
 * otherwise than predicted. Returns how many were compared. */
size_t tests_child_check_calls(const char *what, const TestProg *const *oldest_first, size_t n, ChildCall *calls,
                               size_t n_calls);
