/* test-policy.c: the symbolic evaluator of lib/policy: word domains, conditions, decisions of
 * hand-written and libseccomp-built filters, and every case checked against the concrete
 * evaluator at its boundaries (random programs included) */
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "policy-check.h"
#include "policy-format.h"
#include "policy-summary.h"
#include "prog.h"
#include "tests-util.h"
#include "util.h"

#define STMT(code, k) BPF_STMT((code), (k))
#define JUMP(code, k, jt, jf) BPF_JUMP((code), (k), (jt), (jf))
#define RET(v) STMT(BPF_RET | BPF_K, (v))
#define LD_NR STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARCH STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LD_ARG_LO(i) STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define LD_ARG_HI(i) STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]) + 4)
#define IF_NR(nr, skip) JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, (skip))

/* ---- word domains ---- */

static void test_word_search(void) {
        Arena arena = {};
        WordDomain d = WORD_DOMAIN_FULL;
        uint32_t v;

        g_assert_cmpint(word_domain_restrict_range(&d, 10, 100), ==, SAT_YES);
        g_assert_cmpint(word_domain_restrict_mask_eq(&d, 0x3, 0x2), ==, SAT_YES);
        g_assert_cmpint(word_domain_first(&d, 0, &v), ==, SAT_YES);
        g_assert_cmpuint(v, ==, 10);
        g_assert_cmpint(word_domain_last(&d, UINT32_MAX, &v), ==, SAT_YES);
        g_assert_cmpuint(v, ==, 98);
        g_assert_cmpint(word_domain_restrict_mask_ne(&d, &arena, UINT32_MAX, 10), ==, SAT_YES);
        g_assert_cmpint(word_domain_first(&d, 0, &v), ==, SAT_YES);
        g_assert_cmpuint(v, ==, 14);
        /* bit 4 clear excludes 14, 34, ...: next is 18 */
        g_assert_cmpint(word_domain_restrict_mask_ne(&d, &arena, 0x10, 0), ==, SAT_YES);
        g_assert_cmpint(word_domain_first(&d, 0, &v), ==, SAT_YES);
        g_assert_cmpuint(v, ==, 18);
        g_assert_cmpint(word_domain_last(&d, UINT32_MAX, &v), ==, SAT_YES);
        g_assert_cmpuint(v, ==, 94);
        g_assert_true(word_domain_contains(&d, 22));
        g_assert_false(word_domain_contains(&d, 34));
        g_assert_false(word_domain_contains(&d, 23));
        /* nothing left */
        g_assert_cmpint(word_domain_restrict_range(&d, 19, 21), ==, SAT_NO);

        d = WORD_DOMAIN_FULL;
        for (uint32_t x = 0; x < 300; x++)
                g_assert_cmpint(word_domain_restrict_mask_ne(&d, &arena, UINT32_MAX, x), ==, SAT_YES);
        g_assert_cmpint(word_domain_first(&d, 0, &v), ==, SAT_YES);
        g_assert_cmpuint(v, ==, 300);
        g_assert_cmpint(word_domain_restrict_range(&d, 0, 299), ==, SAT_NO);
        arena_done(&arena);
}

static void test_word_normalize(void) {
        Arena arena = {};
        WordDomain d = WORD_DOMAIN_FULL;

        /* > 5, != 6, != 100 above the range: [7, 50] */
        g_assert_cmpint(word_domain_restrict_range(&d, 6, UINT32_MAX), ==, SAT_YES);
        g_assert_cmpint(word_domain_restrict_mask_ne(&d, &arena, UINT32_MAX, 6), ==, SAT_YES);
        g_assert_cmpint(word_domain_restrict_mask_ne(&d, &arena, UINT32_MAX, 20), ==, SAT_YES);
        g_assert_cmpint(word_domain_restrict_range(&d, 0, 50), ==, SAT_YES);
        g_assert_cmpint(word_domain_restrict_mask_ne(&d, &arena, UINT32_MAX, 20), ==, SAT_YES);
        g_assert_cmpint(word_domain_normalize(&d, &WORD_DOMAIN_FULL, &arena), ==, SAT_YES);
        g_assert_cmpuint(d.lo, ==, 7);
        g_assert_cmpuint(d.hi, ==, 50);
        g_assert_nonnull(d.excl); /* 20, once */
        g_assert_cmpuint(d.excl->value, ==, 20);
        g_assert_null(d.excl->next);

        /* upper bits known zero: a range, which the known bits imply */
        d = WORD_DOMAIN_FULL;
        g_assert_cmpint(word_domain_restrict_mask_eq(&d, 0xffff0000, 0), ==, SAT_YES);
        g_assert_cmpint(word_domain_normalize(&d, &WORD_DOMAIN_FULL, &arena), ==, SAT_YES);
        g_assert_cmpuint(d.hi, ==, UINT32_MAX);
        g_assert_cmpuint(d.known_mask, ==, 0xffff0000);
        /* with no question to start from, the tight range */
        g_assert_cmpint(word_domain_normalize(&d, NULL, &arena), ==, SAT_YES);
        g_assert_cmpuint(d.hi, ==, 0xffff);
        g_assert_cmpuint(d.known_mask, ==, 0);
        arena_done(&arena);
}

/* ---- decisions ---- */

static char *decide_string(const TestChain *c, uint32_t arch, const char *syscall) {
        Arena arena = {};
        PolicyDecision *dec;
        PolicyQuery q = { .arch = arch };
        q.nr = seccomp_syscall_resolve_name_arch(arch, syscall);
        g_assert_cmpint(q.nr, !=, __NR_SCMP_ERROR);
        g_assert_cmpint(policy_decide(&arena, c->progs, c->n, &q, &dec), ==, 0);
        policy_check_decision(c, dec, NULL, NULL, NULL);
        char *s = policy_decision_string(&arena, dec);
        g_assert_nonnull(s);
        arena_done(&arena);
        return s;
}

#define assert_decision(chain, syscall, expected)                                                   \
        do {                                                                                         \
                g_autofree char *_s = decide_string((chain), SCMP_ARCH_X86_64, (syscall));          \
                g_test_message("%s: %s", (syscall), _s);                                             \
                g_assert_cmpstr(_s, ==, (expected));                                                 \
        } while (0)

#define RULE(ctx, action, name, ...) \
        g_assert_cmpint(seccomp_rule_add((ctx), (action), SCMP_SYS(name), __VA_ARGS__), ==, 0)

static TestProg prog_libseccomp_args(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        g_assert_nonnull(ctx);
        RULE(ctx, SCMP_ACT_ERRNO(EACCES), getpriority, 1, SCMP_A0(SCMP_CMP_EQ, 1));
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), getpriority, 1, SCMP_A0(SCMP_CMP_EQ, 2));
        RULE(ctx, SCMP_ACT_ERRNO(EINVAL), umask, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 022, 022));
        RULE(ctx, SCMP_ACT_ERRNO(EBADF), dup, 1, SCMP_A0(SCMP_CMP_LE, 2));
        RULE(ctx, SCMP_ACT_KILL_PROCESS, dup3, 1, SCMP_A1(SCMP_CMP_GT, 100));
        RULE(ctx, SCMP_ACT_ERRNO(ERANGE), getpgid, 1, SCMP_A1(SCMP_CMP_GE, 0x100000000ULL));
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), personality, 1, SCMP_A0(SCMP_CMP_NE, 0xffffffff));
        RULE(ctx, SCMP_ACT_LOG, getsid, 1, SCMP_A0(SCMP_CMP_LT, 5));
        RULE(ctx, SCMP_ACT_TRACE(1), getpid, 1, SCMP_A5(SCMP_CMP_EQ, 6));
        RULE(ctx, SCMP_ACT_ERRNO(ENOSPC), getpid, 1, SCMP_A0(SCMP_CMP_EQ, 0x100000001ULL));
        RULE(ctx, SCMP_ACT_KILL_THREAD, ptrace, 0);
        return test_prog_from_ctx("libseccomp-args", ctx);
}

static void test_decide_libseccomp(void) {
        _cleanup_(test_prog_clear) TestProg p = prog_libseccomp_args();
        const TestProg *progs[] = { &p };
        TestChain c;

        test_chain_init(&c, "libseccomp-args", progs, 1);
        assert_decision(&c, "read", "ALLOW");
        assert_decision(&c, "ptrace", "KILL_THREAD");
        assert_decision(&c, "getpriority", "ERRNO(1) if arg0 == 2; ERRNO(13) if arg0 == 1; ALLOW if arg0 not in {1, 2}");
        assert_decision(&c, "umask", "ERRNO(22) if arg0 & 0x12 == 0x12; ALLOW if arg0 & 0x12 != 0x12");
        assert_decision(&c, "dup", "ERRNO(9) if arg0 <= 2; ALLOW if arg0 >= 3");
        assert_decision(&c, "dup3", "KILL_PROCESS if arg1 >= 101; ALLOW if arg1 <= 100");
        assert_decision(&c, "getpgid", "ERRNO(34) if arg1 >= 0x100000000; ALLOW if arg1 <= 0xffffffff");
        assert_decision(&c, "personality", "ERRNO(1) if arg0 != 0xffffffff; ALLOW if arg0 == 0xffffffff");
        assert_decision(&c, "getsid", "LOG if arg0 <= 4; ALLOW if arg0 >= 5");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tests_name_hangs();
        g_test_add_func("/policy/word/search", test_word_search);
        g_test_add_func("/policy/word/normalize", test_word_normalize);
        g_test_add_func("/policy/decide/libseccomp", test_decide_libseccomp);
        return g_test_run();
}
