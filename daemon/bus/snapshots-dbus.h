/* snapshots-dbus.h: the snapshot methods of org.sectree1.Manager: CreateSnapshot, ListSnapshots,
 * ExportSnapshot, ImportSnapshot, DeleteSnapshot */
#pragma once

#include <systemd/sd-bus.h>

/* CreateSnapshot(u root_pid, a{sv} options) -> (t id): scanned in a worker, answered when stored */
int method_create_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* ListSnapshots() -> (a(tstuuuuuss) snapshots): those the caller may see */
int method_list_snapshots(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* ExportSnapshot(t id, h fd, s format): answered when written */
int method_export_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* ImportSnapshot(h fd) -> (t id): answered when stored */
int method_import_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* DeleteSnapshot(t id) */
int method_delete_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error);
