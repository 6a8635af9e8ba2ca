/* test-bus-errors.c: the errno table of daemon/bus/bus-errors.c gives every call the error name and
 * message its callers were given before there was one table */
#include <errno.h>

#include "bus/bus-errors.h"
#include "tests-util.h"

typedef struct Expected {
        int r;
        BusErrorCalls calls;
        const char *name; /* NULL: no row */
        const char *message;
} Expected;

static const Expected expected[] = {
        { -ENOENT, BUS_ERROR_SNAPSHOT, ERROR_NO_SUCH_SNAPSHOT, "No such snapshot." },
        { -ENOENT, BUS_ERROR_RESTORE, ERROR_NO_SUCH_SNAPSHOT, "No such snapshot." },
        { -ESRCH, BUS_ERROR_SNAPSHOT, ERROR_NO_SUCH_TASK, "No such process." },
        { -ESRCH, BUS_ERROR_RESTORE, NULL, NULL },
        { -EACCES, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_ACCESS_DENIED, "Access denied." },
        { -EACCES, BUS_ERROR_RESTORE, SD_BUS_ERROR_ACCESS_DENIED, "Access denied." },
        { -EDQUOT, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_LIMITS_EXCEEDED, "Limits exceeded." },
        { -EDQUOT, BUS_ERROR_RESTORE, NULL, NULL },
        { -EBUSY, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_LIMITS_EXCEEDED, "Limits exceeded." },
        { -EUSERS, BUS_ERROR_RESTORE, SD_BUS_ERROR_LIMITS_EXCEEDED, "Limits exceeded." },
        { -EUSERS, BUS_ERROR_SNAPSHOT, NULL, NULL },
        { -EINVAL, BUS_ERROR_SNAPSHOT, ERROR_INVALID_SNAPSHOT, "The snapshot was refused." },
        { -EINVAL, BUS_ERROR_RESTORE, SD_BUS_ERROR_INVALID_ARGS, "Invalid argument." },
        { -EOPNOTSUPP, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_INVALID_ARGS, "Unsupported file." },
        { -EOPNOTSUPP, BUS_ERROR_RESTORE, SD_BUS_ERROR_NOT_SUPPORTED, "Not supported here." },
        { -ETIMEDOUT, BUS_ERROR_SNAPSHOT, SD_BUS_ERROR_TIMEOUT, "Timed out." },
        { -ETIMEDOUT, BUS_ERROR_RESTORE, SD_BUS_ERROR_TIMEOUT, "Timed out." },
        { -ECHILD, BUS_ERROR_RESTORE, ERROR_EXECUTOR_UNIT_FAILED, "systemd could not start the restore executor." },
        { -ECHILD, BUS_ERROR_SNAPSHOT, NULL, NULL },
        { -EIO, BUS_ERROR_SNAPSHOT | BUS_ERROR_RESTORE | BUS_ERROR_ANALYSIS, NULL, NULL },
        { -EINVAL, BUS_ERROR_ANALYSIS, NULL, NULL },
};

/* Every row, with and without the call's own message. */
static void test_rows(void) {
        for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
                const Expected *e = &expected[i];
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL, said = SD_BUS_ERROR_NULL;
                int r = bus_error_set_known(&error, e->calls, e->r, NULL);
                if (!e->name) {
                        g_assert_cmpint(r, ==, 0);
                        g_assert_false(sd_bus_error_is_set(&error));
                        continue;
                }
                g_assert_cmpint(r, <, 0);
                g_assert_cmpstr(error.name, ==, e->name);
                g_assert_cmpstr(error.message, ==, e->message);
                g_assert_cmpint(bus_error_set_known(&said, e->calls, e->r, "What the call said."), <, 0);
                g_assert_cmpstr(said.name, ==, e->name);
                g_assert_cmpstr(said.message, ==, "What the call said.");
        }
}

/* ENOMEM is sd-bus's own error for every call, and what the table lacks is sd-bus's own name in
 * bus_error_set_errno() (GetPolicy and WhoCan answer so). */
static void test_sd_bus_names(void) {
        BusErrorCalls all[] = { BUS_ERROR_SNAPSHOT, BUS_ERROR_RESTORE, BUS_ERROR_ANALYSIS };
        for (size_t i = 0; i < G_N_ELEMENTS(all); i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                g_assert_cmpint(bus_error_set_known(&error, all[i], -ENOMEM, "ignored"), ==, -ENOMEM);
                g_assert_cmpstr(error.name, ==, SD_BUS_ERROR_NO_MEMORY);
        }
        int errnos[] = { EINVAL, EIO, ESRCH, ENOENT, ENOMEM };
        for (size_t i = 0; i < G_N_ELEMENTS(errnos); i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL, plain = SD_BUS_ERROR_NULL;
                g_assert_cmpint(bus_error_set_errno(&error, BUS_ERROR_ANALYSIS, -errnos[i]), <, 0);
                (void) sd_bus_error_set_errno(&plain, -errnos[i]);
                g_assert_cmpstr(error.name, ==, plain.name);
                g_assert_cmpstr(error.message, ==, plain.message);
        }
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/bus-errors/rows", test_rows);
        g_test_add_func("/bus-errors/sd-bus-names", test_sd_bus_names);
        return g_test_run();
}
