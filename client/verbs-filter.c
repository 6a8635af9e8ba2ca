/* verbs-filter.c: `show FILTER`: one filter's metadata and its disassembly, live or (with --file)
 * in a snapshot; `show --pid=TID`: every filter of a task's chain so; `show --file F` alone: the
 * snapshot's metadata */
#include "verbs-filter.h"

#include "chain.h"
#include "core/disasm.h"
#include "core/escape.h"
#include "core/prog.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-calls.h"
#include "output.h"
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

/* {"tid", "pid", "comm", "exe" (null when not known), "time", "time_usec"}, null when the daemon
 * did not see the install. */
static json_t *installer_json(const FilterInstaller *x) {
        if (x->tid == 0)
                return json_null();
        char ts[TIMESTAMP_MAX];
        return json_pack("{s:I, s:I, s:s, s:o, s:s, s:I}", "tid", (json_int_t) x->tid, "pid", (json_int_t) x->pid,
                         "comm", x->comm, "exe", x->exe[0] ? json_string(x->exe) : json_null(), "time",
                         format_timestamp_rfc3339(x->usec, ts, sizeof(ts)), "time_usec", (json_int_t) x->usec);
}

static json_t *show_json(const FilterDetail *d, const char *disassembly) {
        json_t *o = json_filter_record(&d->meta);
        if (o && d->live && json_set(o, "installer", installer_json(&d->installer)) < 0) {
                json_decref(o);
                return NULL;
        }
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
        if (filter_detail_lacks_program(d))
                return "";
        char mine[PROG_DIGEST_STRING_MAX];
        uint8_t raw[PROG_DIGEST_SIZE];
        prog_digest(d->program, d->n_program, raw);
        return streq(prog_digest_to_string(raw, mine), d->meta.digest) ? "" : " (does not match the program!)";
}

/* --raw: each instruction's CODE JT JF K before its disassembly, for cross-checking with other
 * tools. The disassembly has one line per instruction. */
static void print_raw(const FilterDetail *d, const char *disassembly) {
        printf("%-6s  %3s  %3s  %-10s  %s\n", "CODE", "JT", "JF", "K", "INSTRUCTION");
        const char *p = disassembly;
        for (size_t i = 0; i < d->n_program; i++) {
                const struct sock_filter *x = &d->program[i];
                size_t l = strcspn(p, "\n");
                printf("0x%04x  %3u  %3u  0x%08" PRIx32 "  %.*s\n", x->code, x->jt, x->jf, x->k, (int) l, p);
                p += l + (p[l] == '\n');
        }
}

/* "worker[4711] thread 4712, /usr/bin/worker, at 2026-12-03 07:20:49 CET" */
static void print_installer(const FilterInstaller *x) {
        fputs(" Installer: ", stdout);
        if (x->tid == 0) {
                puts("not seen (installed before sectreed watched, or found by a full pass)");
                return;
        }
        char ts[TIMESTAMP_MAX];
        fputs_escaped(x->comm, stdout);
        printf("[%" PRIu32 "]", x->pid);
        if (x->tid != x->pid)
                printf(" thread %" PRIu32, x->tid);
        if (x->exe[0]) {
                fputs(", ", stdout);
                fputs_escaped(x->exe, stdout);
        }
        printf(", at %s\n", format_timestamp(x->usec, ts, sizeof(ts)));
}

static void show_print(const FilterDetail *d, const char *disassembly, bool raw) {
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
        fputc('\n', stdout);
        if (d->live)
                print_installer(&d->installer);
        fputc('\n', stdout);
        if (filter_detail_lacks_program(d))
                fputs("(program not kept: the uid that installed it is over sectreed's filter budget)\n", stdout);
        else if (raw)
                print_raw(d, disassembly);
        else
                fputs(disassembly, stdout);
}

/* One filter, in text or as JSON. */
static int show_filter(Context *c, const FilterDetail *d, json_t *json_array) {
        _cleanup_free_ char *text = prog_disassemble(d->program, d->n_program);
        if (!text)
                return log_oom();
        if (json_array)
                return json_array_append_new(json_array, show_json(d, text)) < 0 ? log_oom() : 0;
        show_print(d, text, c->raw);
        return 0;
}

/* --pid: the task's chain, head first, each filter as show prints one, as seccomp-tools dump
 * does. */
static int show_chain(Context *c) {
        _cleanup_(chain_done) Chain ch = {};
        int r = chain_get(c, c->pid, &ch);
        if (r < 0)
                return r;
        json_auto_t *filters = c->json ? json_array() : NULL;
        if (c->json && !filters)
                return log_oom();
        if (!c->json)
                printf("Task %" PRIu32 ": %zu filter%s, the head (evaluated first) first\n", c->pid, ch.n,
                       ch.n == 1 ? "" : "s");
        for (size_t i = 0; i < ch.n; i++) {
                if (!c->json)
                        printf("\n--- position %zu of %zu%s ---\n", i, ch.n, i == 0 ? " (the head)" : "");
                r = show_filter(c, &ch.filters[i], filters);
                if (r < 0)
                        return r;
        }
        if (c->json) {
                json_auto_t *doc = json_pack("{s:I, s:O}", "tid", (json_int_t) c->pid, "filters", filters);
                return json_print_document(doc);
        }
        return output_flush();
}

static int show_fetch(Context *c, uint64_t id, FilterDetail *ret) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
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
        if (c->pid && n_args > 0)
                return usage_error("Give FILTER or --pid=TID, not both");
        if (c->pid)
                return show_chain(c);
        if (n_args == 0 && !c->file)
                return usage_error_full("Too few arguments for 'show': give FILTER, or --pid=TID for a task's "
                                        "whole chain");
        if (n_args == 0)
                return show_snapshot_file(c);
        int r = parse_filter_id_arg(args[0], &id);
        if (r < 0)
                return r;
        r = c->file ? show_load(c, id, &d) : show_fetch(c, id, &d);
        if (r < 0)
                return r;
        if (c->json) {
                _cleanup_free_ char *text = prog_disassemble(d.program, d.n_program);
                json_auto_t *doc = text ? show_json(&d, text) : NULL;
                return json_print_document(doc);
        }
        r = show_filter(c, &d, NULL);
        return r < 0 ? r : output_flush();
}
