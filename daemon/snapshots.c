/* snapshots.c: snapshots for bus callers: taken with one scan, stored in the state database, and
 * exported into / imported from the callers' fds
 *
 * A transfer to or from a pipe or socket never blocks the event loop: the fd is made non-blocking
 * and served from sd-event as it becomes ready, with a deadline (SNAPSHOT_TRANSFER_TIMEOUT_USEC).
 * A regular file is read or written at once (it cannot block for long), and an export that fails
 * half-way truncates the file back to where it started, so no partial file looks complete. */
#include "snapshots.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "procinfo.h"
#include "snapshot-json.h"
#include "snapshot-sqlite.h"
#include "snapshot-validate.h"

#define SNAPSHOT_SCAN_ATTEMPTS 3

typedef struct SnapshotTransfer SnapshotTransfer;
struct SnapshotTransfer {
        Manager *manager;
        SnapshotTransfer *next;
        uid_t uid;
        bool privileged;
        bool import;
        int fd;          /* our dup of the caller's */
        int saved_flags; /* the fd's status flags before O_NONBLOCK, or -1 */
        char *data;      /* import: what was read; export: the file image */
        size_t size, pos, allocated;
        sd_event_source *io, *timer;
        SnapshotTransferDone done;
        void *userdata;
};

static int set_message(char **ret_message, const char *format, ...) _printf_(2, 3);
static int set_message(char **ret_message, const char *format, ...) {
        if (!ret_message)
                return 0;
        va_list ap;
        va_start(ap, format);
        int k = vasprintf(ret_message, format, ap);
        va_end(ap);
        if (k < 0)
                *ret_message = NULL;
        return 0;
}

static const StoreSnapshotQuota *quota_for(const Caller *c) {
        static const StoreSnapshotQuota user_quota = {
                .snapshots = SNAPSHOTS_MAX_PER_UID,
                .threads = SNAPSHOTS_MAX_THREADS_PER_UID,
                .instructions = SNAPSHOTS_MAX_INSNS_PER_UID,
        };
        return c->privileged ? NULL : &user_quota;
}

static int quota_message(char **ret_message) {
        return set_message(ret_message,
                           "You hold as many snapshots as you may (at most %d, %d threads and %u filter instructions "
                           "in all): delete some first.",
                           SNAPSHOTS_MAX_PER_UID, SNAPSHOTS_MAX_THREADS_PER_UID, SNAPSHOTS_MAX_INSNS_PER_UID);
}

/* Creating */

static int scan_subtree(Manager *m, const ScanOptions *opts, Forest **ret) {
        if (m->backend == BACKEND_BPF) {
                int r = bpf_scanner_scan(m->scanner, opts, ret);
                if (r >= 0)
                        (*ret)->snapshot.consistency = SNAPSHOT_CONSISTENCY_ITERATOR;
                return r;
        }
        /* The scanner says FROZEN when it could stop every task first. */
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        int r = ptrace_scan(opts, ret, &bad, &n_bad);
        for (size_t i = 0; r >= 0 && i < n_bad; i++)
                log_debug_errno(bad[i].error, "Snapshot: could not read thread %d: %m", bad[i].tid);
        return r;
}

/* The first process of the snapshot the caller could not trace, or 0. */
static pid_t first_hidden_process(Caller *c, const Forest *f) {
        for (size_t i = 0; i < f->n_processes; i++)
                if (!caller_may_see_process(c, f->processes[i]->pid))
                        return f->processes[i]->pid;
        return 0;
}

static int check_root(Caller *c, pid_t root, char **ret_message) {
        ProcStatus st;
        if (root == 0) {
                if (c->privileged)
                        return 0;
                set_message(ret_message, "Only root may snapshot the whole machine.");
                return -EACCES;
        }
        if (root < 0 || root > SNAPSHOT_MAX_PID || proc_read_status(root, &st) < 0 || st.tgid != root) {
                set_message(ret_message, "No process with pid %d.", root);
                return -ESRCH;
        }
        if (!caller_may_see_process(c, root)) {
                set_message(ret_message, "Process %d is not one you could trace.", root);
                return -EACCES;
        }
        return 0;
}

/* One scan, linked and cut to the subtree (a process whose parent exited during the pass cannot be
 * placed in it), then made snapshot-local and checked with the validator every import goes through.
 * -EAGAIN (with *ret_error) when the result is not consistent: the caller scans again. */
static int scan_once(Manager *m, const ScanOptions *opts, Forest **ret, char **ret_error) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = scan_subtree(m, opts, &f);
        if (r < 0)
                return r;
        r = forest_link(f, ret_error);
        if (r == -EINVAL)
                return -EAGAIN;
        if (r >= 0 && opts->root > 0)
                r = forest_restrict_to_subtree(f, opts->root);
        if (r >= 0)
                r = forest_renumber(f);
        if (r >= 0 && !f->host.kernel)
                r = host_info_fill_local(&f->host);
        if (r < 0)
                return r;
        f->root = opts->root;
        r = snapshot_validate(f, ret_error);
        if (r == -EINVAL)
                return -EAGAIN;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

static int scan_consistent(Manager *m, const ScanOptions *opts, Forest **ret, char **ret_message) {
        for (unsigned attempt = 1;; attempt++) {
                _cleanup_free_ char *error = NULL;
                int r = scan_once(m, opts, ret, &error);
                if (r != -EAGAIN || attempt == SNAPSHOT_SCAN_ATTEMPTS) {
                        if (r == -EAGAIN)
                                set_message(ret_message, "The subtree changed too fast for a consistent snapshot "
                                            "(%u scans): %s", attempt, error ? error : "?");
                        else if (r < 0)
                                set_message(ret_message, "The scan failed: %s", strerror(-r));
                        return r < 0 ? -EIO : 0;
                }
                log_debug("Snapshot scan %u of %d was not consistent (%s), scanning again.", attempt, opts->root,
                          error ? error : "?");
        }
}

/* Scan, check that the caller may see all of it, and make it a snapshot. */
static int take_snapshot(Manager *m, Caller *c, pid_t root, const SnapshotCreateOptions *o, Forest **ret,
                         char **ret_message) {
        _cleanup_(forest_freep) Forest *f = NULL;
        ScanOptions opts = { .root = root, .include_argv = o->include_argv, .include_exe = true, .freeze = true };
        int r = scan_consistent(m, &opts, &f, ret_message);
        if (r < 0)
                return r;
        if (root > 0 && !forest_find_process(f, root)) {
                set_message(ret_message, "Process %d exited before it could be scanned.", root);
                return -ESRCH;
        }
        pid_t hidden = first_hidden_process(c, f);
        if (hidden > 0) {
                set_message(ret_message, "Process %d of the subtree of %d is not one you could trace.", hidden, root);
                return -EACCES;
        }
        r = snapshot_info_set_name(&f->snapshot, o->name);
        if (r < 0)
                return r;
        f->snapshot.taken_by_uid = c->uid;
        if (f->created_at_usec == 0)
                f->created_at_usec = now_usec(CLOCK_REALTIME);
        *ret = TAKE_PTR(f);
        return 0;
}

int manager_snapshot_create(Manager *m, Caller *c, pid_t root, const SnapshotCreateOptions *o, uint64_t *ret_id,
                            char **ret_message) {
        _cleanup_(forest_freep) Forest *f = NULL;
        uint64_t id;
        if (ret_message)
                *ret_message = NULL;
        int r = check_root(c, root, ret_message);
        if (r < 0)
                return r;
        r = take_snapshot(m, c, root, o, &f, ret_message);
        if (r < 0)
                return r;
        r = store_snapshot_put(m->store, f, c->uid, false, quota_for(c), now_usec(CLOCK_REALTIME), &id);
        if (r == -EDQUOT)
                quota_message(ret_message);
        if (r < 0)
                return r;
        log_debug("Snapshot %" PRIu64 " of %d taken for uid %u: %zu processes, %zu filters.", id, root, c->uid,
                  f->n_processes, f->n_filters);
        (void) manager_send_snapshot_created(m, id, o->name, c->uid);
        *ret_id = id;
        return 0;
}

/* Listing and deleting */

static bool may_see(const Caller *c, const StoredSnapshot *s) {
        return c->privileged || s->owner_uid == c->uid;
}

int manager_snapshot_list(Manager *m, Caller *c, StoredSnapshot **ret, size_t *ret_n) {
        StoredSnapshot *l;
        size_t n, k = 0;
        int r = store_snapshot_list(m->store, &l, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (may_see(c, &l[i]))
                        l[k++] = l[i];
                else
                        stored_snapshot_done(&l[i]);
        }
        *ret = l;
        *ret_n = k;
        return 0;
}

/* The row of a snapshot the caller may see; another's is -ENOENT too. */
static int find_snapshot(Manager *m, Caller *c, uint64_t id, StoredSnapshot *ret) {
        int r = store_snapshot_get(m->store, id, ret);
        if (r < 0)
                return r;
        if (!may_see(c, ret)) {
                stored_snapshot_done(ret);
                return -ENOENT;
        }
        return 0;
}

int manager_snapshot_delete(Manager *m, Caller *c, uint64_t id) {
        StoredSnapshot s;
        int r = find_snapshot(m, c, id, &s);
        if (r < 0)
                return r;
        stored_snapshot_done(&s);
        r = store_snapshot_delete(m->store, id);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        (void) manager_send_snapshot_deleted(m, id);
        return 0;
}

/* Transfers */

static uint64_t transfer_timeout_usec(void) {
        const char *e = secure_getenv("SECTREE_SNAPSHOT_TIMEOUT_USEC");
        uint64_t v;
        if (e && safe_atou64(e, &v) >= 0 && v > 0)
                return v;
        return SNAPSHOT_TRANSFER_TIMEOUT_USEC;
}

static int check_transfer_limits(Manager *m, const Caller *c, char **ret_message) {
        size_t all = 0, mine = 0;
        for (SnapshotTransfer *t = m->snapshot_transfers; t; t = t->next) {
                all++;
                mine += t->uid == c->uid;
        }
        if (all >= SNAPSHOT_TRANSFERS_MAX || (!c->privileged && mine >= SNAPSHOT_TRANSFERS_MAX_PER_UID)) {
                set_message(ret_message, "Too many snapshot exports and imports in progress (at most %d, %d per user).",
                            SNAPSHOT_TRANSFERS_MAX, SNAPSHOT_TRANSFERS_MAX_PER_UID);
                return -EBUSY;
        }
        return 0;
}

static SnapshotTransfer *transfer_free(SnapshotTransfer *t) {
        if (!t)
                return NULL;
        sd_event_source_disable_unref(t->io);
        sd_event_source_disable_unref(t->timer);
        if (t->fd >= 0) {
                if (t->saved_flags >= 0)
                        (void) fcntl(t->fd, F_SETFL, t->saved_flags);
                close(t->fd);
        }
        free(t->data);
        free(t);
        return NULL;
}
DEFINE_CLEANUP(SnapshotTransfer *, transfer_free);

static int transfer_new(Manager *m, Caller *c, int fd, bool import, char **ret_message, SnapshotTransfer **ret) {
        int r = check_transfer_limits(m, c, ret_message);
        if (r < 0)
                return r;
        _cleanup_(transfer_freep) SnapshotTransfer *t = calloc(1, sizeof(SnapshotTransfer));
        if (!t)
                return -ENOMEM;
        *t = (SnapshotTransfer) {
                .manager = m, .uid = c->uid, .privileged = c->privileged, .import = import, .saved_flags = -1,
        };
        t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (t->fd < 0)
                return -errno;
        *ret = TAKE_PTR(t);
        return 0;
}

/* Unlink, call done, free. */
static void transfer_finish(SnapshotTransfer *t, int r, uint64_t id, const char *message) {
        Manager *m = t->manager;
        for (SnapshotTransfer **p = &m->snapshot_transfers; *p; p = &(*p)->next)
                if (*p == t) {
                        *p = t->next;
                        break;
                }
        /* the fd first: an export's reader sees EOF before the reply */
        sd_event_source_disable_unref(TAKE_PTR(t->io));
        if (t->saved_flags >= 0)
                (void) fcntl(t->fd, F_SETFL, t->saved_flags);
        t->saved_flags = -1;
        close(TAKE_FD(t->fd));
        t->done(m, r, id, message, t->userdata);
        transfer_free(t);
}

static void transfer_finish_errno(SnapshotTransfer *t, int r) {
        _cleanup_free_ char *message = NULL;
        if (r == -ETIMEDOUT)
                (void) asprintf(&message, "The %s did not finish within %" PRIu64 " ms.",
                                t->import ? "import" : "export", transfer_timeout_usec() / 1000);
        else
                (void) asprintf(&message, "%s the snapshot failed: %s", t->import ? "Reading" : "Writing",
                                strerror(-r));
        transfer_finish(t, r, 0, message);
}

/* Importing */

/* Validate, store, and say so; message: why it failed (malloc'ed), or NULL. */
static int import_store(SnapshotTransfer *t, uint64_t *ret_id, char **ret_message) {
        Manager *m = t->manager;
        _cleanup_(forest_freep) Forest *f = NULL;
        Caller owner = { .uid = t->uid, .privileged = t->privileged };
        int r = snapshot_read_data(t->data, t->size, &f, ret_message);
        free(TAKE_PTR(t->data));
        if (r == -EINVAL) {
                log_debug("Refused a snapshot import of uid %u: %s", t->uid, *ret_message ? *ret_message : "?");
                return r;
        }
        free(TAKE_PTR(*ret_message));
        if (r >= 0)
                r = forest_renumber(f);
        if (r >= 0)
                r = store_snapshot_put(m->store, f, t->uid, true, quota_for(&owner), now_usec(CLOCK_REALTIME), ret_id);
        if (r == -EDQUOT)
                quota_message(ret_message);
        if (r < 0)
                return r;
        log_debug("Snapshot %" PRIu64 " imported for uid %u.", *ret_id, t->uid);
        (void) manager_send_snapshot_created(m, *ret_id, f->snapshot.name, t->uid);
        return 0;
}

static void import_data(SnapshotTransfer *t) {
        _cleanup_free_ char *message = NULL;
        uint64_t id = 0;
        int r = import_store(t, &id, &message);
        if (r < 0 && !message && asprintf(&message, "Storing the snapshot failed: %s", strerror(-r)) < 0)
                message = NULL;
        transfer_finish(t, r, id, message);
}

static void import_too_big(SnapshotTransfer *t) {
        _cleanup_free_ char *message = NULL;
        (void) asprintf(&message, "snapshot: more than the limit of %u bytes (64 MiB)", SNAPSHOT_MAX_FILE_SIZE);
        transfer_finish(t, -EINVAL, 0, message);
}

/* Read what is there; 1 at the end of the input, 0 when it would block. */
static int import_read_some(SnapshotTransfer *t) {
        for (;;) {
                if (t->size + 1 >= t->allocated) {
                        size_t want = t->allocated ? t->allocated * 2 : 64 * 1024;
                        if (want > (size_t) SNAPSHOT_MAX_FILE_SIZE + 2)
                                want = (size_t) SNAPSHOT_MAX_FILE_SIZE + 2; /* one byte too many, and a NUL */
                        if (want <= t->size + 1)
                                return -EFBIG;
                        char *p = realloc(t->data, want);
                        if (!p)
                                return -ENOMEM;
                        t->data = p;
                        t->allocated = want;
                }
                ssize_t k = read(t->fd, t->data + t->size, t->allocated - t->size - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                t->size += (size_t) k;
                if (t->size > SNAPSHOT_MAX_FILE_SIZE)
                        return -EFBIG;
        }
        t->data[t->size] = 0;
        return 1;
}

static void import_step(SnapshotTransfer *t) {
        int r = import_read_some(t);
        if (r == -EFBIG)
                import_too_big(t);
        else if (r < 0)
                transfer_finish_errno(t, r);
        else if (r > 0)
                import_data(t);
}

/* Exporting */

/* Write what the fd takes; 1 when all is written, 0 when it would block. */
static int export_write_some(SnapshotTransfer *t) {
        while (t->pos < t->size) {
                ssize_t k = write(t->fd, t->data + t->pos, t->size - t->pos);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO;
                t->pos += (size_t) k;
        }
        return 1;
}

static void export_step(SnapshotTransfer *t) {
        int r = export_write_some(t);
        if (r < 0)
                transfer_finish_errno(t, r);
        else if (r > 0)
                transfer_finish(t, 0, 0, NULL);
}

/* A regular file: at once. On failure the file is cut back to where the export started. */
static void export_to_file(SnapshotTransfer *t) {
        off_t start = lseek(t->fd, 0, SEEK_CUR);
        int r = write_full_fd(t->fd, t->data, t->size);
        if (r < 0 && start >= 0 && ftruncate(t->fd, start) < 0)
                log_warning_errno(-errno, "Could not cut a failed snapshot export back: %m");
        if (r < 0)
                transfer_finish_errno(t, r);
        else
                transfer_finish(t, 0, 0, NULL);
}

static int format_snapshot(const Forest *f, SnapshotFormat format, char **ret, size_t *ret_size) {
        if (format == SNAPSHOT_FORMAT_SQLITE)
                return snapshot_sqlite_format(f, (void **) ret, ret_size);
        _cleanup_free_ char *json = NULL;
        int r = snapshot_json_format(f, 0, &json);
        if (r < 0)
                return r;
        size_t n = strlen(json);
        char *p = realloc(json, n + 2); /* with a final newline, as snapshot_write_fd() writes it */
        if (!p)
                return -ENOMEM;
        TAKE_PTR(json);
        p[n] = '\n';
        p[n + 1] = 0;
        *ret = p;
        *ret_size = n + 1;
        return 0;
}

/* Driving a transfer from the event loop */

static int on_transfer_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        SnapshotTransfer *t = userdata;
        if (t->import)
                import_step(t);
        else
                export_step(t);
        return 0;
}

static int on_transfer_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        transfer_finish_errno(userdata, -ETIMEDOUT);
        return 0;
}

/* A file whose reads and writes may block for as long as someone else wants: FUSE, whose server
 * any user may run. Such a file cannot be waited for either, so it is refused. */
static int check_filesystem(int fd, char **ret_message) {
        struct statfs sf;
        if (fstatfs(fd, &sf) < 0)
                return -errno;
        if (sf.f_type != FUSE_SUPER_MAGIC)
                return 0;
        set_message(ret_message, "The file is on a FUSE file system, which could block sectreed: pass a pipe instead.");
        return -EOPNOTSUPP;
}

/* Make the transfer wait for its fd if it can be waited for (a pipe, socket, tty...); leave it to
 * be served at once if not (a regular file, or anything epoll refuses). */
static int transfer_watch(SnapshotTransfer *t, char **ret_message) {
        struct stat st;
        if (fstat(t->fd, &st) < 0)
                return -errno;
        if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
                return check_filesystem(t->fd, ret_message);
        int flags = fcntl(t->fd, F_GETFL);
        if (flags < 0)
                return -errno;
        int r = sd_event_add_io(t->manager->event, &t->io, t->fd, t->import ? EPOLLIN : EPOLLOUT, on_transfer_io, t);
        if (r == -EPERM)
                return 0; /* epoll does not support it: it never blocks either */
        if (r < 0)
                return r;
        if (!(flags & O_NONBLOCK)) {
                if (fcntl(t->fd, F_SETFL, flags | O_NONBLOCK) < 0)
                        return -errno;
                t->saved_flags = flags;
        }
        return sd_event_add_time_relative(t->manager->event, &t->timer, CLOCK_MONOTONIC, transfer_timeout_usec(), 0,
                                          on_transfer_timeout, t);
}

/* Hand the transfer to the event loop, or run it now. */
static int transfer_start(SnapshotTransfer *t, SnapshotTransferDone done, void *userdata, char **ret_message) {
        int r = transfer_watch(t, ret_message);
        if (r < 0)
                return r;
        t->done = done;
        t->userdata = userdata;
        t->next = t->manager->snapshot_transfers;
        t->manager->snapshot_transfers = t;
        if (t->io)
                return 0;
        if (!t->import)
                export_to_file(t);
        else {
                int k = read_full_fd(t->fd, SNAPSHOT_MAX_FILE_SIZE, &t->data, &t->size);
                if (k == -EFBIG)
                        import_too_big(t);
                else if (k < 0)
                        transfer_finish_errno(t, k);
                else
                        import_data(t);
        }
        return 0;
}

int manager_snapshot_export(Manager *m, Caller *c, uint64_t id, int fd, SnapshotFormat format,
                            SnapshotTransferDone done, void *userdata, char **ret_message) {
        _cleanup_(transfer_freep) SnapshotTransfer *t = NULL;
        _cleanup_(forest_freep) Forest *f = NULL;
        StoredSnapshot s;
        if (ret_message)
                *ret_message = NULL;
        int r = find_snapshot(m, c, id, &s);
        if (r < 0)
                return r;
        stored_snapshot_done(&s);
        r = transfer_new(m, c, fd, false, ret_message, &t);
        if (r < 0)
                return r;
        r = store_snapshot_load(m->store, id, &f);
        if (r >= 0)
                r = format_snapshot(f, format, &t->data, &t->size);
        if (r < 0)
                return r;
        forest_free(TAKE_PTR(f));
        r = transfer_start(t, done, userdata, ret_message);
        if (r < 0)
                return r;
        TAKE_PTR(t);
        return 0;
}

int manager_snapshot_import(Manager *m, Caller *c, int fd, SnapshotTransferDone done, void *userdata,
                            char **ret_message) {
        _cleanup_(transfer_freep) SnapshotTransfer *t = NULL;
        if (ret_message)
                *ret_message = NULL;
        int r = transfer_new(m, c, fd, true, ret_message, &t);
        if (r < 0)
                return r;
        r = transfer_start(t, done, userdata, ret_message);
        if (r < 0)
                return r;
        TAKE_PTR(t);
        return 0;
}

void manager_snapshot_transfers_cancel(Manager *m) {
        while (m->snapshot_transfers) {
                _cleanup_free_ char *message = NULL;
                (void) asprintf(&message, "sectreed is stopping.");
                transfer_finish(m->snapshot_transfers, -ECANCELED, 0, message);
        }
}
