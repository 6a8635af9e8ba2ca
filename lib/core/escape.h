/* escape.h: strings from processes, the daemon and snapshot files made safe to print on a terminal */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Text output escapes what a terminal would act on, as systemd and ps do: ESC is "\e", newline,
 * carriage return and tab are "\n", "\r" and "\t", a backslash is "\\" (so that the escapes
 * stay unambiguous), and every other C0 or C1 control character, DEL, each byte of a Unicode
 * bidirectional control (U+202A..U+202E, U+2066..U+2069: they reorder what follows on the line)
 * and each byte that is not part of valid UTF-8 is "\xNN". Everything else (printable ASCII, valid
 * UTF-8) is copied. JSON output never goes through this: it carries the exact strings. */

/* For a locale that is not UTF-8: every byte above 0x7f is escaped too (the terminal would show
 * UTF-8 as garbage, and libsmartcols, measuring it, loops forever in such a locale). Process-wide,
 * as the locale is. */
void escape_set_ascii_only(bool on);

/* Does s hold anything str_escape() would change? */
bool str_needs_escape(const char *s);

/* s escaped; malloc'ed, NULL on OOM. NULL stays NULL. */
char *str_escape(const char *s);

/* s escaped into buf (size > 0), cut short at a whole escape when it does not fit. Returns buf. */
char *str_escape_buf(const char *s, char *buf, size_t size);
/* The same, returning the length written (without the NUL). */
size_t str_escape_into(const char *s, char *buf, size_t size);

/* Write s escaped to out. Returns 0, or -EIO if out has an error. */
int fputs_escaped(const char *s, FILE *out);

/* Room for a 15-byte comm where every byte needs "\xNN", and its NUL. */
#define COMM_ESCAPED_MAX (15 * 4 + 1)
