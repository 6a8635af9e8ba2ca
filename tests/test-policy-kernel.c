/* test-policy-kernel.c: decisions of real filters against the running kernel: the filters
 * firejail and bubblewrap install, captured from sandboxes with the daemon library's ptrace
 * scanner, the container profile, systemd's sets and random programs, each checked case by case
 * against the concrete evaluator, and a subset of the calls made for real in a child */
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf-build.h"
#include "policy-check.h"
#include "policy-filters.h"
#include "policy/policy-arch.h"
#include "policy/policy-format.h"
#include "policy/policy-summary.h"
#include "core/disasm.h"
#include "core/prog.h"
#include "observe/scanner.h"
#include "seccomp-child.h"
#include "tests-util.h"
#include "core/util.h"

/* Calls that may run for real in the child whatever their arguments: they read, or change only
 * the child itself. Anything else is made only where the decision says it does not run. */
static const char *const harmless[] = {
        "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getpgrp", "getsid", "getpgid",
        "sched_yield", "umask", "personality", "getpriority", "socket", "dup", "sched_getscheduler", "ioprio_get",
        NULL,
};

/* Calls the child needs for itself: its reports and its end. */
static const char *const needed[] = { "write", "exit_group", "rt_sigreturn", "seccomp", NULL };

#define FATAL_CALLS_MAX 48
#define CALLS_MAX 4096

typedef struct CallSet {
        ChildCall *calls;
        size_t n, n_fatal;
        const char *name; /* the syscall being collected */
        size_t per_syscall;
} CallSet;

static void call_set_add(CallSet *s, const struct seccomp_data *d, uint32_t ret) {
        Outcome o = outcome_from_ret(ret);
        if (s->n >= CALLS_MAX || s->per_syscall >= 8 || g_strv_contains(needed, s->name))
                return;
        if (o.kind == OUTCOME_RAN && !g_strv_contains(harmless, s->name))
                return;
        if (outcome_is_fatal(&o) && s->n_fatal >= FATAL_CALLS_MAX)
                return;
        s->calls[s->n++] = (ChildCall) { .data = *d, .predicted = o };
        s->n_fatal += outcome_is_fatal(&o);
        s->per_syscall++;
}

static void on_sample(const struct seccomp_data *d, uint32_t ret, void *userdata) {
        call_set_add(userdata, d, ret);
}

/* Every decision of the native architecture checked against the concrete evaluator, and a subset
 * of its samples made for real. */
static void check_chain_in_kernel(const char *name, const TestProg *const *oldest_first, size_t n) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        CallSet set = { .calls = g_new0(ChildCall, CALLS_MAX) };
        TestChain c;
        size_t samples = 0;

        test_chain_init(&c, name, oldest_first, n);
        samples = policy_check_chain(&c, r);
        g_assert_cmpint(policy_summarize(c.progs, c.n, policy_arch_native(), &s), ==, 0);
        const PolicyArchSummary *a = &s->arches[0];
        for (size_t i = 0; i < a->n_entries; i++) {
                set.name = a->entries[i].syscall->name;
                set.per_syscall = 0;
                policy_check_decision(&c, a->entries[i].decision, NULL, on_sample, &set);
        }
        size_t ran = tests_child_check_calls(name, oldest_first, n, set.calls, set.n);
        g_test_message("%s: %zu filters, %zu samples agree with the concrete evaluator, %zu calls (%zu fatal) with the kernel",
                       name, n, samples, ran, set.n_fatal);
        g_assert_cmpuint(ran, >, 20);
        g_free(set.calls);
}

/* ---- captured sandboxes ---- */

/* The chain of tid as the daemon library's ptrace scanner reads it, oldest first. */
static size_t capture_chain(pid_t pid, TestProg *out, size_t max) {
        ScanOptions opts = SCAN_OPTIONS_DEFAULT;
        g_autoptr(Forest) f = NULL;
        const Filter *chain[16];

        opts.root = pid;
        opts.include_argv = opts.include_exe = false;
        g_assert_cmpint(ptrace_scan(&opts, &f, NULL, NULL), ==, 0);
        const Task *t = forest_find_task(f, pid, NULL);
        g_assert_nonnull(t);
        g_assert_nonnull(t->filter);
        size_t n = filter_chain(t->filter, chain, ELEMENTSOF(chain));
        g_assert_cmpuint(n, <=, max);
        for (size_t i = 0; i < n; i++) {
                g_autofree char *label = g_strdup_printf("filter %zu of %zu", i + 1, n);
                out[i] = test_prog_copy(label, chain[n - 1 - i]->insns, chain[n - 1 - i]->len);
        }
        return n;
}

static void check_sandbox(const char *name, void (*start)(TestSandbox *s)) {
        TestSandbox box;
        TestProg progs[16];
        const TestProg *p[16];

        if (!tests_require_root())
                return;
        start(&box);
        size_t n = capture_chain(box.sleeper, progs, ELEMENTSOF(progs));
        tests_sandbox_stop(&box);
        g_assert_cmpuint(n, >, 0);
        for (size_t i = 0; i < n; i++) {
                p[i] = &progs[i];
                g_test_message("%s filter %zu: %zu instructions", name, i, progs[i].len);
                if (getenv("SECTREE_TEST_DUMP_FILTERS")) {
                        g_autofree char *path = g_strdup_printf("%s/%s-%zu.bpf", getenv("SECTREE_TEST_DUMP_FILTERS"), name, i);
                        g_assert_true(g_file_set_contents(path, (const char *) progs[i].insns, progs[i].len * 8, NULL));
                }
        }
        check_chain_in_kernel(name, p, n);

        /* its OCI profile, loaded through libseccomp, decides alike */
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        _cleanup_strv_free_ char **problems = NULL;
        TestChain c;
        test_chain_init(&c, name, p, n);
        g_assert_cmpuint(policy_check_oci(&c, r, &problems), >, 1000);
        for (char **x = problems; x && *x; x++)
                g_test_message("%s: the OCI profile is not exact: %s", name, *x);
        for (size_t i = 0; i < n; i++)
                test_prog_clear(&progs[i]);
}

static void test_bwrap(void) {
        check_sandbox("bwrap", tests_sandbox_start_bwrap);
}

static void test_firejail(void) {
        check_sandbox("firejail", tests_sandbox_start_firejail);
}

static void test_container_profile(void) {
        if (!tests_require_root())
                return;
        _cleanup_(test_prog_clear) TestProg p = tests_prog_container_profile();
        const TestProg *progs[] = { &p };
        check_chain_in_kernel("container profile", progs, 1);
}

static void test_systemd(void) {
        static const char *const service[] = { "@system-service", NULL };
        static const char *const mount[] = { "@mount", NULL };
        TestProg a[3], d[3];
        const TestProg *pa[3], *pd[3];

        if (!tests_require_root())
                return;
        size_t na = tests_progs_systemd(service, false, a, 3), nd = tests_progs_systemd(mount, true, d, 3);
        for (size_t i = 0; i < 3; i++) {
                pa[i] = &a[i];
                pd[i] = &d[i];
        }
        check_chain_in_kernel("SystemCallFilter=@system-service", pa, na);
        check_chain_in_kernel("SystemCallFilter=~@mount", pd, nd);
        for (size_t i = 0; i < 3; i++) {
                test_prog_clear(&a[i]);
                test_prog_clear(&d[i]);
        }
}

/* ---- random programs ---- */

/* A random program behind a guard that lets the child report and exit. */
static void guarded_random_prog(GRand *r, TestProg *ret) {
        static const uint32_t pool[] = { SYS_getpid, SYS_getppid, AUDIT_ARCH_X86_64, 0x40000000 };
        const struct sock_filter guard[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 4, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 3, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigreturn, 2, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 1, 0),
                BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        TestRandomProg p;
        struct sock_filter all[ELEMENTSOF(guard) + ELEMENTSOF(p.insns)];

        /* the instruction pointer depends on where libc's syscall() is: not for the kernel runs */
        tests_random_prog(r, false, pool, ELEMENTSOF(pool), &p);
        memcpy(all, guard, sizeof(guard));
        memcpy(all + ELEMENTSOF(guard), p.insns, p.len * sizeof(struct sock_filter));
        *ret = test_prog_copy("random", all, ELEMENTSOF(guard) + p.len);
        g_assert_cmpint(prog_validate(ret->insns, ret->len, NULL), ==, 0);
}

#define RANDOM_KERNEL_CHAINS 40

static void test_random(void) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        size_t calls = 0, fatal = 0;

        if (!tests_require_root())
                return;
        for (unsigned i = 0; i < RANDOM_KERNEL_CHAINS; i++) {
                TestProg progs[3];
                const TestProg *p[3];
                size_t n = (size_t) g_rand_int_range(r, 1, 4);
                TestChain c;
                CallSet set = { .calls = g_new0(ChildCall, CALLS_MAX), .name = "getpid" };

                for (size_t k = 0; k < n; k++) {
                        guarded_random_prog(r, &progs[k]);
                        p[k] = &progs[k];
                }
                test_chain_init(&c, "random", p, n);
                for (int nr = SYS_getpid; nr != -1; nr = nr == SYS_getpid ? SYS_getppid : -1) {
                        Arena arena = {};
                        PolicyDecision *dec;
                        g_assert_cmpint(policy_decide(&arena, c.progs, c.n, &(PolicyQuery) { .arch = SCMP_ARCH_X86_64, .nr = nr },
                                                      &dec), ==, 0);
                        set.per_syscall = 0;
                        policy_check_decision(&c, dec, NULL, on_sample, &set);
                        arena_done(&arena);
                }
                calls += tests_child_check_calls("random chain", p, n, set.calls, set.n);
                fatal += set.n_fatal;
                g_free(set.calls);
                for (size_t k = 0; k < n; k++) {
                        if (g_test_failed()) {
                                _cleanup_free_ char *d = prog_disassemble(progs[k].insns, progs[k].len);
                                g_test_message("filter %zu (oldest first):\n%s", k, d);
                        }
                        test_prog_clear(&progs[k]);
                }
                if (g_test_failed())
                        return;
        }
        g_test_message("%zu calls made for real (%zu fatal), each as the decision predicted", calls, fatal);
        g_assert_cmpuint(fatal, >, 10);
}

/* ---- strict mode ---- */

#define X32_BIT 0x40000000

/* The call nr with harmless arguments (fd -1, or exit(0)) in a child in strict mode, by the ABI
 * of arch: whether the kernel let it run (the child exits 0) or killed the child. */
static uint32_t strict_run(uint32_t arch, uint32_t nr) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) < 0)
                        syscall(SYS_exit, 3);
                if (arch == SCMP_ARCH_X86) {
                        long ret;
                        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(nr == 1 ? 0 : -1), "c"(0), "d"(0) : "memory");
                } else
                        syscall(nr, nr == 60 || nr == (X32_BIT | 60) ? 0 : -1, NULL, 0);
                syscall(SYS_exit, 0);
        }
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return SECCOMP_RET_ALLOW;
        g_assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        return SECCOMP_RET_KILL_THREAD;
}

/* read, write and exit in each ABI of x86_64: the kernel allows only the native numbers (and the
 * i386 ones through int 0x80), as policy_arch_strict_verdict() and the strict program say. */
static void test_strict(void) {
        const struct { uint32_t arch; uint32_t nr; } calls[] = {
                { SCMP_ARCH_X86_64, 0 }, { SCMP_ARCH_X86_64, 1 }, { SCMP_ARCH_X86_64, 60 }, { SCMP_ARCH_X86_64, 39 },
                { SCMP_ARCH_X32, X32_BIT | 0 }, { SCMP_ARCH_X32, X32_BIT | 1 }, { SCMP_ARCH_X32, X32_BIT | 60 },
                { SCMP_ARCH_X86, 3 }, { SCMP_ARCH_X86, 4 }, { SCMP_ARCH_X86, 1 }, { SCMP_ARCH_X86, 20 },
        };
        struct sock_filter strict[POLICY_STRICT_PROGRAM_MAX];
        ChainProgram prog = { strict, policy_strict_program(strict) };
        if (!policy_arch_native() || policy_arch_native()->arch != SCMP_ARCH_X86_64) {
                g_test_skip("x86_64 only");
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                struct seccomp_data d = { .nr = (int) calls[i].nr,
                                          .arch = calls[i].arch == SCMP_ARCH_X86 ? AUDIT_ARCH_I386 : AUDIT_ARCH_X86_64 };
                uint32_t kernel = strict_run(calls[i].arch, calls[i].nr);
                g_test_message("arch %#x nr %#x: %s", calls[i].arch, calls[i].nr, kernel == SECCOMP_RET_ALLOW ? "runs" : "killed");
                g_assert_cmphex(policy_arch_strict_verdict(policy_arch_lookup(calls[i].arch), (int32_t) calls[i].nr), ==, kernel);
                g_assert_cmphex(chain_evaluate(&prog, 1, &d).ret, ==, kernel);
        }
}

/* ---- the uprobe exception ---- */

static const struct sock_filter prog_deny_uprobe[] = {
        LD_NR, JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_NR_URETPROBE_X86_64, 2, 0),
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_NR_UPROBE_X86_64, 1, 0), RET(SECCOMP_RET_ALLOW),
        RET(SECCOMP_RET_ERRNO | EPERM),
};

/* nr in a child under prog_deny_uprobe (strict: in strict mode instead): whether the kernel ran it
 * (uretprobe outside a probe ends in SIGILL, uprobe fails with an error other than EPERM) or the
 * filter refused it (EPERM) or strict mode killed the child. */
static bool uprobe_runs(uint32_t nr, bool strict) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_fprog fprog = { ELEMENTSOF(prog_deny_uprobe), (struct sock_filter *) prog_deny_uprobe };
                if (strict ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) < 0
                           : prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0)
                        syscall(SYS_exit, 3);
                long r = syscall(nr, 0, 0, 0);
                syscall(SYS_exit, r < 0 && errno == EPERM ? 0 : 1);
        }
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 3);
        if (WIFSIGNALED(status))
                return WTERMSIG(status) != SIGKILL; /* SIGILL: it ran; SIGKILL: strict mode */
        return WEXITSTATUS(status) == 1;
}

/* uretprobe and uprobe: what the kernel does under a filter that denies them and in strict mode,
 * against the model of the running kernel's version, and the model of an older kernel. */
static void test_uprobe_exception(void) {
        const PolicyArch *x86_64 = policy_arch_lookup(SCMP_ARCH_X86_64);
        const ChainProgram chain = { prog_deny_uprobe, ELEMENTSOF(prog_deny_uprobe) };
        const uint32_t calls[] = { SECCOMP_NR_URETPROBE_X86_64, SECCOMP_NR_UPROBE_X86_64 };
        const char *const names[] = { "uretprobe", "uprobe" };
        _cleanup_(policy_summary_freep) PolicySummary *now = NULL, *old = NULL;
        if (!policy_arch_native() || policy_arch_native()->arch != SCMP_ARCH_X86_64) {
                g_test_skip("x86_64 only");
                return;
        }
        g_assert_cmpint(policy_summarize(&chain, 1, x86_64, &now), ==, 0);
        g_assert_cmpint(policy_summarize_kernel(&chain, 1, x86_64, kernel_version_parse("6.1.0"), NULL, &old), ==, 0);
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                struct seccomp_data d = { .nr = (int) calls[i], .arch = AUDIT_ARCH_X86_64 };
                bool runs = uprobe_runs(calls[i], false), strict_runs = uprobe_runs(calls[i], true);
                uint32_t v;
                g_test_message("%s: %s under the filter, %s in strict mode", names[i], runs ? "runs" : "refused",
                               strict_runs ? "runs" : "killed");
                g_assert_cmpint(runs, ==, seccomp_kernel_exempts(0, &d));
                g_assert_cmpint(strict_runs, ==, runs);
                g_assert_cmphex(chain_evaluate(&chain, 1, &d).ret, ==, runs ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | EPERM);
                g_assert_cmphex(policy_arch_strict_verdict(x86_64, (int32_t) calls[i]), ==,
                                strict_runs ? SECCOMP_RET_ALLOW : SECCOMP_RET_KILL_THREAD);
                const PolicyEntry *e = policy_arch_summary_find(&now->arches[0], names[i]);
                g_assert_nonnull(e);
                g_assert_true(policy_decision_unconditional(e->decision, &v));
                g_assert_cmphex(v, ==, runs ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | EPERM);
                /* an older kernel filters them */
                e = policy_arch_summary_find(&old->arches[0], names[i]);
                g_assert_true(policy_decision_unconditional(e->decision, &v));
                g_assert_cmphex(v, ==, SECCOMP_RET_ERRNO | EPERM);
                /* x32 and i386 never */
                struct seccomp_data x32 = { .nr = (int) (X32_BIT | calls[i]), .arch = AUDIT_ARCH_X86_64 };
                struct seccomp_data i386 = { .nr = (int) calls[i], .arch = AUDIT_ARCH_I386 };
                g_assert_false(seccomp_kernel_exempts(0, &x32));
                g_assert_false(seccomp_kernel_exempts(0, &i386));
        }
        g_test_message("kernel version %#x", kernel_version_running());
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/policy/kernel/container-profile", test_container_profile);
        g_test_add_func("/policy/kernel/systemd", test_systemd);
        g_test_add_func("/policy/kernel/bwrap", test_bwrap);
        g_test_add_func("/policy/kernel/firejail", test_firejail);
        g_test_add_func("/policy/kernel/random", test_random);
        g_test_add_func("/policy/kernel/strict", test_strict);
        g_test_add_func("/policy/kernel/uprobe-exception", test_uprobe_exception);
        return g_test_run();
}
