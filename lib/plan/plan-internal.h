/* plan-internal.h: what the planner's files share: the analysis of the snapshot (who installs each
 * filter, what each process inherits, where each process is created) and the emitter's state */
#pragma once

#include <stdarg.h>

#include "plan/plan-kmodel.h"
#include "plan/plan.h"

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

/* What running a plan's steps on a model keeps besides the model: which model objects stand for
 * the snapshot's filters and listeners, and the listener fd each task's last install returned. */
typedef struct PlanSimState {
        size_t *filter_object;   /* [snapshot filters]: KMODEL_NONE until installed */
        size_t *listener_object; /* [snapshot listeners]: KMODEL_NONE until installed */
        int *last_install_fd;    /* [tasks] */
        size_t n_last_install_fd, n_last_install_fd_allocated;
} PlanSimState;
int plan_sim_state_init(PlanSimState *st, const Forest *snapshot);
void plan_sim_state_done(PlanSimState *st);
/* Apply step i of plan to the model. -EPROTO (with *error) when the model refuses it: a
 * planner bug, since every step is checked while the plan is made. */
int plan_step_apply(const Plan *plan, size_t i, KModel *km, PlanSimState *st, char **error);

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

/* Set *error (if not NULL) to the message and return r (-ENOMEM when it cannot be made). */
int plan_verror(char **error, int r, const char *format, va_list ap) _printf_(3, 0);
/* Set *p->error and return -EINVAL ("Cannot restore: " is not added: say what and where). */
int plan_refuse(Planner *p, const char *format, ...) _printf_(2, 3);

/* "process 412 (comm)" / "the restore root" for messages; a static buffer per call site. */
const char *plan_process_name(const Planner *p, size_t process, char *buf, size_t size);
#define PROCESS_NAME(p, i) plan_process_name((p), (i), (char[64]) {}, 64)

/* Who installs what, what each process inherits, where each process is created. */
int plan_analyse(Planner *p);
void plan_analysis_free(Planner *p);

/* Emit the steps, running each on the model; then check the model's end state. */
int plan_emit(Planner *p);


/* Choose the system call of step i (and check what the task does after it) against the chain the
 * task runs under in the model, before the step is applied. -EINVAL with the reason when no
 * choice works. */
int plan_check_step(Planner *p, size_t i);
/* After step i was applied: the task reports and waits for its next step. */
int plan_check_after_step(Planner *p, size_t i);
/* Does the chain that ends at snapshot filter head stop prctl(PR_SET_NO_NEW_PRIVS)? 1 yes, 0 no. */
int plan_chain_stops_nnp(Planner *p, const Filter *head);
/* Does it stop a call of becoming process sp's uid and gid (a SET_CREDS step)? 1 yes, 0 no. */
int plan_chain_stops_creds(Planner *p, const Filter *head, const Process *sp);
/* Free the cache of system call verdicts. */
void plan_verdict_cache_free(Planner *p);
/* Would step s (not yet emitted) pass both checks? Sets s->syscall. */
bool plan_step_possible(Planner *p, PlanStep *s);
