/* chain.c: one task's filter chain fetched in full (GetTaskChain, then GetFilter for each) */
#include "chain.h"

#include "util.h"

void chain_done(Chain *ch) {
        for (size_t i = 0; i < ch->n; i++)
                filter_detail_done(&ch->filters[i]);
        free(ch->filters);
        *ch = (Chain) {};
}

int chain_fetch(sd_bus *bus, uint32_t tid, Chain *ret) {
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n;
        int r = manager_get_task_chain(bus, tid, &ids, &n);
        if (r < 0)
                return r;
        ret->tid = tid;
        ret->filters = calloc(n + 1, sizeof(FilterDetail));
        if (!ret->filters)
                return log_oom();
        for (; ret->n < n; ret->n++) {
                r = manager_get_filter(bus, ids[ret->n], &ret->filters[ret->n]);
                if (r < 0)
                        return r;
        }
        return 0;
}
