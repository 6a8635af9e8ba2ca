/* store-rows.h: the live tables' rows written one at a time: a filter, process or thread put, a
 * thread removed, a filter retired (store-rows.c) */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"
#include "store/store-db.h"

typedef struct StoreInstaller {
        pid_t tid, tgid;
        const char *comm;
        const char *exe; /* may be NULL */
} StoreInstaller;

/* The filter's digest is taken as it is (computed where the filter entered the model). A filter
 * whose id is in history (retired while something the daemon did not hear of still held it) comes
 * back from history with its first_seen and installer, here and in a full pass. */
int store_put_filter(Store *s, const Filter *flt, const StoreInstaller *installer, uint64_t now_usec);
/* Insert or update a process's row; a thread's (its process's row must be there). */
int store_put_process(Store *s, const Process *p);
int store_put_thread(Store *s, const Process *p, const Task *t, uint64_t now_usec);
int store_remove_task(Store *s, pid_t tid);
/* Move a filter no task or listener reaches any more to history. */
int store_retire_filter(Store *s, uint64_t id, uint64_t now_usec);
