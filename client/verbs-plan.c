/* verbs-plan.c: sectreectl plan ID|FILE: what a restore of a snapshot (a file, read offline, or a
 * stored one, fetched from the daemon) will do, step by step, made by the planner the executor runs */
#include "verbs-plan.h"

#include <sys/stat.h>

#include "core/escape.h"
#include "ctl-log.h"
#include "json-out.h"
#include "output.h"
#include "plan/plan-json.h"
#include "plan/plan.h"
#include "snapshot-load.h"

static const char *plural(size_t n, const char *one, const char *many) {
        return n == 1 ? one : many;
}

static size_t count_threads(const Forest *f) {
        size_t n = 0;

        for (size_t i = 0; i < f->n_processes; i++)
                n += f->processes[i]->n_threads;
        return n;
}

/* "snapshot ID", for a stored snapshot's id. */
static char *strjoin_snapshot(const char *id) {
        char *s = NULL;
        return asprintf(&s, "snapshot %s", id) < 0 ? NULL : s;
}

static void print_pids(const char *what, const pid_t *v, size_t n) {
        if (n == 0)
                return;
        printf("%s:", what);
        for (size_t i = 0; i < n; i++)
                printf(" %d", v[i]);
        printf("\n");
}

static void print_summary(const char *path, const Forest *f, const Plan *p) {
        size_t threads = count_threads(f);

        fputs("Restore plan for ", stdout);
        fputs_escaped(path, stdout);
        printf(": %zu %s, %zu %s, %zu %s, %zu %s\n", f->n_processes,
               plural(f->n_processes, "process", "processes"), threads, plural(threads, "thread", "threads"),
               f->n_filters, plural(f->n_filters, "filter", "filters"), f->n_listeners,
               plural(f->n_listeners, "listener", "listeners"));
        if (p->options.unprivileged)
                printf("As uid %u, without CAP_SYS_ADMIN: no_new_privs is set before the first install of every task.\n",
                       (unsigned) geteuid());
        else
                printf("As root: no_new_privs only where the snapshot has it, before any filter that forbids setting it.\n");
        printf("Helpers: %zu %s, %zu %s; %zu %s reparented through a subreaper, %zu forked with CLONE_PARENT.\n",
               p->n_helper_processes, plural(p->n_helper_processes, "process", "processes"), p->n_helper_threads,
               plural(p->n_helper_threads, "thread", "threads"), p->n_moves, plural(p->n_moves, "process", "processes"),
               p->n_clone_parent);
        print_pids("Child subreapers for a moment (none stays one)", p->subreapers, p->n_subreapers);
        print_pids("no_new_privs added to threads (installs need it)", p->nnp_added, p->n_nnp_added);
        printf("Every system call checked against the filters in force; the plan rebuilds the snapshot on a model "
               "of the kernel.\n\n");
}

static int print_json(const char *path, const Forest *f, const Plan *p) {
        json_auto_t *doc = plan_to_json(p);

        if (!doc)
                return log_oom();
        json_object_set_new(doc, "file", json_string(path));
        json_object_set_new(doc, "snapshot", json_pack("{s:I, s:I, s:I, s:I}", "processes", (json_int_t) f->n_processes,
                                                       "threads", (json_int_t) count_threads(f), "filters",
                                                       (json_int_t) f->n_filters, "listeners", (json_int_t) f->n_listeners));
        return json_print_document(doc);
}

int verb_plan(Context *c, char **args, size_t n_args) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_(plan_freep) Plan *p = NULL;
        _cleanup_free_ char *error = NULL;
        PlanOptions o = PLAN_OPTIONS_DEFAULT;
        const char *path = args[0];
        int r;

        r = snapshot_load_operand(c, path, &f);
        if (r < 0)
                return r;
        o.unprivileged = geteuid() != 0;
        r = plan_build(f, &o, &p, &error);
        if (r == -EINVAL && error)
                return ctl_error_errno(r, "Cannot restore %s exactly: %s", streq(path, "-") ? "(stdin)" : path, error);
        if (r < 0)
                return ctl_error_errno(r, "Failed to plan the restore of %s: %m", path);
        if (c->json)
                return print_json(path, f, p);
        if (c->legend) {
                struct stat st;
                bool id = path[0] && strspn(path, "0123456789") == strlen(path) && stat(path, &st) < 0;
                _cleanup_free_ char *what = id ? strjoin_snapshot(path) : NULL;
                print_summary(streq(path, "-") ? "(stdin)" : what ?: path, f, p);
        }
        for (size_t i = 0; i < p->n_steps; i++) {
                _cleanup_free_ char *s = plan_step_describe(p, i);
                if (!s)
                        return log_oom();
                /* comm and argv are a snapshot's bytes: a hostile file's escape sequences
                 * must not reach the terminal */
                printf("%4zu  ", i);
                fputs_escaped(s, stdout);
                putchar('\n');
        }
        return output_flush();
}
