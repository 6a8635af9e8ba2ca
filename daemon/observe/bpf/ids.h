/* ids.h: what the scan and watch BPF units share about filter ids, as user space reads it */
#pragma once

#include <linux/types.h>

/* Counters of the id map, kept by both units in their shared .data.ids section (never addresses). */
struct ids_stats {
        __u64 ids_assigned;     /* ids handed out */
        __u64 ids_stored;       /* entries added to the id map (ids_stored - ids_swept are in it) */
        __u64 addresses_reused; /* an entry was given a new id: another object now lives at its address */
        __u64 map_full;         /* an id could not be stored: the pass (or event) is incomplete */
        __u64 marks_lost;       /* a process could not be marked in seccomp_procs: its events may be missed */
};

/* The daemon's pid namespace (bpf/pidns.bpf.h), in .data.ids: set by user space in the initial
 * namespace, else learnt by the scan's iterators from the task that reads them (the daemon: its
 * level; the inode number is own_inum). inum 0: not known yet. */
#define PIDNS_INIT_INUM 0xEFFFFFFCU /* the kernel's PROC_PID_INIT_INO */
struct pidns_self {
        __u32 level;    /* 0: the initial namespace */
        __u32 inum;     /* its inode number (/proc/self/ns/pid) */
        __u32 own_inum; /* that number as user space read it, in any namespace (0: unknown) */
        __u32 _pad;
};
