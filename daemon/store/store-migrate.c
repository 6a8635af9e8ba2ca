/* store-migrate.c: the state database's schema brought to this build's version: the migrations of
 * schema/ applied in one transaction, under the write lock */
#include <sqlite3.h>

#include "store/state-migrations.h"
#include "store/store-migrate.h"
#include "store/store-read.h"

static int store_apply_migrations(Store *s) {
        StoreHeader h;
        int r;

        /* Read again under the write lock: another process may have migrated meanwhile. */
        r = store_read_header(s, &h);
        if (r < 0)
                return r;
        r = store_check_header(s, &h);
        if (r < 0)
                return r;
        if (h.user_version == 0) {
                r = store_exec(s, "PRAGMA application_id = " STRINGIFY(STORE_APPLICATION_ID),
                               "set the application id");
                if (r < 0)
                        return r;
        }
        for (int64_t v = h.user_version; v < STATE_MIGRATIONS_COUNT; v++) {
                r = store_exec(s, state_migrations[v], "apply a schema migration");
                if (r < 0)
                        return log_error_errno(r, "Failed to migrate %s to schema version %" PRIi64 ".", s->path,
                                               v + 1);
                log_debug("Migrated %s to schema version %" PRIi64 ".", s->path, v + 1);
        }
        return 0;
}

/* Inside the migration transaction: every migration, then the commit. */
static int store_apply_and_commit(Store *s) {
        int r = store_apply_migrations(s);
        if (r < 0)
                return r;
        return store_exec(s, "COMMIT", "commit the migrations");
}

int store_migrate(Store *s) {
        StoreHeader h;
        int r = store_read_header(s, &h);

        if (r < 0)
                return r;
        if (h.user_version == STATE_MIGRATIONS_COUNT)
                return 0;

        r = store_exec(s, "BEGIN IMMEDIATE", "start the migration transaction");
        if (r < 0)
                return r;
        r = store_apply_and_commit(s);
        if (r < 0)
                (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}
