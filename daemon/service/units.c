/* units.c: the systemd unit, user unit and machine of a process, read from its cgroup */
#include "service/units.h"

#include <systemd/sd-login.h>

#include "service/cgroup-members.h"

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

void process_unit_cache_done(ProcessUnitCache *c) {
        for (size_t i = 0; i < c->n; i++) {
                free(c->items[i].cgroup);
                process_unit_done(&c->items[i].unit);
        }
        free(c->items);
        hashmap_deinit(&c->by_hash);
        *c = (ProcessUnitCache) {};
}

static int process_unit_copy(const ProcessUnit *u, ProcessUnit *ret) {
        _cleanup_(process_unit_done) ProcessUnit v = { .owner = u->owner };
        if ((u->unit && !(v.unit = strdup(u->unit))) || (u->user_unit && !(v.user_unit = strdup(u->user_unit))) ||
            (u->machine && !(v.machine = strdup(u->machine))))
                return -ENOMEM;
        *ret = v;
        v = (ProcessUnit) { .owner = UNIT_OWNER_NONE };
        return 0;
}

int process_unit_read_cached(ProcessUnitCache *c, pid_t pid, ProcessUnit *ret) {
        char key[CGROUP_KEY_MAX], again[CGROUP_KEY_MAX];
        if (cgroup_key_read(pid, key, sizeof(key)) < 0)
                return process_unit_read(pid, ret); /* gone (it says so), or a key too long to keep */
        uint64_t h = cgroup_key_hash(key);
        uintptr_t i = (uintptr_t) hashmap_get(&c->by_hash, h);
        if (i > 0 && streq(c->items[i - 1].cgroup, key))
                return process_unit_copy(&c->items[i - 1].unit, ret);
        int r = process_unit_read(pid, ret);
        if (r < 0 || i > 0) /* (a hash already taken by another cgroup: not kept) */
                return r;
        /* kept only if the process did not move while libsystemd read it */
        if (cgroup_key_read(pid, again, sizeof(again)) < 0 || !streq(again, key) ||
            GROW(c->items, c->allocated, c->n + 1) < 0)
                return 0;
        struct CachedUnit *x = &c->items[c->n];
        *x = (struct CachedUnit) { .cgroup = strdup(key) };
        if (!x->cgroup || process_unit_copy(ret, &x->unit) < 0 ||
            hashmap_put(&c->by_hash, h, (void *) (uintptr_t) (c->n + 1)) < 0) {
                free(x->cgroup);
                process_unit_done(&x->unit);
                return 0; /* not kept: read again next time */
        }
        c->n++;
        return 0;
}
