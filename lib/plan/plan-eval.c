/* plan-eval.c: a chain's verdict on a system call the restore will make from an address it cannot
 * know: instruction_pointer is unknown, so every filter that reads it is run both ways at every
 * jump that depends on it (values computed from it are "unknown" too) */
#include "plan/plan-eval.h"

#include <linux/seccomp.h>

#include "core/util.h"

#define IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define IP_HI (IP_LO + 4)

/* A register or memory word, and whether it came from the instruction pointer. */
typedef struct Word {
        uint32_t v;
        bool unknown;
} Word;

typedef struct State {
        size_t pc;
        Word a, x;
        Word mem[BPF_MEMWORDS];
} State;

/* What the runs of one program can return. */
typedef struct Outcomes {
        uint32_t worst, best;
        bool any;       /* some run returned */
        size_t n_paths;
        bool overflow;  /* too many ways: anything is possible */
} Outcomes;

bool prog_reads_instruction_pointer(const struct sock_filter *insns, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (insns[i].code == (BPF_LD | BPF_W | BPF_ABS) && (insns[i].k == IP_LO || insns[i].k == IP_HI))
                        return true;
        return false;
}

static void outcome(Outcomes *o, uint32_t ret) {
        if (!o->any) {
                o->worst = o->best = ret;
                o->any = true;
                return;
        }
        if (action_outranks(ret, o->worst))
                o->worst = ret;
        if (action_outranks(o->best, ret))
                o->best = ret;
}

static bool load(const struct seccomp_data *d, const struct sock_filter *f, Word *dst, const State *s) {
        if (BPF_SIZE(f->code) != BPF_W)
                return false;
        switch (BPF_MODE(f->code)) {
        case BPF_IMM:
                *dst = (Word) { f->k };
                return true;
        case BPF_LEN:
                *dst = (Word) { sizeof(struct seccomp_data) };
                return true;
        case BPF_MEM:
                if (f->k >= BPF_MEMWORDS)
                        return false;
                *dst = s->mem[f->k];
                return true;
        case BPF_ABS:
                if (BPF_CLASS(f->code) != BPF_LD || f->k >= sizeof(*d) || (f->k & 3))
                        return false;
                *dst = (Word) { .unknown = f->k == IP_LO || f->k == IP_HI };
                memcpy(&dst->v, (const uint8_t *) d + f->k, sizeof(dst->v));
                return true;
        }
        return false;
}

/* A on a known operand; false on what the kernel refuses. *zero: division by X == 0 (the run
 * returns 0). */
static bool alu(Word *a, const struct sock_filter *f, Word v, bool *zero) {
        a->unknown = a->unknown || v.unknown;
        switch (BPF_OP(f->code)) {
        case BPF_ADD: a->v += v.v; return true;
        case BPF_SUB: a->v -= v.v; return true;
        case BPF_MUL: a->v *= v.v; return true;
        case BPF_AND: a->v &= v.v; return true;
        case BPF_OR: a->v |= v.v; return true;
        case BPF_XOR: a->v ^= v.v; return true;
        case BPF_LSH: a->v <<= v.v & 31; return true;
        case BPF_RSH: a->v >>= v.v & 31; return true;
        case BPF_NEG: a->v = -a->v; return BPF_SRC(f->code) == BPF_K;
        case BPF_DIV:
                if (v.v == 0) {
                        *zero = BPF_SRC(f->code) == BPF_X;
                        return *zero;
                }
                a->v /= v.v;
                return true;
        }
        return false;
}

static bool taken(const State *s, const struct sock_filter *f, bool *ok) {
        uint32_t v = BPF_SRC(f->code) == BPF_X ? s->x.v : f->k;

        *ok = true;
        switch (BPF_OP(f->code)) {
        case BPF_JEQ: return s->a.v == v;
        case BPF_JGT: return s->a.v > v;
        case BPF_JGE: return s->a.v >= v;
        case BPF_JSET: return (s->a.v & v) != 0;
        }
        *ok = false;
        return false;
}

static void run(const struct sock_filter *insns, size_t n, const struct seccomp_data *d, State s, Outcomes *o);

/* Go on at pc + 1 + off, or fault. */
static void go(const struct sock_filter *insns, size_t n, const struct seccomp_data *d, State s, uint64_t off,
               Outcomes *o) {
        uint64_t next = (uint64_t) s.pc + 1 + off;

        if (next >= n) {
                outcome(o, SECCOMP_RET_KILL_PROCESS);
                return;
        }
        s.pc = (size_t) next;
        run(insns, n, d, s, o);
}

static void jump(const struct sock_filter *insns, size_t n, const struct seccomp_data *d, const State *s,
                 Outcomes *o) {
        const struct sock_filter *f = insns + s->pc;
        bool ok, t;

        if (BPF_OP(f->code) == BPF_JA) {
                go(insns, n, d, *s, f->k, o);
                return;
        }
        t = taken(s, f, &ok);
        if (!ok) {
                outcome(o, SECCOMP_RET_KILL_PROCESS);
                return;
        }
        if (s->a.unknown || (BPF_SRC(f->code) == BPF_X && s->x.unknown)) {
                go(insns, n, d, *s, f->jt, o); /* the address decides: both ways */
                go(insns, n, d, *s, f->jf, o);
                return;
        }
        go(insns, n, d, *s, t ? f->jt : f->jf, o);
}

/* One instruction that is neither a jump nor a return; false on a fault. */
static bool step(State *s, const struct sock_filter *f, const struct seccomp_data *d, Outcomes *o, bool *done) {
        bool zero = false;

        switch (BPF_CLASS(f->code)) {
        case BPF_LD:
                return load(d, f, &s->a, s);
        case BPF_LDX:
                return load(d, f, &s->x, s);
        case BPF_ST:
        case BPF_STX:
                if (f->k >= BPF_MEMWORDS)
                        return false;
                s->mem[f->k] = f->code == BPF_ST ? s->a : s->x;
                return true;
        case BPF_ALU:
                if (BPF_OP(f->code) == BPF_DIV && BPF_SRC(f->code) == BPF_X && s->x.unknown && s->x.v != 0) {
                        outcome(o, 0); /* an unknown X may be 0: the run returns 0 there */
                        s->a.unknown = true;
                }
                if (!alu(&s->a, f, BPF_SRC(f->code) == BPF_X ? s->x : (Word) { f->k }, &zero))
                        return false;
                if (zero) {
                        outcome(o, 0);
                        *done = true;
                }
                return true;
        case BPF_MISC:
                if (BPF_MISCOP(f->code) == BPF_TAX)
                        s->x = s->a;
                else if (BPF_MISCOP(f->code) == BPF_TXA)
                        s->a = s->x;
                else
                        return false;
                return true;
        }
        return false;
}

static void run(const struct sock_filter *insns, size_t n, const struct seccomp_data *d, State s, Outcomes *o) {
        if (++o->n_paths > PLAN_EVAL_MAX_PATHS) {
                o->overflow = true;
                return;
        }
        while (s.pc < n && !o->overflow) {
                const struct sock_filter *f = insns + s.pc;
                bool done = false;

                if (BPF_CLASS(f->code) == BPF_RET) {
                        if (f->code == (BPF_RET | BPF_A) && s.a.unknown) {
                                outcome(o, SECCOMP_RET_KILL_PROCESS); /* any value at all */
                                outcome(o, SECCOMP_RET_ALLOW);
                        } else
                                outcome(o, f->code == (BPF_RET | BPF_A) ? s.a.v
                                           : f->code == (BPF_RET | BPF_K) ? f->k
                                                                          : SECCOMP_RET_KILL_PROCESS);
                        return;
                }
                if (BPF_CLASS(f->code) == BPF_JMP) {
                        jump(insns, n, d, &s, o);
                        return;
                }
                if (!step(&s, f, d, o, &done)) {
                        outcome(o, SECCOMP_RET_KILL_PROCESS);
                        return;
                }
                if (done)
                        return;
                s.pc++;
        }
        if (!o->overflow)
                outcome(o, SECCOMP_RET_KILL_PROCESS); /* ran off the end */
}

/* Both ends of what one program can return for some address. */
static void prog_outcomes(const ChainProgram *p, const struct seccomp_data *d, uint32_t *worst, uint32_t *best) {
        Outcomes o = {};

        if (!prog_reads_instruction_pointer(p->insns, p->len)) {
                *worst = *best = prog_run(p->insns, p->len, d);
                return;
        }
        run(p->insns, p->len, d, (State) {}, &o);
        if (o.overflow) {
                *worst = SECCOMP_RET_KILL_PROCESS;
                *best = SECCOMP_RET_ALLOW;
                return;
        }
        *worst = o.worst;
        *best = o.best;
}

void plan_chain_evaluate(const ChainProgram *chain, size_t n, const struct seccomp_data *data, PlanEval *ret) {
        uint32_t worst = SECCOMP_RET_ALLOW, best = SECCOMP_RET_ALLOW;
        size_t decided_by = 0;

        for (size_t i = 0; i < n; i++) {
                uint32_t w, b;

                prog_outcomes(&chain[i], data, &w, &b);
                if (action_outranks(w, worst)) {
                        worst = w;
                        decided_by = i;
                }
                if (action_outranks(b, best))
                        best = b;
        }
        *ret = (PlanEval) { .ret = worst, .decided_by = decided_by,
                            .depends_on_ip = (worst & SECCOMP_RET_ACTION_FULL) != (best & SECCOMP_RET_ACTION_FULL) };
}
