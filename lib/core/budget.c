/* budget.c: the per-uid budget of the live forest */
#include "core/budget.h"

#define UID_NONE ((uid_t) -1) /* a filter no task's chain reaches (held by a listener): its own bucket */

void budget_init(Budget *b, uint64_t insns_per_uid) {
        *b = (Budget) { .insns_per_uid = insns_per_uid };
}

void budget_deinit(Budget *b) {
        hashmap_deinit(&b->kept);
        b->n_over = 0;
}

uint64_t budget_kept(const Budget *b, uid_t uid) {
        return (uint64_t) (uintptr_t) hashmap_get(&b->kept, (uint64_t) uid + 1);
}

static int kept_set(Budget *b, uid_t uid, uint64_t n) {
        if (n == 0) {
                (void) hashmap_remove(&b->kept, (uint64_t) uid + 1);
                return 0;
        }
        return hashmap_replace(&b->kept, (uint64_t) uid + 1, (void *) (uintptr_t) n);
}

static bool counted(const Budget *b, uid_t uid) {
        return b->insns_per_uid > 0 && uid != 0;
}

bool budget_take(Budget *b, uid_t uid, size_t len) {
        if (!counted(b, uid))
                return true;
        uint64_t kept = budget_kept(b, uid);
        /* Within budget, and room to count it: else it is dropped, never kept uncounted. */
        if (kept + len <= b->insns_per_uid && kept_set(b, uid, kept + len) >= 0)
                return true;
        b->n_over++;
        return false;
}

void budget_release(Budget *b, const Filter *flt) {
        if (flt->over_budget) {
                if (b->n_over > 0)
                        b->n_over--;
                return;
        }
        if (!counted(b, flt->budget_uid))
                return;
        uint64_t kept = budget_kept(b, flt->budget_uid);
        (void) kept_set(b, flt->budget_uid, kept > flt->len ? kept - flt->len : 0); /* only shrinks */
}

int budget_recount(Budget *b, const Forest *f) {
        hashmap_clear(&b->kept);
        b->n_over = 0;
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = f->filters[i];
                if (x->over_budget)
                        b->n_over++;
                else if (counted(b, x->budget_uid) &&
                         kept_set(b, x->budget_uid, budget_kept(b, x->budget_uid) + x->len) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Roots first, then their children, ...: a filter is always older than the filters stacked on it,
 * which ids do not say of filters a first pass numbered (it meets a chain from its head). */
static int by_depth_then_id(const void *a, const void *b) {
        const Filter *x = *(Filter *const *) a, *y = *(Filter *const *) b;
        if (x->depth != y->depth)
                return x->depth < y->depth ? -1 : 1;
        return x->id < y->id ? -1 : x->id > y->id;
}

int budget_apply(Budget *b, Forest *f) {
        _cleanup_free_ uid_t *owner = calloc(f->n_filters + 1, sizeof(uid_t));
        _cleanup_free_ Filter **order = calloc(f->n_filters + 1, sizeof(Filter *));
        if (!owner || !order)
                return -ENOMEM;
        /* The lowest uid whose chains reach each filter. A walk stops at a filter that has one as
         * low already: every walk that reached it went on to its root. */
        for (size_t i = 0; i < f->n_filters; i++)
                owner[i] = UID_NONE;
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                for (size_t j = 0; j < p->n_threads; j++)
                        for (const Filter *x = p->threads[j].filter; x && owner[x->index] > p->uid; x = x->parent)
                                owner[x->index] = p->uid;
        }
        memcpy(order, f->filters, f->n_filters * sizeof(Filter *));
        qsort(order, f->n_filters, sizeof(Filter *), by_depth_then_id);

        Budget fresh = { .insns_per_uid = b->insns_per_uid };
        for (size_t i = 0; i < f->n_filters; i++) {
                Filter *x = order[i];
                x->budget_uid = owner[x->index];
                if (x->over_budget) {
                        fresh.n_over++;
                        continue;
                }
                if (budget_take(&fresh, x->budget_uid, x->len))
                        continue;
                free(x->insns);
                x->insns = NULL;
                x->over_budget = true;
        }
        budget_deinit(b);
        *b = fresh;
        return 0;
}
