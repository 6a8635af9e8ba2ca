/* policy-baseline.h: audit's baseline: an OCI seccomp profile (JSON text, e.g. containers-common's)
 * built into the filter it stands for, with the capabilities a container runtime gives */
#pragma once

#include <linux/filter.h>
#include <stddef.h>

/* The most JSON text a baseline may be: containers-common's profile is some 16 KiB. */
#define POLICY_BASELINE_MAX_BYTES (1024u * 1024)

/* The capabilities a container runtime gives by default, NULL-terminated: the profile's rules
 * for them apply. */
extern const char *const policy_baseline_caps[];

/* The program of a profile given as text of size bytes (no NUL needed): -EINVAL with *ret_error
 * (malloc'ed) for text over POLICY_BASELINE_MAX_BYTES, with a NUL byte, not JSON, or not a
 * profile (naming the element); -ENOMEM. The same parser and builder as --baseline=FILE. */
int policy_baseline_build(const char *text, size_t size, struct sock_filter **ret, size_t *ret_n, char **ret_error);
