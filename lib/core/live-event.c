/* live-event.c: batches of events, and the list of changes with what each replaced */
#include "core/live-event.h"

static const char *const live_change_type_table[_LIVE_CHANGE_TYPE_MAX] = {
        [LIVE_PROCESS_ADDED] = "process-added",   [LIVE_PROCESS_UPDATED] = "process-updated",
        [LIVE_PROCESS_REMOVED] = "process-removed", [LIVE_TASK_ADDED] = "task-added",
        [LIVE_TASK_UPDATED] = "task-updated",     [LIVE_TASK_EXITED] = "task-exited",
        [LIVE_FILTER_ATTACHED] = "filter-attached", [LIVE_FILTER_RETIRED] = "filter-retired",
        [LIVE_REPLACED] = "replaced",     [LIVE_LISTENER_CHANGED] = "listener-changed",
};

const char *live_change_type_to_string(LiveChangeType t) {
        return t >= 0 && t < _LIVE_CHANGE_TYPE_MAX ? live_change_type_table[t] : NULL;
}

/* ---- batches ---- */

static void *batch_own(LiveBatch *b, const void *data, size_t size) {
        if (GROW(b->owned, b->n_owned_allocated, b->n_owned + 1) < 0)
                return NULL;
        void *copy = malloc(size ? size : 1);
        if (!copy)
                return NULL;
        memcpy_safe(copy, data, size);
        b->owned[b->n_owned++] = copy;
        return copy;
}

int live_batch_add(LiveBatch *b, const LiveEvent *e) {
        if (GROW(b->events, b->allocated, b->n + 1) < 0)
                return -ENOMEM;
        LiveEvent copy = *e;
        if (e->task.exe && !(copy.task.exe = batch_own(b, e->task.exe, strlen(e->task.exe) + 1)))
                return -ENOMEM;
        if (e->filter.len > 0 &&
            !(copy.filter.insns = batch_own(b, e->filter.insns, e->filter.len * sizeof(struct sock_filter))))
                return -ENOMEM;
        if (e->filter.n_tsync > 0 &&
            !(copy.filter.tsync = batch_own(b, e->filter.tsync, e->filter.n_tsync * sizeof(LiveThread))))
                return -ENOMEM;
        b->events[b->n++] = copy;
        return 0;
}

void live_batch_clear(LiveBatch *b) {
        for (size_t i = 0; i < b->n_owned; i++)
                free(b->owned[i]);
        b->n_owned = 0;
        b->n = 0;
}

void live_batch_done(LiveBatch *b) {
        live_batch_clear(b);
        free(b->owned);
        free(b->events);
        *b = (LiveBatch) {};
}

/* ---- changes ---- */

void live_listener_dispose(Listener *l) {
        if (!l)
                return;
        free(l->holders);
        free(l);
}

void live_change_release(LiveChange *x) {
        live_listener_dispose(x->old_listener);
        free(x->old.exe);
        process_free(x->process);
        if (x->type == LIVE_FILTER_RETIRED)
                filter_free(x->filter);
        free(x->installer_exe);
        forest_free(x->old_forest);
}

void live_changes_clear(LiveChanges *c) {
        for (size_t i = 0; i < c->n; i++)
                live_change_release(&c->changes[i]);
        c->n = 0;
        c->replaced = false;
}

void live_changes_done(LiveChanges *c) {
        live_changes_clear(c);
        free(c->changes);
        *c = (LiveChanges) {};
}

/* Room for one more change: taken before a primitive changes anything. */
int live_changes_reserve(LiveChanges *c) {
        return GROW(c->changes, c->allocated, c->n + 1);
}

/* Records a change; live_changes_reserve() made room. */
LiveChange *live_change_push(LiveChanges *c, LiveChangeType type) {
        LiveChange *x = &c->changes[c->n++];
        *x = (LiveChange) { .type = type };
        return x;
}
