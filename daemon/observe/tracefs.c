/* tracefs.c: mounting tracefs at /sys/kernel/tracing when it is not mounted yet */
#include "observe/tracefs.h"

#include <errno.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#include "core/util.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

static int tracefs_is_mounted(void) {
        struct statfs sf;

        if (statfs(TRACEFS_PATH, &sf) < 0)
                return -errno;
        return sf.f_type == TRACEFS_MAGIC;
}

int tracefs_ensure_mounted(void) {
        int r;

        r = tracefs_is_mounted();
        if (r < 0)
                return log_error_errno(r, "Failed to stat " TRACEFS_PATH ": %m");
        if (r > 0)
                return 0;

        if (mount("tracefs", TRACEFS_PATH, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
                r = -errno;
                /* Somebody else may have mounted it in the meantime. */
                if (r == -EBUSY && tracefs_is_mounted() > 0)
                        return 0;
                return log_error_errno(r, "Failed to mount tracefs on " TRACEFS_PATH ": %m");
        }

        log_info("Mounted tracefs on " TRACEFS_PATH " (it was not mounted; the BPF tracepoints need it).");
        return 0;
}
