/* privileges.c: what sectreed needs of its credentials, said in one line when it lacks it, and one
 * summary of the threads a ptrace scan could not read */
#include "observe/privileges.h"

#include <linux/capability.h>

#include "core/util.h"

/* The capabilities a backend names, in the order messages name them. */
static const struct {
        int cap;
        const char *name;
} capability_names[] = {
        { CAP_BPF, "CAP_BPF" },
        { CAP_PERFMON, "CAP_PERFMON" },
        { CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
        { CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
};

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

/* The names of a set of capabilities into buf: "A, B and C" (last: " and "), or "A, B, C"
 * (last: ", "). */
static const char *capability_list(uint64_t caps, const char *last, char *buf, size_t size) {
        size_t len = 0, left = (size_t) __builtin_popcountll(caps);
        buf[0] = 0;
        for (size_t i = 0; i < ELEMENTSOF(capability_names); i++) {
                if (!(caps & (UINT64_C(1) << capability_names[i].cap)))
                        continue;
                const char *sep = len == 0 ? "" : left == 1 ? last : ", ";
                len += snprintf(buf + len, len < size ? size - len : 0, "%s%s", sep, capability_names[i].name);
                left--;
        }
        return buf;
}

/* One line: what the backend needs, what this process lacks of it, and what to do. */
static int refuse(Backend backend, const SourceCapabilities *c, uint64_t have) {
        uint64_t missing = c->needed & ~have;
        char needed[128], lacks[128];
        capability_list(c->needed, " and ", needed, sizeof(needed));
        if (__builtin_popcountll(c->needed) == 1)
                snprintf(lacks, sizeof(lacks), "it");
        else
                capability_list(missing, ", ", lacks, sizeof(lacks));
        return log_error_errno(-EPERM, "The %s backend needs %s %s, and this process lacks %s: %s.",
                               backend_to_string(backend), needed, c->needed_for, lacks, c->remedy);
}

int privileges_check(Backend backend, const SourceCapabilities *c) {
        uint64_t have;
        char missing[128];
        if (!c || effective_capabilities(&have) < 0) /* cannot tell: let the kernel say */
                return 0;
        if (!(have & c->enough) && (have & c->needed) != c->needed)
                return refuse(backend, c, have);
        if ((have & c->wanted) != c->wanted)
                log_warning("Without %s %s.", capability_list(c->wanted & ~have, " and ", missing, sizeof(missing)),
                            c->without);
        return 0;
}

int ptrace_scan_reported(const ScanOptions *opts, Forest **ret) {
        _cleanup_free_ UnreadableTask *bad = NULL;
        size_t n_bad = 0;
        int r = ptrace_scan(opts, ret, &bad, &n_bad);
        if (r < 0)
                return r; /* logged by the scan, once its tasks run again */
        unreadable_report(bad, n_bad);
        if (n_bad > 0 && (*ret)->n_filters == 0)
                return -EPERM; /* it read nothing it was asked to */
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
