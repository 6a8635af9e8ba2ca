/* scan-ptrace-error.c: why a ptrace pass failed, logged once by whoever handles the failure */
#include "observe/scan-ptrace-error.h"

#include <stdarg.h>
#include <stdio.h>

int scan_error_set(ScanError *e, LogLevel level, int error, const char *format, ...) {
        if (e->error < 0)
                return error;
        va_list ap;
        va_start(ap, format);
        (void) vsnprintf(e->message, sizeof(e->message), format, ap);
        va_end(ap);
        e->error = error;
        e->level = level;
        return error;
}

int scan_error_log(const ScanError *e, int r, const char *prefix) {
        if (e->error < 0 && e->message[0])
                return log_internal(e->level, r, "%s: %s: %m", prefix, e->message);
        return log_error_errno(r, "%s: %m", prefix);
}
