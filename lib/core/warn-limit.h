/* warn-limit.h: a kind of warning logged at most once per interval, saying how many were left out */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* One kind of warning: the first is logged, then at most one per interval, which says how many
 * were left out since the last one logged. */
#define WARN_LIMIT_INTERVAL_USEC (10 * 1000 * 1000ULL)

typedef struct WarnLimit {
        uint64_t last_usec; /* CLOCK_MONOTONIC of the last one logged (0: none yet) */
        unsigned suppressed; /* left out since */
} WarnLimit;

/* Whether to log this one now; when so, *ret_suppressed is how many were left out before it. */
bool warn_limit_pass(WarnLimit *w, uint64_t now_usec, unsigned *ret_suppressed);
