/* make-corpus.c: writes the fuzz seed corpus: every sample snapshot as compact and pretty JSON
 * into DIR/corpus-json/ and as an SQLite file with 512-byte pages (small seeds) into
 * DIR/corpus-sqlite/ (and the sample with units, format version 2, as "units"). Usage: make-corpus DIR (tests/fuzz to regenerate the committed seeds). */
#include <sqlite3.h>
#include <sys/stat.h>

#include "snapshot-samples.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite.h"

static int write_json(const Forest *f, const char *path, SnapshotJsonFlags flags) {
        _cleanup_fclose_ FILE *out = fopen(path, "we");
        if (!out)
                return log_error_errno(-errno, "Failed to create %s: %m", path);
        int r = snapshot_json_write(f, out, flags);
        return r < 0 ? log_error_errno(r, "Failed to write %s: %m", path) : 0;
}

/* The writer's 4096-byte pages make a 40 KiB seed; 512-byte pages make a few KiB. */
static int write_sqlite_small(const Forest *f, const char *path) {
        sqlite3 *db = NULL;
        int r = snapshot_sqlite_write(f, path);
        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", path);
        int rc = sqlite3_open(path, &db);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "PRAGMA page_size = 512; VACUUM", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                log_error("Failed to shrink %s: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc == SQLITE_OK ? 0 : -EIO;
}

/* One sample as compact and pretty JSON and as a small SQLite file, named name. */
static int write_sample(Forest *f, const char *name, const char *dir) {
        _cleanup_free_ char *compact = NULL, *pretty = NULL, *db = NULL;
        int r;

        if (!f)
                return log_oom();
        if (asprintf(&compact, "%s/corpus-json/%s.json", dir, name) < 0 ||
            asprintf(&pretty, "%s/corpus-json/%s-pretty.json", dir, name) < 0 ||
            asprintf(&db, "%s/corpus-sqlite/%s.sectree", dir, name) < 0)
                return log_oom();
        if ((r = write_json(f, compact, 0)) < 0 || (r = write_json(f, pretty, SNAPSHOT_JSON_PRETTY)) < 0)
                return r;
        return write_sqlite_small(f, db);
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "Usage: %s DIR\n", argv[0]);
                return 2;
        }
        static const char *const subdirs[] = { "corpus-json", "corpus-sqlite" };
        for (size_t i = 0; i < ELEMENTSOF(subdirs); i++) {
                _cleanup_free_ char *d = NULL;
                if (asprintf(&d, "%s/%s", argv[1], subdirs[i]) < 0)
                        return log_oom(), 1;
                if (mkdir(d, 0755) < 0 && errno != EEXIST)
                        return log_error_errno(-errno, "Failed to create %s: %m", d), 1;
        }
        for (SampleKind k = 0; k < _SAMPLE_MAX; k++) {
                _cleanup_(forest_freep) Forest *f = sample_forest(k);
                if (write_sample(f, sample_kind_to_string(k), argv[1]) < 0)
                        return 1;
        }
        _cleanup_(forest_freep) Forest *units = sample_forest_with_units(); /* format version 2 */
        return write_sample(units, "units", argv[1]) < 0;
}
