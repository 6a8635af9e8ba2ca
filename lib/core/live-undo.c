/* live-undo.c: the changes of a batch undone, newest first, each putting back what it replaced */
#include "core/live-undo.h"

#include "core/live-private.h"
#include "core/live-state.h"

/* ---- undoing ---- */

static int undo_one(Live *l, LiveChange *x) {
        Process *p = forest_find_process(l->forest, x->tgid);
        Task *t;
        int r = 0;

        if (x->announce_only)
                return 0;
        /* Undone newest first, every change finds what it left behind. */
        bool needs_process = x->type == LIVE_PROCESS_ADDED || x->type == LIVE_PROCESS_UPDATED ||
                             x->type == LIVE_TASK_ADDED || x->type == LIVE_TASK_UPDATED || x->type == LIVE_TASK_EXITED;
        if (needs_process && !p)
                return -ESTALE;
        switch (x->type) {
        case LIVE_PROCESS_ADDED:
                live_children_remove(l, p->ppid, p->pid);
                process_free(forest_take_process(l->forest, x->tgid));
                break;
        case LIVE_PROCESS_UPDATED: {
                LiveProcessFields back = x->old, now;
                if (!x->exe_changed)
                        back.exe = p->exe;
                r = live_fields_swap(l, p, &back, &now);
                if (r < 0)
                        return r;
                x->old.exe = x->exe_changed ? now.exe : NULL; /* the newer one goes with the change */
                break;
        }
        case LIVE_PROCESS_REMOVED:
                r = forest_put_process(l->forest, x->process);
                if (r < 0)
                        return r;
                p = TAKE_PTR(x->process);
                r = live_children_add(l, p->ppid, p->pid);
                break;
        case LIVE_TASK_ADDED:
                t = process_find_thread(p, x->tid);
                if (!t)
                        return -ESTALE;
                *t = p->threads[--p->n_threads];
                l->n_threads--;
                break;
        case LIVE_TASK_UPDATED:
                t = process_find_thread(p, x->tid);
                if (!t)
                        return -ESTALE;
                *t = x->old_task;
                break;
        case LIVE_TASK_EXITED:
                r = process_append_thread(p, x->tid, &t);
                if (r < 0)
                        return r;
                *t = x->old_task;
                l->n_threads++;
                break;
        case LIVE_FILTER_ATTACHED:
                if (x->new_filter)
                        filter_free(forest_take_filter(l->forest, x->filter_id));
                break;
        case LIVE_FILTER_RETIRED:
                r = forest_put_filter(l->forest, x->filter);
                if (r < 0)
                        return r;
                x->filter = NULL;
                break;
        case LIVE_LISTENER_CHANGED: {
                Filter *flt = forest_find_filter(l->forest, x->filter_id);
                if (!flt)
                        return -ESTALE;
                if (x->old_listener && GROW(l->forest->listeners, l->forest->n_listeners_allocated,
                                            l->forest->n_listeners + 1) < 0)
                        return -ENOMEM;
                live_listener_dispose(live_listener_take(l->forest, x->filter_id));
                if (x->old_listener)
                        (void) live_listener_put(l->forest, TAKE_PTR(x->old_listener));
                flt->has_listener = x->old_has_listener;
                flt->listener_id = forest_find_listener(l->forest, flt->id) ? flt->id : 0;
                break;
        }
        case LIVE_REPLACED: {
                Forest *newer = l->forest;
                r = live_adopt(l, TAKE_PTR(x->old_forest));
                x->old_forest = newer;
                break;
        }
        default:
                break;
        }
        l->forest->linked = false;
        return r;
}

/* Undo the changes above mark, newest first. */
int live_rollback_to(Live *l, LiveChanges *c, size_t mark) {
        int r = 0;
        while (c->n > mark) {
                LiveChange *x = &c->changes[c->n - 1];
                int k = undo_one(l, x);
                if (k < 0 && r == 0)
                        r = k;
                live_change_release(x);
                c->n--;
        }
        l->uses_valid = false; /* counted again at the next retire */
        int k = budget_recount(&l->budget, l->forest);
        return r < 0 ? r : k;
}

int live_rollback(Live *l, LiveChanges *c) {
        int r = live_rollback_to(l, c, 0);
        c->replaced = false;
        return r;
}
