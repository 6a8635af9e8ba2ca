/* restore-verify.c: a restored tree scanned and compared with its snapshot through the mapping,
 * and nothing in it described that the caller may not see */
#include "service/restore-verify.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "service/restore-check.h"
#include "service/restore-proc-check.h"
#include "service/snapshots.h"

static bool mapped(const PlanMapping *map, pid_t pid) {
        if (pid == map->root_pid)
                return true;
        for (size_t i = 0; i < map->n_processes; i++)
                if (map->processes[i].b == pid)
                        return true;
        return false;
}

/* Nothing the caller may not see is described to it: the processes READY named (checked then) are
 * still entirely the caller's (none was made to exec a setuid program since), and any other
 * process of the scan is one the caller may see (caller_may_see()). The daemon itself, in the scan
 * as a holder of the listener fds it keeps for the reply, is left out. A process that fails ends
 * the restore, named by its pid only. */
static int check_visible(const RestoreVerifyInput *in, const Forest *restored, char **ret_message) {
        hashmap_clear(&in->caller->seen);
        for (size_t i = 0; i < restored->n_processes; i++) {
                const Process *p = restored->processes[i];
                bool ok;
                if (p->pid == getpid())
                        continue;
                if (mapped(in->map, p->pid))
                        ok = in->original_uids || restore_check_owner(p->pid, in->uid) > 0;
                else
                        ok = caller_may_see(in->caller, p);
                if (!ok) {
                        snapshot_set_message(ret_message, "verify: the restored tree holds process %d, which you may "
                                             "not see", (int) p->pid);
                        return -EPERM;
                }
        }
        return 0;
}

int restore_verify(const RestoreVerifyInput *in, bool *ret_verified, char ***differences, char **ret_message) {
        _cleanup_(forest_freep) Forest *restored = NULL;
        _cleanup_free_ pid_t *added = calloc(json_array_size(in->nnp_added) + 1, sizeof(pid_t));
        PlanVerifyOptions vo = {
                .nnp_added = added,
                .n_nnp_added = json_array_size(in->nnp_added),
                .ids = in->original_uids ? PLAN_VERIFY_IDS_ORIGINAL : PLAN_VERIFY_IDS_GIVEN,
                .uid = in->uid,
                .gid = in->gid,
        };
        ScanOptions opts = { .root = in->map->root_pid };
        int k;

        if (!added)
                return -ENOMEM;
        for (size_t i = 0; i < vo.n_nnp_added; i++)
                added[i] = (pid_t) json_integer_value(json_array_get(in->nnp_added, i));
        k = source_scan(in->source, &opts, &restored);
        if (k >= 0 && !restored->linked)
                k = forest_link(restored, NULL);
        if (k >= 0)
                k = check_visible(in, restored, ret_message);
        if (k >= 0)
                k = plan_verify(in->snapshot, restored, in->map, &vo, ret_verified, differences);
        if (k < 0)
                return k;
        /* and the kernel's own word: /proc/PID/task/TID/status of every restored thread */
        bool proc_verified = false;
        k = restore_proc_check(in->snapshot, in->map, &vo, &proc_verified, differences);
        *ret_verified = *ret_verified && proc_verified;
        return k;
}
