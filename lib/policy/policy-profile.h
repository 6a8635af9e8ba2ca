/* policy-profile.h: seccomp profiles in the OCI runtime-spec format (linux.seccomp) and in
 * containers-common's seccomp.json (archMap, includes and excludes by architecture and
 * capability), built into a classic-BPF filter through libseccomp as runc builds them */
#pragma once

#include <jansson.h>
#include <linux/filter.h>
#include <stddef.h>

/* How a number above INT64_MAX is held in a json_t: the string U64_MARK followed by its decimal
 * digits (policy_profile_parse() makes them so, policy_oci_dumps() writes them back). */
#define POLICY_PROFILE_U64_MARK "\x01u64:"

/* JSON text whose numbers may exceed INT64_MAX, as OCI profiles' may (jansson's integers stop
 * there): those are read as unsigned 64-bit values. -EINVAL with *ret_error (malloc'ed) saying
 * where the text is not JSON. */
int policy_profile_parse(const char *text, json_t **ret, char **ret_error);

/* The filter of a profile: seccomp_init(defaultAction, with defaultErrnoRet), the architectures
 * ("architectures", or the subArchitectures of the native archMap entry), and each rule whose
 * includes and excludes match the native architecture and caps (capability names,
 * NULL-terminated; NULL: none), errnoRet defaulting to EPERM; names libseccomp does not know
 * are skipped. The program (malloc'ed) into *ret. -EINVAL with *ret_error naming the element
 * for a profile that is not one (or a rule libseccomp refuses), or whose rules that apply name
 * more than 2,048 system calls or compare more than 256 arguments in all (libseccomp's time grows
 * faster than they do, and cannot be stopped); -ENOMEM. */
int policy_profile_build(const json_t *profile, const char *const *caps, struct sock_filter **ret, size_t *ret_n,
                         char **ret_error);
