/* eval.c: run seccomp classic-BPF programs and whole chains the way the kernel does */
#include "core/eval.h"

#include <linux/audit.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/utsname.h>

#include "core/util.h"

#define X32_SYSCALL_BIT 0x40000000U /* __X32_SYSCALL_BIT */

/* What the kernel's converted program does where a classic program could go wrong: nothing of
 * this can happen to a program prog_validate() accepts, except division by X == 0. */
#define RUN_FAULT SECCOMP_RET_KILL_PROCESS

/* A register or memory word, and whether it is computed from a word of the data that is unknown. */
typedef struct Word {
        uint32_t v;
        bool unknown;
} Word;

typedef struct Machine {
        size_t pc;
        Word a, x;
        Word mem[BPF_MEMWORDS];
} Machine;

/* One program's run, all of its paths. */
typedef struct Run {
        const struct sock_filter *insns;
        size_t n;
        const struct seccomp_data *data;
        uint32_t unknown_words;
        size_t n_paths, max_paths;
        bool any; /* some path returned */
        ProgOutcomes *o;
} Run;

static void run_returns(Run *r, uint32_t ret) {
        ProgOutcomes *o = r->o;
        if (!r->any) {
                o->worst = o->best = ret;
                r->any = true;
                return;
        }
        if (action_outranks(ret, o->worst))
                o->worst = ret;
        if (action_outranks(o->best, ret))
                o->best = ret;
}

/* Returns false on a load the kernel would have refused to install. */
static bool load_data_word(const Run *r, uint32_t k, Word *ret) {
        if (k >= sizeof(struct seccomp_data) || (k & 3))
                return false;
        memcpy(&ret->v, (const uint8_t *) r->data + k, sizeof(ret->v));
        ret->unknown = (r->unknown_words >> (k / 4)) & 1;
        return true;
}

static bool exec_ld(const Run *r, const Machine *m, const struct sock_filter *f, Word *dst) {
        if (BPF_SIZE(f->code) != BPF_W)
                return false;
        switch (BPF_MODE(f->code)) {
        case BPF_IMM:
                *dst = (Word) { f->k };
                return true;
        case BPF_LEN: /* seccomp_check_filter() rewrites this to an immediate */
                *dst = (Word) { sizeof(struct seccomp_data) };
                return true;
        case BPF_MEM:
                if (f->k >= BPF_MEMWORDS)
                        return false;
                *dst = m->mem[f->k];
                return true;
        case BPF_ABS:
                return BPF_CLASS(f->code) == BPF_LD && load_data_word(r, f->k, dst);
        }
        return false;
}

/* Classic BPF arithmetic on A. DIV by X == 0 does not fault: the kernel's conversion makes the
 * program return 0 there, which *ret_early reports. Shifts by X use the low 5 bits, as the
 * 32-bit shifts of the BPF interpreter and of the x86 JIT do. */
static bool exec_alu(Machine *m, const struct sock_filter *f, bool *ret_early) {
        Word v = BPF_SRC(f->code) == BPF_X ? m->x : (Word) { f->k };

        if (f->code == (BPF_ALU | BPF_NEG | BPF_X))
                return false;
        m->a.unknown = m->a.unknown || v.unknown;
        switch (BPF_OP(f->code)) {
        case BPF_ADD: m->a.v += v.v; return true;
        case BPF_SUB: m->a.v -= v.v; return true;
        case BPF_MUL: m->a.v *= v.v; return true;
        case BPF_AND: m->a.v &= v.v; return true;
        case BPF_OR: m->a.v |= v.v; return true;
        case BPF_XOR: m->a.v ^= v.v; return true;
        case BPF_LSH: m->a.v <<= v.v & 31; return true;
        case BPF_RSH: m->a.v >>= v.v & 31; return true;
        case BPF_NEG: m->a.v = -m->a.v; return true;
        case BPF_DIV:
                if (v.v == 0) {
                        *ret_early = BPF_SRC(f->code) == BPF_X;
                        return *ret_early;
                }
                m->a.v /= v.v;
                return true;
        }
        return false; /* MOD and anything unknown: seccomp refuses those */
}

static bool jump_taken(const Machine *m, const struct sock_filter *f, bool *ok) {
        uint32_t v = BPF_SRC(f->code) == BPF_X ? m->x.v : f->k;

        *ok = true;
        switch (BPF_OP(f->code)) {
        case BPF_JEQ: return m->a.v == v;
        case BPF_JGT: return m->a.v > v;
        case BPF_JGE: return m->a.v >= v;
        case BPF_JSET: return (m->a.v & v) != 0;
        }
        *ok = false;
        return false;
}

static bool exec_store(Machine *m, const struct sock_filter *f) {
        if (f->k >= BPF_MEMWORDS)
                return false;
        m->mem[f->k] = f->code == BPF_ST ? m->a : m->x;
        return true;
}

static bool exec_misc(Machine *m, const struct sock_filter *f) {
        switch (BPF_MISCOP(f->code)) {
        case BPF_TAX: m->x = m->a; return true;
        case BPF_TXA: m->a = m->x; return true;
        }
        return false;
}

/* Executes the non-jump, non-return instruction at f; false on a fault. */
static bool exec_simple(const Run *r, Machine *m, const struct sock_filter *f, bool *ret_zero) {
        switch (BPF_CLASS(f->code)) {
        case BPF_LD:
                return exec_ld(r, m, f, &m->a);
        case BPF_LDX:
                return exec_ld(r, m, f, &m->x);
        case BPF_ST:
        case BPF_STX:
                return exec_store(m, f);
        case BPF_ALU:
                return exec_alu(m, f, ret_zero);
        case BPF_MISC:
                return exec_misc(m, f);
        }
        return false;
}

/* The value a RET returns; an unknown A may be any value at all (both ends are returned). */
static void exec_ret(Run *r, const Machine *m, const struct sock_filter *f) {
        if (f->code == (BPF_RET | BPF_A) && m->a.unknown) {
                run_returns(r, SECCOMP_RET_KILL_PROCESS);
                run_returns(r, SECCOMP_RET_ALLOW);
        } else if (f->code == (BPF_RET | BPF_A))
                run_returns(r, m->a.v);
        else
                run_returns(r, f->code == (BPF_RET | BPF_K) ? f->k : RUN_FAULT);
}

static void run_path(Run *r, Machine m);

/* Moves m->pc to pc + 1 + off; false if that is past the end (the kernel would not have installed
 * the jump). */
static bool go(const Run *r, Machine *m, uint64_t off) {
        uint64_t next = (uint64_t) m->pc + 1 + off;
        if (next >= r->n)
                return false;
        m->pc = (size_t) next;
        return true;
}

/* Moves m on; false on a fault. A jump that depends on an unknown word goes both ways: the taken
 * one as a path of its own, counted (Run.max_paths). */
static bool exec_jmp(Run *r, Machine *m, const struct sock_filter *f) {
        bool ok;

        if (BPF_OP(f->code) == BPF_JA)
                return go(r, m, f->k);
        bool taken = jump_taken(m, f, &ok);
        if (!ok)
                return false;
        if (m->a.unknown || (BPF_SRC(f->code) == BPF_X && m->x.unknown)) {
                Machine other = *m;
                if (++r->n_paths > r->max_paths) {
                        r->o->overflow = true;
                        return true;
                }
                if (go(r, &other, f->jt))
                        run_path(r, other);
                else
                        run_returns(r, RUN_FAULT);
                return go(r, m, f->jf);
        }
        return go(r, m, taken ? f->jt : f->jf);
}

/* An unknown X may be 0: a division by it returns 0 there, and A is unknown where it is not. */
static bool div_by_unknown(Run *r, Machine *m, const struct sock_filter *f) {
        if (f->code != (BPF_ALU | BPF_DIV | BPF_X) || !m->x.unknown || m->x.v == 0)
                return false;
        run_returns(r, 0);
        m->a.unknown = true;
        return true;
}

static void run_path(Run *r, Machine m) {
        while (m.pc < r->n && !r->o->overflow) {
                const struct sock_filter *f = r->insns + m.pc;
                bool ret_zero = false;

                switch (BPF_CLASS(f->code)) {
                case BPF_RET:
                        exec_ret(r, &m, f);
                        return;
                case BPF_JMP:
                        if (!exec_jmp(r, &m, f)) {
                                run_returns(r, RUN_FAULT);
                                return;
                        }
                        continue;
                }
                (void) div_by_unknown(r, &m, f);
                if (!exec_simple(r, &m, f, &ret_zero)) {
                        run_returns(r, RUN_FAULT);
                        return;
                }
                if (ret_zero) {
                        run_returns(r, 0);
                        return;
                }
                m.pc++;
        }
        if (!r->o->overflow)
                run_returns(r, RUN_FAULT); /* ran off the end: the kernel requires a final RET */
}

void prog_run_unknown(const struct sock_filter *insns, size_t n, const struct seccomp_data *data,
                      uint32_t unknown_words, size_t max_paths, ProgOutcomes *ret) {
        /* the kernel clears A and X; M[] is only read after a store */
        Run r = { .insns = insns, .n = n, .data = data, .unknown_words = unknown_words, .n_paths = 1,
                  .max_paths = max_paths, .o = ret };
        *ret = (ProgOutcomes) {};
        run_path(&r, (Machine) {});
        if (ret->overflow) {
                ret->worst = SECCOMP_RET_KILL_PROCESS;
                ret->best = SECCOMP_RET_ALLOW;
        }
}

uint32_t prog_run(const struct sock_filter *insns, size_t n, const struct seccomp_data *data) {
        ProgOutcomes o;
        prog_run_unknown(insns, n, data, 0, 1, &o);
        return o.worst; /* one path: worst and best are its value */
}

/* seccomp_run_filters(): ACTION_ONLY() compares the action bits as a signed 32-bit number, the
 * lowest wins, and only a strictly lower one replaces the current winner. */
static int32_t action_only(uint32_t ret) {
        return (int32_t) (ret & SECCOMP_RET_ACTION_FULL);
}

bool action_outranks(uint32_t cur, uint32_t best) {
        return action_only(cur) < action_only(best);
}

#define KV(a, b, c) (((uint32_t) (a) << 16) + ((uint32_t) (b) << 8) + (uint32_t) (c))

uint32_t kernel_version_parse(const char *release) {
        unsigned a = 0, b = 0, c = 0;
        if (!release || sscanf(release, "%u.%u.%u", &a, &b, &c) < 2 || a > 255 || b > 255)
                return 0;
        return KV(a, b, MIN(c, 255U));
}

uint32_t kernel_version_running(void) {
        static uint32_t cached; /* a race writes the same value */
        uint32_t v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
        struct utsname u;
        if (v)
                return v;
        v = uname(&u) < 0 ? 0 : kernel_version_parse(u.release);
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
        return v;
}

bool seccomp_kernel_exempts(uint32_t kernel, const struct seccomp_data *data) {
        if (kernel == 0)
                kernel = kernel_version_running();
        if (data->arch != AUDIT_ARCH_X86_64)
                return false;
        return (data->nr == SECCOMP_NR_URETPROBE_X86_64 && kernel >= KV(6, 14, 0)) ||
               (data->nr == SECCOMP_NR_UPROBE_X86_64 && kernel >= KV(6, 18, 0));
}

EvalResult chain_evaluate(const ChainProgram *chain, size_t n, const struct seccomp_data *data) {
        return chain_evaluate_kernel(chain, n, data, 0);
}

EvalResult chain_evaluate_kernel(const ChainProgram *chain, size_t n, const struct seccomp_data *data, uint32_t kernel) {
        EvalResult r = { .ret = SECCOMP_RET_ALLOW, .decided_by = 0 };

        if (seccomp_kernel_exempts(kernel, data))
                return r;
        for (size_t i = 0; i < n; i++) {
                uint32_t cur = prog_run(chain[i].insns, chain[i].len, data);

                if (action_outranks(cur, r.ret)) {
                        r.ret = cur;
                        r.decided_by = i;
                }
        }
        return r;
}

static int resolve_syscall(const char *syscall, uint32_t scmp_arch, int32_t *ret) {
        int32_t nr;

        if (safe_atoi32(syscall, &nr) >= 0) {
                if (scmp_arch == SCMP_ARCH_X32 && nr >= 0)
                        nr |= X32_SYSCALL_BIT;
                *ret = nr;
                return 0;
        }

        nr = seccomp_syscall_resolve_name_arch(scmp_arch, syscall);
        if (nr < 0 && scmp_arch == SCMP_ARCH_X86_64 && streq(syscall, "uretprobe"))
                nr = SECCOMP_NR_URETPROBE_X86_64; /* libseccomp before 2.6 does not name them */
        if (nr < 0 && scmp_arch == SCMP_ARCH_X86_64 && streq(syscall, "uprobe"))
                nr = SECCOMP_NR_UPROBE_X86_64;
        if (nr < 0) /* __NR_SCMP_ERROR, or a pseudo-syscall libseccomp knows not to exist here */
                return -EINVAL;
        *ret = nr;
        return 0;
}

int seccomp_data_from_syscall(const char *syscall, uint32_t arch, const uint64_t *args, size_t n_args,
                              struct seccomp_data *ret) {
        uint32_t scmp_arch = arch ? arch : seccomp_arch_native();
        struct seccomp_data d = {
                /* x32 tasks report the x86_64 audit arch, and tell themselves apart by the nr bit */
                .arch = scmp_arch == SCMP_ARCH_X32 ? AUDIT_ARCH_X86_64 : scmp_arch,
        };
        int r;

        if (!syscall || n_args > ELEMENTSOF(d.args) || (n_args > 0 && !args))
                return -EINVAL;

        r = resolve_syscall(syscall, scmp_arch, &d.nr);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n_args; i++)
                d.args[i] = args[i];
        *ret = d;
        return 0;
}
