/* proc-check.h: tests that a snapshot says of the original tree what /proc says, thread by thread */
#pragma once

#include "core/forest.h"

/* Compares snapshot with /proc through the identity mapping (no_new_privs, mode, filter count of
 * every thread, an exited leader's state); each difference is a test message prefixed with what,
 * and any fails the test. */
void tests_assert_snapshot_is_proc(const Forest *snapshot, const char *what);
