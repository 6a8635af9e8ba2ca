/* live-state.c: what is kept beside the live forest's processes and filters: the index of
 * children by parent, what keeps each filter alive (counted as it changes), a forest adopted
 * whole; and the edits of processes and listeners that applying and undoing share */
#include "core/live-state.h"

#include "core/live-private.h"

/* ---- the children index ---- */

int live_children_add(Live *l, pid_t ppid, pid_t pid) {
        if (ppid <= 0)
                return 0;
        ChildList *cl = hashmap_get(&l->children, (uint64_t) ppid);
        if (!cl) {
                cl = calloc(1, sizeof(ChildList));
                if (!cl)
                        return -ENOMEM;
                int r = hashmap_put(&l->children, (uint64_t) ppid, cl);
                if (r < 0) {
                        free(cl);
                        return r;
                }
        }
        if (GROW(cl->pids, cl->allocated, cl->n + 1) < 0)
                return -ENOMEM;
        cl->pids[cl->n++] = pid;
        return 0;
}

void live_children_remove(Live *l, pid_t ppid, pid_t pid) {
        ChildList *cl = ppid > 0 ? hashmap_get(&l->children, (uint64_t) ppid) : NULL;
        for (size_t i = 0; cl && i < cl->n; i++)
                if (cl->pids[i] == pid) {
                        cl->pids[i] = cl->pids[--cl->n];
                        break;
                }
        if (cl && cl->n == 0) {
                hashmap_remove(&l->children, (uint64_t) ppid);
                free(cl->pids);
                free(cl);
        }
}

void live_children_reset(Live *l) {
        size_t i = 0;
        void *v;
        while (hashmap_next(&l->children, &i, NULL, &v)) {
                ChildList *cl = v;
                free(cl->pids);
                free(cl);
        }
        hashmap_clear(&l->children);
}

static int children_rebuild(Live *l) {
        live_children_reset(l);
        for (size_t i = 0; i < l->forest->n_processes; i++) {
                const Process *p = l->forest->processes[i];
                int r = live_children_add(l, p->ppid, p->pid);
                if (r < 0)
                        return r;
        }
        return 0;
}

const pid_t *live_children(const Live *l, pid_t ppid, size_t *ret_n) {
        const ChildList *cl = ppid > 0 ? hashmap_get(&l->children, (uint64_t) ppid) : NULL;
        *ret_n = cl ? cl->n : 0;
        return cl ? cl->pids : NULL;
}

bool live_next_parent(const Live *l, size_t *i, pid_t *ret_ppid) {
        uint64_t key;
        if (!hashmap_next(&l->children, i, &key, NULL))
                return false;
        *ret_ppid = (pid_t) key;
        return true;
}

/* ---- what keeps a filter alive ---- */

size_t live_uses_get(const Live *l, uint64_t id) {
        return (size_t) (uintptr_t) hashmap_get(&l->uses, id);
}

void live_push_candidate(Live *l, uint64_t id) {
        if (GROW(l->candidates, l->n_candidates_allocated, l->n_candidates + 1) < 0) {
                l->uses_valid = false;
                return;
        }
        l->candidates[l->n_candidates++] = id;
}

void live_uses_add(Live *l, uint64_t id) {
        if (!l->uses_valid || id == 0)
                return;
        if (!forest_find_filter(l->forest, id))
                l->uses_broken = true; /* retiring asks for the truth: a full pass */
        if (hashmap_replace(&l->uses, id, (void *) (uintptr_t) (live_uses_get(l, id) + 1)) < 0)
                l->uses_valid = false;
}

void live_uses_drop(Live *l, uint64_t id) {
        if (!l->uses_valid || id == 0)
                return;
        size_t n = live_uses_get(l, id);
        if (n == 0)
                l->uses_valid = false; /* cannot happen: count again rather than trust it */
        else if (n == 1) {
                (void) hashmap_remove(&l->uses, id);
                live_push_candidate(l, id);
        } else if (hashmap_replace(&l->uses, id, (void *) (uintptr_t) (n - 1)) < 0)
                l->uses_valid = false;
}

int live_uses_rebuild(Live *l) {
        const Forest *f = l->forest;

        l->n_uses_rebuilds++;
        hashmap_clear(&l->uses);
        l->n_candidates = 0;
        l->uses_broken = false;
        l->uses_valid = true;
        for (size_t i = 0; i < f->n_filters; i++)
                live_uses_add(l, f->filters[i]->parent_id);
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++)
                        live_uses_add(l, f->processes[i]->threads[j].filter_id);
        for (size_t i = 0; i < f->n_listeners; i++)
                live_uses_add(l, f->listeners[i]->filter_id);
        for (size_t i = 0; l->uses_valid && i < f->n_filters; i++)
                if (live_uses_get(l, f->filters[i]->id) == 0)
                        live_push_candidate(l, f->filters[i]->id);
        return l->uses_valid ? 0 : -ENOMEM;
}

unsigned live_uses_rebuilds(const Live *l) {
        return l->n_uses_rebuilds;
}

/* ---- the object ---- */

static size_t count_threads(const Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                n += f->processes[i]->n_threads;
        return n;
}

/* A forest came in whole (new, replaced, put back): derive what is kept beside it. */
int live_adopt(Live *l, Forest *f) {
        l->forest = f;
        l->n_threads = count_threads(f);
        l->uses_valid = false;
        return children_rebuild(l);
}

/* ---- primitives: each changes one thing and records it ---- */

void live_fields_of(const Process *p, LiveProcessFields *ret) {
        *ret = (LiveProcessFields) {
                .ppid = p->ppid, .start_time = p->start_time, .uid = p->uid, .gid = p->gid,
                .no_new_privs = p->no_new_privs, .exe = p->exe,
        };
        memcpy(ret->comm, p->comm, sizeof(ret->comm));
}

/* Set p's fields to f (exe is the caller's: p takes it); the old ones go to *old (old->exe is then
 * the caller's). Keeps the children index. */
int live_fields_swap(Live *l, Process *p, const LiveProcessFields *f, LiveProcessFields *old) {
        if (f->ppid != p->ppid) {
                int r = live_children_add(l, f->ppid, p->pid);
                if (r < 0)
                        return r;
                live_children_remove(l, p->ppid, p->pid);
        }
        live_fields_of(p, old);
        p->ppid = f->ppid;
        p->start_time = f->start_time;
        memcpy(p->comm, f->comm, sizeof(p->comm));
        p->uid = f->uid;
        p->gid = f->gid;
        p->no_new_privs = f->no_new_privs;
        p->exe = f->exe;
        l->forest->linked = false;
        return 0;
}

/* Take the listener with that id out of f (NULL if none). */
Listener *live_listener_take(Forest *f, uint64_t id) {
        for (size_t i = 0; i < f->n_listeners; i++)
                if (f->listeners[i]->id == id) {
                        Listener *l = f->listeners[i];
                        memmove(f->listeners + i, f->listeners + i + 1, (f->n_listeners - i - 1) * sizeof(Listener *));
                        f->n_listeners--;
                        f->linked = false;
                        return l;
                }
        return NULL;
}

int live_listener_put(Forest *f, Listener *l) {
        if (GROW(f->listeners, f->n_listeners_allocated, f->n_listeners + 1) < 0)
                return -ENOMEM;
        l->forest = f;
        f->listeners[f->n_listeners++] = l;
        f->linked = false;
        return 0;
}
