/* subtree-processes.c: every process of a subtree, filtered or not, as the daemon lists them
 * (ListSubtreeProcesses), for `tree PID` to show as snapshots do and for monitor --subtree */
#include "subtree-processes.h"

#include "bus.h"

static int read_subtree_processes(sd_bus_message *reply, SubtreeProcess **ret, size_t *ret_n) {
        _cleanup_free_ SubtreeProcess *v = NULL;
        size_t n = 0, allocated = 0;
        const char *comm;
        uint32_t pid, ppid;
        int r = sd_bus_message_enter_container(reply, 'a', "(uus)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(uus)", &pid, &ppid, &comm)) > 0) {
                if (pid == 0 || pid > INT32_MAX || ppid > INT32_MAX)
                        return -EBADMSG;
                if (GROW(v, allocated, n + 1) < 0)
                        return -ENOMEM;
                v[n] = (SubtreeProcess) { .pid = pid, .ppid = ppid };
                snprintf(v[n++].comm, sizeof(v->comm), "%s", comm);
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

static int call_subtree_processes(sd_bus *bus, uint32_t root, sd_bus_error *error, SubtreeProcess **ret,
                                  size_t *ret_n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_call_method(bus, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE,
                                   "ListSubtreeProcesses", error, &reply, "u", root);
        if (r < 0)
                return r;
        r = read_subtree_processes(reply, ret, ret_n);
        return r < 0 ? bus_log_parse_error(r, "ListSubtreeProcesses") : 1;
}

int manager_list_subtree_processes(sd_bus *bus, uint32_t root, SubtreeProcess **ret, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = call_subtree_processes(bus, root, &error, ret, ret_n);
        if (r < 0 && sd_bus_error_is_set(&error))
                return bus_log_error(r, &error, "call ListSubtreeProcesses");
        return r < 0 ? r : 0;
}

static int add_unfiltered(Forest *f, const SubtreeProcess *e) {
        Process *p;
        Task *t;
        int r = forest_add_process(f, (pid_t) e->pid, &p);
        if (r < 0)
                return r;
        p->ppid = (pid_t) e->ppid;
        memcpy(p->comm, e->comm, sizeof(p->comm));
        r = process_add_thread(p, (pid_t) e->pid, &t);
        if (r < 0)
                return r;
        t->mode = TASK_MODE_DISABLED;
        return 0;
}

int forest_add_subtree_processes(Forest *f, const SubtreeProcess *v, size_t n) {
        bool added = false;
        for (size_t i = 0; i < n; i++) {
                if (forest_find_process(f, (pid_t) v[i].pid))
                        continue;
                int r = add_unfiltered(f, &v[i]);
                if (r < 0)
                        return r;
                added = true;
        }
        return added ? forest_link(f, NULL) : 0;
}

int subtree_has_process(sd_bus *bus, pid_t root, pid_t pid) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ SubtreeProcess *v = NULL;
        size_t n = 0;
        int r = call_subtree_processes(bus, (uint32_t) root, &error, &v, &n);
        if (r < 0 && sd_bus_error_has_names(&error, "org.sectree1.Error.NoSuchTask", SD_BUS_ERROR_ACCESS_DENIED))
                return 0; /* root is gone or hidden: nothing of it is shown */
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (v[i].pid == (uint32_t) pid)
                        return 1;
        return 0;
}
