/* policy-word.c: sets of values of one 32-bit word of struct seccomp_data, with the search that
 * finds members */
#include "policy/policy-word.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>

#include "core/util.h"

/* How many blocks of excluded values one search may skip before it gives up. Filters produce a
 * handful; only crafted exclusions come near this. */
#define SEARCH_BUDGET 65536

#define HOST_LITTLE_ENDIAN (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

static const char *const word_names[POLICY_WORDS] = {
        "nr", "arch",
#if HOST_LITTLE_ENDIAN
        "ip.lo", "ip.hi",
        "arg0.lo", "arg0.hi", "arg1.lo", "arg1.hi", "arg2.lo", "arg2.hi",
        "arg3.lo", "arg3.hi", "arg4.lo", "arg4.hi", "arg5.lo", "arg5.hi",
#else
        "ip.hi", "ip.lo",
        "arg0.hi", "arg0.lo", "arg1.hi", "arg1.lo", "arg2.hi", "arg2.lo",
        "arg3.hi", "arg3.lo", "arg4.hi", "arg4.lo", "arg5.hi", "arg5.lo",
#endif
};

static const char *const field_names[POLICY_FIELDS] = { "arg0", "arg1", "arg2", "arg3", "arg4", "arg5", "ip" };

const char *policy_word_name(unsigned w) {
        return w < POLICY_WORDS ? word_names[w] : "?";
}

const char *policy_field_name(unsigned field) {
        return field < POLICY_FIELDS ? field_names[field] : "?";
}

unsigned policy_field_word(unsigned field, bool high) {
        size_t offset = field == POLICY_FIELD_IP ? offsetof(struct seccomp_data, instruction_pointer)
                                                 : offsetof(struct seccomp_data, args) + 8 * field;
        return (unsigned) (offset / 4) + (high == HOST_LITTLE_ENDIAN);
}

int policy_word_field(unsigned w, bool *ret_high) {
        const unsigned ip = offsetof(struct seccomp_data, instruction_pointer) / 4;
        const unsigned args = offsetof(struct seccomp_data, args) / 4;

        if (w < ip || w >= POLICY_WORDS)
                return -1;
        *ret_high = ((w - ip) % 2 == 1) == HOST_LITTLE_ENDIAN;
        return w < args ? POLICY_FIELD_IP : (int) ((w - args) / 2);
}

uint32_t policy_word_value(const void *seccomp_data, unsigned w) {
        uint32_t v;
        memcpy(&v, (const uint8_t *) seccomp_data + 4 * w, sizeof(v));
        return v;
}

/* ---- members ---- */

static uint32_t bits_above(unsigned p) { /* the bits above bit p */
        return p >= 31 ? 0 : ~((2U << p) - 1);
}

static uint32_t bits_below(unsigned p) { /* the bits below bit p */
        return (1U << p) - 1;
}

static unsigned highest_bit(uint32_t v) {
        return 31 - (unsigned) __builtin_clz(v);
}

/* The smallest y >= x with (y & km) == kv. */
static bool next_fit(uint32_t x, uint32_t km, uint32_t kv, uint32_t *ret) {
        uint32_t conflict = (x ^ kv) & km;
        if (!conflict) {
                *ret = x;
                return true;
        }
        unsigned p = highest_bit(conflict), q = p;
        if (!(kv & (1U << p))) { /* x has a 1 where a 0 is needed: carry into a free bit above */
                uint32_t free_zero = ~km & ~x & bits_above(p);
                if (!free_zero)
                        return false;
                q = (unsigned) __builtin_ctz(free_zero);
        }
        *ret = (x & bits_above(q)) | (1U << q) | (kv & bits_below(q));
        return true;
}

/* The largest y <= x with (y & km) == kv. */
static bool prev_fit(uint32_t x, uint32_t km, uint32_t kv, uint32_t *ret) {
        uint32_t conflict = (x ^ kv) & km;
        if (!conflict) {
                *ret = x;
                return true;
        }
        unsigned p = highest_bit(conflict), q = p;
        if (kv & (1U << p)) { /* x has a 0 where a 1 is needed: borrow from a free bit above */
                uint32_t free_one = ~km & x & bits_above(p);
                if (!free_one)
                        return false;
                q = (unsigned) __builtin_ctz(free_one);
        }
        *ret = (x & bits_above(q)) | (~km & bits_below(q)) | (kv & bits_below(q));
        return true;
}

static const WordExcl *excl_matching(const WordExcl *e, uint32_t v) {
        for (; e; e = e->next)
                if ((v & e->mask) == e->value)
                        return e;
        return NULL;
}

bool word_domain_contains_beyond(const WordDomain *d, uint32_t v, const WordExcl *base) {
        if (v < d->lo || v > d->hi || (v & d->known_mask) != d->known_value)
                return false;
        for (const WordExcl *e = d->excl; e && e != base; e = e->next)
                if ((v & e->mask) == e->value)
                        return false;
        return true;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

bool word_points_has(const WordPoints *p, uint32_t v) {
        return p && bsearch_safe(&v, p->values, p->n, sizeof(uint32_t), cmp_u32);
}

bool word_domain_contains(const WordDomain *d, uint32_t v) {
        return v >= d->lo && v <= d->hi && (v & d->known_mask) == d->known_value && !excl_matching(d->excl, v) &&
               !word_points_has(d->points, v);
}

/* The search has two parts. Exclusions of whole values (and known bits, and the range) are
 * skipped block by block in the order of the values: skip_search(). Exclusions of bit patterns
 * are clauses on the bits: a depth-first search assigns the bits from the top, drops the
 * patterns a bit already differs from, prunes where one is met in full, and hands each subtree
 * where no pattern is left to skip_search(). */

static const WordExcl *point_matching(const WordExcl *e, uint32_t v) {
        for (; e; e = e->next)
                if (e->mask == UINT32_MAX && e->value == v)
                        return e;
        return NULL;
}

/* The member of [lo, hi] of d, the known bits and d's whole-value exclusions closest to the start
 * (lo when up, hi when down). */
static Sat skip_search(const WordDomain *d, uint32_t lo, uint32_t hi, bool up, unsigned *budget, uint32_t *ret) {
        uint32_t x = up ? lo : hi, y;
        for (; *budget > 0; (*budget)--) {
                if (up ? (x > hi || !next_fit(x, d->known_mask, d->known_value, &y) || y > hi)
                       : (x < lo || !prev_fit(x, d->known_mask, d->known_value, &y) || y < lo))
                        return SAT_NO;
                if (!point_matching(d->excl, y) && !word_points_has(d->points, y)) {
                        *ret = y;
                        return SAT_YES;
                }
                if (up ? y == UINT32_MAX : y == 0)
                        return SAT_NO;
                x = up ? y + 1 : y - 1;
        }
        return SAT_UNKNOWN;
}

#define PATTERNS_MAX 256

typedef struct Search {
        const WordDomain *d;
        uint32_t lo, hi;
        bool up;
        bool points; /* d excludes whole values too */
        unsigned budget;
        const WordExcl *patterns[PATTERNS_MAX];
        uint16_t *alive; /* 33 levels of n_patterns indices */
        size_t n_patterns;
} Search;

static Sat dfs(Search *s, int b, uint32_t prefix, const uint16_t *alive, size_t n_alive, uint32_t *ret) {
        uint32_t below = b >= 0 ? (uint32_t) ((UINT64_C(2) << b) - 1) : 0; /* bits b..0 */
        uint32_t lo = MAX(s->lo, prefix), hi = MIN(s->hi, prefix | below);
        bool patterns_below = false;
        Sat result = SAT_NO;

        if (lo > hi)
                return SAT_NO;
        if (s->budget == 0)
                return SAT_UNKNOWN;
        s->budget--;
        for (size_t i = 0; i < n_alive && !patterns_below; i++)
                patterns_below = s->patterns[alive[i]]->mask & below;
        if (!patterns_below) /* no pattern can be met below: only values are left to skip */
                return skip_search(s->d, lo, hi, s->up, &s->budget, ret);
        uint32_t bit = 1U << b;
        bool relevant = false;
        for (size_t i = 0; i < n_alive && !relevant; i++)
                relevant = s->patterns[alive[i]]->mask & bit;
        bool tried_first = false;
        for (unsigned k = 0; k < 2; k++) {
                uint32_t v = s->up ? k : 1 - k;
                if ((s->d->known_mask & bit) && ((s->d->known_value & bit) != 0) != v)
                        continue;
                /* A bit no pattern looks at: if the first value's subtree lay wholly in the range
                 * and failed on the patterns alone, the other's fails the same way. */
                if (k == 1 && tried_first && !relevant && !s->points && result == SAT_NO) {
                        uint32_t first = prefix | ((1 - v) << b);
                        if (first >= s->lo && (first | (below >> 1)) <= s->hi)
                                break;
                }
                uint16_t *next = s->alive + (size_t) (32 - b) * s->n_patterns;
                size_t n_next = 0;
                bool met = false;
                for (size_t i = 0; i < n_alive && !met; i++) {
                        const WordExcl *e = s->patterns[alive[i]];
                        if ((e->mask & bit) && ((e->value & bit) != 0) != v)
                                continue; /* differs: this pattern is avoided */
                        met = !(e->mask & (below >> 1)); /* every bit of it agrees */
                        next[n_next++] = alive[i];
                }
                if (met)
                        continue;
                tried_first = k == 0;
                Sat r = dfs(s, b - 1, prefix | (v << b), next, n_next, ret);
                if (r == SAT_YES)
                        return r;
                if (r == SAT_UNKNOWN)
                        result = SAT_UNKNOWN;
        }
        return result;
}

static Sat domain_search(const WordDomain *d, uint32_t from, bool up, uint32_t *ret) {
        unsigned budget = SEARCH_BUDGET;
        uint32_t lo = up ? MAX(from, d->lo) : d->lo, hi = up ? d->hi : MIN(from, d->hi);
        Search *s = NULL;
        size_t n = 0;
        bool points = d->points && d->points->n > 0;

        for (const WordExcl *e = d->excl; e; e = e->next) {
                points = points || e->mask == UINT32_MAX;
                if (e->mask != UINT32_MAX) {
                        if (!s && !(s = calloc(1, sizeof(Search))))
                                return SAT_UNKNOWN;
                        if (n == PATTERNS_MAX) {
                                free(s);
                                return SAT_UNKNOWN;
                        }
                        s->patterns[n++] = e;
                }
        }
        if (!s)
                return skip_search(d, lo, hi, up, &budget, ret);
        *s = (Search) { .d = d, .lo = lo, .hi = hi, .up = up, .points = points, .budget = budget, .n_patterns = n,
                        .alive = malloc(33 * n * sizeof(uint16_t)) };
        Sat r = SAT_UNKNOWN;
        if (s->alive) {
                /* the patterns again: *s was overwritten */
                size_t k = 0;
                for (const WordExcl *e = d->excl; e; e = e->next)
                        if (e->mask != UINT32_MAX) {
                                s->patterns[k] = e;
                                s->alive[k] = (uint16_t) k;
                                k++;
                        }
                r = dfs(s, 31, 0, s->alive, n, ret);
                free(s->alive);
        }
        free(s);
        return r;
}

Sat word_domain_first(const WordDomain *d, uint32_t from, uint32_t *ret) {
        return domain_search(d, from, true, ret);
}

Sat word_domain_last(const WordDomain *d, uint32_t from, uint32_t *ret) {
        return domain_search(d, from, false, ret);
}

/* After a restriction: is there still a member? The witness answers at once when it survived. */
static int domain_recheck(WordDomain *d) {
        if (d->lo > d->hi)
                return SAT_NO;
        if (word_domain_contains(d, d->witness))
                return SAT_YES;
        Sat s = word_domain_first(d, d->lo, &d->witness);
        if (s == SAT_UNKNOWN)
                d->witness = d->lo;
        return s;
}

int word_domain_restrict_range(WordDomain *d, uint32_t lo, uint32_t hi) {
        d->lo = MAX(d->lo, lo);
        d->hi = MIN(d->hi, hi);
        return domain_recheck(d);
}

int word_domain_restrict_mask_eq(WordDomain *d, uint32_t mask, uint32_t value) {
        value &= mask;
        if (d->known_mask & mask & (d->known_value ^ value))
                return SAT_NO;
        d->known_mask |= mask;
        d->known_value |= value;
        return domain_recheck(d);
}

static int excl_push(const WordExcl **list, Arena *arena, uint32_t mask, uint32_t value) {
        WordExcl *e = arena_alloc(arena, sizeof(WordExcl));
        if (!e)
                return -ENOMEM;
        *e = (WordExcl) { .mask = mask, .value = value, .next = *list };
        *list = e;
        return 0;
}

int word_domain_restrict_mask_ne(WordDomain *d, Arena *arena, uint32_t mask, uint32_t value) {
        value &= mask;
        if (mask == 0) /* every value has (v & 0) == 0 */
                return SAT_NO;
        if (d->known_mask & mask & (d->known_value ^ value))
                return domain_recheck(d); /* the known bits exclude it already */
        if (mask == UINT32_MAX && (value < d->lo || value > d->hi || word_points_has(d->points, value)))
                return domain_recheck(d);
        int r = excl_push(&d->excl, arena, mask, value);
        return r < 0 ? r : domain_recheck(d);
}

int word_domain_intersect(WordDomain *d, const WordDomain *other, const WordExcl *base, Arena *arena) {
        if (d->known_mask & other->known_mask & (d->known_value ^ other->known_value))
                return SAT_NO;
        d->lo = MAX(d->lo, other->lo);
        d->hi = MIN(d->hi, other->hi);
        d->known_mask |= other->known_mask;
        d->known_value |= other->known_value;
        if (!d->points)
                d->points = other->points;
        for (const WordExcl *e = other->excl; e && e != base; e = e->next)
                if (!excl_matching(d->excl, e->value) || (e->mask != UINT32_MAX)) {
                        int r = excl_push(&d->excl, arena, e->mask, e->value);
                        if (r < 0)
                                return r;
                }
        if (word_domain_contains(d, other->witness))
                d->witness = other->witness;
        return domain_recheck(d);
}

/* ---- normal form ---- */

static int cmp_excl(const void *a, const void *b) {
        const WordExcl *x = *(const WordExcl *const *) a, *y = *(const WordExcl *const *) b;
        if (x->mask != y->mask)
                return x->mask < y->mask ? 1 : -1; /* whole values first */
        return x->value < y->value ? -1 : x->value > y->value;
}

/* Does some member of d, with list as its exclusions, have (v & mask) == value? */
static Sat domain_meets(const WordDomain *d, const WordExcl *list, uint32_t mask, uint32_t value) {
        WordDomain t = *d;
        uint32_t v;
        if (t.known_mask & mask & (t.known_value ^ value))
                return SAT_NO;
        t.known_mask |= mask;
        t.known_value |= value;
        t.excl = list;
        return word_domain_first(&t, t.lo, &v);
}

/* The known bits every member of [lo, hi] has anyway: those above the highest bit where lo and
 * hi differ. */
static uint32_t range_common_bits(uint32_t lo, uint32_t hi) {
        return lo == hi ? UINT32_MAX : bits_above(highest_bit(lo ^ hi));
}

#define EXCL_NORMALIZE_MAX 256

static bool excl_same(const WordExcl *a, const WordExcl *b) {
        return a->mask == b->mask && a->value == b->value;
}

/* Drop the exclusions beyond base that the rest of d implies, one at a time (of two equal ones,
 * one stays), and sort the others. */
static int excl_normalize(WordDomain *d, const WordExcl *base, Arena *arena) {
        const WordExcl *extra[EXCL_NORMALIZE_MAX];
        bool keep[EXCL_NORMALIZE_MAX];
        WordExcl cells[EXCL_NORMALIZE_MAX];
        size_t n = 0;

        for (const WordExcl *e = d->excl; e && e != base; e = e->next) {
                if (n == EXCL_NORMALIZE_MAX)
                        return 0; /* leave a long list as it is */
                keep[n] = true;
                extra[n++] = e;
        }
        qsort_safe(extra, n, sizeof(extra[0]), cmp_excl);
        for (size_t i = 0; i < n; i++) {
                const WordExcl *others = base;
                size_t used = 0;
                if (i > 0 && keep[i - 1] && excl_same(extra[i - 1], extra[i])) {
                        keep[i] = false;
                        continue;
                }
                for (size_t j = 0; j < n; j++)
                        if (j != i && keep[j]) {
                                cells[used] = (WordExcl) { extra[j]->mask, extra[j]->value, others };
                                others = &cells[used++];
                        }
                if (domain_meets(d, others, extra[i]->mask, extra[i]->value) == SAT_NO)
                        keep[i] = false;
        }
        const WordExcl *kept = base;
        for (size_t i = n; i > 0; i--)
                if (keep[i - 1]) {
                        int r = excl_push(&kept, arena, extra[i - 1]->mask, extra[i - 1]->value);
                        if (r < 0)
                                return r;
                }
        d->excl = kept;
        return 0;
}

/* The smallest and largest members of d with its range widened to [lo, hi]. */
static bool domain_extent(const WordDomain *d, uint32_t lo, uint32_t hi, uint32_t *ret_lo, uint32_t *ret_hi) {
        WordDomain t = *d;
        t.lo = lo;
        t.hi = hi;
        return word_domain_first(&t, lo, ret_lo) == SAT_YES && word_domain_last(&t, hi, ret_hi) == SAT_YES;
}

int word_domain_normalize(WordDomain *d, const WordDomain *base, Arena *arena) {
        const WordExcl *base_excl = base ? base->excl : NULL;
        uint32_t lo, hi, wide_lo, wide_hi;
        Sat s = word_domain_first(d, d->lo, &lo);
        if (s == SAT_NO)
                return SAT_NO;
        if (s == SAT_YES && word_domain_last(d, d->hi, &hi) == SAT_YES) {
                d->lo = lo;
                d->hi = hi;
                /* a range the known bits and exclusions imply anyway is left out */
                if (lo != hi && base && domain_extent(d, base->lo, base->hi, &wide_lo, &wide_hi) && wide_lo == lo &&
                    wide_hi == hi) {
                        d->lo = base->lo;
                        d->hi = base->hi;
                }
        }
        if (d->lo == d->hi) {
                d->known_mask = UINT32_MAX;
                d->known_value = d->lo;
                d->excl = base_excl;
                d->witness = d->lo;
                return SAT_YES;
        }
        d->known_mask &= ~range_common_bits(d->lo, d->hi);
        d->known_value &= d->known_mask;
        int r = excl_normalize(d, base_excl, arena);
        if (r < 0)
                return r;
        if (!word_domain_contains(d, d->witness) && word_domain_first(d, d->lo, &lo) == SAT_YES)
                d->witness = lo;
        return s;
}

bool word_domain_equal(const WordDomain *a, const WordDomain *b, const WordExcl *base) {
        if (a->lo != b->lo || a->hi != b->hi || a->known_mask != b->known_mask || a->known_value != b->known_value)
                return false;
        if (a->lo == a->hi)
                return true;
        const WordExcl *x = a->excl, *y = b->excl;
        for (; x != base && y != base; x = x->next, y = y->next)
                if (!x || !y || x->mask != y->mask || x->value != y->value)
                        return false;
        return x == base && y == base;
}

bool word_domain_is_unconstrained(const WordDomain *d, const WordDomain *base) {
        return d->lo == base->lo && d->hi == base->hi && d->known_mask == base->known_mask &&
               d->known_value == base->known_value && d->excl == base->excl && d->points == base->points;
}

bool word_domain_is_point(const WordDomain *d, uint32_t *ret) {
        if (d->lo != d->hi)
                return false;
        if (ret)
                *ret = d->lo;
        return true;
}

/* ---- samples ---- */

typedef struct Samples {
        uint32_t *out;
        size_t n, max;
} Samples;

static void sample_add(Samples *s, uint32_t v) {
        for (size_t i = 0; i < s->n; i++)
                if (s->out[i] == v)
                        return;
        if (s->n < s->max)
                s->out[s->n++] = v;
}

static void sample_around(Samples *s, uint32_t v) {
        sample_add(s, v);
        if (v > 0)
                sample_add(s, v - 1);
        if (v < UINT32_MAX)
                sample_add(s, v + 1);
}

size_t word_domain_boundaries(const WordDomain *d, uint32_t *out, size_t max) {
        Samples s = { .out = out, .max = max };
        uint32_t v;

        sample_around(&s, d->lo);
        sample_around(&s, d->hi);
        if (word_domain_first(d, d->lo, &v) == SAT_YES) {
                sample_around(&s, v);
                if (v < UINT32_MAX && word_domain_first(d, v + 1, &v) == SAT_YES)
                        sample_add(&s, v);
        }
        if (word_domain_last(d, d->hi, &v) == SAT_YES) {
                sample_around(&s, v);
                if (v > 0 && word_domain_last(d, v - 1, &v) == SAT_YES)
                        sample_add(&s, v);
        }
        sample_add(&s, d->witness);
        for (const WordExcl *e = d->excl; e && s.n < s.max; e = e->next) {
                uint32_t inside = (d->witness & ~e->mask) | e->value; /* excluded, otherwise like the witness */
                sample_around(&s, inside);
                if (e->mask != UINT32_MAX)
                        sample_add(&s, inside ^ (1U << __builtin_ctz(e->mask)));
        }
        for (uint32_t m = d->known_mask; m && s.n < s.max; m &= m - 1)
                sample_add(&s, d->witness ^ (m & -m)); /* one known bit wrong */
        return s.n;
}
