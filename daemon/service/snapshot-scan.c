/* snapshot-scan.c: a CreateSnapshot's scan: the subtree checked on the loop, scanned in a worker,
 * made a snapshot the caller may see all of */
#include "service/snapshot-scan.h"

#include <stdio.h>

#include "observe/procinfo.h"
#include "service/snapshots.h"
#include "service/units.h"
#include "snapshot/snapshot-units.h"
#include "snapshot/snapshot-validate.h"

#define SNAPSHOT_SCAN_ATTEMPTS 3

/* Creating: checked on the loop, scanned in a transfer's worker (snapshot-transfers.c), stored in
 * steps on the loop */

/* What the worker needs, owned by it: nothing of the bus message or the loop's state but the
 * source, which outlives every transfer (they end when the loop exits). */
struct SnapshotScanJob {
        Source *source;
        Caller caller;
        pid_t root;
        char *name;
        bool include_argv;
        bool alone; /* the root's process without its descendants */
};

SnapshotScanJob *snapshot_scan_job_free(SnapshotScanJob *j) {
        if (!j)
                return NULL;
        caller_deinit(&j->caller);
        free(j->name);
        free(j);
        return NULL;
}

static int scan_subtree(Source *s, const ScanOptions *opts, Forest **ret) {
        return source_scan_detached(s, opts, ret); /* says how consistent: an iterator pass, or frozen */
}

/* The first process of the snapshot the caller could not trace, or 0. */
static pid_t first_hidden_process(Caller *c, const Forest *f) {
        for (size_t i = 0; i < f->n_processes; i++)
                if (!caller_may_see(c, f->processes[i]))
                        return f->processes[i]->pid;
        return 0;
}

/* Whether pid is root or below it, by the parents the forest knows (a process the snapshot holds
 * outside the subtree holds one of its listeners). */
static bool in_subtree(const Forest *f, pid_t pid, pid_t root) {
        for (size_t depth = 0; pid > 0 && depth <= f->n_processes; depth++) {
                if (pid == root)
                        return true;
                const Process *p = forest_find_process(f, pid);
                if (!p)
                        return false;
                pid = p->ppid;
        }
        return false;
}

int snapshot_check_root(Caller *c, pid_t root, char **ret_message) {
        ProcStatus st;
        if (root == 0) {
                if (c->privileged)
                        return 0;
                snapshot_set_message(ret_message, "Only root may snapshot the whole machine.");
                return -EACCES;
        }
        if (root < 0 || root > SNAPSHOT_MAX_PID || proc_read_status(root, &st) < 0 || st.tgid != root) {
                snapshot_set_message(ret_message, "No process with pid %d.", root);
                return -ESRCH;
        }
        if (!caller_may_see_process(c, root)) {
                snapshot_set_message(ret_message, "Process %d is not one you could trace.", root);
                return -EACCES;
        }
        return 0;
}

/* The root's process alone (forest_restrict_to_members() adds its listeners' holders). */
static bool is_root(const Process *p, void *userdata) {
        return p->pid == ((const ScanOptions *) userdata)->root;
}

/* One scan, linked and cut to the subtree (a process whose parent exited during the pass cannot be
 * placed in it), then made snapshot-local and checked with the validator every import goes through.
 * -EAGAIN (with *ret_error) when the result is not consistent: the caller scans again. */
static int scan_once(Source *s, const ScanOptions *opts, Forest **ret, char **ret_error) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = scan_subtree(s, opts, &f);
        if (r < 0)
                return r;
        r = forest_link(f, ret_error);
        if (r == -EINVAL)
                return -EAGAIN;
        if (r >= 0 && opts->root > 0)
                r = opts->root_alone ? forest_restrict_to_members(f, opts->root, is_root, (void *) opts)
                                     : forest_restrict_to_subtree(f, opts->root);
        if (r >= 0)
                r = forest_renumber(f);
        if (r >= 0 && !f->host.kernel)
                r = host_info_fill_local(&f->host);
        for (size_t i = 0; r >= 0 && i < f->n_processes; i++)
                r = snapshot_process_make_utf8(f->processes[i]);
        if (r < 0)
                return r;
        f->root = opts->root;
        r = snapshot_validate(f, ret_error);
        if (r == -EINVAL)
                return -EAGAIN;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

static int scan_consistent(Source *s, const ScanOptions *opts, Forest **ret, char **ret_message) {
        for (unsigned attempt = 1;; attempt++) {
                _cleanup_free_ char *error = NULL;
                int r = scan_once(s, opts, ret, &error);
                if (r == -EACCES)
                        return r; /* a process the caller may not see: take_snapshot() says which */
                if (r != -EAGAIN || attempt == SNAPSHOT_SCAN_ATTEMPTS) {
                        if (r == -EAGAIN)
                                snapshot_set_message(ret_message, "The subtree changed too fast for a consistent snapshot "
                                            "(%u scans): %s", attempt,
                                            error ? error : "the tasks and filters changed under each pass");
                        else if (r < 0)
                                snapshot_set_message(ret_message, "The scan failed: %s", strerror(-r));
                        return r < 0 ? -EIO : 0;
                }
                log_debug("Snapshot scan %u of %d was not consistent (%s), scanning again.", attempt, opts->root,
                          error ? error : "the scanner's passes were not");
        }
}

/* The ptrace backend stops every task of a snapshot: only those of processes the caller may see. */
typedef struct StopCheck {
        Caller *caller;
        pid_t refused; /* the last process it may not see */
} StopCheck;

/* The scan asks first about every process holding some listener fd, and leaves those it may not
 * stop running (most hold listeners of other filters, and drop out of the report); a refusal of a
 * process it must stop ends the pass at once. So the last refusal is the one the caller is told
 * about, not the first: that could name a process that has nothing to do with the subtree. */
static int may_stop(int proc_fd, pid_t pid, uint64_t start_time, void *userdata) {
        StopCheck *k = userdata;
        int r = caller_check_proc(k->caller, proc_fd, start_time);
        if (r == 0)
                k->refused = pid;
        return r;
}

/* A snapshot's unit names (snapshot_unit_name_clean()), as ProcessUnitCache's clean(). */
static int clean_units(ProcessUnit *u) {
        char **names[] = { &u->unit, &u->user_unit, &u->machine };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char *clean = NULL;
                int r = snapshot_unit_name_clean(*names[i], &clean);
                if (r < 0)
                        return r;
                free(*names[i]);
                *names[i] = clean;
        }
        return 0;
}

/* Each process's units, read as ListProcessUnits reads them, made names a snapshot takes: once per
 * cgroup (ProcessUnitCache), the cgroups of a large snapshot from one walk of the hierarchy (half
 * of such a snapshot's time was reading /proc/PID/cgroup). A process gone since the scan keeps
 * none. */
static int record_all_units(Forest *f) {
        _cleanup_(process_unit_cache_done) ProcessUnitCache units = { .clean = clean_units };
        process_unit_cache_walk(&units, f->n_processes);
        for (size_t i = 0; i < f->n_processes; i++) {
                _cleanup_(process_unit_done) ProcessUnit scratch = { .owner = UNIT_OWNER_NONE };
                const ProcessUnit *u;
                Process *p = f->processes[i];
                int r = process_unit_cache_get(&units, p->pid, &scratch, &u);
                if (r == -ESRCH)
                        continue;
                if (r >= 0)
                        r = process_set_units(p, u->unit, u->user_unit, u->machine);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* In the worker: scan, check that the caller may see all of it, and make it a snapshot. */
int snapshot_scan_job_run(SnapshotScanJob *j, Forest **ret, char **ret_message) {
        _cleanup_(forest_freep) Forest *f = NULL;
        Caller *c = &j->caller;
        pid_t root = j->root;
        StopCheck check = { .caller = c };
        ScanOptions opts = {
                .root = root, .root_alone = j->alone, .include_argv = j->include_argv, .include_exe = true,
                .freeze = true,
                .may_stop = c->privileged ? NULL : may_stop, .userdata = &check,
        };
        int r = scan_consistent(j->source, &opts, &f, ret_message);
        if (r == -EACCES) {
                snapshot_set_message(ret_message, "Process %d of the subtree of %d is not one you could trace.", check.refused,
                            root);
                return r;
        }
        if (r < 0)
                return r;
        if (root > 0 && !forest_find_process(f, root)) {
                snapshot_set_message(ret_message, "Process %d exited before it could be scanned.", root);
                return -ESRCH;
        }
        pid_t hidden = first_hidden_process(c, f);
        if (hidden > 0) {
                if (in_subtree(f, hidden, root))
                        snapshot_set_message(ret_message, "Process %d of the subtree of %d is not one you could trace.",
                                             hidden, root);
                else /* a member for the listener it holds */
                        snapshot_set_message(ret_message, "Process %d holds a listener of the subtree of %d and is not "
                                                          "one you could trace.", hidden, root);
                return -EACCES;
        }
        r = record_all_units(f);
        if (r < 0)
                return r;
        r = snapshot_info_set_name(&f->snapshot, j->name);
        if (r < 0)
                return r;
        f->snapshot.taken_by_uid = c->uid;
        if (f->created_at_usec == 0)
                f->created_at_usec = now_usec(CLOCK_REALTIME);
        *ret = TAKE_PTR(f);
        return 0;
}

int snapshot_scan_job_new(Source *source, Caller *c, pid_t root, const SnapshotCreateOptions *o, SnapshotScanJob **ret) {
        SnapshotScanJob *j = calloc(1, sizeof(SnapshotScanJob));
        if (!j)
                return -ENOMEM;
        *j = (SnapshotScanJob) { .source = source, .root = root, .include_argv = o->include_argv,
                                 .alone = root > 0 && !o->descendants };
        if (o->name && !(j->name = strdup(o->name))) {
                free(j);
                return -ENOMEM;
        }
        j->caller = *c;
        *c = (Caller) { .uid = j->caller.uid, .privileged = j->caller.privileged };
        *ret = j;
        return 0;
}
