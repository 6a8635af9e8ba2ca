/* units-dbus.c: ListProcessUnits(): the systemd unit, user unit and machine of each process of the
 * live forest the caller may see, read from the process's cgroup at the call */
#include "bus/units-dbus.h"

#include "bus/bus-args.h"
#include "service/access.h"
#include "service/units.h"
#include "snapshot/snapshot-text.h"

/* One entry: pid, unit, user unit, machine ("" for none, sanitized: D-Bus strings are UTF-8) and
 * the owner of the user slice (UNIT_OWNER_NONE). A process that is gone by now is left out. */
static int append_process_unit(sd_bus_message *reply, pid_t pid) {
        _cleanup_(process_unit_done) ProcessUnit u = { .owner = UNIT_OWNER_NONE };
        int r = process_unit_read(pid, &u);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        _cleanup_free_ char *unit = snapshot_utf8_sanitize(u.unit ?: ""),
                            *user_unit = snapshot_utf8_sanitize(u.user_unit ?: ""),
                            *machine = snapshot_utf8_sanitize(u.machine ?: "");
        if (!unit || !user_unit || !machine)
                return -ENOMEM;
        return sd_bus_message_append(reply, "(usssu)", (uint32_t) pid, unit, user_unit, machine, u.owner);
}

static int method_list_process_units(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const Forest *f;
        int r = bus_list_begin(msg, m, "(usssu)", &c, &f, &reply, error);
        for (size_t i = 0; r >= 0 && i < f->n_processes; i++)
                if (caller_may_see(&c, f->processes[i]))
                        r = append_process_unit(reply, f->processes[i]->pid);
        return bus_list_end(reply, r);
}

static const sd_bus_vtable units_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("ListProcessUnits", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(usssu)", processes),
                                method_list_process_units, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END
};

int units_bus_connect(Manager *m, sd_bus *bus) {
        int r = sd_bus_add_object_vtable(bus, NULL, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, units_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add ListProcessUnits to the bus: %m");
        return 0;
}
