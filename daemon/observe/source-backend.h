/* source-backend.h: what a backend implements to be a source: the object each backend's source
 * starts with, and the table of what the backend does */
#pragma once

#include <systemd/sd-event.h>

#include "observe/scan-options.h"
#include "observe/source-types.h"

typedef struct SourceVTable {
        void (*free)(Source *s);
        int (*scan)(Source *s, const ScanOptions *opts, Forest **ret);
        int (*scan_detached)(Source *s, const ScanOptions *opts, Forest **ret);
        int (*scan_programs)(Source *s, const ScanOptions *opts, Forest **ret); /* NULL: source_scan_programs_oneshot() */
        int (*start)(Source *s);
        int (*full_pass)(Source *s, const char *reason);
        int (*full_pass_background)(Source *s, const char *reason); /* NULL: full_pass() */
        bool (*pass_waiting)(const Source *s);
        bool (*events_pending)(Source *s);
        uint64_t (*lost)(Source *s);
        bool (*task_stale)(const Source *s, pid_t tid); /* NULL: every task is read at each pass */
        IdentityKind identity;
        uint64_t refresh_usec;
        bool announces_passes;
} SourceVTable;

struct Source {
        const SourceVTable *vtable;
        Backend backend;
        bool oneshot;
        uint64_t first_id;
        sd_event *event; /* once started */
        SourceSink sink;
        void (*after_scan_hook)(void *userdata);
        void *after_scan_userdata;
        void (*scan_thread_hook)(void *userdata);
        void *scan_thread_userdata;
};

/* A full pass's scan made ready for the live state: the test hook run, unfiltered processes dropped,
 * linked. */
static inline int source_pass_prepare(Source *s, Forest *f) {
        if (s->after_scan_hook)
                s->after_scan_hook(s->after_scan_userdata);
        forest_drop_unfiltered_processes(f);
        _cleanup_free_ char *error = NULL;
        int r = forest_link(f, &error);
        if (r < 0)
                return log_error_errno(r, "Scanned forest is inconsistent (%s): %m", error ?: "?");
        return 0;
}
