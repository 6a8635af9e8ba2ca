/* verbs-snapshots.c: the daemon's stored snapshots: `snapshot [PID]`, `snapshots`, `export ID FILE`,
 * `import FILE`, `rm ID` */
#include "verbs-snapshots.h"

#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>

#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-calls.h"
#include "manager-snapshots.h"
#include "output.h"
#include "snapshot-load.h"
#include "pager.h"
#include "table.h"
#include "verbs-tree.h"

#define NUM_BUF 24

/* The new id alone on stdout (scripts capture it), or {"id": N}. */
static int print_new_id(Context *c, uint64_t id) {
        int r;
        if (c->json) {
                json_auto_t *doc = json_pack("{s:I}", "id", (json_int_t) id);
                r = json_print_document(doc);
        } else {
                printf("%" PRIu64 "\n", id);
                r = output_flush();
        }
        if (r < 0) /* what failed is said: not that the snapshot is there */
                log_error("sectreectl: Snapshot %" PRIu64 " is stored all the same.", id);
        return r;
}

/* ---- snapshot [PID] ---- */

int verb_snapshot(Context *c, char **args, size_t n_args) {
        pid_t pid = 0;
        sd_bus *bus;
        uint64_t id;
        SnapshotOptions o = { .name = c->snapshot_name, .include_argv = !c->no_argv };
        int r = parse_root_arg(args, n_args, &pid);
        if (r < 0)
                return r;
        o.root_pid = (uint32_t) pid; /* any thread id: the daemon takes it for its process */
        r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = manager_create_snapshot(bus, &o, &id);
        if (r < 0)
                return r;
        return print_new_id(c, id);
}

/* ---- snapshots ---- */

static char *format_u64(uint64_t v, char *buf) {
        snprintf(buf, NUM_BUF, "%" PRIu64, v);
        return buf;
}

static int snapshots_add_row(Table *t, const SnapshotRecord *s) {
        char id[NUM_BUF], owner[USER_NAME_MAX], root[NUM_BUF], procs[NUM_BUF], threads[NUM_BUF], filters[NUM_BUF];
        char created[TIMESTAMP_MAX];
        const char *cells[] = {
                format_u64(s->id, id), s->name[0] ? s->name : "-",
                format_timestamp(s->created_usec, created, sizeof(created)), format_user(s->owner_uid, owner, sizeof(owner)),
                s->root_pid ? format_u64(s->root_pid, root) : "-", format_u64(s->processes, procs),
                format_u64(s->threads, threads), format_u64(s->filters, filters), s->backend, s->identity,
        };
        return table_add_row(t, cells);
}

static int snapshots_print_table(const SnapshotList *l, bool legend) {
        static const char *const headers[] = { "ID", "NAME", "CREATED", "OWNER", "ROOT", "PROCS", "THREADS",
                                               "FILTERS", "BACKEND", "IDENTITY" };
        _cleanup_(table_freep) Table *t = table_new(headers, ELEMENTSOF(headers),
                                                 TABLE_COLUMN(0) | TABLE_COLUMN(4) |
                                                 TABLE_COLUMN(5) | TABLE_COLUMN(6) | TABLE_COLUMN(7));
        if (!t)
                return log_oom();
        for (size_t i = 0; i < l->n; i++)
                if (snapshots_add_row(t, &l->items[i]) < 0)
                        return log_oom();
        int r = table_print(t, stdout, legend);
        if (r < 0)
                return r;
        if (legend)
                printf("\n%zu snapshot%s listed.\n", l->n, l->n == 1 ? "" : "s");
        return output_flush();
}

static json_t *snapshot_record_json(const SnapshotRecord *s) {
        char ts[TIMESTAMP_MAX];
        return json_pack("{s:I, s:s?, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s}",
                         "id", (json_int_t) s->id, "name", s->name[0] ? s->name : NULL,
                         "created", format_timestamp_rfc3339(s->created_usec, ts, sizeof(ts)),
                         "created_usec", (json_int_t) s->created_usec, "owner_uid", (json_int_t) s->owner_uid,
                         "root", (json_int_t) s->root_pid, "processes", (json_int_t) s->processes,
                         "threads", (json_int_t) s->threads, "filters", (json_int_t) s->filters,
                         "backend", s->backend, "identity", s->identity);
}

static json_t *snapshots_json(const SnapshotList *l) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < l->n; i++)
                if (json_array_append_new(a, snapshot_record_json(&l->items[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a ? json_pack("{s:o}", "snapshots", a) : NULL;
}

int verb_snapshots(Context *c, char **args, size_t n_args) {
        _cleanup_(snapshot_list_done) SnapshotList l = {};
        int r = context_list_snapshots(c, &l);
        if (r < 0)
                return r;
        if (c->json) {
                json_auto_t *doc = snapshots_json(&l);
                return json_print_document(doc);
        }
        pager_open(c->no_pager);
        return snapshots_print_table(&l, c->legend);
}

/* ---- export ID FILE ---- */

static bool has_suffix(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* --format, else from the name: .json is JSON, anything else (.sqlite, .db, -) SQLite. */
static int export_format(const Context *c, const char *file, SnapshotFormat *ret) {
        if (c->format) {
                *ret = snapshot_format_from_string(c->format);
                if (*ret < 0)
                        return usage_error("Invalid format '%s': expected sqlite or json", c->format);
        } else
                *ret = has_suffix(file, ".json") ? SNAPSHOT_FORMAT_JSON : SNAPSHOT_FORMAT_SQLITE;
        return 0;
}

/* A file being written next to its final name, invisible under that name until it is complete. */
typedef struct ExportFile {
        const char *path;  /* the name given */
        char *target;      /* the final name: path, or the file a symlink at path leads to */
        char *dir;         /* its directory */
        char *temp;        /* the temporary name, for files not made with O_TMPFILE */
        int fd;
        bool replaces;     /* a file is there: the export takes its mode and owner */
        struct stat old;
} ExportFile;

static void export_file_done(ExportFile *x) {
        if (x->fd >= 0)
                close(x->fd);
        if (x->temp)
                (void) unlink(x->temp); /* still set: not renamed, the export failed */
        free(x->temp);
        free(x->dir);
        free(x->target);
}

/* Where the export goes. A regular file there is replaced whole, keeping its mode (and its owner,
 * where the caller may give it), and a symlink to one stays a symlink; anything else there (a
 * device, a FIFO, a directory, a symlink that leads nowhere) is refused, never replaced. */
static int export_file_target(ExportFile *x) {
        struct stat st;
        if (lstat(x->path, &st) < 0) {
                if (errno != ENOENT)
                        return ctl_error_errno(-errno, "Failed to look at %s: %m", x->path);
                x->target = strdup(x->path);
                return x->target ? 0 : log_oom();
        }
        if (stat(x->path, &x->old) < 0)
                return ctl_error_errno(-errno, "%s is a symlink that leads nowhere: %m", x->path);
        if (!S_ISREG(x->old.st_mode))
                return ctl_error_errno(-EEXIST, "%s exists and is not a regular file; an export writes regular files "
                                                "(- writes to standard output).", x->path);
        x->target = realpath(x->path, NULL);
        if (!x->target)
                return ctl_error_errno(-errno, "Failed to resolve %s: %m", x->path);
        x->replaces = true;
        return 0;
}

/* The new file gets the mode and owner of the one it replaces. */
static int export_file_keep_old(ExportFile *x) {
        if (!x->replaces)
                return 0;
        if ((x->old.st_uid != geteuid() || x->old.st_gid != getegid()) && fchown(x->fd, x->old.st_uid, x->old.st_gid) < 0 &&
            errno != EPERM)
                return ctl_error_errno(-errno, "Failed to give the export the owner of %s: %m", x->target);
        if (fchmod(x->fd, x->old.st_mode & 07777) < 0)
                return ctl_error_errno(-errno, "Failed to give the export the mode of %s: %m", x->target);
        return 0;
}

/* An unnamed file in the directory (O_TMPFILE), or a hidden ".NAME.XXXXXX" next to it where the
 * file system has no O_TMPFILE. Mode 0600 & ~umask: a snapshot holds executable paths, which the
 * kernel shows only to whoever may trace the process, and command lines (state.db is 0600 too). */
static int export_file_open(ExportFile *x) {
        int r = export_file_target(x);
        if (r < 0)
                return r;
        _cleanup_free_ char *copy = strdup(x->target), *base_copy = strdup(x->target);
        if (!copy || !base_copy)
                return log_oom();
        x->dir = strdup(dirname(copy));
        if (!x->dir)
                return log_oom();
        x->fd = open(x->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (x->fd >= 0)
                return export_file_keep_old(x);
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
                return ctl_error_errno(-errno, "Failed to create a file in %s: %m", x->dir);
        if (asprintf(&x->temp, "%s/.%s.XXXXXX", x->dir, basename(base_copy)) < 0) {
                x->temp = NULL;
                return log_oom();
        }
        mode_t mask = umask(0);
        umask(mask);
        x->fd = mkostemp(x->temp, O_CLOEXEC);
        if (x->fd < 0) {
                r = ctl_error_errno(-errno, "Failed to create %s: %m", x->temp);
                x->temp = (free(x->temp), NULL);
                return r;
        }
        if (fchmod(x->fd, 0600 & ~mask) < 0)
                return ctl_error_errno(-errno, "Failed to set the mode of %s: %m", x->temp);
        return export_file_keep_old(x);
}

/* Check what the daemon wrote before it gets the final name: it must be a valid snapshot of the
 * requested format, complete. */
static int export_file_check(ExportFile *x, SnapshotFormat want) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_free_ char *data = NULL, *error = NULL;
        size_t size;
        if (lseek(x->fd, 0, SEEK_SET) < 0)
                return ctl_error_errno(-errno, "Failed to read back the export: %m");
        int r = read_full_fd(x->fd, SNAPSHOT_MAX_FILE_SIZE, &data, &size);
        if (r < 0)
                return ctl_error_errno(r, "Failed to read back the export: %m");
        if (snapshot_detect_format(data, size) != want)
                return ctl_error_errno(-EBADMSG, "The daemon wrote a snapshot in another format than %s.",
                                       snapshot_format_to_string(want));
        r = snapshot_read_data(data, size, &f, &error);
        if (r < 0)
                return ctl_error_errno(r, "The daemon wrote an invalid snapshot: %s", error ? error : "?");
        return 0;
}

/* Give the complete file its name, replacing what was there. */
static int export_file_commit(ExportFile *x) {
        if (fsync(x->fd) < 0)
                return ctl_error_errno(-errno, "Failed to sync %s: %m", x->path);
        if (!x->temp) {
                char proc[64];
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", x->fd);
                for (unsigned attempt = 0; !x->temp; attempt++) {
                        if (asprintf(&x->temp, "%s/.sectree-export.%d.%u", x->dir, (int) getpid(), attempt) < 0) {
                                x->temp = NULL;
                                return log_oom();
                        }
                        if (linkat(AT_FDCWD, proc, AT_FDCWD, x->temp, AT_SYMLINK_FOLLOW) == 0)
                                break;
                        int r = -errno;
                        x->temp = (free(x->temp), NULL);
                        if (r != -EEXIST || attempt >= 16)
                                return ctl_error_errno(r, "Failed to link the export into %s: %m", x->dir);
                }
        }
        if (rename(x->temp, x->target) < 0)
                return ctl_error_errno(-errno, "Failed to rename %s to %s: %m", x->temp, x->target);
        x->temp = (free(x->temp), NULL);
        return 0;
}

static int export_to_file(sd_bus *bus, uint64_t id, SnapshotFormat format, const char *path) {
        _cleanup_(export_file_done) ExportFile x = { .path = path, .fd = -1 };
        int r = export_file_open(&x);
        if (r < 0)
                return r;
        r = manager_export_snapshot(bus, id, x.fd, snapshot_format_to_string(format));
        if (r < 0)
                return r;
        r = export_file_check(&x, format);
        if (r < 0)
                return r;
        return export_file_commit(&x);
}

int verb_export(Context *c, char **args, size_t n_args) {
        uint64_t id;
        SnapshotFormat format;
        sd_bus *bus;
        const char *file = args[1];
        int r = parse_snapshot_id_arg(args[0], &id);
        if (r < 0)
                return r;
        if (!*file)
                return usage_error("export: FILE is empty (- writes to standard output)");
        r = export_format(c, file, &format);
        if (r < 0)
                return r;
        if (streq(file, "-") && format == SNAPSHOT_FORMAT_SQLITE && isatty(STDOUT_FILENO))
                return usage_error("Refusing to write an SQLite file to a terminal: redirect stdout or use --format json");
        r = context_bus(c, &bus);
        if (r < 0)
                return r;
        if (streq(file, "-"))
                return manager_export_snapshot_to(bus, id, snapshot_format_to_string(format), STDOUT_FILENO);
        return export_to_file(bus, id, format, file);
}

/* ---- import FILE ---- */

int verb_import(Context *c, char **args, size_t n_args) {
        sd_bus *bus;
        uint64_t id;
        const char *file = args[0];
        _cleanup_close_ int fd = streq(file, "-") ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)
                                                  : open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return ctl_error_errno(-errno, "Failed to open %s: %m", streq(file, "-") ? "stdin" : file);
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = manager_import_snapshot(bus, fd, &id);
        if (r < 0)
                return r;
        return print_new_id(c, id);
}

/* ---- rm ID ---- */

int verb_rm(Context *c, char **args, size_t n_args) {
        uint64_t id;
        sd_bus *bus;
        int r = parse_snapshot_id_arg(args[0], &id);
        if (r < 0)
                return r;
        r = context_bus(c, &bus);
        if (r < 0)
                return r;
        return manager_delete_snapshot(bus, id);
}
