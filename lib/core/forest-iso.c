/* forest-iso.c: isomorphism of two linked forests: same shape of sharing, same bytes and flags */
#include "core/forest-iso.h"

#include <search.h>
#include <stdarg.h>

#define NONE SIZE_MAX

/* What a thread contributes to the signature of its head filter (tid is for messages only). */
typedef struct Label {
        TaskMode mode;
        char comm[16];
        pid_t tid;
} Label;

typedef struct Node {
        const Filter *filter;
        size_t parent; /* index in the same Side, NONE for a root */
        size_t *children;
        size_t n_children, n_children_allocated;
        Label *labels;
        size_t n_labels, n_labels_allocated;
        uint64_t *child_classes; /* sorted, part of the key */
        uint64_t class;          /* equal classes <=> isomorphic subtrees (both sides) */
        size_t map;              /* image on the other side (task_map mode), NONE if unmapped */
} Node;

typedef struct PtrRef {
        uintptr_t ptr;
        size_t idx;
} PtrRef;

typedef struct ThreadRef {
        pid_t tid;
        const Task *task;
        bool used;
} ThreadRef;

typedef struct IdxList {
        size_t *v;
        size_t n, allocated;
} IdxList;

typedef struct Side {
        const Forest *forest;
        const char *name;
        Node *nodes; /* parallel to forest->filters */
        size_t n_nodes;
        PtrRef *by_ptr; /* sorted by ptr */
        IdxList roots;
        Label *free_labels; /* threads without a filter */
        size_t n_free_labels, n_free_labels_allocated;
        ThreadRef *threads; /* sorted by tid */
        size_t n_threads, n_threads_allocated;
} Side;

/* qsort() that accepts an empty (possibly NULL) array. */
static void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
        if (n > 1)
                qsort(base, n, size, cmp);
}

/* Store the first difference in *why (if wanted); returns 1 (a difference) or -ENOMEM. */
_printf_(2, 3) static int why_set(char **why, const char *format, ...) {
        va_list ap;
        int r;

        if (!why)
                return 1;
        free(*why);
        va_start(ap, format);
        r = vasprintf(why, format, ap);
        va_end(ap);
        if (r < 0) {
                *why = NULL;
                return -ENOMEM;
        }
        return 1;
}

/* Append one index to a list. */
static int idx_push(IdxList *l, size_t i) {
        if (GROW(l->v, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->v[l->n++] = i;
        return 0;
}

static void idx_list_done(IdxList *l) {
        free(l->v);
}

/* Free what a Side owns (not the forest). */
static void side_done(Side *s) {
        for (size_t i = 0; i < s->n_nodes; i++) {
                free(s->nodes[i].children);
                free(s->nodes[i].labels);
                free(s->nodes[i].child_classes);
        }
        free(s->nodes);
        free(s->by_ptr);
        free(s->roots.v);
        free(s->free_labels);
        free(s->threads);
}

static int ptr_ref_cmp(const void *x, const void *y) {
        const PtrRef *a = x, *b = y;
        return a->ptr < b->ptr ? -1 : a->ptr > b->ptr;
}

/* Index of filter f in side s, NONE if it is not one of s's filters. */
static size_t node_index(const Side *s, const Filter *f) {
        PtrRef key = { .ptr = (uintptr_t) f };
        const PtrRef *found;

        if (!f)
                return NONE;
        found = bsearch(&key, s->by_ptr, s->n_nodes, sizeof(PtrRef), ptr_ref_cmp);
        return found ? found->idx : NONE;
}

/* Allocate the nodes and the pointer index. */
static int side_alloc_nodes(Side *s) {
        size_t n = s->forest->n_filters;

        s->nodes = calloc(n ?: 1, sizeof(Node));
        s->by_ptr = calloc(n ?: 1, sizeof(PtrRef));
        if (!s->nodes || !s->by_ptr)
                return -ENOMEM;
        s->n_nodes = n;
        for (size_t i = 0; i < n; i++) {
                s->nodes[i] = (Node) { .filter = s->forest->filters[i], .parent = NONE, .map = NONE };
                s->by_ptr[i] = (PtrRef) { .ptr = (uintptr_t) s->forest->filters[i], .idx = i };
        }
        sort_array(s->by_ptr, n, sizeof(PtrRef), ptr_ref_cmp);
        return 0;
}

/* Resolve parents to indices and fill children and roots. */
static int side_link_children(Side *s) {
        for (size_t i = 0; i < s->n_nodes; i++) {
                Node *n = &s->nodes[i];
                size_t p;

                if (!n->filter->parent) {
                        if (idx_push(&s->roots, i) < 0)
                                return -ENOMEM;
                        continue;
                }
                p = node_index(s, n->filter->parent);
                if (p == NONE)
                        return -EINVAL; /* not linked: parent outside the forest */
                n->parent = p;
                if (GROW(s->nodes[p].children, s->nodes[p].n_children_allocated, s->nodes[p].n_children + 1) < 0)
                        return -ENOMEM;
                s->nodes[p].children[s->nodes[p].n_children++] = i;
        }
        return 0;
}

/* Append a label to an array of labels. */
static int label_push(Label **labels, size_t *n, size_t *allocated, const Process *p, const Task *t) {
        if (GROW(*labels, *allocated, *n + 1) < 0)
                return -ENOMEM;
        (*labels)[*n] = (Label) { .mode = t->mode, .tid = t->tid };
        memcpy((*labels)[*n].comm, p->comm, sizeof(p->comm));
        (*labels)[*n].comm[sizeof(p->comm) - 1] = 0;
        (*n)++;
        return 0;
}

/* Record one thread: in the thread table, and as a label of its head filter (or of no filter). */
static int side_add_thread(Side *s, const Process *p, const Task *t) {
        size_t i;

        if (GROW(s->threads, s->n_threads_allocated, s->n_threads + 1) < 0)
                return -ENOMEM;
        s->threads[s->n_threads++] = (ThreadRef) { .tid = t->tid, .task = t };
        if (!t->filter)
                return label_push(&s->free_labels, &s->n_free_labels, &s->n_free_labels_allocated, p, t);
        i = node_index(s, t->filter);
        if (i == NONE)
                return -EINVAL;
        return label_push(&s->nodes[i].labels, &s->nodes[i].n_labels, &s->nodes[i].n_labels_allocated, p, t);
}

static int thread_ref_cmp(const void *x, const void *y) {
        const ThreadRef *a = x, *b = y;
        return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* Collect every thread of every process. */
static int side_add_threads(Side *s) {
        for (size_t i = 0; i < s->forest->n_processes; i++) {
                const Process *p = s->forest->processes[i];

                for (size_t j = 0; j < p->n_threads; j++) {
                        int r = side_add_thread(s, p, &p->threads[j]);
                        if (r < 0)
                                return r;
                }
        }
        sort_array(s->threads, s->n_threads, sizeof(ThreadRef), thread_ref_cmp);
        return 0;
}

/* Build the side data of one forest. */
static int side_init(Side *s, const Forest *f, const char *name) {
        int r;

        s->forest = f;
        s->name = name;
        r = side_alloc_nodes(s);
        if (r < 0)
                return r;
        r = side_link_children(s);
        if (r < 0)
                return r;
        return side_add_threads(s);
}

static int label_cmp(const void *x, const void *y) {
        const Label *a = x, *b = y;
        if (a->mode != b->mode)
                return a->mode < b->mode ? -1 : 1;
        return strncmp(a->comm, b->comm, sizeof(a->comm));
}

static int u64_cmp(const void *x, const void *y) {
        uint64_t a = *(const uint64_t *) x, b = *(const uint64_t *) y;
        return a < b ? -1 : a > b;
}

/* Order filters by what a node is by itself: length, flags, digest, bytes. 0 = same. */
static int filter_header_cmp(const Filter *a, const Filter *b) {
        int r;

        if (a->len != b->len)
                return a->len < b->len ? -1 : 1;
        if (a->log != b->log)
                return a->log ? 1 : -1;
        if (a->wait_killable_recv != b->wait_killable_recv)
                return a->wait_killable_recv ? 1 : -1;
        if (a->has_listener != b->has_listener)
                return a->has_listener ? 1 : -1;
        r = memcmp(a->digest, b->digest, sizeof(a->digest));
        if (r != 0)
                return r;
        return a->len > 0 ? memcmp(a->insns, b->insns, a->len * sizeof(struct sock_filter)) : 0;
}

/* Total order on canonical keys: header, sorted child classes, sorted labels. */
static int node_key_cmp(const void *x, const void *y) {
        const Node *a = x, *b = y;
        int r = filter_header_cmp(a->filter, b->filter);

        if (r != 0)
                return r;
        if (a->n_children != b->n_children)
                return a->n_children < b->n_children ? -1 : 1;
        for (size_t i = 0; i < a->n_children; i++)
                if (a->child_classes[i] != b->child_classes[i])
                        return a->child_classes[i] < b->child_classes[i] ? -1 : 1;
        if (a->n_labels != b->n_labels)
                return a->n_labels < b->n_labels ? -1 : 1;
        for (size_t i = 0; i < a->n_labels; i++) {
                r = label_cmp(&a->labels[i], &b->labels[i]);
                if (r != 0)
                        return r;
        }
        return 0;
}

/* Fill a node's key from its (already classified) children and sort its labels. */
static int node_make_key(const Side *s, Node *n) {
        sort_array(n->labels, n->n_labels, sizeof(Label), label_cmp);
        if (n->n_children == 0)
                return 0;
        n->child_classes = calloc(n->n_children, sizeof(uint64_t));
        if (!n->child_classes)
                return -ENOMEM;
        for (size_t i = 0; i < n->n_children; i++) {
                n->child_classes[i] = s->nodes[n->children[i]].class;
                if (n->child_classes[i] == 0)
                        return -EINVAL; /* filters not ordered parents-first */
        }
        sort_array(n->child_classes, n->n_children, sizeof(uint64_t), u64_cmp);
        return 0;
}

/* AHU: give every filter of s a class, children first, interning keys in *tree. */
static int classify_side(Side *s, void **tree, uint64_t *next_class) {
        for (size_t i = s->n_nodes; i > 0; i--) {
                Node *n = &s->nodes[i - 1];
                Node *const *found;
                int r = node_make_key(s, n);

                if (r < 0)
                        return r;
                found = tsearch(n, tree, node_key_cmp);
                if (!found)
                        return -ENOMEM;
                n->class = *found == n ? ++*next_class : (*found)->class;
        }
        return 0;
}

static void noop_free(void *p) {
}

static void class_table_free(void **tree) {
        tdestroy(*tree, noop_free);
}

/* Classify both sides with one shared table, so classes compare across forests. */
static int classify(Side *a, Side *b) {
        _cleanup_(class_table_free) void *tree = NULL;
        uint64_t next_class = 0;
        int r;

        r = classify_side(a, &tree, &next_class);
        if (r < 0)
                return r;
        r = classify_side(b, &tree, &next_class);
        if (r < 0)
                return r;
        sort_array(a->free_labels, a->n_free_labels, sizeof(Label), label_cmp);
        sort_array(b->free_labels, b->n_free_labels, sizeof(Label), label_cmp);
        return 0;
}

/* "filter 3 of a (sha256:0123456789ab..., 2 insns, 1 task)" into buf. */
static const char *node_describe(const Side *s, size_t i, char *buf, size_t size) {
        const Node *n = &s->nodes[i];
        char digest[PROG_DIGEST_STRING_MAX];

        prog_digest_to_string(n->filter->digest, digest);
        snprintf(buf, size, "filter %" PRIu64 " of %s (%.19s..., %zu insn%s, %zu task%s%s%s%s)",
                 n->filter->id, s->name, digest, n->filter->len, n->filter->len == 1 ? "" : "s",
                 n->n_labels, n->n_labels == 1 ? "" : "s", n->filter->log ? ", log" : "",
                 n->filter->wait_killable_recv ? ", wait_killable_recv" : "",
                 n->filter->has_listener ? ", listener" : "");
        return buf;
}

#define DESCRIBE(s, i) node_describe((s), (i), (char[256]) {}, 256)

/* Name the first header field in which two filters differ. */
static const char *header_difference(const Filter *a, const Filter *b) {
        if (a->len != b->len)
                return "program length";
        if (memcmp(a->digest, b->digest, sizeof(a->digest)) != 0 ||
            (a->len > 0 && memcmp(a->insns, b->insns, a->len * sizeof(struct sock_filter)) != 0))
                return "program bytes";
        if (a->log != b->log)
                return "log flag";
        if (a->wait_killable_recv != b->wait_killable_recv)
                return "wait_killable_recv flag";
        return "listener presence";
}

/* Report that filter u of a and filter v of b differ by themselves. */
static int diff_header(const Side *a, size_t u, const Side *b, size_t v, char **why) {
        return why_set(why, "%s and %s differ in %s", DESCRIBE(a, u), DESCRIBE(b, v),
                       header_difference(a->nodes[u].filter, b->nodes[v].filter));
}

typedef struct ClassRef {
        uint64_t class;
        size_t idx;
} ClassRef;

static int class_ref_cmp(const void *x, const void *y) {
        const ClassRef *a = x, *b = y;
        if (a->class != b->class)
                return a->class < b->class ? -1 : 1;
        return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Sorted (class, index) pairs of a list of nodes. */
static ClassRef *class_refs(const Side *s, const IdxList *l) {
        ClassRef *refs = calloc(l->n ?: 1, sizeof(ClassRef));

        if (!refs)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                refs[i] = (ClassRef) { .class = s->nodes[l->v[i]].class, .idx = l->v[i] };
        sort_array(refs, l->n, sizeof(ClassRef), class_ref_cmp);
        return refs;
}

/* Merge two sorted class lists; what has no partner of the same class goes to ua / ub. */
static int merge_unmatched(const ClassRef *ra, size_t na, const ClassRef *rb, size_t nb, IdxList *ua, IdxList *ub) {
        size_t i = 0, j = 0;

        while (i < na || j < nb) {
                int r = 0;
                if (i < na && j < nb && ra[i].class == rb[j].class) {
                        i++, j++;
                        continue;
                }
                if (j >= nb || (i < na && ra[i].class < rb[j].class))
                        r = idx_push(ua, ra[i++].idx);
                else
                        r = idx_push(ub, rb[j++].idx);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Nodes of la (in a) and lb (in b) that have no partner of the same class on the other side. */
static int unmatched(const Side *a, const IdxList *la, const Side *b, const IdxList *lb, IdxList *ua, IdxList *ub) {
        _cleanup_free_ ClassRef *ra = class_refs(a, la), *rb = class_refs(b, lb);

        if (!ra || !rb)
                return -ENOMEM;
        return merge_unmatched(ra, la->n, rb, lb->n, ua, ub);
}

/* First label of x (sorted) that has no equal in y (sorted), or NULL. */
static const Label *label_unmatched(const Label *x, size_t nx, const Label *y, size_t ny) {
        size_t i = 0, j = 0;

        while (i < nx) {
                int r = j < ny ? label_cmp(&x[i], &y[j]) : -1;
                if (r < 0)
                        return &x[i];
                j++;
                if (r == 0)
                        i++;
        }
        return NULL;
}

/* Two filters with the same header: 1 with *why if their own tasks differ, else 0. */
static int diff_labels(const Side *a, size_t u, const Side *b, size_t v, char **why) {
        const Node *nu = &a->nodes[u], *nv = &b->nodes[v];
        const Label *l;

        l = label_unmatched(nu->labels, nu->n_labels, nv->labels, nv->n_labels);
        if (l)
                return why_set(why, "tid %d (%s, comm \"%s\") under %s has no counterpart under %s", l->tid,
                               task_mode_to_string(l->mode), l->comm, DESCRIBE(a, u), DESCRIBE(b, v));
        l = label_unmatched(nv->labels, nv->n_labels, nu->labels, nu->n_labels);
        if (l)
                return why_set(why, "tid %d (%s, comm \"%s\") under %s has no counterpart under %s", l->tid,
                               task_mode_to_string(l->mode), l->comm, DESCRIBE(b, v), DESCRIBE(a, u));
        return 0;
}

/* Report a filter that has no counterpart, with the sibling counts. */
static int diff_missing(const Side *s, size_t i, const Side *other, size_t n_here, size_t n_there,
                        const char *where, char **why) {
        return why_set(why, "%s has no counterpart in %s (%s, %s has %zu filter%s and %s %zu)", DESCRIBE(s, i),
                       other->name, where, s->name, n_here, n_here == 1 ? "" : "s", other->name, n_there);
}

/* Among unmatched nodes, a pair with the same header, or false. */
static bool find_same_header(const Side *a, const IdxList *ua, const Side *b, const IdxList *ub, size_t *ret_u,
                             size_t *ret_v) {
        for (size_t i = 0; i < ua->n; i++)
                for (size_t j = 0; j < ub->n; j++)
                        if (filter_header_cmp(a->nodes[ua->v[i]].filter, b->nodes[ub->v[j]].filter) == 0) {
                                *ret_u = ua->v[i];
                                *ret_v = ub->v[j];
                                return true;
                        }
        return false;
}

/* Unmatched siblings ua (of a) and ub (of b): report the difference (1), or pick a pair with the
 * same header whose subtrees differ further down (0, *ret_u and *ret_v set). */
static int diff_unmatched(const Side *a, const IdxList *ua, size_t na, const Side *b, const IdxList *ub,
                          size_t nb, const char *where, size_t *ret_u, size_t *ret_v, char **why) {
        if (ua->n != ub->n)
                return ua->n > 0 ? diff_missing(a, ua->v[0], b, na, nb, where, why)
                                 : diff_missing(b, ub->v[0], a, nb, na, where, why);
        if (find_same_header(a, ua, b, ub, ret_u, ret_v))
                return 0;
        if (ua->n == 1)
                return diff_header(a, ua->v[0], b, ub->v[0], why);
        return diff_missing(a, ua->v[0], b, na, nb, where, why);
}

/* One step of the descent: compare sibling multisets la and lb. 1 with *why if the difference is
 * here, 0 with *ret_u and *ret_v to go down into, 2 if the multisets match. */
static int diff_step(const Side *a, const IdxList *la, const Side *b, const IdxList *lb, const char *where,
                     size_t *ret_u, size_t *ret_v, char **why) {
        _cleanup_(idx_list_done) IdxList ua = {}, ub = {};
        int r;

        r = unmatched(a, la, b, lb, &ua, &ub);
        if (r < 0)
                return r;
        if (ua.n == 0 && ub.n == 0)
                return 2;
        return diff_unmatched(a, &ua, la->n, b, &ub, lb->n, where, ret_u, ret_v, why);
}

/* Compare two multisets of sibling subtrees, descending (iteratively: chains can be deep) to the
 * first difference; 1 with *why if they differ, 0 if they match. */
static int diff_sets(const Side *a, const IdxList *la, const Side *b, const IdxList *lb, const char *where,
                     char **why) {
        char buf[128];
        IdxList cu = *la, cv = *lb;

        for (;;) {
                size_t u = NONE, v = NONE;
                int r = diff_step(a, &cu, b, &cv, where, &u, &v, why);

                if (r != 0)
                        return r == 2 ? 0 : r;
                r = diff_labels(a, u, b, v, why);
                if (r != 0)
                        return r;
                cu = (IdxList) { .v = a->nodes[u].children, .n = a->nodes[u].n_children };
                cv = (IdxList) { .v = b->nodes[v].children, .n = b->nodes[v].n_children };
                snprintf(buf, sizeof(buf), "under filter %" PRIu64 " of a and filter %" PRIu64 " of b",
                         a->nodes[u].filter->id, b->nodes[v].filter->id);
                where = buf;
        }
}

/* Threads without a filter: the same multiset of (mode, comm) on both sides? */
static int diff_free_labels(const Side *a, const Side *b, char **why) {
        const Label *l;

        l = label_unmatched(a->free_labels, a->n_free_labels, b->free_labels, b->n_free_labels);
        if (l)
                return why_set(why, "tid %d of a (%s, comm \"%s\", no filter) has no counterpart in b", l->tid,
                               task_mode_to_string(l->mode), l->comm);
        l = label_unmatched(b->free_labels, b->n_free_labels, a->free_labels, a->n_free_labels);
        if (l)
                return why_set(why, "tid %d of b (%s, comm \"%s\", no filter) has no counterpart in a", l->tid,
                               task_mode_to_string(l->mode), l->comm);
        return 0;
}

/* No task map: compare the canonical forms (root multisets and filterless threads). */
static int iso_search(const Side *a, const Side *b, char **why) {
        int r;

        r = diff_free_labels(a, b, why);
        if (r != 0)
                return r;
        return diff_sets(a, &a->roots, b, &b->roots, "at the roots", why);
}

/* The thread tid of s, NULL if there is none. */
static ThreadRef *thread_find(const Side *s, pid_t tid) {
        ThreadRef key = { .tid = tid };

        if (s->n_threads == 0)
                return NULL;
        return bsearch(&key, s->threads, s->n_threads, sizeof(ThreadRef), thread_ref_cmp);
}

/* Look up one side of a map pair and mark it used; 1 with *why if unknown or used twice. */
static int map_take(Side *s, pid_t tid, ThreadRef **ret, char **why) {
        ThreadRef *t = thread_find(s, tid);

        if (!t)
                return why_set(why, "task_map: tid %d is not a thread of %s", tid, s->name);
        if (t->used)
                return why_set(why, "task_map: tid %d of %s is mapped twice", tid, s->name);
        t->used = true;
        *ret = t;
        return 0;
}

/* Check that a (filter) node pair is consistent with the mapping so far and extend it. */
static int map_node(Side *a, size_t u, Side *b, size_t v, const TaskPair *p, char **why) {
        Node *nu = &a->nodes[u], *nv = &b->nodes[v];

        if (nu->map != NONE)
                return why_set(why, "mapping tid %d of a to tid %d of b pairs filter %" PRIu64 " of a with filter %" PRIu64
                               " of b, but filter %" PRIu64 " of a already corresponds to filter %" PRIu64 " of b",
                               p->a, p->b, nu->filter->id, nv->filter->id, nu->filter->id,
                               b->nodes[nu->map].filter->id);
        if (nv->map != NONE)
                return why_set(why, "mapping tid %d of a to tid %d of b pairs filter %" PRIu64 " of a with filter %" PRIu64
                               " of b, but filter %" PRIu64 " of b already corresponds to filter %" PRIu64 " of a",
                               p->a, p->b, nu->filter->id, nv->filter->id, nv->filter->id,
                               a->nodes[nv->map].filter->id);
        if (filter_header_cmp(nu->filter, nv->filter) != 0)
                return diff_header(a, u, b, v, why);
        nu->map = v;
        nv->map = u;
        return 0;
}

/* Report chains that end at different depths: u of a or v of b is a root, the other is not. */
static int diff_chain_length(const Side *a, size_t u, const Side *b, size_t v, const TaskPair *p, char **why) {
        bool a_root = a->nodes[u].parent == NONE;

        return why_set(why, "chains of tid %d of a and tid %d of b differ in length: %s is a root, %s is not",
                       p->a, p->b, a_root ? DESCRIBE(a, u) : DESCRIBE(b, v), a_root ? DESCRIBE(b, v) : DESCRIBE(a, u));
}

/* Walk two chains together from their heads, pairing filters up to the roots. */
static int map_chain(Side *a, size_t u, Side *b, size_t v, const TaskPair *p, char **why) {
        while (u != NONE && v != NONE) {
                int r;

                if (a->nodes[u].map == v && b->nodes[v].map == u)
                        return 0; /* the rest of both chains is paired already */
                r = map_node(a, u, b, v, p, why);
                if (r != 0)
                        return r;
                if ((a->nodes[u].parent == NONE) != (b->nodes[v].parent == NONE))
                        return diff_chain_length(a, u, b, v, p, why);
                u = a->nodes[u].parent;
                v = b->nodes[v].parent;
        }
        return 0;
}

/* Pair two mapped threads: same mode, both or neither under a filter, and their chains. */
static int map_threads(Side *a, const Task *ta, Side *b, const Task *tb, const TaskPair *p, char **why) {
        if (ta->mode != tb->mode)
                return why_set(why, "tid %d of a is in mode %s but tid %d of b in mode %s", ta->tid,
                               task_mode_to_string(ta->mode), tb->tid, task_mode_to_string(tb->mode));
        if (!ta->filter != !tb->filter)
                return why_set(why, "tid %d of a %s a filter but tid %d of b %s", ta->tid,
                               ta->filter ? "runs under" : "has no", tb->tid, tb->filter ? "does" : "has none");
        if (!ta->filter)
                return 0;
        return map_chain(a, node_index(a, ta->filter), b, node_index(b, tb->filter), p, why);
}

/* Apply the given thread map: every pair is valid, and it covers every thread of both sides. */
static int apply_task_map(Side *a, Side *b, const TaskPair *map, size_t n_map, char **why) {
        for (size_t i = 0; i < n_map; i++) {
                ThreadRef *ta, *tb;
                int r = map_take(a, map[i].a, &ta, why);

                if (r == 0)
                        r = map_take(b, map[i].b, &tb, why);
                if (r == 0)
                        r = map_threads(a, ta->task, b, tb->task, &map[i], why);
                if (r != 0)
                        return r;
        }
        if (n_map != a->n_threads)
                return why_set(why, "task_map covers %zu of the %zu threads of a", n_map, a->n_threads);
        if (n_map != b->n_threads)
                return why_set(why, "task_map covers %zu of the %zu threads of b", n_map, b->n_threads);
        return 0;
}

/* The unmapped ones among a list of nodes. */
static int unmapped_of(const Side *s, const size_t *v, size_t n, IdxList *ret) {
        for (size_t i = 0; i < n; i++)
                if (s->nodes[v[i]].map == NONE && idx_push(ret, v[i]) < 0)
                        return -ENOMEM;
        return 0;
}

/* The unmapped children of node u, or the unmapped roots if u == NONE. */
static int unmapped_below(const Side *s, size_t u, IdxList *ret) {
        if (u == NONE)
                return unmapped_of(s, s->roots.v, s->roots.n, ret);
        return unmapped_of(s, s->nodes[u].children, s->nodes[u].n_children, ret);
}

/* Compare the unmapped subtrees hanging below mapped filters u (of a) and v (of b), or below
 * the roots if u == NONE. */
static int diff_unmapped_below(const Side *a, size_t u, const Side *b, size_t v, char **why) {
        _cleanup_(idx_list_done) IdxList la = {}, lb = {};
        char where[256] = "among the unreferenced roots";
        int r;

        if (u != NONE)
                snprintf(where, sizeof(where), "among the unreferenced children of filter %" PRIu64
                         " of a and filter %" PRIu64 " of b", a->nodes[u].filter->id, b->nodes[v].filter->id);
        r = unmapped_below(a, u, &la);
        if (r < 0)
                return r;
        r = unmapped_below(b, v, &lb);
        if (r < 0)
                return r;
        return diff_sets(a, &la, b, &lb, where, why);
}

/* Filters no mapped thread reaches must match too, wherever they hang. */
static int diff_unmapped(const Side *a, const Side *b, char **why) {
        int r = diff_unmapped_below(a, NONE, b, NONE, why);

        for (size_t u = 0; r == 0 && u < a->n_nodes; u++)
                if (a->nodes[u].map != NONE)
                        r = diff_unmapped_below(a, u, b, a->nodes[u].map, why);
        return r;
}

/* With a task map: the filter bijection is forced by the threads' heads. */
static int iso_mapped(Side *a, Side *b, const TaskPair *map, size_t n_map, char **why) {
        int r = apply_task_map(a, b, map, n_map, why);

        if (r != 0)
                return r;
        return diff_unmapped(a, b, why);
}

int forest_isomorphic(const Forest *a, const Forest *b, const TaskPair *task_map, size_t n_map, char **why) {
        _cleanup_(side_done) Side sa = {}, sb = {};
        int r;

        if (why)
                *why = NULL;
        if (!a || !b || !a->linked || !b->linked || (n_map > 0 && !task_map))
                return -EINVAL;
        r = side_init(&sa, a, "a");
        if (r < 0)
                return r;
        r = side_init(&sb, b, "b");
        if (r < 0)
                return r;
        r = classify(&sa, &sb);
        if (r < 0)
                return r;
        r = n_map == 0 ? iso_search(&sa, &sb, why) : iso_mapped(&sa, &sb, task_map, n_map, why);
        if (r < 0) {
                if (why) {
                        free(*why);
                        *why = NULL;
                }
                return r;
        }
        return r == 0; /* r == 1: a difference was found */
}
