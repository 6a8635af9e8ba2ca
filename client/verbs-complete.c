/* verbs-complete.c: `__complete KIND [ARG]` and `__complete line -- WORD...`, the hidden verb the
 * bash and zsh completions ask for words: one per line, "WORD<TAB>DESCRIPTION", descriptions
 * escaped for the terminal. The command line is read here, once for both shells, from the verb
 * table: the shells only pass the words and show what comes back. */
#include "verbs-complete.h"

#include "bus.h"
#include "core/disasm.h"
#include "core/escape.h"
#include "ctl-args.h"
#include "help.h"
#include "manager-calls.h"
#include "manager-snapshots.h"
#include "output.h"
#include "policy/policy-arch.h"
#include "snapshot-load.h"

void complete_print_word(const char *word, const char *description) {
        _cleanup_free_ char *d = str_escape(description ? description : "");
        printf("%s\t%s\n", word, d ? d : "");
}

/* With more pids or tids than this matching what is typed, none are offered (as systemd's
 * completions do): a list that long helps nobody, and the shell would ask before showing it. */
#define COMPLETE_TASKS_MAX 1000

/* A pid (or tid) that may be offered, with the comm of its task (from ListTasks' reply). */
typedef struct TaskWord {
        uint32_t id;
        bool leader; /* the task is its process's leader: its comm names the process */
        const char *comm;
} TaskWord;

static int task_word_cmp(const void *a, const void *b) {
        const TaskWord *x = a, *y = b;
        if (x->id != y->id)
                return x->id < y->id ? -1 : 1;
        return (int) y->leader - (int) x->leader; /* the leader first */
}

static bool word_has_prefix(uint32_t id, const char *prefix) {
        char word[16];
        snprintf(word, sizeof(word), "%" PRIu32, id);
        return strncmp(word, prefix, strlen(prefix)) == 0;
}

/* The ids (tids, or pids with threads false) of ListTasks' reply that begin with prefix, unsorted,
 * repeated where a process has several threads listed; comm points into the reply. */
static int read_task_words(sd_bus_message *reply, bool threads, const char *prefix, TaskWord **ret, size_t *ret_n) {
        _cleanup_free_ TaskWord *words = NULL;
        size_t n = 0, allocated = 0;
        uint32_t tid, tgid, ppid, depth;
        uint64_t head;
        const char *comm, *mode;
        int r = sd_bus_message_enter_container(reply, 'a', "(uuusstu)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(uuusstu)", &tid, &tgid, &ppid, &comm, &mode, &head, &depth)) > 0) {
                uint32_t id = threads ? tid : tgid;
                if (!word_has_prefix(id, prefix))
                        continue;
                if (GROW(words, allocated, n + 1) < 0)
                        return -ENOMEM;
                words[n++] = (TaskWord) { .id = id, .leader = tid == tgid, .comm = comm };
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(words);
        *ret_n = n;
        return sd_bus_message_exit_container(reply);
}

/* Keeps the first of each id (sorted: its leader's where listed); returns how many are left. */
static size_t task_words_unique(TaskWord *words, size_t n) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (k == 0 || words[k - 1].id != words[i].id)
                        words[k++] = words[i];
        return k;
}

/* The processes the daemon lists (their threads are in filter or strict mode), by pid, or their
 * threads by tid, whose number begins with prefix: from one ListTasks call, none when more than
 * COMPLETE_TASKS_MAX match. */
static int complete_pids(Context *c, bool threads, const char *prefix) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ TaskWord *words = NULL;
        size_t n = 0;
        sd_bus *bus;
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = bus_call_manager(bus, "ListTasks", &reply, "");
        if (r < 0)
                return r;
        r = read_task_words(reply, threads, prefix ? prefix : "", &words, &n);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return bus_log_parse_error(r, "ListTasks");
        qsort_safe(words, n, sizeof(TaskWord), task_word_cmp);
        n = task_words_unique(words, n);
        if (n > COMPLETE_TASKS_MAX)
                return 0;
        for (size_t i = 0; i < n; i++) {
                char word[16];
                snprintf(word, sizeof(word), "%" PRIu32, words[i].id);
                complete_print_word(word, words[i].comm);
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

/* The system calls of an architecture (native unless given, by any name --arch takes), by name. */
static int complete_syscalls(const char *arch_name) {
        const PolicyArch *a = arch_name ? policy_arch_from_name(arch_name) : policy_arch_native();
        if (!a)
                return usage_error("Unknown architecture '%s'", arch_name);
        const PolicySyscallName *names;
        size_t n;
        int r = policy_arch_syscalls(a, &names, &n);
        if (r < 0)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                char number[16];
                snprintf(number, sizeof(number), "%" PRIi32, names[i].nr);
                complete_print_word(names[i].name, number);
        }
        return 0;
}

int complete_words(Context *c, const char *kind, const char *arg) {
        int r;
        if (streq(kind, "pids"))
                r = complete_pids(c, false, arg);
        else if (streq(kind, "tids"))
                r = complete_pids(c, true, arg);
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

/* ---- the whole command line ---- */

/* The words --arch takes (policy_arch_from_name() knows each), --action's, and the modes of --json. */
static const char *const arch_words[] = { "x86_64", "x86", "i386", "x32", "aarch64", "arm", "riscv64", "ppc64le",
                                          "ppc64", "s390x", "mips64", NULL };
static const char *const action_words[] = { "ALLOW", "LOG", "ERRNO", "USER_NOTIF", "TRACE", "TRAP", "KILL_THREAD",
                                            "KILL_PROCESS", NULL };
static const char *const json_words[] = { "pretty", "short", "off", NULL };

/* What the words before the current one say. */
typedef struct CommandLine {
        const Verb *verb;
        const char *verb_name; /* as typed, even if no verb has that name */
        char **args;           /* the verb's arguments so far */
        size_t n_args;
        bool after_dashdash;
        const char *arch, *file, *value_of; /* value_of: the option whose value the current word is */
        const char *current;                /* the word completed, as typed so far */
} CommandLine;

static const struct option *find_option(const CompleteTables *t, const char *word, size_t len) {
        for (const struct option *o = t->options; o->name; o++)
                if (strlen(o->name) == len && strncmp(o->name, word, len) == 0)
                        return o;
        return NULL;
}

/* An option word of the line: note what matters later; returns whether it consumes the next word. */
static bool read_option(const CompleteTables *t, CommandLine *l, const char *w, const char *next) {
        if (w[1] != '-')
                return false;
        size_t len = strcspn(w + 2, "=");
        const struct option *o = find_option(t, w + 2, len);
        if (!o)
                return false;
        bool inline_value = w[2 + len] == '=';
        const char *value = inline_value ? w + 3 + len : next;
        if (streq(o->name, "arch"))
                l->arch = value;
        else if (streq(o->name, "file"))
                l->file = value;
        return o->has_arg == required_argument && !inline_value;
}

static void read_line(const CompleteTables *t, char **words, size_t n, CommandLine *l) {
        for (size_t i = 0; i < n; i++) {
                const char *w = words[i];
                if (!l->after_dashdash && streq(w, "--")) {
                        l->after_dashdash = true;
                        continue;
                }
                if (!l->after_dashdash && w[0] == '-' && w[1]) {
                        if (read_option(t, l, w, i + 1 < n ? words[i + 1] : NULL)) {
                                if (i + 1 == n) /* the current word is its value */
                                        l->value_of = w + 2;
                                i++;
                        }
                        continue;
                }
                if (!l->verb_name) {
                        l->verb_name = w;
                        l->verb = verb_table_find(t->verbs, w);
                } else
                        l->args[l->n_args++] = words[i];
        }
}

static void print_words(const char *const *words, const char *description) {
        for (; *words; words++)
                complete_print_word(*words, description);
}

static void print_directive(const char *what) {
        printf("@%s\n", what);
}

/* Does verb v (NULL: none given yet) take option word w? */
static bool verb_takes(const Verb *v, const OptionWord *w) {
        if (w->verb_option == OPTION_BEFORE_VERB)
                return !v;
        return w->verb_option == 0 || (v && (v->options & w->verb_option));
}

static void complete_options(const CompleteTables *t, const CommandLine *l) {
        for (size_t i = 0; i < t->n_option_words; i++) {
                const OptionWord *w = &t->option_words[i];
                if (!verb_takes(l->verb, w))
                        continue;
                const struct option *o = find_option(t, w->name + 2, strlen(w->name + 2));
                char with_value[64];
                snprintf(with_value, sizeof(with_value), "%s=", w->name);
                if (!o || o->has_arg != required_argument)
                        complete_print_word(w->name, w->description);
                if (o && o->has_arg != no_argument)
                        complete_print_word(with_value, w->description);
        }
}

/* restore --exec=PID=COMMAND: the processes of the snapshot named already (an id or a file), as
 * "PID=", then the command. */
static int complete_exec(Context *c, const CommandLine *l, const char *value) {
        if (strchr(value, '=')) {
                print_directive("commands");
                return 0;
        }
        if (l->n_args < 1)
                return 0;
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = snapshot_load_operand(c, l->args[0], &f);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_processes; i++) {
                char word[24];
                snprintf(word, sizeof(word), "%d=", (int) f->processes[i]->pid);
                complete_print_word(word, f->processes[i]->comm);
        }
        return 0;
}

static int complete_value(Context *c, const CommandLine *l, const char *option, const char *value) {
        size_t len = strcspn(option, "=");
        if (strncmp(option, "json", len) == 0 && len == 4)
                print_words(json_words, "JSON output");
        else if (strncmp(option, "file", len) == 0 && len == 4)
                print_directive("files");
        else if (strncmp(option, "arch", len) == 0 && len == 4)
                print_words(arch_words, "architecture");
        else if (strncmp(option, "action", len) == 0 && len == 6)
                print_words(action_words, "action");
        else if (strncmp(option, "format", len) == 0 && len == 6) {
                bool policy = l->verb && streq(l->verb->name, "policy");
                bool export = l->verb && streq(l->verb->name, "export");
                if (!policy)
                        print_words((const char *const[]) { "sqlite", "json", NULL }, "snapshot file format");
                if (!export)
                        complete_print_word("oci", "OCI runtime-spec linux.seccomp (policy)");
        } else if ((strncmp(option, "pid", len) == 0 && len == 3) || (strncmp(option, "like", len) == 0 && len == 4))
                return complete_words(c, "tids", value);
        else if (strncmp(option, "exec", len) == 0 && len == 4)
                return complete_exec(c, l, value);
        return 0;
}

/* One kind of argument ("pids", "snapshots", ...). */
static int complete_kind(Context *c, const CommandLine *l, const char *kind, size_t len) {
        char k[32];
        snprintf(k, sizeof(k), "%.*s", (int) len, kind);
        if (streq(k, "files") || streq(k, "commands")) {
                print_directive(k);
                return 0;
        }
        if (streq(k, "verbs"))
                return 1; /* the caller has the table */
        if (streq(k, "syscalls"))
                return complete_syscalls(l->arch);
        if (l->file) /* the live words are the daemon's, not the file's */
                return 0;
        /* pids and tids by what is typed of them (the others are few) */
        return complete_words(c, k, streq(k, "pids") || streq(k, "tids") ? l->current : NULL);
}

/* The spec's kinds at position pos, '|'-separated, or NULL when the verb takes no more. */
static const char *spec_at(const char *spec, size_t pos, size_t *ret_len) {
        const char *p = spec;
        for (size_t i = 0; p && *p; i++) {
                size_t len = strcspn(p, " ");
                bool repeat = len >= 3 && strncmp(p + len - 3, "...", 3) == 0;
                if (i == pos || (repeat && i <= pos)) {
                        *ret_len = repeat ? len - 3 : len;
                        return p;
                }
                p = p[len] ? p + len + 1 : NULL;
        }
        return NULL;
}

static void complete_verbs(const CompleteTables *t) {
        for (size_t i = 0; i < t->verbs->n; i++)
                if (t->verbs->verbs[i].group != VERB_GROUP_HIDDEN)
                        complete_print_word(t->verbs->verbs[i].name, t->verbs->verbs[i].summary);
}

static int complete_argument(Context *c, const CompleteTables *t, const CommandLine *l) {
        size_t len;
        const char *kinds = l->verb && l->verb->complete ? spec_at(l->verb->complete, l->n_args, &len) : NULL;
        int r = 0;
        for (const char *k = kinds; k && k < kinds + len;) {
                size_t n = strcspn(k, "|");
                n = n < (size_t) (kinds + len - k) ? n : (size_t) (kinds + len - k);
                int q = complete_kind(c, l, k, n);
                if (q > 0)
                        complete_verbs(t);
                else if (q < 0 && r == 0)
                        r = q; /* go on: the other kinds may still be offered */
                k += n + 1;
        }
        return r;
}

int complete_line(Context *c, const CompleteTables *t, char **words, size_t n_words) {
        if (n_words == 0)
                return usage_error("__complete line: expected the words of the command line");
        _cleanup_free_ char **args = calloc(n_words, sizeof(char *));
        if (!args)
                return log_oom();
        const char *cur = words[n_words - 1];
        CommandLine l = { .args = args, .current = cur };
        read_line(t, words, n_words - 1, &l);
        int r = 0;
        if (l.value_of)
                r = complete_value(c, &l, l.value_of, cur);
        else if (!l.after_dashdash && strncmp(cur, "--", 2) == 0 && strchr(cur, '='))
                r = complete_value(c, &l, cur + 2, strchr(cur, '=') + 1);
        else if (!l.after_dashdash && cur[0] == '-')
                complete_options(t, &l);
        else if (!l.verb_name)
                complete_verbs(t);
        else
                r = complete_argument(c, t, &l);
        int k = output_flush();
        return r < 0 ? r : k;
}
