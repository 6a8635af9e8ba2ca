/* snapshots-dbus.c: the snapshot methods of org.sectree1.Manager: CreateSnapshot, ListSnapshots,
 * ExportSnapshot, ImportSnapshot, DeleteSnapshot */
#include "bus/snapshots-dbus.h"

#include <errno.h>
#include <string.h>

#include "bus/bus-args.h"
#include "bus/bus-errors.h"
#include "service/access.h"
#include "service/snapshot-transfers.h"
#include "service/snapshots.h"
#include "service/visibility.h"
#include "snapshot/snapshot.h"

/* The named error for what a snapshot call returned (message: what the call said, may be NULL). */
static int bus_snapshot_error(sd_bus_error *error, int r, const char *message, uint64_t id) {
        if (r == -ENOENT)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_SNAPSHOT, "No snapshot with id %" PRIu64 ".", id);
        int k = bus_error_set_known(error, BUS_ERROR_SNAPSHOT, r, message);
        if (k < 0)
                return k;
        if (message)
                return sd_bus_error_setf(error, SD_BUS_ERROR_IO_ERROR, "%s", message);
        if (r == -ENOSPC)
                return sd_bus_error_setf(error, SD_BUS_ERROR_IO_ERROR,
                                         "The file system of the state database is full (%s): every change of it, "
                                         "a deletion too, needs room to be written first. Free some space there, "
                                         "then try again.", strerror(-r));
        return sd_bus_error_setf(error, SD_BUS_ERROR_IO_ERROR, "Snapshot operation failed: %s", strerror(-r));
}

static int read_create_option(sd_bus_message *msg, const char *key, void *userdata, sd_bus_error *error) {
        SnapshotCreateOptions *o = userdata;
        int b = 0, r;
        if (streq(key, "name")) {
                r = bus_read_option(msg, key, "s", &o->name, error);
                if (r >= 0 && strlen(o->name) > SNAPSHOT_MAX_NAME)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Option \"name\" is longer than %d bytes.", SNAPSHOT_MAX_NAME);
                return r;
        }
        if (streq(key, "include_argv")) {
                r = bus_read_option(msg, key, "b", &b, error);
                if (r >= 0)
                        o->include_argv = b;
                return r;
        }
        if (streq(key, "descendants")) {
                r = bus_read_option(msg, key, "b", &b, error);
                if (r >= 0)
                        o->descendants = b;
                return r;
        }
        return bus_unknown_option(error, key);
}

static int read_create_options(sd_bus_message *msg, SnapshotCreateOptions *o, sd_bus_error *error) {
        *o = (SnapshotCreateOptions) { .include_argv = true, .descendants = true };
        int r = bus_read_options(msg, read_create_option, o, error);
        if (o->name && !*o->name)
                o->name = NULL;
        return r;
}

static void on_transfer_done(int r, uint64_t id, const char *message, void *userdata);

int method_create_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        CALLER_CLEANUP Caller c = {};
        SnapshotCreateOptions o;
        _cleanup_free_ char *message = NULL;
        uint32_t root;
        int r = sd_bus_message_read(msg, "u", &root);
        if (r < 0 || (r = read_create_options(msg, &o, error)) < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        if (root > SNAPSHOT_MAX_PID)
                return sd_bus_error_setf(error, ERROR_NO_SUCH_TASK, "No process with pid %" PRIu32 ".", root);
        pid_t tgid = root > 0 ? proc_process_of(root) : 0;
        if (tgid > 0)
                root = (uint32_t) tgid; /* a thread stands for its process */
        r = snapshot_transfers_create(b->transfers, &c, (pid_t) root, &o, on_transfer_done, sd_bus_message_ref(msg), &message);
        if (r < 0)
                sd_bus_message_unref(msg);
        if (r == -EIO)
                return sd_bus_error_setf(error, ERROR_SCAN_FAILED, "%s", message ?: "The scan failed.");
        if (r < 0)
                return bus_snapshot_error(error, r, message, 0);
        return 1;
}

static int append_snapshot_entry(sd_bus_message *reply, const StoredSnapshot *s) {
        return sd_bus_message_append(reply, "(tstuuuuuss)", s->id, s->name ?: "", s->created_usec,
                                     (uint32_t) s->owner_uid, (uint32_t) s->root_pid, s->processes, s->threads,
                                     s->filters, s->backend, s->identity);
}

int method_list_snapshots(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        StoredSnapshot *l = NULL;
        size_t n = 0;
        int r = caller_from_message(msg, &c);
        if (r < 0 || (r = manager_snapshot_list(b->manager, &c, &l, &n)) < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(tstuuuuuss)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = append_snapshot_entry(reply, &l[i]);
        stored_snapshots_free(l, n);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

/* The end of a snapshot's scan and storing, export or import: the reply to the message kept for it. The message goes first: it
 * holds a copy of the caller's fd, and the caller must see the end of its pipe before the reply. */
static void on_transfer_done(int r, uint64_t id, const char *message, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = userdata, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        bool with_id = !streq(sd_bus_message_get_member(msg), "ExportSnapshot"); /* Create, Import */
        int k;
        if (r == -EIO && streq(sd_bus_message_get_member(msg), "CreateSnapshot")) /* the scan failed */
                k = sd_bus_message_new_method_errorf(msg, &reply, ERROR_SCAN_FAILED, "%s", message ?: "The scan failed.");
        else if (r < 0) {
                (void) bus_snapshot_error(&error, r, message, id);
                k = sd_bus_message_new_method_errorf(msg, &reply, error.name, "%s", error.message);
        } else
                k = sd_bus_message_new_method_return(msg, &reply);
        if (k >= 0 && r >= 0 && with_id)
                k = sd_bus_message_append(reply, "t", id);
        msg = sd_bus_message_unref(msg);
        if (k >= 0)
                k = sd_bus_send(NULL, reply, NULL);
        if (k < 0)
                log_debug_errno(k, "Could not reply to a snapshot transfer: %m");
}

int method_export_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_free_ char *message = NULL;
        const char *format_name;
        uint64_t id;
        int fd;
        int r = sd_bus_message_read(msg, "ths", &id, &fd, &format_name);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        SnapshotFormat format = snapshot_format_from_string(format_name);
        if (format < 0) {
                char q[BUS_QUOTE_MAX + 4];
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown snapshot format \"%s\" (expected \"sqlite\" or \"json\").",
                                         bus_quote(format_name, q));
        }
        r = snapshot_transfers_export(b->transfers, &c, id, fd, format, on_transfer_done, sd_bus_message_ref(msg), &message);
        if (r < 0) {
                sd_bus_message_unref(msg);
                return bus_snapshot_error(error, r, message, id);
        }
        return 1;
}

int method_import_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        CALLER_CLEANUP Caller c = {};
        _cleanup_free_ char *message = NULL;
        int fd;
        int r = sd_bus_message_read(msg, "h", &fd);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        r = snapshot_transfers_import(b->transfers, &c, fd, on_transfer_done, sd_bus_message_ref(msg), &message);
        if (r < 0) {
                sd_bus_message_unref(msg);
                return bus_snapshot_error(error, r, message, 0);
        }
        return 1;
}

int method_delete_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        ManagerBus *b = userdata;
        CALLER_CLEANUP Caller c = {};
        uint64_t id;
        int r = sd_bus_message_read(msg, "t", &id);
        if (r < 0 || (r = caller_from_message(msg, &c)) < 0)
                return r;
        r = manager_snapshot_delete(b->manager, &c, id);
        if (r < 0)
                return bus_snapshot_error(error, r, NULL, id);
        return sd_bus_reply_method_return(msg, NULL);
}
