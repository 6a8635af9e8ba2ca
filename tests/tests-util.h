/* tests-util.h: what every test program shares: privilege checks that turn skips into failures
 * in CI, and comparisons of a scanned Forest with a scenario's ground truth */
#pragma once

#include <glib.h>
#include <stdbool.h>

#include "forest.h"
#include "scenario.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Forest, forest_free)

/* True if the test may run (root, and BPF/ptrace available). Otherwise marks the test skipped
 * with why — or failed when $CI is set, since CI must run every kernel test. */
bool tests_require_root(void);
bool tests_require(bool condition, const char *why);

/* Mount tracefs at /sys/kernel/tracing if it is not mounted. */
void tests_ensure_tracefs(void);

/* Assert that f reports the scenario's live tasks with the chains that were built:
 * every live scenario task is in f with its mode; walking its chain in f gives the same bytes and
 * flags as the ground truth at every depth; and if exact, two tasks' chains share a filter id at
 * a position iff they share the ground-truth node there (node <-> filter id is a bijection).
 * If !exact, every filter must be marked inferred. */
void tests_assert_forest_matches(const Forest *f, const Scenario *s, bool exact);

/* Run argv, capture stdout (and stderr if ret_err), return exit status (or -1 on spawn failure). */
int tests_run_capture(char **argv, char **ret_out, char **ret_err);
