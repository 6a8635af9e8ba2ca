/* hashmap.h: a small open-addressing hash map from 64-bit keys to pointers */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct HashmapSlot {
        uint64_t key;
        void *value; /* NULL marks an empty slot: values must not be NULL */
} HashmapSlot;

typedef struct Hashmap {
        HashmapSlot *slots;
        size_t n_slots; /* a power of two, or 0 */
        size_t n_items;
        bool dense_keys; /* hashmap_set_dense_keys() */
} Hashmap;

/* Hashmaps are embedded: zero-initialised is empty. Deinit empties one (its kind of keys stays). */
void hashmap_deinit(Hashmap *h);
/* For keys handed out in runs by this program itself (the ids a scanner's BPF program numbers
 * filters with): a key's slot is the key itself, modulo the table, so that a run of keys fills
 * neighbouring slots without a collision, where a hash puts each far from the one before (a cache
 * miss each). Never for keys that come from outside (snapshot files, the bus, pids): keys that are
 * multiples of a power of two would pile up in a few slots. On an empty map only. */
void hashmap_set_dense_keys(Hashmap *h);
void hashmap_clear(Hashmap *h);
/* -EEXIST if key is present (the map is unchanged), -ENOMEM, or 0. value must not be NULL. */
int hashmap_put(Hashmap *h, uint64_t key, void *value);
/* Room for n more items without growing on the way (one allocation instead of a doubling per
 * power of two): -ENOMEM, or 0. */
int hashmap_reserve(Hashmap *h, size_t n);
/* Insert or overwrite. */
int hashmap_replace(Hashmap *h, uint64_t key, void *value);
void *hashmap_get(const Hashmap *h, uint64_t key);
/* Returns the removed value or NULL. */
void *hashmap_remove(Hashmap *h, uint64_t key);
static inline size_t hashmap_size(const Hashmap *h) {
        return h->n_items;
}

/* Iteration: for (size_t i = 0; hashmap_next(h, &i, &key, &value); ) ... (no changes meanwhile) */
bool hashmap_next(const Hashmap *h, size_t *i, uint64_t *ret_key, void **ret_value);
