/* manager-calls.c: typed calls of the org.sectree1.Manager D-Bus API, and the records they return */
#include "manager-calls.h"

#include "bus.h"

static void filter_record_done(FilterRecord *f) {
        free(f->digest);
        strv_free(f->flags);
}

void task_list_done(TaskList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].comm);
                free(l->items[i].mode);
        }
        free(l->items);
        *l = (TaskList) {};
}

void filter_list_done(FilterList *l) {
        for (size_t i = 0; i < l->n; i++)
                filter_record_done(&l->items[i]);
        free(l->items);
        *l = (FilterList) {};
}

void filter_detail_done(FilterDetail *d) {
        filter_record_done(&d->meta);
        free(d->identity);
        free(d->program);
        free(d->installer.comm);
        free(d->installer.exe);
        *d = (FilterDetail) {};
}

void listener_list_done(ListenerList *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].holders);
        free(l->items);
        *l = (ListenerList) {};
}

static int task_record_cmp(const void *a, const void *b) {
        const TaskRecord *x = a, *y = b;
        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int filter_record_cmp(const void *a, const void *b) {
        const FilterRecord *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

const TaskRecord *task_list_find(const TaskList *l, uint32_t tid) {
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].tid == tid)
                        return &l->items[i];
        return NULL;
}

const FilterRecord *filter_list_find(const FilterList *l, uint64_t id) {
        FilterRecord key = { .id = id };
        return bsearch_safe(&key, l->items, l->n, sizeof(FilterRecord), filter_record_cmp);
}

bool filter_record_has_flag(const FilterRecord *f, const char *flag) {
        for (char **i = f->flags; i && *i; i++)
                if (streq(*i, flag))
                        return true;
        return false;
}

bool filter_detail_lacks_program(const FilterDetail *d) {
        return d->n_program < d->meta.length && filter_record_has_flag(&d->meta, FILTER_FLAG_OVER_BUDGET);
}

static int read_task_record(sd_bus_message *m, TaskRecord *t) {
        const char *comm, *mode;
        int r = sd_bus_message_read(m, "(uuusstu)", &t->tid, &t->tgid, &t->ppid, &comm, &mode, &t->head, &t->depth);
        if (r <= 0)
                return r;
        t->comm = strdup(comm);
        t->mode = strdup(mode);
        return t->comm && t->mode ? 1 : -ENOMEM;
}

static int read_task_list(sd_bus_message *m, TaskList *l) {
        int r = sd_bus_message_enter_container(m, 'a', "(uuusstu)");
        if (r < 0)
                return r;
        for (;;) {
                if (GROW(l->items, l->allocated, l->n + 1) < 0)
                        return -ENOMEM;
                r = read_task_record(m, &l->items[l->n]);
                if (r < 0)
                        l->n++; /* so that task_list_done() frees what was read */
                if (r <= 0)
                        break;
                l->n++;
        }
        if (r < 0)
                return r;
        qsort_safe(l->items, l->n, sizeof(TaskRecord), task_record_cmp);
        return sd_bus_message_exit_container(m);
}

/* Marks the tasks ListStaleTasks lists (asked after ListTasks: a task it names that ListTasks did
 * not list, because it came or went in between, is passed over). */
static int mark_stale_tasks(sd_bus *bus, TaskList *l) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const uint32_t *tids;
        size_t size;
        int r = bus_call_manager(bus, "ListStaleTasks", &reply, "");
        if (r < 0)
                return r;
        r = sd_bus_message_read_array(reply, 'u', (const void **) &tids, &size);
        if (r < 0)
                return bus_log_parse_error(r, "ListStaleTasks");
        for (size_t i = 0; i < size / sizeof(uint32_t); i++) {
                TaskRecord *t = (TaskRecord *) task_list_find(l, tids[i]);
                if (t)
                        t->stale = true;
        }
        return 0;
}

int manager_list_tasks(sd_bus *bus, TaskList *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call_manager(bus, "ListTasks", &reply, "");
        if (r < 0)
                return r;
        _cleanup_(task_list_done) TaskList l = {};
        r = read_task_list(reply, &l);
        if (r < 0)
                return bus_log_parse_error(r, "ListTasks");
        r = mark_stale_tasks(bus, &l);
        if (r < 0)
                return r;
        *ret = l;
        l = (TaskList) {};
        return 0;
}

/* The common part of ListFilters' elements and GetFilter's reply, after id and parent: length,
 * digest, and (in the order of the signature) tasks and flags. */
static int read_filter_tail(sd_bus_message *m, FilterRecord *f, bool flags_first) {
        const char *digest;
        int r = sd_bus_message_read(m, "us", &f->length, &digest);
        if (r < 0)
                return r;
        f->digest = strdup(digest);
        if (!f->digest)
                return -ENOMEM;
        if (!flags_first && (r = sd_bus_message_read(m, "u", &f->tasks)) < 0)
                return r;
        r = sd_bus_message_read_strv(m, &f->flags);
        if (r < 0)
                return r;
        if (flags_first && (r = sd_bus_message_read(m, "u", &f->tasks)) < 0)
                return r;
        return 0;
}

static int read_filter_record(sd_bus_message *m, FilterRecord *f) {
        int r = sd_bus_message_enter_container(m, 'r', "ttusuas");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(m, "tt", &f->id, &f->parent);
        if (r < 0)
                return r;
        r = read_filter_tail(m, f, false);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 1;
}

static int read_filter_list(sd_bus_message *m, FilterList *l) {
        int r = sd_bus_message_enter_container(m, 'a', "(ttusuas)");
        if (r < 0)
                return r;
        for (;;) {
                if (GROW(l->items, l->allocated, l->n + 1) < 0)
                        return -ENOMEM;
                r = read_filter_record(m, &l->items[l->n]);
                if (r < 0)
                        l->n++;
                if (r <= 0)
                        break;
                l->n++;
        }
        if (r < 0)
                return r;
        qsort_safe(l->items, l->n, sizeof(FilterRecord), filter_record_cmp);
        return sd_bus_message_exit_container(m);
}

int manager_list_filters(sd_bus *bus, FilterList *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call_manager(bus, "ListFilters", &reply, "");
        if (r < 0)
                return r;
        _cleanup_(filter_list_done) FilterList l = {};
        r = read_filter_list(reply, &l);
        if (r < 0)
                return bus_log_parse_error(r, "ListFilters");
        *ret = l;
        l = (FilterList) {};
        return 0;
}

static int read_program(sd_bus_message *m, FilterDetail *d) {
        size_t allocated = 0;
        int r = sd_bus_message_enter_container(m, 'a', "(qyyu)");
        if (r < 0)
                return r;
        for (;;) {
                struct sock_filter insn;
                r = sd_bus_message_read(m, "(qyyu)", &insn.code, &insn.jt, &insn.jf, &insn.k);
                if (r <= 0)
                        break;
                if (GROW(d->program, allocated, d->n_program + 1) < 0)
                        return -ENOMEM;
                d->program[d->n_program++] = insn;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_filter_detail(sd_bus_message *m, FilterDetail *d) {
        int r = sd_bus_message_read(m, "t", &d->meta.parent);
        if (r < 0)
                return r;
        r = read_filter_tail(m, &d->meta, true);
        if (r < 0)
                return r;
        const char *identity;
        r = sd_bus_message_read(m, "s", &identity);
        if (r < 0)
                return r;
        d->identity = strdup(identity);
        if (!d->identity)
                return -ENOMEM;
        r = read_program(m, d);
        if (r < 0)
                return r;
        FilterInstaller *x = &d->installer;
        const char *comm, *exe;
        r = sd_bus_message_read(m, "uusst", &x->tid, &x->pid, &comm, &exe, &x->usec);
        if (r < 0)
                return r;
        x->comm = strdup(comm);
        x->exe = strdup(exe);
        d->live = true;
        return x->comm && x->exe ? 0 : -ENOMEM;
}

static int filter_detail_from_reply(sd_bus_message *reply, uint64_t id, FilterDetail *ret) {
        _cleanup_(filter_detail_done) FilterDetail d = { .meta.id = id };
        int r = read_filter_detail(reply, &d);
        if (r < 0)
                return bus_log_parse_error(r, "GetFilter");
        *ret = d;
        d = (FilterDetail) {};
        return 0;
}

int manager_get_filter(sd_bus *bus, uint64_t id, FilterDetail *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call_manager(bus, "GetFilter", &reply, "t", id);
        return r < 0 ? r : filter_detail_from_reply(reply, id, ret);
}

int manager_get_filter_if_there(sd_bus *bus, uint64_t id, FilterDetail *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_call_method(bus, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE, "GetFilter",
                                   &error, &reply, "t", id);
        if (r < 0 && sd_bus_error_has_name(&error, "org.sectree1.Error.NoSuchFilter"))
                return -ESRCH;
        if (r < 0)
                return bus_log_error(r, &error, "call GetFilter");
        return filter_detail_from_reply(reply, id, ret);
}

static int read_listener(sd_bus_message *m, ListenerRecord *x) {
        size_t allocated = 0;
        uint32_t pid;
        int32_t fd;
        const char *comm;
        int r = sd_bus_message_read(m, "tt", &x->id, &x->filter);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "(uis)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(uis)", &pid, &fd, &comm)) > 0) {
                if (GROW(x->holders, allocated, x->n_holders + 1) < 0)
                        return -ENOMEM;
                ListenerHolder *h = &x->holders[x->n_holders++];
                *h = (ListenerHolder) { .pid = (pid_t) pid, .fd = fd };
                snprintf(h->comm, sizeof(h->comm), "%s", comm);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_listener_list(sd_bus_message *m, ListenerList *l) {
        int r = sd_bus_message_enter_container(m, 'a', "(tta(uis))");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'r', "tta(uis)")) > 0) {
                if (GROW(l->items, l->allocated, l->n + 1) < 0)
                        return -ENOMEM;
                l->items[l->n] = (ListenerRecord) {};
                r = read_listener(m, &l->items[l->n++]);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int manager_list_listeners(sd_bus *bus, ListenerList *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call_manager(bus, "ListListeners", &reply, "");
        if (r < 0)
                return r;
        _cleanup_(listener_list_done) ListenerList l = {};
        r = read_listener_list(reply, &l);
        if (r < 0)
                return bus_log_parse_error(r, "ListListeners");
        *ret = l;
        l = (ListenerList) {};
        return 0;
}

int manager_get_task_chain(sd_bus *bus, uint32_t tid, uint64_t **ret, size_t *ret_n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call_manager(bus, "GetTaskChain", &reply, "u", tid);
        if (r < 0)
                return r;
        const void *ids;
        size_t size;
        r = sd_bus_message_read_array(reply, 't', &ids, &size);
        if (r < 0)
                return bus_log_parse_error(r, "GetTaskChain");
        _cleanup_free_ uint64_t *copy = malloc(size + 1);
        if (!copy)
                return log_oom();
        memcpy_safe(copy, ids, size);
        *ret = TAKE_PTR(copy);
        *ret_n = size / sizeof(uint64_t);
        return 0;
}

int manager_list_subtree(sd_bus *bus, uint32_t pid, uint32_t **ret, size_t *ret_n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call_manager(bus, "ListSubtree", &reply, "u", pid);
        if (r < 0)
                return r;
        const void *pids;
        size_t size;
        r = sd_bus_message_read_array(reply, 'u', &pids, &size);
        if (r < 0)
                return bus_log_parse_error(r, "ListSubtree");
        _cleanup_free_ uint32_t *copy = malloc(size + 1);
        if (!copy)
                return log_oom();
        memcpy_safe(copy, pids, size);
        *ret = TAKE_PTR(copy);
        *ret_n = size / sizeof(uint32_t);
        return 0;
}

int manager_rescan(sd_bus *bus) {
        return bus_call_manager(bus, "Rescan", NULL, "");
}
