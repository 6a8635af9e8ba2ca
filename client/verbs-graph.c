/* verbs-graph.c: `graph [PID]`: the forest as a Graphviz digraph drawn left to right: root filters
 * on the left, the filters stacked on them to their right (each with an edge to its parent), the
 * processes on the right (an edge to each head filter of their threads) in a cluster per systemd
 * unit, alike processes of a whole machine as one node ("200*[sleep]"), listeners and their holders; byte-identical
 * filters that are distinct objects share a fill colour */
#include "verbs-graph.h"

#include <math.h>

#include "core/escape.h"
#include "core/forest-print.h"
#include "forest-json.h"
#include "live-forest.h"
#include "manager-units.h"
#include "output.h"
#include "verbs-tree.h"

/* Graphviz's colour schemes of light colours: copies take them in turn. */
#define COPY_COLOURS 9
#define COPY_COLOUR_SCHEME "pastel19"

/* Write s as the inside of a DOT double-quoted string: control characters escaped as in text
 * output (escape.h), and those escapes' backslashes and quotes escaped for DOT. */
static void dot_escape(const char *s, FILE *out) {
        char buf[COMM_ESCAPED_MAX];
        for (const char *p = str_escape_buf(s, buf, sizeof(buf)); *p; p++) {
                if (*p == '"' || *p == '\\')
                        fputc('\\', out);
                fputc(*p, out);
        }
}

/* For each filter (by index), 0 when its bytes are its own, or 1 + the number of the group of
 * byte-identical filters (same digest, other objects) it belongs to, numbered in display order. */
static int copy_groups(const Forest *f, const Filter *const *order, unsigned **ret) {
        _cleanup_free_ unsigned *group = calloc(f->n_filters + 1, sizeof(unsigned));
        if (!group)
                return -ENOMEM;
        unsigned n = 0;
        for (size_t i = 0; i < f->n_filters; i++) {
                const Filter *x = order[i];
                if (group[x->index])
                        continue;
                for (size_t j = i + 1; j < f->n_filters; j++)
                        if (!group[order[j]->index] && memcmp(x->digest, order[j]->digest, PROG_DIGEST_SIZE) == 0)
                                group[x->index] = group[order[j]->index] = n + 1;
                n += group[x->index] != 0;
        }
        *ret = TAKE_PTR(group);
        return 0;
}

/* The fill of copy group n (from 1): the scheme's nine light colours, then light colours of hues
 * spread by the golden ratio, so that no two groups share one however many there are. */
static const char *copy_colour(unsigned n, char *buf, size_t len) {
        if (n <= COPY_COLOURS)
                snprintf(buf, len, "/" COPY_COLOUR_SCHEME "/%u", n);
        else
                snprintf(buf, len, "%.4f 0.35 0.95", fmod(0.05 + (n - COPY_COLOURS) * 0.6180339887, 1.0));
        return buf;
}

static void graph_filter(const Filter *x, unsigned group, bool counts, FILE *out) {
        char digest[PROG_DIGEST_STRING_MAX];
        prog_digest_to_string(x->digest, digest);
        fprintf(out, "        f%" PRIu64 " [label=\"filter %" PRIu64 "\\n%zu insns\\n%.19s", x->id, x->id, x->len,
                digest);
        if (x->log)
                fputs("\\nlog", out);
        if (x->has_listener)
                fputs("\\nlistener", out);
        if (counts)
                fprintf(out, "\\n%zu task%s", x->n_tasks, x->n_tasks == 1 ? "" : "s");
        fputs("\"", out);
        if (group) {
                char colour[32];
                fprintf(out, ", style=\"filled%s\", fillcolor=\"%s\"", x->identity == IDENTITY_INFERRED ? ",dashed" : "",
                        copy_colour(group, colour, sizeof(colour)));
        }
        else if (x->identity == IDENTITY_INFERRED)
                fputs(", style=dashed", out);
        fputs("];\n", out);
        if (x->parent)
                fprintf(out, "        f%" PRIu64 " -> f%" PRIu64 ";\n", x->id, x->parent->id);
}

/* How many threads of p run under head, and whether an earlier thread already had it. */
static size_t threads_under(const Process *p, size_t j, bool *ret_seen) {
        size_t n = 0;
        *ret_seen = false;
        for (size_t k = 0; k < p->n_threads; k++)
                if (p->threads[k].filter == p->threads[j].filter) {
                        n++;
                        *ret_seen = *ret_seen || k < j;
                }
        return n;
}

static void graph_process_node(const Process *p, const char *indent, FILE *out) {
        fprintf(out, "%sp%d [shape=ellipse, label=\"", indent, p->pid);
        dot_escape(p->comm, out);
        fprintf(out, "[%d]\"];\n", p->pid);
}

static bool process_holds_listener(const Forest *f, pid_t pid) {
        for (size_t i = 0; i < f->n_listeners; i++)
                for (size_t j = 0; j < f->listeners[i]->n_holders; j++)
                        if (f->listeners[i]->holders[j].pid == pid)
                                return true;
        return false;
}

/* One node per filtered process (or listener holder), one edge to each distinct head filter of
 * its threads. */
static void graph_process(const Forest *f, const Process *p, const char *indent, FILE *out) {
        bool node = false;
        for (size_t j = 0; j < p->n_threads; j++) {
                bool seen;
                size_t n = threads_under(p, j, &seen);
                if (!p->threads[j].filter || seen)
                        continue;
                if (!node)
                        graph_process_node(p, indent, out);
                node = true;
                fprintf(out, "%sp%d -> f%" PRIu64, indent, p->pid, p->threads[j].filter->id);
                if (p->n_threads > 1)
                        fprintf(out, " [label=\"%zu/%zu threads\"]", n, p->n_threads);
                fputs(";\n", out);
        }
        if (!node && process_holds_listener(f, p->pid))
                graph_process_node(p, indent, out);
}

/* Where each process is drawn: the cluster of its unit (or none), and whether it stands for
 * alike siblings, as tree collapses them. */
typedef struct ProcessPlace {
        const char *unit;  /* the unit's label (UnitRecord), NULL: outside every cluster */
        size_t alike;      /* the first of alike processes: how many (1: itself alone) */
        bool hidden;       /* drawn by the first of its alike processes */
} ProcessPlace;

typedef struct GraphProcesses {
        const Forest *f;
        ProcessPlace *places; /* by index in f->processes */
        char **labels;        /* the units' labels, owned */
} GraphProcesses;

static void graph_processes_done(GraphProcesses *g) {
        for (size_t i = 0; g->labels && i < g->f->n_processes; i++)
                free(g->labels[i]);
        free(g->labels);
        free(g->places);
}

/* A process a single node says all of: one thread, under a filter, not stale, no listener held. */
static bool process_is_plain(const Forest *f, const Process *p) {
        return p->n_threads == 1 && p->threads[0].filter && !p->threads[0].stale &&
               !process_holds_listener(f, p->pid);
}

static bool processes_alike(const GraphProcesses *g, size_t a, size_t b) {
        const Process *x = g->f->processes[a], *y = g->f->processes[b];
        return process_is_plain(g->f, x) && process_is_plain(g->f, y) && x->threads[0].filter == y->threads[0].filter &&
               streq(x->comm, y->comm) && streq_ptr(g->places[a].unit, g->places[b].unit);
}

/* Alike processes (same name, head filter and unit) are one node "N*[comm]", that of the first. */
static void graph_processes_collapse(GraphProcesses *g) {
        for (size_t i = 0; i < g->f->n_processes; i++) {
                if (g->places[i].hidden)
                        continue;
                for (size_t j = i + 1; j < g->f->n_processes; j++)
                        if (!g->places[j].hidden && processes_alike(g, i, j)) {
                                g->places[j].hidden = true;
                                g->places[i].alike++;
                        }
        }
}

static int graph_processes_init(GraphProcesses *g, const Forest *f, const UnitList *units, bool collapse) {
        *g = (GraphProcesses) { .f = f, .places = calloc(f->n_processes + 1, sizeof(ProcessPlace)),
                                .labels = calloc(f->n_processes + 1, sizeof(char *)) };
        if (!g->places || !g->labels)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_processes; i++) {
                char buf[512];
                const char *label = unit_record_label(unit_list_find(units, (uint32_t) f->processes[i]->pid), buf,
                                                      sizeof(buf));
                if (label && !(g->labels[i] = strdup(label)))
                        return -ENOMEM;
                g->places[i] = (ProcessPlace) { .unit = g->labels[i], .alike = 1 };
        }
        if (collapse)
                graph_processes_collapse(g);
        return 0;
}

/* "200*[sleep]", with its edge to the head filter they share. */
static void graph_collapsed(const Process *p, size_t n, const char *indent, FILE *out) {
        fprintf(out, "%sc%d [shape=ellipse, label=\"%zu*[", indent, p->pid, n);
        dot_escape(p->comm, out);
        fprintf(out, "]\"];\n%sc%d -> f%" PRIu64 ";\n", indent, p->pid, p->threads[0].filter->id);
}

/* The processes of one unit (NULL: of none), in the forest's order. */
static void graph_unit_processes(const GraphProcesses *g, const char *unit, const char *indent, FILE *out) {
        for (size_t i = 0; i < g->f->n_processes; i++) {
                const ProcessPlace *x = &g->places[i];
                if (x->hidden || !streq_ptr(x->unit, unit))
                        continue;
                if (x->alike > 1)
                        graph_collapsed(g->f->processes[i], x->alike, indent, out);
                else
                        graph_process(g->f, g->f->processes[i], indent, out);
        }
}

/* Is process i the first of its unit (in the forest's order)? */
static bool unit_first_at(const GraphProcesses *g, size_t i) {
        for (size_t j = 0; j < i; j++)
                if (streq_ptr(g->places[j].unit, g->places[i].unit))
                        return false;
        return true;
}

/* Processes outside every unit at the top; each unit's in a cluster of its own, labelled with it. */
static void graph_all_processes(const GraphProcesses *g, FILE *out) {
        size_t cluster = 0;
        graph_unit_processes(g, NULL, "        ", out);
        for (size_t i = 0; i < g->f->n_processes; i++) {
                const char *unit = g->places[i].unit;
                if (!unit || !unit_first_at(g, i))
                        continue;
                fprintf(out, "        subgraph cluster_%zu {\n                label=\"", ++cluster);
                dot_escape(unit, out);
                fputs("\";\n                style=rounded;\n", out);
                graph_unit_processes(g, unit, "                ", out);
                fputs("        }\n", out);
        }
}

/* Whether the holder at (listener i, holder j) is the first mention of its pid among the holders. */
static bool holder_first(const Forest *f, size_t i, size_t j) {
        pid_t pid = f->listeners[i]->holders[j].pid;
        for (size_t a = 0; a <= i; a++)
                for (size_t b = 0; b < (a < i ? f->listeners[a]->n_holders : j); b++)
                        if (f->listeners[a]->holders[b].pid == pid)
                                return false;
        return true;
}

/* The listeners' holders that are not processes of the forest (a supervisor without filters),
 * each a node of its own, by the name the listener gives. */
static void graph_outside_holders(const Forest *f, FILE *out) {
        for (size_t i = 0; i < f->n_listeners; i++)
                for (size_t j = 0; j < f->listeners[i]->n_holders; j++) {
                        const ListenerHolder *h = &f->listeners[i]->holders[j];
                        if (forest_find_process(f, h->pid) || !holder_first(f, i, j))
                                continue;
                        fprintf(out, "        p%d [shape=ellipse, label=\"", h->pid);
                        dot_escape(h->comm, out);
                        fprintf(out, "[%d]\"];\n", h->pid);
                }
}

/* A node for each listener, a dashed edge to its filter, and one from each holder, labelled with
 * its fd. */
static void graph_listener(const Listener *l, FILE *out) {
        fprintf(out, "        l%" PRIu64 " [shape=diamond, label=\"listener %" PRIu64 "\"];\n", l->id, l->id);
        fprintf(out, "        l%" PRIu64 " -> f%" PRIu64 " [style=dashed];\n", l->id, l->filter_id);
        for (size_t i = 0; i < l->n_holders; i++)
                fprintf(out, "        p%d -> l%" PRIu64 " [label=\"fd %d\", style=dashed];\n", l->holders[i].pid, l->id,
                        l->holders[i].fd);
}

static int graph_print(const Forest *f, const UnitList *units, bool counts, bool collapse, FILE *out) {
        _cleanup_free_ unsigned *groups = NULL;
        _cleanup_free_ const Filter **order = calloc(f->n_filters + 1, sizeof(Filter *));
        _cleanup_(graph_processes_done) GraphProcesses g = {};
        if (!order || forest_display_order(f, order) < 0 || copy_groups(f, order, &groups) < 0 ||
            graph_processes_init(&g, f, units, collapse) < 0)
                return log_oom();
        /* rankdir=RL with edges from child to parent: roots on the left, processes on the right */
        fputs("digraph sectree {\n"
              "        rankdir=RL;\n"
              "        fontname=\"monospace\";\n"
              "        labelloc=b;\n"
              "        label=\"Arrows lead to the filter each filter was stacked on, and from each process to the "
              "head filter of its threads.\\lBoxes of one colour: byte-identical filters that are distinct "
              "kernel objects (copies).\\lRounded boxes: the processes of one systemd unit. N*[name]: N processes of one "
              "name, unit and head filter.\\l\";\n"
              "        node [shape=box, fontname=\"monospace\"];\n"
              "        edge [fontname=\"monospace\"];\n",
              out);
        /* in the tree's order, so that the drawing does not depend on the order of the ids */
        for (size_t i = 0; i < f->n_filters; i++)
                graph_filter(order[i], groups[order[i]->index], counts, out);
        if (!counts) {
                graph_all_processes(&g, out);
                graph_outside_holders(f, out);
        }
        for (size_t i = 0; !counts && i < f->n_listeners; i++)
                graph_listener(f->listeners[i], out);
        fputs("}\n", out);
        return output_flush();
}

int verb_graph(Context *c, char **args, size_t n_args) {
        _cleanup_(forest_freep) Forest *f = NULL;
        _cleanup_(unit_list_done) UnitList units = {};
        int r = fetch_forest(c, args, n_args, &f);
        if (r < 0)
                return r;
        if (c->json)
                return print_forest_json(f);
        /* the daemon's units, or those the snapshot file records */
        if (!c->graph_counts && (r = context_units_of(c, f, &units)) < 0)
                return r;
        /* a whole machine is read at a glance: alike processes as one node; a subtree, in detail */
        return graph_print(f, &units, c->graph_counts, f->root == 0 && !c->all, stdout);
}
