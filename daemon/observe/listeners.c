/* listeners.c: seccomp listener fds of the forest's processes, grouped into listeners with
 * kcmp(KCMP_FILE), each tied to its filter (as the kernel said, or inferred) */
#include <linux/filter.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "observe/procinfo.h"
#include "observe/listeners.h"

/*
 * Grouping: two fds are the same listener iff they name the same struct file, which is what
 * kcmp(pid1, pid2, KCMP_FILE, fd1, fd2) == 0 says. That needs no copy of the fd, so pidfd_getfd()
 * is not used here: it would only be needed to act on a listener (e.g. to read its notifications).
 *
 * Filter of a listener:
 *   - given: the forest has the listener already, with its filter and holders. Holders found here
 *     that kcmp says are the same file join it; a given holder that kcmp says is a different file
 *     is noted.
 *   - inferred (ptrace, or an fd the backend did not report): a listener belongs to a filter in the
 *     chain of some task that installed it, and that filter can return SECCOMP_RET_USER_NOTIF (one of
 *     its RET instructions says so, or returns the accumulator). The installer usually keeps its
 *     copy of the fd, but so may a supervisor that is not under the filter at all. So the holders
 *     are tried in (pid, fd) order, and in the first holder whose threads' chains hold a candidate
 *     that no other listener has taken, the newest such candidate is chosen. That is a guess when a
 *     chain holds several notifying filters; the listener is marked IDENTITY_INFERRED. A group with
 *     no candidate at all (its installer is outside the forest) is left out, since a listener must
 *     point at a filter of the forest.
 */

typedef struct Group {
        Listener *listener; /* an existing listener, or NULL for a group found here */
        ListenerHolder *found; /* holders found in /proc, not yet in the listener */
        size_t n_found, n_found_allocated;
} Group;

typedef struct Groups {
        Group *groups;
        size_t n, allocated;
        ListenerNotes notes;
} Groups;

static void groups_done(Groups *g) {
        for (size_t i = 0; i < g->n; i++)
                free(g->groups[i].found);
        free(g->groups);
}

int kcmp_file(pid_t pid1, int fd1, pid_t pid2, int fd2) {
        long r = syscall(SYS_kcmp, pid1, pid2, KCMP_FILE, fd1, fd2);
        if (r < 0 && errno == EBADF) { /* a leader that exited has no table: its threads' */
                pid_t t1 = proc_files_task(pid1), t2 = proc_files_task(pid2);
                if (t1 != pid1 || t2 != pid2)
                        r = syscall(SYS_kcmp, t1, t2, KCMP_FILE, fd1, fd2);
        }
        return r < 0 ? -errno : (int) r;
}

/* 1 if (pid, fd) is the same file as the group's, 0 if not. Holders that are gone (kcmp fails)
 * are skipped: another holder may still answer. */
static int group_matches(const Group *g, pid_t pid, int fd) {
        const ListenerHolder *lists[2] = { g->listener ? g->listener->holders : NULL, g->found };
        size_t sizes[2] = { g->listener ? g->listener->n_holders : 0, g->n_found };

        for (size_t l = 0; l < 2; l++)
                for (size_t i = 0; i < sizes[l]; i++) {
                        int r = kcmp_file(lists[l][i].pid, lists[l][i].fd, pid, fd);
                        if (r >= 0)
                                return r == 0;
                }
        return 0;
}

static int group_add_found(Group *g, pid_t pid, int fd) {
        if (GROW(g->found, g->n_found_allocated, g->n_found + 1) < 0)
                return -ENOMEM;
        g->found[g->n_found++] = (ListenerHolder) { .pid = pid, .fd = fd };
        return 0;
}

static Listener *find_holder(const Forest *f, pid_t pid, int fd, size_t *ret_index) {
        for (size_t i = 0; i < f->n_listeners; i++)
                for (size_t j = 0; j < f->listeners[i]->n_holders; j++)
                        if (f->listeners[i]->holders[j].pid == pid && f->listeners[i]->holders[j].fd == fd) {
                                *ret_index = j;
                                return f->listeners[i];
                        }
        return NULL;
}

/* A holder the forest gave: check that it is the same file as the listener's first holder. */
static void verify_holder(Groups *gs, const Listener *l, size_t index) {
        const ListenerHolder *h = &l->holders[index], *first = &l->holders[0];
        if (index == 0 || kcmp_file(first->pid, first->fd, h->pid, h->fd) <= 0)
                return;
        if (gs->notes.mismatched++ == 0)
                gs->notes.mismatched_listener = l->id;
}

static int groups_add_fd(Groups *gs, const Forest *f, pid_t pid, int fd) {
        size_t index;
        const Listener *known = find_holder(f, pid, fd, &index);
        if (known) {
                verify_holder(gs, known, index);
                return 0;
        }

        for (size_t i = 0; i < gs->n; i++)
                if (group_matches(&gs->groups[i], pid, fd))
                        return group_add_found(&gs->groups[i], pid, fd);

        if (GROW(gs->groups, gs->allocated, gs->n + 1) < 0)
                return -ENOMEM;
        gs->groups[gs->n++] = (Group) {};
        return group_add_found(&gs->groups[gs->n - 1], pid, fd);
}

static int groups_scan_processes(Groups *gs, const Forest *f, ScanError *e) {
        for (size_t i = 0; i < f->n_processes; i++) {
                _cleanup_free_ int *fds = NULL;
                size_t n = 0;
                pid_t pid = f->processes[i]->pid;
                int r = proc_list_listener_fds(pid, &fds, &n);
                if (r == -ESRCH)
                        continue; /* exited since the scan */
                if (r == -EACCES || r == -EPERM) {
                        /* an unprivileged scan (sectreed scan as a user): not its to see */
                        if (gs->notes.unlisted++ == 0)
                                gs->notes.unlisted_pid = pid;
                        continue;
                }
                if (r < 0)
                        return scan_error_set(e, LOG_LEVEL_ERR, r, "Failed to list the fds of process %d", (int) pid);
                for (size_t j = 0; j < n; j++) {
                        r = groups_add_fd(gs, f, pid, fds[j]);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static bool filter_can_notify(const Filter *flt) {
        for (size_t i = 0; i < flt->len; i++) {
                const struct sock_filter *insn = &flt->insns[i];
                if (BPF_CLASS(insn->code) != BPF_RET)
                        continue;
                if (BPF_RVAL(insn->code) == BPF_A)
                        return true; /* returns what it computed: may be anything */
                if ((insn->k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF)
                        return true;
        }
        return false;
}

static bool filter_is_candidate(const Filter *flt) {
        if (flt->listener_id != 0)
                return false; /* a filter has at most one listener */
        if (flt->has_listener)
                return true;
        return flt->identity == IDENTITY_INFERRED && filter_can_notify(flt);
}

/* The newest candidate in the chains of p's threads. */
static Filter *process_newest_candidate(const Process *p) {
        Filter *best = NULL;

        for (size_t i = 0; i < p->n_threads; i++)
                for (Filter *flt = p->threads[i].filter; flt; flt = flt->parent)
                        if (filter_is_candidate(flt)) {
                                if (!best || flt->depth > best->depth)
                                        best = flt;
                                break;
                        }
        return best;
}

static int cmp_holder(const void *a, const void *b) {
        const ListenerHolder *x = a, *y = b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return (x->fd > y->fd) - (x->fd < y->fd);
}

static Filter *group_infer_filter(const Forest *f, Group *g) {
        qsort(g->found, g->n_found, sizeof(ListenerHolder), cmp_holder);
        for (size_t i = 0; i < g->n_found; i++) {
                const Process *p = forest_find_process(f, g->found[i].pid);
                Filter *flt = p ? process_newest_candidate(p) : NULL;
                if (flt)
                        return flt;
        }
        return NULL;
}

static int listener_add_found(Listener *l, const Group *g) {
        for (size_t i = 0; i < g->n_found; i++) {
                int r = listener_add_holder(l, g->found[i].pid, g->found[i].fd);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

static int group_commit(Forest *f, Group *g, uint64_t *last_id, ListenerNotes *notes) {
        if (g->listener)
                return listener_add_found(g->listener, g);

        Filter *flt = group_infer_filter(f, g);
        if (!flt) {
                if (notes->left_out++ == 0) {
                        notes->left_out_pid = g->found[0].pid;
                        notes->left_out_fd = g->found[0].fd;
                }
                return 0;
        }

        Listener *l;
        int r = forest_add_listener(f, ++*last_id, flt->id, &l);
        if (r < 0)
                return r;
        l->identity = IDENTITY_INFERRED;
        flt->listener_id = l->id; /* taken: the next group looks further */
        flt->has_listener = true;
        return listener_add_found(l, g);
}

static int link_or_keep(Forest *f, ScanError *e) {
        _cleanup_free_ char *error = NULL;
        int r = forest_link(f, &error);
        if (r < 0)
                scan_error_set(e, LOG_LEVEL_ERR, r, "Inconsistent forest: %s", error ? error : "?");
        return r;
}

void listener_notes_log(const ListenerNotes *n) {
        if (n->unlisted > 0)
                log_debug("Cannot list the fds of %zu process(es), process %d first: their listeners are left out.",
                          n->unlisted, (int) n->unlisted_pid);
        if (n->left_out > 0)
                log_debug("%zu listener(s) left out, fd %d of process %d first: no filter of the forest can be theirs.",
                          n->left_out, n->left_out_fd, (int) n->left_out_pid);
        if (n->mismatched > 0)
                log_warning("%zu holder(s) of listeners are not the file of the listener's first holder, of listener %" PRIu64
                            " first.",
                            n->mismatched, n->mismatched_listener);
}

int listeners_collect(Forest *f, ScanError *e, ListenerNotes *notes) {
        Groups gs = {};
        uint64_t last_id = 0;
        int r;

        /* Chains are walked through Filter.parent, and Filter.listener_id tells which filters
         * are taken: both are set by forest_link(). */
        if (!f->linked) {
                r = link_or_keep(f, e);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < f->n_listeners; i++) {
                if (GROW(gs.groups, gs.allocated, gs.n + 1) < 0) {
                        groups_done(&gs);
                        return scan_error_set(e, LOG_LEVEL_ERR, -ENOMEM, "Failed to collect seccomp listeners");
                }
                gs.groups[gs.n++] = (Group) { .listener = f->listeners[i] };
                if (f->listeners[i]->id > last_id)
                        last_id = f->listeners[i]->id;
        }

        r = groups_scan_processes(&gs, f, e);
        for (size_t i = 0; r >= 0 && i < gs.n; i++)
                r = group_commit(f, &gs.groups[i], &last_id, &gs.notes);
        if (notes)
                *notes = gs.notes;
        groups_done(&gs);
        if (r < 0) /* kept already where the fds could not be listed */
                return scan_error_set(e, LOG_LEVEL_ERR, r, "Failed to collect seccomp listeners");

        return link_or_keep(f, e);
}
