/* cgroup-members.h: the cgroup of every process at once, from the cgroup2 hierarchy's cgroup.procs
 * files (cgroup-members.c) */
#pragma once

#include <sys/types.h>

#include "core/hashmap.h"

/* Each process's cgroup as /proc/PID/cgroup's "0::" line names it, for all processes of the
 * machine: one read per cgroup instead of one per process. */
typedef struct CgroupMembers {
        Hashmap by_pid; /* pid -> index + 1 into paths */
        char **paths;   /* "/system.slice/sshd.service" ("/" for the root) */
        size_t n_paths, allocated;
} CgroupMembers;

/* Read the hierarchy mounted at /sys/fs/cgroup (unified) or /sys/fs/cgroup/unified (hybrid).
 * -ENOENT when neither is cgroup2. A process that moves or starts meanwhile may be missing or
 * name its former cgroup: a caller that needs it exact checks /proc/PID/cgroup. */
int cgroup_members_read(CgroupMembers *ret);
/* pid's cgroup path, NULL if the walk did not meet it. */
const char *cgroup_members_path(const CgroupMembers *m, pid_t pid);
void cgroup_members_done(CgroupMembers *m);

/* text, /proc/PID/cgroup's, made the path of its "0::" line in place (what cgroup_members_path()
 * gives for the process); left as it is when it has no such line (cgroup v1 only). */
void cgroup_text_key(char *text);

/* The longest cgroup key kept (a path, or /proc/PID/cgroup's text). */
#define CGROUP_KEY_MAX 4096
/* pid's cgroup key into buf: the path of its "0::" line, or the text of /proc/PID/cgroup; -ESRCH
 * when gone, -E2BIG when longer than buf. */
int cgroup_key_read(pid_t pid, char *buf, size_t size);
/* A hash of a key for a Hashmap (never 0). */
uint64_t cgroup_key_hash(const char *key);
