/* fuzz-snapshot.c: the properties both snapshot fuzz targets check on what a reader returns */
#include "fuzz-snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "snapshot/snapshot-diff.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite-read.h"
#include "snapshot/snapshot-sqlite.h"
#include "snapshot/snapshot-validate.h"

#define fuzz_assert(x)                                                          \
        do {                                                                    \
                if (!(x)) {                                                     \
                        fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #x); \
                        abort();                                                \
                }                                                               \
        } while (0)

void fuzz_check_result(int r, const Forest *f, const char *error) {
        if (r == 0)
                fuzz_assert(f && f->linked && !error);
        else if (r == -EINVAL)
                fuzz_assert(!f && error && *error);
        else
                fuzz_assert(r == -ENOMEM && !f);
}

static void check_same_json(const char *want, const Forest *g) {
        char *again = NULL;
        fuzz_assert(snapshot_json_format(g, 0, &again) == 0);
        if (strcmp(want, again) != 0) {
                fprintf(stderr, "want: %s\nhave: %s\n", want, again);
                abort();
        }
        free(again);
}

/* A hostile snapshot is planned or refused with a reason, never a crash: as an unprivileged
 * executor would plan it, and as root. */
static void check_plan(const Forest *f, bool unprivileged) {
        PlanOptions o = PLAN_OPTIONS_DEFAULT;
        Plan *p = NULL;
        char *error = NULL;
        o.unprivileged = unprivileged;
        int r = plan_build(f, &o, &p, &error);
        if (r == 0)
                fuzz_assert(p && !error);
        else if (r == -EINVAL)
                fuzz_assert(!p && error && *error);
        else {
                if (r != -ENOMEM)
                        fprintf(stderr, "plan_build: %s: %s\n", strerror(-r), error ? error : "(no message)");
                fuzz_assert(r == -ENOMEM && !p);
        }
        plan_free(p);
        free(error);
}

void fuzz_check_forest(const Forest *f) {
        char *json = NULL, *error = NULL;
        void *image = NULL;
        size_t size;
        Forest *g = NULL, *h = NULL;
        SnapshotDiff *d = NULL;

        fuzz_assert(snapshot_validate(f, NULL) == 0);
        fuzz_assert(snapshot_json_format(f, 0, &json) == 0);
        if (snapshot_json_read(json, strlen(json), &g, &error) != 0) {
                fprintf(stderr, "own JSON refused: %s\n%s\n", error, json);
                abort();
        }
        check_same_json(json, g);

        fuzz_assert(snapshot_sqlite_format(f, &image, &size) == 0);
        if (snapshot_sqlite_read_data(image, size, &h, &error) != 0) {
                fprintf(stderr, "own SQLite refused: %s\n%s\n", error, json);
                abort();
        }
        check_same_json(json, h);

        fuzz_assert(snapshot_diff(f, g, &d) == 0);
        fuzz_assert(snapshot_diff_is_empty(d));
        snapshot_diff_free(d);
        check_plan(f, true);
        check_plan(f, false);
        forest_free(g);
        forest_free(h);
        free(image);
        free(json);
}
