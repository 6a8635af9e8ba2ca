/* test-policy.c: the symbolic evaluator of lib/policy: word domains, conditions, decisions of
 * hand-written and libseccomp-built filters, and every case checked against the concrete
 * evaluator at its boundaries (random programs included) */
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "policy-check.h"
#include "policy-filters.h"
#include "policy/policy-audit.h"
#include "policy/policy-diff.h"
#include "policy/policy-format.h"
#include "policy/policy-oci.h"
#include "policy/policy-profile.h"
#include "policy/policy-summary.h"
#include "policy/policy-who.h"
#include "core/disasm.h"
#include "core/prog.h"
#include "bpf-build.h"
#include "tests-util.h"
#include "core/util.h"


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

/* Bit patterns that cover every value between them: the search must prove the set empty, not
 * give up (it walks the bits, skipping those no pattern looks at). */
static void test_word_patterns(void) {
        Arena arena = {};
        const uint32_t m = 0x7e020080;
        WordDomain d = WORD_DOMAIN_FULL;
        uint32_t v, fixed = 0;

        g_assert_cmpint(word_domain_restrict_mask_ne(&d, &arena, m, 0), ==, SAT_YES);
        /* (v & m) has some bit set: exclude each "lowest set bit of m is b" block */
        for (uint32_t free_bits = m; free_bits; free_bits &= free_bits - 1) {
                uint32_t b = free_bits & -free_bits;
                int r = word_domain_restrict_mask_ne(&d, &arena, fixed | b, b);
                g_assert_cmpint(r, ==, (free_bits & (free_bits - 1)) ? SAT_YES : SAT_NO);
                fixed |= b;
        }
        g_assert_cmpint(word_domain_first(&d, 0, &v), ==, SAT_NO);
        g_assert_cmpint(word_domain_last(&d, UINT32_MAX, &v), ==, SAT_NO);
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

/* The intervals of a field in JSON are unsigned: integers up to 2^53, decimal strings beyond. */
static void test_json_unsigned(void) {
        _cleanup_(test_prog_clear) TestProg p = prog_libseccomp_args();
        const TestProg *progs[] = { &p };
        TestChain c;
        Arena arena = {};
        PolicyDecision *dec;
        PolicyQuery q = { .arch = SCMP_ARCH_X86_64, .nr = SYS_getpgid };

        test_chain_init(&c, "libseccomp-args", progs, 1);
        g_assert_cmpint(policy_decide(&arena, c.progs, c.n, &q, &dec), ==, 0);
        json_auto_t *j = policy_decision_json(&arena, dec);
        g_autofree char *text = json_dumps(j, JSON_COMPACT);
        g_test_message("%s", text);
        g_assert_nonnull(strstr(text, "\"field\":\"arg1\",\"intervals\":[[4294967296,\"18446744073709551615\"]]"));
        g_assert_nonnull(strstr(text, "\"field\":\"arg1\",\"intervals\":[[0,4294967295]]"));
        g_assert_null(strstr(text, ",-"));
        arena_done(&arena);
}

/* Bit operations, shifts and additions on one word: exact conditions. */
static const struct sock_filter prog_bits[] = {
        LD_NR,
        IF_NR(SYS_getpid, 14),
        LD_ARG_LO(0), JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x4, 0, 1), RET(SECCOMP_RET_ERRNO | 1),
        LD_ARG_LO(1), STMT(BPF_ALU | BPF_RSH | BPF_K, 4), JUMP(BPF_JMP | BPF_JGT | BPF_K, 9, 0, 1),
        RET(SECCOMP_RET_ERRNO | 2),
        LD_ARG_LO(2), STMT(BPF_ALU | BPF_ADD | BPF_K, 5), JUMP(BPF_JMP | BPF_JGE | BPF_K, 10, 1, 0),
        RET(SECCOMP_RET_ERRNO | 3),
        LD_ARG_LO(3), STMT(BPF_ALU | BPF_AND | BPF_K, 0xff), STMT(BPF_ALU | BPF_XOR | BPF_K, 0x0f),
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xf0, 0, 1),
        RET(SECCOMP_RET_ERRNO | 4),
        RET(SECCOMP_RET_ALLOW),
};

/* Division, multiplication and shifts by constants that are not powers of two: exact. */
static const struct sock_filter prog_arith[] = {
        LD_NR,
        IF_NR(SYS_getpid, 13),
        LD_ARG_LO(0), STMT(BPF_ALU | BPF_DIV | BPF_K, 3), JUMP(BPF_JMP | BPF_JEQ | BPF_K, 5, 0, 1),
        RET(SECCOMP_RET_ERRNO | 1),
        LD_ARG_LO(1), STMT(BPF_ALU | BPF_MUL | BPF_K, 6), JUMP(BPF_JMP | BPF_JEQ | BPF_K, 30, 0, 1),
        RET(SECCOMP_RET_ERRNO | 2),
        LD_ARG_LO(2), STMT(BPF_ALU | BPF_RSH | BPF_K, 3), STMT(BPF_ALU | BPF_DIV | BPF_K, 7),
        JUMP(BPF_JMP | BPF_JGT | BPF_K, 9, 0, 1),
        RET(SECCOMP_RET_ERRNO | 3),
        RET(SECCOMP_RET_ALLOW),
};

static void test_decide_arith(void) {
        _cleanup_(test_prog_clear) TestProg p = test_prog_copy("arith", prog_arith, ELEMENTSOF(prog_arith));
        const TestProg *progs[] = { &p };
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        TestChain c;
        Arena arena = {};
        PolicyDecision *dec;
        PolicyQuery q = { .arch = SCMP_ARCH_X86_64, .nr = SYS_getpid };

        g_assert_cmpint(prog_validate(p.insns, p.len, NULL), ==, 0);
        test_chain_init(&c, "arith", progs, 1);
        g_autofree char *s = decide_string(&c, SCMP_ARCH_X86_64, "getpid");
        g_test_message("getpid: %s", s);
        g_assert_null(strstr(s, "may never hold"));
        g_assert_null(strstr(s, "depends on"));
        /* (arg0.lo / 3) == 5 holds for 15, 16, 17 */
        g_assert_true(g_str_has_prefix(s, "ERRNO(1) if arg0.lo in [15, 17]; "));
        /* arg1.lo * 6 == 30 (mod 2^32): the low 31 bits of arg1 are 5 */
        g_assert_nonnull(strstr(s, "ERRNO(2) if arg0.lo not in [15, 17] and arg1 & 0x7fffffff == 0x5; "));
        /* (arg2.lo >> 3) / 7 > 9: arg2.lo >= 560 */
        g_assert_nonnull(strstr(s, "arg2.lo >= 560"));
        g_assert_cmpint(policy_decide(&arena, c.progs, c.n, &q, &dec), ==, 0);
        for (size_t i = 0; i < dec->n_cases; i++)
                g_assert_true(policy_case_exact(&dec->cases[i]));
        g_assert_cmpuint(policy_check_decision(&c, dec, r, NULL, NULL), >, 0);
        arena_done(&arena);
}

/* Scratch memory, X, division by X, RET A, and a comparison of two words. */
static const struct sock_filter prog_machine[] = {
        LD_NR,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 2, 0), JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 15, 0),
        RET(SECCOMP_RET_ALLOW),
        /* getppid: 100 / arg0.lo > 10 (arg0.lo == 0: the kernel returns 0, KILL_THREAD) */
        LD_ARG_LO(0), STMT(BPF_MISC | BPF_TAX, 0), STMT(BPF_LD | BPF_IMM, 100),
        STMT(BPF_ALU | BPF_DIV | BPF_X, 0), JUMP(BPF_JMP | BPF_JGT | BPF_K, 10, 0, 1), RET(SECCOMP_RET_ERRNO | 6),
        /* through scratch memory: arg1 must equal arg0 in the low halves */
        LD_ARG_LO(1), STMT(BPF_ST, 3), LD_ARG_LO(0), STMT(BPF_MISC | BPF_TAX, 0), STMT(BPF_LD | BPF_MEM, 3),
        JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 1, 0), RET(SECCOMP_RET_ERRNO | 5),
        RET(SECCOMP_RET_ALLOW),
        /* getpid: the errno is computed from arg2 */
        LD_ARG_LO(2), STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff), STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
        STMT(BPF_RET | BPF_A, 0),
};

static void test_decide_bits(void) {
        _cleanup_(test_prog_clear) TestProg p = test_prog_copy("bits", prog_bits, ELEMENTSOF(prog_bits));
        const TestProg *progs[] = { &p };
        TestChain c;

        g_assert_cmpint(prog_validate(p.insns, p.len, NULL), ==, 0);
        test_chain_init(&c, "bits", progs, 1);
        assert_decision(&c, "getppid", "ALLOW");
        assert_decision(&c, "getpid",
                        "ERRNO(1) if arg0 & 0x4 != 0; "
                        "ERRNO(2) if arg0 & 0x4 == 0 and arg1.lo >= 160; "
                        "ERRNO(3) if arg0 & 0x4 == 0 and arg1.lo <= 159 and arg2.lo not in [5, 0xfffffffa]; "
                        "ERRNO(4) if arg0 & 0x4 == 0 and arg1.lo <= 159 and arg2.lo in [5, 0xfffffffa] and arg3 & 0xff == 0xff; "
                        "ALLOW if arg0 & 0x4 == 0 and arg1.lo <= 159 and arg2.lo in [5, 0xfffffffa] and arg3 & 0xff != 0xff");
}

static void test_decide_machine(void) {
        _cleanup_(test_prog_clear) TestProg p = test_prog_copy("machine", prog_machine, ELEMENTSOF(prog_machine));
        const TestProg *progs[] = { &p };
        TestChain c;

        g_assert_cmpint(prog_validate(p.insns, p.len, NULL), ==, 0);
        test_chain_init(&c, "machine", progs, 1);
        assert_decision(&c, "getppid",
                        "KILL_THREAD if arg0.lo == 0; "
                        "ERRNO(5) if arg0.lo != 0 and depends on arg0.lo through (100 / arg0.lo) <= 10 and "
                        "depends on arg0.lo and arg1.lo through arg1.lo != arg0.lo; "
                        "ERRNO(6) if arg0.lo != 0 and depends on arg0.lo through (100 / arg0.lo) > 10; "
                        "ALLOW if arg0.lo != 0 and depends on arg0.lo through (100 / arg0.lo) <= 10 and "
                        "depends on arg0.lo and arg1.lo through arg1.lo == arg0.lo");
        assert_decision(&c, "getpid", "ERRNO(computed: (arg2.lo & 0xfff) | 0x50000)");
}

/* ---- random programs ---- */

#define RANDOM_CHAINS 300

static void test_random_programs(void) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        const uint32_t pool[] = { SYS_getpid, SYS_getppid, AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, 0x40000000 };
        size_t samples = 0, conditional = 0, opaque = 0;

        for (unsigned i = 0; i < RANDOM_CHAINS; i++) {
                TestRandomProg progs[3];
                TestChain c = { .name = "random" };
                c.n = (size_t) g_rand_int_range(r, 1, 4);
                for (size_t k = 0; k < c.n; k++) {
                        tests_random_prog(r, g_rand_boolean(r), pool, ELEMENTSOF(pool), &progs[k]);
                        c.progs[k] = (ChainProgram) { .insns = progs[k].insns, .len = progs[k].len };
                }
                const PolicyQuery queries[] = {
                        { .arch = SCMP_ARCH_X86_64, .nr = SYS_getpid },
                        { .arch = SCMP_ARCH_X86_64, .nr = SYS_getppid },
                        { .arch = SCMP_ARCH_X86, .nr = SYS_getpid },
                        { .arch = SCMP_ARCH_X86_64, .other = true },
                        { .arch = SCMP_ARCH_X32, .other = true },
                };
                for (size_t q = 0; q < ELEMENTSOF(queries); q++) {
                        Arena arena = {};
                        PolicyDecision *dec;
                        g_assert_cmpint(policy_decide(&arena, c.progs, c.n, &queries[q], &dec), ==, 0);
                        samples += policy_check_decision(&c, dec, r, NULL, NULL);
                        conditional += dec->n_cases > 1;
                        for (size_t k = 0; k < dec->n_cases; k++)
                                opaque += !policy_case_exact(&dec->cases[k]);
                        arena_done(&arena);
                }
                if (g_test_failed()) {
                        for (size_t k = 0; k < c.n; k++) {
                                _cleanup_free_ char *d = prog_disassemble(c.progs[k].insns, c.progs[k].len);
                                g_test_message("filter %zu (newest first):\n%s", k, d);
                        }
                        return;
                }
        }
        g_test_message("%zu samples, %zu conditional decisions, %zu cases not in the simple forms", samples, conditional, opaque);
        g_assert_cmpuint(conditional, >, RANDOM_CHAINS / 4);
}

/* ---- real filters ---- */

static size_t check_summary(const TestChain *c, GRand *r) {
        size_t n = policy_check_chain(c, r);
        g_test_message("%s: %zu samples agree with the concrete evaluator", c->name, n);
        return n;
}

static void test_container_profile(void) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        _cleanup_(test_prog_clear) TestProg p = tests_prog_container_profile();
        const TestProg *progs[] = { &p };
        TestChain c;

        g_test_message("%s: %zu instructions", p.name, p.len);
        g_assert_cmpuint(p.len, >, 800);
        test_chain_init(&c, "container profile", progs, 1);
        check_summary(&c, r);
        assert_decision(&c, "read", "ALLOW");
        assert_decision(&c, "ptrace", "ALLOW");
        assert_decision(&c, "kexec_load", "ERRNO(1)");
        assert_decision(&c, "bpf", "ERRNO(1)"); /* CAP_SYS_ADMIN is not among podman's */
        assert_decision(&c, "chroot", "ALLOW"); /* CAP_SYS_CHROOT is */
        /* AF_NETLINK (16) with NETLINK_AUDIT (9) without CAP_AUDIT_WRITE */
        assert_decision(&c, "socket", "ERRNO(22) if arg0 == 16 and arg2 == 9; ALLOW if arg2 != 9 or arg0 != 16");
        /* the profile's default, ENOSYS, for the personalities it does not list */
        assert_decision(&c, "personality", "ERRNO(38) if arg0 not in {0, 8, 0x20000, 0x20008, 0xffffffff}; "
                                           "ALLOW if arg0 in {0, 8, 0x20000, 0x20008, 0xffffffff}");
}

/* A filter libseccomp built for x86_64, x86 and x32 whose exact profile libseccomp must load:
 * socket ERRNO(10) if arg0 >= 17, KILL if arg0 == 16 and arg2 == 9; and errnos beyond what the
 * kernel keeps (4095). */
static TestProg prog_oci_socket(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        g_assert_nonnull(ctx);
        g_assert_cmpint(seccomp_arch_add(ctx, SCMP_ARCH_X86), ==, 0);
        g_assert_cmpint(seccomp_arch_add(ctx, SCMP_ARCH_X32), ==, 0);
        RULE(ctx, SCMP_ACT_ERRNO(10), socket, 1, SCMP_A0(SCMP_CMP_GE, 17));
        RULE(ctx, SCMP_ACT_KILL, socket, 2, SCMP_A0(SCMP_CMP_EQ, 16), SCMP_A2(SCMP_CMP_EQ, 9));
        return test_prog_from_ctx("oci-socket", ctx);
}

static void test_oci_loadable(void) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        _cleanup_(test_prog_clear) TestProg p = prog_oci_socket();
        const TestProg *progs[] = { &p };
        _cleanup_strv_free_ char **problems = NULL;
        TestChain c;

        test_chain_init(&c, "oci-socket", progs, 1);
        g_assert_cmpuint(policy_check_oci(&c, r, &problems), >, 0);
        for (char **x = problems; x && *x; x++)
                g_test_message("problem: %s", *x);
        g_assert_true(!problems || !problems[0]);

        /* errnos above 4094: the kernel caps them at 4095, libseccomp refuses more than 4094: the
         * exact profile is refused for getppid, the approximate one loads, with errnoRet 4094 */
        static const struct sock_filter big_errno[] = {
                LD_ARCH, JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0), RET(SECCOMP_RET_KILL_THREAD),
                LD_NR, JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), RET(SECCOMP_RET_KILL_THREAD),
                IF_NR(SYS_getpid, 1), RET(SECCOMP_RET_ERRNO | 4094),
                IF_NR(SYS_getppid, 1), RET(SECCOMP_RET_ERRNO | 5000), RET(SECCOMP_RET_ALLOW),
        };
        _cleanup_(test_prog_clear) TestProg b = test_prog_copy("big-errno", big_errno, ELEMENTSOF(big_errno));
        const TestProg *bprogs[] = { &b };
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        _cleanup_strv_free_ char **bproblems = NULL;
        json_t *profile = NULL;
        test_chain_init(&c, "big-errno", bprogs, 1);
        g_assert_cmpuint(policy_ret_effective(SECCOMP_RET_ERRNO | 5000), ==, SECCOMP_RET_ERRNO | 4095);
        g_assert_cmpuint(policy_check_oci(&c, r, &bproblems), >, 0);
        g_assert_nonnull(bproblems);
        g_assert_nonnull(strstr(bproblems[0], "getppid"));
        g_assert_cmpint(policy_summarize(c.progs, c.n, NULL, &s), ==, 0);
        g_assert_cmpint(policy_oci_profile(s, false, &profile, NULL), ==, -EDOM);
        g_assert_cmpint(policy_oci_profile(s, true, &profile, NULL), ==, 0);
        g_autofree char *text = policy_oci_dumps(profile, JSON_COMPACT);
        json_decref(profile);
        g_test_message("%s", text);
        g_assert_nonnull(strstr(text, "\"errnoRet\":4094"));
        g_assert_null(strstr(text, "5000"));
}

static void test_systemd_sets(void) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        static const char *const mount[] = { "@mount", NULL };
        static const char *const service[] = { "@system-service", NULL };
        TestProg deny[3], allow[3];
        const TestProg *pd[3], *pa[3];
        TestChain cd, ca;

        size_t nd = tests_progs_systemd(mount, true, deny, 3), na = tests_progs_systemd(service, false, allow, 3);
        g_assert_cmpuint(nd, ==, 3);
        g_assert_cmpuint(na, ==, 3);
        for (size_t i = 0; i < 3; i++) {
                pd[i] = &deny[i];
                pa[i] = &allow[i];
        }
        test_chain_init(&cd, "SystemCallFilter=~@mount", pd, nd);
        test_chain_init(&ca, "SystemCallFilter=@system-service", pa, na);
        check_summary(&cd, r);
        check_summary(&ca, r);

        assert_decision(&cd, "mount", "KILL_PROCESS");
        assert_decision(&cd, "read", "ALLOW");
        assert_decision(&ca, "read", "ALLOW");
        assert_decision(&ca, "mount", "KILL_PROCESS");
        assert_decision(&ca, "reboot", "KILL_PROCESS");
        /* the filters of the other architectures are stacked too */
        g_autofree char *x86 = decide_string(&ca, SCMP_ARCH_X86, "socketcall");
        g_autofree char *x32 = decide_string(&ca, SCMP_ARCH_X32, "reboot");
        g_assert_cmpstr(x86, ==, "ALLOW");
        g_assert_cmpstr(x32, ==, "KILL_PROCESS");
        for (size_t i = 0; i < 3; i++) {
                test_prog_clear(&deny[i]);
                test_prog_clear(&allow[i]);
        }
}

/* ---- OCI profiles ---- */

static void test_oci_real(void) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        static const char *const mount[] = { "@mount", NULL };
        static const char *const service[] = { "@system-service", NULL };
        _cleanup_(test_prog_clear) TestProg p = tests_prog_container_profile();
        const TestProg *progs[] = { &p };
        TestProg deny[3], allow[3];
        const TestProg *pd[3], *pa[3];
        TestChain c;

        test_chain_init(&c, "container profile", progs, 1);
        char **problems = NULL;
        g_assert_cmpuint(policy_check_oci(&c, r, &problems), >, 10000);
        g_assert_null(problems);

        size_t nd = tests_progs_systemd(mount, true, deny, 3), na = tests_progs_systemd(service, false, allow, 3);
        for (size_t i = 0; i < 3; i++) {
                pd[i] = &deny[i];
                pa[i] = &allow[i];
        }
        test_chain_init(&c, "SystemCallFilter=~@mount", pd, nd);
        g_assert_cmpuint(policy_check_oci(&c, r, &problems), >, 10000);
        g_assert_null(problems);
        test_chain_init(&c, "SystemCallFilter=@system-service", pa, na);
        g_assert_cmpuint(policy_check_oci(&c, r, &problems), >, 10000);
        g_assert_null(problems);
        for (size_t i = 0; i < 3; i++) {
                test_prog_clear(&deny[i]);
                test_prog_clear(&allow[i]);
        }
}

/* ---- profiles ---- */

static void assert_profile_refused(const char *text, const char *want) {
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ struct sock_filter *insns = NULL;
        json_t *j = tests_json_loads_u64(text);
        size_t n;
        g_assert_cmpint(policy_profile_build(j, NULL, &insns, &n, &error), ==, -EINVAL);
        g_assert_cmpstr(error, ==, want);
        json_decref(j);
}

/* A profile that libseccomp would take seconds or hours over is refused before it gets it: more
 * than 2,048 rule x system call pairs, or more than 256 argument comparisons (each per system
 * call named); at the limits it is built (containers-common's own: /policy/real/container-profile). */
static json_t *profile_of_rules(size_t rules, size_t names, size_t args) {
        json_t *list = json_array();
        for (size_t i = 0; i < rules; i++) {
                json_t *n = json_array(), *a = json_array();
                for (size_t k = 0; k < names; k++)
                        json_array_append_new(n, json_string(k % 2 ? "getpid" : "read"));
                for (size_t k = 0; k < args; k++)
                        json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:s}", "index", (json_int_t) k, "value",
                                                           (json_int_t) (i * 7 + k), "valueTwo", (json_int_t) (i * 13 | 1),
                                                           "op", "SCMP_CMP_MASKED_EQ"));
                json_array_append_new(list, json_pack("{s:o, s:s, s:o}", "names", n, "action", "SCMP_ACT_ALLOW", "args", a));
        }
        return json_pack("{s:s, s:o}", "defaultAction", "SCMP_ACT_ERRNO", "syscalls", list);
}

static void test_profile_bounded(void) {
        const struct {
                size_t rules, names, args;
                const char *error; /* NULL: built */
        } cases[] = {
                { 4, 512, 0, NULL },
                { 1, 2049, 0, "syscalls[0]: the rules name more than 2048 system calls in all, the limit" },
                { 5, 410, 0, "syscalls[4]: the rules name more than 2048 system calls in all, the limit" },
                { 42, 1, 6, NULL },
                { 43, 1, 6, "syscalls[42]: the rules compare more than 256 arguments in all (each once per system "
                            "call named), the limit" },
                { 1, 129, 2, "syscalls[0]: the rules compare more than 256 arguments in all (each once per system "
                             "call named), the limit" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                _cleanup_free_ char *error = NULL;
                _cleanup_free_ struct sock_filter *insns = NULL;
                json_t *j = profile_of_rules(cases[i].rules, cases[i].names, cases[i].args);
                size_t n = 0;
                int r = policy_profile_build(j, NULL, &insns, &n, &error);
                g_test_message("%zu rules of %zu names, %zu args: %d, %zu instructions, %s", cases[i].rules,
                               cases[i].names, cases[i].args, r, n, error ?: "-");
                if (cases[i].error) {
                        g_assert_cmpint(r, ==, -EINVAL);
                        g_assert_cmpstr(error, ==, cases[i].error);
                } else {
                        g_assert_cmpint(r, ==, 0);
                        g_assert_cmpuint(n, >, 0);
                }
                json_decref(j);
        }
}

static void test_profile_parse(void) {
        /* 64-bit values beyond INT64_MAX, as OCI profiles may have them */
        const char *text = "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_X86_64\"],"
                           " \"syscalls\": [{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 5,"
                           " \"args\": [{\"index\": 0, \"value\": 18446744069414584320, \"valueTwo\": 9223372036854775808,"
                           " \"op\": \"SCMP_CMP_MASKED_EQ\"}]}]}";
        json_t *j = tests_json_loads_u64(text);
        _cleanup_(test_prog_clear) TestProg p = tests_profile_prog("big values", j, NULL);
        const TestProg *progs[] = { &p };
        TestChain c;
        test_chain_init(&c, "big values", progs, 1);
        assert_decision(&c, "getpid", "ERRNO(5) if arg0 in [0x8000000000000000, 0x80000000ffffffff]; "
                                      "ALLOW if arg0 not in [0x8000000000000000, 0x80000000ffffffff]");
        /* and back to text as runtimes read it */
        _cleanup_free_ char *dumped = policy_oci_dumps(j, JSON_COMPACT);
        g_assert_nonnull(strstr(dumped, "\"value\":18446744069414584320"));
        json_decref(j);

        assert_profile_refused("[]", "the profile is not a JSON object");
        assert_profile_refused("{\"defaultAction\": \"SCMP_ACT_NOPE\"}", "defaultAction: unknown action SCMP_ACT_NOPE");
        assert_profile_refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
                               "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 7, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}]}",
                               "syscalls[0].args[0]: index is not a number in 0..5");
        assert_profile_refused("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
                               "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_ABOUT\"}]}]}",
                               "syscalls[0].args[0]: unknown operator SCMP_CMP_ABOUT");
        assert_profile_refused("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": -1}",
                               "defaultAction: errnoRet is not a number in 0..65535");
}

/* ---- who can ---- */

G_DEFINE_AUTOPTR_CLEANUP_FUNC(WhoCan, who_can_free)

static void add_task(Forest *f, pid_t pid, pid_t tid, const char *comm, TaskMode mode, uint64_t head) {
        Process *p = forest_find_process(f, pid);
        Task *t;
        if (!p) {
                g_assert_cmpint(forest_add_process(f, pid, &p), ==, 0);
                snprintf(p->comm, sizeof(p->comm), "%s", comm);
        }
        g_assert_cmpint(process_add_thread(p, tid, &t), ==, 0);
        t->mode = mode;
        t->filter_id = head;
}

/* 1: allow all; 2 (on 1): no ptrace; 3 (on 1): traceme only; 4 (on 1): a copy of 2; tasks under
 * each, strict mode and one without filters. */
static Forest *who_can_forest(void) {
        Forest *f = forest_new();
        _cleanup_free_ char *why = NULL;
        g_assert_cmpint(forest_add_filter(f, 1, 0, tests_prog_allow, 1, NULL), ==, 0);
        g_assert_cmpint(forest_add_filter(f, 2, 1, tests_prog_no_ptrace, ELEMENTSOF(tests_prog_no_ptrace), NULL), ==, 0);
        g_assert_cmpint(forest_add_filter(f, 3, 1, tests_prog_traceme_only, ELEMENTSOF(tests_prog_traceme_only), NULL), ==, 0);
        g_assert_cmpint(forest_add_filter(f, 4, 1, tests_prog_no_ptrace, ELEMENTSOF(tests_prog_no_ptrace), NULL), ==, 0);
        add_task(f, 100, 100, "plain", TASK_MODE_FILTER, 1);
        add_task(f, 100, 101, "plain", TASK_MODE_DISABLED, 0);
        add_task(f, 200, 200, "jailed", TASK_MODE_FILTER, 2);
        add_task(f, 200, 201, "jailed", TASK_MODE_FILTER, 2);
        add_task(f, 300, 300, "debuggee", TASK_MODE_FILTER, 3);
        add_task(f, 400, 400, "strict", TASK_MODE_STRICT, 0);
        add_task(f, 500, 500, "copy", TASK_MODE_FILTER, 4);
        g_assert_cmpint(forest_link(f, &why), ==, 0);
        return f;
}

static void test_who_can(void) {
        g_autoptr(Forest) f = who_can_forest();
        g_autoptr(WhoCan) w = NULL;

        WhoCanQuery q = { .nr = SYS_ptrace, .allowed = true };
        g_assert_cmpint(policy_who_can(f, &q, &w), ==, 0);
        g_assert_cmpuint(w->n_tasks, ==, 7);
        g_assert_cmpuint(w->n_unfiltered, ==, 1);
        g_assert_cmpint(w->unfiltered[0].tid, ==, 101);
        g_assert_cmpuint(w->n_decisions, ==, 3); /* 2 and 4 have the same bytes: decided once */
        g_assert_cmpuint(w->n_chains, ==, 2);
        g_assert_true(w->chains[0].head == 1 && w->chains[0].always && w->chains[0].n_tasks == 1);
        g_assert_true(w->chains[1].head == 3 && !w->chains[1].always && w->chains[1].n_cases == 1);
        g_assert_cmpuint(w->n_others, ==, 2); /* ERRNO(1): 3 tasks in 2 chains; strict: KILL_THREAD */
        for (size_t i = 0; i < w->n_others; i++)
                if (w->others[i].ret == (SECCOMP_RET_ERRNO | 1))
                        g_assert_true(w->others[i].n_tasks == 3 && w->others[i].n_chains == 2);
                else
                        g_assert_true(w->others[i].ret == SECCOMP_RET_KILL_THREAD && w->others[i].n_tasks == 1);
        w = who_can_free(w);

        /* with the argument given: PTRACE_ATTACH (16) is killed under 3 */
        q.n_args = 1;
        q.args[0] = 16;
        g_assert_cmpint(policy_who_can(f, &q, &w), ==, 0);
        g_assert_cmpuint(w->n_chains, ==, 1);
        g_assert_cmpuint(w->chains[0].head, ==, 1);
        w = who_can_free(w);

        /* another action; read is allowed in strict mode */
        q = (WhoCanQuery) { .nr = SYS_ptrace, .action = SECCOMP_RET_ERRNO, .any_data = true };
        g_assert_cmpint(policy_who_can(f, &q, &w), ==, 0);
        g_assert_cmpuint(w->n_chains, ==, 2);
        g_assert_cmpuint(w->chains[0].n_tasks + w->chains[1].n_tasks, ==, 3);
        w = who_can_free(w);
        q = (WhoCanQuery) { .nr = SYS_read, .allowed = true };
        g_assert_cmpint(policy_who_can(f, &q, &w), ==, 0);
        g_assert_cmpuint(w->n_chains, ==, 5);
        g_assert_cmpuint(w->chains[0].head, ==, 0); /* strict mode first */
}

static bool only_pid_100_and_300(const Process *p, void *userdata) {
        return p->pid == 100 || p->pid == 300;
}

static bool stop_always(void *userdata) {
        return true;
}

/* A plan keeps what it needs when the forest goes; it holds the visible processes only; a stop
 * ends the analysis. */
static void test_who_can_plan(void) {
        g_autoptr(Forest) f = who_can_forest();
        g_autoptr(WhoCan) w = NULL;
        WhoCanPlan *plan = NULL;

        g_assert_cmpint(who_can_plan_new(f, only_pid_100_and_300, NULL, &plan), ==, 0);
        g_assert_cmpuint(who_can_plan_tasks(plan), ==, 3);
        g_assert_cmpuint(who_can_plan_chains(plan), ==, 2);
        g_clear_pointer(&f, forest_free);
        WhoCanQuery q = { .nr = SYS_ptrace, .allowed = true };
        g_assert_cmpint(who_can_plan_decide(plan, &q, NULL, &w), ==, 0);
        g_assert_cmpuint(w->n_tasks, ==, 3);
        g_assert_cmpuint(w->n_unfiltered, ==, 1);
        g_assert_cmpuint(w->n_chains, ==, 2);
        g_assert_cmpuint(w->chains[0].head, ==, 1);
        g_assert_cmpuint(w->chains[1].head, ==, 3);
        g_assert_cmpstr(w->chains[1].tasks[0].comm, ==, "debuggee");

        /* stopped: -ECANCELED, and the plan is freed all the same */
        f = who_can_forest();
        g_assert_cmpint(who_can_plan_new(f, NULL, NULL, &plan), ==, 0);
        w = who_can_free(w);
        g_assert_cmpint(who_can_plan_decide(plan, &q, &(PolicyStop) { .check = stop_always }, &w), ==, -ECANCELED);
        g_assert_null(w);
}

/* who_can_forest() with the programs of filters 2 and 3 kept out (over budget: length and digest
 * only). */
static Forest *who_can_forest_over_budget(void) {
        Forest *f = forest_new();
        _cleanup_free_ char *why = NULL;
        uint8_t d2[PROG_DIGEST_SIZE], d3[PROG_DIGEST_SIZE];
        prog_digest(tests_prog_no_ptrace, ELEMENTSOF(tests_prog_no_ptrace), d2);
        prog_digest(tests_prog_traceme_only, ELEMENTSOF(tests_prog_traceme_only), d3);
        g_assert_cmpint(forest_add_filter(f, 1, 0, tests_prog_allow, 1, NULL), ==, 0);
        g_assert_cmpint(forest_add_filter_with_digest(f, 2, 1, NULL, ELEMENTSOF(tests_prog_no_ptrace), d2, NULL), ==, 0);
        g_assert_cmpint(forest_add_filter_with_digest(f, 3, 1, NULL, ELEMENTSOF(tests_prog_traceme_only), d3, NULL), ==, 0);
        g_assert_cmpint(forest_add_filter(f, 4, 1, tests_prog_no_ptrace, ELEMENTSOF(tests_prog_no_ptrace), NULL), ==, 0);
        add_task(f, 100, 100, "plain", TASK_MODE_FILTER, 1);
        add_task(f, 200, 200, "jailed", TASK_MODE_FILTER, 2);
        add_task(f, 300, 300, "debuggee", TASK_MODE_FILTER, 3);
        add_task(f, 500, 500, "copy", TASK_MODE_FILTER, 4);
        g_assert_cmpint(forest_link(f, &why), ==, 0);
        return f;
}

/* Programs a forest kept out are wanted by the plan; a chain whose bytes another chain has is
 * decided on those; one still without its program is named as not decided, the rest stands; a
 * program supplied (only the very bytes: by digest) decides it. */
static void test_who_can_missing(void) {
        g_autoptr(Forest) f = who_can_forest_over_budget();
        g_autoptr(WhoCan) w = NULL;
        WhoCanQuery q = { .nr = SYS_ptrace, .allowed = true };
        WhoCanPlan *plan = NULL;
        Arena *arena;

        g_assert_cmpint(policy_who_can(f, &q, &w), ==, 0);
        g_assert_cmpuint(w->n_tasks, ==, 4);
        g_assert_cmpuint(w->n_chains, ==, 1);
        g_assert_cmpuint(w->chains[0].head, ==, 1);
        g_assert_cmpuint(w->n_undecided, ==, 1);
        g_assert_true(w->undecided[0].head == 3 && w->undecided[0].depth == 2 && w->undecided[0].n_tasks == 1);
        g_assert_cmpint(w->undecided[0].tasks[0].tid, ==, 300);
        g_assert_cmpuint(w->n_others, ==, 1); /* 2 decided on 4's bytes: ERRNO(1) for both */
        g_assert_true(w->others[0].ret == (SECCOMP_RET_ERRNO | 1) && w->others[0].n_tasks == 2);
        w = who_can_free(w);

        g_assert_cmpint(who_can_plan_new(f, NULL, NULL, &plan), ==, 0);
        ProgWants *wants = who_can_plan_wants(plan, &arena);
        g_assert_cmpuint(prog_wants_missing(wants), ==, 2);
        g_assert_cmpint(prog_wants_supply(wants, arena, tests_prog_allow, 1), ==, 0);
        g_assert_cmpint(prog_wants_supply(wants, arena, tests_prog_traceme_only, ELEMENTSOF(tests_prog_traceme_only)), ==, 1);
        g_assert_cmpint(prog_wants_supply(wants, arena, tests_prog_traceme_only, ELEMENTSOF(tests_prog_traceme_only)), ==, 0);
        g_assert_cmpuint(prog_wants_missing(wants), ==, 1);
        g_clear_pointer(&f, forest_free);
        g_assert_cmpint(who_can_plan_decide(plan, &q, NULL, &w), ==, 0);
        g_assert_cmpuint(w->n_undecided, ==, 0);
        g_assert_cmpuint(w->n_chains, ==, 2);
        g_assert_true(w->chains[1].head == 3 && !w->chains[1].always && w->chains[1].n_cases == 1);
}

static void test_who_can_query_parse(void) {
        WhoCanQuery q;
        uint64_t args[7] = { 16 };
        _cleanup_free_ char *why = NULL;

        g_assert_cmpint(who_can_query_parse(NULL, "ptrace", args, 1, NULL, &q, &why), ==, 0);
        g_assert_true(q.allowed && q.nr == SYS_ptrace && q.n_args == 1 && q.args[0] == 16);
        g_assert_cmpint(who_can_query_parse("x86", "ptrace", NULL, 0, "ERRNO", &q, &why), ==, 0);
        g_assert_true(!q.allowed && q.any_data && q.action == SECCOMP_RET_ERRNO && q.nr == 26);
        g_assert_cmpint(who_can_query_parse(NULL, "101", NULL, 0, "ERRNO(1)", &q, &why), ==, 0);
        g_assert_true(!q.any_data && q.action == (SECCOMP_RET_ERRNO | 1) && q.nr == 101);

        g_assert_cmpint(who_can_query_parse("vax", "ptrace", NULL, 0, NULL, &q, &why), ==, -EINVAL);
        g_assert_nonnull(strstr(why, "'vax'"));
        g_clear_pointer(&why, free);
        g_assert_cmpint(who_can_query_parse(NULL, "no_such_call", NULL, 0, NULL, &q, &why), ==, -EINVAL);
        g_assert_nonnull(strstr(why, "'no_such_call'"));
        g_clear_pointer(&why, free);
        g_assert_cmpint(who_can_query_parse(NULL, "ptrace", NULL, 0, "SOMETIMES", &q, &why), ==, -EINVAL);
        g_assert_nonnull(strstr(why, "'SOMETIMES'"));
        g_clear_pointer(&why, free);
        g_assert_cmpint(who_can_query_parse(NULL, "ptrace", args, 7, NULL, &q, &why), ==, -EINVAL);
        g_clear_pointer(&why, free);
        g_assert_cmpint(who_can_query_parse(NULL, "-1", NULL, 0, NULL, &q, &why), ==, -EINVAL);
        g_clear_pointer(&why, free);

        /* every number policy decides: x32's up to 0xffffffff, with the x32 bit added where missing */
        g_assert_cmpint(who_can_query_parse("x32", "4294957215", NULL, 0, NULL, &q, &why), ==, 0);
        g_assert_cmphex((uint32_t) q.nr, ==, 4294957215U);
        g_assert_cmpint(who_can_query_parse("x32", "0x1", NULL, 0, NULL, &q, &why), ==, 0);
        g_assert_cmphex((uint32_t) q.nr, ==, 0x40000001);
        g_assert_cmpint(who_can_query_parse("x86", "0xfffffff0", NULL, 0, NULL, &q, &why), ==, 0);
        g_assert_cmphex((uint32_t) q.nr, ==, 0xfffffff0);
        g_assert_cmpint(who_can_query_parse("x86_64", "0x40000001", NULL, 0, NULL, &q, &why), ==, -EINVAL);
        g_assert_nonnull(strstr(why, "not one of x86_64's"));
        g_clear_pointer(&why, free);
        g_assert_cmpint(who_can_query_parse("x86_64", "4294967296", NULL, 0, NULL, &q, &why), ==, -EINVAL);
        g_clear_pointer(&why, free);
        g_assert_cmpint(who_can_query_parse("x86_64", "uprobe", NULL, 0, NULL, &q, &why), ==, 0);
        g_assert_cmpint(q.nr, ==, 336);
}

/* ---- differences ---- */

/* setns: ERRNO(1) when arg1.lo == 0 or any of the namespace bits is set (firejail's form). */
static const struct sock_filter prog_setns[] = {
        LD_NR, IF_NR(308, 5),
        LD_ARG_LO(1), JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), RET(SECCOMP_RET_ERRNO | 1),
        JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x7e020080, 0, 1), RET(SECCOMP_RET_ERRNO | 1),
        RET(SECCOMP_RET_ALLOW),
};
static const struct sock_filter prog_nr_low_byte[] = {
        LD_NR, STMT(BPF_ALU | BPF_AND | BPF_K, 0xff), JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xab, 0, 1),
        RET(SECCOMP_RET_ERRNO | 51), RET(SECCOMP_RET_ALLOW),
};
static const struct sock_filter prog_ret_a[] = {
        LD_ARG_LO(0), STMT(BPF_ALU | BPF_MUL | BPF_K, 3), JUMP(BPF_JMP | BPF_JGT | BPF_K, 10, 0, 1),
        RET(SECCOMP_RET_ERRNO | 2),
        LD_ARG_LO(2), STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff), STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
        STMT(BPF_RET | BPF_A, 0),
};
/* prog_ret_a, but ERRNO(3) where it gives ERRNO(2) when arg1.lo == 7 */
static const struct sock_filter prog_ret_a_other[] = {
        LD_ARG_LO(0), STMT(BPF_ALU | BPF_MUL | BPF_K, 3), JUMP(BPF_JMP | BPF_JGT | BPF_K, 10, 0, 3),
        LD_ARG_LO(1), JUMP(BPF_JMP | BPF_JEQ | BPF_K, 7, 0, 1), RET(SECCOMP_RET_ERRNO | 3),
        RET(SECCOMP_RET_ERRNO | 2),
        LD_ARG_LO(2), STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff), STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
        STMT(BPF_RET | BPF_A, 0),
};

/* The differences of two chains on q, each checked by evaluating both chains on its witness;
 * returns how many policy_decisions_diff() found. */
static int diff_checked(const ChainProgram *a, size_t na, const ChainProgram *b, size_t nb, const PolicyQuery *q) {
        Arena arena = {};
        PolicyDecision *da, *db;
        PolicyDifference d[32];
        g_assert_cmpint(policy_decide(&arena, a, na, q, &da), ==, 0);
        g_assert_cmpint(policy_decide(&arena, b, nb, q, &db), ==, 0);
        int n = policy_decisions_diff(&arena, da, db, false, d, ELEMENTSOF(d));
        g_assert_cmpint(n, >=, 0);
        for (int i = 0; i < MIN(n, (int) ELEMENTSOF(d)); i++) {
                g_assert_cmpuint(chain_evaluate(a, na, &d[i].witness).ret, ==, d[i].a);
                g_assert_cmpuint(chain_evaluate(b, nb, &d[i].witness).ret, ==, d[i].b);
                g_assert_cmpuint(d[i].a, !=, d[i].b);
        }
        g_assert_cmpint(policy_decisions_diff(&arena, da, da, false, NULL, 0), ==, 0);
        arena_done(&arena);
        return n;
}

static void test_diff_self(void) {
        const struct { const struct sock_filter *insns; size_t len; } progs[] = {
                { prog_setns, ELEMENTSOF(prog_setns) },   { prog_nr_low_byte, ELEMENTSOF(prog_nr_low_byte) },
                { prog_ret_a, ELEMENTSOF(prog_ret_a) },   { prog_machine, ELEMENTSOF(prog_machine) },
                { prog_bits, ELEMENTSOF(prog_bits) },
        };
        const PolicyQuery queries[] = {
                { .arch = SCMP_ARCH_X86_64, .nr = 308 },         { .arch = SCMP_ARCH_X86, .nr = 308 },
                { .arch = SCMP_ARCH_X86_64, .nr = 0xab },        { .arch = SCMP_ARCH_X86_64, .nr = SYS_getpid },
                { .arch = SCMP_ARCH_X86_64, .nr = SYS_getppid }, { .arch = SCMP_ARCH_X86_64, .other = true },
                { .arch = SCMP_ARCH_X32, .other = true },
        };
        for (size_t i = 0; i < ELEMENTSOF(progs); i++) {
                /* the same program, and a byte-identical copy of it */
                _cleanup_free_ struct sock_filter *copy = g_memdup2(progs[i].insns, progs[i].len * sizeof(struct sock_filter));
                ChainProgram a = { progs[i].insns, progs[i].len }, b = { copy, progs[i].len };
                for (size_t q = 0; q < ELEMENTSOF(queries); q++) {
                        g_assert_cmpint(diff_checked(&a, 1, &a, 1, &queries[q]), ==, 0);
                        g_assert_cmpint(diff_checked(&a, 1, &b, 1, &queries[q]), ==, 0);
                }
        }
        /* a real difference, under a computed value: proven by its witness */
        ChainProgram a = { prog_ret_a, ELEMENTSOF(prog_ret_a) }, b = { prog_ret_a_other, ELEMENTSOF(prog_ret_a_other) };
        const PolicyQuery q = { .arch = SCMP_ARCH_X86_64, .nr = SYS_getpid };
        g_assert_cmpint(diff_checked(&a, 1, &b, 1, &q), >=, 1);
        /* and between a chain and the chain with a filter more that never decides */
        const struct sock_filter allow[] = { RET(SECCOMP_RET_ALLOW) };
        ChainProgram two[] = { { allow, 1 }, a };
        g_assert_cmpint(diff_checked(&a, 1, two, 2, &q), ==, 0);
}

/* Random chain pairs: every difference found is one the concrete evaluator confirms. */
static void test_diff_random(void) {
        g_autoptr(GRand) r = g_rand_new_with_seed(g_test_rand_int());
        const uint32_t pool[] = { SYS_getpid, SYS_getppid, AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, 0x40000000 };
        const PolicyQuery queries[] = {
                { .arch = SCMP_ARCH_X86_64, .nr = SYS_getpid },
                { .arch = SCMP_ARCH_X86, .nr = SYS_getpid },
                { .arch = SCMP_ARCH_X32, .other = true },
        };
        size_t found = 0;
        for (unsigned i = 0; i < RANDOM_CHAINS / 3; i++) {
                TestRandomProg pa, pb;
                tests_random_prog(r, g_rand_boolean(r), pool, ELEMENTSOF(pool), &pa);
                tests_random_prog(r, g_rand_boolean(r), pool, ELEMENTSOF(pool), &pb);
                ChainProgram a = { pa.insns, pa.len }, b = { pb.insns, pb.len };
                for (size_t q = 0; q < ELEMENTSOF(queries); q++) {
                        found += diff_checked(&a, 1, &b, 1, &queries[q]) > 0;
                        g_assert_cmpint(diff_checked(&a, 1, &a, 1, &queries[q]), ==, 0);
                }
        }
        g_assert_cmpuint(found, >, 0);
}

/* ---- audit ---- */

/* The findings of chain (and listeners, baseline), each witness checked against the concrete
 * evaluator. */
static void audit_chain(const TestChain *c, const bool *has_listener, const PolicySummary *baseline, AuditFindings *ret) {
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        g_assert_cmpint(policy_summarize(c->progs, c->n, NULL, &s), ==, 0);
        AuditInput in = { .chain = c->progs, .n = c->n, .has_listener = has_listener, .summary = s, .baseline = baseline };
        *ret = (AuditFindings) {};
        g_assert_cmpint(policy_audit(&in, ret), ==, 0);
        for (size_t i = 0; i < ret->n; i++) {
                const AuditFinding *f = &ret->items[i];
                g_test_message("%s: %s %s %s/%s: %s", c->name, audit_severity_to_string(f->severity),
                               audit_rule_to_string(f->rule), f->arch ?: "-", f->syscall ?: "-", f->message);
                if (f->has_witness)
                        g_assert_cmphex(chain_evaluate(c->progs, c->n, &f->witness).ret, ==, f->action);
        }
}

static const AuditFinding *audit_find(const AuditFindings *f, AuditRule rule, const char *syscall) {
        for (size_t i = 0; i < f->n; i++)
                if (f->items[i].rule == rule && (!syscall || streq_ptr(f->items[i].syscall, syscall)))
                        return &f->items[i];
        return NULL;
}

static TestProg prog_audit_strong(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        g_assert_nonnull(ctx);
        g_assert_cmpint(seccomp_arch_add(ctx, SCMP_ARCH_X86), ==, 0);
        g_assert_cmpint(seccomp_arch_add(ctx, SCMP_ARCH_X32), ==, 0);
        static const char *const denied[] = {
                "ptrace", "process_vm_writev", "bpf", "perf_event_open", "kexec_load", "kexec_file_load", "init_module",
                "finit_module", "userfaultfd", "keyctl", "add_key", "mount", "open", "openat2", "execveat",
                "io_uring_setup", "personality",
        };
        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                int nr = seccomp_syscall_resolve_name(denied[i]);
                g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0), ==, 0);
        }
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), unshare, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 0x10000000, 0x10000000));
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), clone, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 0x10000000, 0x10000000));
        RULE(ctx, SCMP_ACT_ERRNO(ENOSYS), clone3, 0);
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), ioctl, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, 0x5412));
        return test_prog_from_ctx("audit-strong", ctx);
}

/* socket denied directly on both ABIs, socketcall forgotten */
static const struct sock_filter prog_socketcall_open[] = {
        LD_ARCH, JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 4),
        LD_NR, JUMP(BPF_JMP | BPF_JEQ | BPF_K, 359, 0, 1), RET(SECCOMP_RET_ERRNO | EPERM), RET(SECCOMP_RET_ALLOW),
        LD_NR, JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), RET(SECCOMP_RET_KILL_THREAD),
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 1), RET(SECCOMP_RET_ERRNO | EPERM), RET(SECCOMP_RET_ALLOW),
};

static const struct sock_filter prog_log_only[] = {
        LD_NR, IF_NR(SYS_getpid, 1), RET(SECCOMP_RET_LOG), RET(SECCOMP_RET_ALLOW),
};

static const struct sock_filter prog_notify[] = {
        LD_ARCH, JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0), RET(SECCOMP_RET_KILL_PROCESS),
        LD_NR, IF_NR(SYS_mknod, 1), RET(SECCOMP_RET_USER_NOTIF), RET(SECCOMP_RET_ALLOW),
};

static void test_audit(void) {
        _cleanup_(test_prog_clear) TestProg strong = prog_audit_strong(), container = tests_prog_container_profile();
        _cleanup_(test_prog_clear) TestProg no_ptrace = test_prog_copy("no-ptrace", tests_prog_no_ptrace, 4);
        _cleanup_(test_prog_clear) TestProg sc = test_prog_copy("socketcall", prog_socketcall_open, ELEMENTSOF(prog_socketcall_open));
        _cleanup_(test_prog_clear) TestProg log = test_prog_copy("log-only", prog_log_only, ELEMENTSOF(prog_log_only));
        _cleanup_(test_prog_clear) TestProg notify = test_prog_copy("notify", prog_notify, ELEMENTSOF(prog_notify));
        _cleanup_(policy_summary_freep) PolicySummary *baseline = NULL;
        const TestProg *p_strong[] = { &strong }, *p_no_ptrace[] = { &no_ptrace }, *p_sc[] = { &sc }, *p_log[] = { &log },
                       *p_notify[] = { &notify }, *p_container[] = { &container };
        TestChain c;
        AuditFindings f;

        /* weak: no architecture check, ptrace denied on x86_64 only by number; everything else open */
        test_chain_init(&c, "no-ptrace", p_no_ptrace, 1);
        audit_chain(&c, NULL, NULL, &f);
        g_assert_nonnull(audit_find(&f, AUDIT_RULE_NO_ARCH_CHECK, NULL));
        const AuditFinding *x = audit_find(&f, AUDIT_RULE_ABI_BYPASS, "ptrace");
        g_assert_nonnull(x);
        g_assert_true(x->has_witness && x->witness.arch == AUDIT_ARCH_I386 && x->action == SECCOMP_RET_ALLOW);
        g_assert_null(audit_find(&f, AUDIT_RULE_DANGEROUS, "ptrace"));
        g_assert_nonnull(audit_find(&f, AUDIT_RULE_DANGEROUS, "bpf"));
        g_assert_nonnull(audit_find(&f, AUDIT_RULE_DANGEROUS, "unshare"));
        g_assert_nonnull(audit_find(&f, AUDIT_RULE_DANGEROUS, "ioctl"));
        g_assert_null(audit_find(&f, AUDIT_RULE_LOG_ONLY, NULL));
        audit_findings_done(&f);

        /* strong: the architectures checked, the equivalents and dangerous calls closed */
        test_chain_init(&c, "audit-strong", p_strong, 1);
        audit_chain(&c, NULL, NULL, &f);
        g_assert_null(audit_find(&f, AUDIT_RULE_NO_ARCH_CHECK, NULL));
        g_assert_null(audit_find(&f, AUDIT_RULE_ABI_BYPASS, NULL));
        g_assert_null(audit_find(&f, AUDIT_RULE_DANGEROUS, NULL));
        /* open denied, openat left open: the one weakness it keeps */
        g_assert_nonnull(audit_find(&f, AUDIT_RULE_EQUIVALENT_OPEN, "openat"));
        g_assert_null(audit_find(&f, AUDIT_RULE_EQUIVALENT_OPEN, "openat2"));
        g_assert_null(audit_find(&f, AUDIT_RULE_EQUIVALENT_OPEN, "execveat"));
        g_assert_null(audit_find(&f, AUDIT_RULE_EQUIVALENT_OPEN, "clone3"));
        g_assert_null(audit_find(&f, AUDIT_RULE_EQUIVALENT_OPEN, "io_uring_setup"));
        audit_findings_done(&f);

        /* socketcall forgotten */
        test_chain_init(&c, "socketcall", p_sc, 1);
        audit_chain(&c, NULL, NULL, &f);
        x = audit_find(&f, AUDIT_RULE_ABI_BYPASS, "socketcall");
        g_assert_nonnull(x);
        g_assert_cmpuint(x->witness.args[0], ==, 1);
        g_assert_null(audit_find(&f, AUDIT_RULE_ABI_BYPASS, "socket"));
        audit_findings_done(&f);

        /* LOG only */
        test_chain_init(&c, "log-only", p_log, 1);
        audit_chain(&c, NULL, NULL, &f);
        g_assert_nonnull(audit_find(&f, AUDIT_RULE_LOG_ONLY, NULL));
        audit_findings_done(&f);

        /* USER_NOTIF: with its listener, and without */
        test_chain_init(&c, "notify", p_notify, 1);
        audit_chain(&c, (const bool[]) { true }, NULL, &f);
        g_assert_null(audit_find(&f, AUDIT_RULE_NOTIF_NO_LISTENER, NULL));
        audit_findings_done(&f);
        audit_chain(&c, (const bool[]) { false }, NULL, &f);
        x = audit_find(&f, AUDIT_RULE_NOTIF_NO_LISTENER, NULL);
        g_assert_nonnull(x);
        g_assert_cmpint(x->witness.nr, ==, SYS_mknod);
        g_assert_cmphex(x->action, ==, SECCOMP_RET_USER_NOTIF);
        audit_findings_done(&f);

        /* against containers-common's profile: the profile itself is no weaker, a loose chain is */
        test_chain_init(&c, "container profile", p_container, 1);
        g_assert_cmpint(policy_summarize(c.progs, c.n, NULL, &baseline), ==, 0);
        audit_chain(&c, NULL, baseline, &f);
        g_assert_null(audit_find(&f, AUDIT_RULE_BASELINE, NULL));
        /* personality(0xffffffff) only asks: not READ_IMPLIES_EXEC */
        g_assert_null(audit_find(&f, AUDIT_RULE_DANGEROUS, "personality"));
        audit_findings_done(&f);
        test_chain_init(&c, "no-ptrace", p_no_ptrace, 1);
        audit_chain(&c, NULL, baseline, &f);
        x = audit_find(&f, AUDIT_RULE_BASELINE, NULL);
        g_assert_nonnull(x);
        g_assert_nonnull(strstr(x->message, "kexec_load"));
        audit_findings_done(&f);

        g_assert_cmpint(audit_severity_from_string("medium"), ==, AUDIT_SEVERITY_MEDIUM);
        g_assert_cmpint(audit_severity_from_string("urgent"), ==, -EINVAL);
        g_assert_cmpstr(audit_rule_to_string(AUDIT_RULE_ABI_BYPASS), ==, "abi-bypass");
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/policy/word/search", test_word_search);
        g_test_add_func("/policy/word/normalize", test_word_normalize);
        g_test_add_func("/policy/word/patterns", test_word_patterns);
        g_test_add_func("/policy/decide/libseccomp", test_decide_libseccomp);
        g_test_add_func("/policy/decide/bits", test_decide_bits);
        g_test_add_func("/policy/json/unsigned", test_json_unsigned);
        g_test_add_func("/policy/decide/arith", test_decide_arith);
        g_test_add_func("/policy/decide/machine", test_decide_machine);
        g_test_add_func("/policy/random", test_random_programs);
        g_test_add_func("/policy/diff/self", test_diff_self);
        g_test_add_func("/policy/diff/random", test_diff_random);
        g_test_add_func("/policy/real/container-profile", test_container_profile);
        g_test_add_func("/policy/real/systemd", test_systemd_sets);
        g_test_add_func("/policy/oci/real", test_oci_real);
        g_test_add_func("/policy/oci/loadable", test_oci_loadable);
        g_test_add_func("/policy/audit", test_audit);
        g_test_add_func("/policy/who-can", test_who_can);
        g_test_add_func("/policy/who-can/plan", test_who_can_plan);
        g_test_add_func("/policy/who-can/parse", test_who_can_query_parse);
        g_test_add_func("/policy/who-can/missing", test_who_can_missing);
        g_test_add_func("/policy/profile/parse", test_profile_parse);
        g_test_add_func("/policy/profile/bounded", test_profile_bounded);
        return g_test_run();
}
