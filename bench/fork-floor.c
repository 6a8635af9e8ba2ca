/* fork-floor.c: sectree-fork-floor, the floor of a restore: a tiny process that forks a flat tree of
 * processes of the restore's shape, with no filter or with one filter each, until every task is
 * there; what any restorer forked from a small process pays for the same tree */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "core/util.h"
#include "workload.h"

/*
 * sectree-fork-floor PROCESSES THREADS FILTER_LEN: fork PROCESSES children of THREADS tasks each
 * (leader included; threads on 64 KiB stacks, as the restore's), each child installing one filter
 * of FILTER_LEN instructions first (0: none), then saying so on a pipe and blocking. When every
 * child has said so, "ready" is written to stdout: that is the moment the caller times. Then the
 * children are ended and reaped, "ended MSEC" (how long that took) is written, and the process
 * exits.
 */

#define THREAD_STACK_SIZE (64U << 10)
#define MAX_THREADS 4096
#define MAX_PROCESSES 100000

static void *floor_thread(void *arg) {
        for (;;)
                pause();
        return NULL;
}

_Noreturn static void child_main(size_t threads, size_t filter_len, uint32_t salt, int fd) {
        pthread_attr_t attr;
        pthread_t t;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (filter_len > 0 && workload_install_filter(filter_len, salt) < 0)
                _exit(1);
        if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, THREAD_STACK_SIZE) != 0)
                _exit(1);
        for (size_t i = 1; i < threads; i++)
                if (pthread_create(&t, &attr, floor_thread, NULL) != 0)
                        _exit(1);
        if (write(fd, "x", 1) != 1)
                _exit(1);
        for (;;)
                pause();
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

/* Fork every child; wait until each has said it is there. */
static int fork_all(size_t processes, size_t threads, size_t filter_len) {
        size_t got = 0;
        char buf[512];
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        for (size_t i = 0; i < processes; i++) {
                pid_t c = fork();
                if (c < 0)
                        return log_error_errno(-errno, "Failed to fork child %zu: %m", i);
                if (c == 0)
                        child_main(threads, filter_len, (uint32_t) i, p[1]);
        }
        close(p[1]);
        while (got < processes) {
                ssize_t k = read(p[0], buf, sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return log_error_errno(-EIO, "Only %zu of %zu children came up.", got, processes);
                got += (size_t) k;
        }
        close(p[0]);
        return 0;
}

int main(int argc, char *argv[]) {
        size_t processes, threads, filter_len;
        int r;

        if (argc != 4 || parse_count(argv[1], 1, MAX_PROCESSES, &processes) < 0 ||
            parse_count(argv[2], 1, MAX_THREADS, &threads) < 0 || parse_count(argv[3], 0, 261, &filter_len) < 0 ||
            (filter_len > 0 && filter_len < 8)) {
                fprintf(stderr, "Usage: %s PROCESSES THREADS FILTER_LEN\n\nFork PROCESSES children of THREADS "
                        "tasks each, each installing one filter of FILTER_LEN (0: none, else 8-261) instructions; "
                        "print \"ready\" when all are there, then end them.\n", argv[0]);
                return argc == 2 && streq(argv[1], "--help") ? EXIT_SUCCESS : 2;
        }
        if (setpgid(0, 0) < 0)
                return log_error_errno(-errno, "Failed to get a process group of its own: %m"), EXIT_FAILURE;
        r = fork_all(processes, threads, filter_len);
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
