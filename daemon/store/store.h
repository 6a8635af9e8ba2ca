/* store.h: the state database (SQLite): live filters, tasks, listeners and history, for admins */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"
#include "core/live.h"
#include "store/store-db.h"    /* typedef Store, transactions, the connection */
#include "store/store-write.h" /* the full pass and batch writes */

#define STORE_FILE_NAME "state.db"

/* Open (creating if needed) <state_dir>/state.db: WAL mode, application_id checked (a database of
 * another application is refused with -EMEDIUMTYPE and a logged message), migrations from
 * schema/ applied in one transaction up to the current user_version (a newer version than this
 * build knows is refused with -EPROTONOSUPPORT), prepared statements made ready. */
int store_open(const char *state_dir, Store **ret);
Store *store_free(Store *s);
DEFINE_CLEANUP(Store *, store_free);

/* The highest filter id the database has ever held (live or history), 0 if none: the daemon
 * starts handing out ids above it so ids are never reused within one database. */
int store_max_filter_id(Store *s, uint64_t *ret);

/* Who installed a filter, as the daemon saw it happen (filters found by a full pass have no
 * installer): the thread, its process, comm and exe ("" when unknown) and when (CLOCK_REALTIME). */
typedef struct StoreInstalled {
        pid_t tid, tgid;
        char *comm, *exe;
        uint64_t usec;
} StoreInstalled;
/* 1 and *ret filled when the installer of live filter id is known, 0 when it is not. */
int store_get_installer(Store *s, uint64_t id, StoreInstalled *ret);
void store_installed_done(StoreInstalled *x);

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

/* The live tables read back as a forest (not linked): what the daemon stored last, for the next
 * start to keep the ids of the filters that are still there. */
int store_load_live(Store *s, Forest **ret);

