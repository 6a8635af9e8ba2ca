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

int bus_log_error(int r, const sd_bus_error *error, const char *what) {
        if (sd_bus_error_is_set(error)) {
                /* the message may quote a process's name */
                _cleanup_free_ char *name = str_escape(error->name),
                                    *message = str_escape(error->message ? error->message : "(no message)");
                if (!name || !message)
                        return log_oom();
                return log_error_errno(r, "sectreectl: %s: %s%s", name, message, error_hint(error));
        }
        return ctl_error_errno(r, "Failed to %s: %m", what);
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
