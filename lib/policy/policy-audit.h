/* policy-audit.h: what a chain confines weakly, each finding proven from the chain itself by an
 * input on which the chain, evaluated as the kernel runs it, does what the finding says */
#pragma once

#include <errno.h>
#include <stdbool.h>

#include "policy/policy-summary.h"

typedef enum AuditSeverity {
        AUDIT_SEVERITY_INFO,
        AUDIT_SEVERITY_LOW,
        AUDIT_SEVERITY_MEDIUM,
        AUDIT_SEVERITY_HIGH,
        _AUDIT_SEVERITY_MAX,
        _AUDIT_SEVERITY_INVALID = -EINVAL,
} AuditSeverity;
const char *audit_severity_to_string(AuditSeverity s);
AuditSeverity audit_severity_from_string(const char *s);

typedef enum AuditRule {
        AUDIT_RULE_ABI_BYPASS,       /* denied in the native ABI, allowed in a compat one */
        AUDIT_RULE_NO_ARCH_CHECK,    /* no filter of the chain looks at the architecture */
        AUDIT_RULE_EQUIVALENT_OPEN,  /* open denied but openat allowed, and the like */
        AUDIT_RULE_DANGEROUS,        /* a dangerous call allowed, with its condition */
        AUDIT_RULE_NOTIF_NO_LISTENER, /* USER_NOTIF with no listener left: ENOSYS */
        AUDIT_RULE_LOG_ONLY,         /* a filter that only logs */
        AUDIT_RULE_BASELINE,         /* allowed where the baseline profile denies */
        _AUDIT_RULE_MAX,
        _AUDIT_RULE_INVALID = -EINVAL,
} AuditRule;
const char *audit_rule_to_string(AuditRule r);
AuditRule audit_rule_from_string(const char *s);

typedef struct AuditFinding {
        AuditRule rule;
        AuditSeverity severity;
        const char *arch;    /* libseccomp's name; NULL for the chain as a whole */
        const char *syscall; /* NULL for the chain as a whole */
        char *message;       /* what is weak and why, with the exact condition */
        bool has_witness;
        struct seccomp_data witness; /* an input that shows it */
        uint32_t action;     /* what the chain does on it (chain_evaluate_kernel()) */
} AuditFinding;

typedef struct AuditFindings {
        AuditFinding *items;
        size_t n, allocated;
} AuditFindings;

void audit_findings_done(AuditFindings *f);

/* What to audit: the chain (newest first; n == 0: no filter, nothing is audited), its summary
 * for every architecture (policy_summarize_kernel() with kernel), whether each filter still has
 * a listener (NULL: not known, that rule is skipped), and a baseline profile's summary (NULL:
 * none). */
typedef struct AuditInput {
        const ChainProgram *chain;
        size_t n;
        const bool *has_listener;
        const PolicySummary *summary;
        const PolicySummary *baseline;
        uint32_t kernel;
} AuditInput;

/* Every finding, appended to ret, each with a witness the chain was evaluated on (a finding about
 * the chain's text, such as a missing architecture check, may lack one). -ENOMEM. */
int policy_audit(const AuditInput *in, AuditFindings *ret);
