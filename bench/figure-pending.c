/* figure-pending.c: the figures whose capability does not exist yet (restore): their
 * rows, printed as "not yet available", so that the table shows what is still to be measured */
#include "figures.h"

/*
 * Replace a row here with a measurement when its capability lands: restore needs the planner and
 * the executor. The sizes are those the targets are stated for.
 */

typedef struct PendingRow {
        const char *figure;
        const char *target;
        const char *note;
} PendingRow;

static int add_pending(const BenchOptions *o, Report *report, const PendingRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int r = report_add(report, &(BenchRow) {
                        .figure = rows[i].figure,
                        .tasks = o->target_size,
                        .unavailable = true,
                        .target = rows[i].target,
                        .verdict = VERDICT_NONE,
                        .note = rows[i].note,
                });
                if (r < 0)
                        return r;
        }
        return 0;
}

int figure_restore_run(const BenchOptions *o, Report *report) {
        static const PendingRow rows[] = {
                { "restore: plan", NULL, "needs the restore planner" },
                { "restore: execute + verify", NULL, "needs the executor" },
        };
        return add_pending(o, report, rows, ELEMENTSOF(rows));
}
