/* bpf-util.c: see bpf-util.h */
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "observe/bpf-util.h"
#include "observe/bpf/ids.h"

int bpf_ring_size_env(const char *name, uint64_t min_size, uint32_t *ret) {
        const char *e = secure_getenv(name);
        uint64_t size;
        int r;

        *ret = 0;
        if (!e)
                return 0;
        r = safe_atou64(e, &size);
        if (r < 0 || size < min_size || size > UINT32_MAX || (size & (size - 1)) != 0)
                return log_error_errno(r < 0 ? r : -EINVAL, "Invalid $%s: %s (a power of two, at least %" PRIu64 ")",
                                       name, e, min_size);
        *ret = (uint32_t) size;
        return 0;
}

int bpf_ring_size_from_env(struct bpf_map *ring, const char *name, uint64_t min_size) {
        uint32_t size;
        int r = bpf_ring_size_env(name, min_size, &size);

        if (r < 0 || size == 0)
                return r;
        r = bpf_map__set_max_entries(ring, size);
        if (r < 0)
                return log_error_errno(r, "Failed to size the ring buffer %s: %m", bpf_map__name(ring));
        return 0;
}

long bpf_clock_ticks_per_sec(void) {
        long t = sysconf(_SC_CLK_TCK);
        return t > 0 ? t : 100;
}

void bpf_pidns_self(struct pidns_self *ret) {
        struct stat st;
        uint32_t own = stat("/proc/self/ns/pid", &st) == 0 && st.st_ino <= UINT32_MAX ? (uint32_t) st.st_ino : 0;

        *ret = (struct pidns_self) { .inum = own == PIDNS_INIT_INUM ? own : 0, .own_inum = own };
}
