/* workload-forest.c: whether a scan's forest holds the benchmark's workload as it was built (apart
 * from workload.c, so that the floors built from that file link without the forest model) */
#include "workload.h"

#include <stdio.h>

bool workload_matches_forest(const Workload *w, const Forest *f, char *why, size_t size) {
        const WorkloadTask *tasks = workload_tasks(w);
        size_t n_tasks = workload_n_tasks(w), missing = 0, wrong = 0;

        for (size_t i = 0; i < n_tasks; i++) {
                Task *t = forest_find_task(f, tasks[i].tid, NULL);
                unsigned depth = tasks[i].private_filter ? 2 : 1;
                if (!t)
                        missing++;
                else if (!t->filter || t->filter->depth != depth)
                        wrong++;
        }
        if (missing > 0 || wrong > 0) {
                snprintf(why, size, "%zu of %zu tasks missing, %zu with a wrong chain", missing, n_tasks, wrong);
                return false;
        }
        if (f->n_tasks != n_tasks || f->n_filters != workload_n_filters(w)) {
                snprintf(why, size, "%zu tasks and %zu filters, expected %zu and %zu", f->n_tasks, f->n_filters,
                         n_tasks, workload_n_filters(w));
                return false;
        }
        return true;
}
