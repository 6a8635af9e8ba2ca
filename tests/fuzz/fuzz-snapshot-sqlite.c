/* fuzz-snapshot-sqlite.c: libFuzzer target for the SQLite snapshot file reader. Any bytes must be
 * refused with a message or read; what is read must survive both formats unchanged.
 *
 * Byte mutations of a database rarely get past its page structure, so an input starting with 'Q'
 * is SQL instead: the next byte picks a sample snapshot, the rest is run on a writable in-memory
 * copy of it (as a hostile writer could: any values, any types, writable_schema, views,
 * triggers...), and the result is what the reader gets. That SQL may touch nothing outside its
 * database: an authorizer allows only statements on it. */
#include <sqlite3.h>
#include <stdint.h>

#include "fuzz-snapshot.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot-sqlite-read.h"
#include "snapshot/snapshot-sqlite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SQL_MODE 'Q'
#define MAX_SQL 4096

static void check_image(const void *data, size_t size) {
        Forest *f = NULL;
        char *error = NULL;

        int r = snapshot_sqlite_read_data(data, size, &f, &error);
        fuzz_check_result(r, f, error);
        if (r == 0)
                fuzz_check_forest(f);
        forest_free(f);
        free(error);
}

/* No ATTACH, no VACUUM INTO, no functions that reach files (there are none without extensions,
 * which stay off): statements on the database itself only. */
static int authorize(void *userdata, int action, const char *a, const char *b, const char *db, const char *trigger) {
        switch (action) {
        case SQLITE_ATTACH:
        case SQLITE_DETACH:
                return SQLITE_DENY;
        case SQLITE_PRAGMA:
                /* a: the pragma's name */
                return a && (strcmp(a, "writable_schema") == 0 || strcmp(a, "application_id") == 0 ||
                             strcmp(a, "user_version") == 0 || strcmp(a, "page_size") == 0 ||
                             strcmp(a, "auto_vacuum") == 0 || strcmp(a, "encoding") == 0) ? SQLITE_OK : SQLITE_DENY;
        default:
                return db && strcmp(db, "main") != 0 && strcmp(db, "temp") != 0 ? SQLITE_DENY : SQLITE_OK;
        }
}

static sqlite3 *open_sample(SampleKind kind) {
        Forest *f = sample_forest(kind);
        void *image = NULL;
        size_t size;
        sqlite3 *db = NULL;

        if (!f || snapshot_sqlite_format(f, &image, &size) < 0)
                abort();
        forest_free(f);
        unsigned char *copy = sqlite3_malloc64(size);
        if (!copy || sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
                abort();
        memcpy(copy, image, size);
        free(image);
        if (sqlite3_deserialize(db, "main", copy, (sqlite3_int64) size, (sqlite3_int64) size,
                                SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) != SQLITE_OK)
                abort();
        sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
        sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
        sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *) NULL);
        sqlite3_set_authorizer(db, authorize, NULL);
        return db;
}

/* Stop SQL that would run for long (recursive CTEs): it is the reader that is being tested. */
static int progress(void *userdata) {
        return ++*(unsigned *) userdata > 1000;
}

static void run_sql(const uint8_t *data, size_t size) {
        char sql[MAX_SQL + 1];
        unsigned ticks = 0;
        if (size < 1 || size - 1 > MAX_SQL)
                return;
        memcpy(sql, data + 1, size - 1);
        sql[size - 1] = 0;

        sqlite3 *db = open_sample((SampleKind) (data[0] % _SAMPLE_MAX));
        sqlite3_progress_handler(db, 1000, progress, &ticks);
        (void) sqlite3_exec(db, sql, NULL, NULL, NULL);
        sqlite3_int64 n;
        unsigned char *image = sqlite3_serialize(db, "main", &n, 0);
        if (image)
                check_image(image, (size_t) n);
        sqlite3_free(image);
        sqlite3_close_v2(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 0 && data[0] == SQL_MODE)
                run_sql(data + 1, size - 1);
        else
                check_image(data, size);
        return 0;
}
