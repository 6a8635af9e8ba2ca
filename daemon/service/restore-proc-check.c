/* restore-proc-check.c: the kernel's own word on a restored tree: what /proc/PID/task/TID/status
 * says of every restored thread (Seccomp, Seccomp_filters, NoNewPrivs), and /proc/PID/status of
 * every restored process (its leader's, which tools read), against the snapshot */
#include "service/restore-proc-check.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/util.h"

/* What a status file says of seccomp and no_new_privs. */
typedef struct ProcSeccomp {
        int mode;          /* Seccomp: 0 disabled, 1 strict, 2 filter */
        unsigned filters;  /* Seccomp_filters: */
        bool nnp;          /* NoNewPrivs: */
} ProcSeccomp;

/* What the snapshot expects of one thread (or a process's leader). */
typedef struct Expected {
        int mode;
        unsigned filters;
        bool nnp;
} Expected;

typedef struct Checker {
        const PlanVerifyOptions *options;
        char ***diffs;
        size_t n;
        bool ok;
} Checker;

_printf_(2, 3) static int differ(Checker *c, const char *format, ...) {
        char **l;
        va_list ap;
        char *s;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        l = realloc(*c->diffs, (c->n + 2) * sizeof(char *));
        if (!l) {
                free(s);
                return -ENOMEM;
        }
        l[c->n++] = s;
        l[c->n] = NULL;
        *c->diffs = l;
        c->ok = false;
        return 0;
}

/* -ENOENT when the file is gone (the task exited), -EBADMSG when a field is missing. */
static int read_proc_seccomp(const char *path, ProcSeccomp *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[256];
        unsigned seen = 0;

        if (!f)
                return -errno;
        *ret = (ProcSeccomp) {};
        while (fgets(line, sizeof(line), f)) {
                int v;
                if (sscanf(line, "Seccomp: %d", &v) == 1) {
                        ret->mode = v;
                        seen |= 1;
                } else if (sscanf(line, "Seccomp_filters: %d", &v) == 1) {
                        ret->filters = (unsigned) v;
                        seen |= 2;
                } else if (sscanf(line, "NoNewPrivs: %d", &v) == 1) {
                        ret->nnp = v != 0;
                        seen |= 4;
                }
        }
        return seen == 7 ? 0 : -EBADMSG;
}

static int kernel_mode(TaskMode m) {
        switch (m) {
        case TASK_MODE_STRICT:
                return 1;
        case TASK_MODE_FILTER:
                return 2;
        default:
                return 0;
        }
}

static Expected expected_of(const Process *p, const Task *t) {
        return (Expected) {
                .mode = kernel_mode(t->mode),
                .filters = t->mode != TASK_MODE_FILTER ? 0 : t->filter ? t->filter->depth : t->filter_count,
                .nnp = task_no_new_privs(p, t),
        };
}

static bool announced(const Checker *c, pid_t id) {
        for (size_t i = 0; c->options && i < c->options->n_nnp_added; i++)
                if (c->options->nnp_added[i] == id)
                        return true;
        return false;
}

/* Compare one status file with what is expected; what names it in sentences ("thread 412 of
 * process 411 (restored as 8812)"). */
static int compare(Checker *c, const char *path, const char *what, pid_t id, const Expected *want, bool check_seccomp) {
        ProcSeccomp have;
        int r = read_proc_seccomp(path, &have);

        if (r == -ENOENT || r == -ESRCH)
                return differ(c, "%s: gone (%s cannot be read)", what, path);
        if (r < 0)
                return differ(c, "%s: %s cannot be read: %s", what, path, strerror(-r));
        if (check_seccomp && have.mode != want->mode)
                r = differ(c, "%s: the kernel says Seccomp: %d, expected %d", what, have.mode, want->mode);
        if (r >= 0 && check_seccomp && have.filters != want->filters)
                r = differ(c, "%s: the kernel says Seccomp_filters: %u, expected %u", what, have.filters, want->filters);
        if (r >= 0 && have.nnp != want->nnp && !(have.nnp && announced(c, id)))
                r = differ(c, "%s: the kernel says NoNewPrivs: %d, expected %d", what, have.nnp, want->nnp);
        return r;
}

static pid_t mapped(const TaskPair *v, size_t n, pid_t a) {
        for (size_t i = 0; i < n; i++)
                if (v[i].a == a)
                        return v[i].b;
        return 0;
}

static int check_thread(Checker *c, const PlanMapping *map, const Process *sp, pid_t pid, const Task *st) {
        pid_t tid = mapped(map->threads, map->n_threads, st->tid);
        Expected want = expected_of(sp, st);
        char path[96], what[128];

        snprintf(what, sizeof(what), "thread %d of process %d (restored as %d)", st->tid, sp->pid, tid);
        if (!tid)
                return differ(c, "thread %d of process %d: not in the mapping", st->tid, sp->pid);
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
        return compare(c, path, what, st->tid, &want, true);
}

/* /proc/PID/status is the leader's view. With the leader in the snapshot it is that thread's; else
 * the exited leader's: its mode and chain where the snapshot records them, and the process's
 * no_new_privs. */
static int check_process(Checker *c, const PlanMapping *map, const Process *sp) {
        pid_t pid = mapped(map->processes, map->n_processes, sp->pid);
        const Task *leader = process_find_thread(sp, sp->pid);
        char path[64], what[96];
        int r = 0;

        if (!pid)
                return differ(c, "process %d: not in the mapping", sp->pid);
        for (size_t j = 0; r >= 0 && j < sp->n_threads; j++)
                r = check_thread(c, map, sp, pid, &sp->threads[j]);
        if (r < 0 || leader)
                return r;
        Expected want = sp->has_exited_leader ? expected_of(sp, &sp->exited_leader) : (Expected) {};
        want.nnp = sp->no_new_privs;
        snprintf(path, sizeof(path), "/proc/%d/status", pid);
        snprintf(what, sizeof(what), "process %d (restored as %d), whose leader exited", sp->pid, pid);
        return compare(c, path, what, sp->pid, &want, sp->has_exited_leader);
}

int restore_proc_check(const Forest *snapshot, const PlanMapping *map, const PlanVerifyOptions *options,
                       bool *ret_verified, char ***differences) {
        Checker c = { .options = options, .diffs = differences, .n = strv_length(*differences), .ok = true };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < snapshot->n_processes; i++)
                r = check_process(&c, map, snapshot->processes[i]);
        if (r < 0)
                return r;
        if (!*differences) { /* an empty list, never NULL */
                *differences = calloc(1, sizeof(char *));
                if (!*differences)
                        return -ENOMEM;
        }
        *ret_verified = c.ok;
        return 0;
}
