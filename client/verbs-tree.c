/* verbs-tree.c: `tree [PID]`: the forest as nested filters with their processes, live or (with
 * --file) in a snapshot */
#include "verbs-tree.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "forest-json.h"
#include "json-out.h"
#include "live-forest.h"
#include "manager-units.h"
#include "output.h"
#include "pager.h"
#include "snapshot-load.h"
#include "subtree-processes.h"
#include "table.h"
#include "tree-table.h"

/* The optional PID argument of tree and graph; 0 for the whole machine. */
int parse_root_arg(char **args, size_t n_args, pid_t *ret) {
        uint32_t pid = 0;
        if (n_args > 0) {
                int r = parse_pid_arg("process id", args[0], &pid);
                if (r < 0)
                        return r;
        }
        *ret = (pid_t) pid;
        return 0;
}

/* The snapshot of --file, restricted to root's subtree when root > 0 (a thread id stands for its
 * process, as for the daemon). */
static int load_forest(const char *path, pid_t root, Forest **ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        Process *p = NULL;
        int r = snapshot_file_load(path, &f, NULL);
        if (r < 0 || root == 0) {
                *ret = TAKE_PTR(f);
                return r;
        }
        if (!forest_find_task(f, root, &p) && !(p = forest_find_process(f, root)))
                return ctl_error_errno(-ENOENT, "No process %d in snapshot %s", root, path);
        r = forest_restrict_to_subtree(f, p->pid);
        if (r < 0)
                return ctl_error_errno(r, "Failed to restrict the snapshot to process %d: %m", p->pid);
        *ret = TAKE_PTR(f);
        return 0;
}

int fetch_forest(Context *c, char **args, size_t n_args, Forest **ret) {
        pid_t root;
        sd_bus *bus;
        int r = parse_root_arg(args, n_args, &root);
        if (r < 0)
                return r;
        if (c->file)
                return load_forest(c->file, root, ret);
        r = context_bus(c, &bus);
        if (r < 0)
                return r;
        return live_forest_fetch(bus, root, ret);
}

int print_forest_json(const Forest *f) {
        json_auto_t *doc = forest_to_json(f);
        return json_print_document(doc);
}

/* Box drawing on a UTF-8 terminal; the header only with the legend; identical siblings on one
 * line on a terminal unless --all (a pipe gets every pid: scripts read them); lines cut to the
 * terminal's width. Asked once the pager runs: it keeps the terminal's width in $COLUMNS. */
static TreeTableOptions tree_table_options(const Context *c) {
        return (TreeTableOptions) { .legend = c->legend, .unicode = output_use_unicode(),
                                    .collapse = output_is_tty() && !c->all, .width = table_width(stdout) };
}

typedef struct UnitMembers {
        const Context *c;
        const UnitList *units;
} UnitMembers;

static bool process_in_units(const Process *p, void *userdata) {
        const UnitMembers *m = userdata;
        return unit_filter_matches(m->c, unit_list_find(m->units, (uint32_t) p->pid));
}

/* --unit, --machine, --user: only the processes of those units, and the filters they reach. The
 * units are the daemon's, or those the snapshot file records. */
static int restrict_to_units(Context *c, Forest *f) {
        _cleanup_(unit_list_done) UnitList units = {};
        if (!unit_filter_given(c))
                return 0;
        int r = context_units_of(c, f, &units);
        if (r < 0)
                return r;
        r = forest_restrict_to_processes(f, process_in_units, &(UnitMembers) { c, &units });
        return r < 0 ? ctl_error_errno(r, "Failed to restrict the tree to the units: %m") : 0;
}

/* A subtree as a snapshot shows it: its processes without filters too, as the daemon lists them. */
static int add_unfiltered_processes(Context *c, Forest *f) {
        _cleanup_free_ SubtreeProcess *v = NULL;
        size_t n = 0;
        sd_bus *bus;
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = manager_list_subtree_processes(bus, (uint32_t) f->root, &v, &n);
        if (r < 0)
                return r;
        r = forest_add_subtree_processes(f, v, n);
        return r < 0 ? ctl_error_errno(r, "Failed to add the subtree's processes of process %d: %m", f->root) : 0;
}

int verb_tree(Context *c, char **args, size_t n_args) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = fetch_forest(c, args, n_args, &f);
        if (r < 0)
                return r;
        /* the text only: the JSON stays the daemon's view of the filtered tasks */
        if (f->root > 0 && !c->file && !c->json) {
                r = add_unfiltered_processes(c, f);
                if (r < 0)
                        return r;
        }
        r = restrict_to_units(c, f);
        if (r < 0)
                return r;
        if (c->json)
                return print_forest_json(f);
        pager_open(c->no_pager);
        TreeTableOptions o = tree_table_options(c);
        r = tree_table_print(f, stdout, &o);
        if (r < 0)
                return ctl_error_errno(r, "Failed to print the tree: %m");
        return 0;
}
