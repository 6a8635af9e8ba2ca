/* fork-floor.c: sectree-fork-floor, the floor of a restore: a tiny process that forks the tree of
 * the restore's shape, with no filter or with the workload's filters, until every task is there;
 * what any restorer forked from a small process pays for the same tree */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "core/util.h"
#include "workload.h"

/*
 * sectree-fork-floor TASKS THREADS FILTER_LEN: the workload's tree (bench/workload.h) of TASKS
 * tasks, this process its root (task 0): it forks the processes of THREADS tasks each (leader
 * included; threads on 64 KiB stacks, as the restore's) that hold tasks 1 to TASKS - 1. With a
 * FILTER_LEN (0: none), the filters are the workload's, the same work a restore of it does: the
 * root installs the shared filter before it forks (the processes inherit it), and every task of
 * an odd index installs a private one of its own. Each task says it is there on a pipe, then
 * blocks. When every task has, "ready" is written to stdout: that is the moment the caller times.
 * Then the processes are ended and reaped, "ended MSEC" (how long that took) is written, and the
 * process exits.
 */

#define THREAD_STACK_SIZE (64U << 10)
#define MAX_THREADS 4096
#define MAX_TASKS 1000000

typedef struct FloorTask {
        size_t index, filter_len;
        int fd;
} FloorTask;

/* Task a->index: its private filter if the workload gives it one, then "here", then block. */
static void task_run(const FloorTask *a) {
        if (a->filter_len > 0 && workload_task_has_private_filter(a->index) &&
            workload_install_filter(a->filter_len, (uint32_t) a->index) < 0)
                _exit(1);
        if (write(a->fd, "x", 1) != 1)
                _exit(1);
        for (;;)
                pause();
}

static int floor_thread(void *arg) {
        task_run(arg);
        return 0;
}

/* A process of tasks first .. first + n - 1: its threads first (so that they inherit only the
 * shared filter), then the leader becomes task first. The threads are raw clones, as a restore's
 * are: no robust list, rseq area or tid for the kernel to clear at their end, which glibc's threads
 * register; they call nothing of libc that keeps state (system call wrappers, errno only on an
 * error, which ends the process). Their stacks are carved from one mapping: a mapping of its own
 * (and a guard page) for each was two more mappings that the process's end tore down per thread. */
_Noreturn static void child_main(size_t first, size_t n, size_t filter_len, int fd) {
        static FloorTask tasks[MAX_THREADS];
        const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
        uint8_t *stacks = NULL;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (n > 1 && (stacks = mmap(NULL, (n - 1) * THREAD_STACK_SIZE, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0)) == MAP_FAILED)
                _exit(1);
        for (size_t i = 0; i < n; i++)
                tasks[i] = (FloorTask) { .index = first + i, .filter_len = filter_len, .fd = fd };
        for (size_t i = 1; i < n; i++) /* stack i - 1, from its top */
                if (clone(floor_thread, stacks + i * THREAD_STACK_SIZE, flags, &tasks[i]) < 0)
                        _exit(1);
        task_run(&tasks[0]);
        _exit(1);
}

static int parse_count(const char *s, size_t min, size_t max, size_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || end == s || *end || v < min || v > max)
                return -EINVAL;
        *ret = (size_t) v;
        return 0;
}

/* The shared filter, then every process; wait until each task has said it is there. */
static int fork_all(size_t n_tasks, size_t threads, size_t filter_len) {
        size_t got = 0;
        char buf[512];
        int p[2];

        if (filter_len > 0 && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || workload_install_filter(filter_len, 0) < 0))
                return log_error_errno(-errno, "Failed to install the shared filter: %m");
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        for (size_t first = 1; first < n_tasks; first += threads) {
                pid_t c = fork();
                if (c < 0)
                        return log_error_errno(-errno, "Failed to fork the process of task %zu: %m", first);
                if (c == 0)
                        child_main(first, MIN(threads, n_tasks - first), filter_len, p[1]);
        }
        close(p[1]);
        while (got < n_tasks - 1) {
                ssize_t k = read(p[0], buf, sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return log_error_errno(-EIO, "Only %zu of %zu tasks came up.", got, n_tasks - 1);
                got += (size_t) k;
        }
        close(p[0]);
        return 0;
}

int main(int argc, char *argv[]) {
        size_t n_tasks, threads, filter_len;
        int r;

        if (argc != 4 || parse_count(argv[1], 2, MAX_TASKS, &n_tasks) < 0 ||
            parse_count(argv[2], 1, MAX_THREADS, &threads) < 0 || parse_count(argv[3], 0, 261, &filter_len) < 0 ||
            (filter_len > 0 && filter_len < 8)) {
                fprintf(stderr, "Usage: %s TASKS THREADS FILTER_LEN\n\nBe the root of the benchmark workload's "
                        "tree of TASKS tasks (2 or more) in processes of THREADS tasks, with its filters of "
                        "FILTER_LEN (0: none, else 8-261) instructions; print \"ready\" when all are there, "
                        "then end them.\n", argv[0]);
                return argc == 2 && streq(argv[1], "--help") ? EXIT_SUCCESS : 2;
        }
        if (setpgid(0, 0) < 0)
                return log_error_errno(-errno, "Failed to get a process group of its own: %m"), EXIT_FAILURE;
        r = fork_all(n_tasks, threads, filter_len);
        if (r >= 0 && (write(STDOUT_FILENO, "ready\n", 6) != 6))
                r = -EIO;
        /* The children, all of this process group: SIGTERM's default ends them, this process ignores it.
         * How long they take to end and be reaped is the floor of a restore's release. */
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        (void) signal(SIGTERM, SIG_IGN);
        (void) kill(0, SIGTERM);
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                ;
        if (r >= 0)
                printf("ended %.3f\n", (double) (now_usec(CLOCK_MONOTONIC) - start) / 1000.0);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
