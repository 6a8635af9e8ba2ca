/* test-hashmap.c: lib/core/hashmap.c against GLib's hash table as the reference, with hashed keys
 * and with dense ones (hashmap_set_dense_keys()): random puts, replaces, removes and lookups over
 * key sets that collide on purpose, then a walk that must meet every item once */
#include "core/hashmap.h"
#include "tests-util.h"

typedef enum KeyShape {
        KEYS_RANDOM,
        KEYS_RUN,        /* 1, 2, 3, ...: the ids a scanner's program hands out */
        KEYS_STRIDED,    /* multiples of 4096: one home slot for many in a dense map */
        _KEYS_SHAPE_MAX,
} KeyShape;

static uint64_t key_of(KeyShape shape, GRand *rand, unsigned n) {
        unsigned i = (unsigned) g_rand_int_range(rand, 0, (gint32) n);
        switch (shape) {
        case KEYS_RANDOM:
                return ((uint64_t) g_rand_int(rand) << 32 | g_rand_int(rand)) % (n * 8u) * 0x9e3779b97f4a7c15ULL;
        case KEYS_RUN:
                return 1 + i;
        default:
                return (uint64_t) (1 + i) << 12;
        }
}

/* Every item of h is in ref with the same value, and h has as many. */
static void assert_same(const Hashmap *h, GHashTable *ref) {
        size_t seen = 0;
        uint64_t key;
        void *value;

        g_assert_cmpuint(hashmap_size(h), ==, g_hash_table_size(ref));
        for (size_t i = 0; hashmap_next(h, &i, &key, &value); seen++)
                g_assert_true(g_hash_table_lookup(ref, &key) == value);
        g_assert_cmpuint(seen, ==, g_hash_table_size(ref));
}

static void run_ops(bool dense, KeyShape shape, unsigned n, unsigned ops) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(1000 * dense + 10 * shape + n);
        g_autoptr(GHashTable) ref = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        Hashmap h = {};

        if (dense)
                hashmap_set_dense_keys(&h);
        for (unsigned i = 0; i < ops; i++) {
                uint64_t key = key_of(shape, rand, n);
                void *value = GSIZE_TO_POINTER((gsize) g_rand_int_range(rand, 1, 1 << 30));
                void *have = g_hash_table_lookup(ref, &key);

                switch (g_rand_int_range(rand, 0, 4)) {
                case 0: /* put */
                        g_assert_cmpint(hashmap_put(&h, key, value), ==, have ? -EEXIST : 0);
                        if (!have)
                                g_hash_table_insert(ref, g_memdup2(&key, sizeof(key)), value);
                        break;
                case 1: /* replace */
                        g_assert_cmpint(hashmap_replace(&h, key, value), ==, 0);
                        g_hash_table_insert(ref, g_memdup2(&key, sizeof(key)), value);
                        break;
                case 2: /* remove */
                        g_assert_true(hashmap_remove(&h, key) == have);
                        g_hash_table_remove(ref, &key);
                        break;
                default: /* get */
                        g_assert_true(hashmap_get(&h, key) == have);
                }
        }
        assert_same(&h, ref);
        hashmap_deinit(&h);
        g_assert_true(h.dense_keys == dense); /* it stays the kind of map it was */
        g_assert_null(hashmap_get(&h, 1));
}

static void test_ops(gconstpointer data) {
        bool dense = GPOINTER_TO_INT(data);

        for (KeyShape shape = 0; shape < _KEYS_SHAPE_MAX; shape++) {
                run_ops(dense, shape, 64, 2000);
                run_ops(dense, shape, 5000, 40000);
        }
}

/* A run of ids in a dense map fills neighbouring slots: each is found where it starts looking. */
static void test_dense_run(void) {
        Hashmap h = {};

        hashmap_set_dense_keys(&h);
        g_assert_cmpint(hashmap_reserve(&h, 1000), ==, 0);
        for (uint64_t id = 5000; id < 6000; id++)
                g_assert_cmpint(hashmap_put(&h, id, GSIZE_TO_POINTER(id)), ==, 0);
        for (uint64_t id = 5000; id < 6000; id++) {
                size_t slot = id & (h.n_slots - 1);
                g_assert_cmpuint(h.slots[slot].key, ==, id);
                g_assert_true(hashmap_get(&h, id) == GSIZE_TO_POINTER(id));
        }
        /* only on an empty map */
        Hashmap other = {};
        g_assert_cmpint(hashmap_put(&other, 7, GSIZE_TO_POINTER(7)), ==, 0);
        hashmap_set_dense_keys(&other);
        g_assert_false(other.dense_keys);
        hashmap_deinit(&other);
        hashmap_deinit(&h);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_data_func("/hashmap/hashed", GINT_TO_POINTER(false), test_ops);
        g_test_add_data_func("/hashmap/dense", GINT_TO_POINTER(true), test_ops);
        g_test_add_func("/hashmap/dense-run", test_dense_run);
        return g_test_run();
}
