/* manager-units.c: ListProcessUnits: the systemd unit, user unit and machine of each process,
 * and the --unit, --machine and --user filters on them */
#include "manager-units.h"

#include <fnmatch.h>
#include <pwd.h>

#include "bus.h"

void unit_list_done(UnitList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].unit);
                free(l->items[i].user_unit);
                free(l->items[i].machine);
        }
        free(l->items);
        *l = (UnitList) {};
}

static int dup_or_null(const char *s, char **ret) {
        *ret = NULL;
        if (!*s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

static int unit_record_cmp(const void *a, const void *b) {
        const UnitRecord *x = a, *y = b;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* ListProcessUnits' (usssu) entries, or with_threads ListUnfilteredProcesses' (uusssu). */
static int read_unit_list(sd_bus_message *reply, bool with_threads, UnitList *l) {
        const char *unit, *user_unit, *machine;
        uint32_t pid, owner, threads = 0;
        int r = sd_bus_message_enter_container(reply, 'a', with_threads ? "(uusssu)" : "(usssu)");
        if (r < 0)
                return r;
        while ((r = with_threads ? sd_bus_message_read(reply, "(uusssu)", &pid, &threads, &unit, &user_unit, &machine,
                                                       &owner)
                                 : sd_bus_message_read(reply, "(usssu)", &pid, &unit, &user_unit, &machine, &owner)) > 0) {
                if (GROW(l->items, l->allocated, l->n + 1) < 0)
                        return -ENOMEM;
                UnitRecord *u = &l->items[l->n++];
                *u = (UnitRecord) { .pid = pid, .owner = owner, .threads = threads };
                if (dup_or_null(unit, &u->unit) < 0 || dup_or_null(user_unit, &u->user_unit) < 0 ||
                    dup_or_null(machine, &u->machine) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        qsort(l->items, l->n, sizeof(UnitRecord), unit_record_cmp);
        return sd_bus_message_exit_container(reply);
}

static int list_units_of(sd_bus *bus, const char *method, bool with_threads, UnitList *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(unit_list_done) UnitList l = {};
        _cleanup_free_ char *what = NULL;
        int r = sd_bus_call_method(bus, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE, method,
                                   &error, &reply, "");
        if (r < 0 && sd_bus_error_has_names(&error, SD_BUS_ERROR_UNKNOWN_METHOD))
                return *ret = (UnitList) {}, 0; /* a daemon older than this client */
        if (r < 0) {
                if (asprintf(&what, "call %s", method) < 0)
                        return log_oom();
                return bus_log_error(r, &error, what);
        }
        r = read_unit_list(reply, with_threads, &l);
        if (r < 0)
                return bus_log_parse_error(r, method);
        *ret = l;
        l = (UnitList) {};
        return 0;
}

int manager_list_units(sd_bus *bus, UnitList *ret) {
        return list_units_of(bus, "ListProcessUnits", false, ret);
}

int manager_list_unfiltered(sd_bus *bus, UnitList *ret) {
        return list_units_of(bus, "ListUnfilteredProcesses", true, ret);
}

/* The user slice's owner of a unit the snapshot names: user@UID.service runs under user-UID.slice;
 * of other units the snapshot does not say. */
static uint32_t owner_of_unit(const char *unit) {
        static const char prefix[] = "user@", suffix[] = ".service";
        uint64_t uid;
        size_t l = unit ? strlen(unit) : 0, p = strlen(prefix), q = strlen(suffix);
        if (l <= p + q || strncmp(unit, prefix, p) != 0 || strcmp(unit + l - q, suffix) != 0)
                return UNIT_OWNER_NONE;
        char digits[16];
        if (l - p - q >= sizeof(digits))
                return UNIT_OWNER_NONE;
        memcpy(digits, unit + p, l - p - q);
        digits[l - p - q] = 0;
        return safe_atou64(digits, &uid) >= 0 && uid < UNIT_OWNER_NONE ? (uint32_t) uid : UNIT_OWNER_NONE;
}

static int strdup_or_null(const char *s, char **ret) {
        return dup_or_null(s ?: "", ret);
}

int unit_list_from_forest(const Forest *f, UnitList *ret) {
        _cleanup_(unit_list_done) UnitList l = {};
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (!p->unit && !p->user_unit && !p->machine)
                        continue;
                if (GROW(l.items, l.allocated, l.n + 1) < 0)
                        return -ENOMEM;
                UnitRecord *u = &l.items[l.n++];
                *u = (UnitRecord) { .pid = (uint32_t) p->pid, .owner = owner_of_unit(p->unit) };
                if (strdup_or_null(p->unit, &u->unit) < 0 || strdup_or_null(p->user_unit, &u->user_unit) < 0 ||
                    strdup_or_null(p->machine, &u->machine) < 0)
                        return -ENOMEM;
        }
        qsort_safe(l.items, l.n, sizeof(UnitRecord), unit_record_cmp);
        *ret = l;
        l = (UnitList) {};
        return 0;
}

const UnitRecord *unit_list_find(const UnitList *l, uint32_t pid) {
        UnitRecord key = { .pid = pid };
        return l->n ? bsearch(&key, l->items, l->n, sizeof(UnitRecord), unit_record_cmp) : NULL;
}

const char *unit_record_label(const UnitRecord *u, char *buf, size_t len) {
        if (!u || (!u->unit && !u->user_unit))
                return NULL;
        if (u->unit && u->user_unit)
                snprintf(buf, len, "%s/%s", u->unit, u->user_unit);
        else
                snprintf(buf, len, "%s", u->unit ?: u->user_unit);
        return buf;
}

bool unit_filter_given(const Context *c) {
        return c->unit || c->machine || c->user;
}

static bool glob_matches(const char *pattern, const char *s) {
        return s && fnmatch(pattern, s, 0) == 0;
}

/* --user: a name the password database knows, or a uid. */
static bool user_matches(const char *user, uint32_t owner) {
        struct passwd pw, *found = NULL;
        char scratch[1024];
        uint64_t uid;
        if (owner == UNIT_OWNER_NONE)
                return false;
        if (safe_atou64(user, &uid) >= 0)
                return uid == owner;
        return getpwnam_r(user, &pw, scratch, sizeof(scratch), &found) == 0 && found && found->pw_uid == owner;
}

bool unit_filter_matches(const Context *c, const UnitRecord *u) {
        if (!unit_filter_given(c))
                return true;
        if (!u)
                return false;
        if (c->unit && !glob_matches(c->unit, u->unit) && !glob_matches(c->unit, u->user_unit))
                return false;
        if (c->machine && !glob_matches(c->machine, u->machine))
                return false;
        return !c->user || user_matches(c->user, u->owner);
}

int context_list_units(Context *c, UnitList *ret) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        return r < 0 ? r : manager_list_units(bus, ret);
}

int context_list_unfiltered(Context *c, UnitList *ret) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        return r < 0 ? r : manager_list_unfiltered(bus, ret);
}

int context_units_of(Context *c, const Forest *f, UnitList *ret) {
        if (!c->file)
                return context_list_units(c, ret);
        return unit_list_from_forest(f, ret) < 0 ? log_oom() : 0;
}
