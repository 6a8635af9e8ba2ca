/* live-forest.h: a lib/ Forest built from the daemon's ListFilters and ListTasks replies */
#pragma once

#include "core/forest.h"
#include "manager-calls.h"
#include "manager-properties.h"

/* Build a linked forest. Filters carry the daemon's length, digest and flags but no
 * instructions (len is the daemon's count, insns is NULL): enough for printing, not for
 * evaluating or writing a snapshot. Tasks whose head filter is not in filters (it appeared or
 * vanished between the two calls) are left out. Unless all_processes, processes with no thread
 * in strict or filter mode are left out too. */
int live_forest_build(const FilterList *filters, const TaskList *tasks, const ManagerProperties *p,
                      bool all_processes, Forest **ret);

/* Fetch properties, tasks and filters and build the forest; root > 0 restricts it to the
 * subtree of that process: the listed processes whose chain of listed parents leads to it (or
 * whose unlisted parent is root itself), and the filters their chains reach. root need not be
 * listed (an unfiltered process), but must exist and be visible to the caller: else the daemon's
 * NoSuchTask or AccessDenied. Logs. */
int live_forest_fetch(sd_bus *bus, pid_t root, Forest **ret);
