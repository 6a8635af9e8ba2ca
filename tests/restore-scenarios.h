/* restore-scenarios.h: the scenarios every restore test rebuilds, by name, and an independent
 * comparison of a restored tree with its snapshot */
#pragma once

#include <linux/filter.h>

#include "core/forest.h"
#include "plan/plan-verify.h"
#include "scenario.h"
#include "tests-util.h"

typedef void (*BuildScenario)(Scenario *s, const TestFilters *x);

typedef struct RestoreScenario {
        const char *name;
        BuildScenario build;
} RestoreScenario;

extern const RestoreScenario restore_scenarios[];
extern const size_t restore_scenarios_n;
/* How a builder may scan to check what it built (NULL: it does not check). */
extern Forest *(*restore_scenarios_scan)(pid_t root);

/* Independent of forest_isomorphic(): through the mapping, every restored thread of b has the
 * chain of its original in a, byte for byte and flag for flag, and two threads share a filter iff
 * their originals did. Fails the test otherwise. */
void restore_assert_same_sharing(const Forest *a, const Forest *b, const PlanMapping *map);

/* A filter: calls nrs[0..n) get action, everything else ALLOW. Returns its length (n + 3). */
size_t restore_filter_for_calls(struct sock_filter *insns, const int *nrs, size_t n, uint32_t action);
/* Whether pid is a live process (not gone, not a zombie). */
bool restore_process_alive(pid_t pid);
/* The real uid and gid of process pid. */
void restore_process_ids(pid_t pid, uid_t *ret_uid, gid_t *ret_gid);

/* A random history played on the real kernel from seed: fork, thread creation, installs (with
 * and without TSYNC, LOG, NEW_LISTENER), exits of middle processes and threads, strict mode,
 * no_new_privs. The same seed plays the same history. */
Scenario *restore_history_play(uint64_t seed);

/* The system calls the probes (test-restore-probe) make, one per process: ERRNO, USER_NOTIF, KILL,
 * ALLOW under the behaviour tests' filters. */
#define RESTORE_N_PROBE_CALLS 4
extern const int restore_probe_calls[RESTORE_N_PROBE_CALLS];
/* Wait up to 20 s for fd to be readable; fails the test otherwise. */
void restore_wait_readable(int fd, const char *what);
/* Answer the one notification coming on listener (for system call nr): the call returns 4242. */
void restore_answer_notification(int listener, int nr);
/* DIR/SIDE-I: where a probe writes what it saw. */
char *restore_probe_path(const char *dir, const char *side, size_t i);
