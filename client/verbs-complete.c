/* verbs-complete.c: `__complete KIND [ARG]`, the hidden verb the bash and zsh completions ask for
 * words: one per line, "WORD<TAB>DESCRIPTION", descriptions escaped for the terminal */
#include "verbs-complete.h"

#include <seccomp.h>

#include "bus.h"
#include "core/escape.h"
#include "ctl-args.h"
#include "manager-calls.h"
#include "manager-snapshots.h"
#include "output.h"

#define SYSCALL_NR_MAX 1024 /* beyond the highest system call number of any architecture libseccomp knows */

void complete_print_word(const char *word, const char *description) {
        _cleanup_free_ char *d = str_escape(description ? description : "");
        printf("%s\t%s\n", word, d ? d : "");
}

/* The processes the daemon lists (their threads are in filter or strict mode), by pid. */
static int complete_pids(Context *c, bool threads) {
        _cleanup_(task_list_done) TaskList l = {};
        int r = context_list_tasks(c, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                const TaskRecord *t = &l.items[i];
                if (!threads && t->tid != t->tgid && i > 0 && l.items[i - 1].tgid == t->tgid)
                        continue; /* one line per process (the list is by tgid, then tid) */
                char word[16];
                snprintf(word, sizeof(word), "%" PRIu32, threads ? t->tid : t->tgid);
                complete_print_word(word, t->comm);
        }
        return 0;
}

static int complete_filters(Context *c) {
        _cleanup_(filter_list_done) FilterList l = {};
        int r = context_list_filters(c, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                char word[24], description[96];
                snprintf(word, sizeof(word), "%" PRIu64, l.items[i].id);
                snprintf(description, sizeof(description), "%" PRIu32 " insns %.19s, head of %" PRIu32,
                         l.items[i].length, l.items[i].digest, l.items[i].tasks);
                complete_print_word(word, description);
        }
        return 0;
}

static int complete_snapshots(Context *c) {
        _cleanup_(snapshot_list_done) SnapshotList l = {};
        int r = context_list_snapshots(c, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                char word[24], when[TIMESTAMP_MAX], description[TIMESTAMP_MAX + 300];
                snprintf(word, sizeof(word), "%" PRIu64, l.items[i].id);
                snprintf(description, sizeof(description), "%s, %s", l.items[i].name[0] ? l.items[i].name : "(no name)",
                         format_timestamp(l.items[i].created_usec, when, sizeof(when)));
                complete_print_word(word, description);
        }
        return 0;
}

/* The restores alive the caller may see. */
static int complete_restores(Context *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t id, snapshot;
        uint32_t owner, root, procs;
        const char *state;
        sd_bus *bus;
        int v, r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = bus_call_manager(bus, "ListRestores", &reply, "");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ttuuubs)");
        if (r < 0)
                return bus_log_parse_error(r, "ListRestores");
        while ((r = sd_bus_message_read(reply, "(ttuuubs)", &id, &snapshot, &owner, &root, &procs, &v, &state)) > 0) {
                char word[24], description[96];
                snprintf(word, sizeof(word), "%" PRIu64, id);
                snprintf(description, sizeof(description), "snapshot %" PRIu64 ", %" PRIu32 " processes, %s", snapshot,
                         procs, state);
                complete_print_word(word, description);
        }
        return r < 0 ? bus_log_parse_error(r, "ListRestores") : 0;
}

/* The system calls of an architecture (native unless given), by name. */
static int complete_syscalls(const char *arch_name) {
        uint32_t arch = arch_name ? seccomp_arch_resolve_name(arch_name) : seccomp_arch_native();
        if (arch == 0)
                return usage_error("Unknown architecture '%s'", arch_name);
        for (int nr = 0; nr < SYSCALL_NR_MAX; nr++) {
                _cleanup_free_ char *name = seccomp_syscall_resolve_num_arch(arch, nr);
                char number[16];
                snprintf(number, sizeof(number), "%d", nr);
                if (name)
                        complete_print_word(name, number);
        }
        return 0;
}

int complete_words(Context *c, const char *kind, const char *arg) {
        int r;
        if (streq(kind, "pids"))
                r = complete_pids(c, false);
        else if (streq(kind, "tids"))
                r = complete_pids(c, true);
        else if (streq(kind, "filters"))
                r = complete_filters(c);
        else if (streq(kind, "snapshots"))
                r = complete_snapshots(c);
        else if (streq(kind, "restores"))
                r = complete_restores(c);
        else if (streq(kind, "syscalls"))
                r = complete_syscalls(arg);
        else
                return usage_error("Unknown kind of word '%s': expected verbs, options, pids, tids, filters, "
                                   "snapshots, restores or syscalls", kind);
        return r < 0 ? r : output_flush();
}
