/* inproc.h: the Manager run in the test's own process, without a bus (the bpf backend, a state
 * directory of its own): the test drives its loop, and not running it is the daemon stopped */
#pragma once

#include <stdbool.h>

#include "service/manager.h"

typedef struct InProc {
        char *dir;
        Manager *m;
} InProc;

/* Opened (the first full pass done); false when the test cannot run here (not root). events_size:
 * $SECTREE_BPF_EVENTS_SIZE (NULL: the default), refresh_usec: $SECTREE_REFRESH_USEC (NULL: 600 s,
 * no refresh during a test). */
bool inproc_start(InProc *ip, const char *events_size, const char *refresh_usec);
void inproc_stop(InProc *ip);
/* Run the manager's loop for timeout_ms, or until stop (if not NULL) says so; stop's answer. */
bool inproc_run(InProc *ip, bool (*stop)(InProc *ip, void *userdata), void *userdata, unsigned timeout_ms);
/* A stop for inproc_run(): the kernel's event buffer is empty. */
bool inproc_watch_drained(InProc *ip, void *userdata);
