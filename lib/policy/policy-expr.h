/* policy-expr.h: symbolic values of the classic-BPF registers and scratch memory (constants, words
 * of struct seccomp_data, and ALU expressions over them), and what a conditional jump on them
 * says about the words */
#pragma once

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "policy/policy-word.h"

typedef enum ExprOp {
        EXPR_WORD, /* a word of struct seccomp_data */
        EXPR_ADD,
        EXPR_SUB,
        EXPR_MUL,
        EXPR_DIV,
        EXPR_AND,
        EXPR_OR,
        EXPR_XOR,
        EXPR_LSH,
        EXPR_RSH,
        EXPR_NEG,
        _EXPR_OP_MAX,
} ExprOp;

typedef struct Expr Expr;

/* A 32-bit value: the constant k when e is NULL, else the expression e. Expressions are
 * immutable and live in the analysis' arena. */
typedef struct SymVal {
        const Expr *e;
        uint32_t k;
} SymVal;

struct Expr {
        ExprOp op;
        uint8_t word;   /* EXPR_WORD */
        uint16_t words; /* the words it reads, bit w for word w */
        SymVal l, r;    /* operands (r unused for NEG) */
};

#define SYM_CONST(v) ((SymVal) { .e = NULL, .k = (v) })

static inline bool sym_is_const(SymVal v) {
        return !v.e;
}

/* The value of word w. */
int sym_word(Arena *arena, unsigned w, SymVal *ret);
/* a op b with the semantics of the BPF interpreter (shifts by b & 31; division by zero must not
 * be asked for: the evaluator splits on it first), folding constants and identities. */
int sym_alu(Arena *arena, ExprOp op, SymVal a, SymVal b, SymVal *ret);

/* The bits of v that are the same whatever the words hold: (v & *mask) == *value always. */
void sym_known_bits(SymVal v, uint32_t *mask, uint32_t *value);

/* Its value for one seccomp_data (division by zero gives 0: a term that holds cannot meet it). */
uint32_t sym_eval(SymVal v, const struct seccomp_data *d);
/* The words it reads (bit w for word w). */
uint16_t sym_words(SymVal v);
/* "(arg1.lo * 0x9e3779b9) >> 3", malloc'ed; NULL on OOM. */
char *sym_to_string(SymVal v);
bool sym_equal(SymVal a, SymVal b);

/* A condition the one-word forms cannot state: (l op r) == truth, op a BPF jump (BPF_JEQ,
 * BPF_JGT, BPF_JGE, BPF_JSET). Exact, evaluable, but only described ("depends on arg2.lo
 * through ..."). */
typedef struct Opaque {
        uint16_t op;
        bool truth;
        SymVal l, r;
        const struct Opaque *next;
} Opaque;

bool opaque_holds(const Opaque *o, const struct seccomp_data *d);
/* "depends on arg2.lo through (arg2.lo * 3) > 0xa", malloc'ed; NULL on OOM. */
char *opaque_to_string(const Opaque *o);

/* One word-level fact a jump can establish. */
typedef enum AtomKind {
        ATOM_RANGE,   /* a <= w <= b */
        ATOM_MASK_EQ, /* (w & a) == b */
        ATOM_MASK_NE, /* (w & a) != b */
        ATOM_OPAQUE,  /* opaque */
} AtomKind;

typedef struct Atom {
        AtomKind kind;
        unsigned word;
        uint32_t a, b;
        const Opaque *opaque;
} Atom;

/* One side of a jump: it is taken when any of its atoms holds (they never overlap). */
typedef struct Branch {
        unsigned n;
        Atom alt[2];
} Branch;

typedef enum CondKind {
        COND_TRUE,  /* always taken */
        COND_FALSE, /* never taken */
        COND_SPLIT, /* taken under t, not under f */
} CondKind;

typedef struct Cond {
        CondKind kind;
        Branch t, f;
} Cond;

/* What the jump "a op b" (op: BPF_JEQ, BPF_JGT, BPF_JGE or BPF_JSET) says: exact one-word atoms
 * where the operands are a word under bit operations with constants (AND, OR, XOR, shifts,
 * multiplication and division by powers of two) or a word plus a constant; an opaque atom
 * otherwise. Whether the atoms leave members is for the caller to find out. */
int cond_analyze(Arena *arena, uint16_t op, SymVal a, SymVal b, Cond *ret);
