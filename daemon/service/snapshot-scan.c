/* snapshot-scan.c: a CreateSnapshot's scan: the subtree checked on the loop, scanned in a worker,
 * made a snapshot the caller may see all of */
#include "service/snapshot-scan.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "observe/procinfo.h"
#include "service/cgroup-members.h"
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

/* Units, read as ListProcessUnits reads them (libsystemd, some 100 us a process: four reads of
 * its cgroup file and machined's records), made names a snapshot takes. Processes in one cgroup
 * are in the same units, and a machine's processes share a few cgroups: the answer is kept by
 * cgroup (its path on the cgroup2 hierarchy, the "0::" line of /proc/PID/cgroup, which is what
 * libsystemd reads the units from; the whole text where there is no such line), so that a
 * 10,000-process snapshot asks libsystemd once per cgroup. Where it has that many processes, the
 * cgroup of each comes from one walk of the hierarchy's cgroup.procs files, not from a read of
 * /proc/PID/cgroup each (half of such a snapshot's time). */

#define CGROUP_WALK_MIN 256 /* processes from which one walk costs less than a read each */

typedef struct UnitsOfCgroup {
        char *cgroup; /* the key: the cgroup's path, or /proc/PID/cgroup's text */
        char *unit, *user_unit, *machine;
} UnitsOfCgroup;

typedef struct UnitCache {
        Hashmap by_hash; /* hash of cgroup -> index + 1 */
        UnitsOfCgroup *items;
        size_t n, allocated;
        CgroupMembers members; /* every pid's cgroup, when walk */
        bool walked;
} UnitCache;

static void units_of_cgroup_done(UnitsOfCgroup *u) {
        free(u->cgroup);
        free(u->unit);
        free(u->user_unit);
        free(u->machine);
        *u = (UnitsOfCgroup) {};
}

static void unit_cache_done(UnitCache *c) {
        for (size_t i = 0; i < c->n; i++)
                units_of_cgroup_done(&c->items[i]);
        free(c->items);
        hashmap_deinit(&c->by_hash);
        cgroup_members_done(&c->members);
}

/* pid's cgroup key: from the walk, or read. */
static int cgroup_key(const UnitCache *c, pid_t pid, char *buf, size_t size) {
        const char *path = c->walked ? cgroup_members_path(&c->members, pid) : NULL;
        if (!path || strlen(path) >= size)
                return cgroup_key_read(pid, buf, size);
        strcpy(buf, path);
        return 0;
}

/* libsystemd's answer for pid, its names made acceptable (snapshot_unit_name_clean()). */
static int units_read(pid_t pid, UnitsOfCgroup *ret) {
        _cleanup_(process_unit_done) ProcessUnit u = { .owner = UNIT_OWNER_NONE };
        int r = process_unit_read(pid, &u);
        if (r < 0 || (r = snapshot_unit_name_clean(u.unit, &ret->unit)) < 0 ||
            (r = snapshot_unit_name_clean(u.user_unit, &ret->user_unit)) < 0 ||
            (r = snapshot_unit_name_clean(u.machine, &ret->machine)) < 0)
                return r;
        return 0;
}

/* Keep u (taken) for cgroup, unless the process moved while libsystemd read it. */
static int unit_cache_add(UnitCache *c, pid_t pid, const char *cgroup, UnitsOfCgroup *u) {
        char again[CGROUP_KEY_MAX];
        if (cgroup_key_read(pid, again, sizeof(again)) < 0 || !streq(again, cgroup) ||
            GROW(c->items, c->allocated, c->n + 1) < 0 || !(u->cgroup = strdup(cgroup)))
                return 0; /* not kept: asked again next time */
        c->items[c->n] = *u;
        *u = (UnitsOfCgroup) {};
        int r = hashmap_put(&c->by_hash, cgroup_key_hash(cgroup), (void *) (uintptr_t) (c->n + 1));
        c->n++;
        return r == -EEXIST ? 0 : r; /* a hash shared by two texts: the first keeps it */
}

static const UnitsOfCgroup *unit_cache_find(const UnitCache *c, const char *cgroup) {
        uintptr_t i = (uintptr_t) hashmap_get(&c->by_hash, cgroup_key_hash(cgroup));
        return i > 0 && streq(c->items[i - 1].cgroup, cgroup) ? &c->items[i - 1] : NULL;
}

/* The units of p as its cgroup says now (ListProcessUnits' answer). A process gone since the scan
 * keeps none. */
static int record_units(UnitCache *c, Process *p) {
        _cleanup_(units_of_cgroup_done) UnitsOfCgroup u = {};
        char cgroup[CGROUP_KEY_MAX];
        int r = cgroup_key(c, p->pid, cgroup, sizeof(cgroup));
        if (r == -ESRCH)
                return 0;
        bool cacheable = r >= 0; /* else (too long to keep) asked every time */
        const UnitsOfCgroup *known = cacheable ? unit_cache_find(c, cgroup) : NULL;
        if (known)
                return process_set_units(p, known->unit, known->user_unit, known->machine);
        r = units_read(p->pid, &u);
        if (r == -ESRCH)
                return 0;
        if (r >= 0)
                r = process_set_units(p, u.unit, u.user_unit, u.machine);
        if (r >= 0 && cacheable)
                r = unit_cache_add(c, p->pid, cgroup, &u);
        return r;
}

static int record_all_units(Forest *f) {
        _cleanup_(unit_cache_done) UnitCache units = {};
        /* without a cgroup2 hierarchy (or if the walk fails) each process's is read */
        units.walked = f->n_processes >= CGROUP_WALK_MIN && cgroup_members_read(&units.members) >= 0;
        for (size_t i = 0; i < f->n_processes; i++) {
                int r = record_units(&units, f->processes[i]);
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
