/* bus-errors.c: negative errno to the D-Bus error a caller sees, in one table */
#include "bus/bus-errors.h"

#include <errno.h>
#include <stddef.h>

#include "core/util.h"

#define ALL_CALLS (BUS_ERROR_SNAPSHOT | BUS_ERROR_RESTORE | BUS_ERROR_ANALYSIS)

typedef struct BusErrorRow {
        int errnum;           /* positive */
        BusErrorCalls calls;  /* the calls the row answers for */
        const char *name;     /* NULL: sd-bus's own name and message for errnum */
        const char *fallback; /* the message when the call gave none */
} BusErrorRow;

static const BusErrorRow bus_error_table[] = {
        { ENOENT, BUS_ERROR_SNAPSHOT | BUS_ERROR_RESTORE, ERROR_NO_SUCH_SNAPSHOT, "No such snapshot." },
        { ESRCH, BUS_ERROR_SNAPSHOT, ERROR_NO_SUCH_TASK, "No such process." },
        { EACCES, BUS_ERROR_SNAPSHOT | BUS_ERROR_RESTORE, SD_BUS_ERROR_ACCESS_DENIED, "Access denied." },
        { EDQUOT, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_LIMITS_EXCEEDED, "Limits exceeded." },
        { EBUSY, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_LIMITS_EXCEEDED, "Limits exceeded." },
        { EUSERS, BUS_ERROR_RESTORE, SD_BUS_ERROR_LIMITS_EXCEEDED, "Limits exceeded." },
        { EINVAL, BUS_ERROR_SNAPSHOT, ERROR_INVALID_SNAPSHOT, "The snapshot was refused." },
        { EINVAL, BUS_ERROR_RESTORE, SD_BUS_ERROR_INVALID_ARGS, "Invalid argument." },
        { EOPNOTSUPP, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_INVALID_ARGS, "Unsupported file." },
        { EOPNOTSUPP, BUS_ERROR_RESTORE, SD_BUS_ERROR_NOT_SUPPORTED, "Not supported here." },
        { ETIMEDOUT, BUS_ERROR_SNAPSHOT | BUS_ERROR_RESTORE, SD_BUS_ERROR_TIMEOUT, "Timed out." },
        { ECHILD, BUS_ERROR_RESTORE, ERROR_EXECUTOR_UNIT_FAILED, "systemd could not start the restore executor." },
        { ENOMEM, ALL_CALLS, NULL, NULL },
};

static const BusErrorRow *bus_error_row(BusErrorCalls calls, int r) {
        for (size_t i = 0; i < ELEMENTSOF(bus_error_table); i++)
                if (bus_error_table[i].errnum == -r && (bus_error_table[i].calls & calls))
                        return &bus_error_table[i];
        return NULL;
}

int bus_error_set_known(sd_bus_error *error, BusErrorCalls calls, int r, const char *message) {
        const BusErrorRow *row = bus_error_row(calls, r);
        if (!row)
                return 0;
        if (!row->name)
                return sd_bus_error_set_errno(error, r);
        return sd_bus_error_setf(error, row->name, "%s", message ?: row->fallback);
}

int bus_error_set_errno(sd_bus_error *error, BusErrorCalls calls, int r) {
        int k = bus_error_set_known(error, calls, r, NULL);
        return k < 0 ? k : sd_bus_error_set_errno(error, r);
}
