/* loadgen.c: the watch figure's generator process and its install-and-exit children */
#include "loadgen.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "workload.h"

#define NSEC_PER_SEC 1000000000ULL
#define CHILD_STACK_SIZE (64U << 10)

typedef struct Shared {
        atomic_size_t fork_failures;
        LoadSample samples[];
} Shared;

struct LoadGen {
        LoadGenOptions opts;
        size_t n;
        pid_t pid;
        Shared *shared;
        size_t shared_size;
};

static uint64_t monotonic_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void sleep_until(uint64_t nsec) {
        struct timespec ts = { .tv_sec = (time_t) (nsec / NSEC_PER_SEC), .tv_nsec = (long) (nsec % NSEC_PER_SEC) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

typedef struct ChildArgs {
        LoadSample *slot;
        size_t len, k;
} ChildArgs;

/* Child k: one filter, the time it took effect, exit. Salt k + 1: salt 0 is a workload's shared
 * filter. It runs on a stack of its own in the generator's memory (CLONE_VM), while the generator
 * waits (CLONE_VFORK), as posix_spawn() does: no page tables to copy, nothing to tear down. */
static int child_main(void *userdata) {
        const ChildArgs *a = userdata;
        uint64_t before = monotonic_nsec();
        int r = workload_install_filter(a->len, (uint32_t) (a->k + 1));
        uint64_t after = monotonic_nsec();

        a->slot->called_nsec = before;
        a->slot->installed_nsec = after;
        a->slot->error = r;
        a->slot->tid = gettid();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

_Noreturn static void generator_main(const LoadGen *g, pid_t parent) {
        Shared *s = g->shared;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(EXIT_FAILURE);
        (void) close_range(3, ~0U, 0); /* the benchmark's bus connections and BPF objects */
        (void) prctl(PR_SET_TIMERSLACK, 1UL);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(EXIT_FAILURE);
        signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */

        static uint8_t stack[CHILD_STACK_SIZE] __attribute__((aligned(16)));
        uint64_t start = monotonic_nsec();
        for (size_t k = 0; k < g->n; k++) {
                ChildArgs a = { .slot = &s->samples[k], .len = g->opts.filter_len, .k = k };
                sleep_until(start + (uint64_t) ((double) k * (double) NSEC_PER_SEC / g->opts.rate));
                /* Returns when the child has exited: one stack is enough. */
                if (clone(child_main, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &a) < 0)
                        atomic_fetch_add(&s->fork_failures, 1);
        }
        /* With SIGCHLD ignored, wait() returns when the last child has exited. */
        while (wait(NULL) > 0 || errno == EINTR)
                ;
        _exit(EXIT_SUCCESS);
}

int loadgen_start(const LoadGenOptions *o, LoadGen **ret) {
        _cleanup_(loadgen_freep) LoadGen *g = NULL;

        if (o->rate == 0 || o->seconds <= 0)
                return log_error_errno(-EINVAL, "Invalid load: %u events/s for %.1f s.", o->rate, o->seconds);
        g = calloc(1, sizeof(LoadGen));
        if (!g)
                return log_oom();
        g->opts = *o;
        g->n = (size_t) ((double) o->rate * o->seconds);
        if (g->n == 0)
                g->n = 1;
        g->shared_size = sizeof(Shared) + g->n * sizeof(LoadSample);
        g->shared = mmap(NULL, g->shared_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (g->shared == MAP_FAILED) {
                g->shared = NULL;
                return log_error_errno(-errno, "Failed to map the generator's slots: %m");
        }

        pid_t parent = getpid();
        fflush(NULL);
        g->pid = fork();
        if (g->pid < 0)
                return log_error_errno(-errno, "Failed to fork the load generator: %m");
        if (g->pid == 0)
                generator_main(g, parent);
        *ret = TAKE_PTR(g);
        return 0;
}

bool loadgen_done(LoadGen *g) {
        if (g->pid <= 0)
                return true;
        pid_t k = waitpid(g->pid, NULL, WNOHANG);
        if (k == g->pid || (k < 0 && errno == ECHILD)) {
                g->pid = 0;
                return true;
        }
        return false;
}

const LoadSample *loadgen_samples(const LoadGen *g, size_t *ret_n) {
        *ret_n = g->n;
        return g->shared->samples;
}

size_t loadgen_fork_failures(const LoadGen *g) {
        return atomic_load(&g->shared->fork_failures);
}

pid_t loadgen_pid(const LoadGen *g) {
        return g->pid;
}

LoadGen *loadgen_free(LoadGen *g) {
        if (!g)
                return NULL;
        if (g->pid > 0) {
                (void) kill(g->pid, SIGKILL);
                (void) waitpid(g->pid, NULL, 0);
        }
        if (g->shared)
                munmap(g->shared, g->shared_size);
        free(g);
        return NULL;
}
