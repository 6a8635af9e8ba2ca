/* policy-check.c: filters built with libseccomp, seccomp.json profiles loaded as runtimes load
 * them, and decisions checked against the concrete evaluator at the boundaries of every case */
#include "policy-check.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/prog.h"
#include "core/util.h"
#include "policy/policy-arch.h"
#include "policy/policy-format.h"
#include "policy/policy-exec.h"
#include "policy/policy-oci.h"
#include "policy/policy-profile.h"
#include "policy/policy-summary.h"


void test_prog_clear(TestProg *p) {
        g_free(p->name);
        g_free(p->insns);
        *p = (TestProg) {};
}

TestProg test_prog_copy(const char *name, const struct sock_filter *insns, size_t len) {
        return (TestProg) { .name = g_strdup(name), .insns = g_memdup2(insns, len * sizeof(*insns)), .len = len };
}

TestProg test_prog_from_ctx(const char *name, scmp_filter_ctx ctx) {
        _cleanup_close_ int fd = memfd_create("sectree-test-policy", MFD_CLOEXEC);
        TestProg p = { .name = g_strdup(name) };

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(seccomp_export_bpf(ctx, fd), ==, 0);
        off_t size = lseek(fd, 0, SEEK_CUR);
        g_assert_cmpint(size, >, 0);
        p.len = (size_t) size / sizeof(struct sock_filter);
        p.insns = g_malloc(size);
        g_assert_cmpint(pread(fd, p.insns, size, 0), ==, size);
        g_assert_cmpint(prog_validate(p.insns, p.len, NULL), ==, 0);
        seccomp_release(ctx);
        return p;
}

void test_chain_init(TestChain *c, const char *name, const TestProg *const *oldest_first, size_t n) {
        g_assert_cmpuint(n, <=, ELEMENTSOF(c->progs));
        *c = (TestChain) { .n = n, .name = name };
        for (size_t i = 0; i < n; i++)
                c->progs[i] = (ChainProgram) { .insns = oldest_first[n - 1 - i]->insns, .len = oldest_first[n - 1 - i]->len };
}

/* ---- seccomp.json ---- */

TestProg tests_profile_prog(const char *name, const json_t *profile, const char *const *caps) {
        _cleanup_free_ char *error = NULL;
        TestProg p = { .name = g_strdup(name) };
        int r = policy_profile_build(profile, caps, &p.insns, &p.len, &error);
        if (r < 0)
                g_error("%s: %s", name, error ? error : strerror(-r));
        g_assert_cmpint(prog_validate(p.insns, p.len, NULL), ==, 0);
        return p;
}

json_t *tests_json_loads_u64(const char *text) {
        _cleanup_free_ char *error = NULL;
        json_t *j = NULL;
        if (policy_profile_parse(text, &j, &error) < 0)
                g_error("invalid JSON: %s: %s", error ? error : "?", text);
        return j;
}

/* ---- random programs ---- */

static uint32_t random_constant(GRand *r, const uint32_t *pool, size_t n_pool) {
        static const uint32_t special[] = { 0, 1, 2, 3, 4, 7, 8, 0xff, 0x100, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff };
        if (n_pool && g_rand_boolean(r))
                return pool[g_rand_int_range(r, 0, (int) n_pool)];
        if (g_rand_int_range(r, 0, 4) == 0)
                return g_rand_int(r);
        return special[g_rand_int_range(r, 0, ELEMENTSOF(special))];
}

static uint32_t random_action(GRand *r) {
        static const uint32_t actions[] = {
                SECCOMP_RET_ALLOW, SECCOMP_RET_ALLOW, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | 1, SECCOMP_RET_ERRNO | 13,
                SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP | 5, SECCOMP_RET_LOG,
                SECCOMP_RET_TRACE | 2, SECCOMP_RET_USER_NOTIF, 0x00010000 /* unknown: kills the process */,
                SECCOMP_RET_ALLOW | 7 /* data the kernel drops */,
        };
        return actions[g_rand_int_range(r, 0, ELEMENTSOF(actions))];
}

/* A word of seccomp_data to load: nr and arch sometimes, the arguments mostly. */
static uint32_t random_offset(GRand *r, bool with_ip) {
        switch (g_rand_int_range(r, 0, 8)) {
        case 0: return offsetof(struct seccomp_data, nr);
        case 1: return offsetof(struct seccomp_data, arch);
        case 2:
                if (with_ip)
                        return offsetof(struct seccomp_data, instruction_pointer) + 4 * (uint32_t) g_rand_int_range(r, 0, 2);
                __attribute__((fallthrough));
        default: return offsetof(struct seccomp_data, args) + 4 * (uint32_t) g_rand_int_range(r, 0, 6);
        }
}

static struct sock_filter random_alu(GRand *r, const uint32_t *pool, size_t n_pool) {
        static const uint16_t ops[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_AND, BPF_OR, BPF_XOR, BPF_LSH, BPF_RSH, BPF_NEG,
                                        BPF_AND, BPF_AND, BPF_RSH, BPF_ADD };
        uint16_t op = ops[g_rand_int_range(r, 0, ELEMENTSOF(ops))];
        if (op == BPF_NEG)
                return (struct sock_filter) BPF_STMT(BPF_ALU | BPF_NEG, 0);
        if (g_rand_int_range(r, 0, 4) == 0)
                return (struct sock_filter) BPF_STMT(BPF_ALU | op | BPF_X, 0);
        uint32_t k = op == BPF_LSH || op == BPF_RSH ? (uint32_t) g_rand_int_range(r, 0, 32) : random_constant(r, pool, n_pool);
        if (op == BPF_DIV && k == 0)
                k = 3;
        return (struct sock_filter) BPF_STMT(BPF_ALU | op | BPF_K, k);
}

static struct sock_filter random_jump(GRand *r, size_t pc, size_t n, const uint32_t *pool, size_t n_pool) {
        static const uint16_t ops[] = { BPF_JEQ, BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET };
        size_t room = n - 1 - (pc + 1); /* jumps may land anywhere up to the final RET */
        uint8_t jt = (uint8_t) g_rand_int_range(r, 0, (int) MIN(room, 8) + 1);
        uint8_t jf = (uint8_t) g_rand_int_range(r, 0, (int) MIN(room, 8) + 1);
        uint16_t op = ops[g_rand_int_range(r, 0, ELEMENTSOF(ops))];
        if (g_rand_int_range(r, 0, 5) == 0)
                return (struct sock_filter) BPF_JUMP(BPF_JMP | op | BPF_X, 0, jt, jf);
        return (struct sock_filter) BPF_JUMP(BPF_JMP | op | BPF_K, random_constant(r, pool, n_pool), jt, jf);
}

static struct sock_filter random_insn(GRand *r, size_t pc, size_t n, bool with_ip, const uint32_t *pool, size_t n_pool) {
        switch (g_rand_int_range(r, 0, 16)) {
        case 0:
        case 1:
        case 2: return (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, random_offset(r, with_ip));
        case 3: return (struct sock_filter) BPF_STMT(BPF_LD | BPF_IMM, random_constant(r, pool, n_pool));
        case 4: return (struct sock_filter) BPF_STMT(BPF_LDX | BPF_IMM, random_constant(r, pool, n_pool));
        case 5: return (struct sock_filter) BPF_STMT((g_rand_boolean(r) ? BPF_LD : BPF_LDX) | BPF_MEM, g_rand_int_range(r, 0, 2));
        case 6: return (struct sock_filter) BPF_STMT(g_rand_boolean(r) ? BPF_ST : BPF_STX, g_rand_int_range(r, 0, 2));
        case 7: return (struct sock_filter) BPF_STMT(BPF_MISC | (g_rand_boolean(r) ? BPF_TAX : BPF_TXA), 0);
        case 8:
        case 9: return random_alu(r, pool, n_pool);
        case 10: return (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, random_action(r));
        default: return random_jump(r, pc, n, pool, n_pool);
        }
}

void tests_random_prog(GRand *r, bool with_ip, const uint32_t *pool, size_t n_pool, TestRandomProg *ret) {
        for (;;) {
                size_t n = (size_t) g_rand_int_range(r, 6, 40), pc = 0;
                ret->insns[pc++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, random_offset(r, with_ip));
                ret->insns[pc++] = (struct sock_filter) BPF_STMT(BPF_ST, 0);
                ret->insns[pc++] = (struct sock_filter) BPF_STMT(BPF_ST, 1);
                for (; pc < n - 1; pc++)
                        ret->insns[pc] = random_insn(r, pc, n, with_ip, pool, n_pool);
                ret->insns[pc++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, random_action(r));
                ret->len = pc;
                if (prog_validate(ret->insns, ret->len, NULL) == 0)
                        return;
        }
}

/* ---- checking decisions ---- */

typedef struct Checker {
        const TestChain *chain;
        const PolicyDecision *dec;
        PolicyCaseView *views; /* of each case */
        size_t n_samples, n_failed;
        PolicySampleFunc sample;
        void *userdata;
} Checker;

#define MAX_REPORTED 20

static void checker_fail(Checker *c, const struct seccomp_data *d, const char *what) {
        if (c->n_failed++ >= MAX_REPORTED)
                return;
        Arena arena = {};
        _cleanup_free_ char *s = policy_decision_string(&arena, c->dec);
        g_test_message("MISMATCH in %s, nr %d arch %#x args %#llx %#llx %#llx %#llx %#llx %#llx ip %#llx: %s; decision: %s",
                       c->chain->name, d->nr, d->arch, (unsigned long long) d->args[0], (unsigned long long) d->args[1],
                       (unsigned long long) d->args[2], (unsigned long long) d->args[3],
                       (unsigned long long) d->args[4], (unsigned long long) d->args[5],
                       (unsigned long long) d->instruction_pointer, what, s ? s : "?");
        arena_done(&arena);
        g_test_fail();
}

static void check_sample(Checker *c, const struct seccomp_data *d) {
        EvalResult ev = chain_evaluate(c->chain->progs, c->chain->n, d);
        size_t matches = 0;
        uint32_t got = 0;

        c->n_samples++;
        /* a sample outside the question (another nr or arch) belongs to no case */
        if (!policy_term_holds(&c->dec->base, d)) {
                if (policy_decision_match(c->dec, d, NULL))
                        checker_fail(c, d, "a value outside the question matches a term");
                return;
        }
        for (size_t i = 0; i < c->dec->n_cases; i++)
                for (size_t j = 0; j < c->dec->cases[i].n_terms; j++) {
                        const PolicyTerm *t = &c->dec->cases[i].terms[j];
                        bool within = policy_term_holds_within(t, &c->dec->base, d);
                        /* the shortcut agrees with the full test, now and then */
                        if (c->n_samples % 64 == 0 && within != policy_term_holds(t, d))
                                checker_fail(c, d, "policy_term_holds_within() disagrees");
                        matches += within;
                }
        if (matches != 1) {
                g_autofree char *what = g_strdup_printf("%zu terms match", matches);
                checker_fail(c, d, what);
                return;
        }
        const PolicyCase *m = policy_decision_match(c->dec, d, &got);
        /* the conditions as printed: the matching case's hold, no other's */
        for (size_t i = 0; i < c->dec->n_cases; i++)
                if (policy_case_view_holds(&c->views[i], d) != (m == &c->dec->cases[i])) {
                        _cleanup_free_ char *text = policy_case_view_string(&c->views[i]);
                        g_autofree char *what = g_strdup_printf("the printed condition of case %zu (%s) %s", i, text,
                                                                m == &c->dec->cases[i] ? "does not hold" : "holds");
                        checker_fail(c, d, what);
                        return;
                }
        if (got != ev.ret) {
                g_autofree char *what = g_strdup_printf("decision says %#x, evaluator %#x", got, ev.ret);
                checker_fail(c, d, what);
                return;
        }
        if (c->sample)
                c->sample(d, got, c->userdata);
}

static void set_word(struct seccomp_data *d, unsigned w, uint32_t v) {
        memcpy((uint8_t *) d + 4 * w, &v, sizeof(v));
}

#define BOUNDARIES_MAX 48

/* The witness of t, with each word (and each pair of halves of a field) moved through its
 * boundaries. */
static bool word_free(const Checker *c, const PolicyTerm *t, unsigned w) {
        return word_domain_is_unconstrained(&t->words[w], &c->dec->base.words[w]);
}

static void check_term(Checker *c, const PolicyTerm *t) {
        struct seccomp_data base;
        uint32_t b[BOUNDARIES_MAX], b2[BOUNDARIES_MAX];

        policy_term_witness(t, &base);
        check_sample(c, &base);
        for (unsigned w = 0; w < POLICY_WORDS; w++) {
                if (word_free(c, t, w))
                        continue;
                size_t n = word_domain_boundaries(&t->words[w], b, ELEMENTSOF(b));
                for (size_t i = 0; i < n; i++) {
                        struct seccomp_data d = base;
                        set_word(&d, w, b[i]);
                        check_sample(c, &d);
                }
        }
        for (unsigned f = 0; f < POLICY_FIELDS; f++) {
                unsigned lo = policy_field_word(f, false), hi = policy_field_word(f, true);
                if (word_free(c, t, lo) || word_free(c, t, hi))
                        continue;
                size_t nl = word_domain_boundaries(&t->words[lo], b, 8), nh = word_domain_boundaries(&t->words[hi], b2, 8);
                for (size_t i = 0; i < nl; i++)
                        for (size_t j = 0; j < nh; j++) {
                                struct seccomp_data d = base;
                                set_word(&d, lo, b[i]);
                                set_word(&d, hi, b2[j]);
                                check_sample(c, &d);
                        }
        }
}

static uint32_t random_word(GRand *rand) {
        static const uint32_t special[] = { 0, 1, 2, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff };
        switch (g_rand_int_range(rand, 0, 4)) {
        case 0: return special[g_rand_int_range(rand, 0, ELEMENTSOF(special))];
        case 1: return (uint32_t) g_rand_int_range(rand, 0, 64);
        default: return g_rand_int(rand);
        }
}

size_t policy_check_decision(const TestChain *chain, const PolicyDecision *dec, GRand *rand,
                             PolicySampleFunc sample, void *userdata) {
        Checker c = { .chain = chain, .dec = dec, .sample = sample, .userdata = userdata };
        Arena arena = {};

        c.views = g_new0(PolicyCaseView, dec->n_cases + 1);
        for (size_t i = 0; i < dec->n_cases; i++)
                g_assert_cmpint(policy_case_view(&arena, dec, &dec->cases[i], &c.views[i]), ==, 0);

        for (size_t i = 0; i < dec->n_cases; i++)
                for (size_t j = 0; j < dec->cases[i].n_terms; j++)
                        check_term(&c, &dec->cases[i].terms[j]);
        for (unsigned k = 0; rand && k < 32; k++) {
                struct seccomp_data d;
                policy_query_data(dec, &d);
                for (unsigned w = POLICY_WORD_ARCH + 1; w < POLICY_WORDS; w++)
                        set_word(&d, w, random_word(rand));
                check_sample(&c, &d);
        }
        if (c.n_failed > MAX_REPORTED)
                g_test_message("... %zu mismatches in all", c.n_failed);
        g_free(c.views);
        arena_done(&arena);
        return c.n_samples;
}

size_t policy_check_chain(const TestChain *chain, GRand *rand) {
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        size_t n = 0;

        g_assert_cmpint(policy_summarize(chain->progs, chain->n, NULL, &s), ==, 0);
        for (size_t a = 0; a < s->n_arches; a++) {
                const PolicyArchSummary *as = &s->arches[a];
                for (size_t i = 0; i < as->n_entries; i++)
                        n += policy_check_decision(chain, as->entries[i].decision, rand, NULL, NULL);
                n += policy_check_decision(chain, as->other, rand, NULL, NULL);
        }
        return n;
}

/* ---- OCI profiles ---- */

typedef struct OciCheck {
        const TestChain *oci;
        const char *what;
        size_t n, n_failed;
} OciCheck;

static void oci_sample(const struct seccomp_data *d, uint32_t ret, void *userdata) {
        OciCheck *c = userdata;
        EvalResult ev = chain_evaluate(c->oci->progs, c->oci->n, d);
        c->n++;
        if (policy_ret_effective(ev.ret) == policy_ret_effective(ret))
                return;
        if (c->n_failed++ < MAX_REPORTED)
                g_test_message("MISMATCH of the OCI profile, %s: nr %d arch %#x args %#llx %#llx %#llx: chain %#x, profile %#x",
                               c->what, d->nr, d->arch, (unsigned long long) d->args[0], (unsigned long long) d->args[1],
                               (unsigned long long) d->args[2], ret, ev.ret);
        g_test_fail();
}

/* Does some problem name this syscall or architecture? */
static bool problem_names(char **problems, const char *name, bool arch) {
        g_autofree char *prefix = g_strdup_printf(arch ? "architecture %s:" : "%s:", name);
        for (char **p = problems; p && *p; p++)
                if (g_str_has_prefix(*p, prefix))
                        return true;
        return false;
}

static bool profile_lists(const json_t *profile, const PolicyArch *a) {
        const json_t *v;
        size_t i;
        g_autofree char *name = g_ascii_strup(a->name, -1);
        g_autofree char *scmp = g_strdup_printf("SCMP_ARCH_%s", name);
        json_array_foreach(json_object_get(profile, "architectures"), i, v)
                if (streq(json_string_value(v), scmp))
                        return true;
        return false;
}

size_t policy_check_profile(const TestChain *chain, const char *text, char *const *problems, GRand *rand) {
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        g_assert_cmpint(policy_summarize(chain->progs, chain->n, NULL, &s), ==, 0);
        json_t *parsed = tests_json_loads_u64(text);
        TestProg loaded = tests_profile_prog("OCI profile", parsed, NULL);
        const TestProg *lp[] = { &loaded };
        TestChain oci;
        test_chain_init(&oci, "OCI profile", lp, 1);
        g_test_message("%s: OCI profile of %zu bytes, %zu rules, loaded: %zu instructions", chain->name, strlen(text),
                       json_array_size(json_object_get(parsed, "syscalls")), loaded.len);

        OciCheck c = { .oci = &oci };
        for (size_t a = 0; a < s->n_arches; a++) {
                const PolicyArchSummary *as = &s->arches[a];
                if (problem_names((char **) problems, as->arch->name, true))
                        continue;
                if (!profile_lists(parsed, as->arch)) { /* left out: refused as a whole, with KILL_THREAD */
                        g_assert_true(as->uniform);
                        g_assert_cmpuint(policy_ret_effective(as->uniform_ret), ==, SECCOMP_RET_KILL_THREAD);
                }
                for (size_t i = 0; i < as->n_entries; i++) {
                        if (problem_names((char **) problems, as->entries[i].syscall->name, false))
                                continue;
                        c.what = as->entries[i].syscall->name;
                        policy_check_decision(chain, as->entries[i].decision, rand, oci_sample, &c);
                }
                c.what = "the numbers libseccomp does not name";
                policy_check_decision(chain, as->other, rand, oci_sample, &c);
        }
        json_decref(parsed);
        test_prog_clear(&loaded);
        g_test_message("%s: %zu samples decided alike by the chain and its OCI profile", chain->name, c.n);
        return c.n;
}

size_t policy_check_oci(const TestChain *chain, GRand *rand, char ***ret_problems) {
        _cleanup_(policy_summary_freep) PolicySummary *s = NULL;
        _cleanup_strv_free_ char **problems = NULL;
        json_t *profile = NULL;

        g_assert_cmpint(policy_summarize(chain->progs, chain->n, NULL, &s), ==, 0);
        int r = policy_oci_profile(s, false, &profile, &problems);
        if (r == -EDOM) {
                g_assert_null(profile);
                g_assert_nonnull(problems);
                for (char **p = problems; *p; p++)
                        g_test_message("%s: not exact: %s", chain->name, *p);
                strv_free(problems);
                problems = NULL;
                r = policy_oci_profile(s, true, &profile, &problems);
        }
        g_assert_cmpint(r, ==, 0);
        g_assert_nonnull(profile);

        /* as text, as a runtime reads it */
        _cleanup_free_ char *text = policy_oci_dumps(profile, JSON_COMPACT);
        json_decref(profile);
        g_assert_nonnull(text);
        size_t n = policy_check_profile(chain, text, problems, rand);
        if (ret_problems)
                *ret_problems = TAKE_PTR(problems);
        return n;
}
