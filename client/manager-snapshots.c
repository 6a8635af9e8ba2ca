/* manager-snapshots.c: typed calls of the Manager's snapshot methods, and the records they return */
#include "manager-snapshots.h"

#include <fcntl.h>
#include <poll.h>
#include <time.h>

#include "bus.h"
#include "ctl-log.h"
#include "snapshot/snapshot.h"

/* Taking, importing or exporting a large snapshot may take longer than sd-bus's default 25 s. */
#define SNAPSHOT_CALL_TIMEOUT_USEC (120 * UINT64_C(1000000))
/* After its reply, how long the daemon may take to close its end of an export pipe. */
#define EXPORT_EOF_TIMEOUT_MSEC 10000

static void snapshot_record_done(SnapshotRecord *s) {
        free(s->name);
        free(s->backend);
        free(s->identity);
}

void snapshot_list_done(SnapshotList *l) {
        for (size_t i = 0; i < l->n; i++)
                snapshot_record_done(&l->items[i]);
        free(l->items);
        *l = (SnapshotList) {};
}

static int new_call(sd_bus *bus, const char *method, sd_bus_message **ret) {
        int r = sd_bus_message_new_method_call(bus, ret, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH,
                                               SECTREE_MANAGER_INTERFACE, method);
        if (r < 0)
                return ctl_error_errno(r, "Failed to build a %s call: %m", method);
        return 0;
}

/* Send m and wait for its reply, with the snapshot timeout; logs a failure. */
static int call(sd_bus *bus, sd_bus_message *m, const char *method, sd_bus_message **reply) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_call(bus, m, SNAPSHOT_CALL_TIMEOUT_USEC, &error, reply);
        if (r < 0) {
                char what[64];
                snprintf(what, sizeof(what), "call %s", method);
                return bus_log_error(r, &error, what);
        }
        return 0;
}

static int append_options(sd_bus_message *m, const SnapshotOptions *o) {
        int r = sd_bus_message_append(m, "u", o->root_pid);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        if (o->name) {
                r = sd_bus_message_append(m, "{sv}", "name", "s", o->name);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_append(m, "{sv}", "include_argv", "b", (int) o->include_argv);
        if (r >= 0 && o->alone)
                r = sd_bus_message_append(m, "{sv}", "descendants", "b", 0);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int manager_create_snapshot(sd_bus *bus, const SnapshotOptions *o, uint64_t *ret_id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int r = new_call(bus, "CreateSnapshot", &m);
        if (r < 0)
                return r;
        r = append_options(m, o);
        if (r < 0)
                return ctl_error_errno(r, "Failed to build a CreateSnapshot call: %m");
        r = call(bus, m, "CreateSnapshot", &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "t", ret_id);
        return r < 0 ? bus_log_parse_error(r, "CreateSnapshot") : 0;
}

static int dup_string(const char *s, char **ret) {
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

static int read_snapshot_record(sd_bus_message *m, SnapshotRecord *s) {
        const char *name, *backend, *identity;
        int r = sd_bus_message_read(m, "(tstuuuuuss)", &s->id, &name, &s->created_usec, &s->owner_uid, &s->root_pid,
                                    &s->processes, &s->threads, &s->filters, &backend, &identity);
        if (r <= 0)
                return r;
        if ((r = dup_string(name, &s->name)) < 0 || (r = dup_string(backend, &s->backend)) < 0 ||
            (r = dup_string(identity, &s->identity)) < 0)
                return r;
        return 1;
}

static int snapshot_record_cmp(const void *a, const void *b) {
        const SnapshotRecord *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

static int read_snapshot_list(sd_bus_message *m, SnapshotList *l) {
        int r = sd_bus_message_enter_container(m, 'a', "(tstuuuuuss)");
        if (r < 0)
                return r;
        for (;;) {
                if (GROW(l->items, l->allocated, l->n + 1) < 0)
                        return -ENOMEM;
                l->items[l->n] = (SnapshotRecord) {};
                r = read_snapshot_record(m, &l->items[l->n]);
                if (r < 0)
                        l->n++; /* so that snapshot_list_done() frees what was read */
                if (r <= 0)
                        break;
                l->n++;
        }
        if (r < 0)
                return r;
        qsort_safe(l->items, l->n, sizeof(SnapshotRecord), snapshot_record_cmp);
        return sd_bus_message_exit_container(m);
}

int manager_list_snapshots(sd_bus *bus, SnapshotList *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call_manager(bus, "ListSnapshots", &reply, "");
        if (r < 0)
                return r;
        _cleanup_(snapshot_list_done) SnapshotList l = {};
        r = read_snapshot_list(reply, &l);
        if (r < 0)
                return bus_log_parse_error(r, "ListSnapshots");
        *ret = l;
        l = (SnapshotList) {};
        return 0;
}

int manager_delete_snapshot(sd_bus *bus, uint64_t id) {
        return bus_call_manager(bus, "DeleteSnapshot", NULL, "t", id);
}

int manager_import_snapshot(sd_bus *bus, int fd, uint64_t *ret_id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int r = new_call(bus, "ImportSnapshot", &m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "h", fd);
        if (r < 0)
                return ctl_error_errno(r, "Failed to build an ImportSnapshot call: %m");
        r = call(bus, m, "ImportSnapshot", &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "t", ret_id);
        return r < 0 ? bus_log_parse_error(r, "ImportSnapshot") : 0;
}

/* An ExportSnapshot call carrying a copy of fd (sd-bus duplicates it). */
static int new_export_call(sd_bus *bus, uint64_t id, int fd, const char *format, sd_bus_message **ret) {
        int r = new_call(bus, "ExportSnapshot", ret);
        if (r < 0)
                return r;
        r = sd_bus_message_append(*ret, "ths", id, fd, format);
        if (r < 0)
                return ctl_error_errno(r, "Failed to build an ExportSnapshot call: %m");
        return 0;
}

int manager_export_snapshot(sd_bus *bus, uint64_t id, int fd, const char *format) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = new_export_call(bus, id, fd, format, &m);
        return r < 0 ? r : call(bus, m, "ExportSnapshot", NULL);
}

/* ---- exporting through a pipe: read while the call is pending ---- */

typedef struct ExportPipe {
        int in;           /* our read end */
        int out;          /* where the bytes go */
        bool eof;         /* the daemon closed its end */
        bool replied;
        int result;       /* of the call, once replied */
        sd_bus_error error;
        uint64_t eof_deadline_usec; /* CLOCK_MONOTONIC, once replied */
} ExportPipe;

static void export_pipe_done(ExportPipe *p) {
        sd_bus_error_free(&p->error);
}

static int on_export_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ExportPipe *p = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        p->replied = true;
        p->eof_deadline_usec = now_usec(CLOCK_MONOTONIC) + EXPORT_EOF_TIMEOUT_MSEC * UINT64_C(1000);
        if (e)
                p->result = sd_bus_error_copy(&p->error, e);
        return 0;
}

static int pipe_copy_some(ExportPipe *p) {
        char buf[64 * 1024];
        ssize_t k = read(p->in, buf, sizeof(buf));
        if (k < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : ctl_error_errno(-errno, "Failed to read the export: %m");
        if (k == 0) {
                p->eof = true;
                return 0;
        }
        int r = write_full_fd(p->out, buf, (size_t) k);
        return r < 0 ? ctl_error_errno(r, "Failed to write the export: %m") : 0;
}

/* How long to poll: until the bus's next timeout, or the end-of-file deadline once replied. */
static int export_poll_timeout(sd_bus *bus, const ExportPipe *p) {
        uint64_t until = UINT64_MAX, now = now_usec(CLOCK_MONOTONIC);
        if (sd_bus_get_timeout(bus, &until) < 0)
                until = UINT64_MAX;
        if (p->replied && p->eof_deadline_usec < until)
                until = p->eof_deadline_usec;
        if (until == UINT64_MAX)
                return -1;
        return until <= now ? 0 : (int) ((until - now + 999) / 1000);
}

static int export_wait(sd_bus *bus, ExportPipe *p) {
        struct pollfd fds[2] = {
                { .fd = sd_bus_get_fd(bus), .events = (short) sd_bus_get_events(bus) },
                { .fd = p->in, .events = POLLIN },
        };
        if (poll(fds, p->eof ? 1 : 2, export_poll_timeout(bus, p)) < 0 && errno != EINTR)
                return ctl_error_errno(-errno, "Failed to wait for the export: %m");
        if (!p->eof && fds[1].revents)
                return pipe_copy_some(p);
        return 0;
}

static int export_loop(sd_bus *bus, ExportPipe *p) {
        while (!(p->replied && (p->eof || p->result < 0))) {
                int r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return ctl_error_errno(r, "Failed to process the bus: %m");
                if (r > 0)
                        continue;
                if (p->replied && now_usec(CLOCK_MONOTONIC) >= p->eof_deadline_usec)
                        return ctl_error_errno(-ETIMEDOUT, "The daemon did not close the export pipe.");
                r = export_wait(bus, p);
                if (r < 0)
                        return r;
        }
        return 0;
}

int manager_export_snapshot_to(sd_bus *bus, uint64_t id, const char *format, int out_fd) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_close_ int in = -1;
        _cleanup_(export_pipe_done) ExportPipe p = { .out = out_fd };
        int fds[2];

        if (pipe2(fds, O_CLOEXEC) < 0)
                return ctl_error_errno(-errno, "Failed to create a pipe: %m");
        in = fds[0];
        int r = new_export_call(bus, id, fds[1], format, &m);
        close(fds[1]); /* the message holds its own copy: EOF comes when the daemon closes its copy */
        if (r < 0)
                return r;
        p.in = in;
        r = sd_bus_call_async(bus, &slot, m, on_export_reply, &p, SNAPSHOT_CALL_TIMEOUT_USEC);
        if (r < 0)
                return ctl_error_errno(r, "Failed to call ExportSnapshot: %m");
        m = sd_bus_message_unref(m); /* drop our copy of the write end too */
        r = export_loop(bus, &p);
        if (r < 0)
                return r;
        return p.result < 0 ? bus_log_error(p.result, &p.error, "call ExportSnapshot") : 0;
}
