/* plan-emit.c: the planner's emitter: walks every process's install tree from the restore root
 * down, and writes the steps in an order that runs, each one applied to the kernel model as it
 * is written so that the next ones see the state the executor will find */
#include "plan/plan-emit.h"

#include "plan/plan-sim.h"
#include "plan/plan-syscalls.h"

/* What is left to emit, kept on an explicit stack (process trees can be deep). */
typedef enum JobKind {
        JOB_START,   /* a process's first steps, then its walk from its root */
        JOB_WALK,    /* a carrier at a node of its process's install tree (install it first if set) */
        JOB_EXIT,    /* a helper task is done */
} JobKind;

typedef struct Job {
        JobKind kind;
        size_t process;       /* snapshot process index (or the root) */
        const Filter *node;   /* JOB_WALK: NULL for the process's root */
        size_t task;          /* the plan task */
        bool install;         /* JOB_WALK: install node first */
} Job;

typedef struct JobStack {
        Job *v;
        size_t n, allocated;
} JobStack;

static int push(JobStack *s, Job j) {
        if (GROW(s->v, s->allocated, s->n + 1) < 0)
                return -ENOMEM;
        s->v[s->n++] = j;
        return 0;
}

/* ---- plan objects: made in the order the model makes them, so indices agree ---- */

static int new_process(Planner *p, PlanProcessKind kind, const Process *snap, size_t parent, size_t *ret) {
        Plan *plan = p->plan;
        if (GROW(plan->processes, p->n_processes_allocated, plan->n_processes + 1) < 0)
                return -ENOMEM;
        plan->processes[plan->n_processes] = (PlanProcess) {
                .kind = kind, .snapshot = snap, .parent = parent, .leader = PLAN_NONE, .exec = PLAN_NONE,
        };
        *ret = plan->n_processes++;
        if (kind == PLAN_PROCESS_HELPER)
                plan->n_helper_processes++;
        return 0;
}

static int new_task(Planner *p, PlanTaskKind kind, size_t process, const Task *snap, size_t *ret) {
        Plan *plan = p->plan;
        if (GROW(plan->tasks, p->n_tasks_allocated, plan->n_tasks + 1) < 0)
                return -ENOMEM;
        plan->tasks[plan->n_tasks] = (PlanTask) { .kind = kind, .process = process, .snapshot = snap };
        if (p->o->pid_namespace)
                plan->tasks[plan->n_tasks].ns_tid = snap ? snap->tid
                                                   : plan->processes[process].kind == PLAN_PROCESS_ROOT &&
                                                                     plan->processes[process].leader == PLAN_NONE
                                                           ? 1
                                                           : p->next_helper_ns_tid++;
        if (plan->processes[process].leader == PLAN_NONE)
                plan->processes[process].leader = plan->n_tasks;
        if (kind == PLAN_TASK_HELPER && plan->processes[process].kind != PLAN_PROCESS_HELPER &&
            !(plan->processes[process].kind == PLAN_PROCESS_ROOT && plan->processes[process].leader == plan->n_tasks))
                plan->n_helper_threads++; /* the restore root's own thread is no helper */
        *ret = plan->n_tasks++;
        return 0;
}

/* The plan task of snapshot thread g (global index), made in plan process pp. */
static int new_thread_task(Planner *p, size_t g, size_t pp, size_t *ret) {
        const Process *sp = p->plan->processes[pp].snapshot;
        uintptr_t x = (uintptr_t) hashmap_get(&p->process_by_pid, (uint64_t) sp->pid);
        int r;

        if (!x || p->thread_task[g] != PLAN_NONE || g < p->thread_base[x - 1] ||
            g - p->thread_base[x - 1] >= sp->n_threads)
                return -EPROTO; /* every thread is made once, in its own process */
        r = new_task(p, PLAN_TASK_RESTORED, pp, &sp->threads[g - p->thread_base[x - 1]], ret);
        if (r < 0)
                return r;
        p->thread_task[g] = *ret;
        return 0;
}

/* ---- steps ---- */

static int emit(Planner *p, PlanStep st) {
        Plan *plan = p->plan;
        size_t i;
        int r;

        if (GROW(plan->steps, p->n_steps_allocated, plan->n_steps + 1) < 0)
                return -ENOMEM;
        i = plan->n_steps++;
        plan->steps[i] = st;
        if (p->o->check_syscalls) {
                r = plan_check_step(p, i);
                if (r < 0)
                        return r;
        }
        r = plan_step_apply(plan, i, &p->km, &p->sim, p->error);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        if (p->o->check_syscalls)
                return plan_check_after_step(p, i);
        return 0;
}

/* A step with "none" in every field it does not set. */
#ifdef __clang__
#define IGNORE_OVERRIDE_INIT _Pragma("clang diagnostic ignored \"-Winitializer-overrides\"")
#else
#define IGNORE_OVERRIDE_INIT _Pragma("GCC diagnostic ignored \"-Woverride-init\"")
#endif
#define STEP(...)                                                                                     \
        (__extension__({                                                                              \
                _Pragma("GCC diagnostic push") IGNORE_OVERRIDE_INIT                                   \
                PlanStep _step = { .target = PLAN_NONE, .listener = PLAN_NONE, .fd = -1, __VA_ARGS__ }; \
                _Pragma("GCC diagnostic pop") _step;                                                  \
        }))

/* Whether snapshot thread t of process sp ends with no_new_privs. */
static bool thread_wants_nnp(const Process *sp, const Task *t) {
        return task_no_new_privs(sp, t);
}

static size_t kprocess_of(const Planner *p, size_t task) {
        return p->km.tasks[task].process;
}

static uint64_t holder_key(pid_t pid, int fd) {
        return (uint64_t) (uint32_t) pid << 32 | (uint32_t) fd;
}

/* Is process pp (plan) a holder of listener object l at fd in the snapshot? */
static bool holds_at(const Planner *p, size_t pp, size_t l, int fd) {
        const PlanProcess *x = &p->plan->processes[pp];
        uintptr_t li;

        if (x->kind != PLAN_PROCESS_RESTORED)
                return false;
        li = (uintptr_t) hashmap_get(&p->listener_by_holder, holder_key(x->snapshot->pid, fd));
        return li && p->sim.listener_object[li - 1] == l;
}

/* A new process starts with its creator's fd table: close what it must not hold. */
static int close_inherited(Planner *p, size_t task) {
        size_t kp = kprocess_of(p, task);

        for (size_t k = 0; k < p->km.processes[kp].n_fds;) {
                KFd fd = p->km.processes[kp].fds[k];
                size_t before = p->km.processes[kp].n_fds;
                int r;

                if (holds_at(p, kp, fd.listener, fd.fd)) {
                        k++;
                        continue;
                }
                r = emit(p, STEP(.op = PLAN_OP_CLOSE_FD, .task = task, .fd = fd.fd));
                if (r < 0)
                        return r;
                if (p->km.processes[kp].n_fds >= before)
                        return -EPROTO;
        }
        return 0;
}

/* The lowest fd at which the snapshot has process pp hold listener li, or -1. */
static int holder_fd(const Planner *p, size_t pp, size_t li) {
        const PlanProcess *x = &p->plan->processes[pp];
        int best = -1;

        if (x->kind != PLAN_PROCESS_RESTORED || li == PLAN_NONE)
                return -1;
        for (size_t j = 0; j < p->s->listeners[li]->n_holders; j++) {
                const ListenerHolder *h = &p->s->listeners[li]->holders[j];
                if (h->pid == x->snapshot->pid && (best < 0 || h->fd < best))
                        best = h->fd;
        }
        return best;
}

static unsigned install_flags(const Filter *f) {
        unsigned flags = f->log ? PLAN_INSTALL_LOG : 0;

        if (f->has_listener || f->listener_id || f->wait_killable_recv)
                flags |= PLAN_INSTALL_NEW_LISTENER;
        if (f->wait_killable_recv)
                flags |= PLAN_INSTALL_WAIT_KILLABLE_RECV;
        return flags;
}

/* Must the installer of f set no_new_privs first? Without CAP_SYS_ADMIN the kernel demands it.
 * With it, when f stops prctl(PR_SET_NO_NEW_PRIVS) and every thread that will run under f ends
 * with no_new_privs: none of them could set it afterwards, so the original set it before f, and
 * they all inherit it from the installer. 1 yes, 0 no. */
static int nnp_before_install(Planner *p, const Filter *f) {
        if (p->o->unprivileged)
                return 1;
        if (!p->nnp_everywhere[f->index])
                return 0;
        return plan_chain_stops_nnp(p, f);
}

/* With the snapshot's uids and gids: has task t become its process's already (itself, or the
 * task it was made by)? */
static bool creds_in_place(const Planner *p, size_t t) {
        const Process *sp = p->plan->processes[p->plan->tasks[t].process].snapshot;
        const KTask *k = &p->km.tasks[t];
        return k->ids_set && sp && k->uid == sp->uid && k->gid == sp->gid;
}

/* With the snapshot's uids and gids, a task becomes its process's ids before a filter that stops
 * doing so (as the original did: sshd's [net] child changes uid, then installs). */
static int creds_before_install(Planner *p, size_t task, const Filter *f) {
        const PlanTask *t = &p->plan->tasks[task];
        int r;

        if (!p->o->original_ids || t->kind != PLAN_TASK_RESTORED || creds_in_place(p, task))
                return 0;
        r = plan_chain_stops_creds(p, f, p->plan->processes[t->process].snapshot);
        if (r <= 0)
                return r;
        return emit(p, STEP(.op = PLAN_OP_SET_CREDS, .task = task));
}

static int install(Planner *p, size_t task, const Filter *f) {
        size_t li = p->listener_of_filter[f->index];
        unsigned flags = install_flags(f);
        int r = creds_before_install(p, task, f);

        if (r < 0)
                return r;
        if (!p->km.tasks[task].nnp) { /* a task that gave up root needs it too */
                r = kmodel_task_privileged(&p->km, task) ? nnp_before_install(p, f) : 1;
                if (r > 0)
                        r = emit(p, STEP(.op = PLAN_OP_SET_NO_NEW_PRIVS, .task = task));
                if (r < 0)
                        return r;
        }
        r = emit(p, STEP(.op = PLAN_OP_INSTALL, .task = task, .filter = f, .flags = flags, .listener = li));
        if (r < 0 || !(flags & PLAN_INSTALL_NEW_LISTENER))
                return r;
        return emit(p, STEP(.op = PLAN_OP_KEEP_LISTENER, .task = task, .filter = f, .listener = li,
                            .fd = holder_fd(p, kprocess_of(p, task), li)));
}

/* ---- processes ---- */

static size_t snapshot_leader_thread(const Planner *p, size_t i) {
        const Process *sp = p->s->processes[i];

        for (size_t j = 0; j < sp->n_threads; j++)
                if (sp->threads[j].tid == sp->pid)
                        return p->thread_base[i] + j;
        return PLAN_NONE;
}

/* The plan process and leader task of snapshot process i, to be forked next. */
static int new_restored(Planner *p, size_t i, size_t parent_pp, size_t *ret_task) {
        size_t pp, g = snapshot_leader_thread(p, i);
        int r = new_process(p, PLAN_PROCESS_RESTORED, p->s->processes[i], parent_pp, &pp);

        if (r < 0)
                return r;
        p->process_plan[i] = pp;
        for (size_t k = 0; k < p->o->n_exec; k++)
                if (p->o->exec[k].pid == p->s->processes[i]->pid)
                        p->plan->processes[pp].exec = k;
        return g == PLAN_NONE ? new_task(p, PLAN_TASK_HELPER, pp, NULL, ret_task) : new_thread_task(p, g, pp, ret_task);
}

/* A task of plan process pp alive in the model, for a step any of its tasks can run. */
static size_t some_task_of(const Planner *p, size_t pp) {
        const KProcess *kp = &p->km.processes[pp];

        for (size_t i = 0; i < kp->n_threads; i++)
                if (p->km.tasks[kp->threads[i]].alive)
                        return kp->threads[i];
        return PLAN_NONE;
}

static int note_subreaper(Planner *p, size_t i) {
        Plan *plan = p->plan;
        for (size_t k = 0; k < plan->n_subreapers; k++)
                if (plan->subreapers[k] == p->s->processes[i]->pid)
                        return 0;
        if (GROW(plan->subreapers, p->n_subreapers_allocated, plan->n_subreapers + 1) < 0)
                return -ENOMEM;
        plan->subreapers[plan->n_subreapers++] = p->s->processes[i]->pid;
        return 0;
}

/* Carrier c forks helper D, D forks process i and exits: i is reparented to its parent, made a
 * subreaper for that moment (the restore root always is one). */
static int emit_move(Planner *p, size_t i, size_t c, size_t *ret_task) {
        size_t t = p->pparent[i], tpp = p->process_plan[t], ttask = PLAN_NONE, dpp, dtask;
        int r;

        if (t != p->root) {
                ttask = some_task_of(p, tpp);
                if (ttask == PLAN_NONE)
                        return plan_refuse(p, "%s has no task left to adopt %s", PROCESS_NAME(p, t), PROCESS_NAME(p, i));
                r = note_subreaper(p, t);
                if (r < 0)
                        return r;
                r = emit(p, STEP(.op = PLAN_OP_SET_SUBREAPER, .task = ttask, .arg = 1));
                if (r < 0)
                        return r;
        }
        r = new_process(p, PLAN_PROCESS_HELPER, NULL, kprocess_of(p, c), &dpp);
        if (r < 0)
                return r;
        r = new_task(p, PLAN_TASK_HELPER, dpp, NULL, &dtask);
        if (r < 0)
                return r;
        r = emit(p, STEP(.op = PLAN_OP_SPAWN_PROCESS, .task = c, .target = dtask));
        if (r < 0)
                return r;
        r = new_restored(p, i, tpp, ret_task);
        if (r < 0)
                return r;
        r = emit(p, STEP(.op = PLAN_OP_SPAWN_PROCESS, .task = dtask, .target = *ret_task));
        if (r < 0)
                return r;
        r = emit(p, STEP(.op = PLAN_OP_EXIT, .task = dtask));
        if (r < 0)
                return r;
        r = emit(p, STEP(.op = PLAN_OP_REAP, .task = c, .target = dpp));
        if (r < 0)
                return r;
        if (ttask != PLAN_NONE) {
                r = emit(p, STEP(.op = PLAN_OP_SET_SUBREAPER, .task = ttask, .arg = 0));
                if (r < 0)
                        return r;
        }
        p->plan->n_moves++;
        return 0;
}

/* Carrier c forks process i itself, or with CLONE_PARENT as a sibling's child. */
static int emit_direct(Planner *p, size_t i, size_t c, size_t *ret_task) {
        bool clone_parent = p->site_kind[i] == SITE_CLONE_PARENT;
        int r = new_restored(p, i, p->process_plan[p->pparent[i]], ret_task);

        if (r < 0)
                return r;
        r = emit(p, STEP(.op = PLAN_OP_SPAWN_PROCESS, .task = c, .target = *ret_task, .arg = clone_parent));
        if (r < 0)
                return r;
        if (clone_parent)
                p->plan->n_clone_parent++;
        return 0;
}

/* Carrier c creates snapshot process i where the analysis said. */
static int emit_site(Planner *p, JobStack *jobs, size_t i, size_t c) {
        size_t task = PLAN_NONE;
        int r;

        if (p->site_kind[i] == SITE_MOVE)
                r = emit_move(p, i, c, &task);
        else
                r = emit_direct(p, i, c, &task);
        if (r < 0)
                return r;
        return push(jobs, (Job) { .kind = JOB_START, .process = i, .task = task });
}

/* A new process starts with its creator's comm: when that is already the snapshot's, there is
 * nothing to set (the original may have been forked under a filter that forbids prctl). */
static bool comm_inherited(const Planner *p, const Job *j) {
        const char *want = p->s->processes[j->process]->comm;

        return want[0] && strncmp(p->km.processes[kprocess_of(p, j->task)].comm, want, sizeof(p->km.processes[0].comm)) == 0;
}

static int job_start(Planner *p, JobStack *jobs, const Job *j) {
        int r = 0;

        if (j->process != p->root) {
                r = comm_inherited(p, j) ? 0 : emit(p, STEP(.op = PLAN_OP_SET_COMM, .task = j->task));
                if (r < 0)
                        return r;
                r = close_inherited(p, j->task);
                if (r < 0)
                        return r;
                if (p->plan->tasks[j->task].kind == PLAN_TASK_HELPER) {
                        r = push(jobs, (Job) { .kind = JOB_EXIT, .task = j->task }); /* no leader in the snapshot */
                        if (r < 0)
                                return r;
                }
        }
        return push(jobs, (Job) { .kind = JOB_WALK, .process = j->process, .task = j->task });
}

/* The node after `node` on the way from it to filter head (NULL if head is node). */
static const Filter *next_towards(const Filter *node, const Filter *head) {
        unsigned d = node ? node->depth : 0;

        if (!head || head->depth <= d)
                return NULL;
        while (head->depth > d + 1)
                head = head->parent;
        return head->parent == node ? head : NULL;
}

static const IdxVec *branches_at(const Planner *p, size_t i, const Filter *node) {
        return node ? &p->filter_children[node->index] : &p->root_children[i];
}

/* Where carrier c goes on from node (NULL: the process's root, its base): towards its own head,
 * or for a helper the first branch no thread of the process needs. */
static const Filter *carrier_next(const Planner *p, size_t i, const Filter *node, size_t c) {
        const PlanTask *t = &p->plan->tasks[c];
        const IdxVec *b = branches_at(p, i, node);

        if (t->kind == PLAN_TASK_RESTORED)
                return t->snapshot->mode == TASK_MODE_FILTER ? next_towards(node ?: p->base[i], t->snapshot->filter)
                                                             : NULL;
        if (i == p->root && !node)
                return NULL; /* the restore root's own thread never installs anything */
        if (i != p->root && p->plan->processes[t->process].leader == c && p->s->processes[i]->has_exited_leader)
                return NULL; /* a helper leader standing for an exited one stays at the base: see job_exit() */
        for (size_t k = 0; k < b->n; k++)
                if (p->rep[b->v[k]] == PLAN_NONE)
                        return p->s->filters[b->v[k]];
        return NULL;
}

/* The carrier of one branch: the thread that represents it, or a new helper thread. */
static int spawn_branch_carrier(Planner *p, JobStack *jobs, size_t i, const Filter *b, size_t c) {
        size_t pp = kprocess_of(p, c), d, g = p->rep[b->index];
        int r = g == PLAN_NONE ? new_task(p, PLAN_TASK_HELPER, pp, NULL, &d) : new_thread_task(p, g, pp, &d);

        if (r < 0)
                return r;
        r = emit(p, STEP(.op = PLAN_OP_SPAWN_THREAD, .task = c, .target = d));
        if (r < 0)
                return r;
        if (g == PLAN_NONE) {
                r = push(jobs, (Job) { .kind = JOB_EXIT, .task = d });
                if (r < 0)
                        return r;
        }
        return push(jobs, (Job) { .kind = JOB_WALK, .process = i, .node = b, .task = d, .install = true });
}

static int job_walk(Planner *p, JobStack *jobs, const Job *j) {
        size_t i = j->process, c = j->task, pp = kprocess_of(p, c);
        const IdxVec *threads = j->node ? &p->threads_at_filter[j->node->index] : &p->threads_at_root[i];
        const IdxVec *sites = j->node ? &p->sites_at_filter[j->node->index] : &p->sites_at_root[i];
        const IdxVec *b = branches_at(p, i, j->node);
        const Filter *next;
        int r;

        if (j->install) {
                r = install(p, c, j->node);
                if (r < 0)
                        return r;
        }
        next = carrier_next(p, i, j->node, c);
        if (next) {
                r = push(jobs, (Job) { .kind = JOB_WALK, .process = i, .node = next, .task = c, .install = true });
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < threads->n; k++) {
                size_t t;
                if (p->thread_task[threads->v[k]] != PLAN_NONE)
                        continue; /* the carrier itself */
                r = new_thread_task(p, threads->v[k], pp, &t);
                if (r < 0)
                        return r;
                r = emit(p, STEP(.op = PLAN_OP_SPAWN_THREAD, .task = c, .target = t));
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < b->n; k++)
                if (p->s->filters[b->v[k]] != next) {
                        r = spawn_branch_carrier(p, jobs, i, p->s->filters[b->v[k]], c);
                        if (r < 0)
                                return r;
                }
        for (size_t k = 0; k < sites->n; k++)
                if (sites->v[k] != PLAN_NONE && p->creator[sites->v[k]] == i) {
                        r = emit_site(p, jobs, sites->v[k], c);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* A helper leader standing for one that exited ends as /proc/PID/status showed it: in its mode,
 * with its number of filters (allow-all ones on top of what it inherited: the kernel released the
 * originals, only their count shows). Its base must not be deeper than that. 1 when it ended the
 * task (strict mode, then exit). */
static int exited_leader_state(Planner *p, size_t t, const Process *sp) {
        const Task *want = &sp->exited_leader;
        size_t head = p->km.tasks[t].head;
        unsigned depth = head == KMODEL_NONE ? 0 : (unsigned) p->km.filters[head].depth;
        int r;

        if (depth > want->filter_count)
                return plan_refuse(p, "process %d: its leader exited in mode %s with %u filters, but every task of it "
                                   "inherits %u: no restored leader can show that", sp->pid,
                                   task_mode_to_string(want->mode), want->filter_count, depth);
        if (want->mode == TASK_MODE_STRICT) { /* then it exits: strict mode allows exit(2) */
                r = emit(p, STEP(.op = PLAN_OP_STRICT, .task = t, .arg = 1));
                return r < 0 ? r : 1;
        }
        if (want->mode != TASK_MODE_FILTER)
                return 0;
        if (depth < want->filter_count && p->o->unprivileged && !p->km.tasks[t].nnp) {
                r = emit(p, STEP(.op = PLAN_OP_SET_NO_NEW_PRIVS, .task = t));
                if (r < 0)
                        return r;
        }
        for (unsigned k = depth; k < want->filter_count; k++) {
                r = emit(p, STEP(.op = PLAN_OP_FILL, .task = t));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A helper task is done. A process whose leader exited in the snapshot has a helper leader, and
 * /proc reports the leader's no_new_privs (and seccomp mode and filter count, where the snapshot
 * records them) for the process: set them before the leader exits. */
static int job_exit(Planner *p, size_t t) {
        const PlanProcess *proc = &p->plan->processes[p->plan->tasks[t].process];
        bool leader = proc->kind == PLAN_PROCESS_RESTORED && proc->leader == t;
        int r;

        if (leader && proc->snapshot->no_new_privs && !p->km.tasks[t].nnp) {
                r = emit(p, STEP(.op = PLAN_OP_SET_NO_NEW_PRIVS, .task = t));
                if (r < 0)
                        return r;
        }
        if (leader && proc->snapshot->has_exited_leader) {
                r = exited_leader_state(p, t, proc->snapshot);
                if (r != 0)
                        return r < 0 ? r : 0; /* 1: it ended already */
        }
        return emit(p, STEP(.op = PLAN_OP_EXIT, .task = t));
}

static int run_jobs(Planner *p, JobStack *jobs) {
        while (jobs->n > 0) {
                Job j = jobs->v[--jobs->n];
                int r;

                switch (j.kind) {
                case JOB_START:
                        r = job_start(p, jobs, &j);
                        break;
                case JOB_WALK:
                        r = job_walk(p, jobs, &j);
                        break;
                default:
                        r = job_exit(p, j.task);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the end of every task ---- */

/* The task of plan process pp to receive a listener fd: the first whose chain lets it (or, when
 * none does, the first, whose step then says why); PLAN_NONE when it has no task alive. */
static size_t receiver_of(Planner *p, size_t pp, size_t li, int fd) {
        const KProcess *kp = &p->km.processes[pp];

        for (size_t i = 0; p->o->check_syscalls && i < kp->n_threads; i++) {
                PlanStep st = STEP(.op = PLAN_OP_RECEIVE_LISTENER, .task = kp->threads[i], .listener = li, .fd = fd);
                if (p->km.tasks[kp->threads[i]].alive && plan_step_possible(p, &st))
                        return kp->threads[i];
        }
        return some_task_of(p, pp);
}

/* Holders that did not get their listener fd by install or inheritance receive it. */
static int emit_receives(Planner *p) {
        for (size_t li = 0; li < p->s->n_listeners; li++) {
                const Listener *l = p->s->listeners[li];

                for (size_t j = 0; j < l->n_holders; j++) {
                        uintptr_t x = (uintptr_t) hashmap_get(&p->process_by_pid, (uint64_t) l->holders[j].pid);
                        size_t pp, task;
                        int r;

                        if (!x)
                                return plan_refuse(p, "listener %" PRIu64 ": holder %d is not a process of the snapshot",
                                                   l->id, l->holders[j].pid);
                        pp = p->process_plan[x - 1];
                        if (kmodel_fd_listener(&p->km, pp, l->holders[j].fd) == p->sim.listener_object[li])
                                continue;
                        task = receiver_of(p, pp, li, l->holders[j].fd);
                        if (task == PLAN_NONE) /* a snapshot can say so; a process without a task holds no fd */
                                return plan_refuse(p, "listener %" PRIu64 ": %s holds fd %d but has no task left to "
                                                   "receive it", l->id, PROCESS_NAME(p, x - 1), l->holders[j].fd);
                        r = emit(p, STEP(.op = PLAN_OP_RECEIVE_LISTENER, .task = task, .listener = li,
                                         .fd = l->holders[j].fd));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int emit_task_end(Planner *p, size_t t, bool *exec_later) {
        const PlanTask *task = &p->plan->tasks[t];
        const PlanProcess *proc = &p->plan->processes[task->process];
        int r;

        if (task->kind == PLAN_TASK_RESTORED && thread_wants_nnp(proc->snapshot, task->snapshot) && !p->km.tasks[t].nnp) {
                r = emit(p, STEP(.op = PLAN_OP_SET_NO_NEW_PRIVS, .task = t));
                if (r < 0)
                        return r;
        }
        if (task->kind == PLAN_TASK_RESTORED && p->o->original_ids && !creds_in_place(p, t)) {
                if (p->km.tasks[t].ids_set && p->km.tasks[t].uid != 0)
                        return plan_refuse(p, "thread %d of process %d must become uid %u gid %u, but it was made by a "
                                           "task that became uid %u before a filter that stops changing it",
                                           task->snapshot->tid, proc->snapshot->pid, (unsigned) proc->snapshot->uid,
                                           (unsigned) proc->snapshot->gid, (unsigned) p->km.tasks[t].uid);
                r = emit(p, STEP(.op = PLAN_OP_SET_CREDS, .task = t));
                if (r < 0)
                        return r;
        }
        if (task->kind == PLAN_TASK_RESTORED && task->snapshot->mode == TASK_MODE_STRICT)
                return emit(p, STEP(.op = PLAN_OP_STRICT, .task = t));
        if (proc->exec != PLAN_NONE && proc->leader == t) {
                *exec_later = true;
                return 0;
        }
        return emit(p, STEP(.op = PLAN_OP_PARK, .task = t));
}

static int emit_ends(Planner *p) {
        int r = emit_receives(p);

        if (r < 0)
                return r;
        for (size_t t = 0; t < p->plan->n_tasks; t++) {
                bool exec_later = false;
                if (!p->km.tasks[t].alive)
                        continue;
                r = emit_task_end(p, t, &exec_later);
                if (r < 0)
                        return r;
        }
        for (size_t pp = 0; pp < p->plan->n_processes; pp++) {
                const PlanProcess *x = &p->plan->processes[pp];
                if (x->exec == PLAN_NONE)
                        continue;
                r = emit(p, STEP(.op = PLAN_OP_EXEC, .task = x->leader, .after_start = true));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- checks of the result ---- */

static int check_exec_options(Planner *p) {
        for (size_t k = 0; k < p->o->n_exec; k++) {
                uintptr_t x = (uintptr_t) hashmap_get(&p->process_by_pid, (uint64_t) p->o->exec[k].pid);
                const Process *sp;

                if (!x)
                        return plan_refuse(p, "exec: %d is not a process of the snapshot", p->o->exec[k].pid);
                if (!p->o->exec[k].argv || !p->o->exec[k].argv[0])
                        return plan_refuse(p, "exec: no command given for process %d", p->o->exec[k].pid);
                sp = p->s->processes[x - 1];
                if (snapshot_leader_thread(p, x - 1) == PLAN_NONE)
                        return plan_refuse(p, "exec: %s has no leader thread left to exec", PROCESS_NAME(p, x - 1));
                for (size_t j = 0; j < sp->n_threads; j++)
                        if (sp->threads[j].tid == sp->pid && sp->threads[j].mode == TASK_MODE_STRICT)
                                return plan_refuse(p, "exec: the leader of %s is in strict mode, which forbids execve()",
                                                   PROCESS_NAME(p, x - 1));
        }
        return 0;
}

/* In a new pid namespace the restore root is pid 1, and helpers take the tids above the snapshot's. */
static int check_pid_namespace(Planner *p) {
        pid_t max = 1;

        if (!p->o->pid_namespace)
                return 0;
        for (size_t i = 0; i < p->np; i++) {
                const Process *sp = p->s->processes[i];
                if (sp->pid == 1)
                        return plan_refuse(p, "pid_namespace: %s cannot be pid 1 there, which the restore root is",
                                           PROCESS_NAME(p, i));
                for (size_t j = 0; j < sp->n_threads; j++)
                        max = MAX(max, sp->threads[j].tid);
                max = MAX(max, sp->pid);
        }
        p->next_helper_ns_tid = max + 1;
        return 0;
}

static int add_nnp_added(Planner *p, pid_t tid) {
        Plan *plan = p->plan;

        if (GROW(plan->nnp_added, p->n_nnp_added_allocated, plan->n_nnp_added + 1) < 0)
                return -ENOMEM;
        plan->nnp_added[plan->n_nnp_added++] = tid;
        return 0;
}

/* Every restored thread (and helper leader, standing for its process's) that ends with
 * no_new_privs its original did not have. */
static int note_nnp_added(Planner *p) {
        Plan *plan = p->plan;
        int r = 0;

        for (size_t t = 0; r >= 0 && t < plan->n_tasks; t++) {
                const PlanTask *x = &plan->tasks[t];
                const PlanProcess *proc = &plan->processes[x->process];
                if (proc->kind != PLAN_PROCESS_RESTORED || !p->km.tasks[t].nnp)
                        continue;
                if (x->kind == PLAN_TASK_RESTORED && !task_no_new_privs(proc->snapshot, x->snapshot))
                        r = add_nnp_added(p, x->snapshot->tid);
                else if (x->kind == PLAN_TASK_HELPER && proc->leader == t && !proc->snapshot->no_new_privs)
                        r = add_nnp_added(p, proc->snapshot->pid);
        }
        return r;
}

/* The model's end state must be the snapshot: otherwise the planner has a bug, and a plan that
 * does not reproduce the snapshot is never handed out. */
static int check_result(Planner *p) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_(plan_mapping_done) PlanMapping map = {};
        _cleanup_strv_free_ char **diffs = NULL;
        PlanVerifyOptions vo = { .nnp_added = p->plan->nnp_added, .n_nnp_added = p->plan->n_nnp_added };
        bool ok;
        int r;

        r = plan_simulate(p->plan, &f, &map, p->error);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        r = plan_verify(p->s, f, &map, &vo, &ok, &diffs);
        if (r < 0)
                return r;
        if (!ok)
                return plan_refuse(p, "the plan does not reproduce the snapshot (a planner bug, please report it): %s",
                                   diffs[0]);
        return 0;
}

/* nnp_everywhere: every thread whose chain goes through the filter ends with no_new_privs. */
static int compute_nnp_everywhere(Planner *p) {
        _cleanup_free_ bool *someone_without = calloc(p->nf ?: 1, sizeof(bool));

        p->nnp_everywhere = calloc(p->nf ?: 1, sizeof(bool));
        if (!p->nnp_everywhere || !someone_without)
                return -ENOMEM;
        for (size_t i = 0; i < p->np; i++) {
                const Process *sp = p->s->processes[i];
                for (size_t j = 0; j < sp->n_threads; j++) {
                        bool want = thread_wants_nnp(sp, &sp->threads[j]);
                        for (const Filter *f = sp->threads[j].mode == TASK_MODE_FILTER ? sp->threads[j].filter : NULL; f;
                             f = f->parent) {
                                if (want)
                                        p->nnp_everywhere[f->index] = true;
                                else
                                        someone_without[f->index] = true;
                        }
                }
        }
        for (size_t j = 0; j < p->nf; j++)
                p->nnp_everywhere[j] = p->nnp_everywhere[j] && !someone_without[j];
        return 0;
}

static int alloc_emitter(Planner *p) {
        int r;

        p->thread_task = calloc(p->n_threads ?: 1, sizeof(size_t));
        p->process_plan = calloc(p->np + 1, sizeof(size_t));
        p->listener_of_filter = calloc(p->nf ?: 1, sizeof(size_t));
        if (!p->thread_task || !p->process_plan || !p->listener_of_filter)
                return -ENOMEM;
        for (size_t g = 0; g < p->n_threads; g++)
                p->thread_task[g] = PLAN_NONE;
        for (size_t j = 0; j < p->nf; j++)
                p->listener_of_filter[j] = PLAN_NONE;
        for (size_t li = 0; li < p->s->n_listeners; li++) {
                const Listener *l = p->s->listeners[li];
                const Filter *f = forest_find_filter(p->s, l->filter_id);
                if (f)
                        p->listener_of_filter[f->index] = li;
                for (size_t j = 0; j < l->n_holders; j++) {
                        r = hashmap_replace(&p->listener_by_holder, holder_key(l->holders[j].pid, l->holders[j].fd),
                                                (void *) (uintptr_t) (li + 1));
                        if (r < 0)
                                return r;
                }
        }
        r = compute_nnp_everywhere(p);
        if (r < 0)
                return r;
        return plan_sim_state_init(&p->sim, p->s);
}

static void job_stack_done(JobStack *s) {
        free(s->v);
}

/* The restore root: the model's first task, a subreaper, plan process 0 with its helper task. */
static int emit_root(Planner *p, size_t *ret_task) {
        size_t pp;
        int r;

        kmodel_init(&p->km, !p->o->unprivileged);
        r = kmodel_spawn_initial(&p->km, ret_task);
        if (r < 0)
                return r;
        r = kmodel_set_subreaper(&p->km, 0, true);
        if (r < 0)
                return r;
        r = new_process(p, PLAN_PROCESS_ROOT, NULL, PLAN_NONE, &pp);
        if (r < 0)
                return r;
        p->process_plan[p->root] = 0;
        return new_task(p, PLAN_TASK_HELPER, pp, NULL, ret_task);
}

int plan_emit(Planner *p) {
        _cleanup_(job_stack_done) JobStack jobs = {};
        size_t task;
        int r;

        r = check_exec_options(p);
        if (r < 0)
                return r;
        r = check_pid_namespace(p);
        if (r < 0)
                return r;
        r = alloc_emitter(p);
        if (r < 0)
                return r;
        r = emit_root(p, &task);
        if (r < 0)
                return r;
        r = push(&jobs, (Job) { .kind = JOB_START, .process = p->root, .task = task });
        if (r < 0)
                return r;
        r = run_jobs(p, &jobs);
        if (r < 0)
                return r;
        r = emit_ends(p);
        if (r < 0)
                return r;
        r = note_nnp_added(p);
        if (r < 0)
                return r;
        return check_result(p);
}
