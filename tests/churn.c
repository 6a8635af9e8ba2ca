/* churn.c: see churn.h */
#include "churn.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define SHAPES 6
#define FILTER_PAD_MAX 13

typedef struct ChurnShared {
        ChurnCounts counts;
        int stop;
        int workers_running;
        int orphans_alive; /* orphans made and not exited yet */
        uint64_t n_samples, max_samples;
        ChurnSample samples[]; /* max_samples of them */
} ChurnShared;

struct Churn {
        pid_t root;
        ChurnShared *shared;
        size_t size;
};

static ChurnShared *shared; /* in the churn's processes */

static void count(uint64_t *c) {
        __atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

static uint64_t monotonic_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

/* A filter that returns ERRNO(errno_value) for acct(2) and allows the rest (pad: no-op loads, so
 * that filters differ in length too). */
static size_t filter_make(struct sock_filter *f, int errno_value, size_t pad) {
        size_t n = 0;
        f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (size_t i = 0; i < pad; i++)
                f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_acct, 0, 1);
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned) errno_value & SECCOMP_RET_DATA));
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        return n;
}

/* Install a filter of its own bytes (salt) on the calling thread: the listener fd, 0, or -errno. */
static int install(unsigned salt, unsigned flags) {
        struct sock_filter f[8 + FILTER_PAD_MAX];
        size_t n = filter_make(f, 1 + (int) (salt % 4000), salt % FILTER_PAD_MAX);
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
        long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
        uint64_t at = monotonic_nsec();
        if (r < 0) {
                count(&shared->counts.failures);
                return -errno;
        }
        uint64_t k = __atomic_fetch_add(&shared->n_samples, 1, __ATOMIC_RELAXED);
        if (k < shared->max_samples)
                shared->samples[k] = (ChurnSample) { .tid = (pid_t) syscall(SYS_gettid), .nsec = at };
        count(&shared->counts.installs);
        if (flags & SECCOMP_FILTER_FLAG_TSYNC)
                count(&shared->counts.tsync);
        if (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)
                count(&shared->counts.listeners);
        return (int) r;
}

static void nap_usec(long usec) {
        struct timespec ts = { .tv_sec = usec / 1000000, .tv_nsec = (usec % 1000000) * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* A child's end: a survivor stays (pause() allows its threads to stay too), the others exit. */
static _Noreturn void child_end(bool survive) {
        while (survive)
                pause();
        _exit(0);
}

/* A process that will outlive its parent: counted until it exits. */
static pid_t fork_orphan(unsigned salt) {
        __atomic_add_fetch(&shared->orphans_alive, 1, __ATOMIC_SEQ_CST);
        pid_t pid = fork();
        if (pid == 0) {
                nap_usec(500); /* its parent is gone by now, mostly */
                count(&shared->counts.orphans);
                (void) install(salt, 0);
                nap_usec(1000);
                __atomic_sub_fetch(&shared->orphans_alive, 1, __ATOMIC_SEQ_CST);
                _exit(0);
        }
        if (pid < 0) {
                __atomic_sub_fetch(&shared->orphans_alive, 1, __ATOMIC_SEQ_CST);
                count(&shared->counts.failures);
        }
        return pid;
}

typedef struct ThreadArg {
        unsigned salt, flags;
} ThreadArg;

static void *thread_install(void *p) {
        const ThreadArg *a = p;
        (void) install(a->salt, a->flags);
        return NULL;
}

/* A thread of the calling process installs a filter and exits. */
static void thread_installs(unsigned salt, unsigned flags) {
        ThreadArg a = { .salt = salt, .flags = flags };
        pthread_t t;
        if (pthread_create(&t, NULL, thread_install, &a) != 0) {
                count(&shared->counts.failures);
                return;
        }
        (void) pthread_join(t, NULL);
}

static void shape_nested(unsigned salt, bool survive) {
        (void) install(salt, 0);
        pid_t g = fork();
        if (g == 0) {
                (void) install(salt + 1, SECCOMP_FILTER_FLAG_LOG);
                _exit(0);
        }
        if (g > 0)
                (void) waitpid(g, NULL, 0);
        child_end(survive);
}

static void shape_tsync_then_orphan(unsigned salt, bool survive) {
        thread_installs(salt, SECCOMP_FILTER_FLAG_TSYNC);
        (void) fork_orphan(salt + 1);
        child_end(survive);
}

static void shape_escaped(unsigned salt, bool survive) {
        thread_installs(salt, 0);
        child_end(survive);
}

static void shape_exec(unsigned salt, bool survive) {
        (void) install(salt, 0);
        count(&shared->counts.execs);
        if (survive)
                execl("/bin/sleep", "sleep", "100000", (char *) NULL);
        else
                execl("/bin/true", "true", (char *) NULL);
        _exit(127);
}

static void shape_orphan(unsigned salt, bool survive) {
        (void) install(salt, 0);
        (void) fork_orphan(salt + 1);
        child_end(survive);
}

static void shape_listener(unsigned salt, bool survive) {
        int fd = install(salt, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        if (fd > 0 && salt % 2 == 0) {
                close(fd);
                count(&shared->counts.listeners_closed);
                (void) install(salt + 1, 0);
        }
        child_end(survive);
}

static void (*const shapes[SHAPES])(unsigned salt, bool survive) = {
        shape_nested, shape_tsync_then_orphan, shape_escaped, shape_exec, shape_orphan, shape_listener,
};

static _Noreturn void worker_main(unsigned w, const ChurnOptions *o) {
        unsigned survivors = 0;
        for (unsigned k = 0; !__atomic_load_n(&shared->stop, __ATOMIC_RELAXED); k++) {
                bool survive = o->survive_every && k % o->survive_every == o->survive_every - 1 &&
                               survivors < o->max_survivors;
                unsigned salt = w * 1000003U + k * 2;
                pid_t pid = fork();
                if (pid == 0) {
                        (void) prctl(PR_SET_NAME, CHURN_COMM);
                        (void) prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                        shapes[k % SHAPES](salt, survive);
                        _exit(0);
                }
                if (pid < 0) {
                        count(&shared->counts.failures);
                        nap_usec(1000);
                        continue;
                }
                count(&shared->counts.children);
                if (survive)
                        survivors++;
                else
                        (void) waitpid(pid, NULL, 0);
        }
        __atomic_sub_fetch(&shared->workers_running, 1, __ATOMIC_SEQ_CST);
        _exit(0);
}

static _Noreturn void root_main(const ChurnOptions *o) {
        (void) setpgid(0, 0);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        (void) prctl(PR_SET_NAME, "stchurn-root");
        for (unsigned w = 0; w < o->workers; w++) {
                pid_t pid = fork();
                if (pid == 0)
                        worker_main(w, o);
                if (pid < 0)
                        __atomic_sub_fetch(&shared->workers_running, 1, __ATOMIC_SEQ_CST);
        }
        for (;;)
                if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
                        pause(); /* nothing to reap: wait to be killed */
}

int churn_start(const ChurnOptions *o, Churn **ret) {
        Churn *c = calloc(1, sizeof(Churn));
        if (!c)
                return -ENOMEM;
        c->size = sizeof(ChurnShared) + o->max_samples * sizeof(ChurnSample);
        c->shared = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (c->shared == MAP_FAILED) {
                free(c);
                return -errno;
        }
        c->shared->workers_running = (int) o->workers;
        c->shared->max_samples = o->max_samples;
        shared = c->shared;
        c->root = fork();
        if (c->root == 0)
                root_main(o);
        if (c->root < 0) {
                int r = -errno;
                munmap(c->shared, c->size);
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

pid_t churn_root(const Churn *c) {
        return c->root;
}

void churn_counts(const Churn *c, ChurnCounts *ret) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        *ret = c->shared->counts;
}

const ChurnSample *churn_samples(const Churn *c, size_t *ret_n) {
        uint64_t n = __atomic_load_n(&c->shared->n_samples, __ATOMIC_SEQ_CST);
        *ret_n = n < c->shared->max_samples ? n : c->shared->max_samples;
        return c->shared->samples;
}

void churn_stop(Churn *c) {
        __atomic_store_n(&c->shared->stop, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&c->shared->workers_running, __ATOMIC_SEQ_CST) > 0 ||
               __atomic_load_n(&c->shared->orphans_alive, __ATOMIC_SEQ_CST) > 0)
                nap_usec(2000);
        nap_usec(100 * 1000); /* the last of them between their count and their exit, and reaped */
}

Churn *churn_free(Churn *c) {
        if (!c)
                return NULL;
        (void) kill(-c->root, SIGKILL);
        (void) kill(c->root, SIGKILL);
        (void) waitpid(c->root, NULL, 0);
        munmap(c->shared, c->size);
        free(c);
        return NULL;
}
