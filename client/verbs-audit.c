/* verbs-audit.c: `audit [TID]`: the weaknesses of every distinct chain on this machine (or in a
 * snapshot file), each proven from the chain by a witness input (policy_audit()) */
#include "verbs-audit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/disasm.h"
#include "core/forest.h"
#include "ctl-args.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-calls.h"
#include "output.h"
#include "policy/policy-audit.h"
#include "policy/policy-profile.h"
#include "snapshot-load.h"
#include "verbs-policy.h"

/* The capabilities a container runtime gives by default: the baseline profile is built for them. */
static const char *const default_caps[] = {
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
        "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT", NULL,
};

/* One distinct chain: a task that has it, and every task that has it. */
typedef struct AuditChain {
        uint64_t head;
        uint32_t *tids;
        size_t n_tids, allocated;
        AuditFindings findings;
} AuditChain;

typedef struct AuditRun {
        AuditChain *chains;
        size_t n, allocated;
        PolicySummary *baseline;
        const char *baseline_path; /* NULL: none */
        AuditSeverity threshold;
} AuditRun;

static void audit_run_done(AuditRun *a) {
        for (size_t i = 0; i < a->n; i++) {
                free(a->chains[i].tids);
                audit_findings_done(&a->chains[i].findings);
        }
        free(a->chains);
        a->baseline = policy_summary_free(a->baseline);
}

static int run_add_task(AuditRun *a, uint64_t head, uint32_t tid) {
        size_t i = 0;
        while (i < a->n && a->chains[i].head != head)
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
        return 0;
}

/* ---- what to audit ---- */

static int tasks_of_file(Context *c, AuditRun *a) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = snapshot_file_load(c->file, &f, NULL);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_processes; i++)
                for (size_t j = 0; j < f->processes[i]->n_threads; j++) {
                        const Task *t = &f->processes[i]->threads[j];
                        if (t->filter_id && (r = run_add_task(a, t->filter_id, (uint32_t) t->tid)) < 0)
                                return r;
                }
        return 0;
}

static int tasks_live(Context *c, AuditRun *a) {
        _cleanup_(task_list_done) TaskList l = {};
        int r = context_list_tasks(c, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n; i++)
                if (l.items[i].head && (r = run_add_task(a, l.items[i].head, l.items[i].tid)) < 0)
                        return r;
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
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
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

static int baseline_load(Context *c, AuditRun *a) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        _cleanup_free_ struct sock_filter *insns = NULL;
        json_auto_t *profile = NULL;
        size_t n = 0;
        const char *path = c->baseline ? c->baseline : AUDIT_DEFAULT_BASELINE;
        int r = read_text(path, &text);
        if (r == -ENOENT && !c->baseline)
                return 0; /* no containers-common here: no baseline */
        if (r < 0)
                return ctl_error_errno(r, "Failed to read the baseline %s: %m", path);
        r = policy_profile_parse(text, &profile, &error);
        if (r >= 0)
                r = policy_profile_build(profile, default_caps, &insns, &n, &error);
        if (r == -EINVAL)
                return ctl_error_errno(r, "Invalid baseline %s: %s", path, error ? error : "?");
        if (r < 0)
                return ctl_error_errno(r, "Failed to build the baseline %s: %m", path);
        ChainProgram p = { .insns = insns, .len = n };
        r = policy_summarize(&p, 1, NULL, &a->baseline);
        if (r < 0)
                return ctl_error_errno(r, "Failed to analyse the baseline %s: %m", path);
        a->baseline_path = path;
        return 0;
}

/* ---- one chain ---- */

static bool filter_has_listener(const FilterDetail *d) {
        for (char **f = d->meta.flags; f && *f; f++)
                if (streq(*f, "listener"))
                        return true;
        return false;
}

/* Live, a task may end between the task list and its chain: gone, it is no failure. */
static bool task_gone(const Context *c, uint32_t tid) {
        char path[32];
        snprintf(path, sizeof(path), "/proc/%" PRIu32, tid);
        return !c->file && access(path, F_OK) < 0 && errno == ENOENT;
}

/* The policy of the first task of ch that is still there: 0 and *ret, or 1 when all are gone. */
static int chain_policy(Context *c, AuditChain *ch, TaskPolicy *ret) {
        for (size_t i = 0; i < ch->n_tids; i++) {
                int r = task_policy_load(c, c->file, ch->tids[i], NULL, ret);
                if (r >= 0)
                        return 0;
                task_policy_done(ret);
                if (!task_gone(c, ch->tids[i]))
                        return r;
        }
        return 1;
}

static int audit_one(Context *c, AuditRun *a, AuditChain *ch) {
        _cleanup_(task_policy_done) TaskPolicy tp = {};
        _cleanup_free_ bool *listeners = NULL;
        int r = chain_policy(c, ch, &tp);
        if (r != 0)
                return r < 0 ? r : 0; /* all gone: nothing to audit */
        if (ch->head == 0 && tp.chain.n > 0) /* a task named by its tid: its chain's head */
                ch->head = tp.chain.filters[0].meta.id;
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

static void print_chain(const AuditChain *ch, AuditSeverity threshold) {
        size_t shown = 0;
        for (size_t i = 0; i < ch->findings.n; i++)
                shown += ch->findings.items[i].severity >= threshold;
        if (shown == 0)
                return;
        printf("Chain of filter %" PRIu64 ", task%s", ch->head, ch->n_tids == 1 ? "" : "s");
        for (size_t i = 0; i < ch->n_tids; i++)
                printf("%s %" PRIu32, i ? "," : "", ch->tids[i]);
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
        json_t *tids = json_array(), *findings = json_array();
        for (size_t i = 0; tids && i < ch->n_tids; i++)
                if (json_array_append_new(tids, json_integer(ch->tids[i])) < 0)
                        goto fail;
        for (size_t i = 0; findings && i < ch->findings.n; i++)
                if (ch->findings.items[i].severity >= threshold &&
                    json_array_append_new(findings, finding_json(&ch->findings.items[i])) < 0)
                        goto fail;
        return json_pack("{s:I, s:o, s:o}", "head", (json_int_t) ch->head, "tasks", tids, "findings", findings);
fail:
        json_decref(tids);
        json_decref(findings);
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

static bool run_found(const AuditRun *a) {
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
        if (n_args > 0) {
                if ((r = parse_pid_arg("task id", args[0], &tid)) < 0)
                        return r;
                if ((r = run_add_task(&a, 0, tid)) < 0)
                        return r;
        } else if ((r = c->file ? tasks_of_file(c, &a) : tasks_live(c, &a)) < 0)
                return r;
        if ((r = baseline_load(c, &a)) < 0)
                return r;
        for (size_t i = 0; i < a.n; i++)
                if ((r = audit_one(c, &a, &a.chains[i])) < 0)
                        return r;
        if (c->json) {
                json_auto_t *doc = run_json(&a);
                r = json_print_document(doc);
        } else {
                for (size_t i = 0; i < a.n; i++)
                        print_chain(&a.chains[i], a.threshold);
                if (c->legend)
                        printf("%zu chain%s audited%s%s; %s at or above %s.\n", a.n, a.n == 1 ? "" : "s",
                               a.baseline_path ? ", baseline " : "", a.baseline_path ?: "",
                               run_found(&a) ? "weaknesses found" : "nothing found", audit_severity_to_string(a.threshold));
                r = output_flush();
        }
        return r < 0 ? r : run_found(&a) ? AUDIT_FOUND : 0;
}
