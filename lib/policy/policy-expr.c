/* policy-expr.c: symbolic values of the classic-BPF registers and what conditional jumps on them
 * say about the words of struct seccomp_data */
#include "policy/policy-expr.h"

#include <errno.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

/* ---- building ---- */

static uint32_t alu_fold(ExprOp op, uint32_t a, uint32_t b) {
        switch (op) {
        case EXPR_ADD: return a + b;
        case EXPR_SUB: return a - b;
        case EXPR_MUL: return a * b;
        case EXPR_DIV: return b ? a / b : 0;
        case EXPR_AND: return a & b;
        case EXPR_OR: return a | b;
        case EXPR_XOR: return a ^ b;
        case EXPR_LSH: return a << (b & 31);
        case EXPR_RSH: return a >> (b & 31);
        case EXPR_NEG: return -a;
        default: return 0;
        }
}

static int expr_new(Arena *arena, ExprOp op, SymVal l, SymVal r, SymVal *ret) {
        Expr *e = arena_alloc(arena, sizeof(Expr));
        if (!e)
                return -ENOMEM;
        *e = (Expr) { .op = op, .l = l, .r = r, .words = sym_words(l) | sym_words(r) };
        *ret = (SymVal) { .e = e };
        return 0;
}

int sym_word(Arena *arena, unsigned w, SymVal *ret) {
        Expr *e = arena_alloc(arena, sizeof(Expr));
        if (!e)
                return -ENOMEM;
        *e = (Expr) { .op = EXPR_WORD, .word = (uint8_t) w, .words = (uint16_t) (1U << w) };
        *ret = (SymVal) { .e = e };
        return 0;
}

static bool op_commutes(ExprOp op) {
        return op == EXPR_ADD || op == EXPR_MUL || op == EXPR_AND || op == EXPR_OR || op == EXPR_XOR;
}

/* a op k where a is an expression: identities, and folding into a's own constant operand. */
static bool alu_simplify(ExprOp op, SymVal a, uint32_t k, SymVal *ret) {
        uint32_t shift = k & 31;
        if (((op == EXPR_ADD || op == EXPR_SUB || op == EXPR_OR || op == EXPR_XOR) && k == 0) ||
            ((op == EXPR_LSH || op == EXPR_RSH) && shift == 0) || ((op == EXPR_MUL || op == EXPR_DIV) && k == 1) ||
            (op == EXPR_AND && k == UINT32_MAX)) {
                *ret = a;
                return true;
        }
        if ((op == EXPR_AND || op == EXPR_MUL) && k == 0) {
                *ret = SYM_CONST(0);
                return true;
        }
        if (op == EXPR_OR && k == UINT32_MAX) {
                *ret = SYM_CONST(UINT32_MAX);
                return true;
        }
        return false;
}

int sym_alu(Arena *arena, ExprOp op, SymVal a, SymVal b, SymVal *ret) {
        if (op == EXPR_NEG) {
                if (sym_is_const(a)) {
                        *ret = SYM_CONST(-a.k);
                        return 0;
                }
                return expr_new(arena, op, a, SYM_CONST(0), ret);
        }
        if (sym_is_const(a) && sym_is_const(b)) {
                *ret = SYM_CONST(alu_fold(op, a.k, b.k));
                return 0;
        }
        if (sym_is_const(a) && op_commutes(op)) { /* the constant on the right */
                SymVal t = a;
                a = b;
                b = t;
        }
        if (sym_is_const(b)) {
                if (op == EXPR_SUB) { /* a - k is a + (-k): one form for the affine rule */
                        op = EXPR_ADD;
                        b.k = -b.k;
                }
                if (alu_simplify(op, a, b.k, ret))
                        return 0;
                /* (x op k1) op k2 with one associative op: one constant */
                if ((op == EXPR_ADD || op == EXPR_AND || op == EXPR_OR || op == EXPR_XOR) && a.e->op == op &&
                    sym_is_const(a.e->r)) {
                        SymVal x = a.e->l;
                        uint32_t k = alu_fold(op, a.e->r.k, b.k);
                        if (alu_simplify(op, x, k, ret))
                                return 0;
                        return expr_new(arena, op, x, SYM_CONST(k), ret);
                }
        }
        return expr_new(arena, op, a, b, ret);
}

/* ---- reading ---- */

uint32_t sym_eval(SymVal v, const struct seccomp_data *d) {
        if (sym_is_const(v))
                return v.k;
        if (v.e->op == EXPR_WORD)
                return policy_word_value(d, v.e->word);
        return alu_fold(v.e->op, sym_eval(v.e->l, d), v.e->op == EXPR_NEG ? 0 : sym_eval(v.e->r, d));
}

void sym_known_bits(SymVal v, uint32_t *mask, uint32_t *value) {
        if (sym_is_const(v)) {
                *mask = UINT32_MAX;
                *value = v.k;
                return;
        }
        *mask = *value = 0;
        if (v.e->op == EXPR_WORD || !sym_is_const(v.e->r))
                return;
        uint32_t m, x, k = v.e->r.k;
        sym_known_bits(v.e->l, &m, &x);
        switch (v.e->op) {
        case EXPR_AND: /* zeros of k are known zeros */
                *mask = m | ~k;
                *value = x & k;
                break;
        case EXPR_OR: /* ones of k are known ones */
                *mask = m | k;
                *value = (x | k) & *mask;
                break;
        case EXPR_XOR:
                *mask = m;
                *value = (x ^ k) & m;
                break;
        case EXPR_LSH:
                *mask = (m << (k & 31)) | ((1U << (k & 31)) - 1);
                *value = x << (k & 31);
                break;
        case EXPR_RSH:
                *mask = (m >> (k & 31)) | ~(UINT32_MAX >> (k & 31));
                *value = x >> (k & 31);
                break;
        default:
                break;
        }
}

uint16_t sym_words(SymVal v) {
        return v.e ? v.e->words : 0;
}

bool sym_equal(SymVal a, SymVal b) {
        if (sym_is_const(a) || sym_is_const(b))
                return sym_is_const(a) && sym_is_const(b) && a.k == b.k;
        if (a.e == b.e)
                return true;
        if (a.e->op != b.e->op)
                return false;
        if (a.e->op == EXPR_WORD)
                return a.e->word == b.e->word;
        return sym_equal(a.e->l, b.e->l) && (a.e->op == EXPR_NEG || sym_equal(a.e->r, b.e->r));
}

static const char *const op_symbols[_EXPR_OP_MAX] = {
        [EXPR_ADD] = "+", [EXPR_SUB] = "-", [EXPR_MUL] = "*", [EXPR_DIV] = "/", [EXPR_AND] = "&",
        [EXPR_OR] = "|", [EXPR_XOR] = "^", [EXPR_LSH] = "<<", [EXPR_RSH] = ">>",
};

static bool op_is_bitwise(ExprOp op) {
        return op == EXPR_AND || op == EXPR_OR || op == EXPR_XOR;
}

/* Constants in hex as operands of bit operations (masks), else decimal below 65536. */
static void sym_print_const(FILE *f, uint32_t k, bool hex) {
        fprintf(f, (hex && k >= 10) || k >= 65536 ? "0x%" PRIx32 : "%" PRIu32, k);
}

static void sym_print(FILE *f, SymVal v, bool top) {
        if (sym_is_const(v)) {
                sym_print_const(f, v.k, false);
                return;
        }
        if (v.e->op == EXPR_WORD) {
                fputs(policy_word_name(v.e->word), f);
                return;
        }
        if (v.e->op == EXPR_NEG) {
                fputs("-", f);
                sym_print(f, v.e->l, false);
                return;
        }
        if (!top)
                fputs("(", f);
        sym_print(f, v.e->l, false);
        fprintf(f, " %s ", op_symbols[v.e->op]);
        if (sym_is_const(v.e->r))
                sym_print_const(f, v.e->r.k, op_is_bitwise(v.e->op));
        else
                sym_print(f, v.e->r, false);
        if (!top)
                fputs(")", f);
}

char *sym_to_string(SymVal v) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        sym_print(f, v, true);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static bool jump_holds(uint16_t op, uint32_t a, uint32_t b) {
        switch (op) {
        case BPF_JEQ: return a == b;
        case BPF_JGT: return a > b;
        case BPF_JGE: return a >= b;
        case BPF_JSET: return (a & b) != 0;
        }
        return false;
}

bool opaque_holds(const Opaque *o, const struct seccomp_data *d) {
        return jump_holds(o->op, sym_eval(o->l, d), sym_eval(o->r, d)) == o->truth;
}

char *opaque_to_string(const Opaque *o) {
        static const char *const holds[] = { [BPF_JEQ >> 4] = "==", [BPF_JGT >> 4] = ">", [BPF_JGE >> 4] = ">=" };
        static const char *const fails[] = { [BPF_JEQ >> 4] = "!=", [BPF_JGT >> 4] = "<=", [BPF_JGE >> 4] = "<" };
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        uint16_t words = sym_words(o->l) | sym_words(o->r);
        fputs("depends on ", f);
        for (unsigned w = 0, left = (unsigned) __builtin_popcount(words); w < POLICY_WORDS; w++)
                if (words & (1U << w)) {
                        left--;
                        fprintf(f, "%s%s", policy_word_name(w), left > 1 ? ", " : left == 1 ? " and " : "");
                }
        fputs(" through ", f);
        if (o->op == BPF_JSET) {
                fputs("(", f);
                sym_print(f, o->l, false);
                fputs(" & ", f);
                sym_print(f, o->r, false);
                fprintf(f, ") %s 0", o->truth ? "!=" : "==");
        } else {
                sym_print(f, o->l, false);
                fprintf(f, " %s ", (o->truth ? holds : fails)[o->op >> 4]);
                sym_print(f, o->r, false);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* ---- conditions ---- */

/* Where each bit of a value comes from: 0, 1, bit j of the word (2 + 2j) or its negation
 * (3 + 2j). Values built from one word by AND, OR, XOR with constants, shifts by constants,
 * and multiplication or division by powers of two have such a map. */
#define SRC_ZERO 0
#define SRC_ONE 1
#define SRC_BIT(j) (2 + 2 * (j))

typedef struct BitMap {
        int word; /* -1: none yet (a constant) */
        uint8_t src[32];
} BitMap;

static bool is_power_of_two(uint32_t k) {
        return k && !(k & (k - 1));
}

static void bitmap_shift(BitMap *m, unsigned s, bool left) {
        uint8_t out[32];
        for (unsigned i = 0; i < 32; i++) {
                int from = left ? (int) i - (int) s : (int) (i + s);
                out[i] = from >= 0 && from < 32 ? m->src[from] : SRC_ZERO;
        }
        memcpy(m->src, out, sizeof(out));
}

static bool bitmap_of(SymVal v, BitMap *m) {
        if (sym_is_const(v)) {
                for (unsigned i = 0; i < 32; i++)
                        m->src[i] = (v.k >> i) & 1;
                return true;
        }
        const Expr *e = v.e;
        if (e->op == EXPR_WORD) {
                if (m->word >= 0 && m->word != e->word)
                        return false;
                m->word = e->word;
                for (unsigned i = 0; i < 32; i++)
                        m->src[i] = (uint8_t) SRC_BIT(i);
                return true;
        }
        if (!sym_is_const(e->r) || !bitmap_of(e->l, m))
                return false;
        uint32_t k = e->r.k;
        switch (e->op) {
        case EXPR_AND:
        case EXPR_OR:
        case EXPR_XOR:
                for (unsigned i = 0; i < 32; i++)
                        if (k & (1U << i))
                                m->src[i] = e->op == EXPR_AND ? m->src[i] : e->op == EXPR_OR ? SRC_ONE : m->src[i] ^ 1;
                        else if (e->op == EXPR_AND)
                                m->src[i] = SRC_ZERO;
                return true;
        case EXPR_LSH:
        case EXPR_RSH:
                bitmap_shift(m, k & 31, e->op == EXPR_LSH);
                return true;
        case EXPR_MUL:
        case EXPR_DIV:
                if (!is_power_of_two(k))
                        return false;
                bitmap_shift(m, (unsigned) __builtin_ctz(k), e->op == EXPR_MUL);
                return true;
        default:
                return false;
        }
}

/* Is the value word >> s (s >= 0), which keeps the order of the word? */
static bool bitmap_is_right_shift(const BitMap *m, unsigned *ret_shift) {
        for (unsigned s = 0; s < 32; s++) {
                if (m->src[0] != SRC_BIT(s))
                        continue;
                for (unsigned i = 0; i < 32; i++)
                        if (m->src[i] != (i + s < 32 ? SRC_BIT(i + s) : SRC_ZERO))
                                return false;
                *ret_shift = s;
                return true;
        }
        return false;
}

/* word + c, from ADD (SUB is ADD of the negation) of constants. */
static bool affine_of(SymVal v, unsigned *word, uint32_t *c) {
        if (sym_is_const(v))
                return false;
        if (v.e->op == EXPR_WORD) {
                *word = v.e->word;
                *c = 0;
                return true;
        }
        if (v.e->op != EXPR_ADD || !sym_is_const(v.e->r) || !affine_of(v.e->l, word, c))
                return false;
        *c += v.e->r.k;
        return true;
}

static void branch_add(Branch *b, Atom a) {
        b->alt[b->n++] = a;
}

static Atom atom_range(unsigned w, uint32_t lo, uint32_t hi) {
        return (Atom) { .kind = ATOM_RANGE, .word = w, .a = lo, .b = hi };
}

/* w + c in [lo, hi]: one range of w, or two where it wraps around. */
static void branch_shifted_range(Branch *b, unsigned w, uint32_t c, uint32_t lo, uint32_t hi) {
        uint32_t a = lo - c, z = hi - c;
        if (a <= z)
                branch_add(b, atom_range(w, a, z));
        else {
                branch_add(b, atom_range(w, a, UINT32_MAX));
                branch_add(b, atom_range(w, 0, z));
        }
}

static void cond_masks(Cond *c, unsigned w, uint32_t mask, uint32_t value, bool equal_when_taken) {
        Atom eq = mask == UINT32_MAX ? atom_range(w, value, value)
                                     : (Atom) { .kind = ATOM_MASK_EQ, .word = w, .a = mask, .b = value };
        Atom ne = { .kind = ATOM_MASK_NE, .word = w, .a = mask, .b = value };
        c->kind = COND_SPLIT;
        branch_add(&c->t, equal_when_taken ? eq : ne);
        branch_add(&c->f, equal_when_taken ? ne : eq);
}

/* Bit j of the word must be v (the pair mask, value collects them); false when it must be the
 * other value already. */
static bool bits_require(uint32_t *mask, uint32_t *value, unsigned j, uint32_t v) {
        if ((*mask & (1U << j)) && ((*value >> j) & 1) != v)
                return false;
        *mask |= 1U << j;
        *value |= v << j;
        return true;
}

/* The value of m == k: a set of bits of the word must have given values. */
static void cond_bitmap_eq(const BitMap *m, uint32_t k, Cond *c) {
        uint32_t mask = 0, value = 0;
        for (unsigned i = 0; i < 32; i++) {
                uint32_t want = (k >> i) & 1;
                if (m->src[i] < 2) {
                        if (m->src[i] != want) {
                                c->kind = COND_FALSE;
                                return;
                        }
                        continue;
                }
                if (!bits_require(&mask, &value, (m->src[i] - 2) / 2, want ^ (m->src[i] & 1))) {
                        c->kind = COND_FALSE;
                        return;
                }
        }
        if (!mask)
                c->kind = COND_TRUE;
        else
                cond_masks(c, (unsigned) m->word, mask, value, true);
}

/* m & k != 0: some of a set of bits of the word differ from the values that make them 0. */
static void cond_bitmap_set(const BitMap *m, uint32_t k, Cond *c) {
        uint32_t mask = 0, zero = 0;
        for (unsigned i = 0; i < 32; i++) {
                if (!(k & (1U << i)) || m->src[i] == SRC_ZERO)
                        continue;
                if (m->src[i] == SRC_ONE) {
                        c->kind = COND_TRUE;
                        return;
                }
                /* the word's bit value that makes this bit 0; both values needed: b | !b */
                if (!bits_require(&mask, &zero, (m->src[i] - 2) / 2, m->src[i] & 1)) {
                        c->kind = COND_TRUE;
                        return;
                }
        }
        if (!mask)
                c->kind = COND_FALSE;
        else
                cond_masks(c, (unsigned) m->word, mask, zero, false);
}

/* "v > k" (BPF_JGT) or "v >= k" (BPF_JGE) for a v of 0..top: the smallest v that passes into
 * *ret_lo (COND_SPLIT), or COND_TRUE / COND_FALSE when none or every v passes. */
static CondKind ordered_bound(uint16_t op, uint32_t k, uint32_t top, uint32_t *ret_lo) {
        if ((op == BPF_JGT && k >= top) || (op == BPF_JGE && k > top))
                return COND_FALSE;
        *ret_lo = op == BPF_JGT ? k + 1 : k;
        return *ret_lo == 0 ? COND_TRUE : COND_SPLIT;
}

/* (word + c) op k for the ordered and equality jumps. */
static void cond_affine(uint16_t op, unsigned w, uint32_t add, uint32_t k, Cond *c) {
        uint32_t lo; /* taken when word + add is in [lo, UINT32_MAX] */
        if (op == BPF_JEQ) {
                cond_masks(c, w, UINT32_MAX, k - add, true);
                return;
        }
        if ((c->kind = ordered_bound(op, k, UINT32_MAX, &lo)) != COND_SPLIT)
                return;
        branch_shifted_range(&c->t, w, add, lo, UINT32_MAX);
        branch_shifted_range(&c->f, w, add, 0, lo - 1);
}

/* (word >> s) op k: a range of the word. */
static void cond_shifted(uint16_t op, unsigned w, unsigned s, uint32_t k, Cond *c) {
        uint32_t top = UINT32_MAX >> s; /* the largest value word >> s takes */
        uint32_t lo;                    /* taken when word >> s >= lo */
        if (op == BPF_JEQ) {
                if (k > top) {
                        c->kind = COND_FALSE;
                        return;
                }
                cond_masks(c, w, UINT32_MAX << s, k << s, true);
                return;
        }
        if ((c->kind = ordered_bound(op, k, top, &lo)) != COND_SPLIT)
                return;
        branch_add(&c->t, atom_range(w, lo << s, UINT32_MAX));
        branch_add(&c->f, atom_range(w, 0, (lo << s) - 1));
}

/* Is v a non-decreasing function of one word: the word through divisions and right shifts by
 * constants? *word says which. */
static bool monotone_of(SymVal v, int *word) {
        if (sym_is_const(v))
                return false;
        switch (v.e->op) {
        case EXPR_WORD:
                if (*word >= 0 && *word != v.e->word)
                        return false;
                *word = v.e->word;
                return true;
        case EXPR_DIV:
                return sym_is_const(v.e->r) && v.e->r.k != 0 && monotone_of(v.e->l, word);
        case EXPR_RSH:
                return sym_is_const(v.e->r) && monotone_of(v.e->l, word);
        default:
                return false;
        }
}

static uint32_t eval_at(SymVal v, unsigned w, uint32_t x) {
        struct seccomp_data d = {};
        memcpy((uint8_t *) &d + 4 * w, &x, sizeof(x));
        return sym_eval(v, &d);
}

/* The smallest word x with f(x) >= t, f non-decreasing: false when there is none. */
static bool monotone_first(SymVal f, unsigned w, uint32_t t, uint32_t *ret) {
        uint64_t lo = 0, hi = (uint64_t) UINT32_MAX + 1; /* the answer is in [lo, hi]; hi: none */
        while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                if (eval_at(f, w, (uint32_t) mid) >= t)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        *ret = (uint32_t) lo;
        return lo <= UINT32_MAX;
}

/* Taken for the words in [lo, UINT32_MAX] (lo > 0), not taken below. */
static void cond_from(Cond *c, unsigned w, uint32_t lo) {
        c->kind = COND_SPLIT;
        branch_add(&c->t, atom_range(w, lo, UINT32_MAX));
        branch_add(&c->f, atom_range(w, 0, lo - 1));
}

/* f(word) op k for a non-decreasing f (divisions and shifts by constants): exact ranges of the
 * word, found by bisection on f itself. */
static void cond_monotone(uint16_t op, SymVal f, unsigned w, uint32_t k, Cond *c) {
        uint32_t lo, next;
        bool has_next;
        if (op == BPF_JGT && k == UINT32_MAX) {
                c->kind = COND_FALSE;
                return;
        }
        if (op != BPF_JEQ) {
                if (!monotone_first(f, w, op == BPF_JGT ? k + 1 : k, &lo))
                        c->kind = COND_FALSE;
                else if (lo == 0)
                        c->kind = COND_TRUE;
                else
                        cond_from(c, w, lo);
                return;
        }
        if (!monotone_first(f, w, k, &lo) || eval_at(f, w, lo) != k) {
                c->kind = COND_FALSE;
                return;
        }
        has_next = k < UINT32_MAX && monotone_first(f, w, k + 1, &next);
        uint32_t hi = has_next ? next - 1 : UINT32_MAX;
        if (lo == 0 && hi == UINT32_MAX) {
                c->kind = COND_TRUE;
                return;
        }
        c->kind = COND_SPLIT;
        branch_add(&c->t, atom_range(w, lo, hi));
        if (lo > 0)
                branch_add(&c->f, atom_range(w, 0, lo - 1));
        if (hi < UINT32_MAX)
                branch_add(&c->f, atom_range(w, hi + 1, UINT32_MAX));
}

/* The inverse of an odd number modulo 2^32 (Newton's iteration). */
static uint32_t odd_inverse(uint32_t a) {
        uint32_t x = a; /* right in the low 3 bits */
        for (int i = 0; i < 5; i++)
                x *= 2 - a * x;
        return x;
}

/* word * m == k: with m = odd << s, k must end in s zero bits, and then the word is fixed in its
 * low 32 - s bits (the multiplication by odd is a bijection modulo 2^(32 - s)). */
static void cond_product_eq(unsigned w, uint32_t m, uint32_t k, Cond *c) {
        unsigned s = (unsigned) __builtin_ctz(m);
        uint32_t low = s ? (UINT32_C(1) << s) - 1 : 0;
        if (k & low) {
                c->kind = COND_FALSE;
                return;
        }
        uint32_t mask = UINT32_MAX >> s;
        cond_masks(c, w, mask, ((k >> s) * odd_inverse(m >> s)) & mask, true);
}

static int cond_opaque(Arena *arena, uint16_t op, SymVal a, SymVal b, Cond *c) {
        Opaque *t = arena_alloc(arena, sizeof(Opaque)), *f = arena_alloc(arena, sizeof(Opaque));
        if (!t || !f)
                return -ENOMEM;
        *t = (Opaque) { .op = op, .truth = true, .l = a, .r = b };
        *f = (Opaque) { .op = op, .truth = false, .l = a, .r = b };
        unsigned w = (unsigned) __builtin_ctz(sym_words(a) | sym_words(b));
        c->kind = COND_SPLIT;
        branch_add(&c->t, (Atom) { .kind = ATOM_OPAQUE, .word = w, .opaque = t });
        branch_add(&c->f, (Atom) { .kind = ATOM_OPAQUE, .word = w, .opaque = f });
        return 0;
}

static void cond_negate(Cond *c) {
        Branch t = c->t;
        c->t = c->f;
        c->f = t;
        if (c->kind != COND_SPLIT)
                c->kind = c->kind == COND_TRUE ? COND_FALSE : COND_TRUE;
}

/* a op k, a an expression. */
static int cond_on_expr(Arena *arena, uint16_t op, SymVal a, uint32_t k, Cond *c) {
        BitMap m = { .word = -1 };
        unsigned w, s;
        uint32_t add;

        if (bitmap_of(a, &m) && m.word >= 0) {
                if (op == BPF_JEQ) {
                        cond_bitmap_eq(&m, k, c);
                        return 0;
                }
                if (op == BPF_JSET) {
                        cond_bitmap_set(&m, k, c);
                        return 0;
                }
                if (bitmap_is_right_shift(&m, &s)) {
                        cond_shifted(op, (unsigned) m.word, s, k, c);
                        return 0;
                }
        }
        if (op != BPF_JSET && affine_of(a, &w, &add)) {
                cond_affine(op, w, add, k, c);
                return 0;
        }
        int mw = -1;
        if (op != BPF_JSET && monotone_of(a, &mw)) {
                cond_monotone(op, a, (unsigned) mw, k, c);
                return 0;
        }
        if (op == BPF_JEQ && a.e->op == EXPR_MUL && sym_is_const(a.e->r) && !sym_is_const(a.e->l) &&
            a.e->l.e->op == EXPR_WORD) {
                cond_product_eq(a.e->l.e->word, a.e->r.k, k, c);
                return 0;
        }
        return cond_opaque(arena, op, a, SYM_CONST(k), c);
}

int cond_analyze(Arena *arena, uint16_t op, SymVal a, SymVal b, Cond *ret) {
        *ret = (Cond) {};
        if (sym_is_const(a) && sym_is_const(b)) {
                ret->kind = jump_holds(op, a.k, b.k) ? COND_TRUE : COND_FALSE;
                return 0;
        }
        if (sym_is_const(a)) { /* k op b: turn it around */
                if (op == BPF_JEQ || op == BPF_JSET)
                        return cond_on_expr(arena, op, b, a.k, ret);
                /* k > b is !(b >= k); k >= b is !(b > k) */
                int r = cond_on_expr(arena, op == BPF_JGT ? BPF_JGE : BPF_JGT, b, a.k, ret);
                if (r >= 0)
                        cond_negate(ret);
                return r;
        }
        if (sym_is_const(b))
                return cond_on_expr(arena, op, a, b.k, ret);
        if (sym_equal(a, b) && op != BPF_JSET) {
                ret->kind = op == BPF_JGT ? COND_FALSE : COND_TRUE;
                return 0;
        }
        if (sym_equal(a, b)) { /* a & a != 0 is a != 0 */
                int r = cond_on_expr(arena, BPF_JEQ, a, 0, ret);
                if (r >= 0)
                        cond_negate(ret);
                return r;
        }
        return cond_opaque(arena, op, a, b, ret);
}
