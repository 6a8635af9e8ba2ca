/* forest-model.c: the seccomp filter forest model: building, linking, lookups, chains */
#include "core/forest-model.h"

#include <stdarg.h>
#include <sys/utsname.h>
#include <time.h>

static const char *const identity_kind_table[_IDENTITY_MAX] = {
        [IDENTITY_EXACT] = "exact",
        [IDENTITY_INFERRED] = "inferred",
};
DEFINE_STRING_TABLE_LOOKUP(identity_kind, IdentityKind, _IDENTITY_MAX);

static const char *const task_mode_table[_TASK_MODE_MAX] = {
        [TASK_MODE_DISABLED] = "disabled",
        [TASK_MODE_STRICT] = "strict",
        [TASK_MODE_FILTER] = "filter",
};
DEFINE_STRING_TABLE_LOOKUP(task_mode, TaskMode, _TASK_MODE_MAX);

static const char *const snapshot_consistency_table[_SNAPSHOT_CONSISTENCY_MAX] = {
        [SNAPSHOT_CONSISTENCY_NONE] = "none",
        [SNAPSHOT_CONSISTENCY_ITERATOR] = "iterator",
        [SNAPSHOT_CONSISTENCY_FROZEN] = "frozen",
};
DEFINE_STRING_TABLE_LOOKUP(snapshot_consistency, SnapshotConsistency, _SNAPSHOT_CONSISTENCY_MAX);

static const char *const backend_table[_BACKEND_MAX] = {
        [BACKEND_BPF] = "bpf",
        [BACKEND_PTRACE] = "ptrace",
};
DEFINE_STRING_TABLE_LOOKUP(backend, Backend, _BACKEND_MAX);

Forest *forest_new(void) {
        Forest *f = calloc(1, sizeof(Forest));
        if (!f)
                return NULL;
        f->created_at_usec = now_usec(CLOCK_REALTIME);
        f->identity = IDENTITY_EXACT;
        return f;
}

Filter *filter_free(Filter *flt) {
        if (!flt)
                return NULL;
        free(flt->insns);
        free(flt);
        return NULL;
}

Process *process_free(Process *p) {
        if (!p)
                return NULL;
        free(p->exe);
        strv_free(p->argv);
        free(p->unit);
        free(p->user_unit);
        free(p->machine);
        free(p->threads);
        free(p);
        return NULL;
}

void listener_free(Listener *l) {
        if (!l)
                return;
        free(l->holders);
        free(l);
}

static void host_info_deinit(HostInfo *h) {
        free(h->kernel);
        free(h->arch);
        free(h->hostname);
        *h = (HostInfo) {};
}

Forest *forest_free(Forest *f) {
        if (!f)
                return NULL;
        for (size_t i = 0; i < f->n_filters; i++)
                filter_free(f->filters[i]);
        for (size_t i = 0; i < f->n_processes; i++)
                process_free(f->processes[i]);
        for (size_t i = 0; i < f->n_listeners; i++)
                listener_free(f->listeners[i]);
        free(f->filters);
        free(f->processes);
        free(f->listeners);
        hashmap_deinit(&f->filters_by_id);
        hashmap_deinit(&f->processes_by_pid);
        free(f->tasks_by_tid);
        free(f->backend);
        host_info_deinit(&f->host);
        free(f->snapshot.name);
        free(f);
        return NULL;
}

Filter *forest_find_filter(const Forest *f, uint64_t id) {
        return hashmap_get(&f->filters_by_id, id);
}

Process *forest_find_process(const Forest *f, pid_t pid) {
        return pid > 0 ? hashmap_get(&f->processes_by_pid, (uint64_t) pid) : NULL;
}

Task *process_find_thread(const Process *p, pid_t tid) {
        for (size_t i = 0; p && i < p->n_threads; i++)
                if (p->threads[i].tid == tid)
                        return &p->threads[i];
        return NULL;
}

static int cmp_task_ptr_tid(const void *key, const void *elem) {
        pid_t tid = *(const pid_t *) key, other = (*(Task * const *) elem)->tid;
        return tid < other ? -1 : tid > other;
}

Task *forest_find_task(const Forest *f, pid_t tid, Process **ret_process) {
        if (f->linked) {
                Task **t = bsearch_safe(&tid, f->tasks_by_tid, f->n_tasks, sizeof(Task *), cmp_task_ptr_tid);
                if (t && ret_process)
                        *ret_process = forest_find_process(f, (*t)->tgid);
                return t ? *t : NULL;
        }
        for (size_t i = 0; i < f->n_processes; i++) {
                Process *p = f->processes[i];
                for (size_t j = 0; j < p->n_threads; j++)
                        if (p->threads[j].tid == tid) {
                                if (ret_process)
                                        *ret_process = p;
                                return &p->threads[j];
                        }
        }
        return NULL;
}

Listener *forest_find_listener(const Forest *f, uint64_t id) {
        for (size_t i = 0; i < f->n_listeners; i++)
                if (f->listeners[i]->id == id)
                        return f->listeners[i];
        return NULL;
}

int forest_add_filter(Forest *f, uint64_t id, uint64_t parent_id, const struct sock_filter *insns, size_t len,
                      Filter **ret) {
        uint8_t digest[PROG_DIGEST_SIZE];

        prog_digest(insns, len, digest);
        return forest_add_filter_with_digest(f, id, parent_id, insns, len, digest, ret);
}

int forest_add_filter_with_digest(Forest *f, uint64_t id, uint64_t parent_id, const struct sock_filter *insns,
                                  size_t len, const uint8_t digest[PROG_DIGEST_SIZE], Filter **ret) {
        _cleanup_free_ struct sock_filter *copy = NULL;

        if (len > 0 && insns) { /* NULL: its instructions are not kept (over budget) */
                copy = malloc(len * sizeof(struct sock_filter));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, insns, len * sizeof(struct sock_filter));
        }
        return forest_add_filter_taking(f, id, parent_id, &copy, len, digest, ret);
}

int forest_add_filter_taking(Forest *f, uint64_t id, uint64_t parent_id, struct sock_filter **insns, size_t len,
                             const uint8_t digest[PROG_DIGEST_SIZE], Filter **ret) {
        if (id == 0 || id == parent_id)
                return -EINVAL;
        if (forest_find_filter(f, id))
                return -EEXIST;

        _cleanup_(filter_freep) Filter *flt = calloc(1, sizeof(Filter));
        if (!flt)
                return -ENOMEM;
        flt->insns = len > 0 ? TAKE_PTR(*insns) : NULL;
        flt->id = id;
        flt->parent_id = parent_id;
        flt->len = len;
        flt->identity = f->identity;
        memcpy(flt->digest, digest, PROG_DIGEST_SIZE);
        int r = forest_put_filter(f, flt);
        if (r < 0)
                return r;
        if (ret)
                *ret = flt;
        TAKE_PTR(flt);
        return 0;
}

int forest_add_filter_copy(Forest *f, const Filter *x, Filter **ret) {
        Filter *copy;
        int r = forest_add_filter_with_digest(f, x->id, x->parent_id, x->insns, x->len, x->digest, &copy);
        if (r < 0)
                return r;
        copy->log = x->log;
        copy->wait_killable_recv = x->wait_killable_recv;
        copy->has_listener = x->has_listener;
        copy->identity = x->identity;
        copy->refs = x->refs;
        copy->users = x->users;
        copy->budget_uid = x->budget_uid;
        copy->over_budget = x->over_budget;
        if (ret)
                *ret = copy;
        return 0;
}

int forest_put_filter(Forest *f, Filter *flt) {
        if (flt->id == 0)
                return -EINVAL;
        if (GROW(f->filters, f->n_filters_allocated, f->n_filters + 1) < 0)
                return -ENOMEM;
        int r = hashmap_put(&f->filters_by_id, flt->id, flt);
        if (r < 0)
                return r;
        flt->index = f->n_filters;
        f->filters[f->n_filters++] = flt;
        f->linked = false;
        return 0;
}

Filter *forest_take_filter(Forest *f, uint64_t id) {
        Filter *x = forest_find_filter(f, id);
        if (!x)
                return NULL;
        Filter *last = f->filters[--f->n_filters];
        f->filters[x->index] = last;
        last->index = x->index;
        hashmap_remove(&f->filters_by_id, id);
        f->linked = false;
        return x;
}

int forest_add_process(Forest *f, pid_t pid, Process **ret) {
        if (pid <= 0)
                return -EINVAL;
        /* no lookup first: forest_put_process() refuses a pid it has (one probe of the map, not two) */
        Process *p = calloc(1, sizeof(Process));
        if (!p)
                return -ENOMEM;
        p->pid = pid;
        int r = forest_put_process(f, p);
        if (r < 0) {
                free(p);
                return r;
        }
        if (ret)
                *ret = p;
        return 0;
}

int forest_put_process(Forest *f, Process *p) {
        if (p->pid <= 0)
                return -EINVAL;
        if (GROW(f->processes, f->n_processes_allocated, f->n_processes + 1) < 0)
                return -ENOMEM;
        int r = hashmap_put(&f->processes_by_pid, (uint64_t) p->pid, p);
        if (r < 0)
                return r;
        p->forest = f;
        p->index = f->n_processes;
        f->processes[f->n_processes++] = p;
        f->linked = false;
        return 0;
}

Process *forest_take_process(Forest *f, pid_t pid) {
        Process *p = forest_find_process(f, pid);
        if (!p)
                return NULL;
        Process *last = f->processes[--f->n_processes];
        f->processes[p->index] = last;
        last->index = p->index;
        hashmap_remove(&f->processes_by_pid, (uint64_t) pid);
        p->forest = NULL;
        f->linked = false;
        return p;
}

int forest_reserve(Forest *f, size_t n_filters, size_t n_processes) {
        if (GROW(f->filters, f->n_filters_allocated, f->n_filters + n_filters) < 0 ||
            GROW(f->processes, f->n_processes_allocated, f->n_processes + n_processes) < 0)
                return -ENOMEM;
        int r = hashmap_reserve(&f->filters_by_id, n_filters);
        return r < 0 ? r : hashmap_reserve(&f->processes_by_pid, n_processes);
}

void forest_set_dense_keys(Forest *f) {
        hashmap_set_dense_keys(&f->filters_by_id);
        hashmap_set_dense_keys(&f->processes_by_pid);
}

int process_reserve_threads(Process *p, size_t n) {
        if (n <= p->n_threads_allocated)
                return 0;
        if (p->n_threads_allocated > 0) {
                if (p->forest) /* the array may move, as in process_append_thread() */
                        p->forest->linked = false;
                return GROW(p->threads, p->n_threads_allocated, n);
        }
        p->threads = calloc(n, sizeof(Task));
        if (!p->threads)
                return -ENOMEM;
        p->n_threads_allocated = n;
        return 0;
}

int process_add_thread(Process *p, pid_t tid, Task **ret) {
        if (tid <= 0)
                return -EINVAL;
        for (size_t i = 0; i < p->n_threads; i++)
                if (p->threads[i].tid == tid)
                        return -EEXIST;
        return process_append_thread(p, tid, ret);
}

int process_append_thread(Process *p, pid_t tid, Task **ret) {
        if (tid <= 0)
                return -EINVAL;
        if (GROW(p->threads, p->n_threads_allocated, p->n_threads + 1) < 0)
                return -ENOMEM;
        Task *t = &p->threads[p->n_threads++];
        *t = (Task) { .tid = tid, .tgid = p->pid, .mode = TASK_MODE_DISABLED };
        /* The array may have moved: the forest's index of tasks points into it. */
        if (p->forest)
                p->forest->linked = false;
        if (ret)
                *ret = t;
        return 0;
}

int forest_add_listener(Forest *f, uint64_t id, uint64_t filter_id, Listener **ret) {
        if (id == 0)
                return -EINVAL;
        if (forest_find_listener(f, id))
                return -EEXIST;
        return forest_append_listener(f, id, filter_id, ret);
}

int forest_append_listener(Forest *f, uint64_t id, uint64_t filter_id, Listener **ret) {
        if (id == 0)
                return -EINVAL;
        if (GROW(f->listeners, f->n_listeners_allocated, f->n_listeners + 1) < 0)
                return -ENOMEM;
        Listener *l = calloc(1, sizeof(Listener));
        if (!l)
                return -ENOMEM;
        l->forest = f;
        l->id = id;
        l->filter_id = filter_id;
        l->identity = f->identity;
        f->listeners[f->n_listeners++] = l;
        f->linked = false;
        if (ret)
                *ret = l;
        return 0;
}

int listener_add_holder(Listener *l, pid_t pid, int fd) {
        if (pid <= 0 || fd < 0)
                return -EINVAL;
        for (size_t i = 0; i < l->n_holders; i++)
                if (l->holders[i].pid == pid && l->holders[i].fd == fd)
                        return -EEXIST;
        return listener_append_holder(l, pid, fd);
}

int listener_append_holder(Listener *l, pid_t pid, int fd) {
        if (pid <= 0 || fd < 0)
                return -EINVAL;
        if (GROW(l->holders, l->n_holders_allocated, l->n_holders + 1) < 0)
                return -ENOMEM;
        l->holders[l->n_holders++] = (ListenerHolder) { .pid = pid, .fd = fd };
        if (l->forest)
                l->forest->linked = false;
        return 0;
}

int process_set_argv(Process *p, char * const *argv) {
        char **c = NULL;
        if (argv) {
                c = strv_copy(argv);
                if (!c)
                        return -ENOMEM;
        }
        strv_free(p->argv);
        p->argv = c;
        return 0;
}

static int free_and_strdup(char **p, const char *s) {
        char *c = NULL;
        if (s) {
                c = strdup(s);
                if (!c)
                        return -ENOMEM;
        }
        free(*p);
        *p = c;
        return 0;
}

int process_set_exe(Process *p, const char *exe) {
        return free_and_strdup(&p->exe, exe);
}

int host_info_set(HostInfo *h, const char *kernel, const char *arch, const char *hostname) {
        if (free_and_strdup(&h->kernel, kernel) < 0 || free_and_strdup(&h->arch, arch) < 0 ||
            free_and_strdup(&h->hostname, hostname) < 0)
                return -ENOMEM;
        return 0;
}

int snapshot_info_set_name(SnapshotInfo *i, const char *name) {
        return free_and_strdup(&i->name, name);
}

int host_info_fill_local(HostInfo *h) {
        struct utsname u;
        if (uname(&u) < 0)
                return -errno;
        return host_info_set(h, u.release, u.machine, u.nodename);
}

static int set_error(char **error, const char *fmt, ...) _printf_(2, 3);
static int set_error(char **error, const char *fmt, ...) {
        if (error) {
                va_list ap;
                va_start(ap, fmt);
                if (vasprintf(error, fmt, ap) < 0)
                        *error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

static int cmp_filter_depth_id(const void *a, const void *b) {
        const Filter *x = *(Filter * const *) a, *y = *(Filter * const *) b;
        if (x->depth != y->depth)
                return x->depth < y->depth ? -1 : 1;
        return x->id < y->id ? -1 : x->id > y->id;
}

static int link_parents(Forest *f, char **error) {
        for (size_t i = 0; i < f->n_filters; i++) {
                Filter *flt = f->filters[i];
                flt->parent = NULL;
                flt->depth = 0;
                flt->n_tasks = flt->n_children = 0;
                if (flt->parent_id == 0)
                        continue;
                flt->parent = forest_find_filter(f, flt->parent_id);
                if (!flt->parent)
                        return set_error(error, "filter %" PRIu64 ": parent %" PRIu64 " does not exist", flt->id,
                                         flt->parent_id);
        }
        return 0;
}

/* Depth of every filter, walking up to the nearest filter whose depth is known. A walk longer than
 * the number of filters can only be a cycle. */
static int compute_depths(Forest *f, char **error) {
        for (size_t i = 0; i < f->n_filters; i++) {
                size_t steps = 0;
                Filter *top = f->filters[i];
                while (top->depth == 0 && top->parent) {
                        top = top->parent;
                        if (++steps > f->n_filters)
                                return set_error(error, "filter %" PRIu64 ": parent links form a cycle",
                                                 f->filters[i]->id);
                }
                unsigned d = top->depth ? top->depth : 1;
                /* Second walk: assign depths top-down by counting from the bottom. */
                unsigned bottom = d + (unsigned) steps;
                for (Filter *x = f->filters[i]; x != top; x = x->parent)
                        x->depth = bottom--;
                top->depth = d;
        }
        for (size_t i = 0; i < f->n_filters; i++)
                if (f->filters[i]->parent)
                        f->filters[i]->parent->n_children++;
        return 0;
}

static int cmp_process(const void *a, const void *b) {
        pid_t x = (*(Process * const *) a)->pid, y = (*(Process * const *) b)->pid;
        return x < y ? -1 : x > y;
}

static int cmp_task(const void *a, const void *b) {
        pid_t x = ((const Task *) a)->tid, y = ((const Task *) b)->tid;
        return x < y ? -1 : x > y;
}

static int link_thread(Forest *f, Process *p, Task *t, char **error) {
        t->tgid = p->pid;
        t->filter = NULL;
        if (t->mode < 0 || t->mode >= _TASK_MODE_MAX)
                return set_error(error, "process %d thread %d: invalid mode", p->pid, t->tid);
        if ((t->mode == TASK_MODE_FILTER) != (t->filter_id != 0))
                return set_error(error, "process %d thread %d: mode %s %s a filter", p->pid, t->tid,
                                 task_mode_to_string(t->mode), t->filter_id ? "with" : "without");
        if (t->filter_id == 0)
                return 0;
        t->filter = forest_find_filter(f, t->filter_id);
        if (!t->filter)
                return set_error(error, "process %d thread %d: filter %" PRIu64 " does not exist", p->pid, t->tid,
                                 t->filter_id);
        t->filter->n_tasks++;
        return 0;
}

static int link_processes(Forest *f, char **error) {
        qsort_safe(f->processes, f->n_processes, sizeof(Process *), cmp_process);
        for (size_t i = 0; i < f->n_processes; i++) {
                Process *p = f->processes[i];
                p->index = i;
                if (i > 0 && f->processes[i - 1]->pid == p->pid)
                        return set_error(error, "process %d: duplicate pid", p->pid);
                qsort_safe(p->threads, p->n_threads, sizeof(Task), cmp_task);
                for (size_t j = 0; j < p->n_threads; j++) {
                        int r = link_thread(f, p, &p->threads[j], error);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int cmp_task_ptr(const void *a, const void *b) {
        pid_t x = (*(Task * const *) a)->tid, y = (*(Task * const *) b)->tid;
        return x < y ? -1 : x > y;
}

static int build_task_index(Forest *f, char **error) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                n += f->processes[i]->n_threads;
        free(f->tasks_by_tid);
        f->tasks_by_tid = malloc((n ? n : 1) * sizeof(Task *));
        if (!f->tasks_by_tid)
                return -ENOMEM;
        f->n_tasks = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++)
                        f->tasks_by_tid[f->n_tasks++] = &f->processes[i]->threads[j];
        qsort_safe(f->tasks_by_tid, n, sizeof(Task *), cmp_task_ptr);
        for (size_t i = 1; i < n; i++)
                if (f->tasks_by_tid[i]->tid == f->tasks_by_tid[i - 1]->tid)
                        return set_error(error, "thread %d: in both process %d and process %d",
                                         f->tasks_by_tid[i]->tid, f->tasks_by_tid[i - 1]->tgid,
                                         f->tasks_by_tid[i]->tgid);
        return 0;
}

static int cmp_listener(const void *a, const void *b) {
        uint64_t x = (*(Listener * const *) a)->id, y = (*(Listener * const *) b)->id;
        return x < y ? -1 : x > y;
}

static int link_listeners(Forest *f, char **error) {
        for (size_t i = 0; i < f->n_filters; i++)
                f->filters[i]->listener_id = 0;
        qsort_safe(f->listeners, f->n_listeners, sizeof(Listener *), cmp_listener);
        for (size_t i = 0; i < f->n_listeners; i++) {
                Listener *l = f->listeners[i];
                if (i > 0 && f->listeners[i - 1]->id == l->id)
                        return set_error(error, "listener %" PRIu64 ": duplicate id", l->id);
                Filter *flt = forest_find_filter(f, l->filter_id);
                if (!flt)
                        return set_error(error, "listener %" PRIu64 ": filter %" PRIu64 " does not exist", l->id,
                                         l->filter_id);
                if (flt->listener_id != 0)
                        return set_error(error, "listener %" PRIu64 ": filter %" PRIu64 " already has listener %" PRIu64,
                                         l->id, flt->id, flt->listener_id);
                flt->listener_id = l->id;
        }
        return 0;
}

int forest_link(Forest *f, char **error) {
        int r;

        if (error)
                *error = NULL;
        f->linked = false;
        r = link_parents(f, error);
        if (r < 0)
                return r;
        r = compute_depths(f, error);
        if (r < 0)
                return r;
        qsort_safe(f->filters, f->n_filters, sizeof(Filter *), cmp_filter_depth_id);
        for (size_t i = 0; i < f->n_filters; i++)
                f->filters[i]->index = i;
        r = link_processes(f, error);
        if (r < 0)
                return r;
        r = link_listeners(f, error);
        if (r < 0)
                return r;
        r = build_task_index(f, error);
        if (r < 0)
                return r;
        f->linked = true;
        return 0;
}

size_t forest_chain_length(const Forest *f, uint64_t head) {
        size_t n = 0;
        for (const Filter *x = forest_find_filter(f, head); x && n <= f->n_filters; x = forest_find_filter(f, x->parent_id))
                n++;
        return n;
}

size_t filter_chain(const Filter *head, const Filter **ret, size_t max) {
        size_t n = 0;
        for (const Filter *x = head; x; x = x->parent, n++)
                if (n < max)
                        ret[n] = x;
        return n;
}

const Filter *filter_lca(const Filter *a, const Filter *b) {
        if (!a || !b)
                return NULL;
        while (a->depth > b->depth)
                a = a->parent;
        while (b->depth > a->depth)
                b = b->parent;
        while (a != b) {
                a = a->parent;
                b = b->parent;
        }
        return a;
}

int filter_cmp(const Filter *a, const Filter *b, bool *ret_exact) {
        if (ret_exact)
                *ret_exact = a && b && a->identity == IDENTITY_EXACT && b->identity == IDENTITY_EXACT;
        if (a == b)
                return 0;
        if (!a || !b)
                return !a ? 1 : 2;
        return a->id < b->id ? 1 : 2;
}

void process_set_exited_leader(Process *p, TaskMode mode, unsigned filter_count) {
        p->has_exited_leader = true;
        p->exited_leader = (Task) { .tid = p->pid, .tgid = p->pid, .mode = mode, .filter_count = filter_count };
}

bool task_no_new_privs(const Process *p, const Task *t) {
        return t->nnp == TASK_NNP_PROCESS ? p->no_new_privs : t->nnp == TASK_NNP_ON;
}

bool task_no_new_privs_differs(const Process *p, const Task *t) {
        return t->nnp != TASK_NNP_PROCESS && (t->nnp == TASK_NNP_ON) != p->no_new_privs;
}

void task_set_no_new_privs(Task *t, bool on) {
        t->nnp = on ? TASK_NNP_ON : TASK_NNP_OFF;
}

bool process_has_seccomp(const Process *p) {
        for (size_t i = 0; p && i < p->n_threads; i++)
                if (p->threads[i].mode != TASK_MODE_DISABLED)
                        return true;
        return false;
}

int forest_remove_thread(Forest *f, pid_t tgid, pid_t tid) {
        Process *p = forest_find_process(f, tgid);
        Task *t = process_find_thread(p, tid);
        if (!t)
                return -ENOENT;
        *t = p->threads[--p->n_threads];
        if (p->n_threads == 0)
                process_free(forest_take_process(f, tgid));
        f->linked = false;
        return 0;
}
