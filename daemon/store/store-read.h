/* store-read.h: what the state database says: the open checks of a file, the live tables and
 * installers read back (store-read.c) */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"
#include "store/store-db.h"

typedef struct StoreHeader {
        int64_t application_id;
        int64_t user_version;
        int64_t n_objects; /* tables, indexes, views, triggers */
} StoreHeader;

/* The header fields, by a one-shot statement that writes nothing. -EMEDIUMTYPE: not SQLite. */
int store_read_header(Store *s, StoreHeader *ret);
/* -EMEDIUMTYPE: another application's; -EPROTONOSUPPORT: a schema newer than this build's. */
int store_check_header(Store *s, const StoreHeader *h);
int store_check_format(Store *s);
/* s->generation from the meta row. */
int store_load_generation(Store *s);

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

/* The live tables read back as a forest (not linked): what the daemon stored last, for the next
 * start to keep the ids of the filters that are still there. Its failures are logged at debug
 * level only: the caller logs them, once. */
int store_load_live(Store *s, Forest **ret);
