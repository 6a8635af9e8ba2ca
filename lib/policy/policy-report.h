/* policy-report.h: decisions rendered for output: every case's action, condition and JSON as
 * text, so that what the daemon sends over the bus and what the client computes from a snapshot
 * file print alike */
#pragma once

#include "core/arena.h"
#include "policy/policy-summary.h"
#include "policy/policy-who.h"

typedef struct PolicyReportCase {
        const char *action;    /* "ERRNO(1)", "ERRNO(computed: ...)" */
        const char *condition; /* "arg0 == 0"; NULL: always */
        size_t n_conditions;   /* of its view: 0 for always */
        uint32_t ret;          /* the value, when constant */
        bool constant;
        const char *json; /* policy_case_view_json(), compact */
} PolicyReportCase;

typedef struct PolicyReportDecision {
        bool unconditional; /* one value for every argument: ret */
        uint32_t ret;
        PolicyReportCase *cases;
        size_t n_cases;
} PolicyReportDecision;

typedef struct PolicyReportSyscall {
        const char *name;
        int32_t nr;
        PolicyReportDecision decision;
} PolicyReportSyscall;

typedef struct PolicyReportArch {
        const char *name;
        bool native;
        bool uniform; /* every system call: uniform_ret */
        uint32_t uniform_ret;
        PolicyReportSyscall *syscalls; /* by number */
        size_t n_syscalls;
        PolicyReportDecision other; /* the numbers libseccomp does not name */
} PolicyReportArch;

typedef struct PolicyReport {
        Arena arena; /* everything below */
        PolicyReportArch *arches; /* the native one first */
        size_t n_arches;
} PolicyReport;

/* One case of dec rendered into arena. -ENOMEM. */
int policy_report_case(Arena *arena, const PolicyDecision *dec, const PolicyCase *c, PolicyReportCase *ret);
int policy_report_decision(Arena *arena, const PolicyDecision *dec, PolicyReportDecision *ret);
/* A whole summary rendered. -ENOMEM. */
int policy_report_new(const PolicySummary *s, PolicyReport **ret);
PolicyReport *policy_report_free(PolicyReport *r);
DEFINE_CLEANUP(PolicyReport *, policy_report_free);

/* "ERRNO(1) if arg0 == 0; ALLOW if arg0 != 0", "ALLOW": the decision on one line. malloc'ed. */
char *policy_report_decision_string(const PolicyReportDecision *d);

/* Render the cases of every chain of w into w->arena (WhoCanChain.report): what the output reads. */
int who_can_report(WhoCan *w);
