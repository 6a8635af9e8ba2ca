/* verbs-audit.h: `audit [TID]`: what on this machine (or in a snapshot) is weakly confined, and
 * why, for every distinct chain */
#pragma once

#include "context.h"

/* Exit status when something at or above --severity is found. */
#define AUDIT_FOUND 1

/* The baseline when --baseline is not given: containers-common's default profile. */
#define AUDIT_DEFAULT_BASELINE "/usr/share/containers/seccomp.json"

int verb_audit(Context *c, char **args, size_t n_args);
