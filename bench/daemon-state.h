/* daemon-state.h: whether the daemon's live state, as its bus API shows it, equals a fresh scan */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

/*
 * Chains are compared as test-daemon.c compares them: per thread, its mode and the digests of its
 * chain, newest first (ids differ between the daemon's scanner and a fresh one). The daemon's side
 * comes from ListFilters and ListTasks; the fresh side from a bpf scan of root's subtree, made by
 * the same code as `sectreed scan --root=ROOT` (bpf_scanner_new() + bpf_scanner_scan()), in this
 * process. Make no such comparison while something is being measured: the fresh scanner's
 * tracepoints run on every seccomp() of the machine while it exists.
 */

typedef struct StateDiff {
        size_t fresh_threads; /* threads of the fresh scan in strict or filter mode */
        size_t missing;       /* ... that the daemon does not list */
        size_t wrong;         /* ... that it lists with another chain */
        size_t stale;         /* threads known to be gone that it still lists */
        char why[240];        /* the first difference, "" when none */
} StateDiff;

static inline bool state_diff_equal(const StateDiff *d) {
        return d->missing == 0 && d->wrong == 0 && d->stale == 0;
}

/* Compare until they are equal or timeout_ms has passed (the daemon may still be applying
 * events). gone: tids that have exited. */
int daemon_state_converge(sd_bus *bus, pid_t root, const pid_t *gone, size_t n_gone, unsigned timeout_ms,
                          StateDiff *ret);
