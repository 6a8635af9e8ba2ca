/* verbs-graph.c: `graph [PID]`: the forest as a Graphviz digraph, edges from child to parent */
#include "verbs-tree.h"
#include "escape.h"
#include "forest-json.h"
#include "live-forest.h"
#include "output.h"

/* Write s as the inside of a DOT double-quoted string: control characters escaped as in text
 * output (escape.h), and those escapes' backslashes and quotes escaped for DOT. */
static int dot_escape(const char *s, FILE *out) {
        _cleanup_free_ char *text = str_escape(s);
        if (!text)
                return -ENOMEM;
        for (const char *p = text; *p; p++) {
                if (*p == '"' || *p == '\\')
                        fputc('\\', out);
                fputc(*p, out);
        }
        return 0;
}

static void graph_filter(const Filter *x, bool counts, FILE *out) {
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
        if (x->identity == IDENTITY_INFERRED)
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

/* One node per filtered process, one edge to each distinct head filter of its threads. */
static void graph_process(const Process *p, FILE *out) {
        bool node = false;
        for (size_t j = 0; j < p->n_threads; j++) {
                bool seen;
                size_t n = threads_under(p, j, &seen);
                if (!p->threads[j].filter || seen)
                        continue;
                if (!node) {
                        fprintf(out, "        p%d [shape=ellipse, label=\"", p->pid);
                        dot_escape(p->comm, out);
                        fprintf(out, "[%d]\"];\n", p->pid);
                        node = true;
                }
                fprintf(out, "        p%d -> f%" PRIu64, p->pid, p->threads[j].filter->id);
                if (p->n_threads > 1)
                        fprintf(out, " [label=\"%zu/%zu threads\"]", n, p->n_threads);
                fputs(";\n", out);
        }
}

static int graph_print(const Forest *f, bool counts, FILE *out) {
        fputs("digraph sectree {\n"
              "        rankdir=BT;\n"
              "        node [shape=box, fontname=\"monospace\"];\n", out);
        for (size_t i = 0; i < f->n_filters; i++)
                graph_filter(f->filters[i], counts, out);
        for (size_t i = 0; !counts && i < f->n_processes; i++)
                graph_process(f->processes[i], out);
        fputs("}\n", out);
        return output_flush();
}

int verb_graph(Context *c, char **args, size_t n_args) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = fetch_forest(c, args, n_args, &f);
        if (r < 0)
                return r;
        if (c->json)
                return print_forest_json(f);
        return graph_print(f, c->graph_counts, stdout);
}
