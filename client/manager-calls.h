/* manager-calls.h: typed calls of the org.sectree1.Manager D-Bus API, and the records they return */
#pragma once

#include <linux/filter.h>
#include <systemd/sd-bus.h>

#include "core/forest.h"
#include "core/util.h"

/* One element of ListTasks: a(uuusstu). */
typedef struct TaskRecord {
        uint32_t tid, tgid, ppid;
        char *comm;
        char *mode;    /* "disabled", "strict" or "filter" */
        uint64_t head; /* newest filter of the chain, 0 for none */
        uint32_t depth;
        bool stale; /* ListStaleTasks lists it: its last known state, not read at the last pass */
} TaskRecord;

typedef struct TaskList {
        TaskRecord *items; /* sorted by (tgid, tid) */
        size_t n, allocated;
} TaskList;

/* One element of ListFilters: a(ttusuas). */
typedef struct FilterRecord {
        uint64_t id, parent; /* parent 0: a first filter */
        uint32_t length;
        char *digest; /* "sha256:<hex>" */
        uint32_t tasks;
        char **flags; /* "log", "wait_killable_recv", "listener" */
} FilterRecord;

typedef struct FilterList {
        FilterRecord *items; /* sorted by id */
        size_t n, allocated;
} FilterList;

/* GetFilter's reply. */
/* Who installed a filter, when the daemon saw it happen (tid 0: it did not). */
typedef struct FilterInstaller {
        uint32_t tid, pid;
        char *comm, *exe; /* exe "" when not known */
        uint64_t usec;    /* CLOCK_REALTIME */
} FilterInstaller;

typedef struct FilterDetail {
        FilterRecord meta;
        char *identity; /* "exact" or "inferred" */
        bool live;                 /* from the daemon (a snapshot file records no installer) */
        FilterInstaller installer; /* live only */
        struct sock_filter *program;
        size_t n_program;
} FilterDetail;

/* ListListeners: a listener, its filter, and who holds it. */
typedef struct ListenerRecord {
        uint64_t id, filter;
        ListenerHolder *holders; /* comm set */
        size_t n_holders;
} ListenerRecord;

typedef struct ListenerList {
        ListenerRecord *items;
        size_t n, allocated;
} ListenerList;

void task_list_done(TaskList *l);
void filter_list_done(FilterList *l);
void filter_detail_done(FilterDetail *d);
void listener_list_done(ListenerList *l);

const TaskRecord *task_list_find(const TaskList *l, uint32_t tid);
const FilterRecord *filter_list_find(const FilterList *l, uint64_t id);
bool filter_record_has_flag(const FilterRecord *f, const char *flag);
/* The daemon did not keep the program: the uid it counts against was over its filter budget
 * (sectreed --filter-budget). Length and digest are still right. */
#define FILTER_FLAG_OVER_BUDGET "over-budget"
bool filter_detail_lacks_program(const FilterDetail *d);

/* Each call logs its failure once (D-Bus errors as "NAME: message") and returns negative errno. */
int manager_list_tasks(sd_bus *bus, TaskList *ret);
int manager_list_filters(sd_bus *bus, FilterList *ret);
int manager_get_filter(sd_bus *bus, uint64_t id, FilterDetail *ret);
/* The same, but -ESRCH, not logged, when the daemon has no such filter (any more: its last task
 * exited since the caller learnt its id). */
int manager_get_filter_if_there(sd_bus *bus, uint64_t id, FilterDetail *ret);
int manager_get_task_chain(sd_bus *bus, uint32_t tid, uint64_t **ret, size_t *ret_n);
/* The listed processes in pid's subtree (through unlisted processes too), pid included. */
int manager_list_subtree(sd_bus *bus, uint32_t pid, uint32_t **ret, size_t *ret_n);
int manager_list_listeners(sd_bus *bus, ListenerList *ret);
int manager_rescan(sd_bus *bus);
