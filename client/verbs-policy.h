/* verbs-policy.h: `policy TID`, and what the policy verbs (policy, who-can, policy-diff) share */
/* The architecture option, a task's policy, and a forest with its filters' instructions, live or
 * from a file. */
#pragma once

#include "chain.h"
#include "context.h"
#include "policy/policy-arch.h"
#include "policy/policy-summary.h"

/* --arch, or NULL when not given. Usage error for an architecture libseccomp does not know. */
int policy_arch_option(const Context *c, const PolicyArch **ret);

/* The kernel version (KERNEL_VERSION) whose exceptions apply to the tasks of the snapshot file
 * file: its kernel release; 0 (the running kernel) for file NULL. Logs. */
int policy_kernel_of(const char *file, uint32_t *ret);

/* One task's effective policy: its chain (or strict mode, or nothing) summarized. */
typedef struct TaskPolicy {
        uint32_t tid;
        TaskMode mode;
        Chain chain;
        PolicySummary *summary;
        const char *source; /* NULL: live; else the snapshot file */
        /* what was summarized, newest first (strict mode as a program): for checking a finding
         * by evaluating the chain itself */
        ChainProgram *progs;
        size_t n_progs;
        struct sock_filter strict[POLICY_STRICT_PROGRAM_MAX];
        uint32_t kernel; /* policy_kernel_of() the source */
} TaskPolicy;

void task_policy_done(TaskPolicy *p);

/* Task tid's policy, live or from the snapshot file file (NULL: live), for every architecture of
 * its chain or (only) one. Logs. */
int task_policy_load(Context *c, const char *file, uint32_t tid, const PolicyArch *only, TaskPolicy *ret);

/* "task 4711", "task 4711 in F" */
char *task_policy_name(const TaskPolicy *p);

int verb_policy(Context *c, char **args, size_t n_args);
