/* policy-word.h: sets of values of one 32-bit word of struct seccomp_data, as the symbolic
 * evaluator narrows them down: a range, known bits and excluded bit patterns, with the search
 * that finds members */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

/* struct seccomp_data as the filters load it: 16 words of 32 bits, word w at offset 4 * w. */
#define POLICY_WORDS 16
#define POLICY_WORD_NR 0
#define POLICY_WORD_ARCH 1

/* The 64-bit fields made of two words: args[0..5], and the instruction pointer. */
#define POLICY_FIELD_IP 6
#define POLICY_FIELDS 7

/* "nr", "arch", "ip.lo", "ip.hi", "arg0.lo", "arg0.hi", ... (halves in the host's byte order). */
const char *policy_word_name(unsigned w);
/* "arg0" ... "arg5", "ip". */
const char *policy_field_name(unsigned field);
/* The word holding the low or high half of a field. */
unsigned policy_field_word(unsigned field, bool high);
/* The field a word belongs to, or -1 for nr and arch; *ret_high says which half. */
int policy_word_field(unsigned w, bool *ret_high);
/* The 32-bit word w of d. */
uint32_t policy_word_value(const void *seccomp_data, unsigned w);

/* A value excluded from a domain: every v with (v & mask) == value. Lists are immutable and
 * share their tails, so that a copy of a domain is a copy of the struct. */
typedef struct WordExcl {
        uint32_t mask, value;
        const struct WordExcl *next;
} WordExcl;

/* Values excluded all at once, sorted: the many numbers of a question ("every syscall number
 * libseccomp does not name"), shared by every domain narrowed from it. */
typedef struct WordPoints {
        const uint32_t *values;
        size_t n;
} WordPoints;

bool word_points_has(const WordPoints *p, uint32_t v);

typedef struct WordDomain {
        uint32_t lo, hi;                  /* lo <= v <= hi */
        uint32_t known_mask, known_value; /* (v & known_mask) == known_value */
        uint32_t witness;                 /* a member, when the domain is known to have one */
        const WordExcl *excl;             /* and none of these */
        const WordPoints *points;         /* nor these (may be NULL) */
} WordDomain;

#define WORD_DOMAIN_FULL ((WordDomain) { .lo = 0, .hi = UINT32_MAX })

/* Whether a set has members: the search gives up (SAT_UNKNOWN) on pathological sets. */
typedef enum Sat {
        SAT_NO,
        SAT_YES,
        SAT_UNKNOWN,
} Sat;

bool word_domain_contains(const WordDomain *d, uint32_t v);
/* The same for a v already known to be in a domain whose exclusions are base: only the
 * exclusions before base are looked at (and not the points, which are the question's). */
bool word_domain_contains_beyond(const WordDomain *d, uint32_t v, const WordExcl *base);
/* The smallest member >= from, or the largest member <= from. */
Sat word_domain_first(const WordDomain *d, uint32_t from, uint32_t *ret);
Sat word_domain_last(const WordDomain *d, uint32_t from, uint32_t *ret);

/* Narrow d down; the answer says whether members are left (on SAT_NO, d is garbage). The
 * witness is kept a member. Negative errno (-ENOMEM) on failure. */
int word_domain_restrict_range(WordDomain *d, uint32_t lo, uint32_t hi);
int word_domain_restrict_mask_eq(WordDomain *d, uint32_t mask, uint32_t value);
int word_domain_restrict_mask_ne(WordDomain *d, Arena *arena, uint32_t mask, uint32_t value);
/* d &= other, where both lists end in base (the exclusions both started with). */
int word_domain_intersect(WordDomain *d, const WordDomain *other, const WordExcl *base, Arena *arena);

/* Tighten lo and hi to the smallest and largest members (or leave base's range where the rest
 * implies the tight one), drop the known bits the range implies and the exclusions the rest
 * implies (those of base stay), sort the others. base may be NULL (nothing to start from). Two
 * normalized domains of the same base are the same set when word_domain_equal() says so (the
 * converse holds for what filters produce, not always). */
int word_domain_normalize(WordDomain *d, const WordDomain *base, Arena *arena);
bool word_domain_equal(const WordDomain *a, const WordDomain *b, const WordExcl *base);

/* No constraint beyond base's (base: the domain the question started with). */
bool word_domain_is_unconstrained(const WordDomain *d, const WordDomain *base);
bool word_domain_is_point(const WordDomain *d, uint32_t *ret);

/* Values at the edges of d, inside and just outside (lo - 1, lo, lo + 1, hi ..., around each
 * exclusion, a known bit flipped): at most max into out, returns how many. For tests that
 * sample conditions at their boundaries. */
size_t word_domain_boundaries(const WordDomain *d, uint32_t *out, size_t max);
