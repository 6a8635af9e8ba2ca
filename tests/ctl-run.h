/* ctl-run.h: sectreectl run by tests against the private bus of a BusFixture: exit status,
 * output, and JSON */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "bus-fixture.h"

/* A NULL-terminated argument list for the calls below. */
#define CTL_ARGS(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* sectreectl args (as nobody: uid/gid 65534); returns the exit status, *out and *err what it
 * printed (may be NULL). */
int ctl_run(BusFixture *b, bool as_nobody, const char *const *args, char **out, char **err);
/* Must exit 0 with nothing on stderr; returns stdout. */
char *ctl_run_ok(BusFixture *b, const char *const *args);
/* --json args: must exit 0 with nothing on stderr and print one JSON document. */
json_t *ctl_run_json(BusFixture *b, const char *const *args);
/* Must exit with status want, and print a first stderr line that starts with prefix; returns
 * stderr. */
char *ctl_run_fails(BusFixture *b, int want, const char *prefix, const char *const *args);
