/* verbs-filter.c: `show FILTER`: one filter's metadata and its disassembly, live or (with --file)
 * in a snapshot; `show --file F` alone: the snapshot's metadata */
#include "chain.h"
#include "ctl.h"
#include "disasm.h"
#include "escape.h"
#include "json-out.h"
#include "manager.h"
#include "output.h"
#include "prog.h"
#include "snapshot-load.h"
#include "verbs-snapshot-file.h"

/* The disassembly as an array of lines (without their newlines). */
static json_t *disassembly_json(const char *text) {
        json_t *a = json_array();
        for (const char *p = text; a && *p;) {
                size_t l = strcspn(p, "\n");
                if (json_array_append_new(a, json_stringn(p, l)) < 0) {
                        json_decref(a);
                        return NULL;
                }
                p += l + (p[l] == '\n');
        }
        return a;
}

static json_t *show_json(const FilterDetail *d, const char *disassembly) {
        json_t *o = json_filter_record(&d->meta);
        if (!o || json_set(o, "identity", json_string(d->identity)) < 0 ||
            json_set(o, "program", json_program(d->program, d->n_program)) < 0 ||
            json_set(o, "disassembly", disassembly_json(disassembly)) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static void print_flags(char * const *flags) {
        if (!flags || !flags[0]) {
                puts("none");
                return;
        }
        for (size_t i = 0; flags[i]; i++) {
                if (i)
                        putchar(' ');
                fputs_escaped(flags[i], stdout);
        }
        putchar('\n');
}

/* The daemon's digest, checked against the instructions it sent. */
static const char *digest_note(const FilterDetail *d) {
        char mine[PROG_DIGEST_STRING_MAX];
        uint8_t raw[PROG_DIGEST_SIZE];
        prog_digest(d->program, d->n_program, raw);
        return streq(prog_digest_to_string(raw, mine), d->meta.digest) ? "" : " (does not match the program!)";
}

static void show_print(const FilterDetail *d, const char *disassembly) {
        printf("Filter %" PRIu64 "\n", d->meta.id);
        if (d->meta.parent)
                printf("    Parent: %" PRIu64 "\n", d->meta.parent);
        else
                printf("    Parent: none (a first filter)\n");
        printf("    Length: %" PRIu32 " instruction%s\n", d->meta.length, d->meta.length == 1 ? "" : "s");
        fputs("    Digest: ", stdout);
        fputs_escaped(d->meta.digest, stdout);
        printf("%s\n", digest_note(d));
        printf("     Flags: ");
        print_flags(d->meta.flags);
        printf("     Tasks: %" PRIu32 "\n", d->meta.tasks);
        fputs("  Identity: ", stdout);
        fputs_escaped(d->identity, stdout);
        fputs("\n\n", stdout);
        fputs(disassembly, stdout);
}

static int show_fetch(Context *c, uint64_t id, FilterDetail *ret) {
        sd_bus *bus;
        int r = ctl_bus(c, &bus);
        return r < 0 ? r : manager_get_filter(bus, id, ret);
}

static int show_load(Context *c, uint64_t id, FilterDetail *ret) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = snapshot_file_load(c->file, &f, NULL);
        if (r < 0)
                return r;
        const Filter *x = forest_find_filter(f, id);
        if (!x)
                return ctl_error_errno(-ENOENT, "No filter %" PRIu64 " in snapshot %s", id, c->file);
        return filter_detail_from_filter(x, ret) < 0 ? log_oom() : 0;
}

int verb_show(Context *c, char **args, size_t n_args) {
        uint64_t id;
        _cleanup_(filter_detail_done) FilterDetail d = {};
        if (n_args == 0) /* only with --file */
                return show_snapshot_file(c);
        int r = parse_filter_id_arg(args[0], &id);
        if (r >= 0)
                r = c->file ? show_load(c, id, &d) : show_fetch(c, id, &d);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = prog_disassemble(d.program, d.n_program);
        if (!text)
                return log_oom();
        if (c->json) {
                json_auto_t *doc = show_json(&d, text);
                return json_print_document(doc);
        }
        show_print(&d, text);
        return output_flush();
}
