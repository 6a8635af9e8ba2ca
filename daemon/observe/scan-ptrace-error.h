/* scan-ptrace-error.h: why a ptrace pass failed, kept to be logged once by whoever handles the
 * failure, and never while the pass holds tasks stopped (scan-ptrace-error.c) */
#pragma once

#include "core/util.h"

typedef struct ScanError {
        int error;         /* negative errno; 0: none kept */
        LogLevel level;    /* LOG_LEVEL_ERR, or LOG_LEVEL_DEBUG where the failure is the caller's to
                            * explain (a process it may not stop, a root that does not exist) */
        char message[256]; /* why, without the errno's text */
} ScanError;

/* Keep why the pass fails, unless a failure is kept already (the later ones follow from the
 * first). Returns error. */
int scan_error_set(ScanError *e, LogLevel level, int error, const char *format, ...) _printf_(4, 5);
/* Log the failure r once, "PREFIX: WHY: ERRNO" at the kept level, or "PREFIX: ERRNO" (an error)
 * when nothing was kept for it. Returns r. */
int scan_error_log(const ScanError *e, int r, const char *prefix);
