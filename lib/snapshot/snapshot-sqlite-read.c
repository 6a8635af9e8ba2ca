/* snapshot-sqlite-read.c: reads the SQLite snapshot file, treating it as hostile: header checks
 * before SQLite sees it, a hardened read-only in-memory connection, quick_check, the schema
 * compared with ours before any table is queried, and every value's type checked */
#include "snapshot/snapshot-sqlite-read.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <strings.h>

#include "core/sqlite-util.h"
#include "snapshot/snapshot-fd.h"
#include "snapshot/snapshot-sqlite-schema.h"
#include "snapshot/snapshot-validate.h"

#define NONE SIZE_MAX

static void sqlite3_closep(sqlite3 **db) {
        if (*db)
                sqlite3_close_v2(*db);
}

/* Text from the file, safe to compare and print: printable ASCII, at most size - 4 characters.
 * Only our own schema's text is printed (see check_columns()). */
static const char *printable_n(const char *s, char *buf, size_t size) {
        size_t n = 0;
        for (; s && s[n] && n + 4 < size; n++)
                buf[n] = s[n] >= 0x20 && s[n] < 0x7f ? s[n] : ' ';
        strcpy(buf + n, s && s[n] ? "..." : "");
        return buf;
}

static const char *printable(const char *s, char buf[static 48]) {
        return printable_n(s, buf, 48);
}

/* SQLite failed on the file. sqlite_errno() says what: the machine's failure (no memory) is
 * returned as it is; anything else is the file's doing, refused (-EINVAL) with SQLite's words for
 * it, as the readers' callers expect of a bad file (snapshot_sqlite_read_data()). */
static int sqlite_error(sqlite3 *db, int rc, char **error, const char *what) {
        int r = sqlite_errno(db, rc);
        if (r == -ENOMEM)
                return r;
        /* sqlite3_errstr(), not sqlite3_errmsg(): the latter may quote names from the file */
        return snapshot_error(error, "SQLite: %s: %s", what, sqlite3_errstr(rc));
}

/* The header (https://sqlite.org/fileformat.html), checked before SQLite sees the bytes. */

#define HEADER_SIZE 100

static uint32_t be16(const uint8_t *p) {
        return (uint32_t) p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static int check_pages(const uint8_t *d, size_t size, char **error) {
        uint32_t page_size = be16(d + 16) == 1 ? 65536 : be16(d + 16);
        if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)))
                return snapshot_error(error, "SQLite header: page size %u is not a power of two in 512..65536", page_size);
        if (size % page_size != 0)
                return snapshot_error(error, "SQLite: file is truncated: %zu bytes is not a whole number of %u-byte pages",
                                      size, page_size);
        /* The page count is valid when the change counter matches "version-valid-for". */
        uint64_t n_pages = be32(d + 28);
        if (be32(d + 24) == be32(d + 92) && n_pages * page_size > size)
                return snapshot_error(error, "SQLite: file is truncated: its header counts %" PRIu64 " pages of %u bytes, "
                                      "the file holds %zu bytes", n_pages, page_size, size);
        return 0;
}

static int check_header(const uint8_t *d, size_t size, char **error) {
        int r;

        if (size < sizeof(SNAPSHOT_SQLITE_MAGIC) || memcmp(d, SNAPSHOT_SQLITE_MAGIC, sizeof(SNAPSHOT_SQLITE_MAGIC)) != 0)
                return snapshot_error(error, "SQLite: not an SQLite file");
        if (size < HEADER_SIZE)
                return snapshot_error(error, "SQLite: file is truncated: %zu bytes, less than the %d-byte header", size,
                                      HEADER_SIZE);
        if (be32(d + 68) != SNAPSHOT_SQLITE_APPLICATION_ID)
                return snapshot_error(error, "SQLite: application_id is 0x%08x, not 0x%08x (\"SECS\"): not a sectree "
                                      "snapshot file", be32(d + 68), SNAPSHOT_SQLITE_APPLICATION_ID);
        if (be32(d + 60) != SNAPSHOT_FORMAT_VERSION)
                return snapshot_error(error, "SQLite: user_version %u is not a format version this reader knows (%d)",
                                      be32(d + 60), SNAPSHOT_FORMAT_VERSION);
        if ((r = check_pages(d, size, error)) < 0)
                return r;
        if (d[18] != 1 || d[19] != 1)
                return snapshot_error(error, "SQLite header: file format %u/%u: snapshot files use a rollback journal "
                                      "(1/1), not WAL", d[18], d[19]);
        if (be32(d + 56) != SQLITE_UTF8)
                return snapshot_error(error, "SQLite header: text encoding %u: snapshot files are UTF-8 (1)", be32(d + 56));
        return 0;
}

/* Opening */

static const struct {
        int op, value;
} hardening[] = {
        { SQLITE_DBCONFIG_DEFENSIVE, 1 },
        { SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0 },
        { SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0 },
        { SQLITE_DBCONFIG_ENABLE_TRIGGER, 0 },
        { SQLITE_DBCONFIG_ENABLE_VIEW, 0 },
        { SQLITE_DBCONFIG_ENABLE_FKEY, 0 },
        { SQLITE_DBCONFIG_DQS_DDL, 0 },
        { SQLITE_DBCONFIG_DQS_DML, 0 },
};

/* As https://sqlite.org/security.html suggests; the value limit leaves room above our own
 * (argv, 2 MiB) so that our message names the field. */
static const struct {
        int id, value;
} limits[] = {
        { SQLITE_LIMIT_LENGTH, 2 * SNAPSHOT_MAX_ARGV_BYTES },
        { SQLITE_LIMIT_SQL_LENGTH, 64 * 1024 },
        { SQLITE_LIMIT_COLUMN, 100 },
        { SQLITE_LIMIT_EXPR_DEPTH, 50 },
        { SQLITE_LIMIT_COMPOUND_SELECT, 3 },
        { SQLITE_LIMIT_VDBE_OP, 25000 },
        { SQLITE_LIMIT_FUNCTION_ARG, 8 },
        { SQLITE_LIMIT_ATTACHED, 0 },
        { SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 50 },
        { SQLITE_LIMIT_VARIABLE_NUMBER, 10 },
        { SQLITE_LIMIT_TRIGGER_DEPTH, 1 },
        { SQLITE_LIMIT_WORKER_THREADS, 0 },
};

static const char *const pragmas[] = {
        "PRAGMA trusted_schema = OFF",
        "PRAGMA cell_size_check = ON",
        "PRAGMA query_only = ON",
};

static int harden(sqlite3 *db, char **error) {
        int rc = sqlite3_enable_load_extension(db, 0);
        for (size_t i = 0; rc == SQLITE_OK && i < ELEMENTSOF(hardening); i++)
                rc = sqlite3_db_config(db, hardening[i].op, hardening[i].value, (int *) NULL);
        for (size_t i = 0; i < ELEMENTSOF(limits); i++)
                sqlite3_limit(db, limits[i].id, limits[i].value);
        for (size_t i = 0; rc == SQLITE_OK && i < ELEMENTSOF(pragmas); i++)
                rc = sqlite3_exec(db, pragmas[i], NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : sqlite_error(db, rc, error, "cannot harden the connection");
}

/* The bytes become a read-only in-memory database: SQLite never writes to them, takes no lock
 * and opens no journal, and nobody can change them between the checks and the queries. */
static int open_memory(const void *data, size_t size, sqlite3 **ret, char **error) {
        _cleanup_(sqlite3_closep) sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK)
                return sqlite_error(db, rc, error, "cannot open a connection");
        int r = harden(db, error);
        if (r < 0)
                return r;
        rc = sqlite3_deserialize(db, "main", (unsigned char *) data, (sqlite3_int64) size, (sqlite3_int64) size,
                                 SQLITE_DESERIALIZE_READONLY);
        if (rc != SQLITE_OK)
                return sqlite_error(db, rc, error, "cannot load the file");
        *ret = TAKE_PTR(db);
        return 0;
}

static int quick_check(sqlite3 *db, char **error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;

        int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlite_error(db, rc, error, "quick_check failed");
        const char *result = (const char *) sqlite3_column_text(st, 0);
        if (!result || !streq(result, "ok")) /* what it found names pages and indexes of the file: not shown */
                return snapshot_error(error, "SQLite: quick_check failed: the file is damaged");
        return 0;
}

/* The schema: exactly the objects (tables and their automatic indexes) and columns that
 * schema/snapshot-v1-sqlite.sql creates, compared with a database made from it. */

#define MAX_SCHEMA_OBJECTS 32

typedef struct SchemaObject {
        char *type, *name, *tbl_name;
        bool has_sql, seen;
} SchemaObject;

typedef struct Schema {
        sqlite3 *db;
        SchemaObject objects[MAX_SCHEMA_OBJECTS];
        size_t n_objects;
} Schema;

static void schema_deinit(Schema *s) {
        for (size_t i = 0; i < s->n_objects; i++) {
                free(s->objects[i].type);
                free(s->objects[i].name);
                free(s->objects[i].tbl_name);
        }
        sqlite3_close_v2(s->db);
        *s = (Schema) {};
}

static const char *const list_objects_sql = "SELECT type, name, tbl_name, sql FROM sqlite_master";

static int schema_add(Schema *s, sqlite3_stmt *st) {
        if (s->n_objects >= MAX_SCHEMA_OBJECTS)
                return -E2BIG;
        SchemaObject *o = &s->objects[s->n_objects++];
        o->type = strdup((const char *) sqlite3_column_text(st, 0));
        o->name = strdup((const char *) sqlite3_column_text(st, 1));
        o->tbl_name = strdup((const char *) sqlite3_column_text(st, 2));
        o->has_sql = sqlite3_column_type(st, 3) != SQLITE_NULL;
        return o->type && o->name && o->tbl_name ? 0 : -ENOMEM;
}

static int schema_load_reference(Schema *s) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(s->db, snapshot_sqlite_schema, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(s->db, list_objects_sql, -1, &st, NULL);
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int r = schema_add(s, st);
                if (r < 0)
                        return r;
                rc = SQLITE_OK;
        }
        return rc == SQLITE_DONE ? 0 : (rc & 0xff) == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

static SchemaObject *schema_find(Schema *s, const char *type, const char *name) {
        for (size_t i = 0; type && name && i < s->n_objects; i++)
                if (streq(s->objects[i].type, type) && streq(s->objects[i].name, name))
                        return &s->objects[i];
        return NULL;
}

static int check_object(Schema *ref, sqlite3_stmt *st, char **error) {
        const char *type = (const char *) sqlite3_column_text(st, 0), *name = (const char *) sqlite3_column_text(st, 1),
                   *tbl_name = (const char *) sqlite3_column_text(st, 2), *sql = (const char *) sqlite3_column_text(st, 3);
        char n[SNAPSHOT_ERROR_NAME_MAX];

        SchemaObject *o = schema_find(ref, type, name);
        if (!o) {
                bool known = type && (streq(type, "table") || streq(type, "index") || streq(type, "view") ||
                                      streq(type, "trigger"));
                return snapshot_error(error, "SQLite schema: unexpected %s %s", known ? type : "object",
                                      snapshot_error_name(name, n));
        }
        if (o->seen)
                return snapshot_error(error, "SQLite schema: %s \"%s\" appears twice", o->type, o->name);
        o->seen = true;
        if (!tbl_name || !streq(tbl_name, o->tbl_name) || o->has_sql != (sql != NULL))
                return snapshot_error(error, "SQLite schema: %s \"%s\" is not the one sectree defines", o->type, o->name);
        if (sql && strncasecmp(sql, "CREATE VIRTUAL", strlen("CREATE VIRTUAL")) == 0)
                return snapshot_error(error, "SQLite schema: %s \"%s\" is a virtual table", o->type, o->name);
        return 0;
}

static int check_objects(sqlite3 *db, Schema *ref, char **error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, list_objects_sql, -1, &st, NULL), r;

        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                if ((r = check_object(ref, st, error)) < 0)
                        return r;
                rc = SQLITE_OK;
        }
        if (rc != SQLITE_DONE)
                return sqlite_error(db, rc, error, "reading the schema");
        for (size_t i = 0; i < ref->n_objects; i++)
                if (!ref->objects[i].seen)
                        return snapshot_error(error, "SQLite schema: missing %s \"%s\"", ref->objects[i].type,
                                              ref->objects[i].name);
        return 0;
}

typedef struct OptionalColumns {
        bool thread_nnp;    /* threads.no_new_privs */
        bool exited_leader; /* processes.exited_leader_mode, exited_leader_filters */
} OptionalColumns;

static const char *const columns_sql =
        "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1) ORDER BY cid";

/* One column as a string to compare and to show: "position INTEGER PRIMARY KEY(1)". */
static void describe_column(sqlite3_stmt *st, char *buf, size_t size) {
        char name[48], type[48], dflt[48];
        snprintf(buf, size, "%s %s%s%s%s%s%s%.0d%s", printable((const char *) sqlite3_column_text(st, 0), name),
                 printable((const char *) sqlite3_column_text(st, 1), type),
                 sqlite3_column_int(st, 2) ? " NOT NULL" : "",
                 sqlite3_column_type(st, 3) != SQLITE_NULL ? " DEFAULT " : "",
                 sqlite3_column_type(st, 3) != SQLITE_NULL ? printable((const char *) sqlite3_column_text(st, 3), dflt) : "",
                 sqlite3_column_int(st, 5) ? " HIDDEN/GENERATED" : "",
                 sqlite3_column_int(st, 4) ? " PRIMARY KEY(" : "", sqlite3_column_int(st, 4),
                 sqlite3_column_int(st, 4) ? ")" : "");
}

static int prepare_columns(sqlite3 *db, const char *table, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v2(db, columns_sql, -1, ret, NULL);
        return rc == SQLITE_OK ? sqlite3_bind_text(*ret, 1, table, -1, SQLITE_STATIC) : rc;
}

/* The optional last columns a table may have, all of them or none (SNAPSHOT_SQLITE_ADD_*): the
 * cursor theirs stands on the first column after the schema's. */
static bool optional_last_columns(const char *table, sqlite3_stmt *theirs, OptionalColumns *ret) {
        static const char *const threads[] = { SNAPSHOT_SQLITE_THREAD_NNP_COLUMN, NULL };
        static const char *const processes[] = SNAPSHOT_SQLITE_EXITED_LEADER_COLUMNS;
        const char *const *want = streq(table, "threads") ? threads : streq(table, "processes") ? processes : NULL;
        size_t n = streq(table, "processes") ? ELEMENTSOF(processes) : 1;
        char have[256];

        for (size_t i = 0; want && i < n; i++) {
                if (i > 0 && sqlite3_step(theirs) != SQLITE_ROW)
                        return false;
                describe_column(theirs, have, sizeof(have));
                if (!streq(have, want[i]))
                        return false;
        }
        if (!want || sqlite3_step(theirs) != SQLITE_DONE)
                return false;
        if (streq(table, "threads"))
                ret->thread_nnp = true;
        else
                ret->exited_leader = true;
        return true;
}

static int check_columns(sqlite3 *db, Schema *ref, const char *table, OptionalColumns *ret_extra, char **error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *mine = NULL, *theirs = NULL;
        char want[256], have[256];

        int rc = prepare_columns(ref->db, table, &mine);
        if (rc != SQLITE_OK)
                return -EIO;
        rc = prepare_columns(db, table, &theirs);
        for (int i = 0; rc == SQLITE_OK; i++) {
                int a = sqlite3_step(mine), b = sqlite3_step(theirs);
                if (a == SQLITE_DONE && b == SQLITE_DONE)
                        return 0;
                if (a == SQLITE_DONE && b == SQLITE_ROW && optional_last_columns(table, theirs, ret_extra))
                        return 0;
                if (b != SQLITE_ROW && b != SQLITE_DONE)
                        rc = b;
                else if (a != SQLITE_ROW)
                        return snapshot_error(error, "SQLite schema: table \"%s\" has more columns than the %d expected",
                                              table, i);
                else if (b != SQLITE_ROW)
                        return snapshot_error(error, "SQLite schema: table \"%s\" has %d columns, fewer than expected",
                                              table, i);
                else {
                        describe_column(mine, want, sizeof(want));
                        describe_column(theirs, have, sizeof(have));
                        if (!streq(want, have))
                                return snapshot_error(error, "SQLite schema: table \"%s\" column %d is not \"%s\"",
                                                      table, i, want);
                }
        }
        return sqlite_error(db, rc, error, "reading the schema");
}

static int check_schema(sqlite3 *db, OptionalColumns *ret_optional, char **error) {
        _cleanup_(schema_deinit) Schema ref = {};
        int r = schema_load_reference(&ref);
        if (r < 0)
                return r;
        if ((r = check_objects(db, &ref, error)) < 0)
                return r;
        for (size_t i = 0; i < ref.n_objects; i++)
                if (streq(ref.objects[i].type, "table") &&
                    (r = check_columns(db, &ref, ref.objects[i].name, ret_optional, error)) < 0)
                        return r;
        return 0;
}

/* Values, with their types checked: SQLite stores any type in any column. */

static const char *value_type_name(int type) {
        switch (type) {
        case SQLITE_INTEGER:
                return "an integer";
        case SQLITE_FLOAT:
                return "a real number";
        case SQLITE_TEXT:
                return "text";
        case SQLITE_BLOB:
                return "a blob";
        default:
                return "null";
        }
}

typedef struct Row {
        sqlite3_stmt *st;
        const char *where; /* "filters[3]" */
        char **error;
} Row;

static int type_error(const Row *row, int i, const char *expected, bool nullable) {
        return snapshot_error(row->error, "%s.%s: expected %s%s, got %s", row->where, sqlite3_column_name(row->st, i),
                              expected, nullable ? " or null" : "", value_type_name(sqlite3_column_type(row->st, i)));
}

static int col_int(const Row *row, int i, int64_t min, int64_t max, bool nullable, int64_t *ret) {
        int type = sqlite3_column_type(row->st, i);
        *ret = 0;
        if (type == SQLITE_NULL && nullable)
                return 0;
        if (type != SQLITE_INTEGER)
                return type_error(row, i, "an integer", nullable);
        int64_t v = sqlite3_column_int64(row->st, i);
        if (v < min || v > max)
                return snapshot_error(row->error, "%s.%s: %" PRId64 " is out of range %" PRId64 "..%" PRId64, row->where,
                                      sqlite3_column_name(row->st, i), v, min, max);
        *ret = v;
        return 0;
}

static int col_id(const Row *row, int i, bool nullable, uint64_t *ret) {
        int64_t v;
        int r = col_int(row, i, 1, INT64_MAX, nullable, &v);
        *ret = (uint64_t) v;
        return r;
}

static int col_bool(const Row *row, int i, bool *ret) {
        int64_t v;
        int r = col_int(row, i, 0, 1, false, &v);
        *ret = v != 0;
        return r;
}

/* Text without NUL bytes, at most max bytes; NULL for null when nullable. */
static int col_text(const Row *row, int i, size_t max, bool nullable, const char **ret) {
        int type = sqlite3_column_type(row->st, i);
        *ret = NULL;
        if (type == SQLITE_NULL && nullable)
                return 0;
        if (type != SQLITE_TEXT)
                return type_error(row, i, "text", nullable);
        const char *s = (const char *) sqlite3_column_text(row->st, i);
        size_t n = (size_t) sqlite3_column_bytes(row->st, i);
        if (!s)
                return -ENOMEM;
        if (strlen(s) != n)
                return snapshot_error(row->error, "%s.%s: contains a NUL byte", row->where, sqlite3_column_name(row->st, i));
        if (n > max)
                return snapshot_error(row->error, "%s.%s: %zu bytes, more than the limit of %zu", row->where,
                                      sqlite3_column_name(row->st, i), n, max);
        *ret = s;
        return 0;
}

static int col_blob(const Row *row, int i, size_t max, const uint8_t **ret, size_t *ret_size) {
        if (sqlite3_column_type(row->st, i) != SQLITE_BLOB)
                return type_error(row, i, "a blob", false);
        *ret = sqlite3_column_blob(row->st, i);
        *ret_size = (size_t) sqlite3_column_bytes(row->st, i);
        if (*ret_size > max)
                return snapshot_error(row->error, "%s.%s: %zu bytes, more than the limit of %zu", row->where,
                                      sqlite3_column_name(row->st, i), *ret_size, max);
        return 0;
}

/* Reading the tables */

typedef struct Reader {
        sqlite3 *db;
        SnapshotBuilder b;
        Process **processes; /* by position */
        size_t n_processes;
        Listener **listeners; /* by position */
        size_t n_listeners;
        OptionalColumns optional; /* which optional last columns the file has */
        char **error;
} Reader;

static void reader_deinit(Reader *rd) {
        snapshot_builder_deinit(&rd->b);
        free(rd->processes);
        free(rd->listeners);
        sqlite3_close_v2(rd->db);
}

static int prepare(Reader *rd, const char *sql, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v2(rd->db, sql, -1, ret, NULL);
        return rc == SQLITE_OK ? 0 : sqlite_error(rd->db, rc, rd->error, "preparing a query");
}

/* Step to the next row: 1, 0 at the end, or an error naming the table. */
static int step(Reader *rd, sqlite3_stmt *st, const char *table) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        char what[64];
        snprintf(what, sizeof(what), "reading %s", table);
        return sqlite_error(rd->db, rc, rd->error, what);
}

static int check_position(Reader *rd, const char *table, int64_t position, size_t expected) {
        if (position != (int64_t) expected)
                return snapshot_error(rd->error, "%s: position %" PRId64 " where %zu was expected (positions are 0, 1, "
                                      "2, ... without gaps)", table, position, expected);
        return 0;
}

static const struct {
        const char *sql, *what;
        size_t max;
} count_queries[] = {
        { "SELECT count(*) FROM filters", "filters", SNAPSHOT_MAX_FILTERS },
        { "SELECT count(*) FROM processes", "processes", SNAPSHOT_MAX_PROCESSES },
        { "SELECT count(*) FROM threads", "threads", SNAPSHOT_MAX_TASKS },
        { "SELECT count(*) FROM listeners", "listeners", SNAPSHOT_MAX_LISTENERS },
        { "SELECT count(*) FROM holders", "holders", SNAPSHOT_MAX_HOLDERS },
};

static int check_counts(Reader *rd, size_t counts[static ELEMENTSOF(count_queries)]) {
        for (size_t i = 0; i < ELEMENTSOF(count_queries); i++) {
                _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
                int r = prepare(rd, count_queries[i].sql, &st);
                if (r < 0 || (r = step(rd, st, count_queries[i].what)) < 0)
                        return r;
                int64_t n = sqlite3_column_int64(st, 0);
                if (n < 0 || (uint64_t) n > count_queries[i].max)
                        return snapshot_error(rd->error, "%s: %" PRId64 " rows, more than the limit of %zu",
                                              count_queries[i].what, n, count_queries[i].max);
                counts[i] = (size_t) n;
        }
        return 0;
}

static int read_meta_row(Reader *rd, const Row *row) {
        Forest *f = rd->b.forest;
        const char *format, *created, *kernel, *arch, *hostname, *backend, *identity, *name, *consistency;
        int64_t version, root, uid;
        int r;

        if ((r = col_text(row, 0, SNAPSHOT_MAX_HOST_STRING, false, &format)) < 0)
                return r;
        if (!streq(format, SNAPSHOT_FORMAT_NAME))
                return snapshot_error(rd->error, "meta.format: expected \"%s\": not a sectree snapshot", SNAPSHOT_FORMAT_NAME);
        if ((r = col_int(row, 1, INT64_MIN, INT64_MAX, false, &version)) < 0)
                return r;
        if (version != SNAPSHOT_FORMAT_VERSION)
                return snapshot_error(rd->error, "meta.version: %" PRId64 " is not supported (this reader knows version %d)",
                                      version, SNAPSHOT_FORMAT_VERSION);
        if ((r = col_text(row, 2, SNAPSHOT_TIME_MAX + 8, false, &created)) < 0 ||
            (r = col_text(row, 3, SNAPSHOT_MAX_HOST_STRING, true, &kernel)) < 0 ||
            (r = col_text(row, 4, SNAPSHOT_MAX_HOST_STRING, true, &arch)) < 0 ||
            (r = col_text(row, 5, SNAPSHOT_MAX_HOST_STRING, true, &hostname)) < 0 ||
            (r = col_text(row, 6, SNAPSHOT_MAX_HOST_STRING, false, &backend)) < 0 ||
            (r = col_text(row, 7, SNAPSHOT_MAX_HOST_STRING, false, &identity)) < 0 ||
            (r = col_int(row, 8, 0, SNAPSHOT_MAX_PID, false, &root)) < 0 ||
            (r = col_text(row, 9, SNAPSHOT_MAX_NAME, true, &name)) < 0 ||
            (r = col_int(row, 10, 0, SNAPSHOT_MAX_UID, false, &uid)) < 0 ||
            (r = col_text(row, 11, 16, false, &consistency)) < 0)
                return r;
        f->snapshot.consistency = snapshot_consistency_from_string(consistency);
        if (f->snapshot.consistency < 0)
                return snapshot_error(rd->error, "meta.snapshot_consistency: expected one of none, iterator, frozen");
        f->snapshot.taken_by_uid = (uint32_t) uid;
        if (snapshot_info_set_name(&f->snapshot, name) < 0)
                return -ENOMEM;
        if (snapshot_parse_time(created, &f->created_at_usec) < 0)
                return snapshot_error(rd->error, "meta.created_at: expected an RFC 3339 UTC time like "
                                      "2026-12-03T07:20:49.123456Z");
        f->identity = identity_kind_from_string(identity);
        if (f->identity < 0)
                return snapshot_error(rd->error, "meta.source_identity: expected one of exact, inferred");
        f->root = (pid_t) root;
        f->backend = strdup(backend);
        if (!f->backend)
                return -ENOMEM;
        return host_info_set(&f->host, kernel, arch, hostname);
}

static int read_meta(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, "SELECT format, version, created_at, host_kernel, host_arch, host_hostname, source_backend, "
                        "source_identity, root, snapshot_name, snapshot_taken_by_uid, snapshot_consistency FROM meta", &st);
        if (r < 0 || (r = step(rd, st, "meta")) < 0)
                return r;
        if (r == 0)
                return snapshot_error(rd->error, "meta: no row, expected exactly one");
        if ((r = read_meta_row(rd, &(Row) { st, "meta", rd->error })) < 0 || (r = step(rd, st, "meta")) < 0)
                return r;
        if (r > 0)
                return snapshot_error(rd->error, "meta: more than one row, expected exactly one");
        return 0;
}

static int read_filter_row(Reader *rd, const Row *row, size_t i) {
        struct sock_filter insns[SNAPSHOT_MAX_FILTER_INSNS];
        SnapshotFilterFields x = {};
        const char *digest, *identity;
        const uint8_t *program;
        size_t size;
        int64_t length;
        int r;

        if ((r = col_id(row, 1, false, &x.id)) < 0 || (r = col_id(row, 2, true, &x.parent)) < 0 ||
            (r = col_int(row, 3, 0, INT64_MAX, false, &length)) < 0 ||
            (r = col_blob(row, 4, SNAPSHOT_MAX_FILTER_INSNS * 8, &program, &size)) < 0 ||
            (r = col_text(row, 5, PROG_DIGEST_STRING_MAX, false, &digest)) < 0 ||
            (r = col_bool(row, 6, &x.log)) < 0 || (r = col_bool(row, 7, &x.wait_killable_recv)) < 0 ||
            (r = col_id(row, 8, true, &x.listener)) < 0 || (r = col_text(row, 9, 16, false, &identity)) < 0)
                return r;
        if (size % 8 != 0)
                return snapshot_error(rd->error, "%s.program: %zu bytes, not a whole number of 8-byte instructions",
                                      row->where, size);
        if (prog_digest_from_string(digest, x.digest) < 0)
                return snapshot_error(rd->error, "%s.digest: expected \"sha256:\" and 64 hex digits", row->where);
        x.identity = identity_kind_from_string(identity);
        if (x.identity < 0)
                return snapshot_error(rd->error, "%s.identity: expected one of exact, inferred", row->where);
        prog_from_wire(program, size / PROG_INSN_WIRE_SIZE, insns);
        x.length = (uint64_t) length;
        x.insns = insns;
        x.n_insns = size / 8;
        return snapshot_builder_add_filter(&rd->b, i, &x, rd->error);
}

static int read_filters(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, "SELECT position, id, parent, length, program, digest, log, wait_killable_recv, listener, "
                        "identity FROM filters ORDER BY position", &st);
        for (size_t i = 0; r >= 0 && (r = step(rd, st, "filters")) > 0; i++) {
                char where[48];
                snprintf(where, sizeof(where), "filters[%zu]", i);
                Row row = { st, where, rd->error };
                int64_t position;
                if ((r = col_int(&row, 0, 0, INT64_MAX, false, &position)) < 0 ||
                    (r = check_position(rd, "filters", position, i)) < 0 || (r = read_filter_row(rd, &row, i)) < 0)
                        return r;
        }
        return r;
}

/* argv: every argument followed by a NUL. */
static int decode_argv(Process *p, const Row *row, const uint8_t *blob, size_t size) {
        size_t n = 0;
        if (size == 0)
                return 0;
        if (blob[size - 1] != 0)
                return snapshot_error(row->error, "%s.argv: does not end in a NUL byte", row->where);
        for (size_t i = 0; i < size; i++)
                n += blob[i] == 0;
        p->argv = calloc(n + 1, sizeof(char *));
        if (!p->argv)
                return -ENOMEM;
        const char *s = (const char *) blob;
        for (size_t j = 0; j < n; j++, s += strlen(s) + 1) {
                p->argv[j] = strdup(s);
                if (!p->argv[j])
                        return -ENOMEM;
        }
        return 0;
}

/* processes.exited_leader_mode, exited_leader_filters (columns 10, 11): both NULL for none. */
static int read_exited_leader(Reader *rd, const Row *row, Process *p) {
        const char *mode_string;
        int64_t filters;
        int r;

        if (sqlite3_column_type(row->st, 10) == SQLITE_NULL && sqlite3_column_type(row->st, 11) == SQLITE_NULL)
                return 0;
        if ((r = col_text(row, 10, 16, false, &mode_string)) < 0 ||
            (r = col_int(row, 11, 0, SNAPSHOT_MAX_PATH_INSNS, false, &filters)) < 0)
                return r;
        TaskMode mode = task_mode_from_string(mode_string);
        if (mode < 0)
                return snapshot_error(rd->error, "%s.exited_leader.mode: expected one of disabled, strict, filter",
                                      row->where);
        process_set_exited_leader(p, mode, (unsigned) filters);
        return 0;
}

static int read_process_row(Reader *rd, const Row *row, size_t i) {
        const char *comm, *exe;
        const uint8_t *argv;
        size_t argv_size;
        int64_t pid, ppid, start_time, uid, gid;
        bool nnp;
        Process *p;
        int r;

        if ((r = col_int(row, 1, 1, SNAPSHOT_MAX_PID, false, &pid)) < 0 ||
            (r = col_int(row, 2, 0, SNAPSHOT_MAX_PID, false, &ppid)) < 0 ||
            (r = col_int(row, 3, 0, INT64_MAX, false, &start_time)) < 0 ||
            (r = col_text(row, 4, 64, false, &comm)) < 0 || (r = col_text(row, 5, SNAPSHOT_MAX_PATH, true, &exe)) < 0 ||
            (r = col_blob(row, 6, SNAPSHOT_MAX_ARGV_BYTES, &argv, &argv_size)) < 0 ||
            (r = col_int(row, 7, 0, UINT32_MAX, false, &uid)) < 0 || (r = col_int(row, 8, 0, UINT32_MAX, false, &gid)) < 0 ||
            (r = col_bool(row, 9, &nnp)) < 0)
                return r;
        if ((r = snapshot_builder_add_process(&rd->b, i, (pid_t) pid, &p, rd->error)) < 0)
                return r;
        rd->processes[i] = p;
        p->ppid = (pid_t) ppid;
        p->start_time = (uint64_t) start_time;
        p->uid = (uid_t) uid;
        p->gid = (gid_t) gid;
        p->no_new_privs = nnp;
        if ((r = snapshot_builder_set_comm(p, i, comm, rd->error)) < 0 || (r = process_set_exe(p, exe)) < 0)
                return r;
        if (rd->optional.exited_leader && (r = read_exited_leader(rd, row, p)) < 0)
                return r;
        return decode_argv(p, row, argv, argv_size);
}

static int read_processes(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, rd->optional.exited_leader
                                    ? "SELECT position, pid, ppid, start_time, comm, exe, argv, uid, gid, no_new_privs, "
                                      "exited_leader_mode, exited_leader_filters FROM processes ORDER BY position"
                                    : "SELECT position, pid, ppid, start_time, comm, exe, argv, uid, gid, no_new_privs FROM "
                                      "processes ORDER BY position",
                        &st);
        for (size_t i = 0; r >= 0 && (r = step(rd, st, "processes")) > 0; i++) {
                char where[48];
                snprintf(where, sizeof(where), "processes[%zu]", i);
                Row row = { st, where, rd->error };
                int64_t position;
                if (i >= rd->n_processes)
                        return snapshot_error(rd->error, "processes: more rows than counted");
                if ((r = col_int(&row, 0, 0, INT64_MAX, false, &position)) < 0 ||
                    (r = check_position(rd, "processes", position, i)) < 0 || (r = read_process_row(rd, &row, i)) < 0)
                        return r;
        }
        return r;
}

/* Rows of a nested table (threads of processes, holders of listeners), ordered by
 * (parent, position): the parent must be a position of the outer table, the positions inside
 * one parent 0, 1, 2, ... */
typedef struct Nested {
        const char *outer, *inner; /* "processes", "threads" */
        size_t n_outer;
        int64_t parent;
        size_t next;
} Nested;

static int nested_next(Reader *rd, Nested *n, const Row *row, size_t *ret_parent, size_t *ret_position) {
        int64_t parent, position;
        int r;

        if ((r = col_int(row, 0, 0, INT64_MAX, false, &parent)) < 0 ||
            (r = col_int(row, 1, 0, INT64_MAX, false, &position)) < 0)
                return r;
        if ((uint64_t) parent >= n->n_outer)
                return snapshot_error(rd->error, "%s: row for %s %" PRId64 ", which is not a position in %s (0..%zu)",
                                      n->inner, n->outer, parent, n->outer, n->n_outer);
        if (parent != n->parent) {
                n->parent = parent;
                n->next = 0;
        }
        if (position != (int64_t) n->next)
                return snapshot_error(rd->error, "%s[%" PRId64 "].%s: position %" PRId64 " where %zu was expected "
                                      "(positions are 0, 1, 2, ... without gaps)", n->outer, parent, n->inner, position,
                                      n->next);
        *ret_parent = (size_t) parent;
        *ret_position = n->next++;
        return 0;
}

static int read_thread_row(Reader *rd, const Row *row, size_t p, size_t j) {
        const char *mode_string;
        int64_t tid;
        uint64_t filter;
        int r;

        if ((r = col_int(row, 2, 1, SNAPSHOT_MAX_PID, false, &tid)) < 0 ||
            (r = col_text(row, 3, 16, false, &mode_string)) < 0 || (r = col_id(row, 4, true, &filter)) < 0)
                return r;
        TaskMode mode = task_mode_from_string(mode_string);
        if (mode < 0)
                return snapshot_error(rd->error, "%s.mode: expected one of disabled, strict, filter", row->where);
        r = snapshot_builder_add_thread(&rd->b, rd->processes[p], p, j, (pid_t) tid, mode, filter, rd->error);
        if (r < 0 || !rd->optional.thread_nnp || sqlite3_column_type(row->st, 5) == SQLITE_NULL)
                return r; /* no own value: the process's */
        bool nnp;
        if ((r = col_bool(row, 5, &nnp)) < 0)
                return r;
        task_set_no_new_privs(&rd->processes[p]->threads[rd->processes[p]->n_threads - 1], nnp);
        return 0;
}

static int read_threads(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        Nested n = { "processes", "threads", rd->n_processes, -1, 0 };
        char where[80];
        size_t p, j;

        int r = prepare(rd, rd->optional.thread_nnp ? "SELECT process, position, tid, mode, filter, no_new_privs FROM threads "
                                             "ORDER BY process, position"
                                           : "SELECT process, position, tid, mode, filter FROM threads ORDER BY process, "
                                             "position",
                        &st);
        while (r >= 0 && (r = step(rd, st, "threads")) > 0) {
                Row row = { st, "threads", rd->error };
                if ((r = nested_next(rd, &n, &row, &p, &j)) < 0)
                        return r;
                snprintf(where, sizeof(where), "processes[%zu].threads[%zu]", p, j);
                row.where = where;
                if ((r = read_thread_row(rd, &row, p, j)) < 0)
                        return r;
        }
        return r;
}

static int read_listeners(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = prepare(rd, "SELECT position, id, filter FROM listeners ORDER BY position", &st);
        for (size_t i = 0; r >= 0 && (r = step(rd, st, "listeners")) > 0; i++) {
                char where[48];
                snprintf(where, sizeof(where), "listeners[%zu]", i);
                Row row = { st, where, rd->error };
                int64_t position;
                uint64_t id, filter;
                if (i >= rd->n_listeners)
                        return snapshot_error(rd->error, "listeners: more rows than counted");
                if ((r = col_int(&row, 0, 0, INT64_MAX, false, &position)) < 0 ||
                    (r = check_position(rd, "listeners", position, i)) < 0 || (r = col_id(&row, 1, false, &id)) < 0 ||
                    (r = col_id(&row, 2, false, &filter)) < 0 ||
                    (r = snapshot_builder_add_listener(&rd->b, i, id, filter, &rd->listeners[i], rd->error)) < 0)
                        return r;
        }
        return r;
}

static int read_holders(Reader *rd) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        Nested n = { "listeners", "holders", rd->n_listeners, -1, 0 };
        char where[80];
        size_t l, j;

        int r = prepare(rd, "SELECT listener, position, pid, fd FROM holders ORDER BY listener, position", &st);
        while (r >= 0 && (r = step(rd, st, "holders")) > 0) {
                Row row = { st, "holders", rd->error };
                int64_t pid, fd;
                if ((r = nested_next(rd, &n, &row, &l, &j)) < 0)
                        return r;
                snprintf(where, sizeof(where), "listeners[%zu].holders[%zu]", l, j);
                row.where = where;
                if ((r = col_int(&row, 2, 1, SNAPSHOT_MAX_PID, false, &pid)) < 0 ||
                    (r = col_int(&row, 3, 0, INT32_MAX, false, &fd)) < 0 ||
                    (r = snapshot_builder_add_holder(&rd->b, rd->listeners[l], l, j, (pid_t) pid, (int) fd, rd->error)) < 0)
                        return r;
        }
        return r;
}

static int read_tables(Reader *rd) {
        size_t counts[ELEMENTSOF(count_queries)];
        int r;

        /* meta first: a file of another format or version says so before anything else. */
        if ((r = read_meta(rd)) < 0 || (r = check_counts(rd, counts)) < 0)
                return r;
        rd->n_processes = counts[1];
        rd->n_listeners = counts[3];
        rd->processes = calloc(rd->n_processes + 1, sizeof(Process *));
        rd->listeners = calloc(rd->n_listeners + 1, sizeof(Listener *));
        if (!rd->processes || !rd->listeners)
                return -ENOMEM;
        if ((r = read_filters(rd)) < 0 || (r = read_processes(rd)) < 0 ||
            (r = read_threads(rd)) < 0 || (r = read_listeners(rd)) < 0 || (r = read_holders(rd)) < 0)
                return r;
        return 0;
}

int snapshot_sqlite_read_data(const void *data, size_t size, Forest **ret, char **error) {
        _cleanup_(reader_deinit) Reader rd = { .error = error };
        int r;

        if (error)
                *error = NULL;
        if (size > SNAPSHOT_MAX_FILE_SIZE)
                return snapshot_error(error, "snapshot: %zu bytes, more than the limit of %u (64 MiB)", size,
                                      SNAPSHOT_MAX_FILE_SIZE);
        if ((r = check_header(data, size, error)) < 0 || (r = open_memory(data, size, &rd.db, error)) < 0 ||
            (r = quick_check(rd.db, error)) < 0 || (r = check_schema(rd.db, &rd.optional, error)) < 0 ||
            (r = snapshot_builder_init(&rd.b)) < 0 || (r = read_tables(&rd)) < 0)
                return r;
        return snapshot_builder_finish(&rd.b, ret, error);
}

int snapshot_sqlite_read(const char *path, Forest **ret, char **error) {
        _cleanup_free_ char *data = NULL;
        size_t size;

        if (error)
                *error = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        int r = read_full_fd(fd, SNAPSHOT_MAX_FILE_SIZE, &data, &size);
        if (r == -EFBIG)
                return snapshot_error(error, "snapshot: more than the limit of %u bytes (64 MiB)", SNAPSHOT_MAX_FILE_SIZE);
        if (r < 0)
                return r;
        return snapshot_sqlite_read_data(data, size, ret, error);
}
