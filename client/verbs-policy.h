/* verbs-policy.h: what the policy verbs (policy, who-can, policy-diff) share: the architecture
 * option, a task's policy, and a forest with its filters' instructions, live or from a file */
#pragma once

#include "chain.h"
#include "ctl.h"
#include "policy/policy-arch.h"
#include "policy/policy-report.h"
#include "policy/policy-summary.h"

/* --arch, or NULL when not given. Usage error for an architecture libseccomp does not know. */
int policy_arch_option(const Context *c, const PolicyArch **ret);

/* One task's effective policy: its chain (or strict mode, or nothing) summarized. */
typedef struct TaskPolicy {
        uint32_t tid;
        TaskMode mode;
        Chain chain;
        PolicySummary *summary;
        const char *source; /* NULL: live; else the snapshot file */
} TaskPolicy;

void task_policy_done(TaskPolicy *p);

/* Task tid's policy, live or from the snapshot file file (NULL: live), for every architecture of
 * its chain or (only) one. Logs. */
int task_policy_load(Context *c, const char *file, uint32_t tid, const PolicyArch *only, TaskPolicy *ret);

/* "task 4711", "task 4711 in F" */
char *task_policy_name(const TaskPolicy *p);

/* The daemon's answers (GetPolicy, WhoCan), read into the structures the output prints. Log. */
typedef struct TaskPolicyReply {
        TaskMode mode;
        uint64_t *filters; /* the chain, newest first */
        size_t n_filters;
        PolicyReport *report;
} TaskPolicyReply;
void task_policy_reply_done(TaskPolicyReply *r);
int policy_bus_get_policy(sd_bus *bus, uint32_t tid, TaskPolicyReply *ret);
/* w's chains carry their cases as report only (no decisions); w->unfiltered is NULL: the daemon
 * counts the tasks without filters, it does not list them. */
int policy_bus_who_can(sd_bus *bus, const char *syscall, const uint64_t *args, size_t n_args, const char *arch,
                       const char *action, WhoCan **ret);
