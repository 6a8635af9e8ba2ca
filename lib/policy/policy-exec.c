/* policy-exec.c: one classic-BPF program run symbolically: every path from the question's domain
 * to a RET, with the condition on the words under which it is taken */
#include "policy/policy-exec.h"

#include <errno.h>
#include <linux/filter.h>

#include "core/util.h"

#define EXEC_MAX_STEPS (1U << 20) /* per program and question: real filters take a few thousand */

typedef struct SymState {
        size_t pc;
        SymVal a, x;
        SymVal mem[BPF_MEMWORDS];
        PolicyTerm term;
} SymState;

typedef struct Exec {
        Arena *arena;
        const struct sock_filter *insns;
        size_t n;
        SymVal words[POLICY_WORDS]; /* e == NULL until first loaded */
        SymState *stack;
        size_t n_stack, allocated;
        PolicyLeaves *leaves;
        uint64_t steps;
} Exec;

void policy_leaves_done(PolicyLeaves *l) {
        free(l->items);
        *l = (PolicyLeaves) {};
}

/* ---- terms ---- */

static bool opaque_words_fixed(const PolicyTerm *t, const Opaque *o, struct seccomp_data *d) {
        uint16_t words = sym_words(o->l) | sym_words(o->r);
        for (unsigned w = 0; w < POLICY_WORDS; w++) {
                uint32_t v;
                if (!(words & (1U << w)))
                        continue;
                if (!word_domain_is_point(&t->words[w], &v))
                        return false;
                memcpy((uint8_t *) d + 4 * w, &v, sizeof(v));
        }
        return true;
}

static int term_push_opaque(Arena *arena, PolicyTerm *t, const Opaque *o) {
        struct seccomp_data d = {};
        if (opaque_words_fixed(t, o, &d))
                return opaque_holds(o, &d) ? SAT_YES : SAT_NO;
        Opaque *copy = arena_memdup(arena, o, sizeof(*o));
        if (!copy)
                return -ENOMEM;
        copy->next = t->opaque;
        t->opaque = copy;
        return SAT_UNKNOWN;
}

int policy_term_apply(Arena *arena, PolicyTerm *t, const Atom *a) {
        WordDomain *d = &t->words[a->word];
        switch (a->kind) {
        case ATOM_RANGE:
                return word_domain_restrict_range(d, a->a, a->b);
        case ATOM_MASK_EQ:
                return word_domain_restrict_mask_eq(d, a->a, a->b);
        case ATOM_MASK_NE:
                return word_domain_restrict_mask_ne(d, arena, a->a, a->b);
        case ATOM_OPAQUE:
                return term_push_opaque(arena, t, a->opaque);
        }
        return -EINVAL;
}

int policy_term_intersect(Arena *arena, PolicyTerm *t, const PolicyTerm *o, const PolicyTerm *base) {
        int sat = SAT_YES;
        for (unsigned w = 0; w < POLICY_WORDS; w++) {
                if (word_domain_is_unconstrained(&o->words[w], &base->words[w]))
                        continue;
                int r = word_domain_intersect(&t->words[w], &o->words[w], base->words[w].excl, arena);
                if (r < 0 || r == SAT_NO)
                        return r;
        }
        for (const Opaque *x = o->opaque; x; x = x->next) {
                int r = term_push_opaque(arena, t, x);
                if (r < 0 || r == SAT_NO)
                        return r;
                if (r == SAT_UNKNOWN)
                        sat = SAT_UNKNOWN;
        }
        t->maybe_empty = t->maybe_empty || o->maybe_empty;
        return sat;
}

void policy_term_witness(const PolicyTerm *t, struct seccomp_data *ret) {
        for (unsigned w = 0; w < POLICY_WORDS; w++)
                memcpy((uint8_t *) ret + 4 * w, &t->words[w].witness, sizeof(uint32_t));
}

static bool opaque_all_hold(const Opaque *o, const struct seccomp_data *d) {
        for (; o; o = o->next)
                if (!opaque_holds(o, d))
                        return false;
        return true;
}

#define SETTLE_SAMPLES 64

/* Every word the conditions read set to the same value, taken from the boundaries of the first:
 * finds members of conditions that compare words with each other. */
static bool term_find_member_alike(PolicyTerm *t, uint16_t words, struct seccomp_data *d) {
        uint32_t samples[SETTLE_SAMPLES];
        unsigned first = (unsigned) __builtin_ctz(words);
        size_t n = word_domain_boundaries(&t->words[first], samples, ELEMENTSOF(samples));
        struct seccomp_data saved = *d;

        for (size_t i = 0; i < n; i++) {
                bool members = true;
                for (unsigned w = 0; w < POLICY_WORDS; w++)
                        if (words & (1U << w)) {
                                members = members && word_domain_contains(&t->words[w], samples[i]);
                                memcpy((uint8_t *) d + 4 * w, &samples[i], sizeof(uint32_t));
                        }
                if (members && opaque_all_hold(t->opaque, d)) {
                        for (unsigned w = 0; w < POLICY_WORDS; w++)
                                if (words & (1U << w))
                                        t->words[w].witness = samples[i];
                        return true;
                }
        }
        *d = saved;
        return false;
}

/* A member of a term with opaque conditions: the witnesses, then each word the conditions read
 * moved through its boundaries. */
static bool term_find_member(PolicyTerm *t) {
        struct seccomp_data d;
        uint16_t words = 0;

        policy_term_witness(t, &d);
        if (opaque_all_hold(t->opaque, &d))
                return true;
        for (const Opaque *o = t->opaque; o; o = o->next)
                words |= sym_words(o->l) | sym_words(o->r);
        if (term_find_member_alike(t, words, &d))
                return true;
        for (unsigned w = 0; w < POLICY_WORDS; w++) {
                uint32_t samples[SETTLE_SAMPLES], saved;
                if (!(words & (1U << w)))
                        continue;
                size_t n = word_domain_boundaries(&t->words[w], samples, ELEMENTSOF(samples));
                memcpy(&saved, (uint8_t *) &d + 4 * w, sizeof(saved));
                for (size_t i = 0; i < n; i++) {
                        if (!word_domain_contains(&t->words[w], samples[i]))
                                continue;
                        memcpy((uint8_t *) &d + 4 * w, &samples[i], sizeof(uint32_t));
                        if (opaque_all_hold(t->opaque, &d)) {
                                t->words[w].witness = samples[i];
                                return true;
                        }
                }
                memcpy((uint8_t *) &d + 4 * w, &saved, sizeof(saved));
        }
        return false;
}

int policy_term_settle(Arena *arena, PolicyTerm *t, const PolicyTerm *base) {
        const Opaque *pending = t->opaque;
        int sat = SAT_YES;

        for (unsigned w = 0; w < POLICY_WORDS; w++) {
                int r = word_domain_normalize(&t->words[w], &base->words[w], arena);
                if (r < 0 || r == SAT_NO)
                        return r;
                if (r == SAT_UNKNOWN)
                        sat = SAT_UNKNOWN;
        }
        /* the words may have become fixed since an opaque condition was added */
        t->opaque = NULL;
        for (const Opaque *o = pending; o; o = o->next) {
                int r = term_push_opaque(arena, t, o);
                if (r < 0 || r == SAT_NO)
                        return r;
        }
        if (t->opaque && !term_find_member(t))
                t->maybe_empty = true;
        else if (!t->opaque)
                t->maybe_empty = sat == SAT_UNKNOWN;
        return SAT_YES;
}

/* ---- running ---- */

static int exec_leaf(Exec *x, const SymState *s, SymVal ret) {
        if (x->leaves->n >= POLICY_MAX_PATHS)
                return -E2BIG;
        if (GROW(x->leaves->items, x->leaves->allocated, x->leaves->n + 1) < 0)
                return -ENOMEM;
        x->leaves->items[x->leaves->n++] = (PolicyLeaf) { .term = s->term, .ret = ret };
        return 0;
}

static int exec_push(Exec *x, const SymState *s) {
        if (GROW(x->stack, x->allocated, x->n_stack + 1) < 0)
                return -ENOMEM;
        x->stack[x->n_stack++] = *s;
        return 0;
}

static int exec_load_word(Exec *x, const SymState *s, uint32_t k, SymVal *ret) {
        unsigned w = k / 4;
        uint32_t v;
        if (word_domain_is_point(&s->term.words[w], &v)) {
                *ret = SYM_CONST(v);
                return 0;
        }
        if (!x->words[w].e) {
                int r = sym_word(x->arena, w, &x->words[w]);
                if (r < 0)
                        return r;
        }
        *ret = x->words[w];
        return 0;
}

static int exec_ld(Exec *x, const SymState *s, const struct sock_filter *f, SymVal *dst) {
        switch (BPF_MODE(f->code)) {
        case BPF_IMM:
                *dst = SYM_CONST(f->k);
                return 0;
        case BPF_LEN:
                *dst = SYM_CONST(sizeof(struct seccomp_data));
                return 0;
        case BPF_MEM:
                *dst = s->mem[f->k % BPF_MEMWORDS];
                return 0;
        case BPF_ABS:
                return exec_load_word(x, s, f->k, dst);
        }
        return -EINVAL;
}

static const ExprOp alu_ops[16] = {
        [BPF_ADD >> 4] = EXPR_ADD, [BPF_SUB >> 4] = EXPR_SUB, [BPF_MUL >> 4] = EXPR_MUL,
        [BPF_DIV >> 4] = EXPR_DIV, [BPF_OR >> 4] = EXPR_OR,   [BPF_AND >> 4] = EXPR_AND,
        [BPF_LSH >> 4] = EXPR_LSH, [BPF_RSH >> 4] = EXPR_RSH, [BPF_NEG >> 4] = EXPR_NEG,
        [BPF_XOR >> 4] = EXPR_XOR,
};

/* One side of a condition from s, going to target: up to two states, the infeasible left out. */
static int exec_branch(Exec *x, const SymState *s, const Branch *b, size_t target, SymState *out, size_t *n_out) {
        *n_out = 0;
        for (unsigned i = 0; i < b->n; i++) {
                out[*n_out] = *s;
                out[*n_out].pc = target;
                int r = policy_term_apply(x->arena, &out[*n_out].term, &b->alt[i]);
                if (r < 0)
                        return r;
                if (r != SAT_NO)
                        (*n_out)++;
        }
        return 0;
}

/* Go on at t or f, narrowing s by what c says. A side that cannot be taken leaves s as it is on
 * the other (what it would add is implied); otherwise every alternative is pushed. Returns 1 when
 * s goes on, 0 when it was replaced by pushed states. */
static int exec_split(Exec *x, SymState *s, const Cond *c, size_t t, size_t f) {
        SymState ts[2], fs[2];
        size_t nt, nf;

        if (c->kind != COND_SPLIT) {
                s->pc = c->kind == COND_TRUE ? t : f;
                return 1;
        }
        int r = exec_branch(x, s, &c->t, t, ts, &nt);
        if (r < 0)
                return r;
        r = exec_branch(x, s, &c->f, f, fs, &nf);
        if (r < 0)
                return r;
        if (nt == 0 || nf == 0) {
                s->pc = nt == 0 ? f : t;
                return 1;
        }
        for (size_t i = 0; i < nt; i++) {
                r = exec_push(x, &ts[i]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < nf; i++) {
                r = exec_push(x, &fs[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* X may be 0 or not: the states where it is 0 end with the kernel's 0, all but the first of the
 * others are pushed divided, and s becomes that first one. 1 when s goes on (to be divided), 0
 * when X is 0 on every side that can be taken. */
static int exec_div_split(Exec *x, SymState *s, const Cond *c) {
        SymState zero[2], rest[2];
        size_t n_zero, n_rest;
        int r;

        r = exec_branch(x, s, &c->t, s->pc, zero, &n_zero);
        if (r < 0)
                return r;
        r = exec_branch(x, s, &c->f, s->pc, rest, &n_rest);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_zero; i++) {
                r = exec_leaf(x, &zero[i], SYM_CONST(0));
                if (r < 0)
                        return r;
        }
        if (n_rest == 0)
                return 0;
        for (size_t i = 1; i < n_rest; i++) {
                r = sym_alu(x->arena, EXPR_DIV, rest[i].a, rest[i].x, &rest[i].a);
                if (r < 0)
                        return r;
                rest[i].pc++;
                r = exec_push(x, &rest[i]);
                if (r < 0)
                        return r;
        }
        *s = rest[0];
        return 1;
}

/* Division by X: where X may be 0 the kernel's program returns 0 (KILL_THREAD) there. */
static int exec_div_x(Exec *x, SymState *s) {
        Cond c;
        int r = cond_analyze(x->arena, BPF_JEQ, s->x, SYM_CONST(0), &c);
        if (r < 0)
                return r;
        if (c.kind == COND_TRUE) {
                r = exec_leaf(x, s, SYM_CONST(0));
                return r < 0 ? r : 0;
        }
        if (c.kind == COND_SPLIT) {
                r = exec_div_split(x, s, &c);
                if (r <= 0)
                        return r;
        }
        r = sym_alu(x->arena, EXPR_DIV, s->a, s->x, &s->a);
        return r < 0 ? r : 1;
}

static int exec_alu(Exec *x, SymState *s, const struct sock_filter *f) {
        ExprOp op = alu_ops[BPF_OP(f->code) >> 4];
        if (BPF_OP(f->code) == BPF_DIV && BPF_SRC(f->code) == BPF_X)
                return exec_div_x(x, s);
        SymVal operand = BPF_SRC(f->code) == BPF_X ? s->x : SYM_CONST(f->k);
        int r = sym_alu(x->arena, op, s->a, operand, &s->a);
        return r < 0 ? r : 1;
}

/* The instruction at s->pc; returns 1 when s goes on, 0 when it ended (a leaf, or pushed). */
static int exec_step(Exec *x, SymState *s) {
        const struct sock_filter *f = &x->insns[s->pc];
        int r;

        switch (BPF_CLASS(f->code)) {
        case BPF_RET:
                r = exec_leaf(x, s, f->code == (BPF_RET | BPF_A) ? s->a : SYM_CONST(f->k));
                return r < 0 ? r : 0;
        case BPF_JMP: {
                if (BPF_OP(f->code) == BPF_JA) {
                        s->pc += 1 + f->k;
                        return 1;
                }
                Cond c;
                r = cond_analyze(x->arena, BPF_OP(f->code), s->a, BPF_SRC(f->code) == BPF_X ? s->x : SYM_CONST(f->k), &c);
                return r < 0 ? r : exec_split(x, s, &c, s->pc + 1 + f->jt, s->pc + 1 + f->jf);
        }
        case BPF_LD:
                r = exec_ld(x, s, f, &s->a);
                break;
        case BPF_LDX:
                r = exec_ld(x, s, f, &s->x);
                break;
        case BPF_ST:
                s->mem[f->k % BPF_MEMWORDS] = s->a;
                r = 0;
                break;
        case BPF_STX:
                s->mem[f->k % BPF_MEMWORDS] = s->x;
                r = 0;
                break;
        case BPF_ALU:
                r = exec_alu(x, s, f);
                if (r <= 0)
                        return r;
                break;
        case BPF_MISC:
                if (BPF_MISCOP(f->code) == BPF_TAX)
                        s->x = s->a;
                else
                        s->a = s->x;
                r = 0;
                break;
        default:
                return -EINVAL;
        }
        if (r < 0)
                return r;
        s->pc++;
        return 1;
}

int policy_exec(Arena *arena, const struct sock_filter *insns, size_t n, const PolicyTerm *base,
                const PolicyStop *stop, PolicyLeaves *ret) {
        Exec x = { .arena = arena, .insns = insns, .n = n, .leaves = ret };
        SymState s = { .a = SYM_CONST(0), .x = SYM_CONST(0), .term = *base };
        int r = exec_push(&x, &s); /* A, X and M[] start at 0 (M[] is only read after a store) */

        while (r >= 0 && x.n_stack > 0) {
                s = x.stack[--x.n_stack];
                do {
                        if (s.pc >= n || ++x.steps > EXEC_MAX_STEPS) {
                                r = s.pc >= n ? -EINVAL : -E2BIG;
                                break;
                        }
                        if (x.steps % POLICY_STOP_EVERY == 0 && policy_stop_now(stop)) {
                                r = -ECANCELED;
                                break;
                        }
                        r = exec_step(&x, &s);
                } while (r == 1);
        }
        free(x.stack);
        return r < 0 ? r : 0;
}
