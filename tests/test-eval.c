/* test-eval.c: the classic-BPF interpreter and chain precedence, unit by unit and against the running kernel */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create, si_syscall */
#endif

#include <fcntl.h>
#include <pthread.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "core/disasm.h"
#include "core/eval.h"
#include "core/prog.h"
#include "bpf-build.h"
#include "tests-util.h"
#include "core/util.h"

#define MAX_ERRNO 4095 /* the kernel caps SECCOMP_RET_ERRNO data to this */
#define SIGSYS_CODE_SECCOMP 1 /* SYS_SECCOMP, only in the kernel's asm-generic/siginfo.h */

static uint32_t run(const struct sock_filter *insns, size_t n, const struct seccomp_data *d) {
        g_assert_cmpint(prog_validate(insns, n, NULL), ==, 0);
        return prog_run(insns, n, d);
}

/* ---- ALU ---- */

typedef struct AluCase {
        uint16_t op; /* BPF_ADD ... */
        uint32_t a, operand, expected;
} AluCase;

static const AluCase alu_cases[] = {
        { BPF_ADD, 0xfffffff0, 0x20, 0x10 },
        { BPF_SUB, 5, 7, 0xfffffffe },
        { BPF_MUL, 0x10000, 0x10001, 0x10000 },
        { BPF_DIV, 100, 7, 14 },
        { BPF_DIV, 0xffffffff, 2, 0x7fffffff }, /* unsigned */
        { BPF_AND, 0xf0f0, 0xff00, 0xf000 },
        { BPF_OR, 0xf0, 0x0f, 0xff },
        { BPF_XOR, 0xff, 0x0f, 0xf0 },
        { BPF_LSH, 1, 31, 0x80000000 },
        { BPF_RSH, 0x80000000, 4, 0x08000000 }, /* logical, not arithmetic */
};

static void test_alu(void) {
        const struct seccomp_data d = {};

        for (size_t i = 0; i < ELEMENTSOF(alu_cases); i++) {
                const AluCase *c = alu_cases + i;
                const struct sock_filter with_k[] = {
                        STMT(BPF_LD | BPF_IMM, c->a), STMT(BPF_ALU | c->op | BPF_K, c->operand), STMT(BPF_RET | BPF_A, 0),
                };
                const struct sock_filter with_x[] = {
                        STMT(BPF_LD | BPF_IMM, c->a), STMT(BPF_LDX | BPF_IMM, c->operand),
                        STMT(BPF_ALU | c->op | BPF_X, 0), STMT(BPF_RET | BPF_A, 0),
                };
                g_assert_cmphex(run(with_k, ELEMENTSOF(with_k), &d), ==, c->expected);
                g_assert_cmphex(run(with_x, ELEMENTSOF(with_x), &d), ==, c->expected);
        }
}

static void test_alu_edge_cases(void) {
        const struct seccomp_data d = {};
        const struct sock_filter neg[] = { STMT(BPF_LD | BPF_IMM, 1), STMT(BPF_ALU | BPF_NEG, 0), STMT(BPF_RET | BPF_A, 0) };
        /* shifts by X use the low five bits of X, as the kernel's 32-bit shifts do */
        const struct sock_filter lsh33[] = {
                STMT(BPF_LD | BPF_IMM, 1), STMT(BPF_LDX | BPF_IMM, 33), STMT(BPF_ALU | BPF_LSH | BPF_X, 0), STMT(BPF_RET | BPF_A, 0),
        };
        const struct sock_filter rsh36[] = {
                STMT(BPF_LD | BPF_IMM, 0x80), STMT(BPF_LDX | BPF_IMM, 36), STMT(BPF_ALU | BPF_RSH | BPF_X, 0), STMT(BPF_RET | BPF_A, 0),
        };
        /* division by X == 0 ends the program with 0 (the kernel's conversion does that), i.e. KILL_THREAD */
        const struct sock_filter div0[] = {
                STMT(BPF_LD | BPF_IMM, 5), STMT(BPF_LDX | BPF_IMM, 0), STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
                RET(SECCOMP_RET_ALLOW),
        };

        g_assert_cmphex(run(neg, ELEMENTSOF(neg), &d), ==, 0xffffffff);
        g_assert_cmphex(run(lsh33, ELEMENTSOF(lsh33), &d), ==, 2);
        g_assert_cmphex(run(rsh36, ELEMENTSOF(rsh36), &d), ==, 8);
        g_assert_cmphex(run(div0, ELEMENTSOF(div0), &d), ==, SECCOMP_RET_KILL_THREAD);
}

/* ---- loads, stores, registers ---- */

static void test_loads(void) {
        const struct seccomp_data d = {
                .nr = 231, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = 0x1122334455667788ULL,
                .args = { 0xa0a0a0a0b0b0b0b0ULL, 1, 2, 3, 4, 0xdeadbeefcafef00dULL },
        };
        static const struct { uint32_t off, value; } words[] = {
                { 0, 231 }, { 4, AUDIT_ARCH_X86_64 }, { 8, 0x55667788 }, { 12, 0x11223344 },
                { 16, 0xb0b0b0b0 }, { 20, 0xa0a0a0a0 }, { 24, 1 }, { 28, 0 }, { 56, 0xcafef00d }, { 60, 0xdeadbeef },
        };

        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                const struct sock_filter p[] = { STMT(BPF_LD | BPF_W | BPF_ABS, words[i].off), STMT(BPF_RET | BPF_A, 0) };
                g_assert_cmphex(run(p, ELEMENTSOF(p), &d), ==, words[i].value);
        }

        const struct sock_filter len[] = {
                STMT(BPF_LD | BPF_W | BPF_LEN, 0), STMT(BPF_LDX | BPF_W | BPF_LEN, 0),
                STMT(BPF_ALU | BPF_ADD | BPF_X, 0), STMT(BPF_RET | BPF_A, 0),
        };
        g_assert_cmphex(run(len, ELEMENTSOF(len), &d), ==, 2 * sizeof(struct seccomp_data));

        const struct sock_filter regs[] = {
                STMT(BPF_LD | BPF_IMM, 7),       /* A = 7 */
                STMT(BPF_ST, 0),                 /* M[0] = 7 */
                STMT(BPF_MISC | BPF_TAX, 0),     /* X = 7 */
                STMT(BPF_LD | BPF_IMM, 100),     /* A = 100 */
                STMT(BPF_STX, 15),               /* M[15] = 7 */
                STMT(BPF_ST, 1),                 /* M[1] = 100 */
                STMT(BPF_LDX | BPF_IMM, 3),      /* X = 3 */
                STMT(BPF_MISC | BPF_TXA, 0),     /* A = 3 */
                STMT(BPF_LDX | BPF_MEM, 1),      /* X = 100 */
                STMT(BPF_ALU | BPF_MUL | BPF_X, 0), /* A = 300 */
                STMT(BPF_LDX | BPF_MEM, 15),     /* X = 7 */
                STMT(BPF_ALU | BPF_SUB | BPF_X, 0), /* A = 293 */
                STMT(BPF_MISC | BPF_TAX, 0),     /* X = 293 */
                STMT(BPF_LD | BPF_MEM, 0),       /* A = 7 */
                STMT(BPF_ALU | BPF_ADD | BPF_X, 0), /* A = 300 */
                STMT(BPF_RET | BPF_A, 0),
        };
        g_assert_cmphex(run(regs, ELEMENTSOF(regs), &d), ==, 300);

        const struct sock_filter ret_k[] = { RET(SECCOMP_RET_TRACE | 12) };
        g_assert_cmphex(run(ret_k, 1, &d), ==, SECCOMP_RET_TRACE | 12);

        /* A and X start at 0 */
        const struct sock_filter zero[] = { STMT(BPF_ALU | BPF_ADD | BPF_X, 0), STMT(BPF_ALU | BPF_OR | BPF_K, 0x50000), STMT(BPF_RET | BPF_A, 0) };
        g_assert_cmphex(run(zero, ELEMENTSOF(zero), &d), ==, SECCOMP_RET_ERRNO);
}

/* ---- jumps ---- */

typedef struct JumpCase {
        uint16_t op;
        uint32_t a, operand;
        bool taken;
} JumpCase;

static const JumpCase jump_cases[] = {
        { BPF_JEQ, 5, 5, true },          { BPF_JEQ, 5, 6, false },
        { BPF_JGT, 6, 5, true },          { BPF_JGT, 5, 5, false },
        { BPF_JGT, 0x80000000, 1, true }, /* unsigned */
        { BPF_JGE, 5, 5, true },          { BPF_JGE, 4, 5, false },
        { BPF_JGE, 1, 0xffffffff, false },
        { BPF_JSET, 0x6, 0x4, true },     { BPF_JSET, 0x6, 0x9, false },
};

static void test_jumps(void) {
        const struct seccomp_data d = {};

        for (size_t i = 0; i < ELEMENTSOF(jump_cases); i++) {
                const JumpCase *c = jump_cases + i;
                const uint32_t expected = c->taken ? SECCOMP_RET_TRAP : SECCOMP_RET_LOG;
                const struct sock_filter with_k[] = {
                        STMT(BPF_LD | BPF_IMM, c->a),
                        JUMP(BPF_JMP | c->op | BPF_K, c->operand, 1, 0),
                        RET(SECCOMP_RET_LOG),
                        RET(SECCOMP_RET_TRAP),
                };
                const struct sock_filter with_x[] = {
                        STMT(BPF_LDX | BPF_IMM, c->operand),
                        STMT(BPF_LD | BPF_IMM, c->a),
                        JUMP(BPF_JMP | c->op | BPF_X, 0, 2, 1),
                        RET(SECCOMP_RET_ALLOW),
                        RET(SECCOMP_RET_LOG),
                        RET(SECCOMP_RET_TRAP),
                };
                g_assert_cmphex(run(with_k, ELEMENTSOF(with_k), &d), ==, expected);
                g_assert_cmphex(run(with_x, ELEMENTSOF(with_x), &d), ==, expected);
        }

        const struct sock_filter ja[] = {
                STMT(BPF_JMP | BPF_JA, 2), RET(SECCOMP_RET_KILL_PROCESS), RET(SECCOMP_RET_KILL_THREAD), RET(SECCOMP_RET_ALLOW),
        };
        g_assert_cmphex(run(ja, ELEMENTSOF(ja), &d), ==, SECCOMP_RET_ALLOW);
}

/* Programs the kernel would refuse: the interpreter must not go wrong on them either. */
static void test_faults(void) {
        const struct seccomp_data d = {};
        const struct sock_filter no_ret[] = { STMT(BPF_LD | BPF_IMM, 1) };
        const struct sock_filter misaligned[] = { STMT(BPF_LD | BPF_W | BPF_ABS, 2), RET(SECCOMP_RET_ALLOW) };
        const struct sock_filter past_end[] = { STMT(BPF_LD | BPF_W | BPF_ABS, 64), RET(SECCOMP_RET_ALLOW) };
        const struct sock_filter far_jump[] = { STMT(BPF_JMP | BPF_JA, 5), RET(SECCOMP_RET_ALLOW) };
        const struct sock_filter bad_mem[] = { STMT(BPF_ST, 16), RET(SECCOMP_RET_ALLOW) };
        const struct sock_filter mod[] = { STMT(BPF_ALU | BPF_MOD | BPF_K, 3), RET(SECCOMP_RET_ALLOW) };
        const struct sock_filter bad_op[] = { STMT(0xffff, 0), RET(SECCOMP_RET_ALLOW) };

        g_assert_cmphex(prog_run(no_ret, ELEMENTSOF(no_ret), &d), ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(prog_run(misaligned, ELEMENTSOF(misaligned), &d), ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(prog_run(past_end, ELEMENTSOF(past_end), &d), ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(prog_run(far_jump, ELEMENTSOF(far_jump), &d), ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(prog_run(bad_mem, ELEMENTSOF(bad_mem), &d), ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(prog_run(mod, ELEMENTSOF(mod), &d), ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(prog_run(bad_op, ELEMENTSOF(bad_op), &d), ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(prog_run(no_ret, 0, &d), ==, SECCOMP_RET_KILL_PROCESS);
}

/* ---- unknown words of the data ---- */

#define NR_WORD (1U << (offsetof(struct seccomp_data, nr) / 4))
#define ARG0_LO_WORD (1U << (offsetof(struct seccomp_data, args) / 4))

static ProgOutcomes run_unknown(const struct sock_filter *insns, size_t n, const struct seccomp_data *d,
                                uint32_t unknown, size_t max_paths) {
        ProgOutcomes o;
        g_assert_cmpint(prog_validate(insns, n, NULL), ==, 0);
        prog_run_unknown(insns, n, d, unknown, max_paths, &o);
        return o;
}

/* A word that is unknown makes each jump on it go both ways, and what is computed from it (through
 * ALU, X and M[]) unknown; with no word unknown there is one way, prog_run()'s. */
static void test_unknown(void) {
        const struct sock_filter on_nr[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
                BPF_STMT(BPF_ST, 3),
                BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_IMM, 60),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct seccomp_data d = { .nr = 59 };
        ProgOutcomes o = run_unknown(on_nr, ELEMENTSOF(on_nr), &d, 0, 1);
        g_assert_cmphex(o.worst, ==, SECCOMP_RET_ERRNO | 1);
        g_assert_cmphex(o.best, ==, SECCOMP_RET_ERRNO | 1);
        g_assert_cmphex(prog_run(on_nr, ELEMENTSOF(on_nr), &d), ==, SECCOMP_RET_ERRNO | 1);
        o = run_unknown(on_nr, ELEMENTSOF(on_nr), &d, NR_WORD, 16);
        g_assert_false(o.overflow);
        g_assert_cmphex(o.worst, ==, SECCOMP_RET_ERRNO | 1);
        g_assert_cmphex(o.best, ==, SECCOMP_RET_ALLOW);
        /* another word unknown: nr decides alone */
        o = run_unknown(on_nr, ELEMENTSOF(on_nr), &d, ARG0_LO_WORD, 16);
        g_assert_cmphex(o.worst, ==, SECCOMP_RET_ERRNO | 1);
        g_assert_cmphex(o.best, ==, SECCOMP_RET_ERRNO | 1);

        /* RET A of an unknown A: anything; a division by an unknown X: 0 too */
        const struct sock_filter ret_a[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_STMT(BPF_RET | BPF_A, 0),
        };
        o = run_unknown(ret_a, ELEMENTSOF(ret_a), &d, NR_WORD, 16);
        g_assert_cmphex(o.worst, ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(o.best, ==, SECCOMP_RET_ALLOW);
        const struct sock_filter div[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_STMT(BPF_MISC | BPF_TAX, 0),
                BPF_STMT(BPF_LD | BPF_W | BPF_IMM, 100),
                BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
                BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 1000, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_LOG),
        };
        g_assert_cmphex(run(div, ELEMENTSOF(div), &d), ==, SECCOMP_RET_LOG);
        o = run_unknown(div, ELEMENTSOF(div), &d, NR_WORD, 16);
        g_assert_cmphex(o.worst, ==, SECCOMP_RET_KILL_THREAD); /* X may be 0 */
        g_assert_cmphex(o.best, ==, SECCOMP_RET_LOG);

        /* more ways through than allowed: anything */
        struct sock_filter many[2 * 12 + 1];
        size_t n = 0;
        many[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (int i = 0; i < 12; i++) {
                many[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 1U << i, 0, 0);
                many[n++] = (struct sock_filter) BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 0);
        }
        many[n - 1] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 2);
        o = run_unknown(many, n, &d, NR_WORD, 100);
        g_assert_true(o.overflow);
        g_assert_cmphex(o.worst, ==, SECCOMP_RET_KILL_PROCESS);
        g_assert_cmphex(o.best, ==, SECCOMP_RET_ALLOW);
        o = run_unknown(many, n, &d, NR_WORD, 1U << 12);
        g_assert_false(o.overflow);
        g_assert_cmphex(o.worst, ==, SECCOMP_RET_ERRNO | 2);
        g_assert_cmphex(o.best, ==, SECCOMP_RET_ERRNO | 2);
}

/* ---- chain precedence ---- */

typedef struct RetProg {
        struct sock_filter insn;
} RetProg;

/* chain of single-RET programs, values[0] the newest */
static EvalResult eval_rets(const uint32_t *values, size_t n) {
        RetProg progs[8];
        ChainProgram chain[8];
        const struct seccomp_data d = {};

        g_assert_cmpuint(n, <=, ELEMENTSOF(progs));
        for (size_t i = 0; i < n; i++) {
                progs[i].insn = (struct sock_filter) RET(values[i]);
                chain[i] = (ChainProgram) { .insns = &progs[i].insn, .len = 1 };
        }
        return chain_evaluate(chain, n, &d);
}

static void assert_chain(const uint32_t *values, size_t n, uint32_t ret, size_t decided_by) {
        EvalResult r = eval_rets(values, n);
        g_assert_cmphex(r.ret, ==, ret);
        g_assert_cmpuint(r.decided_by, ==, decided_by);
}

#define ASSERT_CHAIN(ret, decided_by, ...)                                                              \
        assert_chain((const uint32_t[]) { __VA_ARGS__ },                                                \
                     sizeof((const uint32_t[]) { __VA_ARGS__ }) / sizeof(uint32_t), (ret), (decided_by))

static void test_precedence(void) {
        /* the kernel's order, most restrictive first */
        static const uint32_t order[] = {
                SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP, SECCOMP_RET_ERRNO | 1,
                SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE | 1, SECCOMP_RET_LOG, SECCOMP_RET_ALLOW,
        };

        g_assert_cmphex(chain_evaluate(NULL, 0, &(struct seccomp_data) {}).ret, ==, SECCOMP_RET_ALLOW);
        g_assert_cmpuint(chain_evaluate(NULL, 0, &(struct seccomp_data) {}).decided_by, ==, 0);

        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                for (size_t j = i + 1; j < ELEMENTSOF(order); j++) {
                        const uint32_t new_wins[] = { order[i], order[j] }, old_wins[] = { order[j], order[i] };
                        if (order[i] == SECCOMP_RET_ALLOW)
                                continue;
                        assert_chain(new_wins, 2, order[i], 0);
                        assert_chain(old_wins, 2, order[i], 1);
                }

        /* ERRNO in the old filter, KILL_THREAD in the new: KILL_THREAD */
        ASSERT_CHAIN(SECCOMP_RET_KILL_THREAD, 0, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_ERRNO | EPERM);
        /* equal actions: the newest wins, with its data */
        ASSERT_CHAIN(SECCOMP_RET_ERRNO | 1, 0, SECCOMP_RET_ERRNO | 1, SECCOMP_RET_ERRNO | 2);
        ASSERT_CHAIN(SECCOMP_RET_ERRNO | 2, 0, SECCOMP_RET_ERRNO | 2, SECCOMP_RET_ERRNO | 1);
        ASSERT_CHAIN(SECCOMP_RET_TRACE | 3, 1, SECCOMP_RET_ALLOW, SECCOMP_RET_TRACE | 3, SECCOMP_RET_TRACE | 4);
        ASSERT_CHAIN(SECCOMP_RET_TRAP | 9, 2, SECCOMP_RET_LOG, SECCOMP_RET_ERRNO | 5, SECCOMP_RET_TRAP | 9, SECCOMP_RET_TRAP);
        /* all allow: exactly SECCOMP_RET_ALLOW, data dropped, as the kernel returns its initial value */
        ASSERT_CHAIN(SECCOMP_RET_ALLOW, 0, SECCOMP_RET_ALLOW | 5, SECCOMP_RET_ALLOW | 6);
        ASSERT_CHAIN(SECCOMP_RET_LOG | 8, 1, SECCOMP_RET_ALLOW | 5, SECCOMP_RET_LOG | 8);
        /* KILL_PROCESS is the lowest as a signed number; data bits never matter */
        ASSERT_CHAIN(SECCOMP_RET_KILL_PROCESS | 1, 1, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_KILL_PROCESS | 1);
        ASSERT_CHAIN(SECCOMP_RET_KILL_THREAD | 0xffff, 0, SECCOMP_RET_KILL_THREAD | 0xffff, SECCOMP_RET_KILL_THREAD);
        /* unknown actions sort by their signed value too */
        ASSERT_CHAIN(0x00010000, 1, SECCOMP_RET_TRAP, 0x00010000);
        ASSERT_CHAIN(SECCOMP_RET_KILL_THREAD, 1, 0x00010000, SECCOMP_RET_KILL_THREAD);
        ASSERT_CHAIN(0x80010000, 0, 0x80010000, SECCOMP_RET_KILL_THREAD);
        ASSERT_CHAIN(SECCOMP_RET_KILL_PROCESS, 1, 0x80010000, SECCOMP_RET_KILL_PROCESS);
        ASSERT_CHAIN(0x7ffe0000, 0, 0x7ffe0000, SECCOMP_RET_ALLOW);
}

/* ---- seccomp_data_from_syscall ---- */

static void test_data_from_syscall(void) {
        const uint64_t args[6] = { 1, 2, 3, 4, 5, 0xffffffffffffffffULL };
        struct seccomp_data d;

        g_assert_cmpint(seccomp_data_from_syscall("getpid", 0, NULL, 0, &d), ==, 0);
        g_assert_cmpint(d.nr, ==, SYS_getpid);
        g_assert_cmphex(d.arch, ==, AUDIT_ARCH_X86_64);
        g_assert_cmphex(d.instruction_pointer, ==, 0);
        g_assert_cmphex(d.args[0], ==, 0);

        g_assert_cmpint(seccomp_data_from_syscall("getpid", AUDIT_ARCH_I386, NULL, 0, &d), ==, 0);
        g_assert_cmpint(d.nr, ==, 20);
        g_assert_cmphex(d.arch, ==, AUDIT_ARCH_I386);

        g_assert_cmpint(seccomp_data_from_syscall("getpid", SCMP_ARCH_X32, NULL, 0, &d), ==, 0);
        g_assert_cmphex(d.nr, ==, 0x40000000 | 39);
        g_assert_cmphex(d.arch, ==, AUDIT_ARCH_X86_64);
        g_assert_cmpint(seccomp_data_from_syscall("39", SCMP_ARCH_X32, NULL, 0, &d), ==, 0);
        g_assert_cmphex(d.nr, ==, 0x40000000 | 39);

        g_assert_cmpint(seccomp_data_from_syscall("openat", AUDIT_ARCH_X86_64, args, 6, &d), ==, 0);
        g_assert_cmpint(d.nr, ==, SYS_openat);
        g_assert_cmpmem(d.args, sizeof(d.args), args, sizeof(args));

        g_assert_cmpint(seccomp_data_from_syscall("451", 0, args, 2, &d), ==, 0);
        g_assert_cmpint(d.nr, ==, 451);
        g_assert_cmphex(d.args[1], ==, 2);
        g_assert_cmphex(d.args[2], ==, 0);
        g_assert_cmpint(seccomp_data_from_syscall("-1", 0, NULL, 0, &d), ==, 0);
        g_assert_cmpint(d.nr, ==, -1);

        g_assert_cmpint(seccomp_data_from_syscall("no_such_syscall", 0, NULL, 0, &d), ==, -EINVAL);
        g_assert_cmpint(seccomp_data_from_syscall("socketcall", AUDIT_ARCH_X86_64, NULL, 0, &d), ==, -EINVAL);
        g_assert_cmpint(seccomp_data_from_syscall("socketcall", AUDIT_ARCH_I386, NULL, 0, &d), ==, 0);
        g_assert_cmpint(seccomp_data_from_syscall("getpid", 0, args, 7, &d), ==, -EINVAL);
        g_assert_cmpint(seccomp_data_from_syscall(NULL, 0, NULL, 0, &d), ==, -EINVAL);
}

/* ---- the real kernel ---- */

typedef struct TestFilter {
        const char *name;
        struct sock_filter *insns;
        size_t len;
} TestFilter;

typedef struct Call {
        const char *name;
        uint64_t args[6];
} Call;

static struct utsname uts; /* the same address in the forked children */

static Call calls[] = {
        { "getpid" },
        { "getpid", { 1, 2, 3, 4, 5, 6 } },
        { "getpid", { 0x100000001ULL } },
        { "getppid" },
        { "getuid" },
        { "umask", { 022 } },
        { "dup", { 0 } },
        { "dup", { 0, 200 } },
        { "personality", { 0xffffffff } },
        { "personality", { 0x0 } },
        { "uname", { 0 /* &uts */ } },
        { "getpriority", { PRIO_PROCESS, 0 } },
        { "getpriority", { PRIO_PGRP, 0 } },
        { "getpriority", { PRIO_USER, 0 } },
        { "getpgid", { 0, 7, 3 } },
        { "getpgid", { 0, 100, 0 } },
        { "getpgid", { 0, 0x80, 36 } },
        { "getpgid", { 0, 0xffffffff, 1 } },
        { "getpgid", { 0, 0x80000001, 5 } },
        { "getpgid", { 0, 0x12345678, 0x9abcdef1 } },
        { "getpgid", { 0, 0xfedcba98, 0x37 } },
        { "getsid", { 0 } },
        { "sched_yield" },
        { "unshare", { 0 } },
};

/* arch check, then single-syscall decisions covering every action that returns */
static const struct sock_filter f_basic[] = {
        LD_ARCH,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        RET(SECCOMP_RET_KILL_PROCESS),
        LD_NR,
        IF_NR(SYS_getppid, 1), RET(SECCOMP_RET_ERRNO | EACCES),
        IF_NR(SYS_umask, 1), RET(SECCOMP_RET_TRACE | 7),
        IF_NR(SYS_personality, 1), RET(SECCOMP_RET_LOG),
        IF_NR(SYS_uname, 1), RET(SECCOMP_RET_ERRNO | 5000), /* capped to MAX_ERRNO by the kernel */
        IF_NR(SYS_getpriority, 3),
        LD_ARG_LO(0),
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, PRIO_PGRP, 0, 1),
        RET(SECCOMP_RET_TRAP | 3),
        RET(SECCOMP_RET_ALLOW),
};

/* getpgid's spare arguments a1 = args[1], a2 = args[2] run through every ALU operation (K and X),
 * scratch memory and both length loads, folded into an accumulator so that each step shows in
 * the result, which comes back as the errno of RET A. Division by a2 == 0 must kill the thread. */
#define ACC_XOR_A STMT(BPF_LDX | BPF_MEM, 2), STMT(BPF_ALU | BPF_XOR | BPF_X, 0), STMT(BPF_ST, 2)
static const struct sock_filter f_arith[] = {
        LD_NR,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpgid, 1, 0),
        RET(SECCOMP_RET_ALLOW),
        LD_ARG_LO(2), STMT(BPF_ST, 1), STMT(BPF_MISC | BPF_TAX, 0),       /* M1 = X = a2 */
        LD_ARG_LO(1), STMT(BPF_ST, 0),                                     /* M0 = a1 */
        STMT(BPF_ALU | BPF_DIV | BPF_X, 0), STMT(BPF_ST, 2),               /* acc = a1 / a2 */
        STMT(BPF_LD | BPF_MEM, 0), STMT(BPF_ALU | BPF_LSH | BPF_X, 0),     /* acc ^= a1 << a2 */
        ACC_XOR_A,
        STMT(BPF_LDX | BPF_MEM, 1), STMT(BPF_LD | BPF_MEM, 0), STMT(BPF_ALU | BPF_RSH | BPF_X, 0),
        STMT(BPF_LDX | BPF_MEM, 2), STMT(BPF_ALU | BPF_ADD | BPF_X, 0), STMT(BPF_ST, 2), /* acc += a1 >> a2 */
        STMT(BPF_LD | BPF_MEM, 0), STMT(BPF_ALU | BPF_NEG, 0),
        STMT(BPF_LDX | BPF_MEM, 2), STMT(BPF_ALU | BPF_SUB | BPF_X, 0), STMT(BPF_ST, 2), /* acc = -a1 - acc */
        STMT(BPF_LD | BPF_MEM, 0),                                         /* acc ^= f(a1) */
        STMT(BPF_ALU | BPF_MUL | BPF_K, 0x9e3779b9), STMT(BPF_ALU | BPF_ADD | BPF_K, 7),
        STMT(BPF_ALU | BPF_SUB | BPF_K, 3), STMT(BPF_ALU | BPF_RSH | BPF_K, 3),
        STMT(BPF_ALU | BPF_OR | BPF_K, 0x10), STMT(BPF_ALU | BPF_AND | BPF_K, 0xfffffff7),
        STMT(BPF_ALU | BPF_XOR | BPF_K, 0x5a5a), STMT(BPF_ALU | BPF_LSH | BPF_K, 1),
        STMT(BPF_ALU | BPF_DIV | BPF_K, 3),
        ACC_XOR_A,
        STMT(BPF_LDX | BPF_MEM, 1), STMT(BPF_ALU | BPF_OR | BPF_X, 0), STMT(BPF_ST, 3), /* M3 = acc | a2 */
        STMT(BPF_LD | BPF_MEM, 2), STMT(BPF_ALU | BPF_AND | BPF_X, 0), STMT(BPF_ALU | BPF_OR | BPF_K, 1),
        STMT(BPF_LDX | BPF_MEM, 3), STMT(BPF_ALU | BPF_MUL | BPF_X, 0),    /* acc ^= ((acc & a2) | 1) * M3 */
        ACC_XOR_A,
        STMT(BPF_MISC | BPF_TAX, 0), STMT(BPF_ALU | BPF_RSH | BPF_K, 12), STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
        STMT(BPF_MISC | BPF_TAX, 0), STMT(BPF_ALU | BPF_RSH | BPF_K, 24), STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
        STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff),                            /* fold to 12 bits */
        JUMP(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 1),
        STMT(BPF_ALU | BPF_XOR | BPF_K, 0x800),
        STMT(BPF_MISC | BPF_TAX, 0), STMT(BPF_LD | BPF_W | BPF_LEN, 0), STMT(BPF_ALU | BPF_ADD | BPF_X, 0),
        STMT(BPF_LDX | BPF_W | BPF_LEN, 0), STMT(BPF_ALU | BPF_ADD | BPF_X, 0), /* += 2 * 64 */
        STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff),
        STMT(BPF_LDX | BPF_IMM, 0x7ff),
        JUMP(BPF_JMP | BPF_JGT | BPF_X, 0, 0, 1),
        STMT(BPF_ALU | BPF_SUB | BPF_K, 0x400),
        JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x200, 0, 1),
        STMT(BPF_ALU | BPF_XOR | BPF_K, 0x100),
        STMT(BPF_MISC | BPF_TAX, 0), STMT(BPF_LD | BPF_IMM, 0), STMT(BPF_MISC | BPF_TXA, 0),
        JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 1, 0),
        RET(SECCOMP_RET_KILL_PROCESS),
        STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff),
        STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
        STMT(BPF_RET | BPF_A, 0),
};

/* stacked on f_basic: same and different actions for the same syscalls */
static const struct sock_filter f_newer[] = {
        LD_NR,
        IF_NR(SYS_getpid, 1), RET(SECCOMP_RET_ERRNO | 2),
        IF_NR(SYS_getppid, 1), RET(SECCOMP_RET_ERRNO | 3),       /* vs ERRNO(13): the newer wins */
        IF_NR(SYS_umask, 1), RET(SECCOMP_RET_LOG),               /* vs TRACE(7): TRACE */
        IF_NR(SYS_uname, 1), RET(SECCOMP_RET_TRACE | 9),         /* vs ERRNO(5000): ERRNO */
        IF_NR(SYS_personality, 1), RET(SECCOMP_RET_USER_NOTIF),  /* vs LOG; no listener: ENOSYS */
        IF_NR(SYS_getsid, 1), RET(SECCOMP_RET_TRAP),
        IF_NR(SYS_sched_yield, 1), RET(SECCOMP_RET_KILL_THREAD),
        IF_NR(SYS_getuid, 1), RET(0x00010000),                   /* unknown action: kills the process */
        RET(SECCOMP_RET_ALLOW),
};

static TestFilter filter_static(const char *name, const struct sock_filter *insns, size_t len) {
        TestFilter f = { .name = name, .insns = g_memdup2(insns, len * sizeof(*insns)), .len = len };
        return f;
}

static TestFilter filter_export(const char *name, scmp_filter_ctx ctx) {
        _cleanup_close_ int fd = memfd_create("sectree-test-filter", MFD_CLOEXEC);
        TestFilter f = { .name = name };
        off_t size;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(seccomp_export_bpf(ctx, fd), ==, 0);
        size = lseek(fd, 0, SEEK_CUR);
        g_assert_cmpint(size, >, 0);
        f.len = (size_t) size / sizeof(struct sock_filter);
        f.insns = g_malloc(size);
        g_assert_cmpint(pread(fd, f.insns, size, 0), ==, size);
        seccomp_release(ctx);
        return f;
}

#define RULE(ctx, action, name, ...) \
        g_assert_cmpint(seccomp_rule_add((ctx), (action), SCMP_SYS(name), __VA_ARGS__), ==, 0)

static TestFilter filter_args(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

        g_assert_nonnull(ctx);
        RULE(ctx, SCMP_ACT_ERRNO(EACCES), getpriority, 1, SCMP_A0(SCMP_CMP_EQ, PRIO_PGRP));
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), getpriority, 1, SCMP_A0(SCMP_CMP_EQ, PRIO_USER));
        RULE(ctx, SCMP_ACT_ERRNO(EINVAL), umask, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 022, 022));
        RULE(ctx, SCMP_ACT_ERRNO(EBADF), dup, 1, SCMP_A0(SCMP_CMP_LE, 2));
        RULE(ctx, SCMP_ACT_KILL_PROCESS, dup, 1, SCMP_A1(SCMP_CMP_GT, 100));
        RULE(ctx, SCMP_ACT_ERRNO(ERANGE), getpgid, 1, SCMP_A1(SCMP_CMP_GE, 100));
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), personality, 1, SCMP_A0(SCMP_CMP_NE, 0xffffffff));
        RULE(ctx, SCMP_ACT_LOG, getsid, 1, SCMP_A0(SCMP_CMP_LT, 5));
        RULE(ctx, SCMP_ACT_TRACE(1), getpid, 1, SCMP_A5(SCMP_CMP_EQ, 6));
        RULE(ctx, SCMP_ACT_ERRNO(ENOSPC), getpid, 1, SCMP_A0(SCMP_CMP_EQ, 0x100000001ULL));
        return filter_export("libseccomp-args", ctx);
}

/* default deny: only what the test child itself needs, and a few probes */
static TestFilter filter_allowlist(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        static const char *const allowed[] = {
                "write", "exit", "exit_group", "seccomp", "rt_sigreturn", "futex", /* the test child's own needs */
                "getpid", "getppid", "uname", "getpriority",
        };

        g_assert_nonnull(ctx);
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++)
                g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, seccomp_syscall_resolve_name(allowed[i]), 0), ==, 0);
        RULE(ctx, SCMP_ACT_ALLOW, dup, 1, SCMP_A0(SCMP_CMP_EQ, 0));
        RULE(ctx, SCMP_ACT_KILL_THREAD, getpgid, 1, SCMP_A2(SCMP_CMP_EQ, 1));
        return filter_export("libseccomp-allowlist", ctx);
}

static TestFilter filter_container(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        static const char *const denied[] = {
                "mount", "umount2", "reboot", "kexec_load", "init_module", "ptrace", "bpf", "unshare",
                "setns", "keyctl", "add_key", "pivot_root", "swapon", "acct", "sethostname",
        };

        g_assert_nonnull(ctx);
        g_assert_cmpint(seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), ==, 0);
        for (size_t i = 0; i < ELEMENTSOF(denied); i++)
                g_assert_cmpint(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), seccomp_syscall_resolve_name(denied[i]), 0), ==, 0);
        RULE(ctx, SCMP_ACT_ERRNO(EPERM), personality, 1, SCMP_A0(SCMP_CMP_NE, 0xffffffff));
        return filter_export("libseccomp-container", ctx);
}

/* What a syscall did in the child. */
typedef enum OutcomeKind {
        OUTCOME_RETURNED,      /* value: the raw return, -errno on failure */
        OUTCOME_SUCCESS,       /* prediction only: the syscall ran, any value >= 0 */
        OUTCOME_TRAPPED,       /* value: si_errno of the SIGSYS (the TRAP data), caught by a handler */
        OUTCOME_KILLED,        /* value: the signal that ended the process */
        OUTCOME_THREAD_KILLED, /* the calling thread vanished, the process lived on */
} OutcomeKind;

typedef struct Outcome {
        OutcomeKind kind;
        int64_t value;
} Outcome;

/* What the kernel does with ret (kernel/seccomp.c, __seccomp_filter()), for a syscall made by the
 * only thread of a process, or by one of two threads. */
static Outcome outcome_predict(uint32_t ret, bool threaded) {
        uint32_t data = ret & SECCOMP_RET_DATA;

        switch (ret & SECCOMP_RET_ACTION_FULL) {
        case SECCOMP_RET_ALLOW:
        case SECCOMP_RET_LOG:
                return (Outcome) { OUTCOME_SUCCESS, 0 };
        case SECCOMP_RET_ERRNO:
                return (Outcome) { OUTCOME_RETURNED, -(int64_t) MIN(data, MAX_ERRNO) };
        case SECCOMP_RET_TRACE:      /* no tracer */
        case SECCOMP_RET_USER_NOTIF: /* no listener on the filter */
                return (Outcome) { OUTCOME_RETURNED, -ENOSYS };
        case SECCOMP_RET_TRAP:
                return (Outcome) { OUTCOME_TRAPPED, data };
        case SECCOMP_RET_KILL_THREAD: /* the last thread of a process takes the process with it */
                return threaded ? (Outcome) { OUTCOME_THREAD_KILLED, 0 } : (Outcome) { OUTCOME_KILLED, SIGSYS };
        default: /* KILL_PROCESS, and unknown actions are treated as such */
                return (Outcome) { OUTCOME_KILLED, SIGSYS };
        }
}

static bool outcome_fatal(const Outcome *o) {
        return o->kind == OUTCOME_TRAPPED || o->kind == OUTCOME_KILLED || o->kind == OUTCOME_THREAD_KILLED;
}

static bool outcome_matches(const Outcome *predicted, const Outcome *got) {
        if (predicted->kind == OUTCOME_SUCCESS)
                return got->kind == OUTCOME_RETURNED && got->value >= 0;
        return predicted->kind == got->kind && predicted->value == got->value;
}

static char *outcome_to_string(const Outcome *o) {
        switch (o->kind) {
        case OUTCOME_RETURNED:
                if (o->value < 0 && strerrorname_np((int) -o->value))
                        return g_strdup_printf("returned -%s", strerrorname_np((int) -o->value));
                return g_strdup_printf("returned %" PRIi64, o->value);
        case OUTCOME_SUCCESS:
                return g_strdup("ran (any value >= 0)");
        case OUTCOME_TRAPPED:
                return g_strdup_printf("SIGSYS caught, si_errno %" PRIi64, o->value);
        case OUTCOME_KILLED:
                return g_strdup_printf("process killed by SIG%s", sigabbrev_np((int) o->value) ?: "?");
        case OUTCOME_THREAD_KILLED:
                return g_strdup("thread killed, process alive");
        }
        return NULL;
}

/* Fails the test but goes on, so that every mismatch is listed. */
_printf_(1, 2) static void test_fail_printf(const char *format, ...) {
        g_autofree char *msg = NULL;
        va_list ap;

        va_start(ap, format);
        msg = g_strdup_vprintf(format, ap);
        va_end(ap);
        g_test_message("MISMATCH: %s", msg);
        g_test_fail();
}

/* ---- the child ---- */

typedef struct Report {
        int32_t call;
        int32_t kind; /* OutcomeKind */
        int64_t value;
        int64_t extra; /* TRAPPED: si_syscall */
} Report;

static int child_fd = -1;
static volatile sig_atomic_t child_call = -1;

static void child_report(const Report *r) {
        if (write(child_fd, r, sizeof(*r)) != sizeof(*r))
                _exit(EXIT_FAILURE);
}

static void child_sigsys(int sig, siginfo_t *si, void *ucontext) {
        child_report(&(Report) { .call = child_call, .kind = OUTCOME_TRAPPED, .value = si->si_errno, .extra = si->si_syscall });
        _exit(si->si_code == SIGSYS_CODE_SECCOMP ? EXIT_SUCCESS : EXIT_FAILURE);
}

#define EXIT_SETUP_FAILED 71

static void child_setup(int fd) {
        struct sigaction sa = { .sa_sigaction = child_sigsys, .sa_flags = SA_SIGINFO };

        child_fd = fd;
        if (fcntl(0, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != 0)
                _exit(EXIT_SETUP_FAILED);
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || setrlimit(RLIMIT_CORE, &(struct rlimit) {}) < 0)
                _exit(EXIT_SETUP_FAILED);
        if (sigaction(SIGSYS, &sa, NULL) < 0)
                _exit(EXIT_SETUP_FAILED);
        alarm(20); /* a syscall that blocks (it should not) ends the child with SIGALRM, not the test */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(EXIT_SETUP_FAILED);
}

static void child_install(const TestFilter *const *chain, size_t n, unsigned flags) {
        for (size_t i = 0; i < n; i++) {
                struct sock_fprog prog = { .len = (unsigned short) chain[i]->len, .filter = chain[i]->insns };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) != 0)
                        _exit(EXIT_SETUP_FAILED);
        }
}

static void child_call_one(const struct seccomp_data *data, size_t call) {
        const struct seccomp_data *d = data + call;
        long r;

        child_call = (sig_atomic_t) call;
        r = syscall(d->nr, d->args[0], d->args[1], d->args[2], d->args[3], d->args[4], d->args[5]);
        child_report(&(Report) { .call = (int32_t) call, .kind = OUTCOME_RETURNED, .value = r < 0 ? -errno : r });
}

static _Noreturn void child_run(const TestFilter *const *chain, size_t n, const size_t *which, size_t n_which,
                                const struct seccomp_data *data, int fd) {
        child_setup(fd);
        child_install(chain, n, 0);
        for (size_t i = 0; i < n_which; i++)
                child_call_one(data, which[i]);
        _exit(EXIT_SUCCESS);
}

typedef struct ThreadCall {
        const struct seccomp_data *data;
        size_t call;
        int ready, go, done; /* atomics: the thread must not depend on any syscall the filters may refuse */
} ThreadCall;

static void *thread_call(void *userdata) {
        ThreadCall *tc = userdata;

        __atomic_store_n(&tc->ready, 1, __ATOMIC_RELEASE); /* glibc's thread start-up is done */
        while (!__atomic_load_n(&tc->go, __ATOMIC_ACQUIRE))
                __builtin_ia32_pause();
        child_call_one(tc->data, tc->call);
        __atomic_store_n(&tc->done, 1, __ATOMIC_RELEASE);
        return NULL;
}

/* The call made by a second thread, created before the chain is installed (the filters may
 * refuse clone and mmap) and put under it by TSYNC, so that KILL_THREAD and KILL_PROCESS differ. */
static _Noreturn void child_run_threaded(const TestFilter *const *chain, size_t n, size_t call,
                                         const struct seccomp_data *data, int fd) {
        ThreadCall tc = { .data = data, .call = call };
        pthread_t t;

        child_setup(fd);
        if (pthread_create(&t, NULL, thread_call, &tc) != 0)
                _exit(EXIT_SETUP_FAILED);
        while (!__atomic_load_n(&tc.ready, __ATOMIC_ACQUIRE))
                __builtin_ia32_pause();
        child_install(chain, n, SECCOMP_FILTER_FLAG_TSYNC);
        __atomic_store_n(&tc.go, 1, __ATOMIC_RELEASE);
        if (pthread_join(t, NULL) != 0) /* the kernel clears the thread's tid even when it is killed */
                _exit(EXIT_SETUP_FAILED);
        if (!__atomic_load_n(&tc.done, __ATOMIC_ACQUIRE))
                child_report(&(Report) { .call = (int32_t) call, .kind = OUTCOME_THREAD_KILLED });
        _exit(EXIT_SUCCESS);
}

/* ---- the parent ---- */

typedef struct Observed {
        Outcome predicted[ELEMENTSOF(calls)];
        Outcome got[ELEMENTSOF(calls)];
        bool seen[ELEMENTSOF(calls)];
} Observed;

typedef struct ChainRun {
        const TestFilter *const *chain; /* oldest first, as installed */
        size_t n;
        struct seccomp_data data[ELEMENTSOF(calls)];
        Observed single;   /* every call, by the only thread of a child */
        Observed threaded; /* the fatal calls, by the second thread of a child */
} ChainRun;

static void observed_collect(Observed *o, const struct seccomp_data *data, int fd) {
        Report r;
        ssize_t l;

        while ((l = read(fd, &r, sizeof(r))) == sizeof(r)) {
                g_assert_cmpint(r.call, >=, 0);
                g_assert_cmpint(r.call, <, (int) ELEMENTSOF(calls));
                if (r.kind == OUTCOME_TRAPPED)
                        g_assert_cmpint(r.extra, ==, data[r.call].nr); /* si_syscall */
                o->got[r.call] = (Outcome) { r.kind, r.value };
                o->seen[r.call] = true;
        }
        g_assert_cmpint(l, ==, 0);
}

/* Records the death of a child: the first of its calls without a report is the one that died. */
static void observed_died(Observed *o, const size_t *which, size_t n, int sig) {
        for (size_t i = 0; i < n; i++)
                if (!o->seen[which[i]]) {
                        o->got[which[i]] = (Outcome) { OUTCOME_KILLED, sig };
                        o->seen[which[i]] = true;
                        return;
                }
        g_test_fail_printf("child died by signal %d after reporting every call", sig);
}

/* Runs calls which[0..n) in one child (threaded: one call, from a second thread). */
static void chain_run_child(ChainRun *cr, const size_t *which, size_t n, bool threaded) {
        Observed *o = threaded ? &cr->threaded : &cr->single;
        int pipefd[2], status;
        pid_t pid;

        g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(pipefd[0]);
                if (threaded)
                        child_run_threaded(cr->chain, cr->n, which[0], cr->data, pipefd[1]);
                child_run(cr->chain, cr->n, which, n, cr->data, pipefd[1]);
        }
        close(pipefd[1]);
        observed_collect(o, cr->data, pipefd[0]);
        close(pipefd[0]);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);

        if (WIFEXITED(status))
                g_assert_cmpint(WEXITSTATUS(status), ==, EXIT_SUCCESS);
        else
                observed_died(o, which, n, WTERMSIG(status));
}

static void chain_predict(ChainRun *cr) {
        ChainProgram progs[8];

        g_assert_cmpuint(cr->n, <=, ELEMENTSOF(progs));
        for (size_t i = 0; i < cr->n; i++) /* the chain to evaluate is newest first */
                progs[i] = (ChainProgram) { .insns = cr->chain[cr->n - 1 - i]->insns, .len = cr->chain[cr->n - 1 - i]->len };

        for (size_t c = 0; c < ELEMENTSOF(calls); c++) {
                EvalResult r = chain_evaluate(progs, cr->n, cr->data + c);
                char action[ACTION_STRING_MAX];

                cr->single.predicted[c] = outcome_predict(r.ret, false);
                cr->threaded.predicted[c] = outcome_predict(r.ret, true);
                g_test_message("  %s(%#" PRIx64 ", %#" PRIx64 ", %#" PRIx64 "): %s from filter %zu",
                               calls[c].name, calls[c].args[0], calls[c].args[1], calls[c].args[2],
                               action_to_string(r.ret, action, sizeof(action)), r.decided_by);
        }
}

static void observed_compare(const ChainRun *cr, const Observed *o, const char *mode, bool fatal_only) {
        for (size_t c = 0; c < ELEMENTSOF(calls); c++) {
                if (fatal_only && !outcome_fatal(o->predicted + c))
                        continue;

                g_autofree char *p = outcome_to_string(o->predicted + c);
                g_autofree char *g = o->seen[c] ? outcome_to_string(o->got + c) : g_strdup("nothing");
                if (!o->seen[c] || !outcome_matches(o->predicted + c, o->got + c))
                        test_fail_printf("%s, chain of %zu, newest %s: %s(%#" PRIx64 ", %#" PRIx64 ", %#" PRIx64 "): predicted %s, kernel: %s",
                                           mode, cr->n, cr->chain[cr->n - 1]->name, calls[c].name, calls[c].args[0],
                                           calls[c].args[1], calls[c].args[2], p, g);
        }
}

static size_t chain_check_against_kernel(const TestFilter *const *chain, size_t n) {
        g_autofree ChainRun *cr = g_new0(ChainRun, 1);
        size_t safe[ELEMENTSOF(calls)], n_safe = 0, n_fatal = 0;

        cr->chain = chain;
        cr->n = n;
        g_test_message("chain (oldest first):");
        for (size_t i = 0; i < n; i++) {
                g_test_message("  %s (%zu insns)", chain[i]->name, chain[i]->len);
                g_assert_cmpint(prog_validate(chain[i]->insns, chain[i]->len, NULL), ==, 0);
        }
        for (size_t c = 0; c < ELEMENTSOF(calls); c++)
                g_assert_cmpint(seccomp_data_from_syscall(calls[c].name, 0, calls[c].args, ELEMENTSOF(calls[c].args), cr->data + c), ==, 0);
        chain_predict(cr);

        /* the calls that return run in one child, in order; each fatal one gets its own two */
        for (size_t c = 0; c < ELEMENTSOF(calls); c++)
                if (!outcome_fatal(cr->single.predicted + c))
                        safe[n_safe++] = c;
        chain_run_child(cr, safe, n_safe, false);
        for (size_t c = 0; c < ELEMENTSOF(calls); c++)
                if (outcome_fatal(cr->single.predicted + c)) {
                        chain_run_child(cr, &c, 1, false);
                        chain_run_child(cr, &c, 1, true);
                        n_fatal++;
                }

        observed_compare(cr, &cr->single, "single thread", false);
        observed_compare(cr, &cr->threaded, "second thread", true);
        return n_fatal;
}

static void filter_clear(TestFilter *f) {
        g_free(f->insns);
}

static void test_kernel(void) {
        if (!tests_require_root())
                return;

        for (size_t c = 0; c < ELEMENTSOF(calls); c++)
                if (streq(calls[c].name, "uname"))
                        calls[c].args[0] = (uint64_t) (uintptr_t) &uts;

        _cleanup_(filter_clear) TestFilter basic = filter_static("basic", f_basic, ELEMENTSOF(f_basic));
        _cleanup_(filter_clear) TestFilter arith = filter_static("arith", f_arith, ELEMENTSOF(f_arith));
        _cleanup_(filter_clear) TestFilter newer = filter_static("newer", f_newer, ELEMENTSOF(f_newer));
        _cleanup_(filter_clear) TestFilter args = filter_args();
        _cleanup_(filter_clear) TestFilter allow = filter_allowlist();
        _cleanup_(filter_clear) TestFilter container = filter_container();
        const TestFilter *const chains[][3] = {
                { &basic },
                { &arith },
                { &newer },
                { &args },
                { &allow },
                { &container },
                { &basic, &newer },
                { &newer, &basic },
                { &args, &arith },
                { &container, &args },
                { &allow, &basic, &newer },
                { &arith, &args, &allow },
                { &container, &newer, &arith },
        };
        size_t n_fatal = 0;

        for (size_t i = 0; i < ELEMENTSOF(chains); i++) {
                size_t n = 0;
                while (n < ELEMENTSOF(chains[i]) && chains[i][n])
                        n++;
                n_fatal += chain_check_against_kernel(chains[i], n);
        }
        /* the comparison must have exercised the fatal outcomes too */
        g_test_message("%zu fatal outcomes compared", n_fatal);
        g_assert_cmpuint(n_fatal, >=, 10);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/eval/alu", test_alu);
        g_test_add_func("/eval/alu-edge-cases", test_alu_edge_cases);
        g_test_add_func("/eval/loads", test_loads);
        g_test_add_func("/eval/jumps", test_jumps);
        g_test_add_func("/eval/faults", test_faults);
        g_test_add_func("/eval/unknown", test_unknown);
        g_test_add_func("/eval/chain/precedence", test_precedence);
        g_test_add_func("/eval/data-from-syscall", test_data_from_syscall);
        g_test_add_func("/eval/kernel/chains", test_kernel);
        return g_test_run();
}
