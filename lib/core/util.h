/* util.h: cleanup helpers, logging and small macros shared by every part of sectree */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#ifndef MIN /* glib has them too */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

static inline void freep(void *p) {
        free(*(void **) p);
}
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
/* The error of the stdio call that just failed on a stream, as a negative errno: what write(2)
 * said (ENOSPC, EPIPE...), or -EIO where it left none. */
static inline int stdio_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
/* Flush f: 0, or what the failed write said (stdio_errno()), or -EIO for an error an earlier call
 * left on the stream. */
static inline int fflush_errno(FILE *f) {
        if (fflush(f) != 0)
                return stdio_errno();
        return ferror(f) ? -EIO : 0;
}
static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
/* The value of a hexadecimal digit (either case), or -EINVAL. */
static inline int unhex_char(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

/* Close *fd if it is open, and mark it closed: for an fd kept in a structure. */
static inline void close_fd(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}
static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
static inline void strv_freep(char ***p);

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* DEFINE_CLEANUP(Forest*, forest_free) defines forest_freep() for _cleanup_(forest_freep). */
#define DEFINE_CLEANUP(type, func)                                      \
        static inline void func##p(type *p) {                           \
                if (*p)                                                 \
                        func(*p);                                       \
        }

/* Hand ownership of a cleanup-managed pointer on: returns it and clears the variable. */
#define TAKE_PTR(p)                                     \
        ({                                              \
                __typeof__(p) _p = (p);                 \
                (p) = NULL;                             \
                _p;                                     \
        })
#define TAKE_FD(fd)                                     \
        ({                                              \
                int _fd = (fd);                         \
                (fd) = -1;                              \
                _fd;                                    \
        })

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}
static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

char **strv_free(char **l);
size_t strv_length(char * const *l);
char **strv_copy(char * const *l);
static inline void strv_freep(char ***p) {
        strv_free(*p);
}

/* Enum <-> string tables, as systemd has them: given `static const char *const foo_table[_FOO_MAX]`,
 * DEFINE_STRING_TABLE_LOOKUP(foo, Foo, _FOO_MAX) defines foo_to_string() (NULL when out of range)
 * and foo_from_string() (-EINVAL when unknown). */
int string_table_lookup(const char *const *table, size_t n, const char *s);
#define DEFINE_STRING_TABLE_LOOKUP(name, type, max)                                             \
        const char *name##_to_string(type i) {                                                  \
                return (int) i >= 0 && (size_t) i < (size_t) (max) ? name##_table[i] : NULL;    \
        }                                                                                       \
        type name##_from_string(const char *s) {                                                \
                return (type) string_table_lookup(name##_table, (size_t) (max), s);             \
        }

/* Grow *array (of *allocated elements of size elem) so that it holds at least need elements. */
int grow_array(void **array, size_t *allocated, size_t need, size_t elem);
#define GROW(array, allocated, need) grow_array((void **) &(array), &(allocated), (need), sizeof(*(array)))

/* Logging. Messages go to stderr, one line each, escaped as str_escape() does (escape.h): a string
 * of a caller's (a comm, an argv, a name, an executor's message) can neither start lines of its own
 * in a log nor act on a terminal. When stderr is the journal ($JOURNAL_STREAM names its device and
 * inode, as systemd sets it for a service), each line starts with its priority, "<3>" for an error
 * as sd-daemon.h's SD_ERR, so that journald files it at that priority rather than at info.
 * log_*_errno() returns the negative errno it was given, and sets errno so that %m in the format
 * prints it. */
typedef enum LogLevel {
        LOG_LEVEL_EMERG = 0,
        LOG_LEVEL_ALERT = 1,
        LOG_LEVEL_CRIT = 2,
        LOG_LEVEL_ERR = 3,
        LOG_LEVEL_WARNING = 4,
        LOG_LEVEL_NOTICE = 5,
        LOG_LEVEL_INFO = 6,
        LOG_LEVEL_DEBUG = 7,
        _LOG_LEVEL_INVALID = -EINVAL,
} LogLevel;
void log_set_max_level(LogLevel level);
LogLevel log_get_max_level(void);
/* A syslog level by name ("emerg" ... "debug", as systemd spells them) or number (0-7). */
LogLevel log_level_from_string(const char *s);
/* $SYSTEMD_LOG_LEVEL sets the maximum level, as for systemd's own programs; an invalid value is
 * said once and ignored. Whether stderr is the journal is read here too ($JOURNAL_STREAM against
 * stderr's device and inode): call it again after pointing stderr elsewhere. */
void log_parse_environment(void);
/* Whether log_parse_environment() found stderr to be the journal. */
bool log_stderr_is_journal(void);
int log_internal(LogLevel level, int error, const char *format, ...) _printf_(3, 4);
#define log_error_errno(e, ...) log_internal(LOG_LEVEL_ERR, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_internal(LOG_LEVEL_INFO, (e), __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal(LOG_LEVEL_DEBUG, (e), __VA_ARGS__)
#define log_error(...) (void) log_internal(LOG_LEVEL_ERR, 0, __VA_ARGS__)
#define log_warning(...) (void) log_internal(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_notice(...) (void) log_internal(LOG_LEVEL_NOTICE, 0, __VA_ARGS__)
#define log_info(...) (void) log_internal(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...) (void) log_internal(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_oom() log_error_errno(-ENOMEM, "Out of memory.")

/* Parse a decimal number into the given type; -EINVAL on junk, -ERANGE on overflow. */
/* *ret = the message (malloc'ed), for an error of bad input: returns -EINVAL, or -ENOMEM with
 * *ret NULL. */
int error_message(char **ret, const char *format, ...) _printf_(2, 3);
int error_messagev(char **ret, const char *format, va_list ap);

int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi32(const char *s, int32_t *ret);

/* Whether base[0..n) is in cmp's order already: n - 1 comparisons at most, against qsort()'s
 * n log n whatever the input. */
static inline bool is_sorted(const void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
        for (size_t i = 1; i < n; i++)
                if (cmp((const char *) base + (i - 1) * size, (const char *) base + i * size) > 0)
                        return false;
        return true;
}
/* qsort() and bsearch() that accept an empty (possibly NULL) array; qsort_safe() leaves one sorted
 * already as it is (arrays built in pid or id order often are). */
static inline void qsort_safe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
        if (n > 1 && !is_sorted(base, n, size, cmp))
                qsort(base, n, size, cmp);
}
static inline void *bsearch_safe(const void *key, const void *base, size_t n, size_t size,
                                 int (*cmp)(const void *, const void *)) {
        return n > 0 ? bsearch(key, base, n, size, cmp) : NULL;
}
static inline void *memcpy_safe(void *dst, const void *src, size_t n) {
        return n > 0 ? memcpy(dst, src, n) : dst;
}

/* The clock (CLOCK_REALTIME, CLOCK_MONOTONIC, ...) in microseconds. */
uint64_t now_usec(clockid_t clock);
