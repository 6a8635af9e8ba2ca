/* pacing.c: see pacing.h */
#include "service/pacing.h"

#include <stdlib.h>
#include <time.h>

#define RESYNC_ACCURACY_USEC (10 * 1000ULL) /* not sd-event's default of 250 ms */
#define RESYNC_BACKOFF_MAX_SHIFT 6          /* 1 s, 2 s, ... 64 s between passes that keep failing */

struct Pacing {
        sd_event *event;
        uint64_t refresh_usec;
        PacingStart start;
        void *userdata;
        sd_event_source *refresh_timer, *resync_timer;
        const char *resync_reason;  /* of the pass resync_timer will start */
        uint64_t last_pass_mono;    /* CLOCK_MONOTONIC at the end of the last full pass, stored or not */
        unsigned failures_in_a_row; /* passes not stored since the last that was */
};

int pacing_new(sd_event *e, uint64_t refresh_usec, PacingStart start, void *userdata, Pacing **ret) {
        Pacing *p = calloc(1, sizeof(Pacing));
        if (!p)
                return log_oom();
        *p = (Pacing) { .event = sd_event_ref(e), .refresh_usec = refresh_usec, .start = start, .userdata = userdata };
        *ret = p;
        return 0;
}

Pacing *pacing_free(Pacing *p) {
        if (!p)
                return NULL;
        sd_event_source_disable_unref(p->refresh_timer);
        sd_event_source_disable_unref(p->resync_timer);
        sd_event_unref(p->event);
        free(p);
        return NULL;
}

static int on_refresh(sd_event_source *s, uint64_t usec, void *userdata) {
        Pacing *p = userdata;
        p->start(p->userdata, "refresh");
        (void) sd_event_source_set_time_relative(s, p->refresh_usec);
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

int pacing_start_refresh(Pacing *p) {
        int r = sd_event_add_time_relative(p->event, &p->refresh_timer, CLOCK_MONOTONIC, p->refresh_usec, 0,
                                           on_refresh, p);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the refresh timer: %m");
        return 0;
}

static int on_resync_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Pacing *p = userdata;
        p->start(p->userdata, p->resync_reason); /* a failure asks for the next one itself */
        return 0;
}

/* 1 s, doubling with every pass in a row that could not be stored, up to the refresh interval. */
static uint64_t resync_interval(const Pacing *p) {
        unsigned shift = p->failures_in_a_row < RESYNC_BACKOFF_MAX_SHIFT ? p->failures_in_a_row : RESYNC_BACKOFF_MAX_SHIFT;
        uint64_t v = PACING_RESYNC_MIN_INTERVAL_USEC << shift;
        return v < p->refresh_usec || v == PACING_RESYNC_MIN_INTERVAL_USEC ? v : p->refresh_usec;
}

/* So under a flood of lost events the loop still spends most of its time on events and the bus,
 * and once the flood ends the pass that follows the last loss brings the state back. */
void pacing_request(Pacing *p, const char *reason) {
        int enabled = SD_EVENT_OFF, r;
        uint64_t when = p->last_pass_mono + resync_interval(p);

        if (p->resync_timer && sd_event_source_get_enabled(p->resync_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        p->resync_reason = reason;
        if (!p->resync_timer)
                r = sd_event_add_time(p->event, &p->resync_timer, CLOCK_MONOTONIC, when, RESYNC_ACCURACY_USEC,
                                      on_resync_timer, p);
        else
                r = sd_event_source_set_time(p->resync_timer, when);
        if (r >= 0)
                r = sd_event_source_set_enabled(p->resync_timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the resync timer: %m");
}

/* A pass that failed must not leave the clock in the past, or the next would start at once. */
void pacing_pass_ended(Pacing *p, bool stored) {
        p->last_pass_mono = now_usec(CLOCK_MONOTONIC);
        if (stored) {
                p->failures_in_a_row = 0;
                /* A pass covers a resync that waited when it started; losses during it ask again. */
                if (p->resync_timer)
                        (void) sd_event_source_set_enabled(p->resync_timer, SD_EVENT_OFF);
                return;
        }
        p->failures_in_a_row++;
        pacing_request(p, "inconsistent");
}

uint64_t pacing_last_pass_end(const Pacing *p) {
        return p->last_pass_mono;
}
