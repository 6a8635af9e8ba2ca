/* listener-holder.h: a process under no filter holding seccomp listener fds at chosen numbers
 * among many other open fds, the tasks that installed their filters gone */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/forest.h"

/* Fork the holder: a listener of a filter of its own at each fds[i] (each installed by a child
 * that sent it the fd and exited), /dev/null at every fd from 3 to LISTENER_HOLDER_MAX_FILLER but
 * each third (gaps in its bitmap of open fds), and nothing at the fds between that and the highest
 * listener. Returns its pid once it holds them all; it dies with this process. */
#define LISTENER_HOLDER_MAX_FILLER 300
pid_t listener_holder_start(const int *fds, size_t n);
/* Listener fds in a bitmap of several words, with gaps, one above 1024. */
static const int LISTENER_HOLDER_FDS[] = { 64, 130, 1500 };

/* f holds holder with a listener at each fds[i], its only holder, of a filter no task holds; and
 * no other listener, unless among (a scan of the whole machine). */
void listener_holder_assert(const Forest *f, pid_t holder, const int *fds, size_t n, bool among);
/* Kill it and reap it. */
void listener_holder_stop(pid_t pid);
