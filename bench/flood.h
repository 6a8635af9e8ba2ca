/* flood.h: one unprivileged user's processes holding as many filters as the kernel lets them */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "core/util.h"

/*
 * A process group of n_processes processes of uid and gid 65534 (nobody), each with no_new_privs,
 * each stacking filters_each filters of filter_len instructions on its own chain (every filter's
 * bytes differ), then pausing. flood_start() returns once every process has installed all of them
 * (or failed: -EIO). The processes die with the benchmark (PR_SET_PDEATHSIG, set after the change
 * of credentials) and with flood_free().
 */
typedef struct Flood Flood;

int flood_start(size_t n_processes, size_t filters_each, size_t filter_len, Flood **ret);
size_t flood_filters(const Flood *f);
/* SIGKILL to the group, reap it. Accepts NULL. */
Flood *flood_free(Flood *f);
DEFINE_CLEANUP(Flood *, flood_free);
