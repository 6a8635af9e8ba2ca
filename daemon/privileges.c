/* privileges.c: what sectreed needs of its credentials, said in one line when it lacks it, and one
 * summary of the threads a ptrace scan could not read */
#include "privileges.h"

#include <linux/capability.h>

#include "util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

typedef struct CapabilityName {
        int cap;
        const char *name;
} CapabilityName;

/* The effective set, from /proc/self/status (CapEff:). -errno. */
static int effective_capabilities(uint64_t *ret) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "CapEff: %" SCNx64, ret) == 1)
                        return 0;
        return -ENODATA;
}

/* The names of the capabilities of need missing from have, ", "-separated, into buf. */
static size_t missing_names(uint64_t have, const CapabilityName *need, size_t n, char *buf, size_t size) {
        size_t missing = 0, len = 0;
        buf[0] = 0;
        for (size_t i = 0; i < n; i++)
                if (!(have & (UINT64_C(1) << need[i].cap))) {
                        len += snprintf(buf + len, len < size ? size - len : 0, "%s%s", missing ? ", " : "",
                                        need[i].name);
                        missing++;
                }
        return missing;
}

int privileges_check(Backend backend) {
        static const CapabilityName bpf[] = { { CAP_BPF, "CAP_BPF" }, { CAP_PERFMON, "CAP_PERFMON" },
                                             { CAP_SYS_ADMIN, "CAP_SYS_ADMIN" } };
        static const CapabilityName ptrace_admin[] = { { CAP_SYS_ADMIN, "CAP_SYS_ADMIN" } };
        static const CapabilityName ptrace_others[] = { { CAP_SYS_PTRACE, "CAP_SYS_PTRACE" } };
        uint64_t have;
        char missing[128];
        int r = effective_capabilities(&have);
        if (r < 0) /* cannot tell: let the kernel say */
                return 0;
        /* CAP_SYS_ADMIN alone still covers what CAP_BPF and CAP_PERFMON split off from it */
        if (backend == BACKEND_BPF && !(have & (UINT64_C(1) << CAP_SYS_ADMIN)) &&
            missing_names(have, bpf, ELEMENTSOF(bpf), missing, sizeof(missing)) > 0)
                return log_error_errno(-EPERM,
                                       "The bpf backend needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN to load its BPF "
                                       "programs, and this process lacks %s: run sectreed as root (its unit does).",
                                       missing);
        if (backend == BACKEND_PTRACE &&
            missing_names(have, ptrace_admin, ELEMENTSOF(ptrace_admin), missing, sizeof(missing)) > 0)
                return log_error_errno(-EPERM,
                                       "The ptrace backend needs CAP_SYS_ADMIN to read filters "
                                       "(PTRACE_SECCOMP_GET_FILTER), and this process lacks it: run sectreed as root.");
        if (backend == BACKEND_PTRACE &&
            missing_names(have, ptrace_others, ELEMENTSOF(ptrace_others), missing, sizeof(missing)) > 0)
                log_warning("Without CAP_SYS_PTRACE only this user's own processes can be read.");
        return 0;
}

void unreadable_report(const UnreadableTask *bad, size_t n_bad) {
        /* the reasons, counted in order of first appearance */
        int reasons[8];
        size_t counts[8], n_reasons = 0, other = 0;
        for (size_t i = 0; i < n_bad; i++) {
                log_debug_errno(bad[i].error, "Could not read the filters of thread %d: %m", bad[i].tid);
                size_t k = 0;
                while (k < n_reasons && reasons[k] != bad[i].error)
                        k++;
                if (k == n_reasons && n_reasons == ELEMENTSOF(reasons)) {
                        other++;
                        continue;
                }
                if (k == n_reasons) {
                        reasons[n_reasons] = bad[i].error;
                        counts[n_reasons++] = 0;
                }
                counts[k]++;
        }
        if (n_bad == 0)
                return;
        char why[512];
        size_t len = 0;
        for (size_t k = 0; k < n_reasons; k++)
                len += snprintf(why + len, len < sizeof(why) ? sizeof(why) - len : 0, "%s%s: %zu", k ? ", " : "",
                                strerror(-reasons[k]), counts[k]);
        if (other)
                snprintf(why + len, len < sizeof(why) ? sizeof(why) - len : 0, ", other reasons: %zu", other);
        log_warning("Could not read the filters of %zu thread%s (%s); the log at debug level names them.", n_bad,
                    n_bad == 1 ? "" : "s", why);
}
