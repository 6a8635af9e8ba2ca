/* bus.c: the client's bottom layer: the bus connection, calling the manager, mapping D-Bus errors to lines */
#include "bus.h"

#include <stdarg.h>

#include "core/escape.h"
#include "ctl-log.h"

/* What to do about an error a user meets: the daemon is not there. */
static const char *error_hint(const sd_bus_error *error) {
        if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                return " (is sectreed running? systemctl start sectreed)";
        return "";
}

/* What the user asked for, as systemctl says it ("Failed to start ..."), by the method that failed. */
static const struct {
        const char *method, *action;
} method_actions[] = {
        { "ListTasks", "list the tasks" },
        { "ListStaleTasks", "list the stale tasks" },
        { "ListFilters", "list the filters" },
        { "ListListeners", "list the listeners" },
        { "ListSubtree", "list the subtree" },
        { "ListSubtreeProcesses", "list the subtree's processes" },
        { "ListProcessUnits", "list the processes' units" },
        { "ListUnfilteredProcesses", "list the processes without filters" },
        { "GetFilter", "get the filter" },
        { "GetTaskChain", "get the task's chain" },
        { "GetPolicy", "get the task's policy" },
        { "WhoCan", "ask who can make the call" },
        { "Audit", "audit the task" },
        { "Rescan", "rescan" },
        { "CreateSnapshot", "take the snapshot" },
        { "ListSnapshots", "list the snapshots" },
        { "DeleteSnapshot", "delete the snapshot" },
        { "ImportSnapshot", "import the snapshot" },
        { "ExportSnapshot", "export the snapshot" },
        { "Restore", "restore the snapshot" },
        { "ListRestores", "list the restores" },
        { "ReleaseRestore", "release the restore" },
};

/* "call METHOD" names what the user asked for; any other what is kept. */
static const char *error_action(const char *what) {
        const char *method = strncmp(what, "call ", 5) == 0 ? what + 5 : NULL;
        for (size_t i = 0; method && i < ELEMENTSOF(method_actions); i++)
                if (streq(method, method_actions[i].method))
                        return method_actions[i].action;
        return what;
}

int bus_log_error(int r, const sd_bus_error *error, const char *what) {
        if (sd_bus_error_is_set(error)) {
                /* the message may quote a process's name; the error's name is for programs (busctl
                 * shows it), the message for the user */
                _cleanup_free_ char *message = str_escape(error->message ? error->message : error->name);
                if (!message)
                        return log_oom();
                return log_error_errno(r, "sectreectl: Failed to %s: %s%s", error_action(what), message,
                                       error_hint(error));
        }
        return ctl_error_errno(r, "Failed to %s: %m", error_action(what));
}

int bus_log_parse_error(int r, const char *method) {
        return ctl_error_errno(r, "Failed to parse the reply of %s: %m", method);
}

int bus_call_manager(sd_bus *bus, const char *method, sd_bus_message **reply, const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;
        va_start(ap, types);
        int r = sd_bus_call_methodv(bus, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE, method,
                                    &error, reply, types, ap);
        va_end(ap);
        if (r < 0) {
                char what[64];
                snprintf(what, sizeof(what), "call %s", method);
                return bus_log_error(r, &error, what);
        }
        return 0;
}

int bus_open_system(sd_bus **ret) {
        int r = sd_bus_open_system(ret);
        if (r < 0)
                return ctl_error_errno(r, "Failed to connect to the system bus: %m (is dbus running? "
                                          "DBUS_SYSTEM_BUS_ADDRESS names another bus)");
        return 0;
}
