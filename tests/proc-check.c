/* proc-check.c: see proc-check.h. Built against the daemon's library (restore-proc-check.c). */
#include "proc-check.h"

#include <glib.h>

#include "plan/plan-verify.h"
#include "service/restore-proc-check.h"

void tests_assert_snapshot_is_proc(const Forest *snapshot, const char *what) {
        PlanMapping map = {};
        g_auto(GStrv) diffs = NULL;
        bool ok = false;

        for (size_t i = 0; i < snapshot->n_processes; i++) {
                const Process *p = snapshot->processes[i];
                g_assert_cmpint(plan_mapping_add_process(&map, p->pid, p->pid), ==, 0);
                for (size_t j = 0; j < p->n_threads; j++)
                        g_assert_cmpint(plan_mapping_add_thread(&map, p->threads[j].tid, p->threads[j].tid), ==, 0);
        }
        g_assert_cmpint(restore_proc_check(snapshot, &map, NULL, &ok, &diffs), ==, 0);
        for (size_t i = 0; diffs[i]; i++)
                g_test_message("%s: the snapshot differs from /proc: %s", what, diffs[i]);
        g_assert_true(ok);
        plan_mapping_done(&map);
}
