/* task-names.c: what monitor knows of each task: its process and name, from ListTasks and the
 * daemon's TaskAdded, TaskExited and ProcessRenamed signals */
#include "task-names.h"

#include "manager-calls.h"

static void task_name_free(TaskName *x) {
        if (x)
                free(x->comm);
        free(x);
}

void task_names_done(TaskNames *t) {
        uint64_t key;
        void *value;
        for (size_t i = 0; hashmap_next(&t->by_tid, &i, &key, &value);)
                task_name_free(value);
        hashmap_deinit(&t->by_tid);
}

int task_names_add(TaskNames *t, uint32_t tid, uint32_t pid, const char *comm) {
        TaskName *x = calloc(1, sizeof(TaskName));
        if (!x || (comm && !(x->comm = strdup(comm)))) {
                task_name_free(x);
                return -ENOMEM;
        }
        x->tid = tid;
        x->pid = pid;
        task_names_remove(t, tid);
        int r = hashmap_put(&t->by_tid, tid, x);
        if (r < 0)
                task_name_free(x);
        return r;
}

void task_names_remove(TaskNames *t, uint32_t tid) {
        task_name_free(hashmap_remove(&t->by_tid, tid));
}

int task_names_rename(TaskNames *t, uint32_t pid, const char *comm) {
        uint64_t key;
        void *value;
        for (size_t i = 0; hashmap_next(&t->by_tid, &i, &key, &value);) {
                TaskName *x = value;
                if (x->pid != pid || !x->comm)
                        continue;
                char *c = strdup(comm);
                if (!c)
                        return -ENOMEM;
                free(x->comm);
                x->comm = c;
        }
        return 0;
}

const TaskName *task_names_get(const TaskNames *t, uint32_t tid) {
        return hashmap_get(&t->by_tid, tid);
}

int task_names_load(TaskNames *t, sd_bus *bus) {
        _cleanup_(task_list_done) TaskList l = {};
        int r = manager_list_tasks(bus, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++)
                if (!task_names_get(t, l.items[i].tid) &&
                    task_names_add(t, l.items[i].tid, l.items[i].tgid, l.items[i].comm) < 0)
                        return log_oom();
        return 0;
}
