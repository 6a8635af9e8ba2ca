/* tree-table.c: the forest as sectreectl prints it: a libsmartcols tree of filters, the processes
 * under each and the processes without one, fitted to the terminal */
#include "tree-table.h"

#include <libsmartcols.h>

/* The lines of the walk as libsmartcols lines: each under the last line of the depth above. */
typedef struct TreeTable {
        struct libscols_table *tb;
        struct libscols_line **parents; /* by depth: the last line at that depth */
        size_t n_parents;
        bool blank_before_top;
} TreeTable;

static int tree_table_add(TreeTable *t, struct libscols_line *parent, const char *text, unsigned depth) {
        struct libscols_line *ln = scols_table_new_line(t->tb, parent);
        if (!ln)
                return -ENOMEM;
        /* below the roots, a space after the glyphs ("├─ sleep[100]"), as pstree has it */
        char *data;
        if (asprintf(&data, "%s%s", depth > 0 ? " " : "", text) < 0)
                return -ENOMEM;
        if (scols_line_refer_data(ln, 0, data) < 0) {
                free(data);
                return -ENOMEM;
        }
        if (GROW(t->parents, t->n_parents, depth + 1) < 0)
                return -ENOMEM;
        t->parents[depth] = ln;
        return 0;
}

/* A blank line between the trees of root filters, as between paragraphs. */
static int tree_table_blank(TreeTable *t) {
        struct libscols_line *ln = scols_table_new_line(t->tb, NULL);
        return ln && scols_line_set_data(ln, 0, "") >= 0 ? 0 : -ENOMEM;
}

static int tree_table_line(const ForestTreeLine *l, void *userdata) {
        TreeTable *t = userdata;
        if (l->kind == FOREST_TREE_LISTENER) /* a line of its own under its filter, before the rest */
                return tree_table_add(t, t->parents[l->depth], l->text, l->depth + 1);
        if (l->depth == 0) {
                int r = t->blank_before_top ? tree_table_blank(t) : 0;
                t->blank_before_top = true;
                return r < 0 ? r : tree_table_add(t, NULL, l->text, 0);
        }
        return tree_table_add(t, t->parents[l->depth - 1], l->text, l->depth);
}

static int tree_table_symbols(struct libscols_table *tb, bool unicode) {
        struct libscols_symbols *sy = scols_new_symbols();
        if (!sy)
                return -ENOMEM;
        int r = scols_symbols_set_branch(sy, unicode ? "├─" : "|-");
        if (r >= 0)
                r = scols_symbols_set_vertical(sy, unicode ? "│ " : "| ");
        if (r >= 0)
                r = scols_symbols_set_right(sy, unicode ? "└─" : "`-");
        if (r >= 0)
                r = scols_table_set_symbols(tb, sy);
        scols_unref_symbols(sy);
        return r < 0 ? -ENOMEM : 0;
}

static int tree_table_setup(struct libscols_table *tb, FILE *out, const TreeTableOptions *o) {
        scols_table_set_stream(tb, out);
        scols_table_enable_noheadings(tb, true);
        scols_table_enable_noencoding(tb, true); /* the walk escaped the forest's strings */
        scols_table_set_termforce(tb, o->width ? SCOLS_TERMFORCE_ALWAYS : SCOLS_TERMFORCE_NEVER);
        if (o->width)
                scols_table_set_termwidth(tb, o->width);
        if (!scols_table_new_column(tb, "TREE", 0, SCOLS_FL_TREE | (o->width ? SCOLS_FL_TRUNC : 0)))
                return -ENOMEM;
        return tree_table_symbols(tb, o->unicode);
}

int tree_table_print(const Forest *f, FILE *out, const TreeTableOptions *o) {
        TreeTable t = { .tb = scols_new_table(), .blank_before_top = o->legend };
        int r = t.tb ? tree_table_setup(t.tb, out, o) : -ENOMEM;
        if (o->legend)
                forest_print_header(f, out);
        if (r >= 0)
                r = forest_tree_walk(f, o->collapse ? FOREST_PRINT_COLLAPSE : 0, tree_table_line, &t);
        if (r >= 0 && scols_table_get_nlines(t.tb) > 0)
                r = scols_print_table(t.tb) < 0 ? -EIO : 0;
        scols_unref_table(t.tb);
        free(t.parents);
        return r >= 0 ? fflush_errno(out) : r;
}
