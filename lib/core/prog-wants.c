/* prog-wants.c: the programs an analysis lacks, by digest, and where each one goes */
#include "core/prog-wants.h"

#include <errno.h>
#include <string.h>

#include "core/util.h"

struct ProgWant {
        uint8_t digest[PROG_DIGEST_SIZE];
        size_t len;
        size_t next; /* index + 1 of the next want whose digest starts the same, or 0 */
        const struct sock_filter ***slots;
        size_t n_slots, allocated;
        bool supplied;
};

void prog_wants_done(ProgWants *w) {
        for (size_t i = 0; i < w->n; i++)
                free(w->wants[i].slots);
        free(w->wants);
        hashmap_deinit(&w->by_digest);
        *w = (ProgWants) {};
}

static uint64_t digest_key(const uint8_t digest[PROG_DIGEST_SIZE]) {
        uint64_t k;
        memcpy(&k, digest, sizeof(k));
        return k;
}

static ProgWant *want_find(const ProgWants *w, const uint8_t digest[PROG_DIGEST_SIZE], size_t len) {
        for (size_t i = (uintptr_t) hashmap_get(&w->by_digest, digest_key(digest)); i > 0; i = w->wants[i - 1].next) {
                ProgWant *x = &w->wants[i - 1];
                if (x->len == len && memcmp(x->digest, digest, PROG_DIGEST_SIZE) == 0)
                        return x;
        }
        return NULL;
}

static int want_new(ProgWants *w, const uint8_t digest[PROG_DIGEST_SIZE], size_t len, ProgWant **ret) {
        if (GROW(w->wants, w->allocated, w->n + 1) < 0)
                return -ENOMEM;
        uint64_t key = digest_key(digest);
        size_t first = (uintptr_t) hashmap_get(&w->by_digest, key);
        int r = hashmap_replace(&w->by_digest, key, (void *) (uintptr_t) (w->n + 1));
        if (r < 0)
                return r;
        ProgWant *x = &w->wants[w->n++];
        *x = (ProgWant) { .len = len, .next = first };
        memcpy(x->digest, digest, PROG_DIGEST_SIZE);
        *ret = x;
        return 0;
}

int prog_wants_add(ProgWants *w, const uint8_t digest[PROG_DIGEST_SIZE], size_t len,
                   const struct sock_filter **slot) {
        ProgWant *x = want_find(w, digest, len);
        int r = x ? 0 : want_new(w, digest, len, &x);
        if (r < 0)
                return r;
        if (GROW(x->slots, x->allocated, x->n_slots + 1) < 0)
                return -ENOMEM;
        x->slots[x->n_slots++] = slot;
        w->n_slots++;
        return 0;
}

bool prog_wants_wanted(const ProgWants *w, const uint8_t digest[PROG_DIGEST_SIZE], size_t len) {
        const ProgWant *x = want_find(w, digest, len);
        return x && !x->supplied;
}

int prog_wants_supply(ProgWants *w, Arena *arena, const struct sock_filter *insns, size_t len) {
        uint8_t digest[PROG_DIGEST_SIZE];
        prog_digest(insns, len, digest);
        ProgWant *x = want_find(w, digest, len);
        if (!x || x->supplied)
                return 0;
        const struct sock_filter *copy = arena_memdup(arena, insns, len * sizeof(struct sock_filter));
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < x->n_slots; i++)
                *x->slots[i] = copy;
        x->supplied = true;
        w->n_filled += x->n_slots;
        return 1;
}
