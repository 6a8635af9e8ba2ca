/* snapshot-sqlite.c: writes the SQLite snapshot file, format versions 1 and 2: built in memory, then
 * copied into a fresh file with VACUUM INTO and renamed into place */
#include "snapshot/snapshot-sqlite.h"

#include <fcntl.h>
#include <libgen.h>
#include <sqlite3.h>
#include <sys/random.h>

#include "core/sqlite-util.h"
#include "snapshot/snapshot-sqlite-format.h"
#include "snapshot/snapshot-sqlite-schema.h"
#include "snapshot/snapshot-units.h"

typedef enum InsertStatement {
        INSERT_META,
        INSERT_FILTER,
        INSERT_PROCESS,
        INSERT_PROCESS_EXITED_LEADER,
        INSERT_THREAD,
        INSERT_THREAD_NNP,
        INSERT_LISTENER,
        INSERT_HOLDER,
        INSERT_UNITS,
        _INSERT_MAX,
} InsertStatement;

static const char *const insert_sql[_INSERT_MAX] = {
        [INSERT_META] = "INSERT INTO meta (format, version, created_at, host_kernel, host_arch, host_hostname, "
                        "source_backend, source_identity, root, snapshot_name, snapshot_taken_by_uid, "
                        "snapshot_consistency) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        [INSERT_FILTER] = "INSERT INTO filters (position, id, parent, length, program, digest, log, wait_killable_recv, "
                          "listener, identity) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        [INSERT_PROCESS] = "INSERT INTO processes (position, pid, ppid, start_time, comm, exe, argv, uid, gid, "
                           "no_new_privs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        [INSERT_PROCESS_EXITED_LEADER] = "INSERT INTO processes (position, pid, ppid, start_time, comm, exe, argv, "
                                         "uid, gid, no_new_privs, exited_leader_mode, exited_leader_filters) VALUES "
                                         "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        [INSERT_THREAD] = "INSERT INTO threads (process, position, tid, mode, filter) VALUES (?1, ?2, ?3, ?4, ?5)",
        [INSERT_THREAD_NNP] = "INSERT INTO threads (process, position, tid, mode, filter, no_new_privs) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [INSERT_LISTENER] = "INSERT INTO listeners (position, id, filter) VALUES (?1, ?2, ?3)",
        [INSERT_HOLDER] = "INSERT INTO holders (listener, position, pid, fd) VALUES (?1, ?2, ?3, ?4)",
        [INSERT_UNITS] = "INSERT INTO units (process, unit, user_unit, machine) VALUES (?1, ?2, ?3, ?4)",
};

typedef struct Writer {
        sqlite3 *db;
        sqlite3_stmt *insert[_INSERT_MAX];
} Writer;

static void writer_deinit(Writer *w) {
        for (size_t i = 0; i < _INSERT_MAX; i++)
                sqlite3_finalize(w->insert[i]);
        sqlite3_close_v2(w->db);
        *w = (Writer) {};
}

/* Strings as JSON has them: UTF-8, invalid bytes as U+FFFD. */
static int bind_text(sqlite3_stmt *st, int i, const char *s) {
        if (!s)
                return sqlite3_bind_null(st, i);
        _cleanup_free_ char *clean = snapshot_utf8_sanitize(s);
        if (!clean)
                return SQLITE_NOMEM;
        return sqlite3_bind_text(st, i, clean, -1, SQLITE_TRANSIENT);
}

static int run(sqlite3_stmt *st) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Every bind returns an SQLite code; the first failure wins. */
#define BIND(rc, call)                          \
        do {                                    \
                if ((rc) == SQLITE_OK)          \
                        (rc) = (call);          \
        } while (0)

static int insert_meta(Writer *w, const Forest *f) {
        sqlite3_stmt *st = w->insert[INSERT_META];
        const char *consistency = snapshot_consistency_to_string(f->snapshot.consistency);
        char created[SNAPSHOT_TIME_MAX];
        int rc = SQLITE_OK;

        if (snapshot_format_time(f->created_at_usec, created, sizeof(created)) < 0)
                return SQLITE_RANGE;
        BIND(rc, sqlite3_bind_text(st, 1, SNAPSHOT_FORMAT_NAME, -1, SQLITE_STATIC));
        BIND(rc, sqlite3_bind_int(st, 2, (int) snapshot_format_version_of(f)));
        BIND(rc, sqlite3_bind_text(st, 3, created, -1, SQLITE_TRANSIENT));
        BIND(rc, bind_text(st, 4, f->host.kernel));
        BIND(rc, bind_text(st, 5, f->host.arch));
        BIND(rc, bind_text(st, 6, f->host.hostname));
        BIND(rc, bind_text(st, 7, f->backend));
        BIND(rc, sqlite3_bind_text(st, 8, identity_kind_to_string(f->identity), -1, SQLITE_STATIC));
        BIND(rc, sqlite3_bind_int(st, 9, f->root));
        BIND(rc, bind_text(st, 10, f->snapshot.name));
        BIND(rc, sqlite3_bind_int64(st, 11, (sqlite3_int64) f->snapshot.taken_by_uid));
        BIND(rc, consistency ? sqlite3_bind_text(st, 12, consistency, -1, SQLITE_STATIC) : SQLITE_RANGE);
        return rc == SQLITE_OK ? run(st) : rc;
}

static int insert_filter(Writer *w, const Filter *flt, size_t position) {
        sqlite3_stmt *st = w->insert[INSERT_FILTER];
        char digest[PROG_DIGEST_STRING_MAX];
        _cleanup_free_ uint8_t *program = malloc(flt->len * 8 + 1);
        int rc = SQLITE_OK;

        if (!program)
                return SQLITE_NOMEM;
        prog_to_wire(flt->insns, flt->len, program);
        BIND(rc, sqlite3_bind_int64(st, 1, (sqlite3_int64) position));
        BIND(rc, sqlite3_bind_int64(st, 2, (sqlite3_int64) flt->id));
        BIND(rc, bind_id_or_null(st, 3, flt->parent_id));
        BIND(rc, sqlite3_bind_int64(st, 4, (sqlite3_int64) flt->len));
        BIND(rc, sqlite3_bind_blob(st, 5, program, (int) (flt->len * 8), SQLITE_TRANSIENT));
        BIND(rc, sqlite3_bind_text(st, 6, prog_digest_to_string(flt->digest, digest), -1, SQLITE_TRANSIENT));
        BIND(rc, sqlite3_bind_int(st, 7, flt->log));
        BIND(rc, sqlite3_bind_int(st, 8, flt->wait_killable_recv));
        BIND(rc, bind_id_or_null(st, 9, flt->listener_id));
        BIND(rc, sqlite3_bind_text(st, 10, identity_kind_to_string(flt->identity), -1, SQLITE_STATIC));
        return rc == SQLITE_OK ? run(st) : rc;
}

/* argv as one blob: every argument followed by its NUL. */
static int encode_argv(char * const *argv, uint8_t **ret, size_t *ret_size) {
        size_t n = 0;
        _cleanup_strv_free_ char **clean = calloc(strv_length(argv) + 1, sizeof(char *));
        if (!clean)
                return SQLITE_NOMEM;
        for (size_t i = 0; argv && argv[i]; i++) {
                clean[i] = snapshot_utf8_sanitize(argv[i]);
                if (!clean[i])
                        return SQLITE_NOMEM;
                n += strlen(clean[i]) + 1;
        }
        uint8_t *blob = malloc(n + 1), *p = blob;
        if (!blob)
                return SQLITE_NOMEM;
        for (size_t i = 0; clean[i]; i++)
                p = (uint8_t *) stpcpy((char *) p, clean[i]) + 1;
        *ret = blob;
        *ret_size = n;
        return SQLITE_OK;
}

static int insert_threads(Writer *w, const Process *p, size_t position) {
        sqlite3_stmt *st = w->insert[w->insert[INSERT_THREAD_NNP] ? INSERT_THREAD_NNP : INSERT_THREAD];
        int rc = SQLITE_OK;
        for (size_t j = 0; rc == SQLITE_OK && j < p->n_threads; j++) {
                const Task *t = &p->threads[j];
                BIND(rc, sqlite3_bind_int64(st, 1, (sqlite3_int64) position));
                BIND(rc, sqlite3_bind_int64(st, 2, (sqlite3_int64) j));
                BIND(rc, sqlite3_bind_int(st, 3, t->tid));
                BIND(rc, sqlite3_bind_text(st, 4, task_mode_to_string(t->mode), -1, SQLITE_STATIC));
                BIND(rc, bind_id_or_null(st, 5, t->filter_id));
                if (st == w->insert[INSERT_THREAD_NNP])
                        BIND(rc, task_no_new_privs_differs(p, t) ? sqlite3_bind_int(st, 6, task_no_new_privs(p, t))
                                                                 : sqlite3_bind_null(st, 6));
                if (rc == SQLITE_OK)
                        rc = run(st);
        }
        return rc;
}

static int insert_units(Writer *w, const Process *p, size_t position) {
        sqlite3_stmt *st = w->insert[INSERT_UNITS];
        int rc = SQLITE_OK;
        BIND(rc, sqlite3_bind_int64(st, 1, (sqlite3_int64) position));
        BIND(rc, bind_text(st, 2, p->unit));
        BIND(rc, bind_text(st, 3, p->user_unit));
        BIND(rc, bind_text(st, 4, p->machine));
        return rc == SQLITE_OK ? run(st) : rc;
}

static int insert_process(Writer *w, const Process *p, size_t position) {
        sqlite3_stmt *st = w->insert[w->insert[INSERT_PROCESS_EXITED_LEADER] ? INSERT_PROCESS_EXITED_LEADER : INSERT_PROCESS];
        _cleanup_free_ uint8_t *argv = NULL;
        size_t argv_size;
        int rc = encode_argv(p->argv, &argv, &argv_size);

        BIND(rc, sqlite3_bind_int64(st, 1, (sqlite3_int64) position));
        BIND(rc, sqlite3_bind_int(st, 2, p->pid));
        BIND(rc, sqlite3_bind_int(st, 3, p->ppid));
        BIND(rc, sqlite3_bind_int64(st, 4, (sqlite3_int64) p->start_time));
        BIND(rc, bind_text(st, 5, p->comm));
        BIND(rc, bind_text(st, 6, p->exe));
        BIND(rc, sqlite3_bind_blob(st, 7, argv, (int) argv_size, SQLITE_TRANSIENT));
        BIND(rc, sqlite3_bind_int64(st, 8, (sqlite3_int64) p->uid));
        BIND(rc, sqlite3_bind_int64(st, 9, (sqlite3_int64) p->gid));
        BIND(rc, sqlite3_bind_int(st, 10, p->no_new_privs));
        if (st == w->insert[INSERT_PROCESS_EXITED_LEADER]) {
                BIND(rc, p->has_exited_leader
                                 ? sqlite3_bind_text(st, 11, task_mode_to_string(p->exited_leader.mode), -1, SQLITE_STATIC)
                                 : sqlite3_bind_null(st, 11));
                BIND(rc, p->has_exited_leader ? sqlite3_bind_int64(st, 12, p->exited_leader.filter_count)
                                              : sqlite3_bind_null(st, 12));
        }
        if (rc == SQLITE_OK)
                rc = run(st);
        if (rc == SQLITE_OK && process_has_units(p))
                rc = insert_units(w, p, position);
        return rc == SQLITE_OK ? insert_threads(w, p, position) : rc;
}

static int insert_listener(Writer *w, const Listener *l, size_t position) {
        sqlite3_stmt *st = w->insert[INSERT_LISTENER], *sth = w->insert[INSERT_HOLDER];
        int rc = SQLITE_OK;

        BIND(rc, sqlite3_bind_int64(st, 1, (sqlite3_int64) position));
        BIND(rc, sqlite3_bind_int64(st, 2, (sqlite3_int64) l->id));
        BIND(rc, sqlite3_bind_int64(st, 3, (sqlite3_int64) l->filter_id));
        if (rc == SQLITE_OK)
                rc = run(st);
        for (size_t j = 0; rc == SQLITE_OK && j < l->n_holders; j++) {
                BIND(rc, sqlite3_bind_int64(sth, 1, (sqlite3_int64) position));
                BIND(rc, sqlite3_bind_int64(sth, 2, (sqlite3_int64) j));
                BIND(rc, sqlite3_bind_int(sth, 3, l->holders[j].pid));
                BIND(rc, sqlite3_bind_int(sth, 4, l->holders[j].fd));
                if (rc == SQLITE_OK)
                        rc = run(sth);
        }
        return rc;
}

static int insert_all(Writer *w, const Forest *f) {
        int rc = insert_meta(w, f);
        for (size_t i = 0; rc == SQLITE_OK && i < f->n_filters; i++)
                rc = insert_filter(w, f->filters[i], i);
        for (size_t i = 0; rc == SQLITE_OK && i < f->n_processes; i++)
                rc = insert_process(w, f->processes[i], i);
        for (size_t i = 0; rc == SQLITE_OK && i < f->n_listeners; i++)
                rc = insert_listener(w, f->listeners[i], i);
        return rc;
}

static bool some_thread_nnp_differs(const Forest *f) {
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++)
                        if (task_no_new_privs_differs(f->processes[i], &f->processes[i]->threads[j]))
                                return true;
        return false;
}

static bool some_exited_leader(const Forest *f) {
        for (size_t i = 0; i < f->n_processes; i++)
                if (f->processes[i]->has_exited_leader)
                        return true;
        return false;
}

/* The snapshot as an in-memory database. */
static int writer_build(Writer *w, const Forest *f) {
        int rc;

        if (!f->linked)
                return -EINVAL;
        rc = sqlite3_open_v2(":memory:", &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(w->db, snapshot_sqlite_schema, NULL, NULL, NULL);
        if (rc == SQLITE_OK && some_thread_nnp_differs(f))
                rc = sqlite3_exec(w->db, SNAPSHOT_SQLITE_ADD_THREAD_NNP, NULL, NULL, NULL);
        if (rc == SQLITE_OK && some_exited_leader(f))
                rc = sqlite3_exec(w->db, SNAPSHOT_SQLITE_ADD_EXITED_LEADER, NULL, NULL, NULL);
        if (rc == SQLITE_OK && forest_has_units(f))
                rc = sqlite3_exec(w->db, SNAPSHOT_SQLITE_ADD_UNITS, NULL, NULL, NULL);
        for (size_t i = 0; rc == SQLITE_OK && i < _INSERT_MAX; i++)
                if ((i != INSERT_THREAD_NNP || some_thread_nnp_differs(f)) &&
                    (i != INSERT_PROCESS_EXITED_LEADER || some_exited_leader(f)) &&
                    (i != INSERT_UNITS || forest_has_units(f)))
                        rc = sqlite3_prepare_v2(w->db, insert_sql[i], -1, &w->insert[i], NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(w->db, "BEGIN", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = insert_all(w, f);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK && w->db)
                log_debug("Failed to build the snapshot database: %s", sqlite3_errmsg(w->db));
        return sqlite_errno(w->db, rc);
}

int snapshot_sqlite_format(const Forest *f, void **ret, size_t *ret_size) {
        _cleanup_(writer_deinit) Writer w = {};
        sqlite3_int64 size;

        int r = writer_build(&w, f);
        if (r < 0)
                return r;
        unsigned char *image = sqlite3_serialize(w.db, "main", &size, 0);
        if (!image)
                return -ENOMEM;
        void *copy = malloc((size_t) size);
        if (copy)
                memcpy(copy, image, (size_t) size);
        sqlite3_free(image);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        *ret_size = (size_t) size;
        return 0;
}

/* "DIR/.NAME.XXXXXXXXXXXXXXXX": hidden, next to path (so that rename() is atomic), random. It is
 * created empty with 0666 & ~umask, as VACUUM INTO wants it. */
static int create_temp_next_to(const char *path, char **ret) {
        _cleanup_free_ char *d = strdup(path), *b = strdup(path);
        if (!d || !b)
                return -ENOMEM;
        for (int attempt = 0; attempt < 16; attempt++) {
                uint64_t rnd;
                if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                        return -errno;
                char *tmp;
                if (asprintf(&tmp, "%s/.%s.%016" PRIx64, dirname(d), basename(b), rnd) < 0)
                        return -ENOMEM;
                int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
                if (fd >= 0) {
                        close(fd);
                        *ret = tmp;
                        return 0;
                }
                int r = -errno;
                free(tmp);
                if (r != -EEXIST)
                        return r;
                strcpy(d, path); /* dirname() and basename() may have changed them */
                strcpy(b, path);
        }
        return -EEXIST;
}

static int vacuum_into(sqlite3 *db, const char *path) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_DONE) {
                log_debug("VACUUM INTO %s failed: %s", path, sqlite3_errmsg(db));
                return sqlite_errno(db, rc) ?: -EIO;
        }
        return 0;
}

static int fsync_path(const char *path, int flags) {
        _cleanup_close_ int fd = open(path, flags | O_CLOEXEC);
        if (fd < 0 || fsync(fd) < 0)
                return -errno;
        return 0;
}

static int fsync_parent(const char *path) {
        _cleanup_free_ char *d = strdup(path);
        if (!d)
                return -ENOMEM;
        return fsync_path(dirname(d), O_RDONLY | O_DIRECTORY);
}

int snapshot_sqlite_write(const Forest *f, const char *path) {
        _cleanup_(writer_deinit) Writer w = {};
        _cleanup_free_ char *tmp = NULL;

        int r = writer_build(&w, f);
        if (r < 0)
                return r;
        r = create_temp_next_to(path, &tmp);
        if (r < 0)
                return r;
        r = vacuum_into(w.db, tmp);
        if (r >= 0)
                r = fsync_path(tmp, O_RDONLY);
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        return fsync_parent(path);
}
