/* units.c: the systemd unit, user unit and machine of a process, read from its cgroup */
#include "service/units.h"

#include <systemd/sd-login.h>

void process_unit_done(ProcessUnit *u) {
        free(u->unit);
        free(u->user_unit);
        free(u->machine);
        *u = (ProcessUnit) { .owner = UNIT_OWNER_NONE };
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* Undo systemd's unit name escaping: "\xNN" is the byte NN. A name that does not decode, or
 * decodes to a control character or a '/', is refused (NULL). */
static char *unit_unescape(const char *s, size_t len) {
        _cleanup_free_ char *out = malloc(len + 1);
        size_t k = 0;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                int c = (unsigned char) s[i];
                if (s[i] == '\\') {
                        if (i + 3 >= len || s[i + 1] != 'x' || hex_value(s[i + 2]) < 0 || hex_value(s[i + 3]) < 0)
                                return NULL;
                        c = hex_value(s[i + 2]) << 4 | hex_value(s[i + 3]);
                        i += 3;
                }
                if (c < 0x20 || c == 0x7f || c == '/')
                        return NULL;
                out[k++] = (char) c;
        }
        out[k] = 0;
        return k ? TAKE_PTR(out) : NULL;
}

int machine_name_from_scope(const char *unit, char **ret) {
        static const char prefix[] = "machine-", suffix[] = ".scope";
        size_t l = unit ? strlen(unit) : 0, p = strlen(prefix), q = strlen(suffix);
        *ret = NULL;
        if (l <= p + q || strncmp(unit, prefix, p) != 0 || strcmp(unit + l - q, suffix) != 0)
                return 0;
        *ret = unit_unescape(unit + p, l - p - q);
        return 0;
}

/* libsystemd's answer, or NULL where the cgroup does not say (-ENODATA, -ENXIO, -ENOENT...). */
static int read_optional(int r, char **value) {
        if (r == -ESRCH || r == -ENOMEM)
                return r;
        if (r < 0) {
                free(*value);
                *value = NULL;
        }
        return 0;
}

PidUnit *pid_units_free(PidUnit *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                process_unit_done(&l[i].unit);
        free(l);
        return NULL;
}

int process_unit_read(pid_t pid, ProcessUnit *ret) {
        _cleanup_(process_unit_done) ProcessUnit u = { .owner = UNIT_OWNER_NONE };
        uid_t owner;
        int r = read_optional(sd_pid_get_unit(pid, &u.unit), &u.unit);
        if (r >= 0)
                r = read_optional(sd_pid_get_user_unit(pid, &u.user_unit), &u.user_unit);
        if (r >= 0)
                r = read_optional(sd_pid_get_machine_name(pid, &u.machine), &u.machine);
        if (r >= 0 && !u.machine)
                r = machine_name_from_scope(u.unit, &u.machine);
        if (r < 0)
                return r;
        if (sd_pid_get_owner_uid(pid, &owner) >= 0)
                u.owner = (uint32_t) owner;
        *ret = u;
        u = (ProcessUnit) { .owner = UNIT_OWNER_NONE };
        return 0;
}
