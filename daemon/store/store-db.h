/* store-db.h: the state database's connection (store-db.c): transactions, the commit hook, the
 * connection itself for the other tables' code */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct sqlite3;
typedef struct Store Store;

/* Incremental changes, grouped in one transaction per batch. */
int store_begin(Store *s);
int store_commit(Store *s);
void store_rollback(Store *s);

/* Let go of the page cache's unused pages (sqlite3_db_release_memory()). */
void store_release_memory(Store *s);

/* The database file's path. */
const char *store_path(const Store *s);

/* A snapshot row its writer could not delete when it failed, for the next writer to delete (it
 * would count against its owner's quota, and show nowhere, until a restart). */
void store_unfinished_remember(Store *s, uint64_t id);
/* One of them, forgotten: false when there is none. */
bool store_unfinished_take(Store *s, uint64_t *ret);

/* Called after every commit with the number of pages the write-ahead log holds; while one is set,
 * the connection makes no checkpoint itself (store-checkpoint.c makes them). NULL: SQLite's
 * automatic checkpoints again. */
typedef void (*StoreCommitHook)(void *userdata, unsigned log_pages);
void store_set_commit_hook(Store *s, StoreCommitHook hook, void *userdata);

/* For the other tables' code (store-snapshot.c), which keeps its statements next to it: the
 * connection, and a failed SQLite call logged and turned into a negative errno. */
struct sqlite3 *store_database(Store *s);
int store_sqlite_error(Store *s, int rc, const char *what);
