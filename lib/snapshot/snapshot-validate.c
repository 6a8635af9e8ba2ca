/* snapshot-validate.c: the one validator every imported snapshot goes through */
#include "snapshot/snapshot-validate.h"

#include "snapshot/snapshot-units.h"

#include <stdarg.h>

#define NONE SIZE_MAX

int snapshot_error(char **error, const char *format, ...) {
        if (!error)
                return -EINVAL;
        va_list ap;
        va_start(ap, format);
        int r = error_messagev(error, format, ap);
        va_end(ap);
        return r;
}

static bool is_identifier(const char *s) {
        size_t n = 0;
        for (; s && s[n]; n++)
                if (!(s[n] == '_' || (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
                      (n > 0 && s[n] >= '0' && s[n] <= '9')))
                        return false;
        return n > 0 && n <= 32;
}

const char *snapshot_error_name(const char *s, char buf[static SNAPSHOT_ERROR_NAME_MAX]) {
        if (!is_identifier(s))
                return "(a name that is not an identifier)";
        snprintf(buf, SNAPSHOT_ERROR_NAME_MAX, "\"%s\"", s);
        return buf;
}

/* Position maps: id (or pid, tid) -> position + 1, so that a missing key reads as NONE. */
static int index_put(Hashmap *h, uint64_t key, size_t index) {
        return hashmap_put(h, key, (void *) (uintptr_t) (index + 1));
}

static size_t index_get(const Hashmap *h, uint64_t key) {
        uintptr_t v = (uintptr_t) hashmap_get(h, key);
        return v ? (size_t) v - 1 : NONE;
}

typedef struct Indexes {
        Hashmap filters;   /* id -> position in f->filters */
        Hashmap processes; /* pid -> position in f->processes */
        Hashmap listeners; /* id -> position in f->listeners */
} Indexes;

static void indexes_deinit(Indexes *x) {
        hashmap_deinit(&x->filters);
        hashmap_deinit(&x->processes);
        hashmap_deinit(&x->listeners);
}

/* Readers reject duplicates while adding; a forest built through the API cannot hold them either,
 * but say so rather than trust it. */
static int indexes_build(const Forest *f, Indexes *x, char **error) {
        int r;
        if ((r = hashmap_reserve(&x->filters, f->n_filters)) < 0 ||
            (r = hashmap_reserve(&x->processes, f->n_processes)) < 0 ||
            (r = hashmap_reserve(&x->listeners, f->n_listeners)) < 0)
                return r;
        for (size_t i = 0; i < f->n_filters; i++)
                if ((r = index_put(&x->filters, f->filters[i]->id, i)) < 0)
                        return r == -EEXIST ? snapshot_error(error, "filters[%zu] (id %" PRIu64 "): duplicate id", i,
                                                             f->filters[i]->id) : r;
        for (size_t i = 0; i < f->n_processes; i++)
                if ((r = index_put(&x->processes, (uint64_t) f->processes[i]->pid, i)) < 0)
                        return r == -EEXIST ? snapshot_error(error, "processes[%zu] (pid %d): duplicate pid", i,
                                                             f->processes[i]->pid) : r;
        for (size_t i = 0; i < f->n_listeners; i++)
                if ((r = index_put(&x->listeners, f->listeners[i]->id, i)) < 0)
                        return r == -EEXIST ? snapshot_error(error, "listeners[%zu] (id %" PRIu64 "): duplicate id", i,
                                                             f->listeners[i]->id) : r;
        return 0;
}

static size_t count_tasks(const Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                n += f->processes[i]->n_threads;
        return n;
}

static size_t count_holders(const Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_listeners; i++)
                n += f->listeners[i]->n_holders;
        return n;
}

static int validate_counts(const Forest *f, char **error) {
        const struct {
                const char *what;
                size_t n, max;
        } counts[] = {
                { "filters", f->n_filters, SNAPSHOT_MAX_FILTERS },
                { "processes", f->n_processes, SNAPSHOT_MAX_PROCESSES },
                { "threads (all processes)", count_tasks(f), SNAPSHOT_MAX_TASKS },
                { "listeners", f->n_listeners, SNAPSHOT_MAX_LISTENERS },
                { "holders (all listeners)", count_holders(f), SNAPSHOT_MAX_HOLDERS },
        };
        for (size_t i = 0; i < ELEMENTSOF(counts); i++)
                if (counts[i].n > counts[i].max)
                        return snapshot_error(error, "%s: %zu, more than the limit of %zu", counts[i].what, counts[i].n,
                                              counts[i].max);
        return 0;
}

typedef enum StringProblem {
        STRING_OK,
        STRING_TOO_LONG,
        STRING_NOT_UTF8,
} StringProblem;

static StringProblem string_problem(const char *s, size_t max) {
        if (s && strlen(s) > max)
                return STRING_TOO_LONG;
        if (s && !snapshot_utf8_valid(s))
                return STRING_NOT_UTF8;
        return STRING_OK;
}

static int string_error(const char *where, const char *s, size_t max, StringProblem problem, char **error) {
        if (problem == STRING_TOO_LONG)
                return snapshot_error(error, "%s: %zu bytes, more than the limit of %zu", where, strlen(s), max);
        return snapshot_error(error, "%s: not valid UTF-8", where);
}

static int validate_string(const char *where, const char *s, size_t max, char **error) {
        StringProblem problem = string_problem(s, max);
        return problem != STRING_OK ? string_error(where, s, max, problem, error) : 0;
}

static int validate_source(const Forest *f, char **error) {
        char created[SNAPSHOT_TIME_MAX];
        int r;

        if (snapshot_format_time(f->created_at_usec, created, sizeof(created)) < 0)
                return snapshot_error(error, "created_at: %" PRIu64 " µs is not a time between 1970 and 9999",
                                      f->created_at_usec);
        if (backend_from_string(f->backend) < 0)
                return snapshot_error(error, "source.backend: expected one of bpf, ptrace");
        if (!identity_kind_to_string(f->identity))
                return snapshot_error(error, "source.identity: expected one of exact, inferred");
        if (f->root < 0 || f->root > SNAPSHOT_MAX_PID)
                return snapshot_error(error, "root: %d is not a pid (0..%d)", f->root, SNAPSHOT_MAX_PID);
        if ((r = validate_string("host.kernel", f->host.kernel, SNAPSHOT_MAX_HOST_STRING, error)) < 0 ||
            (r = validate_string("host.arch", f->host.arch, SNAPSHOT_MAX_HOST_STRING, error)) < 0 ||
            (r = validate_string("host.hostname", f->host.hostname, SNAPSHOT_MAX_HOST_STRING, error)) < 0)
                return r;
        return 0;
}

/* Which backend can take a snapshot with which consistency: one iterator pass is the bpf
 * backend's, a frozen subtree the ptrace backend's. */
static const Backend consistency_backend[_SNAPSHOT_CONSISTENCY_MAX] = {
        [SNAPSHOT_CONSISTENCY_NONE] = _BACKEND_INVALID,
        [SNAPSHOT_CONSISTENCY_ITERATOR] = BACKEND_BPF,
        [SNAPSHOT_CONSISTENCY_FROZEN] = BACKEND_PTRACE,
};

static int validate_snapshot_info(const Forest *f, char **error) {
        const SnapshotInfo *i = &f->snapshot;
        const char *consistency = snapshot_consistency_to_string(i->consistency);
        int r;

        if ((r = validate_string("snapshot.name", i->name, SNAPSHOT_MAX_NAME, error)) < 0)
                return r;
        if (i->taken_by_uid > SNAPSHOT_MAX_UID)
                return snapshot_error(error, "snapshot.taken_by_uid: %" PRIu32 " is not a uid (0..%" PRIu32 ")",
                                      i->taken_by_uid, (uint32_t) SNAPSHOT_MAX_UID);
        if (!consistency)
                return snapshot_error(error, "snapshot.consistency: expected one of none, iterator, frozen");
        Backend want = consistency_backend[i->consistency];
        if (want >= 0 && backend_from_string(f->backend) != want)
                return snapshot_error(error, "snapshot.consistency: %s is only for source.backend %s, not %s", consistency,
                                      backend_to_string(want), f->backend);
        return 0;
}

/* Filters */

static int validate_program(const Filter *flt, size_t i, char **error) {
        _cleanup_free_ char *why = NULL;
        uint8_t digest[PROG_DIGEST_SIZE];

        if (flt->len > SNAPSHOT_MAX_FILTER_INSNS)
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): %zu instructions, more than the limit of %d",
                                      i, flt->id, flt->len, SNAPSHOT_MAX_FILTER_INSNS);
        int r = prog_validate(flt->insns, flt->len, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): program: %s", i, flt->id,
                                      why ? why : "invalid");
        prog_digest(flt->insns, flt->len, digest);
        if (memcmp(digest, flt->digest, sizeof(digest)) != 0)
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): the digest does not match the program", i,
                                      flt->id);
        if (!identity_kind_to_string(flt->identity))
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 ").identity: expected one of exact, inferred", i,
                                      flt->id);
        return 0;
}

static size_t parent_index(const Forest *f, const Indexes *x, size_t i) {
        return f->filters[i]->parent_id ? index_get(&x->filters, f->filters[i]->parent_id) : NONE;
}

static int validate_parents_exist(const Forest *f, const Indexes *x, char **error) {
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *flt = f->filters[i];
                if (flt->parent_id && index_get(&x->filters, flt->parent_id) == NONE)
                        return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): parent %" PRIu64 " does not exist", i,
                                              flt->id, flt->parent_id);
        }
        return 0;
}

/* Walk up from every filter, marking the walk in progress (1) and then done (2): meeting a filter
 * in progress is a cycle. Every parent exists by now. */
static int validate_no_cycles(const Forest *f, const Indexes *x, char **error) {
        _cleanup_free_ uint8_t *state = calloc(f->n_filters + 1, 1);
        if (!state)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_filters; i++) {
                size_t j = i;
                while (j != NONE && state[j] == 0) {
                        state[j] = 1;
                        j = parent_index(f, x, j);
                }
                if (j != NONE && state[j] == 1)
                        return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): parent links form a cycle", j,
                                              f->filters[j]->id);
                for (j = i; j != NONE && state[j] == 1; j = parent_index(f, x, j))
                        state[j] = 2;
        }
        return 0;
}

/* Parents come first; then every chain fits the kernel's budget: installing a filter of len
 * instructions on a chain succeeds while len + sum(len + 4) over the chain <= 32768. */
static int validate_order_and_budget(const Forest *f, const Indexes *x, char **error) {
        _cleanup_free_ uint64_t *cost = malloc((f->n_filters + 1) * sizeof(uint64_t));
        if (!cost)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *flt = f->filters[i];
                size_t p = parent_index(f, x, i);
                if (p != NONE && p > i)
                        return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): parent %" PRIu64 " is listed after it "
                                              "(filters[%zu]); filters must list parents first", i, flt->id,
                                              flt->parent_id, p);
                cost[i] = flt->len + SNAPSHOT_PATH_INSN_PENALTY + (p != NONE ? cost[p] : 0);
                if (cost[i] - SNAPSHOT_PATH_INSN_PENALTY > SNAPSHOT_MAX_PATH_INSNS)
                        return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): its chain counts %" PRIu64 " instructions "
                                              "(len + 4 for each filter below it), more than the kernel's %d", i, flt->id,
                                              cost[i] - SNAPSHOT_PATH_INSN_PENALTY, SNAPSHOT_MAX_PATH_INSNS);
        }
        return 0;
}

static int validate_filter_listener(const Forest *f, const Indexes *x, size_t i, char **error) {
        const Filter *flt = f->filters[i];
        if (flt->listener_id == 0)
                return 0;
        size_t j = index_get(&x->listeners, flt->listener_id);
        if (j == NONE)
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): listener %" PRIu64 " does not exist", i,
                                      flt->id, flt->listener_id);
        if (f->listeners[j]->filter_id != flt->id)
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): listener %" PRIu64 " belongs to filter %" PRIu64,
                                      i, flt->id, flt->listener_id, f->listeners[j]->filter_id);
        return 0;
}

static int validate_filters(const Forest *f, const Indexes *x, char **error) {
        int r;
        for (size_t i = 0; i < f->n_filters; i++)
                if ((r = validate_program(f->filters[i], i, error)) < 0)
                        return r;
        if ((r = validate_parents_exist(f, x, error)) < 0 || (r = validate_no_cycles(f, x, error)) < 0 ||
            (r = validate_order_and_budget(f, x, error)) < 0)
                return r;
        for (size_t i = 0; i < f->n_filters; i++)
                if ((r = validate_filter_listener(f, x, i, error)) < 0)
                        return r;
        return 0;
}

/* Processes and threads */

static size_t argv_bytes(char * const *argv) {
        size_t n = 0;
        for (size_t i = 0; argv && argv[i]; i++)
                n += strlen(argv[i]) + 1;
        return n;
}

/* A string of processes[i]: where is said only when it is wrong (10,000 processes would format
 * tens of thousands of names for nothing). */
static int validate_process_string(const Process *p, size_t i, const char *field, ssize_t j, const char *s,
                                   size_t max, char **error) {
        StringProblem problem = string_problem(s, max);
        char where[64];

        if (problem == STRING_OK)
                return 0;
        if (j >= 0)
                snprintf(where, sizeof(where), "processes[%zu] (pid %d).%s[%zd]", i, p->pid, field, j);
        else
                snprintf(where, sizeof(where), "processes[%zu] (pid %d).%s", i, p->pid, field);
        return string_error(where, s, max, problem, error);
}

static int validate_process_units(const Process *p, size_t i, char **error) {
        const char *const names[] = { p->unit, p->user_unit, p->machine };
        static const char *const keys[] = { "unit", "user_unit", "machine" };
        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                if (!snapshot_unit_name_valid(names[k]))
                        return snapshot_error(error, "processes[%zu] (pid %d).units.%s: not a name (1 to %d bytes of "
                                              "UTF-8 without control characters)", i, p->pid, keys[k], SNAPSHOT_MAX_UNIT);
        return 0;
}

static int validate_process_fields(const Process *p, size_t i, char **error) {
        int r;

        if (p->pid <= 0 || p->pid > SNAPSHOT_MAX_PID)
                return snapshot_error(error, "processes[%zu].pid: %d is not a pid (1..%d)", i, p->pid, SNAPSHOT_MAX_PID);
        if (p->ppid < 0 || p->ppid > SNAPSHOT_MAX_PID)
                return snapshot_error(error, "processes[%zu] (pid %d).ppid: %d is not a pid (0..%d)", i, p->pid, p->ppid,
                                      SNAPSHOT_MAX_PID);
        if (strnlen(p->comm, sizeof(p->comm)) >= sizeof(p->comm))
                return snapshot_error(error, "processes[%zu] (pid %d).comm: not terminated", i, p->pid);
        if ((r = validate_process_string(p, i, "comm", -1, p->comm, sizeof(p->comm) - 1, error)) < 0 ||
            (r = validate_process_string(p, i, "exe", -1, p->exe, SNAPSHOT_MAX_PATH, error)) < 0)
                return r;
        if (argv_bytes(p->argv) > SNAPSHOT_MAX_ARGV_BYTES)
                return snapshot_error(error, "processes[%zu] (pid %d).argv: %zu bytes, more than the limit of %u", i,
                                      p->pid, argv_bytes(p->argv), SNAPSHOT_MAX_ARGV_BYTES);
        for (size_t j = 0; p->argv && p->argv[j]; j++)
                if ((r = validate_process_string(p, i, "argv", (ssize_t) j, p->argv[j], SIZE_MAX, error)) < 0)
                        return r;
        return validate_process_units(p, i, error);
}

static int validate_thread(const Forest *f, const Indexes *x, const Process *p, size_t i, size_t j, char **error) {
        const Task *t = &p->threads[j];
        const char *mode = task_mode_to_string(t->mode);

        if (t->tid <= 0 || t->tid > SNAPSHOT_MAX_PID)
                return snapshot_error(error, "processes[%zu].threads[%zu].tid: %d is not a tid (1..%d)", i, j, t->tid,
                                      SNAPSHOT_MAX_PID);
        if (!mode)
                return snapshot_error(error, "processes[%zu].threads[%zu].mode: expected one of disabled, strict, filter",
                                      i, j);
        if (t->mode == TASK_MODE_FILTER && t->filter_id == 0)
                return snapshot_error(error, "processes[%zu].threads[%zu] (tid %d): mode filter without a filter", i, j,
                                      t->tid);
        if (t->mode != TASK_MODE_FILTER && t->filter_id != 0)
                return snapshot_error(error, "processes[%zu].threads[%zu] (tid %d): mode %s with filter %" PRIu64
                                      " (only mode filter has one)", i, j, t->tid, mode, t->filter_id);
        if (t->filter_id && index_get(&x->filters, t->filter_id) == NONE)
                return snapshot_error(error, "processes[%zu].threads[%zu] (tid %d): filter %" PRIu64 " does not exist", i,
                                      j, t->tid, t->filter_id);
        return 0;
}

/* processes[i].exited_leader: a mode and a number of filters, for a leader that is no thread. */
static int validate_exited_leader(const Process *p, size_t i, char **error) {
        const Task *t = &p->exited_leader;

        if (!p->has_exited_leader)
                return 0;
        if (process_find_thread(p, p->pid))
                return snapshot_error(error, "processes[%zu].exited_leader: its leader %d is one of its threads", i, p->pid);
        if (!task_mode_to_string(t->mode))
                return snapshot_error(error, "processes[%zu].exited_leader.mode: expected one of disabled, strict, filter", i);
        if ((t->mode == TASK_MODE_FILTER) != (t->filter_count > 0))
                return snapshot_error(error, "processes[%zu].exited_leader: mode %s with %u filters", i,
                                      task_mode_to_string(t->mode), t->filter_count);
        return 0;
}

/* tid -> (process position << 32 | thread position) + 1 */
static int validate_tids_unique(const Forest *f, char **error) {
        Hashmap seen = {};
        int r = hashmap_reserve(&seen, count_tasks(f));
        for (size_t i = 0; r == 0 && i < f->n_processes; i++)
                for (size_t j = 0; r == 0 && j < f->processes[i]->n_threads; j++) {
                        pid_t tid = f->processes[i]->threads[j].tid;
                        uint64_t where = ((uint64_t) i << 32 | j) + 1;
                        r = hashmap_put(&seen, (uint64_t) tid, (void *) (uintptr_t) where);
                        if (r == -EEXIST) {
                                uint64_t other = (uintptr_t) hashmap_get(&seen, (uint64_t) tid) - 1;
                                r = snapshot_error(error, "processes[%zu].threads[%zu] (tid %d): tid already in "
                                                   "processes[%" PRIu64 "].threads[%" PRIu64 "]", i, j, tid,
                                                   other >> 32, other & UINT32_MAX);
                        }
                }
        hashmap_deinit(&seen);
        return r;
}

static size_t ppid_index(const Forest *f, const Indexes *x, size_t i) {
        const Process *p = f->processes[i];
        return p->ppid > 0 ? index_get(&x->processes, (uint64_t) p->ppid) : NONE;
}

/* Real parents cannot form a cycle; a pid that is its own parent is one too. */
static int validate_ppid_cycles(const Forest *f, const Indexes *x, char **error) {
        _cleanup_free_ uint8_t *state = calloc(f->n_processes + 1, 1);
        if (!state)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_processes; i++) {
                size_t j = i;
                while (j != NONE && state[j] == 0) {
                        state[j] = 1;
                        j = ppid_index(f, x, j);
                }
                if (j != NONE && state[j] == 1)
                        return snapshot_error(error, "processes[%zu] (pid %d): ppid links form a cycle", j,
                                              f->processes[j]->pid);
                for (j = i; j != NONE && state[j] == 1; j = ppid_index(f, x, j))
                        state[j] = 2;
        }
        return 0;
}

/* The processes that hold a listener fd: position -> true. */
static int holder_processes(const Forest *f, const Indexes *x, bool **ret) {
        bool *holder = calloc(f->n_processes + 1, sizeof(bool));
        if (!holder)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_listeners; i++)
                for (size_t j = 0; j < f->listeners[i]->n_holders; j++) {
                        size_t k = index_get(&x->processes, (uint64_t) f->listeners[i]->holders[j].pid);
                        if (k != NONE)
                                holder[k] = true;
                }
        *ret = holder;
        return 0;
}

/* A subtree snapshot holds root, the processes whose ancestry leads to it, and the processes
 * outside it that hold a listener of the snapshot (restoring the listener needs them). No cycles
 * by now; every process is walked once (state[] remembers the walks, 1 in the subtree, -1 out:
 * a chain of 100,000 processes is fine). */
static int validate_subtree(const Forest *f, const Indexes *x, char **error) {
        if (f->root == 0)
                return 0;
        size_t root = index_get(&x->processes, (uint64_t) f->root);
        if (root == NONE)
                return snapshot_error(error, "root: process %d is not in the snapshot", f->root);
        _cleanup_free_ int8_t *state = calloc(f->n_processes + 1, sizeof(int8_t));
        _cleanup_free_ bool *holder = NULL;
        if (!state)
                return -ENOMEM;
        int r = holder_processes(f, x, &holder);
        if (r < 0)
                return r;
        state[root] = 1;
        for (size_t i = 0; i < f->n_processes; i++) {
                size_t j = i;
                while (state[j] == 0 && ppid_index(f, x, j) != NONE)
                        j = ppid_index(f, x, j);
                int8_t verdict = state[j] != 0 ? state[j] : -1;
                for (j = i; j != NONE && state[j] == 0; j = ppid_index(f, x, j))
                        state[j] = verdict;
                if (state[i] < 0 && !holder[i])
                        return snapshot_error(error, "processes[%zu] (pid %d): not in the subtree of root %d (ppid %d) and "
                                              "not a listener holder", i, f->processes[i]->pid, f->root,
                                              f->processes[i]->ppid);
        }
        return 0;
}

static int validate_processes(const Forest *f, const Indexes *x, char **error) {
        int r;
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if ((r = validate_process_fields(p, i, error)) < 0)
                        return r;
                for (size_t j = 0; j < p->n_threads; j++)
                        if ((r = validate_thread(f, x, p, i, j, error)) < 0)
                                return r;
                if ((r = validate_exited_leader(p, i, error)) < 0)
                        return r;
        }
        if ((r = validate_tids_unique(f, error)) < 0 || (r = validate_ppid_cycles(f, x, error)) < 0)
                return r;
        return validate_subtree(f, x, error);
}

/* Listeners */

static int validate_listener(const Forest *f, const Indexes *x, size_t i, char **error) {
        const Listener *l = f->listeners[i];
        if (l->id == 0)
                return snapshot_error(error, "listeners[%zu].id: 0 is not an id", i);
        size_t k = index_get(&x->filters, l->filter_id);
        if (k == NONE)
                return snapshot_error(error, "listeners[%zu] (id %" PRIu64 "): filter %" PRIu64 " does not exist", i, l->id,
                                      l->filter_id);
        if (f->filters[k]->listener_id != l->id)
                return snapshot_error(error, "listeners[%zu] (id %" PRIu64 "): filter %" PRIu64 " does not name it as its "
                                      "listener", i, l->id, l->filter_id);
        for (size_t j = 0; j < l->n_holders; j++) {
                const ListenerHolder *h = &l->holders[j];
                if (h->fd < 0)
                        return snapshot_error(error, "listeners[%zu].holders[%zu].fd: %d is not an fd", i, j, h->fd);
                if (h->pid <= 0 || index_get(&x->processes, (uint64_t) h->pid) == NONE)
                        return snapshot_error(error, "listeners[%zu].holders[%zu]: pid %d is not a process of the snapshot",
                                              i, j, h->pid);
        }
        return 0;
}

int snapshot_validate(const Forest *f, char **error) {
        _cleanup_(indexes_deinit) Indexes x = {};
        int r;

        if (error)
                *error = NULL;
        if ((r = validate_counts(f, error)) < 0 || (r = validate_source(f, error)) < 0 ||
            (r = validate_snapshot_info(f, error)) < 0 ||
            (r = indexes_build(f, &x, error)) < 0 || (r = validate_filters(f, &x, error)) < 0 ||
            (r = validate_processes(f, &x, error)) < 0)
                return r;
        for (size_t i = 0; i < f->n_listeners; i++)
                if ((r = validate_listener(f, &x, i, error)) < 0)
                        return r;
        return 0;
}

/* Building */

int snapshot_builder_init(SnapshotBuilder *b) {
        *b = (SnapshotBuilder) { .forest = forest_new() };
        return b->forest ? 0 : -ENOMEM;
}

void snapshot_builder_deinit(SnapshotBuilder *b) {
        forest_free(b->forest);
        hashmap_deinit(&b->listeners);
        hashmap_deinit(&b->tids);
        hashmap_deinit(&b->holders);
        *b = (SnapshotBuilder) {};
}

int snapshot_builder_finish(SnapshotBuilder *b, Forest **ret, char **error) {
        int r = snapshot_validate(b->forest, error);
        if (r < 0)
                return r;
        /* Everything forest_link() checks has been checked: a failure here is a validator bug. */
        r = forest_link(b->forest, error);
        if (r < 0)
                return r == -EINVAL && error && !*error ? snapshot_error(error, "snapshot is inconsistent") : r;
        *ret = TAKE_PTR(b->forest);
        return 0;
}

static uint64_t pack_position(size_t outer, size_t inner) {
        return ((uint64_t) outer << 32 | (uint64_t) inner) + 1;
}

static void unpack_position(void *v, size_t *outer, size_t *inner) {
        uint64_t x = (uintptr_t) v - 1;
        *outer = x >> 32;
        *inner = x & UINT32_MAX;
}

int snapshot_builder_add_filter(SnapshotBuilder *b, size_t index, const SnapshotFilterFields *x, char **error) {
        Filter *flt;

        if (x->id == 0)
                return snapshot_error(error, "filters[%zu].id: 0 is not an id", index);
        if (x->length != x->n_insns)
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): length %" PRIu64 " but the program has %zu "
                                      "instructions", index, x->id, x->length, x->n_insns);
        /* The parent is set afterwards: forest_add_filter() refuses a filter that is its own parent,
         * and that is a cycle for snapshot_validate() to name. */
        int r = forest_add_filter(b->forest, x->id, 0, x->insns, x->n_insns, &flt);
        if (r == -EEXIST)
                return snapshot_error(error, "filters[%zu] (id %" PRIu64 "): duplicate id", index, x->id);
        if (r < 0)
                return r;
        flt->parent_id = x->parent;
        flt->listener_id = x->listener;
        flt->has_listener = x->listener != 0;
        flt->log = x->log;
        flt->wait_killable_recv = x->wait_killable_recv;
        flt->identity = x->identity;
        memcpy(flt->digest, x->digest, sizeof(flt->digest));
        return 0;
}

int snapshot_builder_add_process(SnapshotBuilder *b, size_t index, pid_t pid, Process **ret, char **error) {
        if (pid <= 0 || pid > SNAPSHOT_MAX_PID)
                return snapshot_error(error, "processes[%zu].pid: %d is not a pid (1..%d)", index, pid, SNAPSHOT_MAX_PID);
        int r = forest_add_process(b->forest, pid, ret);
        if (r == -EEXIST)
                return snapshot_error(error, "processes[%zu] (pid %d): duplicate pid", index, pid);
        return r;
}

int snapshot_builder_set_comm(Process *p, size_t index, const char *comm, char **error) {
        size_t n = strlen(comm);
        if (n >= sizeof(p->comm))
                return snapshot_error(error, "processes[%zu] (pid %d).comm: %zu bytes, longer than the kernel's %zu",
                                      index, p->pid, n, sizeof(p->comm) - 1);
        memcpy(p->comm, comm, n + 1);
        return 0;
}

int snapshot_builder_add_thread(SnapshotBuilder *b, Process *p, size_t pindex, size_t tindex, pid_t tid,
                                TaskMode mode, uint64_t filter, char **error) {
        Task *t;
        if (tid <= 0 || tid > SNAPSHOT_MAX_PID)
                return snapshot_error(error, "processes[%zu].threads[%zu].tid: %d is not a tid (1..%d)", pindex, tindex,
                                      tid, SNAPSHOT_MAX_PID);
        int r = hashmap_put(&b->tids, (uint64_t) tid, (void *) (uintptr_t) pack_position(pindex, tindex));
        if (r == -EEXIST) {
                size_t i, j;
                unpack_position(hashmap_get(&b->tids, (uint64_t) tid), &i, &j);
                return snapshot_error(error, "processes[%zu].threads[%zu] (tid %d): duplicate tid (also "
                                      "processes[%zu].threads[%zu])", pindex, tindex, tid, i, j);
        }
        if (r < 0 || (r = process_append_thread(p, tid, &t)) < 0)
                return r;
        t->mode = mode;
        t->filter_id = filter;
        return 0;
}

int snapshot_builder_add_listener(SnapshotBuilder *b, size_t index, uint64_t id, uint64_t filter, Listener **ret,
                                  char **error) {
        if (id == 0)
                return snapshot_error(error, "listeners[%zu].id: 0 is not an id", index);
        int r = index_put(&b->listeners, id, index);
        if (r == -EEXIST)
                return snapshot_error(error, "listeners[%zu] (id %" PRIu64 "): duplicate id (also listeners[%zu])", index,
                                      id, index_get(&b->listeners, id));
        if (r < 0)
                return r;
        return forest_append_listener(b->forest, id, filter, ret);
}

int snapshot_builder_add_holder(SnapshotBuilder *b, Listener *l, size_t lindex, size_t hindex, pid_t pid, int fd,
                                char **error) {
        if (pid <= 0 || pid > SNAPSHOT_MAX_PID)
                return snapshot_error(error, "listeners[%zu].holders[%zu].pid: %d is not a pid (1..%d)", lindex, hindex,
                                      pid, SNAPSHOT_MAX_PID);
        if (fd < 0)
                return snapshot_error(error, "listeners[%zu].holders[%zu].fd: %d is not an fd", lindex, hindex, fd);
        uint64_t key = (uint64_t) pid << 32 | (uint32_t) fd;
        int r = hashmap_put(&b->holders, key, (void *) (uintptr_t) pack_position(lindex, hindex));
        if (r == -EEXIST) {
                size_t i, j;
                unpack_position(hashmap_get(&b->holders, key), &i, &j);
                return snapshot_error(error, "listeners[%zu].holders[%zu]: duplicate holder (pid %d, fd %d is also "
                                      "listeners[%zu].holders[%zu])", lindex, hindex, pid, fd, i, j);
        }
        if (r < 0)
                return r;
        return listener_append_holder(l, pid, fd);
}
