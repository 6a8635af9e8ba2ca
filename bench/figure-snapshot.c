/* figure-snapshot.c: figure 4, snapshots of a subtree through the daemon: CreateSnapshot from call
 * to reply against the scan it is made of, and ExportSnapshot in both formats (time and bytes) */
#include <fcntl.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>

#include "daemon-fixture.h"
#include "figures.h"
#include "observe/scanner.h"
#include "snapshot/snapshot-validate.h"
#include "snapshot/snapshot.h"
#include "store/store-snapshot.h"
#include "workload.h"

/*
 * For each size: the workload is built, the real sectreed is started on a private bus, and then,
 * after one warm-up call whose result is checked:
 *   - CreateSnapshot(root of the workload, {"name"}) is timed from sending the call to its reply,
 *     each snapshot deleted again (not timed) so that the database does not grow between passes;
 *   - ExportSnapshot(id, fd, "json" | "sqlite") of one snapshot into a fresh temporary file, from
 *     call to reply; the bytes are the file's size afterwards;
 *   - the floor: a bpf scan of the same subtree in this process with the options a snapshot uses
 *     (argv and exe read), linked — what a snapshot has to read from the kernel and /proc before
 *     it can store anything; the ratio shows what storing and the bus add;
 *   - what the daemon does next, in this process, with that scan: cut to the subtree, renumbered
 *     and checked by snapshot_validate(), then store_snapshot_put() into a state database of its
 *     own (and deleted again, not timed): where the rest of CreateSnapshot goes.
 * The median of the measured passes is reported.
 */

#define CREATE_TARGET_MSEC 150.0
#define DEST "org.sectree1"
#define PATH "/org/sectree1"
#define IFACE "org.sectree1.Manager"

typedef struct SnapshotBench {
        const BenchOptions *opts;
        Report *report;
        Workload *w;
        sd_bus *bus;
        BpfScanner *bpf;
        Store *store;      /* of this process: the parts measured here store into it */
        const char *shape; /* NULL: the default shape, else a note on each row */
} SnapshotBench;

/* One pass of the parts measured in this process, ms each. */
typedef struct SnapshotParts {
        double scan, validate, store;
} SnapshotParts;

static int call_failed(const char *method, int r, const sd_bus_error *error) {
        return log_error_errno(r, "%s failed: %s%s%s", method, error->name ?: "", error->name ? ": " : "",
                               error->message ?: strerror(-r));
}

static int create_snapshot(SnapshotBench *b, uint64_t *ret_id, double *ret_msec) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_message_new_method_call(b->bus, &call, DEST, PATH, IFACE, "CreateSnapshot");
        if (r >= 0)
                r = sd_bus_message_append(call, "ua{sv}", (uint32_t) workload_root(b->w), 1, "name", "s", "bench");
        if (r < 0)
                return log_error_errno(r, "Failed to build CreateSnapshot: %m");
        uint64_t start = now_nsec();
        r = sd_bus_call(b->bus, call, 0, &error, &reply);
        *ret_msec = msec_since(start);
        if (r < 0) {
                r = call_failed("CreateSnapshot", r, &error);
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "t", ret_id);
        return r < 0 ? log_error_errno(r, "Failed to parse the CreateSnapshot reply: %m") : 0;
}

static int delete_snapshot(SnapshotBench *b, uint64_t id) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(b->bus, DEST, PATH, IFACE, "DeleteSnapshot", &error, NULL, "t", id);
        if (r < 0)
                r = call_failed("DeleteSnapshot", r, &error);
        sd_bus_error_free(&error);
        return r;
}

/* Export into a new unlinked temporary file; the fd is returned at offset 0 for checking. */
static int export_snapshot(SnapshotBench *b, uint64_t id, const char *format, int *ret_fd, double *ret_msec,
                           uint64_t *ret_bytes) {
        _cleanup_close_ int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to create a temporary file: %m");
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t start = now_nsec();
        int r = sd_bus_call_method(b->bus, DEST, PATH, IFACE, "ExportSnapshot", &error, NULL, "ths", id, fd, format);
        *ret_msec = msec_since(start);
        if (r < 0) {
                r = call_failed("ExportSnapshot", r, &error);
                sd_bus_error_free(&error);
                return r;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || lseek(fd, 0, SEEK_SET) < 0)
                return log_error_errno(-errno, "Failed to inspect the exported file: %m");
        *ret_bytes = (uint64_t) st.st_size;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The scan a snapshot is made of (the floor), then the daemon's next steps with it. */
static int snapshot_parts(SnapshotBench *b, SnapshotParts *ret) {
        ScanOptions so = SCAN_OPTIONS_DEFAULT;
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *error = NULL;
        uint64_t start = now_nsec(), id = 0;
        int r;

        so.root = workload_root(b->w);
        r = bpf_scanner_scan(b->bpf, &so, &f);
        if (r >= 0)
                r = forest_link(f, NULL);
        ret->scan = msec_since(start);
        if (r < 0)
                return log_error_errno(r, "The floor's scan failed: %m");

        start = now_nsec();
        r = forest_restrict_to_subtree(f, so.root);
        if (r >= 0)
                r = forest_renumber(f);
        if (r >= 0)
                r = snapshot_validate(f, &error);
        ret->validate = msec_since(start);
        if (r < 0)
                return log_error_errno(r, "The scan is no valid snapshot: %s", error ?: strerror(-r));

        start = now_nsec();
        r = store_snapshot_put(b->store, f, 0, false, NULL, now_usec(CLOCK_REALTIME), &id);
        ret->store = msec_since(start);
        if (r < 0)
                return log_error_errno(r, "Failed to store the snapshot: %m");
        r = store_snapshot_delete(b->store, id);
        return r < 0 ? log_error_errno(r, "Failed to delete the snapshot: %m") : 0;
}

/* The warm-up: the snapshot, exported, read back and validated, holds the workload as built. */
static int check_snapshot(SnapshotBench *b, uint64_t id) {
        static const char *const formats[] = { "json", "sqlite" };
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                _cleanup_close_ int fd = -EBADF;
                double msec;
                uint64_t bytes;
                int r = export_snapshot(b, id, formats[i], &fd, &msec, &bytes);
                if (r < 0)
                        return r;
                _cleanup_(forest_freep) Forest *f = NULL;
                _cleanup_free_ char *error = NULL;
                r = snapshot_read_any(fd, &f, &error);
                if (r < 0) {
                        report_check_failed(b->report, "the %s export does not read back: %s", formats[i],
                                            error ?: strerror(-r));
                        continue;
                }
                char buf[256];
                if (!workload_matches_forest(b->w, f, buf, sizeof(buf)))
                        report_check_failed(b->report, "the %s export is not the workload: %s", formats[i], buf);
        }
        return 0;
}

static int add_ms_row(SnapshotBench *b, size_t n, const char *figure, double msec, double floor_msec,
                      const char *target, double limit, const char *note) {
        char name[128];

        snprintf(name, sizeof(name), "%s%s%s", figure, b->shape ? ", " : "", b->shape ?: "");
        return report_add_ms(b->report, n, name, msec, floor_msec > 0 ? msec / floor_msec : 0,
                             floor_msec > 0 ? "floor" : NULL, target,
                             target ? verdict_for(b->opts, n, msec, limit, false) : VERDICT_NONE, note);
}

static int measure_size(SnapshotBench *b, size_t n) {
        unsigned passes = b->opts->passes;
        double create[BENCH_MAX_PASSES], floor[BENCH_MAX_PASSES], json[BENCH_MAX_PASSES], sqlite[BENCH_MAX_PASSES];
        double validate[BENCH_MAX_PASSES], store[BENCH_MAX_PASSES];
        uint64_t json_bytes = 0, sqlite_bytes = 0, id;
        SnapshotParts parts;
        double msec;

        /* warm-up, checked */
        int r = create_snapshot(b, &id, &msec);
        if (r < 0)
                return r;
        r = check_snapshot(b, id);
        if (r >= 0)
                r = delete_snapshot(b, id);
        if (r < 0 || (r = snapshot_parts(b, &parts)) < 0)
                return r;

        for (unsigned i = 0; i < passes; i++) {
                if ((r = snapshot_parts(b, &parts)) < 0 || (r = create_snapshot(b, &id, &create[i])) < 0)
                        return r;
                floor[i] = parts.scan;
                validate[i] = parts.validate;
                store[i] = parts.store;
                _cleanup_close_ int fj = -EBADF, fs = -EBADF;
                if ((r = export_snapshot(b, id, "json", &fj, &json[i], &json_bytes)) < 0 ||
                    (r = export_snapshot(b, id, "sqlite", &fs, &sqlite[i], &sqlite_bytes)) < 0 ||
                    (r = delete_snapshot(b, id)) < 0)
                        return r;
        }
        double floor_msec = median(floor, passes);
        char note[128];
        r = add_ms_row(b, n, "floor: bpf scan, argv + exe", floor_msec, 0, NULL, 0, NULL);
        if (r >= 0)
                r = add_ms_row(b, n, "here: restrict, renumber, validate", median(validate, passes), 0, NULL, 0, NULL);
        if (r >= 0)
                r = add_ms_row(b, n, "here: store_snapshot_put", median(store, passes), 0, NULL, 0, NULL);
        if (r >= 0)
                r = add_ms_row(b, n, "CreateSnapshot, call to reply", median(create, passes), floor_msec, "≤ 150 ms",
                               CREATE_TARGET_MSEC, NULL);
        snprintf(note, sizeof(note), "%" PRIu64 " bytes, %.1f KiB/1k tasks", json_bytes,
                 (double) json_bytes / 1024.0 / ((double) n / 1000));
        if (r >= 0)
                r = add_ms_row(b, n, "ExportSnapshot json", median(json, passes), 0, NULL, 0, note);
        snprintf(note, sizeof(note), "%" PRIu64 " bytes, %.1f KiB/1k tasks", sqlite_bytes,
                 (double) sqlite_bytes / 1024.0 / ((double) n / 1000));
        if (r >= 0)
                r = add_ms_row(b, n, "ExportSnapshot sqlite", median(sqlite, passes), 0, NULL, 0, note);
        return r;
}

/* A workload of n tasks in processes of threads_per_process, the daemon on it, and its rows. */
static int measure_workload(SnapshotBench *b, size_t n, size_t threads_per_process) {
        _cleanup_(workload_freep) Workload *w = NULL;
        _cleanup_(daemon_fixture_freep) DaemonFixture *d = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        WorkloadOptions wo = {
                .n_tasks = n,
                .threads_per_process = threads_per_process,
                .filter_len = b->opts->filter_len,
        };
        DaemonFixtureOptions fo = { .ready_timeout_sec = 120 };
        _cleanup_(store_freep) Store *store = NULL;
        _cleanup_free_ char *dir = NULL;
        int r = workload_new(&wo, &w);
        if (r >= 0)
                r = daemon_fixture_new(&fo, &d);
        if (r >= 0)
                r = daemon_fixture_connect(d, &bus);
        if (r >= 0)
                r = bench_mkdtemp("snapshot", &dir);
        if (r >= 0)
                r = store_open(dir, &store);
        if (r < 0) {
                bench_rm_rf(dir);
                return r;
        }
        b->w = w;
        b->bus = bus;
        b->store = store;
        r = measure_size(b, n);
        b->w = NULL;
        b->bus = NULL;
        b->store = NULL;
        store = store_free(store);
        bench_rm_rf(dir);
        return r;
}

int figure_snapshot_run(const BenchOptions *o, Report *report) {
        _cleanup_(bpf_scanner_freep) BpfScanner *bpf = NULL;
        int r = bpf_scanner_new(&bpf);
        if (r < 0)
                return log_error_errno(r, "Failed to load the bpf scanner: %m");
        SnapshotBench b = { .opts = o, .report = report, .bpf = bpf };
        for (size_t i = 0; r >= 0 && i < o->n_sizes; i++)
                r = measure_workload(&b, o->sizes[i], o->threads_per_process);
        /* Processes of one thread each: where the per-process work (argv, exe, a row each) shows. */
        b.shape = "1-thread processes";
        if (r >= 0 && o->threads_per_process != 1)
                r = measure_workload(&b, o->smoke ? o->sizes[0] : o->target_size, 1);
        return r;
}
