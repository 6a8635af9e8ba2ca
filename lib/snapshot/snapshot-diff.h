/* snapshot-diff.h: what changed between two snapshots: filters (by digest and position in the
 * forest), processes (by pid and start time) and the chains of the tasks both have */
#pragma once

#include <stdio.h>

#include "core/forest.h"

typedef enum DiffKind {
        DIFF_ADDED,   /* only in b */
        DIFF_REMOVED, /* only in a */
        DIFF_CHANGED, /* in both, different */
        _DIFF_KIND_MAX,
        _DIFF_KIND_INVALID = -EINVAL,
} DiffKind;
const char *diff_kind_to_string(DiffKind k);
DiffKind diff_kind_from_string(const char *s);

/* What differs between two filters matched at the same position. */
typedef enum FilterChange {
        FILTER_CHANGE_PROGRAM = 1 << 0, /* other instructions */
        FILTER_CHANGE_LOG = 1 << 1,
        FILTER_CHANGE_WAIT_KILLABLE_RECV = 1 << 2,
        FILTER_CHANGE_LISTENER = 1 << 3, /* a listener appeared or went */
        FILTER_CHANGE_IDENTITY = 1 << 4, /* exact <-> inferred */
        _FILTER_CHANGE_ALL = (1 << 5) - 1,
} FilterChange;
/* "program", "log", ... for one bit. */
const char *filter_change_to_string(FilterChange c);

/* Filters are matched top-down: the roots of a with the roots of b, then the children of every
 * matched pair with each other. Among siblings, filters with the same digest match (so a filter
 * is identified by its digest and the path of digests from its root, as a kernel filter is by
 * its bytes and the filters below it); when exactly one sibling is left unmatched on each side,
 * those two match as "changed" (the same place in the forest, other bytes). What is left is
 * added or removed, with everything stacked on it. */
typedef struct FilterDiff {
        DiffKind kind;
        const Filter *a, *b; /* NULL on the side that does not have it */
        unsigned changes;    /* FilterChange bits, for DIFF_CHANGED */
} FilterDiff;

typedef struct ProcessDiff {
        DiffKind kind; /* added or removed: a process is its (pid, start_time); changed: its unit,
                        * user unit or machine differ (when both snapshots record units) */
        const Process *a, *b;
} ProcessDiff;

/* A thread of a process both snapshots have: its chain (bytes and flags of every filter, from
 * the head down) or its mode changed, or the thread is only on one side. */
typedef struct TaskDiff {
        DiffKind kind;
        const Process *process_a, *process_b;
        const Task *a, *b; /* NULL on the side that does not have it */
} TaskDiff;

typedef struct SnapshotDiff {
        const Forest *a, *b; /* borrowed: they must outlive the diff */
        FilterDiff *filters; /* removed and changed in a's order, then added in b's */
        size_t n_filters;
        ProcessDiff *processes; /* by pid */
        size_t n_processes;
        TaskDiff *tasks; /* by pid, then tid */
        size_t n_tasks;
} SnapshotDiff;

/* Compare two linked forests. */
int snapshot_diff(const Forest *a, const Forest *b, SnapshotDiff **ret);
SnapshotDiff *snapshot_diff_free(SnapshotDiff *d);
DEFINE_CLEANUP(SnapshotDiff *, snapshot_diff_free);

bool snapshot_diff_is_empty(const SnapshotDiff *d);
size_t snapshot_diff_count_filters(const SnapshotDiff *d, DiffKind kind);

/* Renderings: readable text (a summary line per section, then "+", "-", "~" lines), and JSON
 * (see schema/snapshot-v1.md, "Differences"). */
int snapshot_diff_print(const SnapshotDiff *d, FILE *out);
int snapshot_diff_format_json(const SnapshotDiff *d, char **ret);
