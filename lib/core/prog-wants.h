/* prog-wants.h: the programs an analysis lacks (filters kept without instructions), by digest, and
 * where each one goes once it is read from somewhere else */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <linux/filter.h>

#include "core/arena.h"
#include "core/hashmap.h"
#include "core/prog.h"

typedef struct ProgWant ProgWant;

typedef struct ProgWants {
        ProgWant *wants;      /* one per distinct (digest, length) */
        size_t n, allocated;
        Hashmap by_digest;    /* the digest's first 8 bytes -> index + 1 of the first want with them */
        size_t n_slots;       /* places to fill */
        size_t n_filled;
} ProgWants;

/* Embedded: zero-initialised is empty. */
void prog_wants_done(ProgWants *w);

/* *slot (NULL now) is to point at the program of len instructions with that digest once it is
 * supplied. slot must stay valid as long as w. */
int prog_wants_add(ProgWants *w, const uint8_t digest[PROG_DIGEST_SIZE], size_t len,
                   const struct sock_filter **slot);

/* Whether a program of len instructions with that digest is wanted and not supplied yet. */
bool prog_wants_wanted(const ProgWants *w, const uint8_t digest[PROG_DIGEST_SIZE], size_t len);

/* The program insns (len instructions) copied into arena once and pointed at by every slot that
 * wants a program of its digest (computed here: a program is supplied only where it is exactly
 * the one wanted). 0 if nothing wanted it, 1 if it was supplied. */
int prog_wants_supply(ProgWants *w, Arena *arena, const struct sock_filter *insns, size_t len);

/* Slots still without their program. */
static inline size_t prog_wants_missing(const ProgWants *w) {
        return w->n_slots - w->n_filled;
}
