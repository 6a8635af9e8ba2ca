/* store-floor.h: the floor of the store figure: a forest's rows in bare tables of the state
 * database's columns, one prepared INSERT per table, in one transaction */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/forest.h"

typedef struct StoreFloorResult {
        double fill_usec;    /* the whole forest, BEGIN to COMMIT */
        double *batch_usec;  /* one-row transactions, each BEGIN to COMMIT; n_batches of them */
        size_t n_batches;
        uint64_t bytes;      /* page_count * page_size after a checkpoint, after the fill */
} StoreFloorResult;

/*
 * In a new database (a temporary directory, removed again) on a connection with the store's
 * settings (WAL, synchronous=NORMAL, the same page cache): tables with the columns of
 * schema/state-001.sql's filters, processes and tasks, with no index but the rowid, no
 * constraint and no upsert. The values are encoded before the clock starts (digest strings,
 * programs in the stored encoding), so what is timed is SQLite's own work for those bytes. Then
 * r->n_batches transactions of one bare INSERT each, the floor of an incremental batch, into
 * r->batch_usec.
 */
int store_floor_run(const Forest *f, StoreFloorResult *r);
