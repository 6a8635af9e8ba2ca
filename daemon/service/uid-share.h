/* uid-share.h: the CPU time each uid takes of a worker lane that several uids share, as a token
 * bucket per uid: whose call goes next, and until when a uid that took its share waits */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/hashmap.h"

/*
 * Each uid has a balance of CPU time: it starts full (burst_usec), every call it makes costs what
 * it took (the worker's thread CPU time, and what the loop spent preparing it), and it refills at
 * percent of one CPU, up to burst_usec again. The lane takes the next call from the uid with the
 * highest balance (the oldest call on ties), and none from a uid whose balance is not positive: a
 * uid that sends many calls, or costly ones, takes at most its share and never makes another uid
 * wait for more than the call that runs. A full balance is forgotten, so the table holds only the
 * uids that used the lane lately. Times are CLOCK_MONOTONIC µs, passed in (no clock read here).
 */
typedef struct UidShare {
        Hashmap buckets; /* uid + 1 -> UidBucket * */
        uint64_t burst_usec;
        unsigned percent; /* of one CPU, 1..100 */
} UidShare;

void uid_share_init(UidShare *s, uint64_t burst_usec, unsigned percent);
void uid_share_deinit(UidShare *s);

/* What uid may still take at now (at most burst_usec; not positive: it waits). */
int64_t uid_share_balance(UidShare *s, uid_t uid, uint64_t now);
/* When uid's balance is positive again: now if it is. */
uint64_t uid_share_ready_at(UidShare *s, uid_t uid, uint64_t now);
/* uid took cpu_usec, as of now. -ENOMEM (the cost is then not counted). */
int uid_share_charge(UidShare *s, uid_t uid, uint64_t cpu_usec, uint64_t now);

/* The CPU time the calling thread has taken so far, µs. */
uint64_t thread_cpu_usec(void);
