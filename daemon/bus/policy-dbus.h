/* policy-dbus.h: the policy methods of org.sectree1.Manager: GetPolicy and WhoCan */
#pragma once

#include <systemd/sd-bus.h>

#include "service/manager.h"

/*
 * The analyses run in a worker thread each, off the event loop, in two lanes of one worker each:
 * root's calls and everyone else's, so that other users' questions never make root's wait. What
 * the worker needs is copied out of the live forest first (the programs, the tasks the caller may
 * see), so the forest goes on changing meanwhile. An analysis longer than
 * POLICY_DBUS_DEADLINE_USEC is stopped (LimitsExceeded); at most POLICY_JOBS_MAX_* calls of a lane
 * wait at once, and POLICY_JOBS_MAX_PER_UID of one uid (LimitsExceeded beyond). Everyone else's
 * lane is shared by uid (uid-share.h): the next call is the one of the uid that has the most of
 * its share of CPU time left (POLICY_UID_SHARE_PERCENT of one CPU, with bursts of
 * POLICY_UID_BURST_USEC), and a uid that took its share waits, so that no user's many or costly
 * calls make another's wait for more than the one that runs. When sectreed stops, the workers are
 * stopped and waited for, and their calls get no answer.
 */
#define POLICY_DBUS_DEADLINE_USEC (2 * 1000 * 1000ULL)
#define POLICY_JOBS_MAX_ROOT 64
#define POLICY_JOBS_MAX_USERS 16
#define POLICY_JOBS_MAX_PER_UID 8
#define POLICY_UID_BURST_USEC POLICY_DBUS_DEADLINE_USEC
#define POLICY_UID_SHARE_PERCENT 50

typedef struct PolicyJob PolicyJob;

/* Stop the workers, wait for them, and drop their calls (sectreed is stopping). */
void manager_policy_jobs_cancel(Manager *m);

/* GetPolicy(u tid) -> (s mode, at filters, a(sbbua(si(bua(ssuubs)))(bua(ssuubs))) architectures) */
int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* WhoCan(s syscall, at args, a{sv} options) -> (s architecture, i nr, u tasks, u decided,
 * a(tuba(ssuubs)a(uus)) chains, u unfiltered, a(buuu) others, a(tua(uus)) undecided) */
int method_who_can(sd_bus_message *msg, void *userdata, sd_bus_error *error);

#define POLICY_CASE_TYPE "(ssuubs)"
#define POLICY_DECISION_TYPE "(bua" POLICY_CASE_TYPE ")"
#define POLICY_ARCH_TYPE "(sbbua(si" POLICY_DECISION_TYPE ")" POLICY_DECISION_TYPE ")"
#define WHO_CAN_CHAIN_TYPE "(tuba" POLICY_CASE_TYPE "a(uus))"
#define WHO_CAN_OTHER_TYPE "(buuu)"
#define WHO_CAN_UNDECIDED_TYPE "(tua(uus))"
