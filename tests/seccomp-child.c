/* seccomp-child.c: system calls made for real by a child process under a chain of filters */
#include "seccomp-child.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"

#define MAX_ERRNO 4095           /* the kernel caps SECCOMP_RET_ERRNO data to this */
#define SIGSYS_CODE_SECCOMP 1    /* SYS_SECCOMP */
#define UNUSED_UID 3999999       /* no process runs as it */
/* exit statuses of a child that could not do its part */
#define CHILD_SETUP_FAILED 71
#define CHILD_INSTALL_FAILED 72
#define CHILD_REPORT_FAILED 73
#define CHILD_SIGSYS_NOT_SECCOMP 74

Outcome outcome_from_ret(uint32_t ret) {
        uint32_t data = ret & SECCOMP_RET_DATA;
        switch (ret & SECCOMP_RET_ACTION_FULL) {
        case SECCOMP_RET_ALLOW:
        case SECCOMP_RET_LOG:
                return (Outcome) { OUTCOME_RAN, 0 };
        case SECCOMP_RET_ERRNO:
                return (Outcome) { OUTCOME_RETURNED, -(int64_t) (data > MAX_ERRNO ? MAX_ERRNO : data) };
        case SECCOMP_RET_TRACE:
        case SECCOMP_RET_USER_NOTIF:
                return (Outcome) { OUTCOME_RETURNED, -ENOSYS };
        case SECCOMP_RET_TRAP:
                return (Outcome) { OUTCOME_TRAPPED, data };
        default: /* KILL_THREAD of the only thread, KILL_PROCESS, unknown actions */
                return (Outcome) { OUTCOME_KILLED, SIGSYS };
        }
}

bool outcome_is_fatal(const Outcome *o) {
        return o->kind == OUTCOME_TRAPPED || o->kind == OUTCOME_KILLED;
}

bool outcome_agrees(const Outcome *predicted, const Outcome *got) {
        if (predicted->kind == OUTCOME_RAN) /* any return but the ones a filter produces */
                return got->kind == OUTCOME_RETURNED;
        return predicted->kind == got->kind && predicted->value == got->value;
}

char *outcome_describe(const Outcome *o) {
        switch (o->kind) {
        case OUTCOME_RETURNED:
                return g_strdup_printf("returned %" PRIi64, o->value);
        case OUTCOME_RAN:
                return g_strdup("ran");
        case OUTCOME_TRAPPED:
                return g_strdup_printf("SIGSYS with si_errno %" PRIi64, o->value);
        case OUTCOME_KILLED:
                return g_strdup_printf("killed by signal %" PRIi64, o->value);
        }
        return NULL;
}

/* ---- the child ---- */

typedef struct Report {
        int32_t call;
        int32_t kind;
        int64_t value;
} Report;

static int report_fd = -1;
static volatile sig_atomic_t current_call = -1;

static void report(const Report *r) {
        if (syscall(SYS_write, report_fd, r, sizeof(*r)) != sizeof(*r))
                syscall(SYS_exit_group, CHILD_REPORT_FAILED);
}

static void on_sigsys(int sig, siginfo_t *si, void *ucontext) {
        report(&(Report) { .call = current_call, .kind = OUTCOME_TRAPPED, .value = si->si_errno });
        syscall(SYS_exit_group, si->si_code == SIGSYS_CODE_SECCOMP ? 0 : CHILD_SIGSYS_NOT_SECCOMP);
}

static void child_prepare(int fd) {
        struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
        report_fd = fd;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0 ||
            setrlimit(RLIMIT_CORE, &(struct rlimit) {}) < 0 || sigaction(SIGSYS, &sa, NULL) < 0 ||
            setgroups(0, NULL) < 0 || setresgid(UNUSED_UID, UNUSED_UID, UNUSED_UID) < 0 ||
            setresuid(UNUSED_UID, UNUSED_UID, UNUSED_UID) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(CHILD_SETUP_FAILED);
        alarm(20); /* a call that blocks ends the child, not the test */
}

static void child_install(const TestProg *const *progs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                struct sock_fprog prog = { .len = (unsigned short) progs[i]->len, .filter = progs[i]->insns };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
                        _exit(CHILD_INSTALL_FAILED);
        }
}

static _Noreturn void child_main(const TestProg *const *progs, size_t n, const ChildCall *calls, const size_t *which,
                                 size_t n_which, int fd) {
        child_prepare(fd);
        child_install(progs, n);
        for (size_t i = 0; i < n_which; i++) {
                const struct seccomp_data *d = &calls[which[i]].data;
                current_call = (sig_atomic_t) which[i];
                long r = syscall(d->nr, d->args[0], d->args[1], d->args[2], d->args[3], d->args[4], d->args[5]);
                report(&(Report) { .call = (int32_t) which[i], .kind = OUTCOME_RETURNED, .value = r < 0 ? -errno : r });
        }
        syscall(SYS_exit_group, 0);
        __builtin_unreachable();
}

/* ---- the parent ---- */

static void collect(ChildCall *calls, size_t n_calls, int fd) {
        Report r;
        ssize_t l;
        while ((l = read(fd, &r, sizeof(r))) == sizeof(r)) {
                g_assert_cmpint(r.call, >=, 0);
                g_assert_cmpint(r.call, <, (int) n_calls);
                calls[r.call].got = (Outcome) { r.kind, r.value };
                calls[r.call].seen = true;
        }
        g_assert_cmpint(l, ==, 0);
}

static void run_child(const TestProg *const *progs, size_t n, ChildCall *calls, size_t n_calls, const size_t *which,
                      size_t n_which) {
        int pipefd[2], status;
        g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(pipefd[0]);
                child_main(progs, n, calls, which, n_which, pipefd[1]);
        }
        close(pipefd[1]);
        collect(calls, n_calls, pipefd[0]);
        close(pipefd[0]);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        if (WIFEXITED(status)) {
                g_assert_cmpint(WEXITSTATUS(status), ==, 0);
                return;
        }
        /* the first call without a report is the one that died */
        for (size_t i = 0; i < n_which; i++)
                if (!calls[which[i]].seen) {
                        calls[which[i]].got = (Outcome) { OUTCOME_KILLED, WTERMSIG(status) };
                        calls[which[i]].seen = true;
                        return;
                }
        for (size_t i = 0; i < n_which; i++) {
                g_autofree char *p = outcome_describe(&calls[which[i]].predicted), *g = outcome_describe(&calls[which[i]].got);
                g_test_message("call %zu: nr %d predicted %s, got %s", which[i], calls[which[i]].data.nr, p, g);
        }
        g_error("a child died by signal %d after reporting every call", WTERMSIG(status));
}

void tests_child_run_calls(const TestProg *const *oldest_first, size_t n, ChildCall *calls, size_t n_calls) {
        g_autofree size_t *returning = g_new(size_t, n_calls + 1);
        size_t n_returning = 0;

        for (size_t i = 0; i < n_calls; i++)
                if (!outcome_is_fatal(&calls[i].predicted))
                        returning[n_returning++] = i;
        run_child(oldest_first, n, calls, n_calls, returning, n_returning);
        for (size_t i = 0; i < n_calls; i++)
                if (outcome_is_fatal(&calls[i].predicted))
                        run_child(oldest_first, n, calls, n_calls, &i, 1);
}

size_t tests_child_check_calls(const char *what, const TestProg *const *oldest_first, size_t n, ChildCall *calls,
                               size_t n_calls) {
        tests_child_run_calls(oldest_first, n, calls, n_calls);
        for (size_t i = 0; i < n_calls; i++) {
                const ChildCall *c = &calls[i];
                if (c->seen && outcome_agrees(&c->predicted, &c->got))
                        continue;
                g_autofree char *p = outcome_describe(&c->predicted);
                g_autofree char *g = c->seen ? outcome_describe(&c->got) : g_strdup("nothing");
                g_test_message("MISMATCH in %s: syscall %d (%#llx, %#llx, %#llx, %#llx, %#llx, %#llx): predicted %s, kernel: %s",
                               what, c->data.nr, (unsigned long long) c->data.args[0], (unsigned long long) c->data.args[1],
                               (unsigned long long) c->data.args[2], (unsigned long long) c->data.args[3],
                               (unsigned long long) c->data.args[4], (unsigned long long) c->data.args[5], p, g);
                g_test_fail();
        }
        return n_calls;
}
