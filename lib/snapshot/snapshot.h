/* snapshot.h: what both snapshot file formats share: limits, format detection, reading any file */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/forest.h"

#define SNAPSHOT_FORMAT_NAME "sectree-snapshot"
#define SNAPSHOT_FORMAT_VERSION 1

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


/* Which format the bytes are in: SQLite when they start with the SQLite magic
 * "SQLite format 3\0", JSON otherwise (the JSON reader then says what is wrong). */
SnapshotFormat snapshot_detect_format(const void *data, size_t size);

/* Read a snapshot of either format from memory, from an fd (a pipe is fine: it is read to the
 * end, at most SNAPSHOT_MAX_FILE_SIZE bytes) or from a path. The result is validated
 * (snapshot_validate()) and linked. Returns 0; -EINVAL when the snapshot is refused, with
 * *error (malloc'ed) naming the field and the element; another negative errno on I/O or
 * allocation failure (*error may then be set too). */
int snapshot_read_data(const void *data, size_t size, Forest **ret, char **error);
int snapshot_read_any(int fd, Forest **ret, char **error);
int snapshot_read_path(const char *path, Forest **ret, char **error);

/* Write a linked forest in the given format into fd (at its current position), e.g. the fd a
 * D-Bus caller passed. */
int snapshot_write_fd(const Forest *f, SnapshotFormat format, int fd);

/* Read all of fd into a malloc'ed buffer (NUL-terminated, the NUL not counted), refusing more than
 * max bytes with -EFBIG. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size);
/* Write all of buf to fd, retrying short writes and EINTR. */
int write_full_fd(int fd, const void *buf, size_t size);

/* "2026-12-03T07:20:49.123456Z" for CLOCK_REALTIME microseconds, and back. Parsing accepts only
 * UTC ("Z"), with 0..9 fraction digits (beyond microseconds they are dropped), years 1970..9999. */
int snapshot_format_time(uint64_t usec, char *buf, size_t len);
int snapshot_parse_time(const char *s, uint64_t *ret);
#define SNAPSHOT_TIME_MAX sizeof("YYYY-MM-DDTHH:MM:SS.uuuuuuZ")

/* Strings in a snapshot are UTF-8 (JSON needs it), but what the kernel reports (comm, argv, exe)
 * is any bytes: writers store snapshot_utf8_sanitize(s), a malloc'ed copy in which every invalid
 * sequence is replaced by U+FFFD (NULL for NULL, or when out of memory: check s). */
bool snapshot_utf8_valid(const char *s);
char *snapshot_utf8_sanitize(const char *s);
/* What the kernel reports of a process (comm, exe, argv) is any bytes: made UTF-8 in place, comm cut
 * at the end of a character. 0 or -ENOMEM. */
int snapshot_process_make_utf8(Process *p);
