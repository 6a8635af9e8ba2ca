/* pacing.h: when the service's full passes run: the periodic refresh, and resyncs (after lost
 * events, inconsistencies, failed passes) no sooner than an interval after the end of the last
 * pass, that interval doubling while passes keep failing. It owns its timers and clocks; the
 * manager asks and reports, and is called back to make the pass. (How often the warnings that
 * come with resyncs are logged: core/warn-limit.h.) */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "core/util.h"

/* A resync starts no sooner than this after the previous full pass ended; after a pass that could
 * not be stored, the wait doubles each time, up to the refresh interval. */
#define PACING_RESYNC_MIN_INTERVAL_USEC (1000 * 1000ULL)

typedef struct Pacing Pacing;

/* Make a full pass now (reason for the Resynced signal): the manager's. */
typedef void (*PacingStart)(void *userdata, const char *reason);

int pacing_new(sd_event *e, uint64_t refresh_usec, PacingStart start, void *userdata, Pacing **ret);
Pacing *pacing_free(Pacing *p);
DEFINE_CLEANUP(Pacing *, pacing_free);

/* Arm the periodic refresh ("refresh" passes every refresh_usec). */
int pacing_start_refresh(Pacing *p);
/* A resync is needed: one pass no sooner than the interval after the end of the last one,
 * whatever started that; asking again while one is due changes nothing (they are merged). */
void pacing_request(Pacing *p, const char *reason);
/* A full pass ended, stored or not: the clock the next resync waits for starts now. A stored pass
 * covers a resync that waited; one that failed asks for the next ("inconsistent"), later. */
void pacing_pass_ended(Pacing *p, bool stored);
/* CLOCK_MONOTONIC at the end of the last full pass (0: none yet). */
uint64_t pacing_last_pass_end(const Pacing *p);
