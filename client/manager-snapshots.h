/* manager-snapshots.h: typed calls of the Manager's snapshot methods, and the records they return */
#pragma once

#include <systemd/sd-bus.h>

#include "core/util.h"

/* One element of ListSnapshots: a(tstuuuuuss). */
typedef struct SnapshotRecord {
        uint64_t id;
        char *name; /* "" for none */
        uint64_t created_usec; /* CLOCK_REALTIME */
        uint32_t owner_uid, root_pid; /* root_pid 0: the whole machine */
        uint32_t processes, threads, filters;
        char *backend, *identity;
} SnapshotRecord;

typedef struct SnapshotList {
        SnapshotRecord *items; /* sorted by id */
        size_t n, allocated;
} SnapshotList;

void snapshot_list_done(SnapshotList *l);

/* What CreateSnapshot is asked for. */
typedef struct SnapshotOptions {
        uint32_t root_pid; /* 0: the whole machine */
        const char *name;  /* NULL: none */
        bool include_argv;
        bool alone;        /* root_pid's process without its descendants */
} SnapshotOptions;

/* Each call logs its failure once (D-Bus errors as "NAME: message") and returns negative errno. */
int manager_create_snapshot(sd_bus *bus, const SnapshotOptions *o, uint64_t *ret_id);
int manager_list_snapshots(sd_bus *bus, SnapshotList *ret);
int manager_delete_snapshot(sd_bus *bus, uint64_t id);
/* The daemon reads the snapshot from fd (any format). */
int manager_import_snapshot(sd_bus *bus, int fd, uint64_t *ret_id);
/* The daemon writes snapshot id into fd in format ("sqlite" or "json") and closes its copy; the
 * call returns when it has. For a pipe, use manager_export_snapshot_to() instead: the caller
 * must read while the daemon writes. */
int manager_export_snapshot(sd_bus *bus, uint64_t id, int fd, const char *format);
/* Export through a pipe: copy everything the daemon writes to out_fd until it has replied and
 * closed its end. Bounded by the bus's method timeout. */
int manager_export_snapshot_to(sd_bus *bus, uint64_t id, const char *format, int out_fd);
