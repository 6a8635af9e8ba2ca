/* uid-share.c: the CPU time each uid takes of a shared worker lane, as a token bucket per uid */
#include "service/uid-share.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

typedef struct UidBucket {
        int64_t balance; /* µs, as of at */
        uint64_t at;
} UidBucket;

void uid_share_init(UidShare *s, uint64_t burst_usec, unsigned percent) {
        *s = (UidShare) { .burst_usec = burst_usec, .percent = percent < 1 ? 1 : percent > 100 ? 100 : percent };
}

void uid_share_deinit(UidShare *s) {
        uint64_t key;
        void *value;
        for (size_t i = 0; hashmap_next(&s->buckets, &i, &key, &value);)
                free(value);
        hashmap_deinit(&s->buckets);
}

/* b's balance refilled up to now. */
static int64_t bucket_balance(const UidShare *s, const UidBucket *b, uint64_t now) {
        uint64_t elapsed = now > b->at ? now - b->at : 0;
        uint64_t refill = elapsed * s->percent / 100; /* µs since boot: no overflow */
        int64_t burst = (int64_t) s->burst_usec;
        if (refill >= (uint64_t) (burst - b->balance))
                return burst; /* b->balance <= burst always */
        return b->balance + (int64_t) refill;
}

int64_t uid_share_balance(UidShare *s, uid_t uid, uint64_t now) {
        UidBucket *b = hashmap_get(&s->buckets, (uint64_t) uid + 1);
        if (!b)
                return (int64_t) s->burst_usec;
        int64_t balance = bucket_balance(s, b, now);
        if (balance >= (int64_t) s->burst_usec)
                free(hashmap_remove(&s->buckets, (uint64_t) uid + 1)); /* full: forgotten */
        return balance;
}

uint64_t uid_share_ready_at(UidShare *s, uid_t uid, uint64_t now) {
        int64_t balance = uid_share_balance(s, uid, now);
        if (balance > 0)
                return now;
        /* the first time that refills -balance + 1 µs at percent of a CPU */
        uint64_t want = ((uint64_t) -balance + 1) * 100;
        return now + (want + s->percent - 1) / s->percent;
}

int uid_share_charge(UidShare *s, uid_t uid, uint64_t cpu_usec, uint64_t now) {
        UidBucket *b = hashmap_get(&s->buckets, (uint64_t) uid + 1);
        if (!b) {
                b = malloc(sizeof(UidBucket));
                if (!b)
                        return -ENOMEM;
                *b = (UidBucket) { .balance = (int64_t) s->burst_usec, .at = now };
                int r = hashmap_put(&s->buckets, (uint64_t) uid + 1, b);
                if (r < 0) {
                        free(b);
                        return r;
                }
        }
        b->balance = bucket_balance(s, b, now);
        b->at = now;
        /* a debt of more than one burst is not kept: one huge call does not bar a uid for long */
        int64_t cost = cpu_usec > s->burst_usec ? (int64_t) s->burst_usec : (int64_t) cpu_usec;
        b->balance -= cost;
        if (b->balance < -(int64_t) s->burst_usec)
                b->balance = -(int64_t) s->burst_usec;
        return 0;
}

uint64_t thread_cpu_usec(void) {
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}
