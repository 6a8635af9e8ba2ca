/* store-rows-internal.h: the rows of the live tables as store-rows.c binds them, for the writes
 * of store-write.c */
#pragma once

#include "store/store-db-internal.h"
#include "store/store-rows.h"

typedef struct FilterRow {
        uint64_t id, parent_id;
        const struct sock_filter *insns;
        size_t len;
        char digest[PROG_DIGEST_STRING_MAX];
        bool log, wait_killable_recv, has_listener;
        bool over_budget; /* its instructions were not kept: an empty program is stored */
        const char *identity;
        uint32_t refs, users; /* 0 = unknown */
        const StoreInstaller *installer;
} FilterRow;

typedef struct RetireArgs {
        uint64_t id, now_usec;
} RetireArgs;

typedef struct ProcessRow {
        pid_t pid, ppid;
        uint64_t start_time; /* 0 = unknown */
        const char *comm, *exe;
        uid_t uid;
        gid_t gid;
        bool no_new_privs;
} ProcessRow;

typedef struct TaskRow {
        pid_t tid, tgid;
        uint64_t start_time;
        const char *mode;
        uint64_t filter_id;
} TaskRow;

/* A filter's row. -EINVAL: an id, length or identity that cannot be stored. */
int filter_row_init(FilterRow *row, const Filter *flt, const StoreInstaller *installer);
int store_raise_max_filter_id(Store *s, uint64_t id);
/* Insert or replace the row (brought back from history when its id is there). */
int store_put_filter_row(Store *s, const FilterRow *f, uint64_t now_usec);
/* Mark a row that did not change as seen (its program not written again), else put it. */
int store_touch_or_put_filter_row(Store *s, const FilterRow *f, uint64_t now_usec);
/* Move filter a->id (RetireArgs) to history: the steps, inside a savepoint or a batch. */
int store_retire_filter_steps(Store *s, const void *arg);
void process_row_init(ProcessRow *row, const Process *p);
/* Binds every parameter of STMT_PUT_PROCESS and STMT_TOUCH_PROCESS (which). */
int store_run_process_row(Store *s, StoreStatement which, const ProcessRow *p);
/* A thread's row. -EINVAL: ids or a mode that cannot be stored. */
int task_row_init(TaskRow *row, pid_t tid, pid_t tgid, uint64_t start_time, TaskMode mode, uint64_t filter_id);
/* Binds every parameter of STMT_PUT_TASK and STMT_TOUCH_TASK (which). */
int store_run_task_row(Store *s, StoreStatement which, const TaskRow *t, uint64_t now_usec);
