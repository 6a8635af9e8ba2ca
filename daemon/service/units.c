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

void process_unit_cache_walk(ProcessUnitCache *c, size_t n_processes) {
        c->walked = n_processes >= PROCESS_UNIT_WALK_MIN && cgroup_members_read(&c->members) >= 0;
}

void process_unit_cache_done(ProcessUnitCache *c) {
        for (size_t i = 0; i < c->n; i++) {
                free(c->items[i].cgroup);
                process_unit_done(&c->items[i].unit);
        }
        free(c->items);
        hashmap_deinit(&c->by_hash);
        cgroup_members_done(&c->members);
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

/* pid's cgroup key: from the walk, or read. */
static int cache_key(const ProcessUnitCache *c, pid_t pid, char *buf, size_t size) {
        const char *path = c->walked ? cgroup_members_path(&c->members, pid) : NULL;
        if (!path || strlen(path) >= size)
                return cgroup_key_read(pid, buf, size);
        strcpy(buf, path);
        return 0;
}

/* Keep *u (taken) for key, unless pid moved while libsystemd read it, or another cgroup has the
 * key's hash: 1 when kept (*ret then points at it), 0 when not (*u left as it was). */
static int cache_keep(ProcessUnitCache *c, pid_t pid, const char *key, uint64_t h, ProcessUnit *u,
                      const ProcessUnit **ret) {
        char again[CGROUP_KEY_MAX];
        if (hashmap_get(&c->by_hash, h) || cgroup_key_read(pid, again, sizeof(again)) < 0 || !streq(again, key) ||
            GROW(c->items, c->allocated, c->n + 1) < 0)
                return 0;
        struct CachedUnit *x = &c->items[c->n];
        *x = (struct CachedUnit) { .cgroup = strdup(key) };
        if (!x->cgroup || hashmap_put(&c->by_hash, h, (void *) (uintptr_t) (c->n + 1)) < 0) {
                free(x->cgroup);
                return 0;
        }
        x->unit = *u;
        *u = (ProcessUnit) { .owner = UNIT_OWNER_NONE };
        *ret = &c->items[c->n++].unit;
        return 1;
}

int process_unit_cache_get(ProcessUnitCache *c, pid_t pid, ProcessUnit *scratch, const ProcessUnit **ret) {
        char key[CGROUP_KEY_MAX];
        int k = cache_key(c, pid, key, sizeof(key));
        if (k == -ESRCH)
                return k;
        bool cacheable = k >= 0; /* else (too long to keep) asked every time */
        uint64_t h = cacheable ? cgroup_key_hash(key) : 0;
        uintptr_t i = cacheable ? (uintptr_t) hashmap_get(&c->by_hash, h) : 0;
        if (i > 0 && streq(c->items[i - 1].cgroup, key)) {
                *ret = &c->items[i - 1].unit;
                return 0;
        }
        int r = process_unit_read(pid, scratch);
        if (r >= 0 && c->clean)
                r = c->clean(scratch);
        if (r < 0)
                return r;
        if (!cacheable || cache_keep(c, pid, key, h, scratch, ret) == 0)
                *ret = scratch;
        return 0;
}

int process_unit_read_cached(ProcessUnitCache *c, pid_t pid, ProcessUnit *ret) {
        _cleanup_(process_unit_done) ProcessUnit scratch = { .owner = UNIT_OWNER_NONE };
        const ProcessUnit *u;
        int r = process_unit_cache_get(c, pid, &scratch, &u);
        return r < 0 ? r : process_unit_copy(u, ret);
}
