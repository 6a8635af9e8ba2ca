/* controller.c: the executor's side of a restore: fork the restore root, hand every task its
 * steps one at a time through the shared memory, take pidfds and listener copies as the tasks
 * appear, and end them all on a failure or a release */
#include "controller.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "core/util.h"
#include "ns-find.h"
#include "runtime-image.h"

struct rlimit controller_nofile;
bool controller_nofile_saved;

#define POLL_MSEC 100
#define GAP_POLL_MSEC 1 /* a task is between claiming its entry in the log and writing it */
#define EXEC_SETTLE_USEC (200 * 1000)

static int *new_fd_array(size_t n) {
        int *v = calloc(n ?: 1, sizeof(int));

        for (size_t i = 0; v && i < n; i++)
                v[i] = -1;
        return v;
}

/* The memory shared with the tasks (their slots), then the image of the plan they read, in one
 * memfd; mapped here read-write. */
static int make_memory(Controller *c, char *const *exec_paths, bool stdio, int *ret_memfd) {
        const Plan *p = c->plan;
        long page = sysconf(_SC_PAGESIZE);
        size_t image_size, slots = runtime_shared_size(p->n_tasks, p->n_steps);
        _cleanup_close_ int memfd = -1;
        int r = runtime_image_size(p, exec_paths, &image_size);

        if (r < 0)
                return log_error_errno(r, "The plan is too large for the runtime's image: %m");
        c->shared_size = (slots + (size_t) page - 1) / (size_t) page * (size_t) page;
        c->memory_size = c->shared_size + image_size;
        memfd = memfd_create("sectree-restore", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (memfd < 0 || ftruncate(memfd, (off_t) c->memory_size) < 0 ||
            fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
                return log_error_errno(-errno, "Failed to make the memory shared with the tasks: %m");
        c->shared = mmap(NULL, c->memory_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
        if (c->shared == MAP_FAILED) {
                c->shared = NULL;
                return log_error_errno(-errno, "Failed to map the memory shared with the tasks: %m");
        }
        c->shared->n_slots = (uint32_t) p->n_tasks;
        c->shared->n_steps = (uint32_t) p->n_steps;
        runtime_image_write(p, exec_paths, stdio, (uint8_t *) c->shared + c->shared_size, image_size);
        *ret_memfd = TAKE_FD(memfd);
        return 0;
}

/* Take over the root: its pid and pidfd as process 0's, the executor's ends of its descriptors. */
static void take_root(Controller *c, RestoreRoot *root) {
        c->pids[0] = root->pid;
        c->tids[c->plan->processes[0].leader] = root->pid;
        c->pidfds[0] = TAKE_FD(root->pidfd);
        c->report_fd = TAKE_FD(root->report_fd);
        c->control_w = TAKE_FD(root->control_w);
        c->handoff_e = TAKE_FD(root->handoff_e);
        root->pid = 0;
}

int controller_init(Controller *c, const Plan *plan, uint64_t step_timeout_usec, RestoreRoot *root,
                    char *const *exec_paths, const int stdio[3]) {
        const Plan *p = plan;
        _cleanup_close_ int memfd = -1;
        int r;

        *c = (Controller) { .plan = plan, .step_timeout_usec = step_timeout_usec, .report_fd = -1, .control_w = -1,
                            .handoff_e = -1, .stdio = { -1, -1, -1 }, .failed_step = SIZE_MAX };
        if (stdio && stdio[0] >= 0)
                memcpy(c->stdio, stdio, sizeof(c->stdio));
        c->pids = calloc(p->n_processes, sizeof(pid_t));
        c->gone = calloc(p->n_processes, sizeof(bool));
        c->tids = calloc(p->n_tasks, sizeof(pid_t));
        c->pidfds = new_fd_array(p->n_processes);
        c->install_fd = new_fd_array(p->n_tasks);
        c->listener_fds = new_fd_array(p->snapshot->n_listeners);
        c->filter_listener_fds = new_fd_array(p->snapshot->n_filters);
        if (!c->pids || !c->gone || !c->tids || !c->pidfds || !c->install_fd || !c->listener_fds ||
            !c->filter_listener_fds)
                return log_oom();
        r = make_memory(c, exec_paths, c->stdio[0] >= 0, &memfd);
        if (r < 0)
                return r;
        r = restore_root_hand(root, memfd, c->shared_size, c->memory_size);
        if (r < 0)
                return log_error_errno(r, "Failed to hand the restore root its memory: %m");
        take_root(c, root);
        return 0;
}

void controller_done(Controller *c) {
        const Plan *p = c->plan;

        for (size_t i = 0; c->pidfds && i < p->n_processes; i++)
                close_fd(&c->pidfds[i]);
        for (size_t i = 0; c->listener_fds && i < p->snapshot->n_listeners; i++)
                close_fd(&c->listener_fds[i]);
        for (size_t i = 0; c->filter_listener_fds && i < p->snapshot->n_filters; i++)
                close_fd(&c->filter_listener_fds[i]);
        close_fd(&c->report_fd);
        close_fd(&c->control_w);
        close_fd(&c->handoff_e);
        if (c->shared)
                munmap(c->shared, c->memory_size);
        free(c->pids);
        free(c->gone);
        free(c->tids);
        free(c->pidfds);
        free(c->install_fd);
        free(c->listener_fds);
        free(c->filter_listener_fds);
        free(c->failure);
        c->shared = NULL;
}

void controller_heartbeat(Controller *c) {
        if (c->shared)
                __atomic_add_fetch(&c->shared->heartbeat, 1, __ATOMIC_RELAXED);
}

_printf_(4, 5) static int fail(Controller *c, size_t step, int error, const char *format, ...) {
        va_list ap;

        c->failed_step = step;
        c->failed_errno = error < 0 ? -error : error;
        free(c->failure);
        va_start(ap, format);
        if (vasprintf(&c->failure, format, ap) < 0)
                c->failure = NULL;
        va_end(ap);
        return error < 0 ? error : -error;
}

/* ---- one step ---- */

/* The state letter of /proc/PID/task/TID/stat, 0 if it is gone. */
static char thread_state(pid_t pid, pid_t tid) {
        char path[64], buf[512], *p;
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
                return 0;
        buf[n] = 0;
        p = strrchr(buf, ')');
        return p && p[1] == ' ' ? p[2] : 0;
}

/* "exited with status 3" / "was killed by SIGSYS" from /proc/PID/stat (field 52, exit_code) of a
 * process that is a zombie, or NULL. */
static char *death_of(pid_t pid) {
        char path[64], buf[2048], *p, *out = NULL;
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int field = 2, code;

        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
                return NULL;
        buf[n] = 0;
        p = strrchr(buf, ')');
        for (; p && field < 52; field++)
                p = strchr(p + 1, ' ');
        if (!p || sscanf(p + 1, "%d", &code) != 1)
                return NULL;
        if (WIFSIGNALED(code))
                (void) !asprintf(&out, "was killed by SIG%s%s", sigabbrev_np(WTERMSIG(code)) ?: "?",
                                 WTERMSIG(code) == SIGSYS ? " (a filter's KILL action)" : "");
        else
                (void) !asprintf(&out, "exited with status %d", WEXITSTATUS(code));
        return out;
}

static int task_died(Controller *c, size_t i) {
        const PlanStep *st = &c->plan->steps[i];
        size_t pp = c->plan->tasks[st->task].process;
        _cleanup_free_ char *what = plan_step_describe(c->plan, i), *how = death_of(c->pids[pp]);

        return fail(c, i, -ESRCH, "step %zu (%s): its process %d %s", i, what ?: "?", c->pids[pp],
                    how ?: "ended");
}

static RuntimeStepState *state_of(Controller *c, size_t i) {
        return &runtime_shared_steps(c->shared)[i];
}

static bool step_done(Controller *c, size_t i) {
        return __atomic_load_n(&state_of(c, i)->done, __ATOMIC_ACQUIRE) == 1;
}

/* Hand the listener copy over the handoff socket, for the receive step that follows. */
static int send_listener(Controller *c, size_t i) {
        const PlanStep *st = &c->plan->steps[i];
        int fd = c->listener_fds[st->listener];
        char control[CMSG_SPACE(sizeof(int))] = {}, byte = 'L';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

        if (fd < 0)
                return fail(c, i, -EBADF, "step %zu: the executor holds no copy of listener %" PRIu64, i,
                            c->plan->snapshot->listeners[st->listener]->id);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        if (sendmsg(c->handoff_e, &mh, MSG_NOSIGNAL) < 0)
                return fail(c, i, -errno, "step %zu: sending the listener fd failed", i);
        return 0;
}

static int before_step(Controller *c, size_t i) {
        const PlanStep *st = &c->plan->steps[i];
        RuntimeStepState *s = state_of(c, i);

        switch (st->op) {
        case PLAN_OP_KEEP_LISTENER:
                s->arg = c->install_fd[st->task];
                return 0;
        case PLAN_OP_REAP: /* the task waits for it by its pid in its own namespace */
                s->arg = c->plan->options.pid_namespace ? c->plan->tasks[c->plan->processes[st->target].leader].ns_tid
                                                         : c->pids[st->target];
                return 0;
        case PLAN_OP_RECEIVE_LISTENER:
                return send_listener(c, i);
        default:
                return 0;
        }
}

/* ---- the restore's own pid namespace ---- */

/* What a spawn step made, as the executor names it: in the restore's pid namespace the task
 * reports the new task's tid there, and the executor finds it by its NSpid. */
static int spawned_tid(Controller *c, size_t i, pid_t value, pid_t *ret) {
        const PlanStep *st = &c->plan->steps[i];
        size_t spawner = c->plan->tasks[st->task].process, parent = spawner;
        pid_t tid;

        if (!c->plan->options.pid_namespace) {
                *ret = value;
                return 0;
        }
        if (st->op == PLAN_OP_SPAWN_THREAD)
                tid = ns_find_thread(c->pids[spawner], value);
        else {
                if (st->arg) /* CLONE_PARENT: a child of the spawner's parent */
                        parent = c->plan->processes[spawner].parent;
                tid = parent == PLAN_NONE ? 0 : ns_find_child(c->pids[parent], value);
        }
        if (tid <= 0)
                return fail(c, i, -ESRCH, "step %zu: the new task with tid %d in the restore's pid namespace was not found",
                            i, value);
        *ret = tid;
        return 0;
}

static int after_spawn_process(Controller *c, size_t i, pid_t value) {
        size_t t = c->plan->steps[i].target, pp = c->plan->tasks[t].process;
        pid_t pid;
        int r = spawned_tid(c, i, value, &pid);

        if (r < 0)
                return r;
        c->pids[pp] = pid;
        c->tids[t] = pid;
        c->pidfds[pp] = pidfd_open(pid, 0);
        if (c->pidfds[pp] < 0)
                return fail(c, i, -errno, "step %zu: pidfd_open(%d) failed", i, pid);
        return 0;
}

/* The executor's own copy of a new listener, taken before the installer moves or closes its fd. */
static int after_install(Controller *c, size_t i, int fd) {
        const PlanStep *st = &c->plan->steps[i];
        int copy, *slot;

        c->install_fd[st->task] = fd;
        if (!(st->flags & PLAN_INSTALL_NEW_LISTENER) || !st->filter->has_listener)
                return 0;
        copy = (int) syscall(SYS_pidfd_getfd, c->pidfds[c->plan->tasks[st->task].process], fd, 0);
        if (copy < 0)
                return fail(c, i, -errno, "step %zu: pidfd_getfd() of the new listener fd %d failed", i, fd);
        slot = st->listener != PLAN_NONE ? &c->listener_fds[st->listener] : &c->filter_listener_fds[st->filter->index];
        close_fd(slot);
        *slot = copy;
        return 0;
}

/* A helper thread has reported its exit: wait until the kernel has dropped it (a leader stays as
 * a zombie while its process lives on; scans leave those out). */
static int after_thread_exit(Controller *c, size_t i) {
        size_t t = c->plan->steps[i].task;
        pid_t pid = c->pids[c->plan->tasks[t].process], tid = c->tids[t];
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + c->step_timeout_usec;

        for (;;) {
                char state = thread_state(pid, tid);
                if (state == 0 || state == 'Z' || state == 'X')
                        return 0;
                if (now_usec(CLOCK_MONOTONIC) > deadline)
                        return fail(c, i, -ETIMEDOUT, "step %zu: helper thread %d did not go away", i, tid);
                usleep(100);
                controller_heartbeat(c);
        }
}

static int after_step(Controller *c, size_t i) {
        const PlanStep *st = &c->plan->steps[i];
        const RuntimeStepState *s = state_of(c, i);
        const PlanProcess *proc = &c->plan->processes[c->plan->tasks[st->task].process];

        switch (st->op) {
        case PLAN_OP_SPAWN_PROCESS:
                return after_spawn_process(c, i, s->value);
        case PLAN_OP_SPAWN_THREAD:
                return spawned_tid(c, i, s->value, &c->tids[st->target]);
        case PLAN_OP_INSTALL:
                return after_install(c, i, s->value);
        case PLAN_OP_EXIT:
                if (proc->kind != PLAN_PROCESS_HELPER)
                        return after_thread_exit(c, i);
                return 0;
        case PLAN_OP_REAP:
                c->gone[st->target] = true;
                close_fd(&c->pidfds[st->target]);
                return 0;
        default:
                return 0;
        }
}

/* Let step i run in its task (the task's steps are issued in the plan's order). */
static void issue(Controller *c, size_t i) {
        RuntimeSlot *s = &c->shared->slots[c->plan->steps[i].task];

        __atomic_store_n(&s->go, (uint32_t) i + 1, __ATOMIC_RELEASE);
        (void) syscall(SYS_futex, &s->go, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static int step_failed(Controller *c, size_t i) {
        const RuntimeStepState *s = state_of(c, i);
        _cleanup_free_ char *what = plan_step_describe(c->plan, i);

        c->failed_call = s->call;
        return fail(c, i, s->result, "step %zu (%s) failed: %s(2): %s", i, what ?: "?",
                    runtime_call_to_string(s->call) ?: "?", strerror(-s->result));
}

/* ---- running the steps, many at once ---- */

/* Steps of different processes commute, except those that change or use what processes share:
 * reparenting (subreaper bits, helper processes and their reaping) and the handoff socket. The
 * scheduler runs the steps of one process in the plan's order, a task's first step after the step
 * that made it (or with it: runs_before_known()), and a barrier step alone, after every step before
 * it. */
/* A task may run this many of its steps ahead of the executor, as the window issues them (a restore
 * root forking thousands of processes should not wait for the executor when it is slow to be
 * scheduled). Each wake-up of
 * the executor looks at the steps of the window that are not issued yet: a window that grew with
 * the plan made that cost grow with N per step. */
#define MAX_IN_FLIGHT 1024
/* ... and the steps chained beyond it (issue_chained()): the first steps of the processes those
 * forks make, issued with them. */
#define MAX_CHAINED 4096
#define MAX_ALL_IN_FLIGHT (MAX_IN_FLIGHT + MAX_CHAINED)
#define WINDOW 1024

typedef struct Schedule {
        size_t *prev;     /* per step: the step before it in the same process, SIZE_MAX */
        size_t *made_by;  /* per task: the step that creates it, SIZE_MAX for the restore root's */
        size_t *first;    /* per task: its first step, SIZE_MAX */
        bool *issued, *done;
        size_t *next;     /* per step: the next step of the same task, SIZE_MAX */
        size_t *barriers; /* the barrier steps, in order */
        size_t n_barriers, barrier; /* barriers[barrier]: the first one not done */
        size_t *chained;  /* steps to look at beyond the window (issue_chained()) */
        size_t n_chained;
        uint64_t *started; /* per step: when it was issued (CLOCK_MONOTONIC µs) */
        size_t in_flight[MAX_ALL_IN_FLIGHT];
        size_t n_in_flight;
        size_t *at;       /* per step: its position in in_flight, SIZE_MAX when not there */
        size_t log_read;  /* the entries of the shared log of finished steps taken in */
        bool log_gap;     /* the reading stopped at an entry claimed but not written yet */
        bool *by_window;  /* per step: issued by the window (else chained) */
        size_t n_window_in_flight; /* of those in flight: at most MAX_IN_FLIGHT */
        size_t finished[MAX_ALL_IN_FLIGHT]; /* collect(): the steps that finished, in the plan's order */
        size_t lo;        /* every step before it is done */
        size_t unissued;  /* every step before it is issued (>= lo) */
} Schedule;

static void schedule_done(Schedule *sc) {
        free(sc->prev);
        free(sc->made_by);
        free(sc->first);
        free(sc->barriers);
        free(sc->chained);
        free(sc->by_window);
        free(sc->at);
        free(sc->issued);
        free(sc->done);
        free(sc->next);
        free(sc->started);
}

static bool is_barrier(const Plan *p, const PlanStep *st) {
        size_t target_process = st->op == PLAN_OP_SPAWN_PROCESS ? p->tasks[st->target].process : PLAN_NONE;

        return st->op == PLAN_OP_SET_SUBREAPER || st->op == PLAN_OP_REAP || st->op == PLAN_OP_RECEIVE_LISTENER ||
               p->processes[p->tasks[st->task].process].kind == PLAN_PROCESS_HELPER ||
               (target_process != PLAN_NONE && p->processes[target_process].kind == PLAN_PROCESS_HELPER);
}

static int schedule_init(Schedule *sc, const Plan *p) {
        _cleanup_free_ size_t *last = calloc(p->n_processes ?: 1, sizeof(size_t));

        *sc = (Schedule) {};
        sc->prev = calloc(p->n_steps ?: 1, sizeof(size_t));
        sc->made_by = calloc(p->n_tasks ?: 1, sizeof(size_t));
        sc->first = calloc(p->n_tasks ?: 1, sizeof(size_t));
        sc->barriers = calloc(p->n_steps ?: 1, sizeof(size_t));
        sc->chained = calloc(MAX_CHAINED, sizeof(size_t));
        sc->by_window = calloc(p->n_steps ?: 1, sizeof(bool));
        sc->at = calloc(p->n_steps ?: 1, sizeof(size_t));
        sc->issued = calloc(p->n_steps ?: 1, sizeof(bool));
        sc->done = calloc(p->n_steps ?: 1, sizeof(bool));
        sc->next = calloc(p->n_steps ?: 1, sizeof(size_t));
        sc->started = calloc(p->n_steps ?: 1, sizeof(uint64_t));
        if (!last || !sc->prev || !sc->made_by || !sc->first || !sc->barriers || !sc->chained || !sc->by_window || !sc->at || !sc->issued ||
            !sc->done || !sc->next || !sc->started)
                return log_oom();
        for (size_t i = 0; i < p->n_processes; i++)
                last[i] = SIZE_MAX;
        for (size_t t = 0; t < p->n_tasks; t++)
                sc->made_by[t] = sc->first[t] = SIZE_MAX;
        for (size_t i = 0; i < p->n_steps; i++)
                sc->next[i] = sc->at[i] = SIZE_MAX;
        for (size_t i = 0; i < p->n_steps; i++) {
                const PlanStep *st = &p->steps[i];
                size_t pp = p->tasks[st->task].process;
                sc->prev[i] = last[pp];
                if (last[pp] != SIZE_MAX && p->steps[last[pp]].task == st->task)
                        sc->next[last[pp]] = i;
                last[pp] = i;
                if (st->op == PLAN_OP_SPAWN_THREAD || st->op == PLAN_OP_SPAWN_PROCESS)
                        sc->made_by[st->target] = i;
                if (sc->first[st->task] == SIZE_MAX)
                        sc->first[st->task] = i;
                if (is_barrier(p, st))
                        sc->barriers[sc->n_barriers++] = i;
        }
        return 0;
}

static bool dep_done(const Schedule *sc, size_t dep) {
        return dep == SIZE_MAX || sc->done[dep];
}

/* Steps whose issue or completion the executor acts on (before_step(), after_step()). */
static bool executor_acts_before(const PlanStep *st) {
        return st->op == PLAN_OP_KEEP_LISTENER || st->op == PLAN_OP_REAP || st->op == PLAN_OP_RECEIVE_LISTENER;
}

static bool executor_acts_after(const PlanStep *st) {
        return (st->op == PLAN_OP_INSTALL && (st->flags & PLAN_INSTALL_NEW_LISTENER)) || st->op == PLAN_OP_EXIT ||
               st->op == PLAN_OP_REAP;
}

/* May step i be issued while the step before it in its process is still in flight? When that
 * step is the same task's, the task runs both in order without waiting for the executor in
 * between (a task that forks a thousand processes forks them back to back), unless the executor
 * must act between the two, or either is a barrier. */
static bool may_run_ahead(const Plan *p, const Schedule *sc, size_t i) {
        size_t prev = sc->prev[i];
        const PlanStep *st = &p->steps[i], *before = prev == SIZE_MAX ? NULL : &p->steps[prev];

        return before && sc->issued[prev] && before->task == st->task && !executor_acts_before(st) &&
               !executor_acts_after(before) && !is_barrier(p, before);
}

/* Step i now. */
static void issue_step(Controller *c, Schedule *sc, size_t i, bool by_window) {
        sc->issued[i] = true;
        sc->by_window[i] = by_window;
        sc->n_window_in_flight += by_window;
        issue(c, i);
        sc->started[i] = now_usec(CLOCK_MONOTONIC);
        sc->at[i] = sc->n_in_flight;
        sc->in_flight[sc->n_in_flight++] = i;
}

/* Look at step i beyond the window, once the step before it in its task is issued or done, or
 * the step that makes its task is done. */
static void chain(Schedule *sc, size_t i) {
        if (i != SIZE_MAX && !sc->issued[i] && sc->n_chained < MAX_CHAINED)
                sc->chained[sc->n_chained++] = i; /* else the window takes it when it gets there */
}

/* Steps a new process may run before the executor has taken in the fork that made it (its pid,
 * its pidfd): after them the executor does nothing that needs either (after_step()). */
static bool runs_before_known(const PlanStep *st) {
        switch (st->op) {
        case PLAN_OP_SET_COMM:
        case PLAN_OP_SET_NO_NEW_PRIVS:
        case PLAN_OP_FILL:
        case PLAN_OP_PARK:
                return true;
        case PLAN_OP_INSTALL:
                return !(st->flags & PLAN_INSTALL_NEW_LISTENER);
        default:
                return false;
        }
}

/* Is step i's task there to run it? Made, or being made by a fork already issued, for the first
 * steps of a process that need nothing of the executor: the child runs them as soon as it is
 * there, without waiting to be woken once the executor has taken in the fork. */
static bool task_made(const Plan *p, const Schedule *sc, size_t i) {
        size_t m = sc->made_by[p->steps[i].task];

        return dep_done(sc, m) ||
               (sc->issued[m] && p->steps[m].op == PLAN_OP_SPAWN_PROCESS && runs_before_known(&p->steps[i]));
}

/* May step i, outside the window, be issued now? As in the window (its process's order, its
 * task made), and before every barrier not done yet; a step the executor acts on before it is
 * left to the window. */
static bool may_issue_chained(const Plan *p, const Schedule *sc, size_t i, size_t end) {
        const PlanStep *st = &p->steps[i];

        return !sc->issued[i] && i < end && (sc->barrier >= sc->n_barriers || i < sc->barriers[sc->barrier]) &&
               !is_barrier(p, st) && !executor_acts_before(st) && task_made(p, sc, i) &&
               (dep_done(sc, sc->prev[i]) || may_run_ahead(p, sc, i));
}

/* The window is the next WINDOW steps of the plan; a task whose next steps lie further on (a
 * process forked early whose own steps the plan lists after those of every other) would wait for
 * the window to reach them, and be woken once more for each. The steps chained to an issued or
 * finished step are issued at once when they may run, wherever they are. */
static void issue_chained(Controller *c, Schedule *sc, size_t end) {
        while (sc->n_chained > 0 && sc->n_in_flight < MAX_ALL_IN_FLIGHT) {
                size_t i = sc->chained[--sc->n_chained];

                if (!may_issue_chained(c->plan, sc, i, end))
                        continue;
                issue_step(c, sc, i, false);
                chain(sc, sc->next[i]);
                if (c->plan->steps[i].op == PLAN_OP_SPAWN_PROCESS)
                        chain(sc, sc->first[c->plan->steps[i].target]);
        }
        sc->n_chained = 0;
}

/* Issue every step of the window that may run now, in the plan's order, up to a barrier that may
 * not. */
static int issue_window(Controller *c, Schedule *sc, size_t end) {
        const Plan *p = c->plan;

        if (sc->unissued < sc->lo)
                sc->unissued = sc->lo;
        while (sc->unissued < end && sc->issued[sc->unissued])
                sc->unissued++;
        for (size_t i = sc->unissued; i < end && i < sc->lo + WINDOW && sc->n_window_in_flight < MAX_IN_FLIGHT &&
                                      sc->n_in_flight < MAX_ALL_IN_FLIGHT;
             i++) {
                const PlanStep *st = &p->steps[i];
                bool barrier;
                int r;

                if (sc->issued[i])
                        continue;
                barrier = is_barrier(p, st);
                if (barrier && (i != sc->lo || sc->n_in_flight > 0))
                        return 0; /* it runs alone, after everything before it */
                if (!dep_done(sc, sc->made_by[st->task]) ||
                    (!dep_done(sc, sc->prev[i]) && !may_run_ahead(p, sc, i)))
                        continue;
                r = before_step(c, i);
                if (r < 0)
                        return r;
                issue_step(c, sc, i, true);
                if (barrier)
                        return 0;
                chain(sc, sc->next[i]);
                if (st->op == PLAN_OP_SPAWN_PROCESS)
                        chain(sc, sc->first[st->target]);
        }
        return 0;
}

/* Issue every step that may run now. */
static int issue_ready(Controller *c, Schedule *sc, size_t end) {
        int r = issue_window(c, sc, end);

        if (r >= 0)
                issue_chained(c, sc, end);
        return r;
}

/* Did the process or the thread of step i, in flight, die? */
static int check_task_gone(Controller *c, size_t i) {
        size_t t = c->plan->steps[i].task, pp = c->plan->tasks[t].process;
        int pidfd = c->pidfds[pp];
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        char state;

        if (pidfd >= 0 && poll(&pfd, 1, 0) > 0)
                return task_died(c, i);
        state = thread_state(c->pids[pp], c->tids[t]);
        if (c->tids[t] != c->pids[pp] && (state == 0 || state == 'Z' || state == 'X')) {
                _cleanup_free_ char *what = plan_step_describe(c->plan, i);
                return fail(c, i, -ESRCH, "step %zu (%s): its thread %d ended (a filter's KILL_THREAD action?)", i,
                            what ?: "?", c->tids[t]);
        }
        return 0;
}

/* A step in flight that has not finished: did its process or its thread die, or its time run out?
 * A step issued with the fork that makes its process, not taken in yet, has only its time. */
static int check_stalled(Controller *c, Schedule *sc, size_t i) {
        int r;

        if (step_done(c, i))
                return 0;
        if (dep_done(sc, sc->made_by[c->plan->steps[i].task]) && (r = check_task_gone(c, i)) < 0)
                return r;
        if (now_usec(CLOCK_MONOTONIC) - sc->started[i] > c->step_timeout_usec) {
                _cleanup_free_ char *what = plan_step_describe(c->plan, i);
                return fail(c, i, -ETIMEDOUT, "step %zu (%s) did not finish within %" PRIu64 " ms", i, what ?: "?",
                            c->step_timeout_usec / 1000);
        }
        return 0;
}

static bool st_spawns(const Plan *p, size_t i) {
        return p->steps[i].op == PLAN_OP_SPAWN_PROCESS || p->steps[i].op == PLAN_OP_SPAWN_THREAD;
}

static int cmp_index(const void *a, const void *b) {
        size_t x = *(const size_t *) a, y = *(const size_t *) b;
        return x < y ? -1 : x > y;
}

/* Step i leaves in_flight for finished[]. */
static void take_finished(Schedule *sc, size_t i, size_t *n) {
        size_t k = sc->at[i], last = sc->in_flight[--sc->n_in_flight];

        sc->in_flight[k] = last;
        sc->at[last] = k;
        sc->at[i] = SIZE_MAX;
        sc->n_window_in_flight -= sc->by_window[i];
        sc->finished[(*n)++] = i;
}

/* The steps in flight that finished, from the shared log the tasks append to: the cost of a
 * wake-up is what finished, not what is in flight. An entry claimed and not written yet ends
 * the reading until the next wake-up, which comes soon (GAP_POLL_MSEC). */
static void read_log(Controller *c, Schedule *sc, size_t *n) {
        const uint32_t *log = runtime_shared_log(c->shared);

        sc->log_gap = false;
        while (sc->log_read < c->plan->n_steps) {
                uint32_t v = __atomic_load_n(&log[sc->log_read], __ATOMIC_ACQUIRE);
                size_t i = (size_t) v - 1;

                if (v == 0) {
                        sc->log_gap = sc->log_read < __atomic_load_n(&c->shared->n_finished, __ATOMIC_ACQUIRE);
                        break;
                }
                sc->log_read++;
                if (i < c->plan->n_steps && sc->at[i] != SIZE_MAX && step_done(c, i))
                        take_finished(sc, i, n);
        }
}

/* Every step in flight looked at: finished, or stalled (check). */
static int scan_in_flight(Controller *c, Schedule *sc, bool check, size_t *n) {
        int r;

        for (size_t k = 0; k < sc->n_in_flight;) {
                size_t i = sc->in_flight[k];

                if (step_done(c, i)) {
                        take_finished(sc, i, n);
                        continue;
                }
                if (check && (r = check_stalled(c, sc, i)) < 0)
                        return r;
                k++;
        }
        return 0;
}

/* An entry still claimed and not written after GAP_POLL_MSEC (its task may have been killed in
 * between): its step finished before it was claimed, so a look at every step in flight takes it
 * in, and the reading goes on past it. */
static void skip_gap(Controller *c, Schedule *sc, size_t *n) {
        (void) scan_in_flight(c, sc, false, n);
        sc->log_read++;
        read_log(c, sc, n);
}

/* Take in the steps that finished, in the plan's order (a task that ran ahead finishes several,
 * and the executor's part of each must follow theirs: a listener fd recorded at an install, say,
 * is not overwritten by the install before it); -errno on a failure. With check (nothing came for
 * POLL_MSEC), every step in flight is looked at: finished ones the log has not shown yet, and
 * stalled ones; with gap_passed, past an entry that stayed claimed. */
static int collect(Controller *c, Schedule *sc, bool check, bool gap_passed) {
        size_t *finished = sc->finished, n = 0;
        int r;

        read_log(c, sc, &n);
        if (gap_passed && sc->log_gap)
                skip_gap(c, sc, &n);
        if (check && (r = scan_in_flight(c, sc, true, &n)) < 0)
                return r;
        qsort(finished, n, sizeof(size_t), cmp_index);
        for (size_t k = 0; k < n; k++) {
                size_t i = finished[k];

                if (state_of(c, i)->result < 0)
                        return step_failed(c, i);
                r = after_step(c, i);
                if (r < 0)
                        return r;
                sc->done[i] = true;
                if (sc->next[i] != SIZE_MAX && sc->issued[sc->next[i]]) /* its time starts now */
                        sc->started[sc->next[i]] = now_usec(CLOCK_MONOTONIC);
                chain(sc, sc->next[i]);
                if (st_spawns(c->plan, i)) {
                        size_t first = sc->first[c->plan->steps[i].target];
                        if (first != SIZE_MAX && sc->issued[first] && !sc->done[first]) /* issued with the fork */
                                sc->started[first] = now_usec(CLOCK_MONOTONIC);
                        chain(sc, first);
                }
        }
        while (sc->lo < c->plan->n_steps && sc->done[sc->lo])
                sc->lo++;
        while (sc->barrier < sc->n_barriers && sc->done[sc->barriers[sc->barrier]])
                sc->barrier++;
        return 0;
}

/* Every step before end, as many at a time as the dependencies allow. */
static int run_steps(Controller *c, size_t end) {
        _cleanup_(schedule_done) Schedule sc = {};
        int r = schedule_init(&sc, c->plan);

        while (r >= 0 && sc.lo < end) {
                struct pollfd pfd = { .fd = c->report_fd, .events = POLLIN };
                bool gap;
                uint64_t v;
                int n;

                r = issue_ready(c, &sc, end);
                if (r < 0)
                        break;
                gap = sc.log_gap;
                n = poll(&pfd, 1, gap ? GAP_POLL_MSEC : POLL_MSEC);
                if (n < 0 && errno != EINTR)
                        return fail(c, SIZE_MAX, -errno, "poll() failed");
                (void) !read(c->report_fd, &v, sizeof(v));
                controller_heartbeat(c);
                r = collect(c, &sc, n == 0 && !gap, n == 0 && gap); /* quiet for POLL_MSEC: look at every step */
        }
        if (r < 0) /* let what is in flight end before the caller kills everything */
                return r;
        c->next_step = end;
        return 0;
}

int controller_run(Controller *c) {
        size_t end = 0;
        int r;

        while (end < c->plan->n_steps && !c->plan->steps[end].after_start)
                end++;
        r = run_steps(c, end);
        if (r < 0)
                controller_kill_all(c);
        return r;
}

/* ---- exec ---- */

static bool same_file(const char *a, const char *b) {
        struct stat sa, sb;
        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The exec step ran when the process's executable is no longer the executor's, or when the task
 * said it was about to exec and no failure came back for a while. */
static int wait_exec(Controller *c, size_t i) {
        const PlanStep *st = &c->plan->steps[i];
        RuntimeSlot *s = &c->shared->slots[st->task];
        pid_t pid = c->pids[c->plan->tasks[st->task].process];
        uint64_t start = now_usec(CLOCK_MONOTONIC), execing_since = 0;
        char exe[64];

        snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);

                if (step_done(c, i))
                        return step_failed(c, i);
                if (__atomic_load_n(&s->execing, __ATOMIC_ACQUIRE) && !execing_since)
                        execing_since = now;
                if (execing_since && (!same_file(exe, "/proc/self/exe") || now - execing_since > EXEC_SETTLE_USEC))
                        return 0;
                if (now - start > c->step_timeout_usec)
                        return fail(c, i, -ETIMEDOUT, "step %zu: pid %d did not exec", i, pid);
                usleep(500);
                controller_heartbeat(c);
        }
}

/* The caller's stdin, stdout and stderr over the handoff socket, for the exec step that follows
 * (one at a time: the exec steps run one after another). */
static int send_stdio(Controller *c, size_t i) {
        char control[CMSG_SPACE(sizeof(c->stdio))] = {}, byte = 'S';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(c->stdio));
        memcpy(CMSG_DATA(cm), c->stdio, sizeof(c->stdio));
        if (sendmsg(c->handoff_e, &mh, MSG_NOSIGNAL) < 0)
                return fail(c, i, -errno, "step %zu: sending stdin, stdout and stderr failed", i);
        return 0;
}

int controller_start(Controller *c) {
        for (; c->next_step < c->plan->n_steps; c->next_step++) {
                size_t i = c->next_step;
                int r = c->stdio[0] >= 0 ? send_stdio(c, i) : 0;
                if (r < 0)
                        return r;
                issue(c, i);
                r = wait_exec(c, i);
                if (r < 0)
                        return r;
        }
        return 0;
}
