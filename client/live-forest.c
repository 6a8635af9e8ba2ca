/* live-forest.c: a lib/ Forest built from the daemon's ListFilters and ListTasks replies */
#include "live-forest.h"

#include "ctl-log.h"
#include "manager-properties.h"

static int add_filter(Forest *f, const FilterRecord *r) {
        Filter *x;
        int k = forest_add_filter(f, r->id, r->parent, NULL, 0, &x);
        if (k < 0)
                return k;
        /* The program is not fetched: keep the daemon's length and digest for display. */
        x->len = r->length;
        if (prog_digest_from_string(r->digest, x->digest) < 0)
                memset(x->digest, 0, sizeof(x->digest));
        x->log = filter_record_has_flag(r, "log");
        x->wait_killable_recv = filter_record_has_flag(r, "wait_killable_recv");
        x->has_listener = filter_record_has_flag(r, "listener");
        return 0;
}

static bool task_is_kept(const TaskRecord *t, const FilterList *filters) {
        return t->head == 0 || filter_list_find(filters, t->head);
}

/* Does the process made of tasks[a..b) (one tgid) belong in the forest? */
static bool process_is_kept(const TaskList *tasks, size_t a, size_t b, const FilterList *filters, bool all) {
        bool filtered = false;
        for (size_t i = a; i < b; i++) {
                if (!task_is_kept(&tasks->items[i], filters))
                        continue;
                if (all || !streq(tasks->items[i].mode, "disabled"))
                        filtered = true;
        }
        return filtered;
}

/* The leader's record if listed, else the first thread's: it names the process. */
static const TaskRecord *process_leader(const TaskList *tasks, size_t a, size_t b) {
        for (size_t i = a; i < b; i++)
                if (tasks->items[i].tid == tasks->items[i].tgid)
                        return &tasks->items[i];
        return &tasks->items[a];
}

static TaskMode task_record_mode(const TaskRecord *t) {
        TaskMode m = task_mode_from_string(t->mode);
        if (m >= 0)
                return m;
        return t->head ? TASK_MODE_FILTER : TASK_MODE_DISABLED;
}

static int add_process(Forest *f, const TaskList *tasks, size_t a, size_t b, const FilterList *filters) {
        const TaskRecord *leader = process_leader(tasks, a, b);
        Process *p;
        int r = forest_add_process(f, leader->tgid, &p);
        if (r < 0)
                return r;
        p->ppid = leader->ppid;
        snprintf(p->comm, sizeof(p->comm), "%s", leader->comm);
        for (size_t i = a; i < b; i++) {
                const TaskRecord *t = &tasks->items[i];
                Task *x;
                if (!task_is_kept(t, filters))
                        continue;
                r = process_add_thread(p, t->tid, &x);
                if (r < 0)
                        return r;
                x->mode = task_record_mode(t);
                x->filter_id = t->head;
                x->filter_count = t->depth;
                x->stale = t->stale;
        }
        return 0;
}

static int add_processes(Forest *f, const TaskList *tasks, const FilterList *filters, bool all) {
        for (size_t a = 0, b; a < tasks->n; a = b) {
                for (b = a + 1; b < tasks->n && tasks->items[b].tgid == tasks->items[a].tgid; b++)
                        ;
                if (!process_is_kept(tasks, a, b, filters, all))
                        continue;
                int r = add_process(f, tasks, a, b, filters);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int forest_set_source(Forest *f, const ManagerProperties *p) {
        IdentityKind k = p->identity ? identity_kind_from_string(p->identity) : _IDENTITY_INVALID;
        f->identity = k >= 0 ? k : IDENTITY_INFERRED; /* never claim exactness we were not told */
        f->backend = p->backend ? strdup(p->backend) : NULL;
        if (p->backend && !f->backend)
                return -ENOMEM;
        return host_info_fill_local(&f->host);
}

/* The daemon's replies into f, not yet linked. */
static int add_replies(Forest *f, const FilterList *filters, const TaskList *tasks, const ManagerProperties *p,
                       bool all_processes) {
        int r = forest_set_source(f, p);
        if (r < 0)
                return r;
        for (size_t i = 0; i < filters->n; i++) {
                r = add_filter(f, &filters->items[i]);
                if (r < 0)
                        return r;
        }
        return add_processes(f, tasks, filters, all_processes);
}

int live_forest_build(const FilterList *filters, const TaskList *tasks, const ManagerProperties *p,
                      bool all_processes, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = forest_new();
        if (!f)
                return -ENOMEM;
        int r = add_replies(f, filters, tasks, p, all_processes);
        if (r < 0)
                return ctl_error_errno(r, "Failed to build the forest from the daemon's replies: %m");
        _cleanup_free_ char *why = NULL;
        r = forest_link(f, &why);
        if (r < 0)
                return ctl_error_errno(r, "The daemon's forest is inconsistent: %s", why ? why : "?");
        *ret = TAKE_PTR(f);
        return 0;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

/* The tasks of the processes in members (sorted). The records are borrowed from tasks: free
 * only ret->items. */
static int task_list_subtree(const TaskList *tasks, const uint32_t *members, size_t n_members, TaskList *ret) {
        *ret = (TaskList) { .items = calloc(tasks->n + 1, sizeof(TaskRecord)) };
        if (!ret->items)
                return -ENOMEM;
        for (size_t i = 0; i < tasks->n; i++)
                if (bsearch_safe(&tasks->items[i].tgid, members, n_members, sizeof(uint32_t), cmp_u32))
                        ret->items[ret->n++] = tasks->items[i];
        return 0;
}

/* The process that PID names: a listed thread stands for its process. An unlisted PID (a
 * process without filters, e.g. the parent of filtered ones) is checked with GetTaskChain,
 * which says NoSuchTask or AccessDenied when it must. Logs. */
static int resolve_root(sd_bus *bus, const TaskList *tasks, pid_t pid, uint32_t *ret) {
        const TaskRecord *t = task_list_find(tasks, (uint32_t) pid);
        if (t) {
                *ret = t->tgid;
                return 0;
        }
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n;
        int r = manager_get_task_chain(bus, (uint32_t) pid, &ids, &n);
        if (r < 0)
                return r;
        *ret = (uint32_t) pid;
        return 0;
}

/* The forest of root's subtree: its processes (members, as ListSubtree named them), and the
 * filters their chains reach. */
static int live_forest_build_subtree(const FilterList *filters, const TaskList *tasks, const ManagerProperties *p,
                                     uint32_t root, uint32_t *members, size_t n_members, Forest **ret) {
        TaskList sub;
        qsort_safe(members, n_members, sizeof(uint32_t), cmp_u32);
        int r = task_list_subtree(tasks, members, n_members, &sub);
        if (r < 0)
                return log_oom();
        _cleanup_(forest_freep) Forest *f = NULL;
        r = live_forest_build(filters, &sub, p, true, &f);
        free(sub.items);
        if (r < 0)
                return r;
        r = forest_drop_unreachable_filters(f, NULL, NULL);
        if (r < 0)
                return ctl_error_errno(r, "Failed to restrict the forest to process %" PRIu32 ": %m", root);
        f->root = (pid_t) root;
        *ret = TAKE_PTR(f);
        return 0;
}

/* The listeners of the forest's filters, with their holders as ListListeners names them (a
 * holder may be a process the forest does not have: its name comes with it). */
static int add_listeners(Forest *f, const ListenerList *listeners) {
        for (size_t i = 0; i < listeners->n; i++) {
                const ListenerRecord *x = &listeners->items[i];
                Listener *l;
                if (!forest_find_filter(f, x->filter))
                        continue; /* outside the subtree */
                int r = forest_add_listener(f, x->id, x->filter, &l);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < x->n_holders; j++) {
                        r = listener_add_holder(l, x->holders[j].pid, x->holders[j].fd);
                        if (r == -EEXIST)
                                continue;
                        if (r < 0)
                                return r;
                        memcpy(l->holders[l->n_holders - 1].comm, x->holders[j].comm, sizeof(x->holders[j].comm));
                }
        }
        _cleanup_free_ char *why = NULL;
        int r = forest_link(f, &why);
        if (r < 0)
                return ctl_error_errno(r, "The daemon's listeners are inconsistent: %s", why ? why : "?");
        return 0;
}

static int live_forest_fetch_tasks(sd_bus *bus, pid_t root, Forest **ret);

int live_forest_fetch(sd_bus *bus, pid_t root, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_(listener_list_done) ListenerList listeners = {};
        int r = live_forest_fetch_tasks(bus, root, &f);
        if (r < 0)
                return r;
        r = manager_list_listeners(bus, &listeners);
        if (r < 0)
                return r;
        r = add_listeners(f, &listeners);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

static int live_forest_fetch_tasks(sd_bus *bus, pid_t root, Forest **ret) {
        _cleanup_(manager_properties_done) ManagerProperties p = {};
        _cleanup_(task_list_done) TaskList tasks = {};
        _cleanup_(filter_list_done) FilterList filters = {};
        /* Tasks before filters: a filter only vanishes after the last task under it has, so a
         * head listed in the first reply is missing from the second only if its task exited. */
        int r = manager_get_properties(bus, &p);
        if (r < 0)
                return r;
        r = manager_list_tasks(bus, &tasks);
        if (r < 0)
                return r;
        r = manager_list_filters(bus, &filters);
        if (r < 0)
                return r;
        if (root <= 0)
                return live_forest_build(&filters, &tasks, &p, false, ret);
        uint32_t process;
        _cleanup_free_ uint32_t *members = NULL;
        size_t n_members = 0;
        r = resolve_root(bus, &tasks, root, &process);
        if (r < 0)
                return r;
        r = manager_list_subtree(bus, process, &members, &n_members);
        return r < 0 ? r : live_forest_build_subtree(&filters, &tasks, &p, process, members, n_members, ret);
}
