/* task-names.h: what monitor knows of each task: its process and name */
/* From ListTasks and the daemon's TaskAdded, TaskExited and ProcessRenamed signals. */
#pragma once

#include <systemd/sd-bus.h>

#include "core/hashmap.h"
#include "core/util.h"

typedef struct TaskName {
        uint32_t tid, pid;
        char *comm; /* NULL: a tid known not to be listed */
} TaskName;

typedef struct TaskNames {
        Hashmap by_tid; /* tid -> TaskName */
} TaskNames;

void task_names_done(TaskNames *t);

/* Every task ListTasks lists (adding to what is known). Logs. */
int task_names_load(TaskNames *t, sd_bus *bus);
/* A task that appeared (replacing what was known of that tid); comm NULL marks a tid the daemon
 * does not list. -ENOMEM. */
int task_names_add(TaskNames *t, uint32_t tid, uint32_t pid, const char *comm);
void task_names_remove(TaskNames *t, uint32_t tid);
/* Process pid has a new name: every known thread of it takes it. -ENOMEM. */
int task_names_rename(TaskNames *t, uint32_t pid, const char *comm);
const TaskName *task_names_get(const TaskNames *t, uint32_t tid);
