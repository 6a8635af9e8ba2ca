/* context.c: the run context the verbs share: the lazily connected bus and the lists read through it */
#include "context.h"

#include "bus.h"
#include "manager-calls.h"
#include "manager-snapshots.h"

void context_done(Context *c) {
        c->bus = sd_bus_flush_close_unref(c->bus);
        free(c->exec);
        c->exec = NULL;
}

int context_bus(Context *c, sd_bus **ret) {
        if (!c->bus) {
                int r = bus_open_system(&c->bus);
                if (r < 0)
                        return r;
        }
        *ret = c->bus;
        return 0;
}

int context_list_tasks(Context *c, TaskList *ret) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        return r < 0 ? r : manager_list_tasks(bus, ret);
}

int context_list_filters(Context *c, FilterList *ret) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        return r < 0 ? r : manager_list_filters(bus, ret);
}

int context_list_snapshots(Context *c, SnapshotList *ret) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        return r < 0 ? r : manager_list_snapshots(bus, ret);
}
