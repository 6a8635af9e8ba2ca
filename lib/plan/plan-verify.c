/* plan-verify.c: is a restored tree the snapshot it was made from? Processes, threads and parents
 * through the mapping, the filter forest through forest_isomorphic(), listener holders */
#include <stdarg.h>

#include "plan/plan-verify.h"

#include "core/forest-iso.h"

void plan_mapping_done(PlanMapping *m) {
        free(m->processes);
        free(m->threads);
        *m = (PlanMapping) {};
}

int plan_mapping_add_process(PlanMapping *m, pid_t snapshot_pid, pid_t pid) {
        if (GROW(m->processes, m->n_processes_allocated, m->n_processes + 1) < 0)
                return -ENOMEM;
        m->processes[m->n_processes++] = (TaskPair) { .a = snapshot_pid, .b = pid };
        return 0;
}

int plan_mapping_add_thread(PlanMapping *m, pid_t snapshot_tid, pid_t tid) {
        if (GROW(m->threads, m->n_threads_allocated, m->n_threads + 1) < 0)
                return -ENOMEM;
        m->threads[m->n_threads++] = (TaskPair) { .a = snapshot_tid, .b = tid };
        return 0;
}

typedef struct Verifier {
        const Forest *s, *r;
        const PlanMapping *map;
        const PlanVerifyOptions *o;
        Hashmap pid_map;   /* snapshot pid -> restored pid */
        Hashmap tid_map;   /* snapshot tid -> restored tid */
        Hashmap kept;      /* restored pid -> 1: the processes the mapping names */
        char **diffs;
        size_t n_diffs, n_diffs_allocated;
        bool threads_differ;
} Verifier;

static void verifier_done(Verifier *v) {
        hashmap_deinit(&v->pid_map);
        hashmap_deinit(&v->tid_map);
        hashmap_deinit(&v->kept);
        strv_free(v->diffs);
}

_printf_(2, 3) static int differ(Verifier *v, const char *format, ...) {
        va_list ap;
        char *s;
        int r;

        if (GROW(v->diffs, v->n_diffs_allocated, v->n_diffs + 2) < 0)
                return -ENOMEM;
        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        v->diffs[v->n_diffs++] = s;
        v->diffs[v->n_diffs] = NULL;
        return 0;
}

static pid_t map_get(const Hashmap *h, pid_t x) {
        return (pid_t) (intptr_t) hashmap_get(h, (uint64_t) x);
}

static int build_maps(Verifier *v) {
        for (size_t i = 0; i < v->map->n_processes; i++) {
                const TaskPair *x = &v->map->processes[i];
                int r = hashmap_replace(&v->pid_map, (uint64_t) x->a, (void *) (intptr_t) x->b);
                if (r < 0)
                        return r;
                r = hashmap_replace(&v->kept, (uint64_t) x->b, (void *) (intptr_t) 1);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < v->map->n_threads; i++) {
                const TaskPair *x = &v->map->threads[i];
                int r = hashmap_replace(&v->tid_map, (uint64_t) x->a, (void *) (intptr_t) x->b);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Is pid (a process's leader) or tid (a thread) in the plan's nnp_added? */
static bool nnp_announced(const Verifier *v, pid_t pid) {
        for (size_t i = 0; v->o && i < v->o->n_nnp_added; i++)
                if (v->o->nnp_added[i] == pid)
                        return true;
        return false;
}

/* The restored parent the snapshot's parent link asks for: the mapped parent, or the restore root
 * for a process whose parent is not in the snapshot (0: not checked). */
static pid_t expected_ppid(const Verifier *v, const Process *sp) {
        if (forest_find_process(v->s, sp->ppid))
                return map_get(&v->pid_map, sp->ppid);
        return v->map->root_pid;
}

/* no_new_privs is per thread: a restored thread has exactly its original's (or more, where the
 * plan announced it: never less, never unannounced). Where the restored tree's reader does not know
 * a thread's own bit, the process's is compared above and /proc is the judge (restore-proc-check). */
static int verify_thread_nnp(Verifier *v, const Process *sp, const Task *st, const Process *rp, const Task *rt) {
        bool want = task_no_new_privs(sp, st), have = task_no_new_privs(rp, rt);

        if (rt->nnp == TASK_NNP_PROCESS || want == have || (have && nnp_announced(v, st->tid)))
                return 0;
        return differ(v, "thread %d of process %d (restored as %d): no_new_privs %s, expected %s", st->tid, sp->pid,
                      rt->tid, have ? "set" : "unset", want ? "set" : "unset");
}

static int verify_thread(Verifier *v, const Process *sp, const Task *st, const Process *rp) {
        pid_t tid = map_get(&v->tid_map, st->tid);
        Process *owner = NULL;
        const Task *rt = tid ? forest_find_task(v->r, tid, &owner) : NULL;

        if (!rt || owner != rp) {
                v->threads_differ = true;
                return tid ? differ(v, "thread %d of process %d (restored as %d) is not a thread of process %d", st->tid,
                                    sp->pid, tid, rp->pid)
                           : differ(v, "thread %d of process %d was not restored", st->tid, sp->pid);
        }
        if ((st->tid == sp->pid) != (rt->tid == rp->pid)) {
                v->threads_differ = true;
                return differ(v, "thread %d of process %d is %sthe leader, its restored thread %d is %s", st->tid,
                              sp->pid, st->tid == sp->pid ? "" : "not ", rt->tid, rt->tid == rp->pid ? "" : "not");
        }
        return verify_thread_nnp(v, sp, st, rp, rt);
}

static int verify_ids(Verifier *v, const Process *sp, const Process *rp) {
        PlanVerifyIds ids = v->o ? v->o->ids : PLAN_VERIFY_IDS_ANY;
        uid_t uid = ids == PLAN_VERIFY_IDS_ORIGINAL ? sp->uid : ids == PLAN_VERIFY_IDS_GIVEN ? v->o->uid : 0;
        gid_t gid = ids == PLAN_VERIFY_IDS_ORIGINAL ? sp->gid : ids == PLAN_VERIFY_IDS_GIVEN ? v->o->gid : 0;

        if (ids == PLAN_VERIFY_IDS_ANY || (rp->uid == uid && rp->gid == gid))
                return 0;
        return differ(v, "process %d (restored as %d) runs as uid %u gid %u, expected uid %u gid %u", sp->pid, rp->pid,
                      (unsigned) rp->uid, (unsigned) rp->gid, (unsigned) uid, (unsigned) gid);
}

/* A leader that exited shows its mode and number of filters in /proc/PID/status: the restored one
 * must show the same (where the restored side records it: a reader that does not know leaves it to
 * the /proc check). */
static int verify_exited_leader(Verifier *v, const Process *sp, const Process *rp) {
        const Task *a = &sp->exited_leader, *b = &rp->exited_leader;

        if (!sp->has_exited_leader || !rp->has_exited_leader)
                return 0;
        if (a->mode == b->mode && a->filter_count == b->filter_count)
                return 0;
        return differ(v, "process %d (restored as %d): its exited leader shows mode %s with %u filters, expected %s "
                      "with %u", sp->pid, rp->pid, task_mode_to_string(b->mode), b->filter_count,
                      task_mode_to_string(a->mode), a->filter_count);
}

static int verify_process_fields(Verifier *v, const Process *sp, const Process *rp) {
        pid_t ppid = expected_ppid(v, sp);
        int r;

        if (ppid && rp->ppid != ppid) {
                r = differ(v, "process %d (restored as %d): parent %d, expected %d", sp->pid, rp->pid, rp->ppid, ppid);
                if (r < 0)
                        return r;
        }
        if (strncmp(sp->comm, rp->comm, sizeof(sp->comm)) != 0) {
                r = differ(v, "process %d (restored as %d): comm \"%s\", expected \"%s\"", sp->pid, rp->pid, rp->comm,
                           sp->comm);
                if (r < 0)
                        return r;
        }
        if (sp->no_new_privs != rp->no_new_privs && !(rp->no_new_privs && nnp_announced(v, sp->pid))) {
                r = differ(v, "process %d (restored as %d): no_new_privs %s, expected %s", sp->pid, rp->pid,
                           rp->no_new_privs ? "set" : "unset", sp->no_new_privs ? "set" : "unset");
                if (r < 0)
                        return r;
        }
        r = verify_exited_leader(v, sp, rp);
        if (r < 0)
                return r;
        r = verify_ids(v, sp, rp);
        if (r < 0 || rp->n_threads == sp->n_threads)
                return r;
        v->threads_differ = true;
        return differ(v, "process %d (restored as %d) has %zu threads, expected %zu", sp->pid, rp->pid, rp->n_threads,
                      sp->n_threads);
}

static int verify_processes(Verifier *v) {
        for (size_t i = 0; i < v->s->n_processes; i++) {
                const Process *sp = v->s->processes[i];
                pid_t pid = map_get(&v->pid_map, sp->pid);
                const Process *rp = pid ? forest_find_process(v->r, pid) : NULL;
                int r;

                if (!rp) {
                        v->threads_differ = true;
                        r = pid ? differ(v, "process %d (restored as %d) is not in the restored tree", sp->pid, pid)
                                : differ(v, "process %d was not restored", sp->pid);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = verify_process_fields(v, sp, rp);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < sp->n_threads; j++) {
                        r = verify_thread(v, sp, &sp->threads[j], rp);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ---- the filter forest of the restored processes ---- */

static bool is_kept(const Verifier *v, pid_t pid) {
        return hashmap_get(&v->kept, (uint64_t) pid) != NULL;
}

static bool listener_has_kept_holder(const Verifier *v, const Listener *l) {
        for (size_t i = 0; i < l->n_holders; i++)
                if (is_kept(v, l->holders[i].pid))
                        return true;
        return false;
}

static void mark_chain(const Filter *f, bool *keep) {
        for (; f && !keep[f->index]; f = f->parent)
                keep[f->index] = true;
}

static int copy_filters(const Verifier *v, Forest *out) {
        const Forest *r = v->r;
        _cleanup_free_ bool *keep = calloc(r->n_filters ?: 1, sizeof(bool));

        if (!keep)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_processes; i++)
                for (size_t j = 0; is_kept(v, r->processes[i]->pid) && j < r->processes[i]->n_threads; j++)
                        mark_chain(r->processes[i]->threads[j].filter, keep);
        for (size_t i = 0; i < r->n_listeners; i++)
                if (listener_has_kept_holder(v, r->listeners[i]))
                        mark_chain(forest_find_filter(r, r->listeners[i]->filter_id), keep);
        for (size_t i = 0; i < r->n_filters; i++) {
                const Filter *f = r->filters[i];
                Filter *x;
                int k;

                if (!keep[i])
                        continue;
                k = forest_add_filter_with_digest(out, f->id, f->parent_id, f->insns, f->len, f->digest, &x);
                if (k < 0)
                        return k;
                x->log = f->log;
                x->wait_killable_recv = f->wait_killable_recv;
                x->has_listener = f->has_listener;
                x->identity = f->identity;
        }
        return 0;
}

static int copy_process(const Process *p, Forest *out) {
        Process *x;
        int r = forest_add_process(out, p->pid, &x);

        if (r < 0)
                return r;
        x->ppid = p->ppid;
        memcpy(x->comm, p->comm, sizeof(x->comm));
        for (size_t j = 0; j < p->n_threads; j++) {
                Task *t;
                r = process_add_thread(x, p->threads[j].tid, &t);
                if (r < 0)
                        return r;
                t->mode = p->threads[j].mode;
                t->filter_id = p->threads[j].filter_id;
        }
        return 0;
}

/* The restored forest with only the mapped processes, and the filters they and their listeners
 * reach: what forest_isomorphic() compares with the snapshot. */
static int restrict_restored(const Verifier *v, Forest **ret) {
        _cleanup_(forest_freep) Forest *out = forest_new();
        _cleanup_free_ char *error = NULL;
        int r;

        if (!out)
                return -ENOMEM;
        out->identity = v->r->identity;
        r = copy_filters(v, out);
        if (r < 0)
                return r;
        for (size_t i = 0; i < v->r->n_processes; i++) {
                if (!is_kept(v, v->r->processes[i]->pid))
                        continue;
                r = copy_process(v->r->processes[i], out);
                if (r < 0)
                        return r;
        }
        r = forest_link(out, &error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        return 0;
}

static int verify_forest(Verifier *v) {
        _cleanup_(forest_freep) Forest *rr = NULL;
        _cleanup_free_ char *why = NULL;
        int r;

        if (v->threads_differ)
                return 0; /* the thread mapping is broken: said already */
        r = restrict_restored(v, &rr);
        if (r < 0)
                return r;
        r = forest_isomorphic(v->s, rr, v->map->threads, v->map->n_threads, &why);
        if (r < 0)
                return r;
        return r ? 0 : differ(v, "filters: %s", why ?: "not isomorphic");
}

/* ---- listeners ---- */

static uint64_t holder_key(pid_t pid, int fd) {
        return (uint64_t) (uint32_t) pid << 32 | (uint32_t) fd;
}

/* Each snapshot listener's holders, mapped, must hold one restored listener, and no mapped
 * process may hold a restored listener fd the snapshot does not list. */
static int verify_listeners(Verifier *v) {
        Hashmap expected = {}; /* (restored pid, fd) -> snapshot listener index + 1 */
        _cleanup_free_ size_t *image = calloc(v->s->n_listeners ?: 1, sizeof(size_t)); /* restored listener + 1 */
        int r = image ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < v->s->n_listeners; i++)
                for (size_t j = 0; r >= 0 && j < v->s->listeners[i]->n_holders; j++) {
                        const ListenerHolder *h = &v->s->listeners[i]->holders[j];
                        pid_t pid = map_get(&v->pid_map, h->pid);
                        if (pid)
                                r = hashmap_replace(&expected, holder_key(pid, h->fd), (void *) (uintptr_t) (i + 1));
                }
        for (size_t i = 0; r >= 0 && i < v->r->n_listeners; i++)
                for (size_t j = 0; r >= 0 && j < v->r->listeners[i]->n_holders; j++) {
                        const ListenerHolder *h = &v->r->listeners[i]->holders[j];
                        uintptr_t x;

                        if (!is_kept(v, h->pid))
                                continue;
                        x = (uintptr_t) hashmap_remove(&expected, holder_key(h->pid, h->fd));
                        if (!x)
                                r = differ(v, "restored process %d holds a listener at fd %d that the snapshot does not list",
                                           h->pid, h->fd);
                        else if (image[x - 1] && image[x - 1] != i + 1)
                                r = differ(v, "the holders of listener %" PRIu64 " hold two different restored listeners",
                                           v->s->listeners[x - 1]->id);
                        else
                                image[x - 1] = i + 1;
                }
        for (size_t i = 0; r >= 0 && hashmap_size(&expected) > 0 && i < v->s->n_listeners; i++)
                for (size_t j = 0; r >= 0 && j < v->s->listeners[i]->n_holders; j++) {
                        const ListenerHolder *h = &v->s->listeners[i]->holders[j];
                        pid_t pid = map_get(&v->pid_map, h->pid);
                        if (pid && hashmap_get(&expected, holder_key(pid, h->fd)))
                                r = differ(v, "listener %" PRIu64 ": restored process %d (snapshot %d) holds nothing at fd %d",
                                           v->s->listeners[i]->id, pid, h->pid, h->fd);
                }
        hashmap_deinit(&expected);
        return r;
}

int plan_verify(const Forest *snapshot, const Forest *restored, const PlanMapping *map,
                const PlanVerifyOptions *options, bool *ret_verified, char ***ret_differences) {
        _cleanup_(verifier_done) Verifier v = { .s = snapshot, .r = restored, .map = map, .o = options };
        int r;

        if (!snapshot->linked || !restored->linked)
                return -EINVAL;
        r = build_maps(&v);
        if (r < 0)
                return r;
        r = verify_processes(&v);
        if (r < 0)
                return r;
        r = verify_forest(&v);
        if (r < 0)
                return r;
        r = verify_listeners(&v);
        if (r < 0)
                return r;
        if (!v.diffs) {
                v.diffs = calloc(1, sizeof(char *));
                if (!v.diffs)
                        return -ENOMEM;
        }
        *ret_verified = v.n_diffs == 0;
        *ret_differences = TAKE_PTR(v.diffs);
        return 0;
}
