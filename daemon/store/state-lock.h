/* state-lock.h: one daemon per state directory: a lock held for the daemon's life */
#pragma once

#define STATE_LOCK_FILE_NAME "sectreed.lock"

/* Take the lock of the state directory dir (created 0700 if missing): an exclusive flock() on
 * dir/sectreed.lock (0600), which then holds this process's pid. Returns the lock's fd (keep it
 * open for as long as the database is in use; closing it, or exiting, lets the lock go), or:
 * -EBUSY when another process holds it (the error logged names its pid, as the file says it);
 * -EPERM when dir or the lock file belongs to another user; -ELOOP when the lock file is a link;
 * another negative errno, logged, when the directory or the file cannot be made or opened. */
int state_lock_take(const char *dir);
