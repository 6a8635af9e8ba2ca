/* store-checkpoint.h: the state database's checkpoints, made in a thread of their own on a
 * connection of their own, so that no commit on the event loop copies the log into the database
 * or waits for its fsync */
#pragma once

#include "store/store.h"

/* The log is checkpointed once it holds this many pages (SQLite's own automatic threshold is
 * 1,000): fewer restarts of the log, each of which costs the next commit an fsync of its header. */
#define STORE_CHECKPOINT_PAGES 4000U
/* Once a checkpoint has copied the whole log, the log's file is cut back to this size when it
 * starts again (journal_size_limit): one large transaction (a full pass of a large machine) no
 * longer leaves a file that large for good. The log's pages of 4 KiB, their frame headers and
 * the file's header. */
#define STORE_WAL_LIMIT_BYTES ((uint64_t) STORE_CHECKPOINT_PAGES * (4096 + 24) + 32)

typedef struct StoreCheckpointer StoreCheckpointer;

/* Take over the checkpoints of s (its connection stops making them itself) until freed. */
int store_checkpointer_new(Store *s, StoreCheckpointer **ret);
/* Stops the thread (waiting for a checkpoint under way) and gives the checkpoints back to s. */
StoreCheckpointer *store_checkpointer_free(StoreCheckpointer *c);
/* Log pages its checkpoints have copied into the database so far. */
uint64_t store_checkpointer_pages_copied(StoreCheckpointer *c);
DEFINE_CLEANUP(StoreCheckpointer *, store_checkpointer_free);
