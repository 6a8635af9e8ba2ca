/* loadgen.h: a load generator for the watch figure: filters installed at a fixed rate, each by a
 * child process that records when seccomp() returned and exits */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/util.h"

/*
 * A generator process (forked from the benchmark, dying with it) with no_new_privs and no filter
 * of its own starts child k at start + k / rate (CLOCK_MONOTONIC, absolute sleeps: an open loop
 * that catches up when it falls behind, it never skips), as a new process sharing its memory
 * until it exits (clone(CLONE_VM | CLONE_VFORK), as posix_spawn() does), so that the generator
 * stays cheap next to the daemon it loads. Child k installs a root filter of
 * filter_len instructions (different bytes for every k), reads CLOCK_MONOTONIC right before
 * and right after seccomp(), writes it with its tid into slot k of a shared mapping, and exits. So every
 * event is a fork, a filter attached and an exit. The generator reaps its children itself
 * (SIGCHLD ignored) and exits when all of them have.
 */

typedef struct LoadSample {
        pid_t tid;               /* 0: the child never ran (fork failed) */
        int error;               /* negative errno of seccomp(), 0 on success */
        uint64_t called_nsec;    /* CLOCK_MONOTONIC right before seccomp() was called */
        uint64_t installed_nsec; /* ... and right after it returned */
} LoadSample;

typedef struct LoadGenOptions {
        unsigned rate;      /* events per second */
        double seconds;     /* how long */
        size_t filter_len;  /* instructions per filter */
} LoadGenOptions;

typedef struct LoadGen LoadGen;

int loadgen_start(const LoadGenOptions *o, LoadGen **ret);
/* Reap the generator if it has exited: true once it has (with all of its children). */
bool loadgen_done(LoadGen *g);
/* The slots, one per planned event; valid once done. */
const LoadSample *loadgen_samples(const LoadGen *g, size_t *ret_n);
/* Forks that failed (the rate the machine could not take). */
size_t loadgen_fork_failures(const LoadGen *g);
pid_t loadgen_pid(const LoadGen *g);
/* Kill the generator if it still runs, reap it, unmap. Accepts NULL. */
LoadGen *loadgen_free(LoadGen *g);
DEFINE_CLEANUP(LoadGen *, loadgen_free);
