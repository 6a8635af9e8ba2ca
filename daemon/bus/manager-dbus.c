/* manager-dbus.c: the org.sectree1.Manager interface: handlers first, the vtable at the bottom */
#include "bus/manager-dbus.h"

#include "bus/bus-args.h"
#include "bus/bus-errors.h"
#include "bus/policy-dbus.h"
#include "bus/snapshots-dbus.h"
#include "config.h"
#include "service/access.h"
#include "service/log-event.h"
#include "service/snapshot-transfers.h"
#include "service/visibility.h"
#include "snapshot/snapshot.h"

static const char *filter_flag_names[] = { "log", "wait_killable_recv", "listener", "over-budget" };

static int append_filter_flags(sd_bus_message *reply, const Filter *flt) {
        int r = sd_bus_message_open_container(reply, 'a', "s");
        bool set[] = { flt->log, flt->wait_killable_recv, flt->has_listener || flt->listener_id, flt->over_budget };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(set); i++)
                if (set[i])
                        r = sd_bus_message_append(reply, "s", filter_flag_names[i]);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int list_tasks_reply(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_list_reply_begin(msg, "(uuusstu)", &reply);
        for (size_t i = 0; r >= 0 && i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (!caller_may_see(c, p))
                        continue;
                /* comm is whatever bytes the task set (PR_SET_NAME); D-Bus strings must be UTF-8 */
                _cleanup_free_ char *comm = snapshot_utf8_sanitize(p->comm);
                if (!comm)
                        return -ENOMEM;
                for (size_t j = 0; r >= 0 && j < p->n_threads; j++) {
                        const Task *t = &p->threads[j];
                        r = sd_bus_message_append(reply, "(uuusstu)", (uint32_t) t->tid, (uint32_t) p->pid,
                                                  (uint32_t) p->ppid, comm, task_mode_to_string(t->mode),
                                                  t->filter_id, (uint32_t) (t->filter ? t->filter->depth : 0));
                }
        }
        return bus_list_end(reply, r);
}

static int list_stale_tasks_reply(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_list_reply_begin(msg, "u", &reply);
        for (size_t i = 0; r >= 0 && i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                for (size_t j = 0; r >= 0 && caller_may_see(c, p) && j < p->n_threads; j++)
                        if (manager_task_stale(b->manager, p->threads[j].tid))
                                r = sd_bus_message_append(reply, "u", (uint32_t) p->threads[j].tid);
        }
        return bus_list_end(reply, r);
}

static int append_filter_entry(sd_bus_message *reply, const Filter *flt, size_t tasks) {
        char digest[PROG_DIGEST_STRING_MAX];
        int r = sd_bus_message_open_container(reply, 'r', "ttusuas");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "ttusu", flt->id, flt->parent_id, (uint32_t) flt->len,
                                  prog_digest_to_string(flt->digest, digest), (uint32_t) tasks);
        if (r < 0)
                return r;
        r = append_filter_flags(reply, flt);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int list_filters_reply(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(hashmap_deinit) Hashmap visible = {}, counts = {};
        int r = caller_visible_filters(c, f, &visible, &counts);
        if (r >= 0)
                r = bus_list_reply_begin(msg, "(ttusuas)", &reply);
        for (size_t i = 0; r >= 0 && i < f->n_filters; i++)
                if (hashmap_get(&visible, f->filters[i]->id))
                        r = append_filter_entry(reply, f->filters[i], visible_task_count(c, &counts, f->filters[i]));
        return bus_list_end(reply, r);
}

/* (pid, fd, comm): comm as the forest has the process, or /proc now ("" when it is gone). */
static int append_holder(sd_bus_message *reply, const Forest *f, const ListenerHolder *h) {
        char comm[16];
        holder_comm(f, h->pid, comm);
        _cleanup_free_ char *valid = snapshot_utf8_sanitize(comm);
        if (!valid)
                return -ENOMEM;
        return sd_bus_message_append(reply, "(uis)", (uint32_t) h->pid, (int32_t) h->fd, valid);
}

/* (id, filter, holders): the holders the caller may see. */
static int append_listener(sd_bus_message *reply, Caller *c, const Forest *f, const Listener *l) {
        int r = sd_bus_message_open_container(reply, 'r', "tta(uis)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "tt", l->id, l->filter_id);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(uis)");
        for (size_t j = 0; r >= 0 && j < l->n_holders; j++)
                if (c->privileged || caller_may_see_process(c, l->holders[j].pid))
                        r = append_holder(reply, f, &l->holders[j]);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* Every listener of a filter the caller may see, with the holders the caller may see: who holds
 * a file descriptor of it, and which, and the holder's name. */
static int list_listeners_reply(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(hashmap_deinit) Hashmap visible = {};
        int r = caller_visible_filters(c, f, &visible, NULL);
        if (r >= 0)
                r = bus_list_reply_begin(msg, "(tta(uis))", &reply);
        for (size_t i = 0; r >= 0 && i < f->n_listeners; i++) {
                const Listener *l = f->listeners[i];
                if (hashmap_get(&visible, l->filter_id))
                        r = append_listener(reply, c, f, l);
        }
        return bus_list_end(reply, r);
}

static int method_list_tasks(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_checked_call(msg, userdata, list_tasks_reply, error);
}

static int method_list_stale_tasks(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_checked_call(msg, userdata, list_stale_tasks_reply, error);
}

static int method_list_filters(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_checked_call(msg, userdata, list_filters_reply, error);
}

static int method_list_listeners(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_checked_call(msg, userdata, list_listeners_reply, error);
}

static int get_filter_reply(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error);

static int method_get_filter(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_checked_call(msg, userdata, get_filter_reply, error);
}

/* Empty for a filter over budget: its flags say so. */
static int append_program(sd_bus_message *reply, const Filter *flt) {
        int r = sd_bus_message_open_container(reply, 'a', "(qyyu)");
        for (size_t i = 0; r >= 0 && flt->insns && i < flt->len; i++) {
                const struct sock_filter *x = &flt->insns[i];
                r = sd_bus_message_append(reply, "(qyyu)", x->code, x->jt, x->jf, x->k);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* The filter with that id if the caller may see it, and the counts of caller_visible_filters() (left
 * empty for a privileged caller); otherwise a named error. */
static int find_visible_filter(sd_bus_message *msg, Caller *c, const Forest *f, uint64_t id, const Filter **ret,
                               Hashmap *ret_counts, sd_bus_error *error) {
        const Filter *flt = forest_find_filter(f, id);
        if (!flt)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_FILTER, "No filter with id %" PRIu64 ".", id);
        if (!c->privileged) {
                _cleanup_(hashmap_deinit) Hashmap visible = {};
                int r = caller_visible_filters(c, f, &visible, ret_counts);
                if (r < 0)
                        return r;
                if (!hashmap_get(&visible, id))
                        return bus_access_denied(msg, c, error, "Filter %" PRIu64 " runs no task you could trace.", id);
        }
        *ret = flt;
        return 0;
}

/* Who installed the filter, as the state database recorded it when the daemon saw it happen: tid,
 * pid, comm, exe and when; zeros and "" when it was found by a full pass. The executable is a
 * process's private fact (/proc/PID/exe): said only to a caller who could trace the installer now. */
static int append_installer(sd_bus_message *reply, Store *store, Caller *c, uint64_t id) {
        StoreInstalled x = {};
        int r = store_get_installer(store, id, &x);
        if (r < 0)
                return r;
        bool exe_visible = c->privileged || (r > 0 && caller_may_see_process(c, x.tgid));
        _cleanup_free_ char *comm = snapshot_utf8_sanitize(x.comm ?: ""),
                            *exe = snapshot_utf8_sanitize(exe_visible && x.exe ? x.exe : "");
        if (comm && exe)
                r = sd_bus_message_append(reply, "uusst", (uint32_t) x.tid, (uint32_t) x.tgid, comm, exe, x.usec);
        else
                r = -ENOMEM;
        store_installed_done(&x);
        return r;
}

/* GetFilter(t id): its argument read again from the start (a call answered after the checks). */
static int get_filter_reply(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest *f, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(hashmap_deinit) Hashmap counts = {};
        const Filter *flt = NULL;
        uint64_t id;
        char digest[PROG_DIGEST_STRING_MAX];
        int r = sd_bus_message_rewind(msg, true);
        if (r < 0 || (r = sd_bus_message_read(msg, "t", &id)) < 0 ||
            (r = find_visible_filter(msg, c, f, id, &flt, &counts, error)) < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "tus", flt->parent_id, (uint32_t) flt->len,
                                  prog_digest_to_string(flt->digest, digest));
        if (r < 0)
                return r;
        r = append_filter_flags(reply, flt);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "us", (uint32_t) visible_task_count(c, &counts, flt),
                                  identity_kind_to_string(flt->identity));
        if (r < 0)
                return r;
        r = append_program(reply, flt);
        if (r < 0)
                return r;
        r = append_installer(reply, b->manager->store, c, flt->id);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* A live task we do not track has no filter: an empty chain, if the caller may see it. */
static int reply_unfiltered_chain(sd_bus_message *msg, Caller *c, pid_t tid, sd_bus_error *error) {
        int r = caller_check_untracked_task(c, tid);
        if (r == -ESRCH)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_TASK, "No task with tid %d.", tid);
        if (r < 0)
                return bus_access_denied(msg, c, error, "Task %d is not one you could trace.", tid);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "at", 0);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static int method_get_task_chain(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        Manager *m = b->manager;
        CALLER_CLEANUP Caller c = {};
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Process *p;
        const Forest *f;
        uint32_t tid;
        int r = sd_bus_message_read(msg, "u", &tid);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0 || (r = live_or_fail(m, &f, error)) < 0)
                return r;
        if (tid == 0 || tid > INT32_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid tid %" PRIu32 ".", tid);
        const Task *t = forest_find_task(f, (pid_t) tid, &p);
        if (!t)
                return reply_unfiltered_chain(msg, &c, (pid_t) tid, error);
        if (!caller_may_see(&c, p))
                return bus_access_denied(msg, &c, error, "Task %" PRIu32 " is not one you could trace.", tid);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "t");
        for (const Filter *x = t->filter; r >= 0 && x; x = x->parent)
                r = sd_bus_message_append(reply, "t", x->id);
        return bus_list_end(reply, r);
}

/* The process of pid (a thread stands for its process), if the caller may see it: else an error
 * reply is set (negative return). */
static int subtree_root(sd_bus_message *msg, Caller *c, uint32_t pid, pid_t *ret, sd_bus_error *error) {
        if (pid == 0 || pid > INT32_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid pid %" PRIu32 ".", pid);
        pid_t tgid = proc_process_of(pid);
        if (tgid == 0)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_TASK, "No process or thread with id %" PRIu32 ".", pid);
        if (!caller_may_see_process(c, tgid))
                return bus_access_denied(msg, c, error, "Process %d is not one you could trace.", tgid);
        *ret = tgid;
        return 0;
}

/* The arguments of ListSubtree and ListSubtreeProcesses (u pid): the caller, the live forest and
 * the subtree's root process, or an error reply set (negative return). */
static int subtree_request(sd_bus_message *msg, ManagerBus *b, Caller *c, const Forest **ret_live, pid_t *ret_root,
                           sd_bus_error *error) {
        uint32_t pid;
        int r = sd_bus_message_read(msg, "u", &pid);
        if (r < 0 || (r = caller_from_message(msg, c)) < 0 || (r = live_or_fail(b->manager, ret_live, error)) < 0)
                return r;
        return subtree_root(msg, c, pid, ret_root, error);
}

static int append_visible_process(sd_bus_message *reply, const VisibleProcess *p) {
        _cleanup_free_ char *name = snapshot_utf8_sanitize(p->comm); /* D-Bus strings are UTF-8 */
        if (!name)
                return -ENOMEM;
        return sd_bus_message_append(reply, "(uus)", (uint32_t) p->pid, (uint32_t) p->ppid, name);
}

/* The worker's list as the method's reply: ListSubtree's pids, ListSubtreeProcesses' processes. */
static int subtree_reply(ProcWalk *j, sd_bus_message *msg, sd_bus_message **ret) {
        bool tracked = j->kind == PROC_WALK_TRACKED;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', tracked ? "u" : "(uus)");
        for (size_t i = 0; r >= 0 && i < j->n; i++)
                r = tracked ? sd_bus_message_append(reply, "u", (uint32_t) j->pids[i])
                            : append_visible_process(reply, &j->list[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                *ret = TAKE_PTR(reply);
        return r;
}

/* The worker walked the subtree: the list, or the error. */
static void on_subtree_done(ProcWalk *j, void *userdata) {
        sd_bus_message *msg = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = j->r;
        if (r >= 0)
                r = subtree_reply(j, msg, &reply);
        bus_answer(msg, reply, r, "a call for a subtree");
}

/* ListSubtree and ListSubtreeProcesses: the request checked here, the walk of /proc in a worker
 * lane (proc-walks.h), answered when it is done. */
static int subtree_call(sd_bus_message *msg, ManagerBus *b, ProcWalkKind kind, sd_bus_error *error) {
        CALLER_CLEANUP Caller c = {};
        uint64_t cpu = thread_cpu_usec();
        const Forest *f;
        pid_t root = 0;
        int r = subtree_request(msg, b, &c, &f, &root, error);
        if (r < 0)
                return r;
        return bus_proc_walk_start(b, msg, f, &c, kind, root, NULL, NULL, cpu, on_subtree_done, error);
}

static int method_list_subtree(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return subtree_call(msg, userdata, PROC_WALK_TRACKED, error);
}

/* Every process of the subtree, filtered or not, as snapshots take them. */
static int method_list_subtree_processes(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return subtree_call(msg, userdata, PROC_WALK_PROCESSES, error);
}

/* A Rescan() whose pass is queued behind a snapshot's scan (the loop does not wait for it) is
 * answered once a full pass is stored. */
static int rescan_park(ManagerBus *b, sd_bus_message *msg) {
        if (GROW(b->rescans, b->n_rescans_allocated, b->n_rescans + 1) < 0)
                return -ENOMEM;
        b->rescans[b->n_rescans++] = sd_bus_message_ref(msg);
        return 1;
}

/* Answer every parked Rescan(): with success (name NULL) or with that error. */
static void rescans_answer(ManagerBus *b, const char *name, const char *message) {
        _cleanup_free_ sd_bus_message **l = TAKE_PTR(b->rescans);
        size_t n = b->n_rescans;
        b->n_rescans = b->n_rescans_allocated = 0;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = l[i];
                int r = name ? sd_bus_reply_method_errorf(msg, name, "%s", message)
                             : sd_bus_reply_method_return(msg, NULL);
                if (r < 0)
                        log_debug_errno(r, "Could not answer a Rescan(): %m");
        }
}

static int method_rescan(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        Manager *m = b->manager;
        CALLER_CLEANUP Caller c = {};
        int r = caller_from_message(msg, &c);
        if (r < 0)
                return r;
        if (!c.privileged)
                return bus_access_denied(msg, &c, error, "Only root may ask for a rescan.");
        r = manager_full_pass(m, "rescan");
        if (r == -EAGAIN)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The full pass failed: tasks and filters changed "
                                         "under each of its attempts; the daemon passes again by itself, or call Rescan later.");
        if (r < 0)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "The full pass failed: %s", strerror(-r));
        if (source_pass_waiting(m->source))
                return rescan_park(b, msg);
        return sd_bus_reply_method_return(msg, NULL);
}

static int property_get_const_string(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        Manager *m = b->manager;
        const char *v = streq(property, "Version") ? PACKAGE_VERSION
                        : streq(property, "Backend") ? backend_to_string(source_backend(m->source))
                        : identity_kind_to_string(source_identity(m->source));
        return sd_bus_message_append(reply, "s", v);
}

static ManagerCounts current_counts(const Manager *m) {
        LiveCounts n = live_counts(m->live);
        return (ManagerCounts) {
                .tasks = (uint32_t) n.tasks,
                .filters = (uint32_t) n.filters,
                .listeners = (uint32_t) n.listeners,
                .last_scan_usec = m->last_scan_usec,
        };
}

static int property_get_count(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        int r = bus_store_failed(((ManagerBus *) userdata)->manager, error); /* stale counts otherwise */
        if (r < 0)
                return r;
        ManagerCounts c = current_counts(((ManagerBus *) userdata)->manager);
        uint32_t v = streq(property, "Tasks") ? c.tasks : streq(property, "Filters") ? c.filters : c.listeners;
        return sd_bus_message_append(reply, "u", v);
}

static int property_get_last_scan(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", ((ManagerBus *) userdata)->manager->last_scan_usec);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_const_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", property_get_const_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Identity", "s", property_get_const_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Tasks", "u", property_get_count, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Filters", "u", property_get_count, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Listeners", "u", property_get_count, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("LastScanUSec", "t", property_get_last_scan, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("ListTasks", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(uuusstu)", tasks),
                                method_list_tasks, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListStaleTasks", SD_BUS_NO_ARGS, SD_BUS_RESULT("au", tids),
                                method_list_stale_tasks, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListFilters", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ttusuas)", filters),
                                method_list_filters, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListListeners", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(tta(uis))", listeners),
                                method_list_listeners, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetFilter", SD_BUS_ARGS("t", id),
                                SD_BUS_RESULT("t", parent, "u", length, "s", digest, "as", flags, "u", tasks,
                                              "s", identity, "a(qyyu)", program, "u", installer_tid,
                                              "u", installer_pid, "s", installer_comm, "s", installer_exe,
                                              "t", installed_usec),
                                method_get_filter, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetTaskChain", SD_BUS_ARGS("u", tid), SD_BUS_RESULT("at", filters),
                                method_get_task_chain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSubtree", SD_BUS_ARGS("u", pid), SD_BUS_RESULT("au", processes),
                                method_list_subtree, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSubtreeProcesses", SD_BUS_ARGS("u", pid), SD_BUS_RESULT("a(uus)", processes),
                                method_list_subtree_processes, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Rescan", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_rescan,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CreateSnapshot", SD_BUS_ARGS("u", root_pid, "a{sv}", options),
                                SD_BUS_RESULT("t", id), method_create_snapshot, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSnapshots", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(tstuuuuuss)", snapshots),
                                method_list_snapshots, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ExportSnapshot", SD_BUS_ARGS("t", id, "h", fd, "s", format), SD_BUS_NO_RESULT,
                                method_export_snapshot, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ImportSnapshot", SD_BUS_ARGS("h", fd), SD_BUS_RESULT("t", id),
                                method_import_snapshot, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("DeleteSnapshot", SD_BUS_ARGS("t", id), SD_BUS_NO_RESULT, method_delete_snapshot,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetPolicy", SD_BUS_ARGS("u", tid),
                                SD_BUS_RESULT("s", mode, "at", filters, "a" POLICY_ARCH_TYPE, architectures),
                                method_get_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("WhoCan", SD_BUS_ARGS("s", syscall, "at", args, "a{sv}", options),
                                SD_BUS_RESULT("s", architecture, "i", nr, "u", tasks, "u", decided,
                                              "a" WHO_CAN_CHAIN_TYPE, chains, "u", unfiltered,
                                              "a" WHO_CAN_OTHER_TYPE, others,
                                              "a" WHO_CAN_UNDECIDED_TYPE, undecided, "as", undecided_why),
                                method_who_can, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Audit", SD_BUS_ARGS("u", tid, "a{sv}", options),
                                SD_BUS_RESULT("s", mode, "at", filters, "a" AUDIT_FINDING_TYPE, findings),
                                method_audit, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("FilterAttached",
                                SD_BUS_ARGS("t", id, "t", parent, "u", tid, "u", pid, "s", comm), 0),
        SD_BUS_SIGNAL_WITH_ARGS("TaskAdded", SD_BUS_ARGS("u", tid, "u", tgid, "s", comm), 0),
        SD_BUS_SIGNAL_WITH_ARGS("TaskExited", SD_BUS_ARGS("u", tid), 0),
        SD_BUS_SIGNAL_WITH_ARGS("ProcessRenamed", SD_BUS_ARGS("u", pid, "s", comm), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Resynced", SD_BUS_ARGS("s", reason), 0),
        SD_BUS_SIGNAL_WITH_ARGS("SnapshotCreated", SD_BUS_ARGS("t", id, "s", name, "u", owner_uid), 0),
        SD_BUS_SIGNAL_WITH_ARGS("SnapshotDeleted", SD_BUS_ARGS("t", id), 0),
        SD_BUS_VTABLE_END
};

static int emit(ManagerBus *b, const char *member, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r = sd_bus_message_new_signal(b->bus, &s, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, member);
        if (r < 0)
                return r;
        va_list ap;
        va_start(ap, types);
        r = sd_bus_message_appendv(s, types, ap);
        va_end(ap);
        return r < 0 ? r : sd_bus_send(b->bus, s, NULL);
}

/* comm: LiveChange.comm, not NUL-terminated when it fills it; D-Bus strings must be UTF-8. */
static char *comm_for_bus(const char *comm) {
        char c[sizeof(((LiveChange *) NULL)->comm) + 1] = {};
        memcpy(c, comm, sizeof(c) - 1);
        return snapshot_utf8_sanitize(c);
}

static int send_filter_attached(ManagerBus *b, uint64_t id, uint64_t parent, pid_t tid, pid_t pid, const char *comm) {
        _cleanup_free_ char *valid = comm_for_bus(comm);
        if (!valid)
                return -ENOMEM;
        log_event_filter_attached(id, parent, tid, pid, valid);
        return emit(b, "FilterAttached", "ttuus", id, parent, (uint32_t) tid, (uint32_t) pid, valid);
}

static int send_task_added(ManagerBus *b, pid_t tid, pid_t tgid, const char *comm) {
        _cleanup_free_ char *valid = comm_for_bus(comm);
        if (!valid)
                return -ENOMEM;
        return emit(b, "TaskAdded", "uus", (uint32_t) tid, (uint32_t) tgid, valid);
}

static int send_task_exited(ManagerBus *b, pid_t tid) {
        return emit(b, "TaskExited", "u", (uint32_t) tid);
}

/* A process update that changed the name (an exec, or its main thread's PR_SET_NAME); its other
 * updates (parent, ids, executable) are not signalled. */
static int send_process_renamed(ManagerBus *b, const LiveChange *x) {
        if (strncmp(x->old.comm, x->comm, sizeof(x->comm)) == 0)
                return 0;
        _cleanup_free_ char *valid = comm_for_bus(x->comm);
        if (!valid)
                return -ENOMEM;
        return emit(b, "ProcessRenamed", "us", (uint32_t) x->tgid, valid);
}

static void on_snapshot_created(void *userdata, uint64_t id, const char *name, uid_t owner) {
        (void) emit(userdata, "SnapshotCreated", "tsu", id, name ?: "", (uint32_t) owner);
}

static void on_snapshot_deleted(void *userdata, uint64_t id) {
        (void) emit(userdata, "SnapshotDeleted", "t", id);
}

/* PropertiesChanged for the counts that changed since the last call. */
static int announce_counts(ManagerBus *b) {
        ManagerCounts c = current_counts(b->manager);
        const char *changed[6];
        size_t n = 0;
        if (c.tasks != b->announced.tasks)
                changed[n++] = "Tasks";
        if (c.filters != b->announced.filters)
                changed[n++] = "Filters";
        if (c.listeners != b->announced.listeners)
                changed[n++] = "Listeners";
        if (c.last_scan_usec != b->announced.last_scan_usec)
                changed[n++] = "LastScanUSec";
        changed[n] = NULL;
        b->announced = c;
        if (n == 0)
                return 0;
        return sd_bus_emit_properties_changed_strv(b->bus, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, (char **) changed);
}

static int announce_change(ManagerBus *b, const LiveChange *x) {
        switch (x->type) {
        case LIVE_TASK_ADDED:
                return send_task_added(b, x->tid, x->tgid, x->comm);
        case LIVE_TASK_EXITED:
                return send_task_exited(b, x->tid);
        case LIVE_PROCESS_UPDATED:
                return send_process_renamed(b, x);
        case LIVE_FILTER_ATTACHED:
                return send_filter_attached(b, x->filter_id, x->parent_id, x->tid, x->tgid, x->comm);
        default:
                return 0;
        }
}

static void on_changes(void *userdata, const LiveChanges *c, const char *reason) {
        ManagerBus *b = userdata;
        for (size_t i = 0; i < c->n; i++)
                (void) announce_change(b, &c->changes[i]);
        if (c->replaced && reason) {
                log_event_resynced(reason);
                (void) emit(b, "Resynced", "s", reason);
        }
        (void) announce_counts(b);
        if (c->replaced)
                rescans_answer(b, NULL, NULL); /* a pass stored after they asked */
}

static int on_event_exit(sd_event_source *s, void *userdata) {
        ManagerBus *b = userdata;
        rescans_answer(b, ERROR_SCAN_FAILED, "The daemon stopped before the full pass.");
        snapshot_transfers_cancel(b->transfers);
        if (b->policy_jobs)
                worker_lanes_cancel(b->policy_jobs);
        if (b->proc_walks)
                worker_lanes_cancel(b->proc_walks);
        return 0;
}

ManagerBus *manager_bus_free(ManagerBus *b) {
        if (!b)
                return NULL;
        manager_set_listener(b->manager, &(ManagerListener) {});
        rescans_answer(b, ERROR_SCAN_FAILED, "The daemon stopped before the full pass.");
        sd_bus_flush_close_unref(b->bus);
        free(b);
        return NULL;
}

/* After the exit handler of sd_bus_attach_event() (priority 0) the bus is flushed and closed:
 * calls still waiting are answered before, at a higher priority. */
static int add_exit_handler(ManagerBus *b) {
        _cleanup_(sd_event_source_unrefp) sd_event_source *exit_source = NULL;
        int r = sd_event_add_exit(b->manager->event, &exit_source, on_event_exit, b);
        if (r < 0)
                return r;
        r = sd_event_source_set_priority(exit_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0)
                return r;
        return sd_event_source_set_floating(exit_source, true);
}

int manager_bus_new(const ManagerBus *services, ManagerBus **ret) {
        _cleanup_(manager_bus_freep) ManagerBus *b = calloc(1, sizeof(ManagerBus));
        if (!b)
                return log_oom();
        *b = (ManagerBus) { .manager = services->manager, .transfers = services->transfers,
                            .policy_jobs = services->policy_jobs, .proc_walks = services->proc_walks };
        int r = sd_bus_default_system(&b->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_add_object_vtable(b->bus, NULL, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, manager_vtable, b);
        if (r < 0)
                return log_error_errno(r, "Failed to add the object: %m");
        r = sd_bus_request_name(b->bus, MANAGER_BUS_NAME, 0);
        if (r == -EEXIST) { /* its owner, to name it */
                _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *owner = NULL;
                pid_t pid = 0;
                if (sd_bus_get_name_creds(b->bus, MANAGER_BUS_NAME, SD_BUS_CREDS_PID, &owner) >= 0)
                        (void) sd_bus_creds_get_pid(owner, &pid);
                if (pid > 0)
                        return log_error_errno(r, "The bus name %s is taken, by process %d: is another sectreed "
                                                  "running on this bus?", MANAGER_BUS_NAME, (int) pid);
                return log_error_errno(r, "The bus name %s is taken: is another sectreed running on this bus?",
                                       MANAGER_BUS_NAME);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to acquire the bus name %s: %m", MANAGER_BUS_NAME);
        r = sd_bus_attach_event(b->bus, b->manager->event, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        r = add_exit_handler(b);
        if (r < 0)
                return log_error_errno(r, "Failed to add the exit handler: %m");
        b->announced = current_counts(b->manager);
        manager_set_listener(b->manager, &(ManagerListener) {
                .changes = on_changes,
                .snapshot_created = on_snapshot_created,
                .snapshot_deleted = on_snapshot_deleted,
                .userdata = b,
        });
        *ret = TAKE_PTR(b);
        return 0;
}
