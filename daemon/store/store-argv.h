/* store-argv.h: a command line as a stored snapshot holds it, a JSON array of strings (store-argv.c) */
#pragma once

#include "core/forest.h"

/* argv as a JSON array of strings, malloc'ed in *ret; strings that are not valid UTF-8 sanitized
 * (snapshot_utf8_sanitize()). */
int store_argv_to_json(char * const *argv, char **ret);
/* p's argv from that array. -EBADMSG: not an array of strings. */
int store_argv_from_json(Process *p, const char *text);
