/* snapshot-samples.c: small valid snapshots built through the forest API */
#include "snapshot-samples.h"

#include <linux/seccomp.h>
#include <stddef.h>

#include "snapshot/snapshot-diff.h"
#include "snapshot/snapshot-units.h"

static const struct sock_filter prog_allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
static const struct sock_filter prog_deny_getpid[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};
static const struct sock_filter prog_notify_openat[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 257, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};
static const struct sock_filter prog_log[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_LOG),
};
static const struct sock_filter prog_trap[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 400, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

#define ADD_FILTER(f, id, parent, prog, ret) forest_add_filter((f), (id), (parent), (prog), ELEMENTSOF(prog), (ret))

static const char *const sample_kind_table[_SAMPLE_MAX] = {
        [SAMPLE_BASIC] = "basic",
        [SAMPLE_SUBTREE] = "subtree",
        [SAMPLE_EMPTY] = "empty",
        [SAMPLE_INFERRED] = "inferred",
};

const char *sample_kind_to_string(SampleKind k) {
        return k < _SAMPLE_MAX ? sample_kind_table[k] : NULL;
}

static int add_thread(Process *p, pid_t tid, TaskMode mode, uint64_t filter) {
        Task *t;
        int r = process_add_thread(p, tid, &t);
        if (r < 0)
                return r;
        t->mode = mode;
        t->filter_id = filter;
        return 0;
}

static int add_process(Forest *f, pid_t pid, pid_t ppid, uint64_t start_time, const char *comm, Process **ret) {
        int r = forest_add_process(f, pid, ret);
        if (r < 0)
                return r;
        (*ret)->ppid = ppid;
        (*ret)->start_time = start_time;
        snprintf((*ret)->comm, sizeof((*ret)->comm), "%s", comm);
        return 0;
}

static int set_meta(Forest *f, const char *backend, IdentityKind identity) {
        f->backend = strdup(backend);
        f->identity = identity;
        f->created_at_usec = 1764745249123456ULL; /* 2025-12-03T07:00:49.123456Z */
        if (!f->backend)
                return -ENOMEM;
        return host_info_set(&f->host, "6.18.0-test", "x86_64", "sample-host");
}

static int set_snapshot(Forest *f, const char *name, uint32_t uid, SnapshotConsistency consistency) {
        f->snapshot.taken_by_uid = uid;
        f->snapshot.consistency = consistency;
        return snapshot_info_set_name(&f->snapshot, name);
}

/* Filters 1 (allow) <- 3 (notify openat, listener) <- 4 (log), and 2 (deny getpid, LOG,
 * WAIT_KILLABLE_RECV whose listener is closed) alone.
 * Processes 100 (threads 100 on 3, 101 on 4), 200 child of 100 (200 on 2, 201 strict), 300 child
 * of 100 (300 disabled); listener 1 on filter 3 held by 100 (fd 3) and 200 (fd 4). */
static int build_basic(Forest *f, unsigned v) {
        Filter *flt;
        Process *p;
        Listener *l;
        int r;

        if ((r = set_meta(f, "bpf", IDENTITY_EXACT)) < 0 ||
            (r = set_snapshot(f, "nightly", 0, SNAPSHOT_CONSISTENCY_ITERATOR)) < 0 ||
            (r = ADD_FILTER(f, 1, 0, prog_allow, &flt)) < 0)
                return r;
        flt->log = v & VARIANT_LOG;
        if ((r = ADD_FILTER(f, 2, 0, prog_deny_getpid, &flt)) < 0)
                return r;
        flt->log = true;
        /* the flag needs a listener at the install; one below filter 3, whose listener is open,
         * the kernel refuses (EBUSY): so it is on this root filter, its listener closed since */
        flt->wait_killable_recv = true;
        if ((r = ADD_FILTER(f, 3, 1, prog_notify_openat, &flt)) < 0)
                return r;
        flt->has_listener = true;
        r = v & VARIANT_PROGRAM ? ADD_FILTER(f, 4, 3, prog_trap, &flt) : ADD_FILTER(f, 4, 3, prog_log, &flt);
        if (r < 0)
                return r;

        if ((r = add_process(f, 100, 1, 4242, "parent", &p)) < 0 || (r = add_thread(p, 100, TASK_MODE_FILTER, 3)) < 0 ||
            (r = (v & VARIANT_STRICT_101) ? add_thread(p, 101, TASK_MODE_STRICT, 0) : add_thread(p, 101, TASK_MODE_FILTER, 4)) < 0)
                return r;
        if ((r = add_process(f, 200, 100, v & VARIANT_RESTART_200 ? 6000 : 5000, "child", &p)) < 0 ||
            (r = add_thread(p, 200, TASK_MODE_FILTER, 2)) < 0 || (r = add_thread(p, 201, TASK_MODE_STRICT, 0)) < 0)
                return r;
        if (!(v & VARIANT_NO_300) && ((r = add_process(f, 300, 100, 5100, "idle", &p)) < 0 ||
                                      (r = add_thread(p, 300, TASK_MODE_DISABLED, 0)) < 0))
                return r;
        if (v & VARIANT_NEW_PROCESS) {
                if ((r = ADD_FILTER(f, 5, 3, prog_allow, NULL)) < 0 || (r = add_process(f, 400, 100, 7000, "new", &p)) < 0 ||
                    (r = add_thread(p, 400, TASK_MODE_FILTER, 5)) < 0)
                        return r;
        }
        if ((r = forest_add_listener(f, 1, 3, &l)) < 0 || (r = listener_add_holder(l, 100, 3)) < 0)
                return r;
        return listener_add_holder(l, 200, 4);
}

/* Root 100 (on filter 1), its child 101 (threads on 2, 1 and 3) and grandchild 103 (on 1: forked
 * by thread 102; a grandchild without filter 1 could not exist, since 101 inherited it).
 * Filter 3 (notify openat, on 1) has a listener held by 101 (fd 5) and by the supervisor 50
 * outside the subtree (fd 9), which runs under no filter: a holder is part of the snapshot. */
static int build_subtree(Forest *f) {
        char *argv[] = { (char *) "/usr/sbin/sandboxed", (char *) "--config=/etc/x.conf", (char *) "", NULL };
        Filter *flt;
        Listener *l;
        Process *p;
        int r;

        if ((r = set_meta(f, "bpf", IDENTITY_EXACT)) < 0 ||
            (r = set_snapshot(f, "sandbox \"x\" \u2713", 1000, SNAPSHOT_CONSISTENCY_ITERATOR)) < 0 ||
            (r = ADD_FILTER(f, 1, 0, prog_deny_getpid, NULL)) < 0 || (r = ADD_FILTER(f, 2, 1, prog_allow, NULL)) < 0 ||
            (r = ADD_FILTER(f, 3, 1, prog_notify_openat, &flt)) < 0)
                return r;
        flt->has_listener = true;
        f->root = 100;
        if ((r = add_process(f, 100, 1, 10, "sandboxed", &p)) < 0 || (r = add_thread(p, 100, TASK_MODE_FILTER, 1)) < 0 ||
            (r = process_set_exe(p, "/usr/sbin/sandboxed")) < 0 || (r = process_set_argv(p, argv)) < 0)
                return r;
        p->uid = 1000, p->gid = 1000, p->no_new_privs = true;
        if ((r = add_process(f, 101, 100, 11, "worker \"1\"", &p)) < 0 || (r = add_thread(p, 101, TASK_MODE_FILTER, 2)) < 0 ||
            (r = add_thread(p, 102, TASK_MODE_FILTER, 1)) < 0)
                return r;
        p->uid = 4294967294u;
        if ((r = add_thread(p, 104, TASK_MODE_FILTER, 3)) < 0)
                return r;
        if ((r = add_process(f, 103, 101, 12, "grandchild", &p)) < 0 || (r = add_thread(p, 103, TASK_MODE_FILTER, 1)) < 0)
                return r;
        /* A holder outside the subtree, without filters: part of the snapshot all the same. */
        if ((r = add_process(f, 50, 1, 5, "supervisor", &p)) < 0 || (r = add_thread(p, 50, TASK_MODE_DISABLED, 0)) < 0 ||
            (r = add_thread(p, 51, TASK_MODE_DISABLED, 0)) < 0)
                return r;
        if ((r = forest_add_listener(f, 1, 3, &l)) < 0 || (r = listener_add_holder(l, 101, 5)) < 0)
                return r;
        return listener_add_holder(l, 50, 9);
}

static int build_inferred(Forest *f) {
        Filter *flt;
        Process *p;
        Listener *l;
        int r;

        if ((r = set_meta(f, "ptrace", IDENTITY_INFERRED)) < 0 ||
            (r = set_snapshot(f, NULL, 65534, SNAPSHOT_CONSISTENCY_FROZEN)) < 0 ||
            (r = ADD_FILTER(f, 1, 0, prog_notify_openat, &flt)) < 0)
                return r;
        flt->has_listener = true;
        if ((r = ADD_FILTER(f, 2, 0, prog_notify_openat, &flt)) < 0)
                return r;
        flt->has_listener = true;
        if ((r = ADD_FILTER(f, 3, 2, prog_log, NULL)) < 0 || (r = add_process(f, 10, 1, 99, "a", &p)) < 0 ||
            (r = add_thread(p, 10, TASK_MODE_FILTER, 1)) < 0 || (r = add_thread(p, 11, TASK_MODE_STRICT, 0)) < 0 ||
            (r = add_process(f, 20, 1, 98, "b", &p)) < 0 || (r = add_thread(p, 20, TASK_MODE_FILTER, 3)) < 0)
                return r;
        if ((r = forest_add_listener(f, 1, 1, &l)) < 0 || (r = listener_add_holder(l, 10, 7)) < 0 ||
            (r = forest_add_listener(f, 2, 2, &l)) < 0)
                return r;
        return listener_add_holder(l, 20, 8);
}

static Forest *finish(Forest *f, int r) {
        if (r >= 0)
                r = forest_link(f, NULL);
        if (r >= 0)
                r = forest_renumber(f);
        if (r < 0)
                return forest_free(f);
        return f;
}

Forest *sample_forest_variant(unsigned variants) {
        Forest *f = forest_new();
        return f ? finish(f, build_basic(f, variants)) : NULL;
}

Forest *sample_forest(SampleKind kind) {
        Forest *f = forest_new();
        int r = 0;
        if (!f)
                return NULL;
        switch (kind) {
        case SAMPLE_BASIC:
                r = build_basic(f, VARIANT_NONE);
                break;
        case SAMPLE_SUBTREE:
                r = build_subtree(f);
                break;
        case SAMPLE_EMPTY:
                r = set_meta(f, "bpf", IDENTITY_EXACT);
                break;
        case SAMPLE_INFERRED:
                r = build_inferred(f);
                break;
        default:
                r = -EINVAL;
        }
        return finish(f, r);
}

/* n_filters root filters of one instruction each, RET ERRNO(i) (all different), and one process
 * with one thread on filter 1. */
static int build_many_filters(Forest *f, size_t n_filters) {
        Process *p;
        int r = set_meta(f, "bpf", IDENTITY_EXACT);
        if (r >= 0)
                r = set_snapshot(f, "many filters", 65534, SNAPSHOT_CONSISTENCY_ITERATOR);
        for (size_t i = 1; r >= 0 && i <= n_filters; i++) {
                struct sock_filter ret = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t) (i & 0xffff));
                ret.k = i <= 0xffff ? ret.k : SECCOMP_RET_TRACE | (uint32_t) (i & 0xffff);
                r = forest_add_filter(f, i, 0, &ret, 1, NULL);
        }
        if (r >= 0)
                r = add_process(f, 100, 1, 4242, "many", &p);
        if (r >= 0)
                r = add_thread(p, 100, TASK_MODE_FILTER, 1);
        return r;
}

/* n_processes processes, each with argv_bytes of command line in 64-byte arguments. */
static int build_long_argv(Forest *f, size_t n_processes, size_t argv_bytes) {
        size_t n_args = argv_bytes / 64;
        _cleanup_free_ char **argv = calloc(n_args + 1, sizeof(char *));
        char arg[64];
        Process *p;
        int r = argv ? set_meta(f, "bpf", IDENTITY_EXACT) : -ENOMEM;
        memset(arg, 'a', sizeof(arg) - 1);
        arg[sizeof(arg) - 1] = 0;
        for (size_t i = 0; argv && i < n_args; i++)
                argv[i] = arg;
        if (r >= 0)
                r = set_snapshot(f, "long argv", 65534, SNAPSHOT_CONSISTENCY_ITERATOR);
        for (size_t i = 0; r >= 0 && i < n_processes; i++) {
                r = add_process(f, 100 + (pid_t) i, 1, 4242, "argv", &p);
                if (r >= 0)
                        r = add_thread(p, 100 + (pid_t) i, TASK_MODE_DISABLED, 0);
                if (r >= 0)
                        r = process_set_argv(p, argv);
        }
        return r;
}

Forest *sample_forest_many_filters(size_t n_filters) {
        Forest *f = forest_new();
        return f ? finish(f, build_many_filters(f, n_filters)) : NULL;
}

Forest *sample_forest_long_argv(size_t n_processes, size_t argv_bytes) {
        Forest *f = forest_new();
        return f ? finish(f, build_long_argv(f, n_processes, argv_bytes)) : NULL;
}

Forest *sample_forest_with_units(void) {
        Forest *f = sample_forest(SAMPLE_BASIC);
        if (!f || f->n_processes < 3 || process_set_units(f->processes[0], "sshd.service", NULL, "") < 0 ||
            process_set_units(f->processes[1], "machine-web.scope", "app.service", "web") < 0)
                return forest_free(f);
        return f;
}

char *sample_diff_text(const Forest *a, const Forest *b) {
        _cleanup_(snapshot_diff_freep) SnapshotDiff *d = NULL;
        char *buf = NULL;
        size_t size = 0;
        if (snapshot_diff(a, b, &d) < 0)
                return NULL;
        FILE *out = open_memstream(&buf, &size);
        if (!out)
                return NULL;
        int r = snapshot_diff_print(d, out);
        fclose(out);
        if (r < 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
