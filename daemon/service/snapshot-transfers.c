/* snapshot-transfers.c: snapshots exported into and imported from bus callers' fds, without ever
 * holding the event loop for long
 *
 * A transfer to or from a pipe or socket never blocks the event loop: the fd is made non-blocking
 * and served from sd-event as it becomes ready, with a deadline (SNAPSHOT_TRANSFER_TIMEOUT_USEC).
 * What takes time runs in a worker thread of the transfer, which hands its result back to the loop
 * through an eventfd: reading a stored snapshot for an export (through a read-only connection of
 * its own) and formatting it; parsing, validating and renumbering an import. The worker also
 * reads or writes a regular file itself (FUSE and kernel file systems are refused, so it cannot
 * block for long), and an export that fails half-way truncates the file back to where it started,
 * so no partial file looks complete. Storing an import happens on the loop, one transaction of a few
 * ms at a time at idle priority, so that other calls and kernel events are served in between.
 *
 * Workers run in two lanes of one worker each, root's and everyone else's (a JSON parse may take
 * SNAPSHOT_MAX_JSON_MEMORY, so at most one per lane at once); the others wait their turn. So
 * another user's transfers never make root's wait, and non-root users together may have only
 * SNAPSHOT_TRANSFERS_MAX_USERS transfers, so that root always has room; a user's second transfer
 * only while fewer than SNAPSHOT_TRANSFERS_SHARED_USERS are in progress, so that a few users
 * cannot take every slot of the others (holding pipes they never write into, each until its
 * deadline, and again). A transfer that ends early
 * (its deadline, sectreed stopping) waits for its worker first; when the last transfer ends, the
 * memory it used is given back to the system (malloc_trim()). */
#include "service/snapshot-transfers.h"

#include "service/snapshot-scan.h"
#include "service/snapshots.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "service/worker-lanes.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite.h"

typedef struct SnapshotTransfer SnapshotTransfer;
struct SnapshotTransfer {
        SnapshotTransfers *owner;
        Manager *manager; /* owner's */
        SnapshotTransfer *next;
        uid_t uid;
        bool privileged;
        bool import;
        bool created;    /* CreateSnapshot: no fd, scanned by the worker, stored in steps as imports are */
        SnapshotScanJob *scan; /* created: the scan the worker runs */
        int fd;          /* our dup of the caller's; -1 for a created one */
        int saved_flags; /* the fd's status flags before O_NONBLOCK, or -1 */
        char *data;      /* import: what was read; export: the file image */
        size_t size, pos, allocated;
        sd_event_source *io, *timer;
        SnapshotTransferDone done;
        void *userdata;
        uint64_t id;         /* export: the snapshot */
        char *db_path;       /* export: the state database, for the worker's own connection */
        StoreSnapshotWriter *writer; /* import: storing it, step by step */
        sd_event_source *store_source;

        /* The worker. While it runs it alone touches fd (when direct), data, size, forest,
         * worker_r and worker_message; the loop waits for it (pthread_join()) before it does. */
        bool direct;          /* a regular file: the worker reads or writes it */
        SnapshotFormat format; /* export */
        Forest *forest;       /* export: read and formatted (the worker frees it); import: what was read */
        WorkerItem worker;    /* in its lane (worker-lanes.h) */
        void (*worker_fn)(SnapshotTransfer *t);
        int worker_r;
        bool read_failed;     /* import: worker_r is from reading the fd, not from parsing */
        char *worker_message; /* import: why the file was refused */
        const char *gate;     /* $SECTREE_TEST_SNAPSHOT_GATE, see worker_gate() ($..._SCAN_GATE: created) */
        const char *store_gate; /* $SECTREE_TEST_SNAPSHOT_STORE_GATE, see on_store_step() */
};

/* The transfers in progress, and the lanes of their workers. */
struct SnapshotTransfers {
        Manager *manager;
        SnapshotTransfer *list;
        WorkerLanes *lanes;
};

/* Everyone else's lane is shared by uid as the analyses' is (uid-share.h, policy-jobs.h): the next
 * worker is the one of the uid that took the least of the lane's CPU time lately (the oldest on
 * ties). A transfer does not wait for its uid's share, which its deadline would not allow. */
int snapshot_transfers_new(Manager *m, SnapshotTransfers **ret) {
        _cleanup_free_ SnapshotTransfers *ts = calloc(1, sizeof(SnapshotTransfers));
        if (!ts)
                return -ENOMEM;
        ts->manager = m;
        WorkerLanesOptions o = { .burst_usec = SNAPSHOT_UID_BURST_USEC, .percent = SNAPSHOT_UID_SHARE_PERCENT };
        int r = worker_lanes_new(m->event, &o, &ts->lanes);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(ts);
        return 0;
}

static uint64_t transfer_timeout_usec(void) {
        const char *e = secure_getenv("SECTREE_SNAPSHOT_TIMEOUT_USEC");
        uint64_t v;
        if (e && safe_atou64(e, &v) >= 0 && v > 0)
                return v;
        return SNAPSHOT_TRANSFER_TIMEOUT_USEC;
}

/* Whether a non-root caller that has mine transfers in progress may start one more while users
 * (its own included) are: at most SNAPSHOT_TRANSFERS_MAX_USERS in all, SNAPSHOT_TRANSFERS_MAX_PER_UID
 * of its own, and a second (or later) one only while fewer than SNAPSHOT_TRANSFERS_SHARED_USERS are,
 * so that a few uids never take what the others may use. */
static bool user_may_start(size_t users, size_t mine) {
        if (users >= SNAPSHOT_TRANSFERS_MAX_USERS || mine >= SNAPSHOT_TRANSFERS_MAX_PER_UID)
                return false;
        return mine == 0 || users < SNAPSHOT_TRANSFERS_SHARED_USERS;
}

/* Root may use every slot; other users together leave SNAPSHOT_TRANSFERS_MAX -
 * SNAPSHOT_TRANSFERS_MAX_USERS of them to root. */
static int check_transfer_limits(const SnapshotTransfers *ts, const Caller *c, char **ret_message) {
        size_t all = 0, users = 0, mine = 0;
        for (SnapshotTransfer *t = ts->list; t; t = t->next) {
                all++;
                users += !t->privileged;
                mine += t->uid == c->uid;
        }
        if (all >= SNAPSHOT_TRANSFERS_MAX || (!c->privileged && !user_may_start(users, mine))) {
                snapshot_set_message(ret_message,
                                     "Too many snapshots being taken, exported and imported (at most %d; %d for all "
                                     "users but root together, %d per user, and a user's second only while fewer "
                                     "than %d of all users' are).",
                                     SNAPSHOT_TRANSFERS_MAX, SNAPSHOT_TRANSFERS_MAX_USERS,
                                     SNAPSHOT_TRANSFERS_MAX_PER_UID, SNAPSHOT_TRANSFERS_SHARED_USERS);
                return -EBUSY;
        }
        return 0;
}

/* The worker threads */

/* For the tests only: with $SECTREE_TEST_SNAPSHOT_GATE set to a path, a worker waits until that
 * file exists before it starts (worker_item_gate()). */
static void worker_gate(SnapshotTransfer *t) {
        worker_item_gate(&t->worker, t->gate);
}

static void transfer_finish_errno(SnapshotTransfer *t, int r);
static void on_worker_done(void *userdata);

/* In the worker thread: t->worker_fn(t). */
static void worker_run(void *userdata) {
        SnapshotTransfer *t = userdata;
        t->worker_fn(t);
}

static void on_worker_failed(void *userdata, int r) {
        transfer_finish_errno(userdata, r);
}

/* Queue t's worker (t->worker_fn) in its lane; on_worker_done() goes on on the loop when it
 * returns. A negative errno when it could not start. */
static int worker_submit(SnapshotTransfer *t, void (*fn)(SnapshotTransfer *t)) {
        t->worker_fn = fn;
        return worker_lanes_submit(t->owner->lanes, &t->worker);
}

/* Freeing a forest of hundreds of thousands of filters takes tens of ms: a large one is freed by
 * a thread of its own, which then gives the memory back to the system. */
#define FOREST_FREE_IN_BACKGROUND 10000 /* filters and processes */

static void *forest_free_thread(void *userdata) {
        forest_free(userdata);
        (void) malloc_trim(0);
        return NULL;
}

static void forest_release(Forest *f) {
        pthread_attr_t attr;
        pthread_t thread;
        if (f && f->n_filters + f->n_processes >= FOREST_FREE_IN_BACKGROUND && pthread_attr_init(&attr) == 0) {
                int k = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                if (k == 0)
                        k = pthread_create(&thread, &attr, forest_free_thread, f);
                pthread_attr_destroy(&attr);
                if (k == 0)
                        return;
        }
        forest_free(f);
}

static SnapshotTransfer *transfer_free(SnapshotTransfer *t) {
        if (!t)
                return NULL;
        worker_item_cancel(&t->worker);
        sd_event_source_disable_unref(t->store_source);
        store_snapshot_writer_free(t->writer); /* an unfinished import: what it stored goes */
        forest_release(t->forest);
        snapshot_scan_job_free(t->scan);
        free(t->worker_message);
        free(t->db_path);
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

static int transfer_new(SnapshotTransfers *ts, Caller *c, int fd, bool import, char **ret_message,
                        SnapshotTransfer **ret) {
        int r = check_transfer_limits(ts, c, ret_message);
        if (r < 0)
                return r;
        _cleanup_(transfer_freep) SnapshotTransfer *t = calloc(1, sizeof(SnapshotTransfer));
        if (!t)
                return -ENOMEM;
        *t = (SnapshotTransfer) {
                .owner = ts, .manager = ts->manager, .uid = c->uid, .privileged = c->privileged, .import = import, .saved_flags = -1,
                .gate = secure_getenv("SECTREE_TEST_SNAPSHOT_GATE"),
                .store_gate = secure_getenv("SECTREE_TEST_SNAPSHOT_STORE_GATE"),
        };
        worker_item_init(&t->worker, t, c->privileged, c->uid, worker_run, on_worker_done, on_worker_failed);
        t->fd = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0 && t->fd < 0)
                return -errno;
        *ret = TAKE_PTR(t);
        return 0;
}

/* Unlink, call done, free. */
static void transfer_finish(SnapshotTransfer *t, int r, uint64_t id, const char *message) {
        Manager *m = t->manager;
        SnapshotTransfers *ts = t->owner;
        worker_item_cancel(&t->worker); /* before the fd is closed, and the data freed */
        for (SnapshotTransfer **p = &ts->list; *p; p = &(*p)->next)
                if (*p == t) {
                        *p = t->next;
                        break;
                }
        /* the fd first: an export's reader sees EOF before the reply */
        sd_event_source_disable_unref(TAKE_PTR(t->io));
        if (t->saved_flags >= 0)
                (void) fcntl(t->fd, F_SETFL, t->saved_flags);
        t->saved_flags = -1;
        if (t->fd >= 0)
                close(TAKE_FD(t->fd));
        t->done(r, id, message, t->userdata);
        transfer_free(t);
        if (!ts->list)
                manager_trim_soon(m); /* what a large import or export took, back to the system */
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

/* How long one turn of the loop may write rows: one transaction, one commit per turn. */
#define SNAPSHOT_STORE_TURN_USEC 4000

static void import_store_failed(SnapshotTransfer *t, int r) {
        _cleanup_free_ char *message = NULL;
        if (r == -EDQUOT)
                snapshot_quota_message(&message);
        else
                snapshot_set_message(&message, "Storing the snapshot failed: %s", strerror(-r));
        transfer_finish(t, r, 0, message);
}

/* At idle priority: a step of the writer whenever nothing else is pending; the last one makes
 * the snapshot complete and says so. */
static int on_store_step(sd_event_source *s, void *userdata) {
        SnapshotTransfer *t = userdata;
        uint64_t id = 0;
        int r;
        /* For the tests only: no step until that file exists, so that a test can hold a snapshot
         * half-stored for as long as it likes (the loop goes round meanwhile). */
        if (t->store_gate && access(t->store_gate, F_OK) < 0)
                return 0;
        r = store_snapshot_writer_step_until(t->writer, now_usec(CLOCK_MONOTONIC) + SNAPSHOT_STORE_TURN_USEC);
        if (r == 0)
                return 0;
        if (r > 0)
                r = store_snapshot_writer_finish(t->writer, &id);
        if (r < 0) {
                import_store_failed(t, r);
                return 0;
        }
        log_debug("Snapshot %" PRIu64 " %s for uid %u: %zu processes, %zu filters.", id,
                  t->created ? "taken" : "imported", t->uid, t->forest->n_processes, t->forest->n_filters);
        (void) manager_send_snapshot_created(t->manager, id, t->forest->snapshot.name, t->uid);
        transfer_finish(t, 0, id, NULL);
        return 0;
}

/* Back on the loop with a valid forest: reserve its place within the owner's quota, then store
 * it in steps. */
static int import_store_start(SnapshotTransfer *t) {
        Manager *m = t->manager;
        Caller owner = { .uid = t->uid, .privileged = t->privileged };
        int r = store_snapshot_writer_new(m->store, t->forest, t->uid, !t->created, snapshot_quota_for(&owner),
                                          now_usec(CLOCK_REALTIME), &t->writer);
        if (r < 0)
                return r;
        t->timer = sd_event_source_disable_unref(t->timer); /* all is read: no deadline any more */
        r = sd_event_add_defer(m->event, &t->store_source, on_store_step, t);
        if (r >= 0)
                r = sd_event_source_set_priority(t->store_source, SD_EVENT_PRIORITY_IDLE);
        if (r >= 0)
                r = sd_event_source_set_enabled(t->store_source, SD_EVENT_ON);
        return r;
}

static void import_data(SnapshotTransfer *t) {
        if (t->worker_r == -EINVAL) {
                _cleanup_free_ char *message = TAKE_PTR(t->worker_message);
                log_debug("Refused a snapshot import of uid %u: %s", t->uid, message ? message : "?");
                transfer_finish(t, -EINVAL, 0, message);
                return;
        }
        int r = t->worker_r < 0 ? t->worker_r : import_store_start(t);
        if (r < 0)
                import_store_failed(t, r);
}

static void import_too_big(SnapshotTransfer *t) {
        _cleanup_free_ char *message = NULL;
        (void) asprintf(&message, "snapshot: more than the limit of %u bytes (64 MiB)", SNAPSHOT_MAX_FILE_SIZE);
        transfer_finish(t, -EINVAL, 0, message);
}

/* In the worker: read a regular file, parse, make the ids snapshot-local. */
static void import_worker(SnapshotTransfer *t) {
        int r = 0;
        worker_gate(t);
        if (t->direct) {
                r = read_full_fd(t->fd, SNAPSHOT_MAX_FILE_SIZE, &t->data, &t->size);
                t->read_failed = r < 0;
        }
        if (r >= 0 && atomic_load(&t->worker.cancelled))
                r = -ECANCELED;
        if (r >= 0) {
                snapshot_json_set_cancel(&t->worker.cancelled);
                r = snapshot_read_data(t->data, t->size, &t->forest, &t->worker_message);
                snapshot_json_set_cancel(NULL);
                free(TAKE_PTR(t->data));
                if (r != -EINVAL)
                        free(TAKE_PTR(t->worker_message));
        }
        if (r >= 0)
                r = forest_renumber(t->forest);
        t->worker_r = r;
}

/* Back on the loop: store it. */
static void import_worker_done(SnapshotTransfer *t) {
        if (t->read_failed && t->worker_r == -EFBIG)
                import_too_big(t);
        else if (t->read_failed)
                transfer_finish_errno(t, t->worker_r);
        else
                import_data(t);
}

static void import_parse(SnapshotTransfer *t) {
        if (t->io)
                (void) sd_event_source_set_enabled(t->io, SD_EVENT_OFF); /* at EOF: readable for ever */
        int r = worker_submit(t, import_worker);
        if (r < 0)
                transfer_finish_errno(t, r);
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
                import_parse(t);
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

/* A regular file, in the worker. On failure the file is cut back to where the export started. */
static int export_to_file(SnapshotTransfer *t) {
        off_t start = lseek(t->fd, 0, SEEK_CUR);
        int r = write_full_fd(t->fd, t->data, t->size);
        if (r < 0 && start >= 0 && ftruncate(t->fd, start) < 0)
                log_warning_errno(-errno, "Could not cut a failed snapshot export back: %m");
        return r;
}

static int format_snapshot(const Forest *f, SnapshotFormat format, char **ret, size_t *ret_size) {
        if (format == SNAPSHOT_FORMAT_SQLITE)
                return snapshot_sqlite_format(f, (void **) ret, ret_size);
        int r = snapshot_json_format_buffer(f, 0, ret, ret_size);
        if (r < 0)
                return r;
        (*ret)[(*ret_size)++] = '\n'; /* as snapshot_write_fd() writes it; the buffer has room */
        (*ret)[*ret_size] = 0;
        return 0;
}

/* In the worker: read the snapshot from the database, format it, and write a regular file. */
static void export_worker(SnapshotTransfer *t) {
        worker_gate(t);
        int r = store_snapshot_load_path(t->db_path, t->id, &t->forest);
        if (r >= 0)
                r = format_snapshot(t->forest, t->format, &t->data, &t->size);
        t->forest = forest_free(t->forest);
        if (r >= 0 && t->direct)
                r = atomic_load(&t->worker.cancelled) ? -ECANCELED : export_to_file(t);
        t->worker_r = r;
}

/* Back on the loop: done with a file, or write to the pipe as it takes it. */
static void export_worker_done(SnapshotTransfer *t) {
        if (t->worker_r < 0)
                transfer_finish_errno(t, t->worker_r);
        else if (t->direct)
                transfer_finish(t, 0, 0, NULL);
        else {
                int r = sd_event_source_set_enabled(t->io, SD_EVENT_ON);
                if (r < 0)
                        transfer_finish_errno(t, r);
        }
}

/* Creating */

/* In the worker: the scan (snapshots.c), off the loop. */
static void create_worker(SnapshotTransfer *t) {
        worker_gate(t);
        t->worker_r = atomic_load(&t->worker.cancelled) ? -ECANCELED
                                                 : snapshot_scan_job_run(t->scan, &t->forest, &t->worker_message);
        t->scan = snapshot_scan_job_free(t->scan); /* the caller's state, with its memo of /proc */
}

/* Back on the loop: refused, or stored in steps. */
static void create_worker_done(SnapshotTransfer *t) {
        if (t->worker_r < 0) {
                _cleanup_free_ char *message = TAKE_PTR(t->worker_message);
                transfer_finish(t, t->worker_r, 0, message);
                return;
        }
        int r = import_store_start(t);
        if (r < 0)
                import_store_failed(t, r);
}

/* Back on the loop, the worker joined (and the next one of its lane started after this). */
static void on_worker_done(void *userdata) {
        SnapshotTransfer *t = userdata;
        if (t->created)
                create_worker_done(t);
        else if (t->import)
                import_worker_done(t);
        else
                export_worker_done(t);
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

/* File systems whose files are not plain data: what reading or writing them does depends on who
 * does it (a file of /proc checks the reader's credentials when it is read, not when it was opened:
 * /proc/PID/timerslack_ns of root's process opens for anyone), or it changes the kernel's state. The
 * daemon would read and write them as root for the caller. */
static const struct {
        unsigned long magic;
        const char *name;
} kernel_filesystems[] = {
        { PROC_SUPER_MAGIC, "/proc" },     { SYSFS_MAGIC, "sysfs" },
        { DEBUGFS_MAGIC, "debugfs" },      { TRACEFS_MAGIC, "tracefs" },
        { SECURITYFS_MAGIC, "securityfs" }, { SELINUX_MAGIC, "selinuxfs" },
        { SMACK_MAGIC, "smackfs" },        { CGROUP_SUPER_MAGIC, "cgroupfs" },
        { CGROUP2_SUPER_MAGIC, "cgroup2" }, { BPF_FS_MAGIC, "the BPF file system" },
        { EFIVARFS_MAGIC, "efivarfs" },    { PSTOREFS_MAGIC, "pstore" },
        { BINFMTFS_MAGIC, "binfmt_misc" }, { NSFS_MAGIC, "nsfs" },
};

/* A regular file: refused on a kernel file system (see above), and on FUSE, whose reads and writes
 * may block for as long as the FUSE server (any user may run one) wishes. */
static int check_filesystem(int fd, const char *verb, char **ret_message) {
        struct statfs sf;
        if (fstatfs(fd, &sf) < 0)
                return -errno;
        if ((unsigned long) sf.f_type == FUSE_SUPER_MAGIC) {
                snapshot_set_message(ret_message, "The file is on a FUSE file system, which could block sectreed: pass a pipe "
                                         "instead.");
                return -EOPNOTSUPP;
        }
        for (size_t i = 0; i < ELEMENTSOF(kernel_filesystems); i++)
                if ((unsigned long) sf.f_type == kernel_filesystems[i].magic) {
                        snapshot_set_message(ret_message, "%s needs a regular file, a pipe or a stream socket, not a file of %s.",
                                    verb, kernel_filesystems[i].name);
                        return -EOPNOTSUPP;
                }
        return 0;
}

static const char *socket_kind(int type) {
        switch (type) {
        case SOCK_DGRAM:
                return "a datagram socket";
        case SOCK_SEQPACKET:
                return "a seqpacket socket";
        case SOCK_RAW:
                return "a raw socket";
        default:
                return "a socket that is not a stream";
        }
}

/* What the fd is, when it is not what a transfer takes (NULL: a pipe or a stream socket). */
static const char *unfit_kind(int fd, const struct stat *st) {
        if (S_ISFIFO(st->st_mode))
                return NULL;
        if (S_ISSOCK(st->st_mode)) {
                int type = 0;
                socklen_t len = sizeof(type);
                if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                        return "a socket of unknown type";
                return type == SOCK_STREAM ? NULL : socket_kind(type);
        }
        if (S_ISCHR(st->st_mode))
                return isatty(fd) ? "a terminal" : "a character device";
        if (S_ISBLK(st->st_mode))
                return "a block device";
        if (S_ISDIR(st->st_mode))
                return "a directory";
        return "an fd that is no file (an eventfd, a pidfd or another anonymous inode)";
}

/* The daemon reads and writes the caller's fd with its own credentials, so it takes only what is
 * plainly data: a regular file (see check_filesystem()), a pipe or a stream socket (a datagram
 * socket with SO_PASSCRED would tag the bytes with uid 0). A regular file is served by the worker;
 * a pipe or socket is made non-blocking and served from the event loop as it becomes ready. */
static int transfer_watch(SnapshotTransfer *t, char **ret_message) {
        const char *verb = t->import ? "ImportSnapshot" : "ExportSnapshot";
        struct stat st;
        int flags = fcntl(t->fd, F_GETFL);
        if (flags < 0)
                return -errno;
        /* An fd that cannot be read (written) would fail only later, or for a pipe's wrong end
         * wait for the timeout holding one of the caller's transfers. */
        int mode = flags & O_ACCMODE;
        if ((flags & O_PATH) || mode == (t->import ? O_WRONLY : O_RDONLY)) {
                snapshot_set_message(ret_message, "%s needs an fd open for %s; this one is %s.", verb,
                                     t->import ? "reading" : "writing",
                                     flags & O_PATH ? "an O_PATH fd"
                                     : t->import    ? "open for writing only"
                                                    : "open for reading only");
                return -EOPNOTSUPP;
        }
        if (fstat(t->fd, &st) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                t->direct = true;
                return check_filesystem(t->fd, verb, ret_message);
        }
        const char *unfit = unfit_kind(t->fd, &st);
        if (unfit) {
                snapshot_set_message(ret_message, "%s needs a regular file, a pipe or a stream socket, not %s.", verb, unfit);
                return -EOPNOTSUPP;
        }
        int r = sd_event_add_io(t->manager->event, &t->io, t->fd, t->import ? EPOLLIN : EPOLLOUT, on_transfer_io, t);
        if (r < 0)
                return r;
        /* An export waits for its worker's file image. */
        if (!t->import && (r = sd_event_source_set_enabled(t->io, SD_EVENT_OFF)) < 0)
                return r;
        if (!(flags & O_NONBLOCK)) {
                if (fcntl(t->fd, F_SETFL, flags | O_NONBLOCK) < 0)
                        return -errno;
                t->saved_flags = flags;
        }
        return sd_event_add_time_relative(t->manager->event, &t->timer, CLOCK_MONOTONIC, transfer_timeout_usec(), 0,
                                          on_transfer_timeout, t);
}

/* Hand the transfer to the event loop and its worker: an export's worker starts at once, as does
 * an import's from a file; an import from a pipe reads it first. */
static int transfer_start(SnapshotTransfer *t, SnapshotTransferDone done, void *userdata, char **ret_message) {
        int r = transfer_watch(t, ret_message);
        if (r < 0)
                return r;
        if ((!t->import || t->direct) && (r = worker_submit(t, t->import ? import_worker : export_worker)) < 0)
                return r;
        t->done = done;
        t->userdata = userdata;
        t->next = t->owner->list;
        t->owner->list = t;
        return 0;
}

int snapshot_transfers_export(SnapshotTransfers *ts, Caller *c, uint64_t id, int fd, SnapshotFormat format,
                            SnapshotTransferDone done, void *userdata, char **ret_message) {
        _cleanup_(transfer_freep) SnapshotTransfer *t = NULL;
        Manager *m = ts->manager;
        StoredSnapshot s;
        if (ret_message)
                *ret_message = NULL;
        int r = snapshot_find(m, c, id, &s);
        if (r < 0)
                return r;
        stored_snapshot_done(&s);
        r = transfer_new(ts, c, fd, false, ret_message, &t);
        if (r < 0)
                return r;
        t->id = id;
        t->format = format;
        t->db_path = strdup(store_path(m->store)); /* the state directory's real path */
        if (!t->db_path)
                return -ENOMEM;
        r = transfer_start(t, done, userdata, ret_message);
        if (r < 0)
                return r;
        TAKE_PTR(t);
        return 0;
}

int snapshot_transfers_import(SnapshotTransfers *ts, Caller *c, int fd, SnapshotTransferDone done, void *userdata,
                              char **ret_message) {
        _cleanup_(transfer_freep) SnapshotTransfer *t = NULL;
        if (ret_message)
                *ret_message = NULL;
        int r = transfer_new(ts, c, fd, true, ret_message, &t);
        if (r < 0)
                return r;
        r = transfer_start(t, done, userdata, ret_message);
        if (r < 0)
                return r;
        TAKE_PTR(t);
        return 0;
}

static int snapshot_create_in_worker(SnapshotTransfers *ts, Caller *c, SnapshotScanJob *j, SnapshotTransferDone done,
                                     void *userdata, char **ret_message) {
        _cleanup_(snapshot_scan_job_freep) SnapshotScanJob *job = j;
        _cleanup_(transfer_freep) SnapshotTransfer *t = NULL;
        int r = transfer_new(ts, c, -1, true, ret_message, &t);
        if (r < 0)
                return r;
        t->created = true;
        t->scan = TAKE_PTR(job);
        t->gate = secure_getenv("SECTREE_TEST_SNAPSHOT_SCAN_GATE");
        if ((r = worker_submit(t, create_worker)) < 0)
                return r;
        t->done = done;
        t->userdata = userdata;
        t->next = ts->list;
        ts->list = TAKE_PTR(t);
        return 0;
}

int snapshot_transfers_create(SnapshotTransfers *ts, Caller *c, pid_t root, const SnapshotCreateOptions *o,
                              SnapshotTransferDone done, void *userdata, char **ret_message) {
        SnapshotScanJob *j;
        if (ret_message)
                *ret_message = NULL;
        int r = snapshot_check_root(c, root, ret_message);
        if (r < 0)
                return r;
        r = snapshot_scan_job_new(ts->manager->source, c, root, o, &j);
        if (r < 0)
                return r;
        /* Scanning a large subtree, then storing it, take time: the scan goes to a worker thread, the
         * storing on between other calls. */
        return snapshot_create_in_worker(ts, c, j, done, userdata, ret_message);
}

void snapshot_transfers_cancel(SnapshotTransfers *ts) {
        if (!ts)
                return;
        worker_lanes_stop(ts->lanes); /* none is started to be cancelled */
        while (ts->list)
                transfer_finish(ts->list, -ECANCELED, 0, "sectreed is stopping.");
}

SnapshotTransfers *snapshot_transfers_free(SnapshotTransfers *ts) {
        if (!ts)
                return NULL;
        snapshot_transfers_cancel(ts);
        worker_lanes_free(ts->lanes);
        free(ts);
        return NULL;
}
