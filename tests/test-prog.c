/* test-prog.c: validation (against hand-made malformed programs and the running kernel), digest and equality of seccomp programs */
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "core/prog.h"
#include "core/util.h"
#include "tests-util.h"

#define STMT(code, k) BPF_STMT((code), (k))
#define JUMP(code, k, jt, jf) BPF_JUMP((code), (k), (jt), (jf))
#define RET_ALLOW STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define LD_NR STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARCH STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))

typedef struct ProgCase {
        const char *name;
        struct sock_filter insns[16];
        size_t len;
        const char *error; /* NULL: valid; otherwise a substring of the expected message */
} ProgCase;

#define CASE(n, err, ...)                                                                       \
        { .name = (n), .insns = { __VA_ARGS__ },                                               \
          .len = sizeof((struct sock_filter[]) { __VA_ARGS__ }) / sizeof(struct sock_filter), \
          .error = (err) }

static const ProgCase cases[] = {
        CASE("allow", NULL, RET_ALLOW),
        CASE("arch-check", NULL,
             LD_ARCH,
             JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
             STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
             LD_NR,
             JUMP(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1),
             STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
             RET_ALLOW),
        CASE("every-seccomp-opcode", NULL,
             STMT(BPF_LD | BPF_W | BPF_ABS, 60),
             STMT(BPF_LD | BPF_W | BPF_LEN, 0),
             STMT(BPF_LDX | BPF_W | BPF_LEN, 0),
             STMT(BPF_LD | BPF_IMM, 7),
             STMT(BPF_LDX | BPF_IMM, 3),
             STMT(BPF_ST, 0),
             STMT(BPF_STX, 15),
             STMT(BPF_LD | BPF_MEM, 0),
             STMT(BPF_LDX | BPF_MEM, 15),
             STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
             STMT(BPF_ALU | BPF_LSH | BPF_K, 31),
             STMT(BPF_ALU | BPF_NEG, 0),
             STMT(BPF_MISC | BPF_TAX, 0),
             STMT(BPF_MISC | BPF_TXA, 0),
             JUMP(BPF_JMP | BPF_JSET | BPF_X, 0, 0, 0),
             STMT(BPF_RET | BPF_A, 0)),
        CASE("ja-to-last", NULL,
             STMT(BPF_JMP | BPF_JA, 1),
             STMT(BPF_RET | BPF_K, 0),
             RET_ALLOW),
        CASE("store-on-both-paths", NULL,
             LD_NR,
             JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 2),
             STMT(BPF_ST, 3),
             STMT(BPF_JMP | BPF_JA, 1),
             STMT(BPF_STX, 3),
             STMT(BPF_LD | BPF_MEM, 3),
             STMT(BPF_RET | BPF_A, 0)),

        CASE("empty", "program is empty"),
        CASE("unknown-opcode", "insn 1: unknown opcode 0xffff",
             LD_NR, STMT(0xffff, 0), RET_ALLOW),
        CASE("ebpf-call-opcode", "insn 0: unknown opcode 0x0085", STMT(0x85, 0), RET_ALLOW),
        CASE("ldh-abs", "insn 0: opcode 0x0028 is not allowed in a seccomp filter",
             STMT(BPF_LD | BPF_H | BPF_ABS, 0), RET_ALLOW),
        CASE("ld-ind", "insn 0: opcode 0x0040 is not allowed in a seccomp filter",
             STMT(BPF_LD | BPF_W | BPF_IND, 0), RET_ALLOW),
        CASE("ldx-msh", "insn 1: opcode 0x00b1 is not allowed in a seccomp filter",
             LD_NR, STMT(BPF_LDX | BPF_B | BPF_MSH, 0), RET_ALLOW),
        CASE("mod", "insn 1: opcode 0x0094 is not allowed in a seccomp filter",
             LD_NR, STMT(BPF_ALU | BPF_MOD | BPF_K, 3), RET_ALLOW),
        CASE("mod-x", "insn 1: opcode 0x009c is not allowed in a seccomp filter",
             LD_NR, STMT(BPF_ALU | BPF_MOD | BPF_X, 0), RET_ALLOW),
        CASE("neg-x", "insn 0: unknown opcode 0x008c", STMT(BPF_ALU | BPF_NEG | BPF_X, 0), RET_ALLOW),
        CASE("ret-x", "insn 0: unknown opcode 0x000e", STMT(BPF_RET | BPF_X, 0)),
        CASE("jt-out-of-range", "insn 1: true jump target 4 is out of range (program has 3 instructions)",
             LD_NR, JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0), RET_ALLOW),
        CASE("jf-out-of-range", "insn 1: false jump target 3 is out of range",
             LD_NR, JUMP(BPF_JMP | BPF_JGT | BPF_X, 0, 0, 1), RET_ALLOW),
        CASE("ja-out-of-range", "insn 0: ja jump target 2 is out of range",
             STMT(BPF_JMP | BPF_JA, 1), RET_ALLOW),
        CASE("ja-huge", "insn 0: ja jump target 4294967296 is out of range",
             STMT(BPF_JMP | BPF_JA, UINT32_MAX), RET_ALLOW),
        CASE("no-final-ret", "insn 1: last instruction must be a RET",
             RET_ALLOW, LD_NR),
        CASE("misaligned-load", "insn 1: load from offset 2 is not 4-byte aligned",
             LD_NR, STMT(BPF_LD | BPF_W | BPF_ABS, 2), RET_ALLOW),
        CASE("load-past-seccomp-data", "insn 0: load from offset 64 is past the end of struct seccomp_data",
             STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct seccomp_data)), RET_ALLOW),
        CASE("ancillary-load", "insn 0: load from offset 4294963200 is past the end",
             STMT(BPF_LD | BPF_W | BPF_ABS, 0xfffff000), RET_ALLOW),
        CASE("div-by-zero", "insn 1: division by constant 0",
             LD_NR, STMT(BPF_ALU | BPF_DIV | BPF_K, 0), RET_ALLOW),
        CASE("shift-too-far", "insn 1: shift by constant 32",
             LD_NR, STMT(BPF_ALU | BPF_RSH | BPF_K, 32), RET_ALLOW),
        CASE("scratch-index", "insn 1: scratch memory index 16 is out of range",
             LD_NR, STMT(BPF_ST, BPF_MEMWORDS), RET_ALLOW),
        CASE("scratch-index-load", "insn 0: scratch memory index 99 is out of range",
             STMT(BPF_LDX | BPF_MEM, 99), RET_ALLOW),
        CASE("uninitialised-load", "insn 1: load from M[3] which is not stored on every path",
             STMT(BPF_ST, 2), STMT(BPF_LD | BPF_MEM, 3), STMT(BPF_RET | BPF_A, 0)),
        CASE("store-on-one-path", "insn 4: load from M[5] which is not stored on every path",
             LD_NR,
             JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
             STMT(BPF_ST, 5),
             STMT(BPF_LD | BPF_IMM, 0),
             STMT(BPF_LDX | BPF_MEM, 5),
             RET_ALLOW),
};

static void test_validate_cases(void) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const ProgCase *c = cases + i;
                _cleanup_free_ char *error = NULL;
                int r = prog_validate(c->insns, c->len, &error);

                g_test_message("%s: %d %s", c->name, r, error ?: "(valid)");
                if (!c->error) {
                        g_assert_cmpint(r, ==, 0);
                        g_assert_null(error);
                        continue;
                }
                g_assert_cmpint(r, ==, -EINVAL);
                g_assert_nonnull(error);
                if (!strstr(error, c->error))
                        g_test_fail_printf("%s: message \"%s\" lacks \"%s\"", c->name, error, c->error);
                /* error may be NULL; the verdict stays the same */
                g_assert_cmpint(prog_validate(c->insns, c->len, NULL), ==, -EINVAL);
        }
}

static void test_validate_length(void) {
        _cleanup_free_ struct sock_filter *p = calloc(PROG_MAX_INSNS + 1, sizeof(struct sock_filter));
        _cleanup_free_ char *error = NULL;

        g_assert_nonnull(p);
        for (size_t i = 0; i <= PROG_MAX_INSNS; i++)
                p[i] = (struct sock_filter) STMT(BPF_LD | BPF_IMM, i);
        p[PROG_MAX_INSNS - 1] = (struct sock_filter) RET_ALLOW;
        p[PROG_MAX_INSNS] = (struct sock_filter) RET_ALLOW;

        g_assert_cmpint(prog_validate(p, PROG_MAX_INSNS, &error), ==, 0);
        g_assert_cmpint(prog_validate(p, PROG_MAX_INSNS + 1, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "program has 4097 instructions, more than the limit of 4096"));
        free(error);
        error = NULL;
        g_assert_cmpint(prog_validate(p, 0, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "empty"));
}

/* ---- the running kernel as the reference ---- */

typedef enum KernelVerdict {
        KERNEL_ACCEPTED,
        KERNEL_REJECTED,  /* EINVAL */
        KERNEL_OTHER,     /* any other failure: the comparison is void */
} KernelVerdict;

#define EXIT_REJECTED 3
#define EXIT_OTHER 4

static _Noreturn void child_try_install(const struct sock_filter *insns, size_t n) {
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = (struct sock_filter *) insns };

        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        (void) setrlimit(RLIMIT_CORE, &(struct rlimit) {});
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(EXIT_OTHER);
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(errno == EINVAL ? EXIT_REJECTED : EXIT_OTHER);
        /* Installed: whatever the filter does to exit_group, the child ends, by exiting or by a signal. */
        syscall(SYS_exit_group, 0);
        syscall(SYS_exit, 0);
        __builtin_trap();
}

static KernelVerdict kernel_verdict(const struct sock_filter *insns, size_t n) {
        int status;
        pid_t pid = fork();

        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                child_try_install(insns, n);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
                return KERNEL_ACCEPTED;
        return WEXITSTATUS(status) == EXIT_REJECTED ? KERNEL_REJECTED : KERNEL_OTHER;
}

static void assert_kernel_agrees(const char *name, const struct sock_filter *insns, size_t n) {
        _cleanup_free_ char *error = NULL;
        bool valid = prog_validate(insns, n, &error) == 0;
        KernelVerdict v = kernel_verdict(insns, n);

        g_assert_cmpint(v, !=, KERNEL_OTHER);
        if (valid != (v == KERNEL_ACCEPTED))
                g_test_fail_printf("%s: prog_validate says %s (%s), the kernel %s it", name, valid ? "valid" : "invalid",
                        error ?: "-", v == KERNEL_ACCEPTED ? "accepts" : "rejects");
}

static void test_validate_kernel_cases(void) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_kernel_agrees(cases[i].name, cases[i].insns, cases[i].len);
}

static void test_validate_kernel_length(void) {
        _cleanup_free_ struct sock_filter *p = calloc(PROG_MAX_INSNS + 1, sizeof(struct sock_filter));

        g_assert_nonnull(p);
        for (size_t i = 0; i <= PROG_MAX_INSNS; i++)
                p[i] = (struct sock_filter) RET_ALLOW;
        assert_kernel_agrees("4096 instructions", p, PROG_MAX_INSNS);
        assert_kernel_agrees("4097 instructions", p, PROG_MAX_INSNS + 1);
}

static uint16_t random_opcode(void) {
        static const uint16_t opcodes[] = {
                BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS,
                BPF_LD | BPF_H | BPF_ABS, BPF_LD | BPF_B | BPF_ABS, BPF_LD | BPF_W | BPF_LEN,
                BPF_LD | BPF_W | BPF_IND, BPF_LD | BPF_IMM, BPF_LD | BPF_MEM, BPF_LDX | BPF_W | BPF_LEN,
                BPF_LDX | BPF_B | BPF_MSH, BPF_LDX | BPF_IMM, BPF_LDX | BPF_MEM, BPF_ST, BPF_STX, BPF_ST,
                BPF_MISC | BPF_TAX, BPF_MISC | BPF_TXA, BPF_RET | BPF_K, BPF_RET | BPF_A,
                BPF_JMP | BPF_JA, BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JGT | BPF_X,
                BPF_JMP | BPF_JGE | BPF_K, BPF_JMP | BPF_JSET | BPF_K,
                BPF_ALU | BPF_ADD | BPF_K, BPF_ALU | BPF_DIV | BPF_K, BPF_ALU | BPF_DIV | BPF_X,
                BPF_ALU | BPF_MOD | BPF_K, BPF_ALU | BPF_MOD | BPF_X, BPF_ALU | BPF_LSH | BPF_K, BPF_ALU | BPF_RSH | BPF_X,
                BPF_ALU | BPF_XOR | BPF_X, BPF_ALU | BPF_NEG,
                0x0e /* ret x */, 0x85 /* ebpf call */, 0x55 /* jne */, 0xffff,
        };
        return opcodes[g_test_rand_int_range(0, ELEMENTSOF(opcodes))];
}

static uint32_t random_k(void) {
        static const uint32_t ks[] = { 0, 1, 2, 3, 4, 8, 15, 16, 31, 32, 60, 62, 63, 64, 68, 0xfffff000, 0xfffff004 };
        return ks[g_test_rand_int_range(0, ELEMENTSOF(ks))];
}

static void random_program(struct sock_filter *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (struct sock_filter) {
                        .code = random_opcode(),
                        .jt = (uint8_t) g_test_rand_int_range(0, 4),
                        .jf = (uint8_t) g_test_rand_int_range(0, 4),
                        .k = random_k(),
                };
        if (g_test_rand_int_range(0, 4) != 0)
                p[n - 1] = (struct sock_filter) STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
}

/* Random near-valid programs: prog_validate() and seccomp(2) must agree on every one. */
static void test_validate_kernel_random(void) {
        size_t accepted = 0;

        for (size_t i = 0; i < 1500; i++) {
                struct sock_filter p[8];
                size_t n = (size_t) g_test_rand_int_range(1, ELEMENTSOF(p) + 1);
                char name[32];

                random_program(p, n);
                snprintf(name, sizeof(name), "random #%zu", i);
                assert_kernel_agrees(name, p, n);
                accepted += prog_validate(p, n, NULL) == 0;
        }
        g_test_message("%zu of 1500 random programs valid", accepted);
        g_assert_cmpuint(accepted, >, 20); /* the comparison must cover both verdicts */
}

/* ---- digest ---- */

static char *digest_reference(const struct sock_filter *insns, size_t n) {
        GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);

        for (size_t i = 0; i < n; i++) {
                const guint8 rec[8] = {
                        insns[i].code & 0xff, insns[i].code >> 8, insns[i].jt, insns[i].jf,
                        insns[i].k & 0xff, (insns[i].k >> 8) & 0xff, (insns[i].k >> 16) & 0xff, insns[i].k >> 24,
                };
                g_checksum_update(c, rec, sizeof(rec));
        }
        char *s = g_strconcat("sha256:", g_checksum_get_string(c), NULL);
        g_checksum_free(c);
        return s;
}

static void assert_digest(const struct sock_filter *insns, size_t n, const char *expected) {
        uint8_t d[PROG_DIGEST_SIZE], back[PROG_DIGEST_SIZE];
        char buf[PROG_DIGEST_STRING_MAX];

        prog_digest(insns, n, d);
        g_assert_cmpstr(prog_digest_to_string(d, buf), ==, expected);
        g_assert_cmpuint(strlen(buf) + 1, ==, PROG_DIGEST_STRING_MAX);
        g_assert_cmpint(prog_digest_from_string(buf, back), ==, 0);
        g_assert_cmpmem(back, sizeof(back), d, sizeof(d));
}

static void test_digest(void) {
        const struct sock_filter allow[] = { RET_ALLOW };
        const struct sock_filter arch[] = {
                LD_ARCH,
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
                STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
                RET_ALLOW,
        };

        /* Known answers computed outside this project (Python hashlib over struct.pack("<HBBI")). */
        assert_digest(allow, 1, "sha256:40b2a31e1a78576bb4afdf1433867d0cc67b769635ef549fba81c7d37570520f");
        assert_digest(arch, ELEMENTSOF(arch), "sha256:3df1baca9c6b27c254851f4ea862ecc949af10c010a4be64e9e1b1b0ecbdd9c9");

        /* And GLib's SHA-256 over the documented record layout, for every test program and a long one. */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                g_autofree char *ref = digest_reference(cases[i].insns, cases[i].len);
                assert_digest(cases[i].insns, cases[i].len, ref);
        }

        g_autofree struct sock_filter *big = g_new0(struct sock_filter, PROG_MAX_INSNS);
        for (size_t i = 0; i < PROG_MAX_INSNS; i++)
                big[i] = (struct sock_filter) { .code = (uint16_t) (i * 7919), .jt = i & 0xff, .jf = (i >> 8) & 0xff, .k = (uint32_t) (i * 2654435761u) };
        g_autofree char *ref = digest_reference(big, PROG_MAX_INSNS);
        assert_digest(big, PROG_MAX_INSNS, ref);
}

static void test_digest_from_string(void) {
        uint8_t d[PROG_DIGEST_SIZE];
        const char *good = "sha256:40B2A31E1A78576BB4AFDF1433867D0CC67B769635EF549FBA81C7D37570520F";
        static const char *const bad[] = {
                "",
                "sha256:",
                "40b2a31e1a78576bb4afdf1433867d0cc67b769635ef549fba81c7d37570520f",
                "sha1:40b2a31e1a78576bb4afdf1433867d0cc67b769635ef549fba81c7d37570520f",
                "sha256:40b2a31e1a78576bb4afdf1433867d0cc67b769635ef549fba81c7d37570520",
                "sha256:40b2a31e1a78576bb4afdf1433867d0cc67b769635ef549fba81c7d37570520f0",
                "sha256:40b2a31e1a78576bb4afdf1433867d0cc67b769635ef549fba81c7d37570520g",
                "sha256: 0b2a31e1a78576bb4afdf1433867d0cc67b769635ef549fba81c7d37570520f",
        };

        g_assert_cmpint(prog_digest_from_string(good, d), ==, 0);
        g_assert_cmpuint(d[0], ==, 0x40);
        g_assert_cmpuint(d[31], ==, 0x0f);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                g_assert_cmpint(prog_digest_from_string(bad[i], d), ==, -EINVAL);
        g_assert_cmpint(prog_digest_from_string(NULL, d), ==, -EINVAL);
}

static void test_equal(void) {
        const struct sock_filter a[] = { LD_NR, JUMP(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1), RET_ALLOW };
        struct sock_filter b[ELEMENTSOF(a)];

        memcpy(b, a, sizeof(a));
        g_assert_true(prog_equal(a, ELEMENTSOF(a), b, ELEMENTSOF(b)));
        g_assert_true(prog_equal(a, 0, b, 0));
        g_assert_false(prog_equal(a, ELEMENTSOF(a), b, ELEMENTSOF(b) - 1));

        b[1].code ^= BPF_X;
        g_assert_false(prog_equal(a, ELEMENTSOF(a), b, ELEMENTSOF(b)));
        b[1] = a[1];
        b[1].jt++;
        g_assert_false(prog_equal(a, ELEMENTSOF(a), b, ELEMENTSOF(b)));
        b[1] = a[1];
        b[1].jf--;
        g_assert_false(prog_equal(a, ELEMENTSOF(a), b, ELEMENTSOF(b)));
        b[1] = a[1];
        b[1].k = 40;
        g_assert_false(prog_equal(a, ELEMENTSOF(a), b, ELEMENTSOF(b)));
        b[1] = a[1];
        g_assert_true(prog_equal(a, ELEMENTSOF(a), b, ELEMENTSOF(b)));
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/prog/validate/cases", test_validate_cases);
        g_test_add_func("/prog/validate/length", test_validate_length);
        g_test_add_func("/prog/validate/kernel-agrees/cases", test_validate_kernel_cases);
        g_test_add_func("/prog/validate/kernel-agrees/length", test_validate_kernel_length);
        g_test_add_func("/prog/validate/kernel-agrees/random", test_validate_kernel_random);
        g_test_add_func("/prog/digest/known-answers", test_digest);
        g_test_add_func("/prog/digest/from-string", test_digest_from_string);
        g_test_add_func("/prog/equal", test_equal);
        return g_test_run();
}
