/* source.c: the one interface of the kernel readers, over each backend's source */
#include "observe/backends.h"
#include "observe/source-backend.h"
#include "observe/source-bpf.h"
#include "observe/source-ptrace.h"
#include "observe/source.h"

int source_new(const SourceOptions *o, Source **ret) {
        switch (o->backend) {
        case BACKEND_BPF:
                return source_bpf_new(o, ret);
        case BACKEND_PTRACE:
                return source_ptrace_new(o, ret);
        default:
                return -EINVAL;
        }
}

Source *source_free(Source *s) {
        if (s)
                s->vtable->free(s);
        return NULL;
}

Backend source_backend(const Source *s) {
        return s->backend;
}

IdentityKind source_identity(const Source *s) {
        return s->vtable->identity;
}

uint64_t source_refresh_usec(const Source *s) {
        return s->vtable->refresh_usec;
}

bool source_announces_passes(const Source *s) {
        return s->vtable->announces_passes;
}

int source_scan(Source *s, const ScanOptions *opts, Forest **ret) {
        return s->vtable->scan(s, opts, ret);
}

int source_scan_detached(Source *s, const ScanOptions *opts, Forest **ret) {
        return s->vtable->scan_detached(s, opts, ret);
}

int source_scan_programs(Source *s, const ScanOptions *opts, Forest **ret) {
        if (!s->vtable->scan_programs)
                return source_scan_programs_oneshot(opts, ret);
        return s->vtable->scan_programs(s, opts, ret);
}

int source_start(Source *s, sd_event *e, const SourceSink *sink) {
        if (s->oneshot || s->event)
                return -EINVAL;
        s->event = sd_event_ref(e);
        s->sink = *sink;
        return s->vtable->start(s);
}

int source_full_pass(Source *s, const char *reason) {
        if (!s->event)
                return -ENOTCONN;
        return s->vtable->full_pass(s, reason);
}

int source_full_pass_background(Source *s, const char *reason) {
        if (!s->event)
                return -ENOTCONN;
        if (!s->vtable->full_pass_background)
                return s->vtable->full_pass(s, reason);
        return s->vtable->full_pass_background(s, reason);
}

bool source_pass_waiting(const Source *s) {
        return s->vtable->pass_waiting(s);
}

bool source_events_pending(Source *s) {
        return s->vtable->events_pending(s);
}

uint64_t source_lost(Source *s) {
        return s->vtable->lost(s);
}

bool source_task_stale(const Source *s, pid_t tid) {
        return s->vtable->task_stale && s->vtable->task_stale(s, tid);
}

void source_set_after_scan_hook(Source *s, void (*hook)(void *userdata), void *userdata) {
        s->after_scan_hook = hook;
        s->after_scan_userdata = userdata;
}

void source_set_scan_thread_hook(Source *s, void (*hook)(void *userdata), void *userdata) {
        s->scan_thread_hook = hook;
        s->scan_thread_userdata = userdata;
}
