/* snapshot-units.c: the systemd unit, user unit and machine a snapshot records of each process
 * (format version 2): setting them, what makes a name acceptable, and which version a forest needs */
#include "snapshot/snapshot-units.h"

#include <string.h>

#include "snapshot/snapshot-format.h"
#include "snapshot/snapshot-text.h"

static int set_name(char **field, const char *s) {
        char *copy = NULL;
        if (s && *s && !(copy = strdup(s)))
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

int process_set_units(Process *p, const char *unit, const char *user_unit, const char *machine) {
        int r = set_name(&p->unit, unit);
        if (r >= 0)
                r = set_name(&p->user_unit, user_unit);
        if (r >= 0)
                r = set_name(&p->machine, machine);
        return r;
}

bool process_has_units(const Process *p) {
        return p->unit || p->user_unit || p->machine;
}

bool forest_has_units(const Forest *f) {
        for (size_t i = 0; i < f->n_processes; i++)
                if (process_has_units(f->processes[i]))
                        return true;
        return false;
}

unsigned snapshot_format_version_of(const Forest *f) {
        return forest_has_units(f) ? SNAPSHOT_FORMAT_VERSION_UNITS : SNAPSHOT_FORMAT_VERSION_1;
}

static bool is_control(unsigned char c) {
        return c < 0x20 || c == 0x7f;
}

bool snapshot_unit_name_valid(const char *s) {
        if (!s)
                return true;
        size_t n = strlen(s);
        if (n == 0 || n > SNAPSHOT_MAX_UNIT || !snapshot_utf8_valid(s))
                return false;
        for (size_t i = 0; i < n; i++)
                if (is_control((unsigned char) s[i]))
                        return false;
        return true;
}

int snapshot_unit_name_clean(const char *s, char **ret) {
        if (!s || !*s) {
                *ret = NULL;
                return 0;
        }
        char *clean = snapshot_utf8_sanitize(s);
        if (!clean)
                return -ENOMEM;
        size_t n = strlen(clean);
        if (n > SNAPSHOT_MAX_UNIT)
                for (n = SNAPSHOT_MAX_UNIT; n > 0 && ((unsigned char) clean[n] & 0xC0) == 0x80; n--)
                        ;
        clean[n] = 0;
        for (size_t i = 0; i < n; i++)
                if (is_control((unsigned char) clean[i]))
                        clean[i] = '?';
        *ret = clean;
        return 0;
}
