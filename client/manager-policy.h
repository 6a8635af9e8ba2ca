/* manager-policy.h: typed calls of the Manager's GetPolicy, WhoCan and Audit */
#pragma once

#include <systemd/sd-bus.h>

#include "core/forest.h"
#include "core/arena.h"
#include "policy/policy-audit.h"
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

/* Audit(tid, {"baseline": the profile's JSON text, or none}): the task's mode, the head of its
 * chain (0: none) and the findings, their strings in arena. -ESRCH (not logged) when the daemon
 * says NoSuchTask: the task is gone, or was never one the caller may see; other failures logged. */
typedef struct TaskAuditReply {
        TaskMode mode;
        uint64_t head;
        AuditFindings findings;
        Arena arena;
} TaskAuditReply;
void task_audit_reply_done(TaskAuditReply *r);
int manager_audit(sd_bus *bus, uint32_t tid, const char *baseline, TaskAuditReply *ret);
