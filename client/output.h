/* output.h: how the client writes to the terminal: tty and UTF-8 detection, timestamps */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* stdout is a terminal (as it was at the first call: a pager may take its place), and the locale's
 * charset is UTF-8 (box drawing may be used). */
bool output_is_tty(void);
/* Whether the locale's character set is UTF-8. */
bool locale_is_utf8(void);
bool output_use_unicode(void);

/* "—" in a UTF-8 locale, "-" otherwise (text that is not drawing may go to a pipe). */
const char *output_dash(void);

#define TIMESTAMP_MAX 64
/* Local time, "2026-12-03 07:20:49 CET"; "never" for 0. */
char *format_timestamp(uint64_t usec, char *buf, size_t len);
/* Local time with microseconds, "2026-12-03 07:20:49.123456". */
char *format_timestamp_us(uint64_t usec, char *buf, size_t len);
/* RFC 3339 in UTC with microseconds, "2026-12-03T06:20:49.123456Z" (as the snapshot format). */
char *format_timestamp_rfc3339(uint64_t usec, char *buf, size_t len);
/* "3min 12s ago", "in 2s" relative to now (CLOCK_REALTIME µs); "" for 0. */
char *format_timestamp_relative(uint64_t usec, uint64_t now, char *buf, size_t len);

#define USER_NAME_MAX 64
/* The user's name where the password database has one ("root"), else the uid ("4242"). The name
 * is the caller's own database's: tables show it, JSON keeps the uid. */
char *format_user(uint32_t uid, char *buf, size_t len);

/* Flush stdout; -EIO (logged) if it failed, e.g. a closed pipe. */
int output_flush(void);
