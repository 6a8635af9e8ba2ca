/* snapshot-text.h: the strings of a snapshot: times as text, and UTF-8 made of what the kernel
 * reports */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/forest.h"

/* "2026-12-03T07:20:49.123456Z" for CLOCK_REALTIME microseconds, and back. Parsing accepts only
 * UTC ("Z"), with 0..9 fraction digits (beyond microseconds they are dropped), years 1970..9999. */
int snapshot_format_time(uint64_t usec, char *buf, size_t len);
int snapshot_parse_time(const char *s, uint64_t *ret);
#define SNAPSHOT_TIME_MAX sizeof("YYYY-MM-DDTHH:MM:SS.uuuuuuZ")

/* Strings in a snapshot are UTF-8 (JSON needs it), but what the kernel reports (comm, argv, exe)
 * is any bytes: writers store snapshot_utf8_sanitize(s), a malloc'ed copy in which every invalid
 * sequence is replaced by U+FFFD (NULL for NULL, or when out of memory: check s). */
bool snapshot_utf8_valid(const char *s);
char *snapshot_utf8_sanitize(const char *s);
/* What the kernel reports of a process (comm, exe, argv) is any bytes: made UTF-8 in place, comm cut
 * at the end of a character. 0 or -ENOMEM. */
int snapshot_process_make_utf8(Process *p);
