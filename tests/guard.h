/* guard.h: every process a test program starts dies with it, however the program ends */
#pragma once

#include <sys/types.h>

/* Move the test program into a cgroup of its own (sectree-test-PID, a child of its cgroup in the
 * cgroup2 hierarchy) and fork a guard process outside it that, when the program ends (returns,
 * asserts, or is killed by the runner), kills everything left in that cgroup and removes it.
 * Without a usable cgroup2 hierarchy (not root), the guard kills the program's process group
 * instead. Either way nothing the test started keeps the runner's output pipe open. The guard
 * holds no descriptor of the program's but a pidfd, and is in a session of its own so that the
 * runner's kill of the process group leaves it alive to do its work. Call once, first thing. */
void tests_guard_start(void);
/* The guard's pid (a child of the test program that lives as long as it), 0 if none was started. */
pid_t tests_guard_pid(void);
/* The mount point of the cgroup2 hierarchy: /sys/fs/cgroup (unified), or /sys/fs/cgroup/unified
 * (the v2 half of a hybrid one); NULL if there is none. */
const char *tests_cgroup2_root(void);
/* The directory of the cgroup the test program runs in, NULL if the guard uses its process group. */
const char *tests_guard_cgroup(void);

/* A hook for testing the fixtures themselves: if $SECTREE_TEST_FAIL_AT is point, fail the test at
 * once (g_error()) with a message that names point and what (e.g. the pids just spawned); if it is
 * point:kill, print that message and SIGKILL the program, as the runner's timeout does in the end.
 * test-guard runs test programs so to show that nothing they started outlives them. */
void tests_fail_point(const char *point, const char *what);
