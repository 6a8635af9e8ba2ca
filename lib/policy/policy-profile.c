/* policy-profile.c: seccomp profiles (OCI linux.seccomp, containers-common's seccomp.json) built
 * through libseccomp as runc builds them */
#include "policy/policy-profile.h"

#include <errno.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/util.h"

/* ---- parsing ---- */

#define U64_MARK POLICY_PROFILE_U64_MARK

static bool is_big_number(const char *p, size_t n) {
        if (n < 19)
                return false;
        errno = 0;
        unsigned long long v = strtoull(p, NULL, 10);
        return errno == ERANGE || v > INT64_MAX;
}

int policy_profile_parse(const char *text, json_t **ret, char **ret_error) {
        size_t len = strlen(text);
        _cleanup_free_ char *s = malloc(len * 2 + 1);
        char *w = s;
        bool in_string = false;
        if (!s)
                return -ENOMEM;
        for (const char *p = text; *p; p++) {
                if (in_string) {
                        *w++ = *p;
                        if (*p == '\\' && p[1])
                                *w++ = *++p;
                        else if (*p == '"')
                                in_string = false;
                        continue;
                }
                size_t n = strspn(p, "0123456789");
                if (n > 0 && (p == text || !strchr("0123456789.eE+-", p[-1])) && !strchr(".eE", p[n]) &&
                    is_big_number(p, n)) {
                        w += sprintf(w, "\"\\u0001u64:");
                        memcpy(w, p, n);
                        w += n;
                        *w++ = '"';
                        p += n - 1;
                        continue;
                }
                in_string = *p == '"';
                *w++ = *p;
        }
        *w = 0;
        json_error_t error;
        *ret = json_loads(s, 0, &error);
        if (!*ret) {
                if (ret_error && asprintf(ret_error, "line %d, column %d: %s", error.line, error.column, error.text) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        return 0;
}

static bool json_u64(const json_t *v, uint64_t *ret) {
        const char *s = json_string_value(v);
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                *ret = (uint64_t) json_integer_value(v);
                return true;
        }
        if (!s || strncmp(s, U64_MARK, strlen(U64_MARK)) != 0)
                return false;
        errno = 0;
        *ret = strtoull(s + strlen(U64_MARK), NULL, 10);
        return errno == 0;
}

/* ---- building ---- */

typedef struct Build {
        scmp_filter_ctx ctx;
        const char *const *caps;
        char **error;
} Build;

_printf_(2, 3) static int build_error(Build *b, const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        if (b->error && vasprintf(b->error, format, ap) < 0)
                *b->error = NULL;
        va_end(ap);
        return -EINVAL;
}

static const struct {
        const char *name;
        uint32_t action;
        bool errno_ret;
} actions[] = {
        { "SCMP_ACT_KILL", SCMP_ACT_KILL, false },         { "SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, false },
        { "SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, false }, { "SCMP_ACT_TRAP", SCMP_ACT_TRAP, false },
        { "SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), true },     { "SCMP_ACT_TRACE", SCMP_ACT_TRACE(0), true },
        { "SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, false },       { "SCMP_ACT_LOG", SCMP_ACT_LOG, false },
        { "SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY, false },
};

/* An action with its errnoRet (EPERM when not given, as runc). */
static int parse_action(Build *b, const char *where, const json_t *name, const json_t *errno_ret, uint32_t *ret) {
        const char *s = json_string_value(name);
        for (size_t i = 0; s && i < ELEMENTSOF(actions); i++)
                if (streq(actions[i].name, s)) {
                        uint64_t data = EPERM;
                        if (errno_ret && (!json_u64(errno_ret, &data) || data > UINT16_MAX))
                                return build_error(b, "%s: errnoRet is not a number in 0..65535", where);
                        *ret = actions[i].action | (actions[i].errno_ret ? (uint32_t) data : 0);
                        return 0;
                }
        return build_error(b, "%s: unknown action %s", where, s ? s : "(not a string)");
}

static const struct {
        const char *name;
        enum scmp_compare op;
} operators[] = {
        { "SCMP_CMP_NE", SCMP_CMP_NE }, { "SCMP_CMP_LT", SCMP_CMP_LT }, { "SCMP_CMP_LE", SCMP_CMP_LE },
        { "SCMP_CMP_EQ", SCMP_CMP_EQ }, { "SCMP_CMP_GE", SCMP_CMP_GE }, { "SCMP_CMP_GT", SCMP_CMP_GT },
        { "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
};

static int parse_arg(Build *b, const char *where, const json_t *a, struct scmp_arg_cmp *ret) {
        const char *op = json_string_value(json_object_get(a, "op"));
        const json_t *index = json_object_get(a, "index"), *two = json_object_get(a, "valueTwo");
        *ret = (struct scmp_arg_cmp) {};
        if (!json_is_integer(index) || json_integer_value(index) < 0 || json_integer_value(index) > 5)
                return build_error(b, "%s: index is not a number in 0..5", where);
        ret->arg = (unsigned) json_integer_value(index);
        if (!json_u64(json_object_get(a, "value"), &ret->datum_a) || (two && !json_u64(two, &ret->datum_b)))
                return build_error(b, "%s: value and valueTwo must be unsigned 64-bit numbers", where);
        for (size_t i = 0; op && i < ELEMENTSOF(operators); i++)
                if (streq(operators[i].name, op)) {
                        ret->op = operators[i].op;
                        return 0;
                }
        return build_error(b, "%s: unknown operator %s", where, op ? op : "(not a string)");
}

/* Go's names for the architectures, as containers-common's includes.arches has them. */
static const char *native_go_arch(void) {
        switch (seccomp_arch_native()) {
        case SCMP_ARCH_X86_64: return "amd64";
        case SCMP_ARCH_X86: return "386";
        case SCMP_ARCH_AARCH64: return "arm64";
        case SCMP_ARCH_ARM: return "arm";
        case SCMP_ARCH_RISCV64: return "riscv64";
        case SCMP_ARCH_PPC64LE: return "ppc64le";
        case SCMP_ARCH_S390X: return "s390x";
        default: return "?";
        }
}

static bool list_has(const json_t *list, const char *s) {
        size_t i;
        const json_t *v;
        json_array_foreach(list, i, v)
                if (json_is_string(v) && streq(json_string_value(v), s))
                        return true;
        return false;
}

static size_t caps_held(const json_t *list, const char *const *caps) {
        size_t i, n = 0;
        const json_t *v;
        json_array_foreach(list, i, v)
                for (const char *const *c = caps; c && *c; c++)
                        if (json_is_string(v) && streq(json_string_value(v), *c)) {
                                n++;
                                break;
                        }
        return n;
}

/* includes: every cap held and the native architecture listed (where given); excludes: none. */
static bool rule_applies(const Build *b, const json_t *rule) {
        const json_t *inc = json_object_get(rule, "includes"), *exc = json_object_get(rule, "excludes"), *l;
        if ((l = json_object_get(inc, "arches")) && json_array_size(l) && !list_has(l, native_go_arch()))
                return false;
        if ((l = json_object_get(inc, "caps")) && caps_held(l, b->caps) < json_array_size(l))
                return false;
        if ((l = json_object_get(exc, "arches")) && json_array_size(l) && list_has(l, native_go_arch()))
                return false;
        if ((l = json_object_get(exc, "caps")) && caps_held(l, b->caps) > 0)
                return false;
        return true;
}

static uint32_t arch_of(const json_t *name) {
        const char *s = json_string_value(name);
        char lower[32];
        size_t i = 0;
        if (!s || strncmp(s, "SCMP_ARCH_", strlen("SCMP_ARCH_")) != 0)
                return 0;
        for (s += strlen("SCMP_ARCH_"); *s && i < sizeof(lower) - 1; s++)
                lower[i++] = (char) (*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
        lower[i] = 0;
        return seccomp_arch_resolve_name(lower);
}

static int add_arches(Build *b, const json_t *profile) {
        const json_t *map = json_object_get(profile, "archMap"), *e, *list = json_object_get(profile, "architectures");
        size_t i;
        json_array_foreach(map, i, e)
                if (arch_of(json_object_get(e, "architecture")) == seccomp_arch_native()) {
                        list = json_object_get(e, "subArchitectures");
                        break;
                }
        json_array_foreach(list, i, e) {
                uint32_t a = arch_of(e);
                if (!a)
                        return build_error(b, "architectures[%zu]: unknown architecture", i);
                int r = seccomp_arch_add(b->ctx, a);
                if (r < 0 && r != -EEXIST)
                        return build_error(b, "architectures[%zu]: libseccomp refuses it: %s", i, strerror(-r));
        }
        return 0;
}

static int add_rule(Build *b, size_t index, const json_t *rule) {
        char where[64];
        const json_t *names = json_object_get(rule, "names"), *args = json_object_get(rule, "args"), *v;
        struct scmp_arg_cmp cmp[6];
        uint32_t action;
        size_t i;
        int r;

        snprintf(where, sizeof(where), "syscalls[%zu]", index);
        if ((r = parse_action(b, where, json_object_get(rule, "action"), json_object_get(rule, "errnoRet"), &action)) < 0)
                return r;
        if (json_array_size(args) > ELEMENTSOF(cmp))
                return build_error(b, "%s: more than 6 args", where);
        json_array_foreach(args, i, v) {
                snprintf(where, sizeof(where), "syscalls[%zu].args[%zu]", index, i);
                if ((r = parse_arg(b, where, v, &cmp[i])) < 0)
                        return r;
        }
        json_array_foreach(names, i, v) {
                int nr = json_is_string(v) ? seccomp_syscall_resolve_name(json_string_value(v)) : __NR_SCMP_ERROR;
                if (!json_is_string(v))
                        return build_error(b, "syscalls[%zu].names[%zu]: not a string", index, i);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* as runtimes do: a name this libseccomp does not know */
                r = seccomp_rule_add_array(b->ctx, action, nr, (unsigned) json_array_size(args), cmp);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return build_error(b, "syscalls[%zu]: libseccomp refuses the rule for %s: %s", index,
                                           json_string_value(v), strerror(-r));
        }
        return 0;
}

/* What libseccomp is given is bounded before it is given: its rule database takes time that grows
 * faster than the rules (9,000 rules of 450 system calls took 3.3 s to add, 40 rules naming all
 * 450 of them 13 s), and its export faster than the program (6,700 instructions, 2.3 s), and
 * neither can be stopped. containers-common's profile names 472 system calls in its rules and
 * compares 10 arguments; at the limits below the slowest shapes measured took 0.1-0.2 s. */
#define PROFILE_MAX_RULE_NAMES 2048 /* rule x system call pairs, over the rules that apply */
#define PROFILE_MAX_ARG_CMPS 256    /* argument comparisons, each counted once per system call */

static int check_size(Build *b, const json_t *rules) {
        size_t names = 0, cmps = 0, i;
        const json_t *rule;
        json_array_foreach(rules, i, rule) {
                if (!rule_applies(b, rule))
                        continue;
                size_t n = json_array_size(json_object_get(rule, "names"));
                names += n;
                cmps += n * json_array_size(json_object_get(rule, "args"));
                if (names > PROFILE_MAX_RULE_NAMES)
                        return build_error(b, "syscalls[%zu]: the rules name more than %u system calls in all, the "
                                              "limit", i, PROFILE_MAX_RULE_NAMES);
                if (cmps > PROFILE_MAX_ARG_CMPS)
                        return build_error(b, "syscalls[%zu]: the rules compare more than %u arguments in all (each "
                                              "once per system call named), the limit", i, PROFILE_MAX_ARG_CMPS);
        }
        return 0;
}

static int ctx_export(scmp_filter_ctx ctx, struct sock_filter **ret, size_t *ret_n) {
        _cleanup_close_ int fd = memfd_create("sectree-profile", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        off_t size = lseek(fd, 0, SEEK_CUR);
        if (size <= 0 || size % sizeof(struct sock_filter))
                return -EIO;
        _cleanup_free_ struct sock_filter *insns = malloc(size);
        if (!insns)
                return -ENOMEM;
        if (pread(fd, insns, size, 0) != size)
                return -EIO;
        *ret = TAKE_PTR(insns);
        *ret_n = (size_t) size / sizeof(struct sock_filter);
        return 0;
}

int policy_profile_build(const json_t *profile, const char *const *caps, struct sock_filter **ret, size_t *ret_n,
                         char **ret_error) {
        Build b = { .caps = caps, .error = ret_error };
        const json_t *rules = json_object_get(profile, "syscalls"), *rule;
        uint32_t def;
        size_t i;

        if (ret_error)
                *ret_error = NULL;
        if (!json_is_object(profile))
                return build_error(&b, "the profile is not a JSON object");
        int r = parse_action(&b, "defaultAction", json_object_get(profile, "defaultAction"),
                             json_object_get(profile, "defaultErrnoRet"), &def);
        if (r < 0)
                return r;
        r = check_size(&b, rules);
        if (r < 0)
                return r;
        b.ctx = seccomp_init(def);
        if (!b.ctx) /* libseccomp refuses the action (e.g. an errno above 4094), or is out of memory */
                return build_error(&b, "defaultAction: libseccomp refuses it");
        r = add_arches(&b, profile);
        json_array_foreach(rules, i, rule)
                if (r >= 0 && rule_applies(&b, rule))
                        r = add_rule(&b, i, rule);
        if (r >= 0)
                r = ctx_export(b.ctx, ret, ret_n);
        seccomp_release(b.ctx);
        return r;
}
