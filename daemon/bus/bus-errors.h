/* bus-errors.h: the D-Bus error names of org.sectree1 and the one table that turns what a call
 * returned (a negative errno and the call's message) into the error its caller sees */
#pragma once

#include <systemd/sd-bus.h>

#define ERROR_NO_SUCH_TASK "org.sectree1.Error.NoSuchTask"
#define ERROR_NO_SUCH_FILTER "org.sectree1.Error.NoSuchFilter"
#define ERROR_NO_SUCH_SNAPSHOT "org.sectree1.Error.NoSuchSnapshot"
#define ERROR_INVALID_SNAPSHOT "org.sectree1.Error.InvalidSnapshot"
#define ERROR_SCAN_FAILED "org.sectree1.Error.ScanFailed"
#define ERROR_NO_SUCH_RESTORE "org.sectree1.Error.NoSuchRestore"
#define ERROR_RESTORE_FAILED "org.sectree1.Error.RestoreFailed"
#define ERROR_EXECUTOR_UNIT_FAILED "org.sectree1.Error.ExecutorUnitFailed"

/* Which calls an errno is answered for: the same errno means different things to them (-EINVAL is
 * a refused snapshot file to ImportSnapshot and a bad option to Restore). */
typedef enum BusErrorCalls {
        BUS_ERROR_SNAPSHOT = 1 << 0, /* CreateSnapshot, ExportSnapshot, ImportSnapshot, DeleteSnapshot */
        BUS_ERROR_RESTORE = 1 << 1,  /* Restore */
        BUS_ERROR_ANALYSIS = 1 << 2, /* GetPolicy, WhoCan */
} BusErrorCalls;

/* Set error from the table's row for r (< 0) and those calls, with message, or the row's own
 * message when message is NULL; returns what sd-bus returns for it (< 0). Returns 0 and leaves
 * error unset when the table has no row: the caller says what failed. */
int bus_error_set_known(sd_bus_error *error, BusErrorCalls calls, int r, const char *message);

/* As bus_error_set_known(), with sd-bus's own name and message for an errno the table lacks. */
int bus_error_set_errno(sd_bus_error *error, BusErrorCalls calls, int r);
