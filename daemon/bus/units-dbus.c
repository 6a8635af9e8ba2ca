/* units-dbus.c: ListProcessUnits(): the systemd unit, user unit and machine of each process of the
 * live forest the caller may see, read from the process's cgroup at the call, in a worker lane; and
 * ListUnfilteredProcesses(): the same, with thread counts, of the processes it does not hold */
#include "bus/units-dbus.h"

#include "bus/bus-args.h"
#include "service/access.h"
#include "service/proc-walks.h"
#include "service/units.h"
#include "snapshot/snapshot-text.h"

/* One entry: pid, (the process's threads, for ListUnfilteredProcesses,) unit, user unit, machine
 * ("" for none, sanitized: D-Bus strings are UTF-8) and the owner of the user slice
 * (UNIT_OWNER_NONE). */
static int append_process_unit(sd_bus_message *reply, const PidUnit *p, bool with_threads) {
        const ProcessUnit *u = &p->unit;
        _cleanup_free_ char *unit = snapshot_utf8_sanitize(u->unit ?: ""),
                            *user_unit = snapshot_utf8_sanitize(u->user_unit ?: ""),
                            *machine = snapshot_utf8_sanitize(u->machine ?: "");
        if (!unit || !user_unit || !machine)
                return -ENOMEM;
        if (with_threads)
                return sd_bus_message_append(reply, "(uusssu)", (uint32_t) p->pid, p->threads, unit, user_unit,
                                             machine, u->owner);
        return sd_bus_message_append(reply, "(usssu)", (uint32_t) p->pid, unit, user_unit, machine, u->owner);
}

/* The worker read the units: the reply, or the error. */
static void answer_units(ProcWalk *j, sd_bus_message *msg) {
        bool with_threads = j->kind == PROC_WALK_UNFILTERED;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = j->r;
        if (r >= 0)
                r = bus_list_reply_begin(msg, with_threads ? "(uusssu)" : "(usssu)", &reply);
        for (size_t i = 0; r >= 0 && i < j->n; i++)
                r = append_process_unit(reply, &j->units[i], with_threads);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        bus_answer(msg, reply, r, with_threads ? "ListUnfilteredProcesses" : "ListProcessUnits");
}

static void on_units_read(ProcWalk *j, void *userdata) {
        answer_units(j, userdata);
}

/* Four reads of each process's cgroup (ListProcessUnits: of each tracked one; ListUnfilteredProcesses:
 * of each other one, after a walk of every pid of /proc), root's calls too: in a worker lane
 * (proc-walks.h). */
static int start_units_walk(sd_bus_message *msg, ManagerBus *b, ProcWalkKind kind, sd_bus_error *error) {
        CALLER_CLEANUP Caller c = {};
        uint64_t cpu = thread_cpu_usec();
        const Forest *f;
        int r = bus_call_begin(msg, b->manager, &c, &f, error);
        if (r < 0)
                return r;
        return bus_proc_walk_start(b, msg, f, &c, kind, 0, NULL, NULL, cpu, on_units_read, error);
}

static int method_list_process_units(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return start_units_walk(msg, userdata, PROC_WALK_UNITS, error);
}

static int method_list_unfiltered_processes(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return start_units_walk(msg, userdata, PROC_WALK_UNFILTERED, error);
}

static const sd_bus_vtable units_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("ListProcessUnits", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(usssu)", processes),
                                method_list_process_units, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListUnfilteredProcesses", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(uusssu)", processes),
                                method_list_unfiltered_processes, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END
};

int units_bus_connect(ManagerBus *b) {
        int r = sd_bus_add_object_vtable(b->bus, NULL, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, units_vtable, b);
        if (r < 0)
                return log_error_errno(r, "Failed to add ListProcessUnits and ListUnfilteredProcesses to the bus: %m");
        return 0;
}
