/* runtime.c: what every restored task runs until it parks or execs. Tasks are made with raw
 * clone(2) and share their creator's TLS, so this file calls no libc function that touches errno,
 * locks or allocates: every system call is one the planner checked (lib/plan/plan-syscalls.c) */
#include "runtime.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "raw.h"
#include "runtime-clone.h"
#include "runtime-image.h"


Runtime runtime;

static const char *const call_table[_RUNTIME_CALL_MAX] = {
        [RUNTIME_CALL_NONE] = "none",
        [RUNTIME_CALL_PRCTL] = "prctl",
        [RUNTIME_CALL_SECCOMP] = "seccomp",
        [RUNTIME_CALL_CLONE] = "clone",
        [RUNTIME_CALL_CLONE3] = "clone3",
        [RUNTIME_CALL_FORK] = "fork",
        [RUNTIME_CALL_DUP3] = "dup3",
        [RUNTIME_CALL_FCNTL] = "fcntl",
        [RUNTIME_CALL_CLOSE] = "close",
        [RUNTIME_CALL_WAIT4] = "wait4",
        [RUNTIME_CALL_WAITID] = "waitid",
        [RUNTIME_CALL_RECVMSG] = "recvmsg",
        [RUNTIME_CALL_EXECVE] = "execve",
        [RUNTIME_CALL_EXIT] = "exit",
        [RUNTIME_CALL_SETGROUPS] = "setgroups",
        [RUNTIME_CALL_SETRESGID] = "setresgid",
        [RUNTIME_CALL_SETRESUID] = "setresuid",
};

const char *runtime_call_to_string(RuntimeCall c) {
        return c < _RUNTIME_CALL_MAX ? call_table[c] : NULL;
}

/* clone_args as clone3(2) takes it (CLONE_ARGS_SIZE_VER2). */
typedef struct CloneArgs {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
                cgroup;
} CloneArgs;

/* What running a step produced. */
typedef struct Outcome {
        long result;
        long value;
        RuntimeCall call;
} Outcome;

static Outcome ok(long value) {
        return (Outcome) { .value = value };
}

static Outcome check(long r, RuntimeCall call) {
        return r < 0 ? (Outcome) { .result = r, .call = call } : ok(r);
}

static RuntimeSlot *slot_of(size_t i) {
        return &runtime.shared->slots[i];
}

static __attribute__((noreturn)) void die(int status) {
        raw_syscall1(SYS_exit_group, status);
        for (;;)
                raw_syscall1(SYS_exit, status);
}

/* ---- waiting and reporting ---- */

/* A short sleep with the call the plan chose (its chain may stop futex(2)). */
static long nap(PlanSyscall how, long nsec) {
        struct timespec ts = { .tv_nsec = nsec };

        if (how == PLAN_SYSCALL_CLOCK_NANOSLEEP)
                return raw_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
        return raw_syscall2(SYS_nanosleep, &ts, NULL);
}

#define NAP_NSEC 1000000L          /* waiting for a step without futex(2): 1 ms */
#define PARK_NAP_NSEC 100000000L   /* parked without read(2): 100 ms */
/* How often a task waiting on the futex checks the heartbeat: thousands of waiting tasks each
 * waking every second cost the restore time of its own. */
#define WAIT_PERIOD_SEC 5L

/* Has the executor's heartbeat stood still for RUNTIME_ORPHAN_SECONDS? idle counts the checks
 * made every period_nsec without a change. */
static bool orphaned(uint32_t *beat, unsigned *idle, long period_nsec) {
        uint32_t now = __atomic_load_n(&runtime.shared->heartbeat, __ATOMIC_RELAXED);

        if (now != *beat) {
                *beat = now;
                *idle = 0;
                return false;
        }
        return ++*idle >= (unsigned) (RUNTIME_ORPHAN_SECONDS * (1000000000L / period_nsec));
}

/* Wait until the executor lets the task run step i (RUNTIME_IMAGE_NONE: never; the task waits
 * until it is killed, or gives up when the executor is gone). */
static void wait_for_go(RuntimeSlot *s, uint32_t i, PlanSyscall how) {
        uint32_t beat = __atomic_load_n(&runtime.shared->heartbeat, __ATOMIC_RELAXED), seen;
        unsigned idle = 0;

        while ((seen = __atomic_load_n(&s->go, __ATOMIC_ACQUIRE)) <= i) {
                if (how != PLAN_SYSCALL_DEFAULT) {
                        (void) nap(how, NAP_NSEC);
                        if (orphaned(&beat, &idle, NAP_NSEC))
                                die(EXIT_FAILURE);
                        continue;
                }
                struct timespec ts = { .tv_sec = WAIT_PERIOD_SEC };
                long r = raw_syscall4(SYS_futex, &s->go, FUTEX_WAIT, seen, &ts);
                if (r == -ETIMEDOUT && orphaned(&beat, &idle, WAIT_PERIOD_SEC * 1000000000L))
                        die(EXIT_FAILURE); /* the executor is gone */
                else if (r != -ETIMEDOUT)
                        (void) orphaned(&beat, &idle, WAIT_PERIOD_SEC * 1000000000L);
        }
}

/* Does the executor need waking for a step that went well? Not when the task's next step is
 * issued already and will report: the executor lets a task run on only where it has nothing to do
 * in between, and the task reports again at the end of what it runs on (a child's filter,
 * no_new_privs and park: one wake-up, not three). A spawn always wakes it: it takes the new task
 * in (its pid, its pidfd) and lets the window move on. And so does every step of a plan whose
 * system calls were not checked: a report's write(2) the filters kill must come before the task's
 * last step counts as done, so that the executor sees the task gone. */
static bool executor_waits_for(const RuntimeSlot *slot, const RuntimeImageStep *st) {
        if (!runtime.image->calls_checked || st->op == PLAN_OP_SPAWN_PROCESS || st->op == PLAN_OP_SPAWN_THREAD ||
            st->next == RUNTIME_IMAGE_NONE || runtime_image_step(runtime.image, st->next)->report == PLAN_SYSCALL_NONE)
                return true;
        return __atomic_load_n(&slot->go, __ATOMIC_ACQUIRE) <= st->next;
}

/* The step is done: the slot says so (the executor watches it), and unless the task's chain stops
 * write(2), or the executor does not wait for it, so does the report eventfd (which wakes the
 * executor at once). */
static void report(const RuntimeSlot *slot, uint32_t i, RuntimeStepState *s, const Outcome *o,
                   const RuntimeImageStep *st) {
        uint32_t k;
        uint64_t one = 1;

        s->result = (int32_t) o->result;
        s->value = (int32_t) o->value;
        s->call = o->call;
        __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
        k = __atomic_fetch_add(&runtime.shared->n_finished, 1, __ATOMIC_ACQ_REL);
        if (k < runtime.shared->n_steps)
                __atomic_store_n(&runtime_shared_log(runtime.shared)[k], i + 1, __ATOMIC_RELEASE);
        if (st->report != PLAN_SYSCALL_NONE && (o->result < 0 || executor_waits_for(slot, st)))
                raw_syscall3(SYS_write, runtime.fd_report, &one, sizeof(one));
}

/* End a parked task with the call its chain allows (strict mode allows exit(2), not exit_group(2)). */
static __attribute__((noreturn)) void end_parked(PlanSyscall how) {
        for (;;) {
                if (how == PLAN_SYSCALL_DEFAULT)
                        raw_syscall1(SYS_exit, 0);
                if (how != PLAN_SYSCALL_NONE)
                        raw_syscall1(SYS_exit_group, 0);
                (void) nap(PLAN_SYSCALL_NANOSLEEP, PARK_NAP_NSEC); /* the executor kills it */
        }
}

/* Block until the executor closes the control fd (or is gone), then end. A task whose chain stops
 * read(2) sleeps instead, watching the release flag and the heartbeat. */
static __attribute__((noreturn)) void park(PlanSyscall how, PlanSyscall exit_how) {
        uint32_t beat = __atomic_load_n(&runtime.shared->heartbeat, __ATOMIC_RELAXED);
        unsigned idle = 0;
        char c;

        if (how != PLAN_SYSCALL_DEFAULT) {
                while (!__atomic_load_n(&runtime.shared->released, __ATOMIC_ACQUIRE) &&
                       !orphaned(&beat, &idle, PARK_NAP_NSEC))
                        (void) nap(how, PARK_NAP_NSEC);
                end_parked(exit_how);
        }
        for (;;) {
                long r = raw_syscall3(SYS_read, runtime.fd_control, &c, 1);
                if (r == 0 || (r < 0 && r != -EINTR && r != -EAGAIN))
                        break; /* end of file: released; an error: nothing to wait on */
        }
        end_parked(exit_how);
}

/* ---- steps ---- */

static const RuntimeImageProcess *process_of_task(size_t t) {
        return runtime_image_process(runtime.image, runtime_image_task(runtime.image, t)->process);
}

static Outcome do_install(const RuntimeImageStep *st) {
        struct sock_fprog prog = { .len = (unsigned short) st->n_insns,
                                   .filter = (struct sock_filter *) runtime_image_at(runtime.image, st->insns) };

        if (st->syscall == PLAN_SYSCALL_PRCTL)
                return check(raw_syscall5(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0), RUNTIME_CALL_PRCTL);
        return check(raw_syscall3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, st->flags, &prog), RUNTIME_CALL_SECCOMP);
}

/* An allow-all filter: the count of an exited leader's filters (see PLAN_OP_FILL). */
static Outcome do_fill(const RuntimeImageStep *st) {
        struct sock_fprog prog = { .len = 1, .filter = (struct sock_filter *) plan_fill_insns };

        if (st->syscall == PLAN_SYSCALL_PRCTL)
                return check(raw_syscall5(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0), RUNTIME_CALL_PRCTL);
        return check(raw_syscall3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), RUNTIME_CALL_SECCOMP);
}

/* Move fd from to to (dup3 + close), or close it when to < 0. The fd a holder ends with is not
 * close-on-exec (seccomp(2) makes a new listener's fd so): an exec'd holder keeps its listener. */
static Outcome move_fd(int from, int to) {
        long r;

        if (to == from)
                return check(raw_syscall3(SYS_fcntl, to, F_SETFD, 0), RUNTIME_CALL_FCNTL);
        if (to >= 0) {
                r = raw_syscall3(SYS_dup3, from, to, 0);
                if (r < 0)
                        return check(r, RUNTIME_CALL_DUP3);
        }
        return check(raw_syscall1(SYS_close, from), RUNTIME_CALL_CLOSE);
}

/* In a new pid namespace every task is made with clone3(2), at the tid the plan gives it there. */
static bool use_clone3(const RuntimeImageStep *st) {
        return st->syscall == PLAN_SYSCALL_CLONE3 || runtime.image->pid_namespace;
}

static void set_tid_of(CloneArgs *a, const RuntimeImageStep *st) {
        const RuntimeImageTask *t = runtime_image_task(runtime.image, st->target);

        if (t->ns_tid > 0) {
                a->set_tid = (uintptr_t) &t->ns_tid;
                a->set_tid_size = 1;
        }
}

static Outcome do_spawn_thread(const RuntimeImageStep *st) {
        RuntimeSlot *target = slot_of(st->target);
        uint8_t *stack = runtime.stacks + st->target * RUNTIME_STACK_SIZE;
        void *arg = (void *) (uintptr_t) st->target;
        long r;

        if (use_clone3(st)) {
                CloneArgs a = {
                        .flags = PLAN_CLONE_THREAD_FLAGS,
                        .child_tid = (uintptr_t) &target->ctid,
                        .parent_tid = (uintptr_t) &target->ctid,
                        .stack = (uintptr_t) stack,
                        .stack_size = RUNTIME_STACK_SIZE,
                        .tls = raw_thread_pointer(),
                };
                set_tid_of(&a, st);
                r = raw_clone3_thread(&a, sizeof(a), runtime_task_main, arg);
                return check(r, RUNTIME_CALL_CLONE3);
        }
        r = raw_clone_thread(PLAN_CLONE_THREAD_FLAGS, stack + RUNTIME_STACK_SIZE, &target->ctid, &target->ctid,
                             raw_thread_pointer(), runtime_task_main, arg);
        return check(r, RUNTIME_CALL_CLONE);
}

/* The child goes on here as the new process's first task. */
static Outcome do_spawn_process(const RuntimeImageStep *st) {
        RuntimeSlot *target = slot_of(st->target);
        unsigned long flags = PLAN_CLONE_PROCESS_FLAGS | (st->arg ? PLAN_CLONE_PARENT : 0);
        RuntimeCall call;
        long r;

        if (use_clone3(st)) {
                CloneArgs a = {
                        .flags = flags & ~0xffUL,
                        .child_tid = (uintptr_t) &target->tid,
                        .exit_signal = SIGCHLD,
                };
                set_tid_of(&a, st);
                r = raw_syscall2(SYS_clone3, &a, sizeof(a));
                call = RUNTIME_CALL_CLONE3;
        } else if (st->syscall == PLAN_SYSCALL_FORK) {
                r = raw_syscall0(SYS_fork);
                call = RUNTIME_CALL_FORK;
        } else {
                r = raw_syscall5(SYS_clone, flags, 0, 0, &target->tid, 0);
                call = RUNTIME_CALL_CLONE;
        }
        if (r == 0)
                runtime_task_main((void *) (uintptr_t) st->target);
        return check(r, call);
}

static Outcome do_reap(const RuntimeStepState *s, const RuntimeImageStep *st) {
        int status;
        siginfo_t info;

        if (st->syscall == PLAN_SYSCALL_WAITID)
                return check(raw_syscall5(SYS_waitid, P_PID, s->arg, &info, WEXITED | __WALL, 0), RUNTIME_CALL_WAITID);
        return check(raw_syscall4(SYS_wait4, s->arg, &status, __WALL, 0), RUNTIME_CALL_WAIT4);
}

/* One fd arrives on the handoff socket (the executor sent it just before this step). */
static Outcome do_receive(const RuntimeImageStep *st) {
        char control[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8))) = {};
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *cm;
        int fd;
        long r;

        r = raw_syscall3(SYS_recvmsg, runtime.fd_handoff, &mh, 0);
        if (r < 0)
                return check(r, RUNTIME_CALL_RECVMSG);
        cm = CMSG_FIRSTHDR(&mh);
        if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                return (Outcome) { .result = -EBADMSG, .call = RUNTIME_CALL_RECVMSG };
        __builtin_memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
        return move_fd(fd, st->fd);
}

/* stdin, stdout and stderr, sent by the executor just before the exec step, put at 0, 1 and 2. */
static Outcome receive_stdio(void) {
        char control[CMSG_SPACE(3 * sizeof(int))] __attribute__((aligned(8))) = {};
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
        struct cmsghdr *cm;
        int fds[3];
        long r;

        r = raw_syscall3(SYS_recvmsg, runtime.fd_handoff, &mh, 0);
        if (r < 0)
                return check(r, RUNTIME_CALL_RECVMSG);
        cm = CMSG_FIRSTHDR(&mh);
        if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(fds)))
                return (Outcome) { .result = -EBADMSG, .call = RUNTIME_CALL_RECVMSG };
        __builtin_memcpy(fds, CMSG_DATA(cm), sizeof(fds));
        for (int k = 0; k < 3; k++) {
                Outcome o = move_fd(fds[k], k); /* 0, 1 and 2 are open: what arrives is above them */
                if (o.result < 0)
                        return o;
        }
        return (Outcome) {};
}

static Outcome do_exec(RuntimeSlot *s, size_t t) {
        const RuntimeImageProcess *p = process_of_task(t);

        if (p->exec == RUNTIME_IMAGE_NONE || p->exec_path == RUNTIME_IMAGE_NONE)
                return (Outcome) { .result = -ENOEXEC, .call = RUNTIME_CALL_EXECVE };
        if (runtime.stdio) {
                Outcome o = receive_stdio();
                if (o.result < 0)
                        return o;
        }
        __atomic_store_n(&s->execing, 1, __ATOMIC_RELEASE);
        return check(raw_syscall3(SYS_execve, runtime_image_at(runtime.image, p->exec_path), runtime.exec[p->exec].argv,
                                  runtime.envp),
                     RUNTIME_CALL_EXECVE);
}

/* The snapshot's uid and gid, with no supplementary groups (the snapshot has none); the uid last,
 * while the task may still change the others. A change of uid makes the process undumpable:
 * the original was not, so that is undone. */
static Outcome do_set_creds(size_t t) {
        const RuntimeImageProcess *sp = process_of_task(t);
        long r = raw_syscall2(SYS_setgroups, 0, 0);

        if (r < 0)
                return check(r, RUNTIME_CALL_SETGROUPS);
        r = raw_syscall3(SYS_setresgid, sp->gid, sp->gid, sp->gid);
        if (r < 0)
                return check(r, RUNTIME_CALL_SETRESGID);
        r = raw_syscall3(SYS_setresuid, sp->uid, sp->uid, sp->uid);
        if (r < 0)
                return check(r, RUNTIME_CALL_SETRESUID);
        return check(raw_syscall5(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0), RUNTIME_CALL_PRCTL);
}

static Outcome run_step(RuntimeSlot *slot, RuntimeStepState *s, size_t t, const RuntimeImageStep *st) {
        switch (st->op) {
        case PLAN_OP_SET_COMM:
                return check(raw_syscall5(SYS_prctl, PR_SET_NAME, process_of_task(t)->comm, 0, 0, 0),
                             RUNTIME_CALL_PRCTL);
        case PLAN_OP_CLOSE_FD:
                return check(raw_syscall1(SYS_close, st->fd), RUNTIME_CALL_CLOSE);
        case PLAN_OP_SET_NO_NEW_PRIVS:
                return check(raw_syscall5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), RUNTIME_CALL_PRCTL);
        case PLAN_OP_SET_SUBREAPER:
                return check(raw_syscall5(SYS_prctl, PR_SET_CHILD_SUBREAPER, st->arg, 0, 0, 0), RUNTIME_CALL_PRCTL);
        case PLAN_OP_INSTALL:
                return do_install(st);
        case PLAN_OP_FILL:
                return do_fill(st);
        case PLAN_OP_KEEP_LISTENER:
                return move_fd(s->arg, st->fd);
        case PLAN_OP_SPAWN_THREAD:
                return do_spawn_thread(st);
        case PLAN_OP_SPAWN_PROCESS:
                return do_spawn_process(st);
        case PLAN_OP_REAP:
                return do_reap(s, st);
        case PLAN_OP_RECEIVE_LISTENER:
                return do_receive(st);
        case PLAN_OP_SET_CREDS:
                return do_set_creds(t);
        case PLAN_OP_STRICT:
                return check(raw_syscall2(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_STRICT), RUNTIME_CALL_PRCTL);
        case PLAN_OP_EXEC:
                return do_exec(slot, t);
        case PLAN_OP_EXIT:
        case PLAN_OP_PARK:
        default:
                return ok(0);
        }
}

/* After reporting a step that ends the task. */
static void end_task(const RuntimeImageStep *st, const Outcome *o) {
        switch (st->op) {
        case PLAN_OP_EXIT:
                if (st->syscall == PLAN_SYSCALL_EXIT_GROUP)
                        raw_syscall1(SYS_exit_group, 0);
                raw_syscall1(SYS_exit, 0);
                break;
        case PLAN_OP_STRICT:
                if (o->result >= 0 && st->arg) /* an exited leader: strict mode allows exit(2) */
                        for (;;)
                                raw_syscall1(SYS_exit, 0);
                if (o->result >= 0)
                        park(PLAN_SYSCALL_DEFAULT, PLAN_SYSCALL_DEFAULT);
                break;
        case PLAN_OP_PARK:
                park(st->syscall, st->exit);
        default:
                break;
        }
}

void runtime_task_main(void *index) {
        size_t t = (size_t) (uintptr_t) index;
        RuntimeSlot *s = slot_of(t);
        RuntimeStepState *states = runtime_shared_steps(runtime.shared);
        PlanSyscall wait = runtime_image_task(runtime.image, t)->wait_first;
        uint32_t i = runtime_image_task(runtime.image, t)->first_step;

        for (;;) {
                const RuntimeImageStep *st;
                Outcome o;

                wait_for_go(s, i, wait);
                if (i >= runtime.image->n_steps)
                        die(EXIT_FAILURE);
                st = runtime_image_step(runtime.image, i);
                o = run_step(s, &states[i], t, st);
                report(s, i, &states[i], &o, st);
                end_task(st, &o);
                wait = st->wait;
                /* after a failure, nothing more: the executor ends the restore */
                i = o.result < 0 ? RUNTIME_IMAGE_NONE : st->next;
        }
}
