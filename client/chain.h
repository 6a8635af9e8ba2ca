/* chain.h: one task's filter chain in full, from the daemon or from a snapshot's forest */
/* Fetched from the daemon (GetTaskChain, then GetFilter for each), or taken from a snapshot's
 * forest. */
#pragma once

#include "context.h"
#include "core/eval.h"
#include "core/forest.h"
#include "manager-calls.h"

typedef struct Chain {
        uint32_t tid;
        FilterDetail *filters; /* newest (the head) first */
        size_t n;
} Chain;

void chain_done(Chain *ch);

/* Logs. */
int chain_fetch(sd_bus *bus, uint32_t tid, Chain *ret);

/* A filter of a forest as GetFilter would describe it: tasks counts the threads whose head it is
 * (in that forest), flags are "log", "wait_killable_recv", "listener". -ENOMEM. */
int filter_detail_from_filter(const Filter *x, FilterDetail *ret);

/* The chain of thread tid of a linked forest, and its mode. -ENOENT (not logged) when the forest
 * has no such thread; other failures are logged. */
int chain_from_forest(const Forest *f, pid_t tid, Chain *ret, TaskMode *ret_mode);

/* The chain of task tid and its mode: from the snapshot file of --file, or live (GetTaskChain and
 * GetFilter, and ListTasks for the mode of a task without filters: strict or disabled). Logs; a
 * task the file lacks is "No task N in snapshot F". */
int chain_load_task(Context *c, uint32_t tid, Chain *ret, TaskMode *ret_mode);

/* The chain of thread tid, from the snapshot of --file or from the daemon, without its mode.
 * Logs, also "No task TID in snapshot F". */
int chain_get(Context *c, uint32_t tid, Chain *ret);

/* The chain's programs, newest first, into progs (ch->n entries), each checked with
 * prog_validate() first: they come from the daemon or a file. Logs. */
int chain_programs(const Chain *ch, ChainProgram *progs);
