/* util.c: cleanup helpers, logging and small parsers */
#include "core/util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "core/escape.h"

static LogLevel max_level = LOG_LEVEL_INFO;
static bool stderr_is_journal = false;

void log_set_max_level(LogLevel level) {
        max_level = level;
}

LogLevel log_get_max_level(void) {
        return max_level;
}

static const char *const log_level_table[] = {
        [LOG_LEVEL_EMERG] = "emerg", [LOG_LEVEL_ALERT] = "alert", [LOG_LEVEL_CRIT] = "crit",
        [LOG_LEVEL_ERR] = "err",     [LOG_LEVEL_WARNING] = "warning", [LOG_LEVEL_NOTICE] = "notice",
        [LOG_LEVEL_INFO] = "info",   [LOG_LEVEL_DEBUG] = "debug",
};

LogLevel log_level_from_string(const char *s) {
        int32_t n;
        if (!s)
                return _LOG_LEVEL_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(log_level_table); i++)
                if (streq(log_level_table[i], s))
                        return (LogLevel) i;
        if (safe_atoi32(s, &n) >= 0 && n >= LOG_LEVEL_EMERG && n <= LOG_LEVEL_DEBUG)
                return (LogLevel) n;
        return _LOG_LEVEL_INVALID;
}

/* $JOURNAL_STREAM is "DEVICE:INODE" of the stream systemd connected to the service's stdout or
 * stderr: it is the journal only if stderr still is that file (a child may have redirected it). */
static bool journal_stream_is_stderr(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        int end = 0;
        if (!e || sscanf(e, "%llu:%llu%n", &dev, &ino, &end) != 2 || e[end] != '\0')
                return false;
        struct stat st;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

bool log_stderr_is_journal(void) {
        return stderr_is_journal;
}

void log_parse_environment(void) {
        stderr_is_journal = journal_stream_is_stderr();
        const char *e = secure_getenv("SYSTEMD_LOG_LEVEL");
        if (!e)
                return;
        LogLevel l = log_level_from_string(e);
        if (l < 0)
                log_warning("Ignoring SYSTEMD_LOG_LEVEL=%s: expected a level (emerg, alert, crit, err, warning, "
                            "notice, info, debug) or 0-7.", e);
        else
                log_set_max_level(l);
}

int log_internal(LogLevel level, int error, const char *format, ...) {
        int saved = errno;
        if (error < 0)
                error = -error;
        if (level <= max_level) {
                char *text = NULL;
                va_list ap;
                errno = error;
                va_start(ap, format);
                if (vasprintf(&text, format, ap) < 0)
                        text = NULL;
                va_end(ap);
                if (stderr_is_journal)
                        fprintf(stderr, "<%d>", (int) level);
                /* one line, whatever the strings in it came from (a caller, a process, a snapshot) */
                (void) fputs_escaped(text ?: format, stderr);
                fputc('\n', stderr);
                free(text);
        }
        errno = error ? error : saved;
        return -error;
}

int string_table_lookup(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (int) i;
        return -EINVAL;
}

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

size_t strv_length(char * const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

char **strv_copy(char * const *l) {
        size_t n = strv_length(l);
        char **c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return strv_free(c);
        }
        return c;
}

int grow_array(void **array, size_t *allocated, size_t need, size_t elem) {
        if (need <= *allocated)
                return 0;
        size_t n = *allocated ? *allocated : 8;
        while (n < need) {
                if (n > SIZE_MAX / 2 / elem)
                        return -ENOMEM;
                n *= 2;
        }
        void *p = realloc(*array, n * elem);
        if (!p)
                return -ENOMEM;
        memset((char *) p + *allocated * elem, 0, (n - *allocated) * elem);
        *array = p;
        *allocated = n;
        return 0;
}

int safe_atou64(const char *s, uint64_t *ret) {
        char *end;
        if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi32(const char *s, int32_t *ret) {
        char *end;
        if (!s || !*s || *s == ' ')
                return -EINVAL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
                return -ERANGE;
        if (*end)
                return -EINVAL;
        *ret = (int32_t) v;
        return 0;
}

uint64_t now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

int error_messagev(char **ret, const char *format, va_list ap) {
        if (vasprintf(ret, format, ap) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

int error_message(char **ret, const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int r = error_messagev(ret, format, ap);
        va_end(ap);
        return r;
}
