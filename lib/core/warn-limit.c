/* warn-limit.c: see warn-limit.h */
#include "core/warn-limit.h"

bool warn_limit_pass(WarnLimit *w, uint64_t now_usec, unsigned *ret_suppressed) {
        if (w->last_usec != 0 && now_usec < w->last_usec + WARN_LIMIT_INTERVAL_USEC) {
                w->suppressed++;
                return false;
        }
        *ret_suppressed = w->suppressed;
        w->suppressed = 0;
        w->last_usec = now_usec ?: 1;
        return true;
}
