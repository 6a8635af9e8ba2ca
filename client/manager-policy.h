/* manager-policy.h: typed calls of the Manager's GetPolicy and WhoCan */
#pragma once

#include <systemd/sd-bus.h>

#include "core/forest.h"
#include "policy/policy-report.h"
#include "policy/policy-who.h"

/* The daemon's answers (GetPolicy, WhoCan), read into the structures the policy verbs print (the
 * same ones a snapshot file's analysis fills). Log. */
typedef struct TaskPolicyReply {
        TaskMode mode;
        uint64_t *filters; /* the chain, newest first */
        size_t n_filters;
        PolicyReport *report;
} TaskPolicyReply;
void task_policy_reply_done(TaskPolicyReply *r);
int manager_get_policy(sd_bus *bus, uint32_t tid, TaskPolicyReply *ret);
/* w's chains carry their cases as report only (no decisions); w->unfiltered is NULL: the daemon
 * counts the tasks without filters, it does not list them. */
int manager_who_can(sd_bus *bus, const char *syscall, const uint64_t *args, size_t n_args, const char *arch,
                    const char *action, WhoCan **ret);
