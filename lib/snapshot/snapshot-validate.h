/* snapshot-validate.h: the one validator every imported snapshot goes through, and the checks the
 * readers make while they build the forest (what a forest cannot hold: duplicates, lengths) */
#pragma once

#include "core/forest.h"
#include "snapshot/snapshot-format.h"
#include "snapshot/snapshot-text.h"

/* Check a forest read from a snapshot, before it is linked: elements are named by their position
 * in the forest's arrays, which for an unlinked forest built by a reader is their position in the
 * file ("filters[3] (id 7): parent 12 does not exist"). A linked forest can be checked too (its
 * arrays are then in linked order). Checks: counts against the SNAPSHOT_MAX_* limits; source
 * backend and identity; host strings; every filter's program (prog_validate()), recomputed
 * digest, parent (exists, no cycle, listed before the filter), the kernel's per-path instruction
 * budget, and listener link; every process's pid range, comm/exe/argv, ppid cycles and, for a
 * subtree, membership; every thread's tid (unique across processes), mode and head filter; every
 * listener's filter (which must name it back) and holders (processes of the snapshot). Strings
 * must be UTF-8. Returns 0, or -EINVAL with *error (malloc'ed) saying the first problem, or
 * -ENOMEM. */
int snapshot_validate(const Forest *f, char **error);

/* Set *error to a malloc'ed message and return -EINVAL (or -ENOMEM when the message cannot be
 * allocated). error may be NULL. */
int snapshot_error(char **error, const char *format, ...) _printf_(2, 3);

/* A name taken from a file (a JSON key, an SQLite object's name) as an error message may show it:
 * quoted when it is an identifier of at most 32 bytes ([A-Za-z_][A-Za-z0-9_]*), else a phrase
 * saying it is not. Messages never echo other bytes of a file: the daemon reads callers' files
 * with its own credentials, and its errors go back to the caller. */
#define SNAPSHOT_ERROR_NAME_MAX 48
const char *snapshot_error_name(const char *s, char buf[static SNAPSHOT_ERROR_NAME_MAX]);

/* What a reader found for one filter, before it becomes a Filter. */
typedef struct SnapshotFilterFields {
        uint64_t id;
        uint64_t parent;   /* 0 = null */
        uint64_t listener; /* 0 = null */
        uint64_t length;   /* as the file says */
        const struct sock_filter *insns;
        size_t n_insns;    /* as the program holds */
        uint8_t digest[PROG_DIGEST_SIZE]; /* as the file says */
        bool log, wait_killable_recv;
        IdentityKind identity;
} SnapshotFilterFields;

/* What a reader builds the forest with: adding what it found at position index of its array
 * (index of the process or listener, then of the thread or holder inside it), with messages for
 * what a forest cannot hold or a reader must not pass on: duplicate ids, pids, tids and holders
 * ((pid, fd) names one file: it holds one listener), a length that is not the program's, a comm
 * longer than 15 bytes. Everything else is left to snapshot_validate(). Adding is O(1). */
typedef struct SnapshotBuilder {
        Forest *forest;
        Hashmap listeners; /* id -> position + 1 */
        Hashmap tids;      /* tid -> (process << 32 | thread) + 1 */
        Hashmap holders;   /* pid << 32 | fd -> (listener << 32 | holder) + 1 */
        unsigned version;  /* the file's format version, once the reader has read it */
} SnapshotBuilder;

int snapshot_builder_init(SnapshotBuilder *b);
void snapshot_builder_deinit(SnapshotBuilder *b);
int snapshot_builder_add_filter(SnapshotBuilder *b, size_t index, const SnapshotFilterFields *x, char **error);
int snapshot_builder_add_process(SnapshotBuilder *b, size_t index, pid_t pid, Process **ret, char **error);
int snapshot_builder_set_comm(Process *p, size_t index, const char *comm, char **error);
int snapshot_builder_add_thread(SnapshotBuilder *b, Process *p, size_t pindex, size_t tindex, pid_t tid,
                                TaskMode mode, uint64_t filter, char **error);
int snapshot_builder_add_listener(SnapshotBuilder *b, size_t index, uint64_t id, uint64_t filter, Listener **ret,
                                  char **error);
int snapshot_builder_add_holder(SnapshotBuilder *b, Listener *l, size_t lindex, size_t hindex, pid_t pid, int fd,
                                char **error);

/* Validate the forest built (snapshot_validate()), link it and hand it over. */
int snapshot_builder_finish(SnapshotBuilder *b, Forest **ret, char **error);
