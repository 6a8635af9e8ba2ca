/* bpf-util.h: what the bpf backend's two units (scan-bpf*.c, watch-bpf.c) both need from user
 * space, so that neither reaches into the other: ring buffer sizing, the kernel's seccomp mode
 * and start times as /proc spells them */
#pragma once

#include <linux/seccomp.h>
#include <stdint.h>

#include "core/forest.h"
#include "observe/bpf/ids.h"

struct bpf_map;

/* $name (bytes, a power of two, at least min_size), when set, replaces the size of ring before
 * load. */
int bpf_ring_size_from_env(struct bpf_map *ring, const char *name, uint64_t min_size);
/* The same size read into *ret (0: $name is not set), for a ring a light skeleton creates. */
int bpf_ring_size_env(const char *name, uint64_t min_size, uint32_t *ret);

/* The daemon's pid namespace as far as user space can tell it (struct pidns_self of bpf/ids.h):
 * the initial one, or not known (inum 0: the iterators learn its level, bpf/pidns.bpf.h), with the
 * inode number of /proc/self/ns/pid in own_inum. */
void bpf_pidns_self(struct pidns_self *ret);

/* Clock ticks per second (sysconf(_SC_CLK_TCK), 100 when it fails). */
long bpf_clock_ticks_per_sec(void);

/* start_boottime (ns) -> clock ticks, as /proc/TID/stat field 22 */
static inline uint64_t bpf_boottime_to_ticks(uint64_t ns, long ticks_per_sec) {
        return ns / (UINT64_C(1000000000) / (uint64_t) ticks_per_sec);
}

static inline TaskMode task_mode_from_kernel(uint32_t mode) {
        switch (mode) {
        case SECCOMP_MODE_STRICT:
                return TASK_MODE_STRICT;
        case SECCOMP_MODE_FILTER:
                return TASK_MODE_FILTER;
        default:
                return TASK_MODE_DISABLED;
        }
}
