/* policy-report.c: decisions rendered for output, the same text wherever they were computed */
#include "policy/policy-report.h"

#include <errno.h>
#include <stdio.h>

#include "core/hashmap.h"
#include "policy/policy-format.h"

/* s (malloc'ed, may be NULL) moved into the arena. */
static const char *arena_take(Arena *arena, char *s) {
        const char *c = s ? arena_strdup(arena, s) : NULL;
        free(s);
        return c;
}

int policy_report_case(Arena *arena, const PolicyDecision *dec, const PolicyCase *c, PolicyReportCase *ret) {
        PolicyCaseView v;
        int r = policy_case_view(arena, dec, c, &v);
        if (r < 0)
                return r;
        json_t *j = policy_case_view_json(&v);
        uint32_t value = 0;
        bool constant = policy_case_constant(c, &value);
        PolicyReportCase x = {
                .action = arena_take(arena, policy_case_action_string(c)),
                .condition = v.n_conditions > 0 ? arena_take(arena, policy_case_view_string(&v)) : NULL,
                .n_conditions = v.n_conditions,
                .ret = value,
                .constant = constant,
                .json = j ? arena_take(arena, json_dumps(j, JSON_COMPACT)) : NULL,
        };
        json_decref(j);
        if (!x.action || !x.json || (v.n_conditions > 0 && !x.condition))
                return -ENOMEM;
        *ret = x;
        return 0;
}

int policy_report_decision(Arena *arena, const PolicyDecision *dec, PolicyReportDecision *ret) {
        PolicyReportDecision d = {};
        d.unconditional = policy_decision_unconditional(dec, &d.ret);
        d.cases = arena_alloc(arena, (dec->n_cases + 1) * sizeof(PolicyReportCase));
        if (!d.cases)
                return -ENOMEM;
        for (size_t i = 0; i < dec->n_cases; i++) {
                int r = policy_report_case(arena, dec, &dec->cases[i], &d.cases[i]);
                if (r < 0)
                        return r;
        }
        d.n_cases = dec->n_cases;
        *ret = d;
        return 0;
}

static int report_arch(Arena *arena, const PolicyArchSummary *a, PolicyReportArch *ret) {
        PolicyReportArch x = {
                .name = a->arch->name,
                .native = a->arch == policy_arch_native(),
                .uniform = a->uniform,
                .uniform_ret = a->uniform_ret,
                .syscalls = arena_alloc(arena, (a->n_entries + 1) * sizeof(PolicyReportSyscall)),
        };
        if (!x.syscalls)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_entries; i++) {
                PolicyReportSyscall *s = &x.syscalls[i];
                s->name = a->entries[i].syscall->name;
                s->nr = a->entries[i].syscall->nr;
                int r = policy_report_decision(arena, a->entries[i].decision, &s->decision);
                if (r < 0)
                        return r;
        }
        x.n_syscalls = a->n_entries;
        int r = policy_report_decision(arena, a->other, &x.other);
        if (r < 0)
                return r;
        *ret = x;
        return 0;
}

int policy_report_new(const PolicySummary *s, PolicyReport **ret) {
        _cleanup_(policy_report_freep) PolicyReport *rep = calloc(1, sizeof(PolicyReport));
        if (!rep)
                return -ENOMEM;
        rep->arches = arena_alloc(&rep->arena, (s->n_arches + 1) * sizeof(PolicyReportArch));
        if (!rep->arches)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_arches; i++) {
                int r = report_arch(&rep->arena, &s->arches[i], &rep->arches[i]);
                if (r < 0)
                        return r;
                rep->n_arches++;
        }
        *ret = TAKE_PTR(rep);
        return 0;
}

PolicyReport *policy_report_free(PolicyReport *r) {
        if (!r)
                return NULL;
        arena_done(&r->arena);
        free(r);
        return NULL;
}

char *policy_report_decision_string(const PolicyReportDecision *d) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < d->n_cases; i++) {
                fprintf(f, "%s%s", i > 0 ? "; " : "", d->cases[i].action);
                if (d->cases[i].condition)
                        fprintf(f, " if %s", d->cases[i].condition);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

int who_can_report(WhoCan *w) {
        /* chains of the same bytes share their decision: each case is rendered once */
        _cleanup_(hashmap_deinit) Hashmap done = {}; /* case -> its rendering */
        for (size_t i = 0; i < w->n_chains; i++) {
                WhoCanChain *c = &w->chains[i];
                c->report = arena_alloc(&w->arena, (c->n_cases + 1) * sizeof(PolicyReportCase));
                if (!c->report)
                        return -ENOMEM;
                for (size_t j = 0; j < c->n_cases; j++) {
                        PolicyReportCase *x = hashmap_get(&done, (uint64_t) (uintptr_t) c->cases[j]);
                        if (x) {
                                c->report[j] = *x;
                                continue;
                        }
                        int r = policy_report_case(&w->arena, c->decision, c->cases[j], &c->report[j]);
                        if (r >= 0)
                                r = hashmap_put(&done, (uint64_t) (uintptr_t) c->cases[j], &c->report[j]);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}
