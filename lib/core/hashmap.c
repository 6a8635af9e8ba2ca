/* hashmap.c: a small open-addressing hash map (linear probing, backward-shift deletion) */
#include "core/hashmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* splitmix64's finaliser: cheap and mixes every key bit into the slot index. */
static uint64_t hash64(uint64_t x) {
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        x ^= x >> 31;
        return x;
}

void hashmap_deinit(Hashmap *h) {
        free(h->slots);
        *h = (Hashmap) { .dense_keys = h->dense_keys };
}

void hashmap_set_dense_keys(Hashmap *h) {
        if (h->n_items == 0)
                h->dense_keys = true;
}

/* Where key's probe run starts. */
static size_t home(const Hashmap *h, uint64_t key) {
        return (h->dense_keys ? key : hash64(key)) & (h->n_slots - 1);
}

void hashmap_clear(Hashmap *h) {
        for (size_t i = 0; i < h->n_slots; i++)
                h->slots[i] = (HashmapSlot) {};
        h->n_items = 0;
}

static size_t find_slot(const Hashmap *h, uint64_t key) {
        size_t mask = h->n_slots - 1, i = home(h, key);
        while (h->slots[i].value && h->slots[i].key != key)
                i = (i + 1) & mask;
        return i;
}

static int resize(Hashmap *h, size_t n_slots) {
        HashmapSlot *old = h->slots;
        size_t n_old = h->n_slots;
        h->slots = calloc(n_slots, sizeof(HashmapSlot));
        if (!h->slots) {
                h->slots = old;
                return -ENOMEM;
        }
        h->n_slots = n_slots;
        for (size_t i = 0; i < n_old; i++)
                if (old[i].value)
                        h->slots[find_slot(h, old[i].key)] = old[i];
        free(old);
        return 0;
}

/* Keep the load factor at most 1/2. */
static int reserve_one(Hashmap *h) {
        if ((h->n_items + 1) * 2 <= h->n_slots)
                return 0;
        return resize(h, h->n_slots ? h->n_slots * 2 : 16);
}

int hashmap_reserve(Hashmap *h, size_t n) {
        size_t n_slots = h->n_slots ? h->n_slots : 16;
        if (n > SIZE_MAX / 4)
                return -ENOMEM;
        while ((h->n_items + n) * 2 > n_slots)
                n_slots *= 2;
        return n_slots == h->n_slots ? 0 : resize(h, n_slots);
}

static int put(Hashmap *h, uint64_t key, void *value, bool overwrite) {
        if (!value)
                return -EINVAL;
        int r = reserve_one(h);
        if (r < 0)
                return r;
        size_t i = find_slot(h, key);
        if (h->slots[i].value && !overwrite)
                return -EEXIST;
        if (!h->slots[i].value)
                h->n_items++;
        h->slots[i] = (HashmapSlot) { .key = key, .value = value };
        return 0;
}

int hashmap_put(Hashmap *h, uint64_t key, void *value) {
        return put(h, key, value, false);
}

int hashmap_replace(Hashmap *h, uint64_t key, void *value) {
        return put(h, key, value, true);
}

void *hashmap_get(const Hashmap *h, uint64_t key) {
        if (h->n_slots == 0)
                return NULL;
        return h->slots[find_slot(h, key)].value;
}

/* Shift later members of the probe run back into the hole, so lookups never need tombstones. */
static void close_hole(Hashmap *h, size_t hole) {
        size_t mask = h->n_slots - 1;
        for (size_t j = (hole + 1) & mask; h->slots[j].value; j = (j + 1) & mask) {
                size_t at = home(h, h->slots[j].key);
                /* j may move to hole if its home is not in the cyclic range (hole, j]. */
                bool in_range = hole <= j ? (at > hole && at <= j) : (at > hole || at <= j);
                if (in_range)
                        continue;
                h->slots[hole] = h->slots[j];
                h->slots[j] = (HashmapSlot) {};
                hole = j;
        }
}

void *hashmap_remove(Hashmap *h, uint64_t key) {
        if (h->n_slots == 0)
                return NULL;
        size_t i = find_slot(h, key);
        void *v = h->slots[i].value;
        if (!v)
                return NULL;
        h->slots[i] = (HashmapSlot) {};
        h->n_items--;
        close_hole(h, i);
        return v;
}

bool hashmap_next(const Hashmap *h, size_t *i, uint64_t *ret_key, void **ret_value) {
        for (; *i < h->n_slots; (*i)++)
                if (h->slots[*i].value) {
                        if (ret_key)
                                *ret_key = h->slots[*i].key;
                        if (ret_value)
                                *ret_value = h->slots[*i].value;
                        (*i)++;
                        return true;
                }
        return false;
}
