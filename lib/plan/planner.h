/* planner.h: what the planner's files share: the state of one planning (the analysis of the
 * snapshot: who installs each filter, what each process inherits, where each process is created;
 * and the emitter's state), lists of indices, refusals */
#pragma once

#include <stdarg.h>

#include "core/hashmap.h"
#include "plan/plan-kmodel.h"
#include "plan/plan-sim.h"
#include "plan/plan-types.h"

typedef struct IdxVec {
        size_t *v;
        size_t n, allocated;
} IdxVec;

int idxvec_push(IdxVec *l, size_t x);
void idxvec_array_free(IdxVec *a, size_t n);

/* How a process reaches its parent in the restored tree. */
typedef enum SiteKind {
        SITE_DIRECT,       /* its parent's task forks it */
        SITE_CLONE_PARENT, /* a sibling's task forks it with CLONE_PARENT */
        SITE_MOVE,         /* a descendant's helper forks it and exits; the parent, a subreaper for
                            * that moment, adopts it */
} SiteKind;

/* Process indices are those of snapshot->processes; ROOT (== n_processes) is the restore root. */
typedef struct Planner {
        const Forest *s;
        const PlanOptions *o;
        char **error;
        size_t np, nf;
        size_t root;            /* == np */

        /* the process tree: parent (ROOT for a top process), depth (root 0), children */
        size_t *pparent;
        size_t *pdepth;
        IdxVec *pchildren;       /* [np + 1] */
        size_t *porder;          /* processes, parents before children */

        /* M(P): the longest chain every thread of P's subtree starts with; NULL = empty */
        const Filter **common;   /* [np + 1] */
        size_t *forced;          /* [nf]: the process that must install it, PLAN_NONE */
        IdxVec *tops;            /* [nf]: the highest processes whose whole subtree holds it */
        size_t *owner;           /* [nf]: the process that installs it (ROOT possible) */
        const Filter **base;     /* [np + 1]: head of what the process inherits at its creation */

        /* where each process is created */
        SiteKind *site_kind;     /* [np] */
        size_t *creator;         /* [np]: the process whose task forks it */
        const Filter **site_node; /* [np]: at which filter of the creator (NULL: its root) */
        IdxVec *sites_at_filter; /* [nf] */
        IdxVec *sites_at_root;   /* [np + 1] */

        /* the install tree of each process: owned filters below its base */
        IdxVec *filter_children; /* [nf]: owned children of an owned (or base) filter, same owner */
        IdxVec *root_children;   /* [np + 1]: owned filters stacked on the process's base */
        IdxVec *threads_at_filter; /* [nf]: global thread indices whose head it is (in its owner) */
        IdxVec *threads_at_root; /* [np + 1]: threads whose head is the process's base */
        size_t *rep;             /* [nf]: a thread whose head lies at or below it (in its owner) */
        size_t *thread_base;     /* [np]: global index of the process's first thread */
        size_t n_threads;

        /* the emitter */
        Plan *plan;
        size_t n_processes_allocated, n_tasks_allocated, n_steps_allocated, n_subreapers_allocated,
                n_nnp_added_allocated; /* of plan's arrays */
        KModel km;
        PlanSimState sim;        /* what running the steps on km keeps */
        size_t *thread_task;     /* [n_threads]: the plan task of each snapshot thread, PLAN_NONE */
        size_t *process_plan;    /* [np + 1]: the plan process of each snapshot process */
        size_t *listener_of_filter; /* [nf]: the snapshot listener of each filter, PLAN_NONE */
        bool *nnp_everywhere;    /* [nf]: every snapshot thread whose chain goes through it ends with
                                  * no_new_privs (and at least one does) */
        Hashmap process_by_pid;  /* pid -> snapshot process index + 1 */
        Hashmap listener_by_holder; /* pid << 32 | fd -> snapshot listener index + 1 */
        Hashmap verdicts;        /* cached system call verdicts, see plan-syscalls.c */
        pid_t next_helper_ns_tid; /* pid_namespace: the tid the next helper task gets there */
} Planner;

/* Set *p->error and return -EINVAL ("Cannot restore: " is not added: say what and where). */
int plan_refuse(Planner *p, const char *format, ...) _printf_(2, 3);

/* "process 412 (comm)" / "the restore root" for messages; a static buffer per call site. */
const char *plan_process_name(const Planner *p, size_t process, char *buf, size_t size);
#define PROCESS_NAME(p, i) plan_process_name((p), (i), (char[64]) {}, 64)
