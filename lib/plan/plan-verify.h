/* plan-verify.h: is a restored tree the snapshot it was made from? The comparison a restore's
 * verification makes (same sharing, bytes, flags, modes, thread and process shape, listener
 * holders), and the plan run on the kernel model instead of the kernel */
#pragma once

#include <stdbool.h>

#include "core/forest.h"

/* How the snapshot's processes and threads were restored. Pairs are (snapshot, restored). */
typedef struct PlanMapping {
        TaskPair *processes; /* a = snapshot pid, b = restored pid */
        size_t n_processes, n_processes_allocated;
        TaskPair *threads;   /* a = snapshot tid, b = restored tid */
        size_t n_threads, n_threads_allocated;
        pid_t root_pid;      /* the restore root: the parent of the top processes (0: not checked) */
} PlanMapping;

void plan_mapping_done(PlanMapping *m);
int plan_mapping_add_process(PlanMapping *m, pid_t snapshot_pid, pid_t pid);
int plan_mapping_add_thread(PlanMapping *m, pid_t snapshot_tid, pid_t tid);

typedef enum PlanVerifyIds {
        PLAN_VERIFY_IDS_ANY,
        PLAN_VERIFY_IDS_ORIGINAL,
        PLAN_VERIFY_IDS_GIVEN,
} PlanVerifyIds;

typedef struct PlanVerifyOptions {
        /* Snapshot tids (a process's pid: its leader, present or a helper) whose restored thread may
         * have no_new_privs without the snapshot saying so (the plan's nnp_added): announced, so not
         * a difference. */
        const pid_t *nnp_added;
        size_t n_nnp_added;
        /* What the restored processes' uid and gid must be: not checked, the snapshot's, or the
         * given ones (the caller's, whom the restored tasks run as). */
        PlanVerifyIds ids;
        uid_t uid;
        gid_t gid;
} PlanVerifyOptions;

/* Compare snapshot with restored (e.g. a scan of the restored tree; it may hold more processes
 * than the mapping names, such as the restore root or the caller holding listener copies: they
 * are left out). Differences are sentences, e.g. "process 412 -> 8812: ppid 8800, expected 8811
 * (restored 411)"; *ret_differences (NULL-terminated, malloc'ed, never NULL on success) is empty
 * when *ret_verified. Returns 0 or a negative errno. */
int plan_verify(const Forest *snapshot, const Forest *restored, const PlanMapping *map,
                const PlanVerifyOptions *options, bool *ret_verified, char ***ret_differences);
