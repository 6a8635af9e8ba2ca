/* policy-summary.c: the whole policy of a chain, every system call of every architecture it tells
 * apart */
#include "policy/policy-summary.h"

#include <errno.h>

static int arch_summarize(PolicySummary *s, const ChainProgram *chain, size_t n, const PolicyArch *a,
                          uint32_t kernel, const PolicyStop *stop, PolicyArchSummary *ret) {
        const PolicySyscallName *names;
        size_t n_names;
        int r = policy_arch_syscalls(a, &names, &n_names);
        if (r < 0)
                return r;
        *ret = (PolicyArchSummary) { .arch = a, .entries = arena_alloc(&s->arena, (n_names + 1) * sizeof(PolicyEntry)) };
        if (!ret->entries)
                return -ENOMEM;
        for (size_t i = 0; i < n_names; i++) {
                PolicyQuery q = { .arch = a->arch, .nr = names[i].nr, .kernel = kernel };
                ret->entries[i].syscall = &names[i];
                r = policy_decide_stoppable(&s->arena, chain, n, &q, stop, &ret->entries[i].decision);
                if (r < 0)
                        return r;
        }
        ret->n_entries = n_names;
        r = policy_decide_stoppable(&s->arena, chain, n, &(PolicyQuery) { .arch = a->arch, .other = true, .kernel = kernel }, stop,
                                    &ret->other);
        if (r < 0)
                return r;
        ret->uniform = policy_decision_unconditional(ret->other, &ret->uniform_ret);
        for (size_t i = 0; ret->uniform && i < n_names; i++) {
                uint32_t v;
                ret->uniform = policy_decision_unconditional(ret->entries[i].decision, &v) && v == ret->uniform_ret;
        }
        return 0;
}

int policy_summarize(const ChainProgram *chain, size_t n, const PolicyArch *only, PolicySummary **ret) {
        return policy_summarize_stoppable(chain, n, only, NULL, ret);
}

int policy_summarize_stoppable(const ChainProgram *chain, size_t n, const PolicyArch *only, const PolicyStop *stop,
                               PolicySummary **ret) {
        return policy_summarize_kernel(chain, n, only, 0, stop, ret);
}

int policy_summarize_kernel(const ChainProgram *chain, size_t n, const PolicyArch *only, uint32_t kernel,
                            const PolicyStop *stop, PolicySummary **ret) {
        const PolicyArch *arches[POLICY_ARCH_MAX];
        size_t n_arches = only ? 1 : policy_chain_arches(chain, n, arches, ELEMENTSOF(arches));
        PolicySummary *s = calloc(1, sizeof(PolicySummary));
        if (!s)
                return -ENOMEM;
        if (only)
                arches[0] = only;
        s->chain_length = n;
        s->arches = arena_alloc(&s->arena, (n_arches + 1) * sizeof(PolicyArchSummary));
        int r = s->arches ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n_arches; i++) {
                r = arch_summarize(s, chain, n, arches[i], kernel, stop, &s->arches[i]);
                if (r >= 0)
                        s->n_arches++;
        }
        if (r < 0) {
                policy_summary_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

PolicySummary *policy_summary_free(PolicySummary *s) {
        if (!s)
                return NULL;
        arena_done(&s->arena);
        free(s);
        return NULL;
}

const PolicyArchSummary *policy_summary_find_arch(const PolicySummary *s, uint32_t arch) {
        for (size_t i = 0; i < s->n_arches; i++)
                if (s->arches[i].arch->arch == arch)
                        return &s->arches[i];
        return NULL;
}

const PolicyEntry *policy_arch_summary_find(const PolicyArchSummary *a, const char *name) {
        for (size_t i = 0; i < a->n_entries; i++)
                if (streq(a->entries[i].syscall->name, name))
                        return &a->entries[i];
        return NULL;
}
