/* forest.c: forests cut down: to a subtree or its members, their unfiltered processes and
 * unreachable filters dropped; and their ids rewritten */
#include "core/forest.h"

static int cmp_process_pid(const void *key, const void *elem) {
        pid_t pid = *(const pid_t *) key, other = (*(Process * const *) elem)->pid;
        return pid < other ? -1 : pid > other;
}

/* Position of a process in the linked (pid-sorted) array. */
static size_t process_index(const Forest *f, pid_t pid, bool *found) {
        Process **p = bsearch_safe(&pid, f->processes, f->n_processes, sizeof(Process *), cmp_process_pid);
        *found = p != NULL;
        return p ? (size_t) (p - f->processes) : 0;
}

/* Subtree membership by walking the ppid chain up to root, memoized (1 in, -1 out, 0 unknown). */
static int8_t subtree_member(const Forest *f, const Process *p, pid_t root, const int8_t *memo) {
        for (size_t steps = 0; p && steps <= f->n_processes; steps++) {
                bool found;
                size_t idx = process_index(f, p->pid, &found);
                if (memo[idx])
                        return memo[idx];
                if (p->pid == root)
                        return 1;
                if (p->ppid <= 0 || p->ppid == p->pid)
                        return -1;
                p = forest_find_process(f, p->ppid);
        }
        return -1;
}

static void mark_chain(const Forest *f, const Filter *head, bool *keep) {
        for (const Filter *x = head; x; x = x->parent) {
                size_t i = x->index;
                if (keep[i])
                        return;
                keep[i] = true;
        }
}

static bool listener_held_by_member(const Forest *f, const Listener *l, const bool *member) {
        for (size_t i = 0; i < l->n_holders; i++) {
                bool found;
                size_t idx = process_index(f, l->holders[i].pid, &found);
                if (found && member[idx])
                        return true;
        }
        return false;
}

static void process_mark_chains(const Forest *f, const Process *p, bool *keep) {
        for (size_t j = 0; j < p->n_threads; j++)
                mark_chain(f, p->threads[j].filter, keep);
}

static void drop_processes(Forest *f, const bool *member) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                if (member[i]) {
                        f->processes[i]->index = n;
                        f->processes[n++] = f->processes[i];
                } else {
                        hashmap_remove(&f->processes_by_pid, (uint64_t) f->processes[i]->pid);
                        process_free(f->processes[i]);
                }
        f->n_processes = n;
}

/* Every holder of a kept listener is a member by now, but for those the forest never had. */
static void drop_absent_holders(const Forest *f, Listener *l, const bool *member) {
        size_t n = 0;
        for (size_t i = 0; i < l->n_holders; i++) {
                bool found;
                size_t idx = process_index(f, l->holders[i].pid, &found);
                if (found && member[idx])
                        l->holders[n++] = l->holders[i];
        }
        l->n_holders = n;
}

static void drop_listeners(Forest *f, const bool *kept, const bool *member) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_listeners; i++) {
                if (kept[i]) {
                        drop_absent_holders(f, f->listeners[i], member);
                        f->listeners[n++] = f->listeners[i];
                } else
                        listener_free(f->listeners[i]);
        }
        f->n_listeners = n;
}

static void drop_filters(Forest *f, const bool *keep) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_filters; i++) {
                if (keep[i]) {
                        f->filters[i]->index = n;
                        f->filters[n++] = f->filters[i];
                } else {
                        hashmap_remove(&f->filters_by_id, f->filters[i]->id);
                        filter_free(f->filters[i]);
                }
        }
        f->n_filters = n;
}

/* Keep listener l: its filter's chain, and its holders with their own chains. */
static void keep_listener(const Forest *f, const Listener *l, bool *member, bool *keep) {
        mark_chain(f, forest_find_filter(f, l->filter_id), keep);
        for (size_t i = 0; i < l->n_holders; i++) {
                bool found;
                size_t idx = process_index(f, l->holders[i].pid, &found);
                if (found && !member[idx]) {
                        member[idx] = true;
                        process_mark_chains(f, f->processes[idx], keep);
                }
        }
}

/* Listeners: those of the kept filters and those held by members, each with all its holders,
 * whose chains may reach the filters of more listeners: until nothing changes. */
static void select_listeners(const Forest *f, bool every, bool *member, bool *keep, bool *kept) {
        for (bool changed = true; changed;) {
                changed = false;
                for (size_t i = 0; i < f->n_listeners; i++) {
                        const Listener *l = f->listeners[i];
                        const Filter *flt = forest_find_filter(f, l->filter_id);
                        if (kept[i] || !(every || (flt && keep[flt->index]) || listener_held_by_member(f, l, member)))
                                continue;
                        kept[i] = changed = true;
                        keep_listener(f, l, member, keep);
                }
        }
}

/* What forest_restrict_to_subtree() and forest_restrict_to_members() share: member (by process
 * index) says which processes are the report's own; the rest follows from them. */
static int restrict_to(Forest *f, pid_t root, bool every_listener, bool *member) {
        _cleanup_free_ bool *keep = calloc(f->n_filters + 1, sizeof(bool));
        _cleanup_free_ bool *kept = calloc(f->n_listeners + 1, sizeof(bool));
        if (!keep || !kept)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_processes; i++)
                if (member[i])
                        process_mark_chains(f, f->processes[i], keep);
        select_listeners(f, every_listener, member, keep, kept);

        /* Listeners first: they look filters up in the index that drop_filters() rewrites. */
        drop_listeners(f, kept, member);
        drop_processes(f, member);
        drop_filters(f, keep);
        f->root = root;
        return forest_link(f, NULL);
}

int forest_restrict_to_subtree(Forest *f, pid_t root) {
        if (!f->linked)
                return -EINVAL;
        _cleanup_free_ int8_t *memo = calloc(f->n_processes + 1, 1);
        _cleanup_free_ bool *member = calloc(f->n_processes + 1, sizeof(bool));
        if (!memo || !member)
                return -ENOMEM;

        for (size_t i = 0; i < f->n_processes; i++) {
                if (root > 0) {
                        memo[i] = subtree_member(f, f->processes[i], root, memo);
                        member[i] = memo[i] > 0;
                } else
                        member[i] = process_has_seccomp(f->processes[i]);
        }
        return restrict_to(f, root, root == 0, member);
}

/* is_member() of each process, by index; or NULL (-ENOMEM). */
static bool *members_of(const Forest *f, bool (*is_member)(const Process *p, void *userdata), void *userdata) {
        bool *member = calloc(f->n_processes + 1, sizeof(bool));
        for (size_t i = 0; member && i < f->n_processes; i++)
                member[i] = is_member(f->processes[i], userdata);
        return member;
}

int forest_restrict_to_processes(Forest *f, bool (*is_member)(const Process *p, void *userdata), void *userdata) {
        if (!f->linked)
                return -EINVAL;
        _cleanup_free_ bool *member = members_of(f, is_member, userdata);
        return member ? restrict_to(f, f->root, false, member) : -ENOMEM;
}

int forest_restrict_to_members(Forest *f, pid_t root, bool (*is_member)(const Process *p, void *userdata),
                               void *userdata) {
        if (!f->linked)
                return -EINVAL;
        _cleanup_free_ bool *member = members_of(f, is_member, userdata);
        return member ? restrict_to(f, root, root == 0, member) : -ENOMEM;
}

int forest_set_ids(Forest *f, const uint64_t *new_ids) {
        if (!f->linked)
                return -EINVAL;
        /* Resolve listener links while the id index still matches the ids. */
        _cleanup_free_ Filter **listener_filter = calloc(f->n_listeners + 1, sizeof(Filter *));
        if (!listener_filter)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_listeners; i++)
                listener_filter[i] = forest_find_filter(f, f->listeners[i]->filter_id);

        Hashmap by_id = {};
        for (size_t i = 0; i < f->n_filters; i++) {
                int r = new_ids[i] == 0 ? -EINVAL : hashmap_put(&by_id, new_ids[i], f->filters[i]);
                if (r < 0) {
                        hashmap_deinit(&by_id);
                        return r == -EEXIST ? -EINVAL : r;
                }
        }
        hashmap_deinit(&f->filters_by_id);
        f->filters_by_id = by_id;
        for (size_t i = 0; i < f->n_filters; i++)
                f->filters[i]->id = new_ids[i];
        for (size_t i = 0; i < f->n_filters; i++)
                f->filters[i]->parent_id = f->filters[i]->parent ? f->filters[i]->parent->id : 0;
        for (size_t i = 0; i < f->n_listeners; i++)
                f->listeners[i]->filter_id = listener_filter[i]->id;
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        Task *t = &f->processes[i]->threads[j];
                        t->filter_id = t->filter ? t->filter->id : 0;
                }
        return forest_link(f, NULL);
}

/* Ids in the linked order keep that order (parents first, then by id; listeners by id), so every
 * reference is followed through the links forest_link() resolved, and nothing is sorted again. */
int forest_renumber(Forest *f) {
        if (!f->linked)
                return -EINVAL;
        _cleanup_free_ Filter **listener_filter = calloc(f->n_listeners + 1, sizeof(Filter *));
        _cleanup_(hashmap_deinit) Hashmap by_id = {};
        int r = listener_filter ? hashmap_reserve(&by_id, f->n_filters) : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < f->n_filters; i++)
                r = hashmap_put(&by_id, i + 1, f->filters[i]);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_listeners; i++)
                listener_filter[i] = forest_find_filter(f, f->listeners[i]->filter_id);

        hashmap_deinit(&f->filters_by_id);
        f->filters_by_id = by_id;
        by_id = (Hashmap) {};
        for (size_t i = 0; i < f->n_filters; i++)
                f->filters[i]->id = i + 1;
        for (size_t i = 0; i < f->n_filters; i++)
                f->filters[i]->parent_id = f->filters[i]->parent ? f->filters[i]->parent->id : 0;
        for (size_t i = 0; i < f->n_listeners; i++) {
                f->listeners[i]->id = i + 1;
                f->listeners[i]->filter_id = listener_filter[i]->id;
                listener_filter[i]->listener_id = i + 1;
        }
        for (size_t i = 0; i < f->n_tasks; i++) {
                Task *t = f->tasks_by_tid[i];
                t->filter_id = t->filter ? t->filter->id : 0;
        }
        return 0;
}

void forest_drop_unfiltered_processes(Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++) {
                Process *p = f->processes[i];
                if (process_has_seccomp(p)) {
                        p->index = n;
                        f->processes[n++] = p;
                } else {
                        hashmap_remove(&f->processes_by_pid, (uint64_t) p->pid);
                        process_free(p);
                }
        }
        f->n_processes = n;
        f->linked = false;
}

int forest_drop_unreachable_filters(Forest *f, uint64_t **ret_ids, size_t *ret_n) {
        if (!f->linked)
                return -EINVAL;
        _cleanup_free_ bool *keep = calloc(f->n_filters + 1, sizeof(bool));
        if (!keep)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++)
                        mark_chain(f, f->processes[i]->threads[j].filter, keep);
        for (size_t i = 0; i < f->n_listeners; i++)
                mark_chain(f, forest_find_filter(f, f->listeners[i]->filter_id), keep);

        size_t n_drop = 0;
        for (size_t i = 0; i < f->n_filters; i++)
                n_drop += !keep[i];
        if (ret_ids) {
                *ret_ids = NULL;
                *ret_n = 0;
        }
        if (n_drop == 0)
                return 0;
        if (ret_ids) {
                *ret_ids = malloc(n_drop * sizeof(uint64_t));
                if (!*ret_ids)
                        return -ENOMEM;
                for (size_t i = 0; i < f->n_filters; i++)
                        if (!keep[i])
                                (*ret_ids)[(*ret_n)++] = f->filters[i]->id;
        }
        drop_filters(f, keep);
        return forest_link(f, NULL);
}
