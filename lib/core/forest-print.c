/* forest-print.c: the readable forest: filters nested under their parents, tasks under each,
 * like pstree */
#include "core/forest-print.h"

#include "core/escape.h"

typedef struct Glyph {
        const char *text;
        size_t len;
} Glyph;

typedef struct TreeGlyphs {
        Glyph branch, last, pipe, space;
} TreeGlyphs;

#define GLYPH(s) { s, sizeof(s) - 1 }

/* As libsmartcols draws its trees (sectreectl prints them with it): two columns a level, then a
 * space before the line's text. */
static const TreeGlyphs glyphs_unicode = { GLYPH("├─ "), GLYPH("└─ "), GLYPH("│ "), GLYPH("  ") };
static const TreeGlyphs glyphs_ascii = { GLYPH("|- "), GLYPH("`- "), GLYPH("| "), GLYPH("  ") };

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

/* A slot's entries in entry_cmp()'s order. Processes are placed in pid order and filters mostly
 * in the order of their first pids already: a check of n - 1 pairs spares most slots the sort
 * (the root filter of 20,000 sandboxed processes has as many entries). */
static void entries_sort(TreeEntry *e, size_t n, pid_t *first_pid) {
        for (size_t i = 1; i < n; i++)
                if (entry_cmp(&e[i - 1], &e[i], first_pid) > 0) {
                        qsort_r(e, n, sizeof(TreeEntry), entry_cmp, first_pid);
                        return;
                }
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

/* Two passes of a counting sort: count entries per slot, then place them, processes first as
 * entry_cmp() has them. */
static void tree_index_fill(const Forest *f, TreeIndex *ix, bool place) {
        size_t *pos = ix->start;
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
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = f->filters[i];
                size_t slot = x->parent ? x->parent->index : f->n_filters;
                if (place)
                        ix->entries[pos[slot]++] = (TreeEntry) { .filter = x };
                else
                        pos[slot + 1]++;
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
                entries_sort(ix->entries + ix->start[i], ix->start[i + 1] - ix->start[i], ix->first_pid);
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

/* The text of the tree's lines as they are made, in one buffer for the whole walk: tens of
 * thousands of lines, each a few numbers and a name, took stdio a call per piece. */
typedef struct LineBuf {
        char *text;
        size_t len, size;
        bool oom; /* an append failed: the walk ends with -ENOMEM */
} LineBuf;

/* Room for n more bytes and a NUL after them. */
static bool lb_reserve(LineBuf *b, size_t n) {
        if (b->oom)
                return false;
        if (b->len + n < b->size)
                return true;
        size_t size = MAX(MAX(b->size * 2, b->len + n + 1), (size_t) 4096);
        char *text = realloc(b->text, size);
        if (!text) {
                b->oom = true;
                return false;
        }
        b->text = text;
        b->size = size;
        return true;
}

static void lb_put(LineBuf *b, const char *s, size_t n) {
        if (!lb_reserve(b, n))
                return;
        memcpy(b->text + b->len, s, n);
        b->len += n;
}

/* A string literal, its length known when compiled. */
#define lb_lit(b, s) lb_put((b), "" s, sizeof(s) - 1)

static void lb_glyph(LineBuf *b, const Glyph *g) {
        lb_put(b, g->text, g->len);
}

static void lb_putc(LineBuf *b, char c) {
        lb_put(b, &c, 1);
}

/* v in decimal (most of the tree's text is numbers). */
static void lb_u64(LineBuf *b, uint64_t v) {
        char buf[20], *q = buf + sizeof(buf);

        do
                *--q = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        lb_put(b, q, (size_t) (buf + sizeof(buf) - q));
}

static void lb_int(LineBuf *b, int v) {
        if (v < 0)
                lb_putc(b, '-');
        lb_u64(b, v < 0 ? 0U - (unsigned) v : (unsigned) v);
}

/* s escaped (escape.h), written in place: an escape is at most four bytes for one. */
static void lb_escaped(LineBuf *b, const char *s) {
        size_t room = strlen(s) * 4 + 1;
        if (lb_reserve(b, room))
                b->len += str_escape_into(s, b->text + b->len, room);
}

/* The digest as the text views show it, "sha256:1a2b3c4d5e6f". */
static void lb_digest_short(LineBuf *b, const uint8_t digest[PROG_DIGEST_SIZE]) {
        char text[PROG_DIGEST_SHORT_STRING_MAX];
        lb_put(b, prog_digest_to_short_string(digest, text), sizeof(text) - 1);
}

static void print_filter_line(const Filter *x, size_t chain_tasks, LineBuf *out) {
        lb_lit(out, "filter ");
        lb_u64(out, x->id);
        lb_lit(out, "  ");
        lb_u64(out, x->len);
        lb_lit(out, " insns  ");
        lb_digest_short(out, x->digest);
        if (x->log)
                lb_lit(out, "  log");
        if (x->wait_killable_recv)
                lb_lit(out, "  wait_killable_recv");
        if (x->listener_id) {
                lb_lit(out, "  listener ");
                lb_u64(out, x->listener_id);
        } else if (x->has_listener)
                lb_lit(out, "  listener");
        if (x->identity == IDENTITY_INFERRED)
                lb_lit(out, "  (inferred)");
        lb_lit(out, "  [head of ");
        lb_u64(out, x->n_tasks);
        lb_lit(out, ", in the chains of ");
        lb_u64(out, chain_tasks);
        if (chain_tasks == 1)
                lb_lit(out, " task]");
        else
                lb_lit(out, " tasks]");
}

/* "[pid]": the line of most processes is this and their comm, tens of thousands of times. */
static void put_pid(pid_t pid, LineBuf *out) {
        lb_putc(out, '[');
        lb_int(out, pid);
        lb_putc(out, ']');
}

/* "listener 1 held by supervisor[812] fd 5, worker[700] fd 3" */
static void print_listener_holders(const Forest *f, const Listener *l, LineBuf *out) {
        lb_lit(out, "listener ");
        lb_u64(out, l->id);
        lb_lit(out, " held by");
        for (size_t i = 0; i < l->n_holders; i++) {
                const Process *p = forest_find_process(f, l->holders[i].pid);
                if (i)
                        lb_lit(out, ", ");
                else
                        lb_lit(out, " ");
                if (p || l->holders[i].comm[0])
                        lb_escaped(out, p ? p->comm : l->holders[i].comm);
                put_pid(l->holders[i].pid, out);
                lb_lit(out, " fd ");
                lb_int(out, l->holders[i].fd);
        }
        if (l->n_holders == 0)
                lb_lit(out, " nobody");
}

/* "comm[pid]" and, when not every thread of the process is in this slot or there are several,
 * the tids that are. */
static void print_process_line(const Forest *f, const Process *p, size_t slot, LineBuf *out) {
        size_t in_slot = 0;
        for (size_t j = 0; j < p->n_threads; j++)
                in_slot += process_slot(f, p, j) == slot;
        lb_escaped(out, p->comm);
        put_pid(p->pid, out);
        if (p->n_threads > 1) {
                lb_putc(out, ' ');
                lb_u64(out, in_slot);
                lb_putc(out, '/');
                lb_u64(out, p->n_threads);
                lb_lit(out, " threads:");
                for (size_t j = 0; j < p->n_threads; j++)
                        if (process_slot(f, p, j) == slot) {
                                lb_putc(out, ' ');
                                lb_int(out, p->threads[j].tid);
                        }
        }
        if (slot == f->n_filters + 1)
                for (size_t j = 0; j < p->n_threads; j++)
                        if (p->threads[j].mode == TASK_MODE_STRICT) {
                                lb_lit(out, " (strict)");
                                break;
                        }
        for (size_t j = 0; j < p->n_threads; j++)
                if (process_slot(f, p, j) == slot && p->threads[j].stale) {
                        lb_lit(out, " (stale)");
                        break;
                }
}

/* The text tree: each line after the glyphs of its ancestors (a bar where one has siblings below
 * it); top-level lines after a blank line, unless one is the first thing printed. The same lines
 * as sectreectl's libsmartcols tree (client/tree-table.c). */
typedef struct TextTree {
        const TreeGlyphs *g;
        FILE *out;
        LineBuf text; /* lines not yet written to out */
        bool blank_before_top;
        bool *last; /* by depth: was the last line at that depth the last of its siblings? */
        size_t n_last;
} TextTree;

typedef struct TreeWalker {
        const Forest *f;
        const TreeIndex *ix;
        bool collapse;
        ForestTreeLineFn fn;
        void *userdata;
        unsigned depth;
        LineBuf line; /* the line handed to fn, made again for each */
        TextTree *direct; /* instead of fn: each line written at once where the text tree goes */
} TreeWalker;

static int text_tree_prefix(TextTree *t, const ForestTreeLine *l);

static int walk_slot(TreeWalker *w, size_t slot);

/* Hand one line to the walker's function: its text is what write() puts in a LineBuf. */
typedef void (*LineWriter)(const TreeWalker *w, const void *what, size_t slot, LineBuf *out);

/* The text tree's lines go to its FILE a few dozen KiB at a time. */
#define TEXT_TREE_FLUSH_BYTES (64U << 10)

static int text_tree_flush(TextTree *t) {
        if (t->text.len > 0 && fwrite(t->text.text, 1, t->text.len, t->out) != t->text.len)
                return stdio_errno();
        t->text.len = 0;
        return 0;
}

static int emit(TreeWalker *w, ForestTreeLineKind kind, bool last, bool has_children, LineWriter write,
                const void *what, size_t slot) {
        if (w->direct) { /* the text tree's glyphs, then the line itself, with no copy between */
                ForestTreeLine l = { .kind = kind, .depth = w->depth, .last = last, .has_children = has_children };
                TextTree *t = w->direct;
                int r = text_tree_prefix(t, &l);
                if (r < 0)
                        return r;
                write(w, what, slot, &t->text);
                lb_putc(&t->text, '\n');
                if (t->text.oom)
                        return -ENOMEM;
                return t->text.len >= TEXT_TREE_FLUSH_BYTES ? text_tree_flush(t) : 0;
        }
        w->line.len = 0;
        write(w, what, slot, &w->line);
        if (!lb_reserve(&w->line, 0))
                return -ENOMEM;
        w->line.text[w->line.len] = 0;
        ForestTreeLine l = { .kind = kind, .depth = w->depth, .last = last, .has_children = has_children,
                             .text = w->line.text };
        return w->fn(&l, w->userdata);
}

static void write_filter(const TreeWalker *w, const void *what, size_t slot, LineBuf *out) {
        const Filter *x = what;
        print_filter_line(x, w->ix->chain_tasks[x->index], out);
}

static void write_listener(const TreeWalker *w, const void *what, size_t slot, LineBuf *out) {
        print_listener_holders(w->f, what, out);
}

static void write_process(const TreeWalker *w, const void *what, size_t slot, LineBuf *out) {
        print_process_line(w->f, what, slot, out);
}

static bool slot_has_entries(const TreeIndex *ix, size_t slot) {
        return ix->start[slot + 1] > ix->start[slot];
}

/* The filter's line, then the holders of its listener on a line of their own that continues it. */
static int walk_filter(TreeWalker *w, const Filter *x, bool last) {
        bool more = slot_has_entries(w->ix, x->index);
        int r = emit(w, FOREST_TREE_FILTER, last, more, write_filter, x, 0);
        const Listener *l = x->listener_id ? forest_find_listener(w->f, x->listener_id) : NULL;
        if (r >= 0 && l)
                r = emit(w, FOREST_TREE_LISTENER, last, more, write_listener, l, 0);
        if (r < 0)
                return r;
        w->depth++;
        r = walk_slot(w, x->index);
        w->depth--;
        return r;
}

static int walk_entry(TreeWalker *w, const TreeEntry *e, size_t slot, bool last) {
        if (e->process)
                return emit(w, FOREST_TREE_PROCESS, last, false, write_process, e->process, slot);
        return walk_filter(w, e->filter, last);
}

/* A process whose line would say nothing but "comm[pid]" in this slot: one thread, not stale, not
 * strict. Only such siblings are collapsed, so that nothing but their pids is lost. */
static bool process_is_plain(const Forest *f, const Process *p, size_t slot) {
        return p->n_threads == 1 && !p->threads[0].stale &&
               !(slot == f->n_filters + 1 && p->threads[0].mode == TASK_MODE_STRICT);
}

static bool entries_alike(const TreeWalker *w, const TreeEntry *a, const TreeEntry *b, size_t slot) {
        return a->process && b->process && process_is_plain(w->f, a->process, slot) &&
               process_is_plain(w->f, b->process, slot) && streq(a->process->comm, b->process->comm);
}

/* How many entries of [a, b) are alike e (e among them), and whether one before e is. */
static size_t count_alike(const TreeWalker *w, size_t slot, size_t a, size_t b, const TreeEntry *e,
                          bool *ret_seen_before) {
        size_t n = 0;
        *ret_seen_before = false;
        for (size_t i = a; i < b; i++) {
                const TreeEntry *x = &w->ix->entries[i];
                if (x != e && !entries_alike(w, x, e, slot))
                        continue;
                n++;
                if (x < e)
                        *ret_seen_before = true;
        }
        return n;
}

/* The number of lines the entries of [a, b) take: alike processes share one when collapsing. */
static size_t count_lines(const TreeWalker *w, size_t slot, size_t a, size_t b) {
        size_t n = 0;
        for (size_t i = a; i < b; i++) {
                bool before = false;
                if (w->collapse && w->ix->entries[i].process)
                        count_alike(w, slot, a, b, &w->ix->entries[i], &before);
                n += !before; /* the first of alike siblings takes their line */
        }
        return n;
}

typedef struct Collapsed {
        const Process *p;
        size_t n;
} Collapsed;

/* "200*[sleep]" */
static void write_collapsed(const TreeWalker *w, const void *what, size_t slot, LineBuf *out) {
        const Collapsed *c = what;
        lb_u64(out, c->n);
        lb_lit(out, "*[");
        lb_escaped(out, c->p->comm);
        lb_putc(out, ']');
}

/* Collapsing: e as the first of its alike siblings, or skipped (*ret_done). */
static int walk_alike(TreeWalker *w, size_t slot, const TreeEntry *e, size_t *n_printed, size_t n, bool *ret_done) {
        size_t a = w->ix->start[slot], b = w->ix->start[slot + 1];
        bool before;
        Collapsed c = { .p = e->process, .n = count_alike(w, slot, a, b, e, &before) };
        *ret_done = c.n > 1;
        if (c.n <= 1 || before)
                return 0;
        return emit(w, FOREST_TREE_PROCESS, ++*n_printed == n, false, write_collapsed, &c, slot);
}

/* The entries of one filter: its processes first, then its child filters. */
static int walk_slot(TreeWalker *w, size_t slot) {
        size_t a = w->ix->start[slot], b = w->ix->start[slot + 1];
        size_t n_printed = 0, n = count_lines(w, slot, a, b);
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = a; i < b; i++) {
                        const TreeEntry *e = &w->ix->entries[i];
                        bool done = false;
                        int r = 0;
                        if ((pass == 0) != (e->process != NULL))
                                continue;
                        if (w->collapse && e->process)
                                r = walk_alike(w, slot, e, &n_printed, n, &done);
                        if (r >= 0 && !done)
                                r = walk_entry(w, e, slot, ++n_printed == n);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static void write_unfiltered_title(const TreeWalker *w, const void *what, size_t slot, LineBuf *out) {
        lb_lit(out, "without a filter:");
}

/* The processes without a filter, under a title line of their own. */
static int walk_unfiltered(TreeWalker *w) {
        size_t slot = w->f->n_filters + 1;
        if (!slot_has_entries(w->ix, slot))
                return 0;
        w->depth = 0;
        int r = emit(w, FOREST_TREE_UNFILTERED, true, true, write_unfiltered_title, NULL, slot);
        if (r < 0)
                return r;
        w->depth = 1;
        return walk_slot(w, slot);
}

/* Every line of the tree, root filters first. */
static int tree_walk_lines(TreeWalker *w) {
        const Forest *f = w->f;
        const TreeIndex *ix = w->ix;
        int r;
        size_t a = ix->start[f->n_filters], b = ix->start[f->n_filters + 1];
        bool unfiltered = slot_has_entries(ix, f->n_filters + 1);
        /* Root filters are top-level lines, their subtrees indented below them. */
        for (size_t i = a; i < b; i++) {
                w->depth = 0;
                r = walk_filter(w, ix->entries[i].filter, i + 1 == b && !unfiltered);
                if (r < 0)
                        return r;
        }
        return walk_unfiltered(w);
}

/* The walk, each line handed to fn, or written where direct goes. */
static int tree_walk(const Forest *f, ForestPrintFlags flags, ForestTreeLineFn fn, void *userdata, TextTree *direct) {
        _cleanup_(tree_index_free) TreeIndex ix = {};
        int r = tree_index_build_linked(f, &ix);
        if (r < 0)
                return r;
        TreeWalker w = { .f = f, .ix = &ix, .collapse = flags & FOREST_PRINT_COLLAPSE, .fn = fn, .userdata = userdata,
                         .direct = direct };
        r = tree_walk_lines(&w);
        free(w.line.text);
        return r;
}

int forest_tree_walk(const Forest *f, ForestPrintFlags flags, ForestTreeLineFn fn, void *userdata) {
        return tree_walk(f, flags, fn, userdata, NULL);
}

/* Known listener objects, plus the filters that have one the forest holds no object for (a
 * forest built from the daemon's D-Bus replies only has the filters' "listener" flag). */
static size_t count_listeners(const Forest *f) {
        size_t n = f->n_listeners;
        for (size_t i = 0; i < f->n_filters; i++)
                n += f->filters[i]->has_listener && !f->filters[i]->listener_id;
        return n;
}

void forest_print_header(const Forest *f, FILE *out) {
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

/* What comes before the text of line l. */
static int text_tree_prefix(TextTree *t, const ForestTreeLine *l) {
        /* a listener's holders: the first line under its filter */
        unsigned depth = l->depth + (l->kind == FOREST_TREE_LISTENER);
        bool last = l->kind == FOREST_TREE_LISTENER ? !l->has_children : l->last;
        if (GROW(t->last, t->n_last, depth + 1) < 0)
                return -ENOMEM;
        t->last[depth] = last;
        if (depth == 0) {
                if (t->blank_before_top)
                        lb_putc(&t->text, '\n');
                t->blank_before_top = true;
        }
        for (unsigned i = 1; i < depth; i++)
                lb_glyph(&t->text, t->last[i] ? &t->g->space : &t->g->pipe);
        if (depth > 0)
                lb_glyph(&t->text, last ? &t->g->last : &t->g->branch);
        return 0;
}

int forest_print_tree(const Forest *f, FILE *out, ForestPrintFlags flags) {
        TextTree t = { .g = (flags & FOREST_PRINT_UNICODE) ? &glyphs_unicode : &glyphs_ascii, .out = out,
                       .blank_before_top = !(flags & FOREST_PRINT_NO_HEADER) };
        if (!(flags & FOREST_PRINT_NO_HEADER))
                forest_print_header(f, out);
        int r = tree_walk(f, flags, NULL, NULL, &t); /* the lines written as they are walked */
        if (r >= 0)
                r = text_tree_flush(&t);
        free(t.text.text);
        free(t.last);
        return fflush(out) == 0 ? r : stdio_errno();
}
