/* forest-print.c: the readable forest: filters nested under their parents, tasks under each,
 * like pstree */
#include "core/forest-print.h"

#include "core/escape.h"

typedef struct TreeGlyphs {
        const char *branch, *last, *pipe, *space;
} TreeGlyphs;

static const TreeGlyphs glyphs_unicode = { "├─ ", "└─ ", "│  ", "   " };
static const TreeGlyphs glyphs_ascii = { "|- ", "`- ", "|  ", "   " };

/* One entry under a filter: a child filter, or a process with the threads that run under it. */
typedef struct TreeEntry {
        const Filter *filter;
        const Process *process;
} TreeEntry;

typedef struct TreeIndex {
        TreeEntry *entries; /* grouped by parent filter index; roots use slot n_filters */
        size_t *start;      /* entries of slot i: [start[i], start[i + 1]) */
        size_t *chain_tasks; /* by filter index: the threads whose chain holds it */
        pid_t *first_pid;   /* by filter index: the lowest pid of a process running under it, 0: none */
} TreeIndex;

static void tree_index_free(TreeIndex *ix) {
        free(ix->entries);
        free(ix->start);
        free(ix->chain_tasks);
        free(ix->first_pid);
}

/* For each filter, the lowest pid of a process with a thread whose chain holds it (0: none). The
 * tree shows sibling filters in that order, so that it reads as the process tree does and does
 * not depend on the order in which the filters got their ids. */
static void count_first_pids(const Forest *f, pid_t *ret) {
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        const Filter *h = f->processes[i]->threads[j].filter;
                        if (h && (!ret[h->index] || f->processes[i]->pid < ret[h->index]))
                                ret[h->index] = f->processes[i]->pid;
                }
        for (size_t i = f->n_filters; i-- > 0;) {
                const Filter *p = f->filters[i]->parent;
                if (p && ret[i] && (!ret[p->index] || ret[i] < ret[p->index]))
                        ret[p->index] = ret[i];
        }
}

/* Processes first, by pid; then filters by their first pid (filters nobody runs under last),
 * then by id. */
static int entry_cmp(const void *a, const void *b, void *userdata) {
        const TreeEntry *x = a, *y = b;
        const pid_t *first = userdata;
        if (!x->filter != !y->filter)
                return x->filter ? 1 : -1;
        if (!x->filter)
                return x->process->pid < y->process->pid ? -1 : x->process->pid > y->process->pid;
        pid_t px = first[x->filter->index], py = first[y->filter->index];
        if (px != py)
                return !px ? 1 : !py ? -1 : px < py ? -1 : 1;
        return x->filter->id < y->filter->id ? -1 : x->filter->id > y->filter->id;
}

void forest_count_chain_tasks(const Forest *f, size_t *ret) {
        for (size_t i = 0; i < f->n_filters; i++)
                ret[i] = f->filters[i]->n_tasks;
        /* parents come before children: walking backwards, a filter's count is complete before it
         * is added to its parent's */
        for (size_t i = f->n_filters; i-- > 0;)
                if (f->filters[i]->parent)
                        ret[f->filters[i]->parent->index] += ret[i];
}

static size_t process_slot(const Forest *f, const Process *p, size_t j) {
        const Filter *h = p->threads[j].filter;
        return h ? h->index : f->n_filters + 1; /* n_filters + 1: not under any filter */
}

/* Does an earlier thread of p already put p into the same slot? */
static bool process_seen_in_slot(const Forest *f, const Process *p, size_t j) {
        for (size_t k = 0; k < j; k++)
                if (process_slot(f, p, k) == process_slot(f, p, j))
                        return true;
        return false;
}

/* Two passes of a counting sort: count entries per slot, then place them. */
static void tree_index_fill(const Forest *f, TreeIndex *ix, bool place) {
        size_t *pos = ix->start;
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = f->filters[i];
                size_t slot = x->parent ? x->parent->index : f->n_filters;
                if (place)
                        ix->entries[pos[slot]++] = (TreeEntry) { .filter = x };
                else
                        pos[slot + 1]++;
        }
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                for (size_t j = 0; j < p->n_threads; j++) {
                        if (process_seen_in_slot(f, p, j))
                                continue;
                        size_t slot = process_slot(f, p, j);
                        if (place)
                                ix->entries[pos[slot]++] = (TreeEntry) { .process = p };
                        else
                                pos[slot + 1]++;
                }
        }
}

static int tree_index_build(const Forest *f, TreeIndex *ix) {
        size_t slots = f->n_filters + 2, total = 0;
        ix->start = calloc(slots + 1, sizeof(size_t));
        if (!ix->start)
                return -ENOMEM;
        tree_index_fill(f, ix, false);
        for (size_t i = 1; i <= slots; i++) {
                total += ix->start[i];
                ix->start[i] = total;
        }
        ix->entries = calloc(total + 1, sizeof(TreeEntry));
        ix->chain_tasks = calloc(f->n_filters + 1, sizeof(size_t));
        ix->first_pid = calloc(f->n_filters + 1, sizeof(pid_t));
        _cleanup_free_ size_t *cursor = malloc((slots + 1) * sizeof(size_t));
        if (!ix->entries || !ix->chain_tasks || !ix->first_pid || !cursor)
                return -ENOMEM;
        forest_count_chain_tasks(f, ix->chain_tasks);
        count_first_pids(f, ix->first_pid);
        memcpy(cursor, ix->start, (slots + 1) * sizeof(size_t));
        size_t *saved = ix->start;
        ix->start = cursor;
        tree_index_fill(f, ix, true);
        ix->start = saved;
        for (size_t i = 0; i < slots; i++)
                if (ix->start[i + 1] - ix->start[i] > 1)
                        qsort_r(ix->entries + ix->start[i], ix->start[i + 1] - ix->start[i], sizeof(TreeEntry),
                                entry_cmp, ix->first_pid);
        return 0;
}

/* The index of a linked forest: -EINVAL for one that is not. */
static int tree_index_build_linked(const Forest *f, TreeIndex *ix) {
        return f->linked ? tree_index_build(f, ix) : -EINVAL;
}

static void display_order_collect(const TreeIndex *ix, size_t slot, const Filter **ret, size_t *n) {
        for (size_t i = ix->start[slot]; i < ix->start[slot + 1]; i++)
                if (ix->entries[i].filter) {
                        ret[(*n)++] = ix->entries[i].filter;
                        display_order_collect(ix, ix->entries[i].filter->index, ret, n);
                }
}

int forest_display_order(const Forest *f, const Filter **ret) {
        _cleanup_(tree_index_free) TreeIndex ix = {};
        int r = tree_index_build_linked(f, &ix);
        if (r < 0)
                return r;
        size_t n = 0;
        display_order_collect(&ix, f->n_filters, ret, &n);
        return 0;
}

static void print_filter_line(const Filter *x, size_t chain_tasks, FILE *out) {
        char digest[PROG_DIGEST_STRING_MAX];
        prog_digest_to_string(x->digest, digest);
        fprintf(out, "filter %" PRIu64 "  %zu insns  %.19s", x->id, x->len, digest);
        if (x->log)
                fputs("  log", out);
        if (x->wait_killable_recv)
                fputs("  wait_killable_recv", out);
        if (x->listener_id)
                fprintf(out, "  listener %" PRIu64, x->listener_id);
        else if (x->has_listener)
                fputs("  listener", out);
        if (x->identity == IDENTITY_INFERRED)
                fputs("  (inferred)", out);
        fprintf(out, "  [head of %zu, in the chains of %zu task%s]\n", x->n_tasks, chain_tasks,
                chain_tasks == 1 ? "" : "s");
}

/* "listener 1 held by supervisor[812] fd 5, worker[700] fd 3" */
static void print_listener_holders(const Forest *f, const Listener *l, FILE *out) {
        fprintf(out, "listener %" PRIu64 " held by", l->id);
        for (size_t i = 0; i < l->n_holders; i++) {
                const Process *p = forest_find_process(f, l->holders[i].pid);
                fputs(i ? ", " : " ", out);
                if (p || l->holders[i].comm[0])
                        fputs_escaped(p ? p->comm : l->holders[i].comm, out);
                fprintf(out, "[%d] fd %d", l->holders[i].pid, l->holders[i].fd);
        }
        if (l->n_holders == 0)
                fputs(" nobody", out);
        fputc('\n', out);
}

/* "comm[pid]" and, when not every thread of the process is in this slot or there are several,
 * the tids that are. */
static void print_process_line(const Forest *f, const Process *p, size_t slot, FILE *out) {
        size_t in_slot = 0;
        for (size_t j = 0; j < p->n_threads; j++)
                in_slot += process_slot(f, p, j) == slot;
        fputs_escaped(p->comm, out);
        fprintf(out, "[%d]", p->pid);
        if (p->n_threads > 1) {
                fprintf(out, " %zu/%zu threads:", in_slot, p->n_threads);
                for (size_t j = 0; j < p->n_threads; j++)
                        if (process_slot(f, p, j) == slot)
                                fprintf(out, " %d", p->threads[j].tid);
        }
        if (slot == f->n_filters + 1)
                for (size_t j = 0; j < p->n_threads; j++)
                        if (p->threads[j].mode == TASK_MODE_STRICT) {
                                fputs(" (strict)", out);
                                break;
                        }
        for (size_t j = 0; j < p->n_threads; j++)
                if (process_slot(f, p, j) == slot && p->threads[j].stale) {
                        fputs(" (stale)", out);
                        break;
                }
        fputc('\n', out);
}

typedef struct TreePrinter {
        const Forest *f;
        const TreeIndex *ix;
        const TreeGlyphs *g;
        bool collapse;
        FILE *out;
        char *prefix;
        size_t prefix_len, prefix_allocated;
} TreePrinter;

static int print_slot(TreePrinter *tp, size_t slot);

/* The filter's line, then the holders of its listener on a line of their own under it (the
 * prefix is already the one of the filter's entries). */
static void print_filter(TreePrinter *tp, const Filter *x) {
        print_filter_line(x, tp->ix->chain_tasks[x->index], tp->out);
        const Listener *l = x->listener_id ? forest_find_listener(tp->f, x->listener_id) : NULL;
        if (!l)
                return;
        bool more = tp->ix->start[x->index + 1] > tp->ix->start[x->index];
        fprintf(tp->out, "%.*s%s", (int) tp->prefix_len, tp->prefix, more ? tp->g->pipe : tp->g->space);
        print_listener_holders(tp->f, l, tp->out);
}

static int print_entry(TreePrinter *tp, const TreeEntry *e, size_t slot, bool last) {
        fprintf(tp->out, "%.*s%s", (int) tp->prefix_len, tp->prefix, last ? tp->g->last : tp->g->branch);
        if (e->process) {
                print_process_line(tp->f, e->process, slot, tp->out);
                return 0;
        }
        const char *extend = last ? tp->g->space : tp->g->pipe;
        size_t saved = tp->prefix_len, l = strlen(extend);
        if (GROW(tp->prefix, tp->prefix_allocated, tp->prefix_len + l + 1) < 0)
                return -ENOMEM;
        memcpy(tp->prefix + tp->prefix_len, extend, l);
        tp->prefix_len += l;
        print_filter(tp, e->filter);
        int r = print_slot(tp, e->filter->index);
        tp->prefix_len = saved;
        return r;
}

/* A process whose line would say nothing but "comm[pid]" in this slot: one thread, not stale, not
 * strict. Only such siblings are collapsed, so that nothing but their pids is lost. */
static bool process_is_plain(const Forest *f, const Process *p, size_t slot) {
        return p->n_threads == 1 && !p->threads[0].stale &&
               !(slot == f->n_filters + 1 && p->threads[0].mode == TASK_MODE_STRICT);
}

static bool entries_alike(const TreePrinter *tp, const TreeEntry *a, const TreeEntry *b, size_t slot) {
        return a->process && b->process && process_is_plain(tp->f, a->process, slot) &&
               process_is_plain(tp->f, b->process, slot) && streq(a->process->comm, b->process->comm);
}

/* How many entries of [a, b) are alike e (e among them), and whether one before e is. */
static size_t count_alike(const TreePrinter *tp, size_t slot, size_t a, size_t b, const TreeEntry *e,
                          bool *ret_seen_before) {
        size_t n = 0;
        *ret_seen_before = false;
        for (size_t i = a; i < b; i++) {
                const TreeEntry *x = &tp->ix->entries[i];
                if (x != e && !entries_alike(tp, x, e, slot))
                        continue;
                n++;
                if (x < e)
                        *ret_seen_before = true;
        }
        return n;
}

/* The number of lines the entries of [a, b) take: alike processes share one when collapsing. */
static size_t count_lines(const TreePrinter *tp, size_t slot, size_t a, size_t b) {
        size_t n = 0;
        for (size_t i = a; i < b; i++) {
                bool before = false;
                if (tp->collapse && tp->ix->entries[i].process)
                        count_alike(tp, slot, a, b, &tp->ix->entries[i], &before);
                n += !before; /* the first of alike siblings takes their line */
        }
        return n;
}

/* "200*[sleep]" */
static void print_collapsed(const TreePrinter *tp, const Process *p, size_t n, bool last) {
        fprintf(tp->out, "%.*s%s%zu*[", (int) tp->prefix_len, tp->prefix, last ? tp->g->last : tp->g->branch, n);
        fputs_escaped(p->comm, tp->out);
        fputs("]\n", tp->out);
}

/* Collapsing: print e as the first of its alike siblings, or skip it (*ret_done). */
static void print_alike(TreePrinter *tp, size_t slot, const TreeEntry *e, size_t *n_printed, size_t n, bool *ret_done) {
        size_t a = tp->ix->start[slot], b = tp->ix->start[slot + 1];
        bool before;
        size_t alike = count_alike(tp, slot, a, b, e, &before);
        *ret_done = alike > 1;
        if (alike <= 1 || before)
                return;
        print_collapsed(tp, e->process, alike, ++*n_printed == n);
}

/* The entries of one filter: its processes first, then its child filters. */
static int print_slot(TreePrinter *tp, size_t slot) {
        size_t a = tp->ix->start[slot], b = tp->ix->start[slot + 1];
        size_t n_printed = 0, n = count_lines(tp, slot, a, b);
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = a; i < b; i++) {
                        const TreeEntry *e = &tp->ix->entries[i];
                        bool done = false;
                        if ((pass == 0) != (e->process != NULL))
                                continue;
                        if (tp->collapse && e->process)
                                print_alike(tp, slot, e, &n_printed, n, &done);
                        if (done)
                                continue;
                        int r = print_entry(tp, e, slot, ++n_printed == n);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Known listener objects, plus the filters that have one the forest holds no object for (a
 * forest built from the daemon's D-Bus replies only has the filters' "listener" flag). */
static size_t count_listeners(const Forest *f) {
        size_t n = f->n_listeners;
        for (size_t i = 0; i < f->n_filters; i++)
                n += f->filters[i]->has_listener && !f->filters[i]->listener_id;
        return n;
}

static void print_header(const Forest *f, FILE *out) {
        size_t n_threads = 0, n_listeners = count_listeners(f);
        for (size_t i = 0; i < f->n_processes; i++)
                n_threads += f->processes[i]->n_threads;
        fputs("Seccomp filter forest of ", out);
        fputs_escaped(f->host.hostname ? f->host.hostname : "?", out);
        if (f->root)
                fprintf(out, ", subtree of process %d", f->root);
        fputs(" (kernel ", out);
        fputs_escaped(f->host.kernel ? f->host.kernel : "?", out);
        fputs(", ", out);
        fputs_escaped(f->backend ? f->backend : "?", out);
        fprintf(out, " backend, %s identity)\n", identity_kind_to_string(f->identity));
        fprintf(out, "%zu filter%s, %zu process%s, %zu thread%s, %zu listener%s\n", f->n_filters,
                f->n_filters == 1 ? "" : "s", f->n_processes, f->n_processes == 1 ? "" : "es", n_threads,
                n_threads == 1 ? "" : "s", n_listeners, n_listeners == 1 ? "" : "s");
}

/* After a blank line, unless it is the first thing printed. */
static void print_unfiltered(TreePrinter *tp, bool first) {
        size_t slot = tp->f->n_filters + 1;
        if (tp->ix->start[slot] == tp->ix->start[slot + 1])
                return;
        fputs(first ? "without a filter:\n" : "\nwithout a filter:\n", tp->out);
        tp->prefix_len = 0;
        (void) print_slot(tp, slot); /* processes only: nothing to allocate */
}

int forest_print_tree(const Forest *f, FILE *out, ForestPrintFlags flags) {
        _cleanup_(tree_index_free) TreeIndex ix = {};
        int r = tree_index_build_linked(f, &ix);
        if (r < 0)
                return r;
        TreePrinter tp = { .f = f, .ix = &ix, .out = out,
                           .g = (flags & FOREST_PRINT_UNICODE) ? &glyphs_unicode : &glyphs_ascii,
                           .collapse = flags & FOREST_PRINT_COLLAPSE };
        if (!(flags & FOREST_PRINT_NO_HEADER))
                print_header(f, out);
        /* Root filters are top-level lines, their subtrees indented below them. */
        for (size_t i = ix.start[f->n_filters]; i < ix.start[f->n_filters + 1]; i++) {
                const Filter *root = ix.entries[i].filter;
                if (!(flags & FOREST_PRINT_NO_HEADER) || i > ix.start[f->n_filters])
                        fputc('\n', out);
                tp.prefix_len = 0;
                print_filter(&tp, root);
                r = print_slot(&tp, root->index);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                print_unfiltered(&tp, (flags & FOREST_PRINT_NO_HEADER) && ix.start[f->n_filters] == ix.start[f->n_filters + 1]);
        free(tp.prefix);
        return fflush(out) == 0 ? r : -EIO;
}
