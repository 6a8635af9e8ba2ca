/* snapshot-samples.h: small valid snapshots built through the forest API, shared by the snapshot
 * tests and the fuzz corpus generator (no GLib: the fuzz build links only lib/) */
#pragma once

#include "core/forest.h"

typedef enum SampleKind {
        /* Every sample is a shape the kernel can produce: a restore plans and rebuilds it. */
        SAMPLE_BASIC,    /* whole machine: 4 filters (a chain of 3 and a second root), 3 processes, a listener */
        SAMPLE_SUBTREE,  /* root 100 and its children, with exe, argv and uid set, and a listener
                          * holder (50) outside the subtree */
        SAMPLE_EMPTY,    /* nothing: no filters, no processes */
        SAMPLE_INFERRED, /* ptrace backend, inferred identity, two listeners, strict threads */
        _SAMPLE_MAX,
} SampleKind;

const char *sample_kind_to_string(SampleKind k);

/* Variations of SAMPLE_BASIC for the diff tests (bits). */
typedef enum SampleVariant {
        VARIANT_NONE = 0,
        VARIANT_PROGRAM = 1 << 0,     /* filter 4 has other instructions */
        VARIANT_LOG = 1 << 1,         /* filter 1 logs */
        VARIANT_NEW_PROCESS = 1 << 2, /* process 400 with a new filter on filter 3 */
        VARIANT_NO_300 = 1 << 3,      /* process 300 is gone */
        VARIANT_RESTART_200 = 1 << 4, /* process 200 has another start time */
        VARIANT_STRICT_101 = 1 << 5,  /* thread 101 in strict mode instead of on filter 4: deliberately
                                       * not a kernel state (filter 4 is held by nobody), for diffs */
} SampleVariant;

/* A linked forest with snapshot-local ids (1..n, parents first). NULL on allocation failure. */
Forest *sample_forest(SampleKind kind);
Forest *sample_forest_variant(unsigned variants);

/* Large valid snapshots, for loads: n_filters root filters of one instruction and one process
 * (about 226 bytes of JSON per filter); n_processes processes with argv_bytes of argv each. */
Forest *sample_forest_many_filters(size_t n_filters);
Forest *sample_forest_long_argv(size_t n_processes, size_t argv_bytes);

/* SAMPLE_BASIC with the units of format version 2: its first process in sshd.service, its second
 * a user unit inside a container (machine-web.scope, app.service, machine web), the third none. */
Forest *sample_forest_with_units(void);

/* snapshot_diff_print()'s text of a against b (linked forests); NULL if either fails. */
char *sample_diff_text(const Forest *a, const Forest *b);
