/* policy-dbus.h: the policy methods of org.sectree1.Manager: GetPolicy, WhoCan and Audit */
#pragma once

#include <systemd/sd-bus.h>

#include "bus/bus-args.h"

/* The analyses run off the loop in worker lanes, with their limits: service/policy-jobs.h. */


/* GetPolicy(u tid) -> (s mode, at filters, a(sbbua(si(bua(ssuubs)))(bua(ssuubs))) architectures) */
int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* WhoCan(s syscall, at args, a{sv} options) -> (s architecture, i nr, u tasks, u decided,
 * a(tuba(ssuubs)a(uus)) chains, u unfiltered, a(buuu) others, a(tua(uus)) undecided) */
int method_who_can(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* Audit(u tid) -> (s mode, at filters, a(sssssbuuatu) findings): each finding's rule, severity,
 * architecture and syscall ("" for the chain as a whole), message, and its witness (whether it
 * has one, arch, nr, args, the action the chain takes on it) */
int method_audit(sd_bus_message *msg, void *userdata, sd_bus_error *error);

#define AUDIT_FINDING_TYPE "(sssssbuuatu)"
#define POLICY_CASE_TYPE "(ssuubs)"
#define POLICY_DECISION_TYPE "(bua" POLICY_CASE_TYPE ")"
#define POLICY_ARCH_TYPE "(sbbua(si" POLICY_DECISION_TYPE ")" POLICY_DECISION_TYPE ")"
#define WHO_CAN_CHAIN_TYPE "(tuba" POLICY_CASE_TYPE "a(uus))"
#define WHO_CAN_OTHER_TYPE "(buuu)"
#define WHO_CAN_UNDECIDED_TYPE "(tua(uus))"
