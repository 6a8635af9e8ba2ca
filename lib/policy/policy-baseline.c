/* policy-baseline.c: audit's baseline: an OCI seccomp profile (JSON text, e.g. containers-common's)
 * built into the filter it stands for, with the capabilities a container runtime gives */
#include "policy/policy-baseline.h"

#include <errno.h>
#include <string.h>

#include "core/util.h"
#include "policy/policy-profile.h"

const char *const policy_baseline_caps[] = {
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
        "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT", NULL,
};

int policy_baseline_build(const char *text, size_t size, struct sock_filter **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        json_t *profile = NULL;
        *ret_error = NULL;
        const char *nul = memchr(text, 0, size);
        if (size > POLICY_BASELINE_MAX_BYTES)
                return error_message(ret_error, "%zu bytes, more than the limit of %u", size, POLICY_BASELINE_MAX_BYTES);
        if (nul)
                return error_message(ret_error, "a NUL byte at offset %zu", (size_t) (nul - text));
        copy = strndup(text, size);
        if (!copy)
                return -ENOMEM;
        int r = policy_profile_parse(copy, &profile, ret_error);
        if (r >= 0)
                r = policy_profile_build(profile, policy_baseline_caps, ret, ret_n, ret_error);
        json_decref(profile);
        return r;
}
