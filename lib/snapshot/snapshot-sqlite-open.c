/* snapshot-sqlite-open.c: a hostile SQLite snapshot file opened: header checks before SQLite sees
 * it, a hardened read-only in-memory connection, quick_check, and the schema compared with ours
 * before any table is queried */
#include "snapshot/snapshot-sqlite-open.h"

#include <strings.h>

#include "core/sqlite-util.h"
#include "snapshot/snapshot-format.h"
#include "snapshot/snapshot-sqlite-format.h"
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
int snapshot_sqlite_error(sqlite3 *db, int rc, char **error, const char *what) {
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

static int check_header(const uint8_t *d, size_t size, unsigned *ret_version, char **error) {
        int r;

        if (size < sizeof(SNAPSHOT_SQLITE_MAGIC) || memcmp(d, SNAPSHOT_SQLITE_MAGIC, sizeof(SNAPSHOT_SQLITE_MAGIC)) != 0)
                return snapshot_error(error, "SQLite: not an SQLite file");
        if (size < HEADER_SIZE)
                return snapshot_error(error, "SQLite: file is truncated: %zu bytes, less than the %d-byte header", size,
                                      HEADER_SIZE);
        if (be32(d + 68) != SNAPSHOT_SQLITE_APPLICATION_ID)
                return snapshot_error(error, "SQLite: application_id is 0x%08x, not 0x%08x (\"SECS\"): not a sectree "
                                      "snapshot file", be32(d + 68), SNAPSHOT_SQLITE_APPLICATION_ID);
        if (be32(d + 60) < SNAPSHOT_FORMAT_VERSION_1 || be32(d + 60) > SNAPSHOT_FORMAT_VERSION)
                return snapshot_error(error, "SQLite: user_version %u is not a format version this reader knows (%d to %d)",
                                      be32(d + 60), SNAPSHOT_FORMAT_VERSION_1, SNAPSHOT_FORMAT_VERSION);
        *ret_version = be32(d + 60);
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
        return rc == SQLITE_OK ? 0 : snapshot_sqlite_error(db, rc, error, "cannot harden the connection");
}

/* The bytes become a read-only in-memory database: SQLite never writes to them, takes no lock
 * and opens no journal, and nobody can change them between the checks and the queries. */
static int open_memory(const void *data, size_t size, sqlite3 **ret, char **error) {
        _cleanup_(sqlite3_closep) sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK)
                return snapshot_sqlite_error(db, rc, error, "cannot open a connection");
        int r = harden(db, error);
        if (r < 0)
                return r;
        rc = sqlite3_deserialize(db, "main", (unsigned char *) data, (sqlite3_int64) size, (sqlite3_int64) size,
                                 SQLITE_DESERIALIZE_READONLY);
        if (rc != SQLITE_OK)
                return snapshot_sqlite_error(db, rc, error, "cannot load the file");
        *ret = TAKE_PTR(db);
        return 0;
}

static int quick_check(sqlite3 *db, char **error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;

        int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return snapshot_sqlite_error(db, rc, error, "quick_check failed");
        const char *result = (const char *) sqlite3_column_text(st, 0);
        if (!result || !streq(result, "ok")) /* what it found names pages and indexes of the file: not shown */
                return snapshot_error(error, "SQLite: quick_check failed: the file is damaged");
        return 0;
}

/* The schema: exactly the objects (tables and their automatic indexes) and columns that
 * schema/snapshot-v1-sqlite.sql creates (with version 2's units table when the header says 2),
 * compared with a database made from it. */

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

/* The schema of the file's version: version 1's, and version 2's units table. */
static int schema_load_reference(Schema *s, unsigned version) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(s->db, snapshot_sqlite_schema, NULL, NULL, NULL);
        if (rc == SQLITE_OK && version >= SNAPSHOT_FORMAT_VERSION_UNITS)
                rc = sqlite3_exec(s->db, SNAPSHOT_SQLITE_ADD_UNITS, NULL, NULL, NULL);
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
                return snapshot_sqlite_error(db, rc, error, "reading the schema");
        for (size_t i = 0; i < ref->n_objects; i++)
                if (!ref->objects[i].seen)
                        return snapshot_error(error, "SQLite schema: missing %s \"%s\"", ref->objects[i].type,
                                              ref->objects[i].name);
        return 0;
}


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
static bool optional_last_columns(const char *table, sqlite3_stmt *theirs, SnapshotSqliteOptional *ret) {
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

static int check_columns(sqlite3 *db, Schema *ref, const char *table, SnapshotSqliteOptional *ret_extra, char **error) {
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
        return snapshot_sqlite_error(db, rc, error, "reading the schema");
}

static int check_schema(sqlite3 *db, SnapshotSqliteOptional *ret_optional, char **error) {
        _cleanup_(schema_deinit) Schema ref = {};
        int r = schema_load_reference(&ref, ret_optional->version);
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

int snapshot_sqlite_open(const void *data, size_t size, sqlite3 **ret_db, SnapshotSqliteOptional *ret_optional,
                         char **error) {
        *ret_optional = (SnapshotSqliteOptional) {};
        int r = check_header(data, size, &ret_optional->version, error);
        if (r < 0)
                return r;
        r = open_memory(data, size, ret_db, error);
        if (r < 0)
                return r;
        r = quick_check(*ret_db, error);
        if (r < 0)
                return r;
        return check_schema(*ret_db, ret_optional, error);
}
