/* ctl-args.c: sectreectl's command-line values and the usage-error convention */
#include "ctl-args.h"

#include <ctype.h>
#include <stdarg.h>

static int usage_errorv(const char *hint, const char *format, va_list ap) {
        fputs("sectreectl: ", stderr);
        vfprintf(stderr, format, ap);
        fprintf(stderr, "%s\n", hint);
        return ERR_USAGE;
}

int usage_error(const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int r = usage_errorv(" (try --help)", format, ap);
        va_end(ap);
        return r;
}

int usage_error_full(const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int r = usage_errorv("", format, ap);
        va_end(ap);
        return r;
}

int parse_pid_arg(const char *what, const char *s, uint32_t *ret) {
        int32_t v;
        if (safe_atoi32(s, &v) < 0 || v <= 0)
                return usage_error("Invalid %s '%s': expected a number > 0", what, s);
        *ret = (uint32_t) v;
        return 0;
}

int parse_task_operand(const char *arg, char **ret_file, uint32_t *ret_tid) {
        const char *colon = strrchr(arg, ':');
        *ret_file = NULL;
        if (!colon)
                return parse_pid_arg("task id", arg, ret_tid);
        if (colon == arg)
                return usage_error("Missing snapshot file in '%s' (FILE:TID)", arg);
        int r = parse_pid_arg("task id", colon + 1, ret_tid);
        if (r < 0)
                return r;
        *ret_file = strndup(arg, (size_t) (colon - arg));
        return *ret_file ? 0 : log_oom();
}

/* A syscall argument: decimal, hex with 0x, or negative decimal (taken as a 64-bit two's complement). */
int parse_syscall_arg(const char *s, uint64_t *ret) {
        bool neg = s[0] == '-', hex = !neg && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        const char *digits = s + neg + 2 * hex;
        char *end;
        if (!(hex ? isxdigit((unsigned char) *digits) : isdigit((unsigned char) *digits)))
                return usage_error("Invalid system call argument '%s'", s);
        errno = 0;
        unsigned long long v = strtoull(digits, &end, hex ? 16 : 10);
        if (errno != 0 || *end || (neg && v > (unsigned long long) INT64_MAX + 1))
                return usage_error("Invalid system call argument '%s'", s);
        *ret = neg ? -(uint64_t) v : v;
        return 0;
}

int parse_filter_id_arg(const char *s, uint64_t *ret) {
        uint64_t v;
        if (safe_atou64(s, &v) < 0 || v == 0)
                return usage_error("Invalid filter id '%s': expected a number > 0", s);
        *ret = v;
        return 0;
}

int parse_snapshot_id_arg(const char *s, uint64_t *ret) {
        uint64_t v;
        if (safe_atou64(s, &v) < 0 || v == 0)
                return usage_error("Invalid snapshot id '%s': expected a number > 0", s);
        *ret = v;
        return 0;
}
