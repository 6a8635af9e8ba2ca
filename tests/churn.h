/* churn.h: a generator of mixed seccomp churn for the live view's tests and benchmark: forks,
 * threads, TSYNC, exec, orphans, listeners opened and closed, as fast as it goes */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The churn root (forked from the caller, in a process group of its own, killed with the caller by
 * PR_SET_PDEATHSIG) is a child subreaper: it starts the workers and reaps whatever is reparented
 * to it. Each worker loops over six shapes, one child process each, all named CHURN_COMM:
 *   0. fork, install a filter, fork a grandchild that installs one on top, exit;
 *   1. a thread installs a filter with TSYNC and exits; the leader forks a child that installs one
 *      on top, and exits (the child lives on for a moment as an orphan);
 *   2. a thread installs a filter without TSYNC (the leader escaped it), then both exit;
 *   3. install a filter and exec /bin/true;
 *   4. install a filter, fork a grandchild and exit at once: the orphan installs one on top later;
 *   5. install a filter with a listener; close the listener fd, or exit with it open.
 * Every survive_every-th child (if not 0) stays alive after its shape instead of exiting (with its
 * threads, its listener fd if the shape left it open): churn_stop() leaves them, churn_free() kills
 * them. Successful installs are counted in memory shared with the caller.
 */

#define CHURN_COMM "stchurn"

typedef struct ChurnOptions {
        unsigned workers;       /* parallel loops, >= 1 */
        unsigned survive_every; /* every k-th child of a worker stays alive; 0: none */
        unsigned max_survivors; /* per worker; then none stays */
        size_t max_samples;     /* installs whose thread and time are kept (churn_samples()) */
} ChurnOptions;

/* One install: the thread that made it, and CLOCK_MONOTONIC right after seccomp(2) returned. */
typedef struct ChurnSample {
        pid_t tid;
        uint64_t nsec;
} ChurnSample;

typedef struct ChurnCounts {
        uint64_t installs;           /* seccomp(2) calls that installed a filter */
        uint64_t tsync;              /* of which with TSYNC */
        uint64_t listeners;          /* of which with a listener */
        uint64_t listeners_closed;   /* listener fds closed by their process, which lived on */
        uint64_t execs;              /* processes that exec'd after installing */
        uint64_t orphans;            /* processes whose parent exited before they installed */
        uint64_t children;           /* shapes run */
        uint64_t failures;           /* forks, threads or installs that failed */
} ChurnCounts;

typedef struct Churn Churn;

int churn_start(const ChurnOptions *o, Churn **ret);
pid_t churn_root(const Churn *c);
void churn_counts(const Churn *c, ChurnCounts *ret);
/* The first max_samples installs, in the order they were counted (not quite the order of their
 * times: workers race). */
const ChurnSample *churn_samples(const Churn *c, size_t *ret_n);
/* Stop the workers and wait until every child but the survivors has exited and been reaped. */
void churn_stop(Churn *c);
/* Kill the whole process group (survivors too), reap the root. Accepts NULL. */
Churn *churn_free(Churn *c);
