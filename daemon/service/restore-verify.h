/* restore-verify.h: a restored tree scanned and compared with its snapshot through the mapping,
 * and nothing in it described that the caller may not see */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "core/forest.h"
#include "observe/source.h"
#include "plan/plan-verify.h"
#include "service/access.h"

typedef struct RestoreVerifyInput {
        Source *source;           /* scans the restored tree */
        const Forest *snapshot;
        const PlanMapping *map;   /* the executor's READY */
        Caller *caller;           /* who asked (its memo is cleared first) */
        uid_t uid;                /* whom the restore runs as */
        gid_t gid;
        bool original_uids;       /* the snapshot's uids and gids instead */
        json_t *nnp_added;        /* READY's no_new_privs_added: the pids it set no_new_privs on */
} RestoreVerifyInput;

/* Scan the restored tree and compare it with the snapshot (plan_verify(), then what /proc says of
 * every restored thread): *ret_verified, and each difference appended to *differences. -EPERM
 * (with *ret_message) when the scan holds a process the caller may not see: a restored process
 * no longer the owner's, or another one the caller could not trace. */
int restore_verify(const RestoreVerifyInput *in, bool *ret_verified, char ***differences, char **ret_message);
