/* store.h: the state database (SQLite): live filters, tasks, listeners and history, for admins */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "core/forest.h"
#include "core/live.h"
#include "store/store-db.h"    /* typedef Store, transactions, the connection */
#include "store/store-read.h"  /* the read-back: installers, the live tables, the highest id */
#include "store/store-rows.h"  /* one row at a time: a filter, process or thread put, removed, retired */
#include "store/store-write.h" /* the full pass and batch writes */

#define STORE_FILE_NAME "state.db"

/* Open (creating if needed) <state_dir>/state.db: WAL mode, application_id checked (a database of
 * another application is refused with -EMEDIUMTYPE and a logged message), migrations from
 * schema/ applied in one transaction up to the current user_version (a newer version than this
 * build knows is refused with -EPROTONOSUPPORT), prepared statements made ready. */
int store_open(const char *state_dir, Store **ret);
Store *store_free(Store *s);
DEFINE_CLEANUP(Store *, store_free);
