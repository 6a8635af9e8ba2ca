/* restore-fds.h: the fds of a restore that its Restore() reply could not carry */
/* Taken with TakeRestoreFds: no message on the bus carries more than RESTORE_MESSAGE_MAX_FDS. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

/* What one message carries at most (org.sectree1(5), Restore): a reply with that many fds may
 * have more to take. */
#define RESTORE_MESSAGE_MAX_FDS 16

/* TakeRestoreFds(id) until nothing is left: copies (O_CLOEXEC, above 2) of the pidfds are appended
 * to *pidfds, and of the listener fds, with their snapshot listener ids, to *listener_fds and
 * *listener_ids (the arrays are realloc'ed; the caller closes and frees them). Logs its failure
 * once and returns a negative errno; what was appended before stays. */
int restore_fds_take(sd_bus *bus, uint64_t id, int **pidfds, size_t *n_pidfds, uint64_t **listener_ids,
                     int **listener_fds, size_t *n_listeners);
