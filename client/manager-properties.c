/* manager-properties.c: the Manager's properties, read in one GetAll call */
#include "manager-properties.h"

#include <stddef.h>

#include "bus.h"

typedef struct PropertyField {
        const char *name;
        char type; /* 's', 'u' or 't' */
        size_t offset;
} PropertyField;

static const PropertyField property_fields[] = {
        { "Version", 's', offsetof(ManagerProperties, version) },
        { "Backend", 's', offsetof(ManagerProperties, backend) },
        { "Identity", 's', offsetof(ManagerProperties, identity) },
        { "Tasks", 'u', offsetof(ManagerProperties, tasks) },
        { "Filters", 'u', offsetof(ManagerProperties, filters) },
        { "Listeners", 'u', offsetof(ManagerProperties, listeners) },
        { "LastScanUSec", 't', offsetof(ManagerProperties, last_scan_usec) },
};

void manager_properties_done(ManagerProperties *p) {
        free(p->version);
        free(p->backend);
        free(p->identity);
        *p = (ManagerProperties) {};
}

static const PropertyField *property_field_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(property_fields); i++)
                if (streq(property_fields[i].name, name))
                        return &property_fields[i];
        return NULL;
}

/* Read the variant of one known property into its field; a wrong type is -ENXIO. */
static int read_property_value(sd_bus_message *m, const PropertyField *f, ManagerProperties *p) {
        char sig[2] = { f->type, 0 };
        void *field = (char *) p + f->offset;
        int r = sd_bus_message_enter_container(m, 'v', sig);
        if (r < 0)
                return r;
        if (f->type == 's') {
                const char *s;
                r = sd_bus_message_read_basic(m, 's', &s);
                if (r < 0)
                        return r;
                free(*(char **) field);
                *(char **) field = strdup(s);
                if (!*(char **) field)
                        return -ENOMEM;
        } else {
                r = sd_bus_message_read_basic(m, f->type, field);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_exit_container(m);
}

static int read_property(sd_bus_message *m, ManagerProperties *p) {
        int r = sd_bus_message_enter_container(m, 'e', "sv");
        if (r <= 0)
                return r;
        const char *name;
        r = sd_bus_message_read_basic(m, 's', &name);
        if (r < 0)
                return r;
        const PropertyField *f = property_field_find(name);
        r = f ? read_property_value(m, f, p) : sd_bus_message_skip(m, "v");
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 1;
}

static int read_properties(sd_bus_message *m, ManagerProperties *p) {
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = read_property(m, p)) > 0)
                ;
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int manager_get_properties(sd_bus *bus, ManagerProperties *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_call_method(bus, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, "org.freedesktop.DBus.Properties",
                                   "GetAll", &error, &reply, "s", SECTREE_MANAGER_INTERFACE);
        if (r < 0)
                return bus_log_error(r, &error, "read the manager's properties");

        _cleanup_(manager_properties_done) ManagerProperties p = {};
        r = read_properties(reply, &p);
        if (r < 0)
                return bus_log_parse_error(r, "GetAll");
        *ret = p;
        p = (ManagerProperties) {};
        return 0;
}
