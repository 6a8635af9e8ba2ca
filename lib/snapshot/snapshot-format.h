/* snapshot-format.h: the snapshot formats' name and version, the limits on what an imported
 * snapshot may hold, and the names of the formats; the bottom of the snapshot family */
#pragma once

#include <stdint.h>

#include "core/prog.h"
#include "core/util.h"

#define SNAPSHOT_FORMAT_NAME "sectree-snapshot"
/* Version 1; version 2 adds what version 1 cannot hold, each process's units (written only when
 * some process has one: snapshot_format_version_of()). Readers take both. */
#define SNAPSHOT_FORMAT_VERSION_1 1
#define SNAPSHOT_FORMAT_VERSION_UNITS 2
#define SNAPSHOT_FORMAT_VERSION SNAPSHOT_FORMAT_VERSION_UNITS /* the newest this reads and writes */

/* Limits on what an imported snapshot may hold. A file beyond any of them is refused before it
 * is built into a forest (the file size before it is even parsed). */
#define SNAPSHOT_MAX_FILE_SIZE (64u * 1024 * 1024) /* bytes, either format */
#define SNAPSHOT_MAX_JSON_MEMORY (1024u * 1024 * 1024) /* what parsing one JSON document may allocate:
                                                        * 64 MiB of real programs take ~850 MiB */
#define SNAPSHOT_MAX_TASKS 100000                  /* threads, summed over all processes */
#define SNAPSHOT_MAX_PROCESSES SNAPSHOT_MAX_TASKS  /* a process has at least one thread */
#define SNAPSHOT_MAX_FILTERS 1000000
#define SNAPSHOT_MAX_FILTER_INSNS PROG_MAX_INSNS   /* 4096, BPF_MAXINSNS */
#define SNAPSHOT_MAX_PATH_INSNS 32768              /* the kernel's MAX_INSNS_PER_PATH */
#define SNAPSHOT_PATH_INSN_PENALTY 4               /* counted per filter below a new one */
#define SNAPSHOT_MAX_LISTENERS SNAPSHOT_MAX_FILTERS /* at most one per filter */
#define SNAPSHOT_MAX_HOLDERS 1000000               /* (pid, fd) pairs, summed over listeners */
#define SNAPSHOT_MAX_PID 4194304                   /* PID_MAX_LIMIT on 64-bit kernels */
#define SNAPSHOT_MAX_PATH 4096                     /* bytes of exe, PATH_MAX */
#define SNAPSHOT_MAX_HOST_STRING 256               /* bytes of host.* and source.backend */
#define SNAPSHOT_MAX_ARGV_BYTES (2u * 1024 * 1024) /* all of one process's argv, NULs included */
#define SNAPSHOT_MAX_NAME 256                      /* bytes of snapshot.name */
#define SNAPSHOT_MAX_UID (UINT32_MAX - 1)          /* (uid_t) -1 is no uid */

typedef enum SnapshotFormat {
        SNAPSHOT_FORMAT_JSON,
        SNAPSHOT_FORMAT_SQLITE,
        _SNAPSHOT_FORMAT_MAX,
        _SNAPSHOT_FORMAT_INVALID = -EINVAL,
} SnapshotFormat;
const char *snapshot_format_to_string(SnapshotFormat f);
SnapshotFormat snapshot_format_from_string(const char *s);
