/* verbs-audit.c: `audit [TID | --unit=U]`: the weaknesses of every distinct chain on this machine
 * (the daemon's Audit(), with the baseline's text) or in a snapshot file (policy_audit() here),
 * each proven from the chain by a witness input, with the tasks and units that have it */
#include "verbs-audit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/disasm.h"
#include "core/escape.h"
#include "core/forest.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-calls.h"
#include "manager-policy.h"
#include "manager-units.h"
#include "output.h"
#include "policy/policy-audit.h"
#include "policy/policy-baseline.h"
#include "snapshot-load.h"
#include "verbs-policy.h"

/* One distinct chain: every task that has it, and the units of their processes. */
typedef struct AuditChain {
        uint64_t head;
        uint32_t *tids;
        size_t n_tids, allocated;
        char **units; /* distinct labels ("sshd.service", "machine bar"), in the order met */
        size_t n_units, units_allocated;
        AuditFindings findings;
        Arena arena;     /* the strings of findings the daemon sent */
        bool unconfined; /* a TID asked for that runs under no filter (nor in strict mode) */
} AuditChain;

typedef struct AuditRun {
        AuditChain *chains;
        size_t n, allocated;
        UnitList units;          /* of the processes audited: --unit, and the chains' units */
        char *baseline_text;     /* the profile as read: sent with each Audit() call */
        PolicySummary *baseline; /* the same, decided here, for a snapshot file */
        const char *baseline_path; /* NULL: none */
        AuditSeverity threshold;
} AuditRun;

static void audit_chain_done(AuditChain *ch) {
        free(ch->tids);
        for (size_t i = 0; i < ch->n_units; i++)
                free(ch->units[i]);
        free(ch->units);
        audit_findings_done(&ch->findings);
        arena_done(&ch->arena);
}

static void audit_run_done(AuditRun *a) {
        for (size_t i = 0; i < a->n; i++)
                audit_chain_done(&a->chains[i]);
        free(a->chains);
        unit_list_done(&a->units);
        free(a->baseline_text);
        a->baseline = policy_summary_free(a->baseline);
}

/* What a chain lists of a process's units: its unit (user unit after a '/'), or its machine. */
static const char *unit_label(const UnitRecord *u, char *buf, size_t len) {
        const char *l = unit_record_label(u, buf, len);
        if (!l && u && u->machine)
                snprintf(buf, len, "machine %s", u->machine), l = buf;
        return l;
}

static int chain_add_unit(AuditChain *ch, const char *label) {
        for (size_t i = 0; i < ch->n_units; i++)
                if (streq(ch->units[i], label))
                        return 0;
        if (GROW(ch->units, ch->units_allocated, ch->n_units + 1) < 0 || !(ch->units[ch->n_units] = strdup(label)))
                return log_oom();
        ch->n_units++;
        return 0;
}

/* tid of process tgid (0: not known) has the chain of head (0: not known yet). */
static int run_add_task(AuditRun *a, uint64_t head, uint32_t tid, uint32_t tgid) {
        char buf[2 * 256 + 16];
        size_t i = 0;
        while (head && i < a->n && a->chains[i].head != head)
                i++;
        if (i == a->n) {
                if (GROW(a->chains, a->allocated, a->n + 1) < 0)
                        return log_oom();
                a->chains[a->n++] = (AuditChain) { .head = head };
        }
        AuditChain *ch = &a->chains[i];
        if (GROW(ch->tids, ch->allocated, ch->n_tids + 1) < 0)
                return log_oom();
        ch->tids[ch->n_tids++] = tid;
        const char *label = tgid ? unit_label(unit_list_find(&a->units, tgid), buf, sizeof(buf)) : NULL;
        return label ? chain_add_unit(ch, label) : 0;
}

/* With --unit, --machine or --user: only the processes they name. */
static bool run_wants(const Context *c, const AuditRun *a, uint32_t tgid) {
        return unit_filter_matches(c, unit_list_find(&a->units, tgid));
}

/* ---- what to audit ---- */

/* The snapshot's tasks (with TID: that one), and the units it records (format version 2). */
static int tasks_of_file(Context *c, AuditRun *a, uint32_t only) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = snapshot_file_load(c->file, &f, NULL);
        if (r < 0)
                return r;
        if ((r = unit_list_from_forest(f, &a->units)) < 0)
                return log_oom();
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (!run_wants(c, a, (uint32_t) p->pid))
                        continue;
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j];
                        if ((only ? (uint32_t) t->tid == only : t->filter_id != 0) &&
                            (r = run_add_task(a, only ? 0 : t->filter_id, (uint32_t) t->tid, (uint32_t) p->pid)) < 0)
                                return r;
                }
        }
        if (only && a->n == 0)
                return ctl_error_errno(-ESRCH, "No task %" PRIu32 " in %s%s.", only, c->file,
                                       unit_filter_given(c) ? " among the units asked for" : "");
        return 0;
}

/* The tasks the daemon lists (with TID: that one), by chain; the units of their processes. */
static int tasks_live(Context *c, AuditRun *a, uint32_t only) {
        _cleanup_(task_list_done) TaskList l = {};
        int r = context_list_tasks(c, &l);
        if (r < 0 || (r = context_list_units(c, &a->units)) < 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                const TaskRecord *t = &l.items[i];
                if (!(only ? t->tid == only : t->head != 0) || !run_wants(c, a, t->tgid))
                        continue;
                if ((r = run_add_task(a, only ? 0 : t->head, t->tid, t->tgid)) < 0)
                        return r;
        }
        if (only && a->n == 0 && unit_filter_given(c))
                return ctl_error_errno(-ESRCH, "Task %" PRIu32 " is not in the units asked for.", only);
        if (only && a->n == 0) /* a task the daemon does not track runs without filters: Audit() says so */
                return run_add_task(a, 0, only, 0);
        return 0;
}

/* ---- the baseline ---- */

static int read_text(const char *path, char **ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t size = 0;
        if (!f)
                return -errno;
        FILE *m = open_memstream(&text, &size);
        if (!m)
                return -ENOMEM;
        char buf[65536];
        size_t n;
        while (size <= POLICY_BASELINE_MAX_BYTES && (n = fread(buf, 1, sizeof(buf), f)) > 0)
                fwrite(buf, 1, n, m);
        bool failed = ferror(f);
        fclose(m);
        if (failed) {
                free(text);
                return -EIO;
        }
        *ret = text;
        return 0;
}

/* The baseline's text, checked here (the daemon checks it again) so that a bad one is said once,
 * naming the file; for a snapshot file, decided here too. */
static int baseline_load(Context *c, AuditRun *a) {
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ struct sock_filter *insns = NULL;
        size_t n = 0;
        const char *path = c->baseline ? c->baseline : AUDIT_DEFAULT_BASELINE;
        int r = read_text(path, &a->baseline_text);
        if (r == -ENOENT && !c->baseline)
                return 0; /* no containers-common here: no baseline */
        if (r < 0)
                return ctl_error_errno(r, "Failed to read the baseline %s: %m", path);
        r = policy_baseline_build(a->baseline_text, strlen(a->baseline_text), &insns, &n, &error);
        if (r == -EINVAL)
                return ctl_error_errno(r, "Invalid baseline %s: %s", path, error ? error : "?");
        if (r < 0)
                return ctl_error_errno(r, "Failed to build the baseline %s: %m", path);
        a->baseline_path = path;
        if (!c->file)
                return 0;
        ChainProgram p = { .insns = insns, .len = n };
        r = policy_summarize(&p, 1, NULL, &a->baseline);
        if (r < 0)
                return ctl_error_errno(r, "Failed to analyse the baseline %s: %m", path);
        return 0;
}

/* ---- one chain ---- */

static bool filter_has_listener(const FilterDetail *d) {
        for (char **f = d->meta.flags; f && *f; f++)
                if (streq(*f, "listener"))
                        return true;
        return false;
}

/* A chain of a snapshot file, decided here. */
static int audit_file_chain(Context *c, AuditRun *a, AuditChain *ch) {
        _cleanup_(task_policy_done) TaskPolicy tp = {};
        _cleanup_free_ bool *listeners = NULL;
        int r = task_policy_load(c, c->file, ch->tids[0], NULL, &tp);
        if (r < 0)
                return r;
        if (ch->head == 0 && tp.chain.n > 0) /* a task named by its tid: its chain's head */
                ch->head = tp.chain.filters[0].meta.id;
        ch->unconfined = tp.mode == TASK_MODE_DISABLED;
        listeners = calloc(tp.chain.n + 1, sizeof(bool));
        if (!listeners)
                return log_oom();
        for (size_t i = 0; i < tp.chain.n; i++)
                listeners[i] = filter_has_listener(&tp.chain.filters[i]);
        AuditInput in = { .chain = tp.progs, .n = tp.mode == TASK_MODE_STRICT ? 0 : tp.n_progs,
                          .has_listener = listeners, .summary = tp.summary, .baseline = a->baseline,
                          .kernel = tp.kernel };
        r = policy_audit(&in, &ch->findings);
        if (r < 0)
                return ctl_error_errno(r, "Failed to audit the chain of task %" PRIu32 ": %m", ch->tids[0]);
        return 0;
}

/* A live chain: the daemon's Audit() of its first task still there. A task may end between the
 * task list and the call: the daemon then says NoSuchTask, and the next task of the chain is
 * asked. A chain whose tasks all ended has nothing left to audit; a TID asked for that is not
 * there is an error. */
static int audit_live_chain(Context *c, AuditRun *a, AuditChain *ch, bool asked) {
        _cleanup_(task_audit_reply_done) TaskAuditReply reply = {};
        sd_bus *bus;
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = -ESRCH;
        for (size_t i = 0; r == -ESRCH && i < ch->n_tids; i++)
                r = manager_audit(bus, ch->tids[i], a->baseline_text, &reply);
        if (r == -ESRCH && asked)
                return ctl_error_errno(r, "No task %" PRIu32 " (or not one you may see).", ch->tids[0]);
        if (r < 0)
                return r == -ESRCH ? 0 : r;
        if (ch->head == 0)
                ch->head = reply.head;
        ch->unconfined = reply.mode == TASK_MODE_DISABLED;
        ch->findings = reply.findings;
        ch->arena = reply.arena;
        reply.findings = (AuditFindings) {};
        reply.arena = (Arena) {};
        return 0;
}

/* ---- output ---- */

static void print_witness(const AuditFinding *f) {
        char action[ACTION_STRING_MAX];
        int last = -1;
        if (!f->has_witness)
                return;
        for (int i = 0; i < 6; i++)
                if (f->witness.args[i])
                        last = i;
        printf("           e.g. arch %#" PRIx32 ", nr %" PRIu32, f->witness.arch, (uint32_t) f->witness.nr);
        for (int i = 0; i <= last; i++)
                printf(", arg%d %#" PRIx64, i, (uint64_t) f->witness.args[i]);
        printf(": %s\n", action_to_string(f->action, action, sizeof(action)));
}

static void print_units(const AuditChain *ch) {
        if (ch->n_units > 0)
                printf("; unit%s", ch->n_units == 1 ? "" : "s");
        for (size_t i = 0; i < ch->n_units; i++) {
                _cleanup_free_ char *u = str_escape(ch->units[i]);
                printf("%s %s", i ? "," : "", u ?: "?");
        }
}

static void print_chain(const AuditChain *ch, AuditSeverity threshold) {
        size_t shown = 0;
        if (ch->unconfined) {
                printf("Task %" PRIu32, ch->tids[0]);
                print_units(ch);
                printf(": runs under no filter, not confined.\n\n");
                return;
        }
        for (size_t i = 0; i < ch->findings.n; i++)
                shown += ch->findings.items[i].severity >= threshold;
        if (shown == 0)
                return;
        printf("Chain of filter %" PRIu64 ", task%s", ch->head, ch->n_tids == 1 ? "" : "s");
        for (size_t i = 0; i < ch->n_tids; i++)
                printf("%s %" PRIu32, i ? "," : "", ch->tids[i]);
        print_units(ch);
        printf(":\n");
        for (size_t i = 0; i < ch->findings.n; i++) {
                const AuditFinding *f = &ch->findings.items[i];
                if (f->severity < threshold)
                        continue;
                printf("  %-8s %s%s%s%s%s: %s\n", audit_severity_to_string(f->severity), audit_rule_to_string(f->rule),
                       f->arch || f->syscall ? " " : "", f->arch ?: "", f->syscall ? "/" : "", f->syscall ?: "",
                       f->message);
                print_witness(f);
        }
        printf("\n");
}

static json_t *witness_json(const AuditFinding *f) {
        char action[ACTION_STRING_MAX];
        json_t *args = json_array();
        for (size_t i = 0; args && i < 6; i++) {
                char buf[24];
                snprintf(buf, sizeof(buf), "%#" PRIx64, (uint64_t) f->witness.args[i]);
                if (json_array_append_new(args, json_string(buf)) < 0) {
                        json_decref(args);
                        return NULL;
                }
        }
        return args ? json_pack("{s:I, s:I, s:o, s:s}", "arch", (json_int_t) f->witness.arch, "nr",
                                (json_int_t) (uint32_t) f->witness.nr, "args", args, "action",
                                action_to_string(f->action, action, sizeof(action)))
                    : NULL;
}

static json_t *finding_json(const AuditFinding *f) {
        return json_pack("{s:s, s:s, s:s?, s:s?, s:s, s:o}", "rule", audit_rule_to_string(f->rule), "severity",
                         audit_severity_to_string(f->severity), "architecture", f->arch, "syscall", f->syscall,
                         "message", f->message, "witness", f->has_witness ? witness_json(f) : json_null());
}

static json_t *chain_json(const AuditChain *ch, AuditSeverity threshold) {
        json_t *tids = json_array(), *findings = json_array(), *units = json_array();
        for (size_t i = 0; tids && i < ch->n_tids; i++)
                if (json_array_append_new(tids, json_integer(ch->tids[i])) < 0)
                        goto fail;
        for (size_t i = 0; units && i < ch->n_units; i++)
                if (json_array_append_new(units, json_string(ch->units[i])) < 0)
                        goto fail;
        for (size_t i = 0; findings && i < ch->findings.n; i++)
                if (ch->findings.items[i].severity >= threshold &&
                    json_array_append_new(findings, finding_json(&ch->findings.items[i])) < 0)
                        goto fail;
        return json_pack("{s:o, s:b, s:o, s:o, s:o}", "head", json_id_or_null(ch->head), "unconfined",
                         ch->unconfined, "tasks", tids, "units", units, "findings", findings);
fail:
        json_decref(tids);
        json_decref(findings);
        json_decref(units);
        return NULL;
}

static json_t *run_json(const AuditRun *a) {
        json_t *chains = json_array();
        for (size_t i = 0; chains && i < a->n; i++)
                if (json_array_append_new(chains, chain_json(&a->chains[i], a->threshold)) < 0) {
                        json_decref(chains);
                        return NULL;
                }
        return json_pack("{s:s?, s:s, s:o}", "baseline", a->baseline_path, "severity",
                         audit_severity_to_string(a->threshold), "chains", chains);
}

static size_t run_unconfined(const AuditRun *a) {
        size_t n = 0;
        for (size_t i = 0; i < a->n; i++)
                n += a->chains[i].unconfined;
        return n;
}

/* A finding at or above the severity, or a task that runs under no filter (worse than any). */
static bool run_found(const AuditRun *a) {
        if (run_unconfined(a) > 0)
                return true;
        for (size_t i = 0; i < a->n; i++)
                for (size_t j = 0; j < a->chains[i].findings.n; j++)
                        if (a->chains[i].findings.items[j].severity >= a->threshold)
                                return true;
        return false;
}

int verb_audit(Context *c, char **args, size_t n_args) {
        _cleanup_(audit_run_done) AuditRun a = { .threshold = AUDIT_SEVERITY_MEDIUM };
        uint32_t tid;
        int r;

        if (c->severity && (a.threshold = audit_severity_from_string(c->severity)) < 0)
                return usage_error("Unknown severity '%s' (info, low, medium, high)", c->severity);
        if (n_args > 0 && (r = parse_pid_arg("task id", args[0], &tid)) < 0)
                return r;
        if ((r = baseline_load(c, &a)) < 0)
                return r;
        if ((r = c->file ? tasks_of_file(c, &a, n_args > 0 ? tid : 0) : tasks_live(c, &a, n_args > 0 ? tid : 0)) < 0)
                return r;
        for (size_t i = 0; i < a.n; i++)
                if ((r = c->file ? audit_file_chain(c, &a, &a.chains[i]) : audit_live_chain(c, &a, &a.chains[i], n_args > 0)) < 0)
                        return r;
        if (c->json) {
                json_auto_t *doc = run_json(&a);
                r = json_print_document(doc);
        } else {
                for (size_t i = 0; i < a.n; i++)
                        print_chain(&a.chains[i], a.threshold);
                size_t n_chains = a.n - run_unconfined(&a);
                if (c->legend && n_chains < a.n)
                        printf("No chain audited: the task runs under no filter.\n");
                else if (c->legend)
                        printf("%zu chain%s audited%s%s; %s at or above %s.\n", n_chains, n_chains == 1 ? "" : "s",
                               a.baseline_path ? ", baseline " : "", a.baseline_path ?: "",
                               run_found(&a) ? "weaknesses found" : "nothing found", audit_severity_to_string(a.threshold));
                r = output_flush();
        }
        return r < 0 ? r : run_found(&a) ? AUDIT_FOUND : 0;
}
