/* snapshot-diff.c: what changed between two snapshots, and its text and JSON renderings */
#include "snapshot/snapshot-diff.h"

#include <jansson.h>

#include "core/escape.h"
#include "core/sha256.h"
#include "snapshot/snapshot-text.h"
#include "snapshot/snapshot-units.h"

static const char *const diff_kind_table[_DIFF_KIND_MAX] = {
        [DIFF_ADDED] = "added",
        [DIFF_REMOVED] = "removed",
        [DIFF_CHANGED] = "changed",
};

DEFINE_STRING_TABLE_LOOKUP(diff_kind, DiffKind, _DIFF_KIND_MAX);

static const char *const filter_change_table[] = {
        "program", "log", "wait_killable_recv", "listener", "identity",
};

const char *filter_change_to_string(FilterChange c) {
        for (size_t i = 0; i < ELEMENTSOF(filter_change_table); i++)
                if (c == 1u << i)
                        return filter_change_table[i];
        return NULL;
}

SnapshotDiff *snapshot_diff_free(SnapshotDiff *d) {
        if (!d)
                return NULL;
        free(d->filters);
        free(d->processes);
        free(d->tasks);
        free(d);
        return NULL;
}

bool snapshot_diff_is_empty(const SnapshotDiff *d) {
        return d->n_filters == 0 && d->n_processes == 0 && d->n_tasks == 0;
}

size_t snapshot_diff_count_filters(const SnapshotDiff *d, DiffKind kind) {
        size_t n = 0;
        for (size_t i = 0; i < d->n_filters; i++)
                n += d->filters[i].kind == kind;
        return n;
}

/* Matching filters */

static bool filter_has_listener(const Filter *f) {
        return f->has_listener || f->listener_id != 0;
}

static unsigned filter_changes(const Filter *a, const Filter *b) {
        unsigned c = 0;
        if (a->len != b->len || memcmp(a->digest, b->digest, sizeof(a->digest)) != 0)
                c |= FILTER_CHANGE_PROGRAM;
        if (a->log != b->log)
                c |= FILTER_CHANGE_LOG;
        if (a->wait_killable_recv != b->wait_killable_recv)
                c |= FILTER_CHANGE_WAIT_KILLABLE_RECV;
        if (filter_has_listener(a) != filter_has_listener(b))
                c |= FILTER_CHANGE_LISTENER;
        if (a->identity != b->identity)
                c |= FILTER_CHANGE_IDENTITY;
        return c;
}

/* Children of every filter (slot = index), and the roots (slot n), as one array with offsets. */
typedef struct Children {
        size_t *start; /* n + 2 offsets */
        const Filter **list;
} Children;

static void children_deinit(Children *c) {
        free(c->start);
        free(c->list);
}

static size_t parent_slot(const Forest *f, const Filter *flt) {
        return flt->parent ? flt->parent->index : f->n_filters;
}

static int children_build(const Forest *f, Children *c) {
        size_t n = f->n_filters;
        c->start = calloc(n + 2, sizeof(size_t));
        c->list = malloc((n + 1) * sizeof(Filter *));
        _cleanup_free_ size_t *fill = calloc(n + 1, sizeof(size_t));
        if (!c->start || !c->list || !fill)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                c->start[parent_slot(f, f->filters[i]) + 1]++;
        for (size_t s = 0; s <= n; s++)
                c->start[s + 1] += c->start[s];
        for (size_t i = 0; i < n; i++) {
                size_t s = parent_slot(f, f->filters[i]);
                c->list[c->start[s] + fill[s]++] = f->filters[i];
        }
        return 0;
}

/* Siblings in the order they pair up: by digest, then flags, then id. */
static int cmp_sibling(const void *x, const void *y) {
        const Filter *a = *(const Filter * const *) x, *b = *(const Filter * const *) y;
        int k = memcmp(a->digest, b->digest, sizeof(a->digest));
        if (k != 0)
                return k;
        unsigned fa = a->log | a->wait_killable_recv << 1 | filter_has_listener(a) << 2;
        unsigned fb = b->log | b->wait_killable_recv << 1 | filter_has_listener(b) << 2;
        if (fa != fb)
                return fa < fb ? -1 : 1;
        return a->id < b->id ? -1 : a->id > b->id;
}

typedef struct Matcher {
        const Forest *a, *b;
        Children ca, cb;
        const Filter **match_a, **match_b; /* by index: the counterpart, or NULL */
        size_t *queue;                     /* pairs of slots still to match the children of */
        size_t n_queue;
} Matcher;

static void matcher_deinit(Matcher *m) {
        children_deinit(&m->ca);
        children_deinit(&m->cb);
        free(m->match_a);
        free(m->match_b);
        free(m->queue);
}

static void pair(Matcher *m, const Filter *a, const Filter *b) {
        m->match_a[a->index] = b;
        m->match_b[b->index] = a;
        m->queue[m->n_queue++] = a->index;
        m->queue[m->n_queue++] = b->index;
}

static void match_siblings(Matcher *m, const Filter **sa, size_t na, const Filter **sb, size_t nb) {
        const Filter *left_a = NULL, *left_b = NULL;
        size_t n_left_a = 0, n_left_b = 0;

        qsort_safe(sa, na, sizeof(Filter *), cmp_sibling);
        qsort_safe(sb, nb, sizeof(Filter *), cmp_sibling);
        for (size_t i = 0, j = 0; i < na || j < nb;) {
                int k = i == na ? 1 : j == nb ? -1 : memcmp(sa[i]->digest, sb[j]->digest, sizeof(sa[i]->digest));
                if (k == 0)
                        pair(m, sa[i++], sb[j++]);
                else if (k < 0)
                        left_a = sa[i++], n_left_a++;
                else
                        left_b = sb[j++], n_left_b++;
        }
        /* One left on each side: the same place, other bytes. */
        if (n_left_a == 1 && n_left_b == 1)
                pair(m, left_a, left_b);
}

static int matcher_run(Matcher *m) {
        size_t na = m->a->n_filters, nb = m->b->n_filters;
        int r;

        if ((r = children_build(m->a, &m->ca)) < 0 || (r = children_build(m->b, &m->cb)) < 0)
                return r;
        m->match_a = calloc(na + 1, sizeof(Filter *));
        m->match_b = calloc(nb + 1, sizeof(Filter *));
        m->queue = malloc(2 * ((na < nb ? na : nb) + 1) * sizeof(size_t));
        if (!m->match_a || !m->match_b || !m->queue)
                return -ENOMEM;
        /* The roots first (slot n on either side); every pair queues its children. */
        m->queue[m->n_queue++] = na;
        m->queue[m->n_queue++] = nb;
        for (size_t q = 0; q < m->n_queue; q += 2) {
                size_t s = m->queue[q], t = m->queue[q + 1];
                match_siblings(m, m->ca.list + m->ca.start[s], m->ca.start[s + 1] - m->ca.start[s],
                               m->cb.list + m->cb.start[t], m->cb.start[t + 1] - m->cb.start[t]);
        }
        return 0;
}

static int add_filter_diff(SnapshotDiff *d, size_t *allocated, DiffKind kind, const Filter *a, const Filter *b,
                           unsigned changes) {
        if (GROW(d->filters, *allocated, d->n_filters + 1) < 0)
                return -ENOMEM;
        d->filters[d->n_filters++] = (FilterDiff) { .kind = kind, .a = a, .b = b, .changes = changes };
        return 0;
}

static int diff_filters(SnapshotDiff *d) {
        _cleanup_(matcher_deinit) Matcher m = { .a = d->a, .b = d->b };
        size_t allocated = 0;
        int r;

        if ((r = matcher_run(&m)) < 0)
                return r;
        for (size_t i = 0; i < d->a->n_filters; i++) {
                const Filter *a = d->a->filters[i], *b = m.match_a[i];
                unsigned c = b ? filter_changes(a, b) : 0;
                if (!b)
                        r = add_filter_diff(d, &allocated, DIFF_REMOVED, a, NULL, 0);
                else if (c)
                        r = add_filter_diff(d, &allocated, DIFF_CHANGED, a, b, c);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < d->b->n_filters; i++)
                if (!m.match_b[i] && (r = add_filter_diff(d, &allocated, DIFF_ADDED, NULL, d->b->filters[i], 0)) < 0)
                        return r;
        return 0;
}

/* Processes and tasks */

/* The content of a filter's chain, the bytes and flags of every filter down to the root, as one
 * SHA-256 per filter: sig = SHA-256(sig of the parent, digest, flags). Parents come first in a
 * linked forest, so every filter's is computed once and comparing two chains is one memcmp(). */
typedef uint8_t ChainSignature[PROG_DIGEST_SIZE];

static int chain_signatures(const Forest *f, ChainSignature **ret) {
        _cleanup_free_ ChainSignature *sig = malloc((f->n_filters + 1) * sizeof(ChainSignature));
        static const ChainSignature none = {};
        _Static_assert(sizeof(ChainSignature) == SHA256_SIZE, "a signature is a SHA-256");

        if (!sig)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *flt = f->filters[i];
                uint8_t flags = flt->log | flt->wait_killable_recv << 1 | filter_has_listener(flt) << 2;
                const Sha256Part parts[] = {
                        { flt->parent ? sig[flt->parent->index] : none, sizeof(ChainSignature) },
                        { flt->digest, sizeof(flt->digest) },
                        { &flags, 1 },
                };
                sha256_parts(parts, ELEMENTSOF(parts), sig[i]);
        }
        *ret = TAKE_PTR(sig);
        return 0;
}

typedef struct Growing {
        size_t processes, tasks;
        ChainSignature *sig_a, *sig_b;
} Growing;

static bool chain_equal(const Growing *g, const Task *a, const Task *b) {
        if (a->mode != b->mode || !a->filter != !b->filter)
                return false;
        return !a->filter || memcmp(g->sig_a[a->filter->index], g->sig_b[b->filter->index], sizeof(ChainSignature)) == 0;
}

static int add_process_diff(SnapshotDiff *d, Growing *g, DiffKind kind, const Process *a, const Process *b) {
        if (GROW(d->processes, g->processes, d->n_processes + 1) < 0)
                return -ENOMEM;
        d->processes[d->n_processes++] = (ProcessDiff) { .kind = kind, .a = a, .b = b };
        return 0;
}

static int add_task_diff(SnapshotDiff *d, Growing *g, DiffKind kind, const Process *pa, const Process *pb,
                         const Task *a, const Task *b) {
        if (GROW(d->tasks, g->tasks, d->n_tasks + 1) < 0)
                return -ENOMEM;
        d->tasks[d->n_tasks++] = (TaskDiff) { .kind = kind, .process_a = pa, .process_b = pb, .a = a, .b = b };
        return 0;
}

/* Threads of the same process on both sides, merged by tid (linked: sorted). */
static int diff_threads(SnapshotDiff *d, Growing *g, const Process *pa, const Process *pb) {
        size_t i = 0, j = 0;
        int r = 0;
        while (r >= 0 && (i < pa->n_threads || j < pb->n_threads)) {
                const Task *a = i < pa->n_threads ? &pa->threads[i] : NULL, *b = j < pb->n_threads ? &pb->threads[j] : NULL;
                if (a && (!b || a->tid < b->tid)) {
                        r = add_task_diff(d, g, DIFF_REMOVED, pa, pb, a, NULL);
                        i++;
                } else if (!a || b->tid < a->tid) {
                        r = add_task_diff(d, g, DIFF_ADDED, pa, pb, NULL, b);
                        j++;
                } else {
                        if (!chain_equal(g, a, b))
                                r = add_task_diff(d, g, DIFF_CHANGED, pa, pb, a, b);
                        i++, j++;
                }
        }
        return r;
}

/* The same process in both, in another unit, user unit or machine. Only when both snapshots record
 * units (format version 2): a snapshot that does not is not one of a process without a unit. */
static bool units_differ(const Process *a, const Process *b) {
        return !streq_ptr(a->unit, b->unit) || !streq_ptr(a->user_unit, b->user_unit) ||
               !streq_ptr(a->machine, b->machine);
}

/* Processes merged by pid (linked: sorted); the same pid with another start time is another
 * process. */
static int diff_processes(SnapshotDiff *d) {
        const Forest *fa = d->a, *fb = d->b;
        bool units = forest_has_units(fa) && forest_has_units(fb);
        Growing g = {};
        size_t i = 0, j = 0;
        int r = chain_signatures(fa, &g.sig_a);
        if (r >= 0)
                r = chain_signatures(fb, &g.sig_b);

        while (r >= 0 && (i < fa->n_processes || j < fb->n_processes)) {
                const Process *a = i < fa->n_processes ? fa->processes[i] : NULL;
                const Process *b = j < fb->n_processes ? fb->processes[j] : NULL;
                if (a && (!b || a->pid < b->pid)) {
                        r = add_process_diff(d, &g, DIFF_REMOVED, a, NULL);
                        i++;
                } else if (!a || b->pid < a->pid) {
                        r = add_process_diff(d, &g, DIFF_ADDED, NULL, b);
                        j++;
                } else if (a->start_time != b->start_time) {
                        r = add_process_diff(d, &g, DIFF_REMOVED, a, NULL);
                        if (r >= 0)
                                r = add_process_diff(d, &g, DIFF_ADDED, NULL, b);
                        i++, j++;
                } else {
                        if (units && units_differ(a, b))
                                r = add_process_diff(d, &g, DIFF_CHANGED, a, b);
                        if (r >= 0)
                                r = diff_threads(d, &g, a, b);
                        i++, j++;
                }
        }
        free(g.sig_a);
        free(g.sig_b);
        return r;
}

int snapshot_diff(const Forest *a, const Forest *b, SnapshotDiff **ret) {
        if (!a->linked || !b->linked)
                return -EINVAL;
        _cleanup_(snapshot_diff_freep) SnapshotDiff *d = calloc(1, sizeof(SnapshotDiff));
        if (!d)
                return -ENOMEM;
        d->a = a;
        d->b = b;
        int r = diff_filters(d);
        if (r >= 0)
                r = diff_processes(d);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}

/* Text */

#define SHORT_DIGEST (2 * PROG_DIGEST_SHORT_BYTES) /* hex digits shown in text */

static const char *short_digest(const Filter *f, char buf[static SHORT_DIGEST + 1]) {
        char prefixed[PROG_DIGEST_SHORT_STRING_MAX];
        prog_digest_to_short_string(f->digest, prefixed);
        memcpy(buf, prefixed + strlen("sha256:"), SHORT_DIGEST + 1);
        return buf;
}

/* The position: short digests from the root down to f, "1a2b3c4d5e6f/..." */
static void print_path(const Filter *f, FILE *out) {
        char buf[SHORT_DIGEST + 1];
        if (f->parent) {
                print_path(f->parent, out);
                fputc('/', out);
        }
        fputs(short_digest(f, buf), out);
}

static void print_filter(const Filter *f, FILE *out) {
        fprintf(out, "filter %" PRIu64 " (%zu instruction%s%s%s%s) at ", f->id, f->len, f->len == 1 ? "" : "s",
                f->log ? ", log" : "", f->wait_killable_recv ? ", wait_killable_recv" : "",
                filter_has_listener(f) ? ", listener" : "");
        print_path(f, out);
}

static void print_changes(const FilterDiff *x, FILE *out) {
        const char *sep = "";
        for (unsigned bit = 1; bit & _FILTER_CHANGE_ALL; bit <<= 1)
                if (x->changes & bit) {
                        fprintf(out, "%s%s", sep, filter_change_to_string(bit));
                        sep = ", ";
                }
}

static void print_filters(const SnapshotDiff *d, FILE *out) {
        fprintf(out, "filters: %zu added, %zu removed, %zu changed\n", snapshot_diff_count_filters(d, DIFF_ADDED),
                snapshot_diff_count_filters(d, DIFF_REMOVED), snapshot_diff_count_filters(d, DIFF_CHANGED));
        for (size_t i = 0; i < d->n_filters; i++) {
                const FilterDiff *x = &d->filters[i];
                fputs(x->kind == DIFF_ADDED ? "  + " : x->kind == DIFF_REMOVED ? "  - " : "  ~ ", out);
                print_filter(x->a ? x->a : x->b, out);
                if (x->kind == DIFF_CHANGED) {
                        fputs("\n      -> ", out);
                        print_filter(x->b, out);
                        fputs(": ", out);
                        print_changes(x, out);
                }
                fputc('\n', out);
        }
}

static void print_process(const Process *p, FILE *out) {
        char comm[COMM_ESCAPED_MAX];
        fprintf(out, "process %d (start time %" PRIu64 ", comm \"", p->pid, p->start_time);
        for (const char *c = str_escape_buf(p->comm, comm, sizeof(comm)); *c; c++)
                fprintf(out, *c == '"' ? "\\%c" : "%c", *c);
        fputs("\")", out);
}

static void print_unit_name(const char *what, const char *name, FILE *out) {
        if (!name)
                return;
        fprintf(out, " %s ", what);
        (void) fputs_escaped(name, out);
}

static void print_units(const Process *p, FILE *out) {
        if (!process_has_units(p)) {
                fputs(" (none)", out);
                return;
        }
        print_unit_name("unit", p->unit, out);
        print_unit_name("user-unit", p->user_unit, out);
        print_unit_name("machine", p->machine, out);
}

static void print_task_state(const Task *t, FILE *out) {
        char buf[SHORT_DIGEST + 1];
        if (!t) {
                fputs("(none)", out);
                return;
        }
        fputs(task_mode_to_string(t->mode), out);
        if (t->filter)
                fprintf(out, ", chain of %u ending in %s", t->filter->depth, short_digest(t->filter, buf));
}

static void print_tasks(const SnapshotDiff *d, FILE *out) {
        size_t n[_DIFF_KIND_MAX] = {};
        for (size_t i = 0; i < d->n_tasks; i++)
                n[d->tasks[i].kind]++;
        fprintf(out, "threads of processes in both: %zu added, %zu removed, %zu changed chains\n",
                n[DIFF_ADDED], n[DIFF_REMOVED], n[DIFF_CHANGED]);
        for (size_t i = 0; i < d->n_tasks; i++) {
                const TaskDiff *x = &d->tasks[i];
                fprintf(out, "  %c thread %d of ", x->kind == DIFF_ADDED ? '+' : x->kind == DIFF_REMOVED ? '-' : '~',
                        x->a ? x->a->tid : x->b->tid);
                print_process(x->process_a, out);
                fputs(": ", out);
                print_task_state(x->a, out);
                fputs(" -> ", out);
                print_task_state(x->b, out);
                fputc('\n', out);
        }
}

int snapshot_diff_print(const SnapshotDiff *d, FILE *out) {
        size_t n[_DIFF_KIND_MAX] = {};
        for (size_t i = 0; i < d->n_processes; i++)
                n[d->processes[i].kind]++;

        if (snapshot_diff_is_empty(d))
                fputs("no differences\n", out);
        else {
                print_filters(d, out);
                fprintf(out, "processes: %zu added, %zu removed", n[DIFF_ADDED], n[DIFF_REMOVED]);
                if (n[DIFF_CHANGED] > 0)
                        fprintf(out, ", %zu in other units", n[DIFF_CHANGED]);
                fputc('\n', out);
                for (size_t i = 0; i < d->n_processes; i++) {
                        const ProcessDiff *x = &d->processes[i];
                        fputs(x->kind == DIFF_ADDED ? "  + " : x->kind == DIFF_REMOVED ? "  - " : "  ~ ", out);
                        print_process(x->a ? x->a : x->b, out);
                        if (x->kind == DIFF_CHANGED) {
                                fputc(':', out);
                                print_units(x->a, out);
                                fputs(" ->", out);
                                print_units(x->b, out);
                        }
                        fputc('\n', out);
                }
                print_tasks(d, out);
        }
        return fflush_errno(out);
}

/* JSON */

static json_t *json_text(const char *s) {
        if (snapshot_utf8_valid(s))
                return json_string(s);
        _cleanup_free_ char *clean = snapshot_utf8_sanitize(s);
        return clean ? json_string(clean) : NULL;
}

static json_t *json_digest(const Filter *f) {
        char buf[PROG_DIGEST_STRING_MAX];
        return json_string(prog_digest_to_string(f->digest, buf));
}

/* Digests from the root down: the filter's position. */
static json_t *json_path(const Filter *f) {
        size_t depth = filter_chain(f, NULL, 0);
        _cleanup_free_ const Filter **chain = malloc((depth + 1) * sizeof(Filter *));
        if (!chain)
                return NULL;
        filter_chain(f, chain, depth);
        json_t *a = json_array();
        for (size_t i = depth; a && i > 0; i--)
                json_array_append_new(a, json_digest(chain[i - 1]));
        return a;
}

static json_t *filter_json(const Filter *f) {
        if (!f)
                return json_null();
        return json_pack("{s:I, s:o, s:I, s:b, s:b, s:b, s:s, s:o}", "id", (json_int_t) f->id, "digest", json_digest(f),
                         "length", (json_int_t) f->len, "log", f->log, "wait_killable_recv", f->wait_killable_recv,
                         "listener", filter_has_listener(f), "identity", identity_kind_to_string(f->identity),
                         "path", json_path(f));
}

static json_t *filter_diff_json(const FilterDiff *x) {
        json_t *what = json_array();
        for (unsigned bit = 1; what && (bit & _FILTER_CHANGE_ALL); bit <<= 1)
                if (x->changes & bit)
                        json_array_append_new(what, json_string(filter_change_to_string(bit)));
        return json_pack("{s:s, s:o, s:o, s:o}", "change", diff_kind_to_string(x->kind), "a", filter_json(x->a), "b",
                         filter_json(x->b), "what", what);
}

static json_t *json_name(const char *s) {
        return s ? json_text(s) : json_null();
}

static json_t *units_json(const Process *p) {
        return json_pack("{s:o, s:o, s:o}", "unit", json_name(p->unit), "user_unit", json_name(p->user_unit), "machine",
                         json_name(p->machine));
}

static json_t *process_diff_json(const ProcessDiff *x) {
        const Process *p = x->a ? x->a : x->b;
        json_t *o = json_pack("{s:s, s:i, s:I, s:o}", "change", diff_kind_to_string(x->kind), "pid", (int) p->pid,
                              "start_time", (json_int_t) p->start_time, "comm", json_text(p->comm));
        if (o && x->kind == DIFF_CHANGED)
                json_object_set_new(o, "units", json_pack("{s:o, s:o}", "a", units_json(x->a), "b", units_json(x->b)));
        return o;
}

static json_t *task_state_json(const Task *t) {
        if (!t)
                return json_null();
        return json_pack("{s:s, s:o}", "mode", task_mode_to_string(t->mode), "chain",
                         t->filter ? json_path(t->filter) : json_array());
}

static json_t *task_diff_json(const TaskDiff *x) {
        return json_pack("{s:s, s:i, s:I, s:i, s:o, s:o}", "change", diff_kind_to_string(x->kind), "pid",
                         (int) x->process_a->pid, "start_time", (json_int_t) x->process_a->start_time, "tid",
                         (int) (x->a ? x->a->tid : x->b->tid), "a", task_state_json(x->a), "b", task_state_json(x->b));
}

#define ARRAY_OF(items, n, to_json)                                             \
        ({                                                                      \
                json_t *_a = json_array();                                      \
                for (size_t _i = 0; _a && _i < (n); _i++)                       \
                        json_array_append_new(_a, to_json(&(items)[_i]));       \
                _a;                                                             \
        })

int snapshot_diff_format_json(const SnapshotDiff *d, char **ret) {
        _cleanup_(json_decrefp) json_t *doc = json_pack(
                "{s:b, s:o, s:o, s:o}", "identical", snapshot_diff_is_empty(d),
                "filters", ARRAY_OF(d->filters, d->n_filters, filter_diff_json),
                "processes", ARRAY_OF(d->processes, d->n_processes, process_diff_json),
                "tasks", ARRAY_OF(d->tasks, d->n_tasks, task_diff_json));
        if (!doc)
                return -ENOMEM;
        char *s = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
