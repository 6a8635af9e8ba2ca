/* controller-end.c: the end of a restore, the executor's side: every task killed and reaped on a
 * failure; on a release, the parked tasks let go and waited for (controller.h) */
#include "controller.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"

#define RELEASE_GRACE_USEC (2 * 1000 * 1000)
#define REAP_DEADLINE_USEC (10 * 1000 * 1000)

/* Kill every child of this process (they are the restore's: it is a subreaper) and reap them,
 * until there are none. */
static void kill_and_reap_children(void) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + REAP_DEADLINE_USEC;
        char path[64];

        snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int) gettid());
        while (now_usec(CLOCK_MONOTONIC) < deadline) {
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                int pid;

                while (f && fscanf(f, "%d", &pid) == 1)
                        (void) kill(pid, SIGKILL);
                while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
                        ;
                if (waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD)
                        return;
                usleep(1000);
        }
        log_warning("Some processes of the restore could not be reaped.");
}

void controller_kill_all(Controller *c) {
        for (size_t pp = 0; pp < c->plan->n_processes; pp++)
                if (c->pidfds[pp] >= 0 && !c->gone[pp])
                        (void) pidfd_send_signal(c->pidfds[pp], SIGKILL, NULL, 0);
        kill_and_reap_children();
        for (size_t pp = 0; pp < c->plan->n_processes; pp++) {
                c->gone[pp] = true;
                close_fd(&c->pidfds[pp]);
        }
}

static bool execed(const Controller *c, size_t pp) {
        const PlanProcess *x = &c->plan->processes[pp];
        return x->exec != PLAN_NONE && c->next_step >= c->plan->n_steps;
}

static bool stub_waited(const Controller *c, size_t pp) {
        return c->pidfds[pp] >= 0 && !c->gone[pp] && !execed(c, pp);
}

static void kill_stubs_left(Controller *c) {
        for (size_t pp = 0; pp < c->plan->n_processes; pp++)
                if (stub_waited(c, pp))
                        (void) pidfd_send_signal(c->pidfds[pp], SIGKILL, NULL, 0);
}

/* Every stub's pidfd in one epoll set: each wake-up names the stubs that ended, so that waiting
 * for N stubs costs O(N) and not a poll of every one left each time (O(N²) as N stubs end one
 * after another). Returns the set, or -errno; *ret_left: how many stubs it waits for. */
static int stubs_epoll(Controller *c, size_t *ret_left) {
        _cleanup_close_ int epfd = epoll_create1(EPOLL_CLOEXEC);
        size_t left = 0;

        if (epfd < 0)
                return -errno;
        for (size_t pp = 0; pp < c->plan->n_processes; pp++) {
                struct epoll_event ev = { .events = EPOLLIN, .data.u64 = pp };
                if (!stub_waited(c, pp))
                        continue;
                if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->pidfds[pp], &ev) < 0)
                        return -errno;
                left++;
        }
        *ret_left = left;
        return TAKE_FD(epfd);
}

/* Wait until every stub is dead (its pidfd says so), killing what is left after a grace time. */
static void wait_stubs(Controller *c) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + RELEASE_GRACE_USEC;
        struct epoll_event events[256];
        bool killed = false;
        size_t left = 0;
        _cleanup_close_ int epfd = stubs_epoll(c, &left);

        if (epfd < 0) {
                log_warning_errno(epfd, "Cannot wait for the stubs of the restore: %m; killing them.");
                kill_stubs_left(c);
                return;
        }
        while (left > 0) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int n;

                if (now > deadline) {
                        if (killed) {
                                log_warning("Some parked tasks of the restore did not end.");
                                return;
                        }
                        kill_stubs_left(c);
                        killed = true;
                        deadline = now + REAP_DEADLINE_USEC;
                        continue;
                }
                n = epoll_wait(epfd, events, (int) ELEMENTSOF(events), (int) ((deadline - now) / 1000) + 1);
                if (n < 0 && errno != EINTR) {
                        log_warning_errno(-errno, "Cannot wait for the stubs of the restore: %m");
                        return;
                }
                for (int k = 0; k < n; k++) {
                        size_t pp = (size_t) events[k].data.u64;
                        if (c->gone[pp])
                                continue;
                        c->gone[pp] = true;
                        (void) epoll_ctl(epfd, EPOLL_CTL_DEL, c->pidfds[pp], NULL);
                        left--;
                }
        }
}

void controller_release(Controller *c) {
        if (c->shared) /* tasks parked in a sleep loop watch this, the others the control fd */
                __atomic_store_n(&c->shared->released, 1, __ATOMIC_RELEASE);
        close_fd(&c->control_w);
        wait_stubs(c);
        while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
                ;
        for (size_t pp = 0; pp < c->plan->n_processes; pp++)
                close_fd(&c->pidfds[pp]);
}
