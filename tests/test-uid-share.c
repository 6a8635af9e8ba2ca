/* test-uid-share.c: the token buckets that share a worker lane's CPU time by uid */
#include "service/uid-share.h"
#include "tests-util.h"

#define SEC 1000000ULL

/* A uid starts with a full burst, pays what it takes, and refills at its share of one CPU. */
static void test_balance(void) {
        UidShare s;
        uid_share_init(&s, 2 * SEC, 50);
        g_assert_cmpint(uid_share_balance(&s, 1000, 10 * SEC), ==, 2 * SEC);
        g_assert_cmpint(uid_share_charge(&s, 1000, 3 * SEC, 10 * SEC), ==, 0);
        /* one call costs at most one burst */
        g_assert_cmpint(uid_share_balance(&s, 1000, 10 * SEC), ==, 0);
        g_assert_cmpuint(uid_share_ready_at(&s, 1000, 10 * SEC), >, 10 * SEC);
        g_assert_cmpint(uid_share_balance(&s, 1000, 12 * SEC), ==, 1 * SEC); /* 2 s at 50% */
        g_assert_cmpuint(uid_share_ready_at(&s, 1000, 12 * SEC), ==, 12 * SEC);
        /* another uid is not touched */
        g_assert_cmpint(uid_share_balance(&s, 1001, 12 * SEC), ==, 2 * SEC);
        /* full again: forgotten */
        g_assert_cmpint(uid_share_balance(&s, 1000, 20 * SEC), ==, 2 * SEC);
        g_assert_cmpuint(hashmap_size(&s.buckets), ==, 0);
        uid_share_deinit(&s);
}

/* In debt, a uid waits until its balance is positive again, and the debt is bounded. */
static void test_debt(void) {
        UidShare s;
        uid_share_init(&s, 2 * SEC, 50);
        for (int i = 0; i < 10; i++)
                g_assert_cmpint(uid_share_charge(&s, 7, 2 * SEC, 100 * SEC), ==, 0);
        g_assert_cmpint(uid_share_balance(&s, 7, 100 * SEC), ==, -2 * (int64_t) SEC);
        uint64_t ready = uid_share_ready_at(&s, 7, 100 * SEC);
        g_assert_cmpuint(ready, >, 104 * SEC);
        g_assert_cmpuint(ready, <, 104 * SEC + 10);
        g_assert_cmpint(uid_share_balance(&s, 7, ready), >, 0);
        g_assert_cmpint(uid_share_balance(&s, 7, ready - 10), <=, 0);
        uid_share_deinit(&s);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/uid-share/balance", test_balance);
        g_test_add_func("/uid-share/debt", test_debt);
        return g_test_run();
}
