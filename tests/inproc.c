/* inproc.c: the Manager run in the test's own process, without a bus */
#include "inproc.h"

#include <glib.h>
#include <stdlib.h>
#include <systemd/sd-event.h>

#include "observe/source.h"
#include "tests-util.h"

static void env_set(const char *name, const char *value) {
        if (value)
                g_assert_cmpint(setenv(name, value, 1), ==, 0);
        else
                g_assert_cmpint(unsetenv(name), ==, 0);
}

bool inproc_start(InProc *ip, const char *events_size, const char *refresh_usec) {
        if (!tests_require_root())
                return false;
        tests_ensure_tracefs();
        env_set("SECTREE_BPF_EVENTS_SIZE", events_size);
        env_set("SECTREE_REFRESH_USEC", refresh_usec ?: "600000000");
        ip->dir = g_dir_make_tmp("sectree-inproc-XXXXXX", NULL);
        g_assert_nonnull(ip->dir);
        ManagerOptions o = { .backend = BACKEND_BPF, .state_dir = ip->dir };
        g_assert_cmpint(manager_new(&o, &ip->m), ==, 0);
        g_assert_cmpint(manager_open(ip->m), ==, 0);
        return true;
}

void inproc_stop(InProc *ip) {
        manager_free(ip->m);
        tests_remove_dir(ip->dir);
        g_free(ip->dir);
        (void) unsetenv("SECTREE_BPF_EVENTS_SIZE");
        (void) unsetenv("SECTREE_REFRESH_USEC");
}

bool inproc_run(InProc *ip, bool (*stop)(InProc *ip, void *userdata), void *userdata, unsigned timeout_ms) {
        gint64 end = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        while (g_get_monotonic_time() < end) {
                if (stop && stop(ip, userdata))
                        return true;
                g_assert_cmpint(sd_event_run(ip->m->event, 20000), >=, 0);
        }
        return stop && stop(ip, userdata);
}

bool inproc_watch_drained(InProc *ip, void *userdata) {
        return !source_events_pending(ip->m->source);
}
