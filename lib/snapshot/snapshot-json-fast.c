/* snapshot-json-fast.c: the snapshot JSON format read in one pass over the text, without a JSON
 * tree: the same checks as snapshot-json-read.c's reader (the same field tables, the same builder,
 * the same validator), and for anything either would refuse, or that is not worth taking here,
 * SNAPSHOT_JSON_FAST_OTHER so that jansson's reader reads it and says what is wrong */
#include "snapshot/snapshot-json-fast.h"

#include "snapshot/snapshot-json-fields.h"
#include "snapshot/snapshot-units.h"
#include "snapshot/snapshot-validate.h"

/*
 * What jansson accepts (RFC 8259 with its limits: UTF-8 strings without U+0000, integers that fit
 * int64, no duplicate keys) is what this accepts, minus what it leaves: numbers with a fraction or
 * an exponent (no field takes one), "processes" before "version".
 * Values are checked against the field tables as they are read, and the forest is built with the
 * builder's calls in the order jansson's reader makes them within each array.
 */

#define OTHER SNAPSHOT_JSON_FAST_OTHER
#define CANCEL_EVERY 1024 /* elements between two looks at the cancel flag */

/* One scalar field's value; string is malloc'ed. */
typedef struct Value {
        bool present, null, boolean;
        int64_t integer;
        char *string;
} Value;

typedef struct ThreadValue {
        pid_t tid;
        TaskMode mode;
        uint64_t filter;
        bool has_no_new_privs, no_new_privs;
} ThreadValue;

typedef struct HolderValue {
        pid_t pid;
        int fd;
} HolderValue;

typedef struct Fast {
        const char *p, *end;
        char *text; /* the string read last, NUL-terminated */
        size_t text_len, text_size;
        const atomic_bool *cancel;
        size_t ticks;
        SnapshotBuilder b;
        Value top[_TOP_MAX], info[_INFO_MAX], host[_HOST_MAX], source[_SOURCE_MAX];
        size_t n_tasks, n_holders;
        /* the element being read, kept from one element to the next */
        struct sock_filter insns[SNAPSHOT_MAX_FILTER_INSNS];
        size_t n_insns;
        char **argv;
        size_t n_argv, argv_size;
        ThreadValue *threads;
        size_t n_threads, threads_size;
        Value leader[_LEADER_MAX], units[_UNITS_MAX];
        HolderValue *holders;
        size_t n_holders_here, holders_size;
} Fast;

static void values_clear(Value *v, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(v[i].string);
                v[i] = (Value) {};
        }
}

static void argv_clear(Fast *x) {
        for (size_t i = 0; i < x->n_argv; i++)
                free(x->argv[i]);
        x->n_argv = 0;
}

static void fast_done(Fast *x) {
        free(x->text);
        snapshot_builder_deinit(&x->b);
        values_clear(x->top, _TOP_MAX);
        values_clear(x->info, _INFO_MAX);
        values_clear(x->host, _HOST_MAX);
        values_clear(x->source, _SOURCE_MAX);
        values_clear(x->leader, _LEADER_MAX);
        values_clear(x->units, _UNITS_MAX);
        argv_clear(x);
        free(x->argv);
        free(x->threads);
        free(x->holders);
}

/* Room for n more elements of size bytes in *v (holding used, sized *size). */
static int grow(void **v, size_t *size, size_t used, size_t n, size_t bytes) {
        if (used + n <= *size)
                return 0;
        size_t want = *size ? *size : 16;
        while (want < used + n)
                want *= 2;
        void *m = reallocarray(*v, want, bytes);
        if (!m)
                return -ENOMEM;
        *v = m;
        *size = want;
        return 0;
}

/* A builder's answer: its refusals are jansson's reader's to word. */
static int builder_result(int r) {
        return r == -ENOMEM ? r : r < 0 ? OTHER : 0;
}

static int tick(Fast *x) {
        if (x->ticks++ % CANCEL_EVERY == 0 && x->cancel && atomic_load(x->cancel))
                return -ECANCELED;
        return 0;
}

/* ---- tokens ---- */

static void skip_space(Fast *x) {
        while (x->p < x->end && (*x->p == ' ' || *x->p == '\n' || *x->p == '\r' || *x->p == '\t'))
                x->p++;
}

static bool next_is(Fast *x, char c) {
        skip_space(x);
        return x->p < x->end && *x->p == c;
}

static bool take(Fast *x, char c) {
        if (!next_is(x, c))
                return false;
        x->p++;
        return true;
}

static bool take_word(Fast *x, const char *w, size_t n) {
        if ((size_t) (x->end - x->p) < n || memcmp(x->p, w, n) != 0)
                return false;
        x->p += n;
        return true;
}

static int text_append(Fast *x, const char *s, size_t n) {
        int r = grow((void **) &x->text, &x->text_size, x->text_len, n + 1, 1);
        if (r < 0)
                return r;
        memcpy(x->text + x->text_len, s, n);
        x->text_len += n;
        x->text[x->text_len] = 0;
        return 0;
}

/* The length of the well-formed UTF-8 sequence of more than one byte at s, 0 if there is none
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), as jansson checks. */
static size_t utf8_sequence(const unsigned char *s, size_t avail) {
        size_t n;
        uint32_t v;

        if (s[0] >= 0xC2 && s[0] <= 0xDF)
                n = 2, v = s[0] & 0x1F;
        else if (s[0] >= 0xE0 && s[0] <= 0xEF)
                n = 3, v = s[0] & 0x0F;
        else if (s[0] >= 0xF0 && s[0] <= 0xF4)
                n = 4, v = s[0] & 0x07;
        else
                return 0;
        if (avail < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xC0) != 0x80)
                        return 0;
                v = v << 6 | (s[i] & 0x3F);
        }
        if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (n == 3 && v < 0x800) || (n == 4 && v < 0x10000))
                return 0;
        return n;
}

/* The 4 hex digits of \uXXXX at p (6 bytes there), or -1. */
static int32_t hex4(const char *p) {
        int32_t v = 0;

        if (p[0] != '\\' || p[1] != 'u')
                return -1;
        for (int i = 2; i < 6; i++) {
                int d = unhex_char(p[i]);
                if (d < 0)
                        return -1;
                v = v << 4 | d;
        }
        return v;
}

/* \uXXXX, or a surrogate pair of two, as UTF-8; not U+0000 nor a surrogate alone (jansson refuses
 * both). */
static int lex_unicode(Fast *x) {
        unsigned char u[4];
        int32_t v, low;
        size_t n;

        if (x->end - x->p < 6 || (v = hex4(x->p)) <= 0)
                return OTHER;
        x->p += 6;
        if (v >= 0xDC00 && v <= 0xDFFF)
                return OTHER;
        if (v >= 0xD800 && v <= 0xDBFF) {
                if (x->end - x->p < 6 || (low = hex4(x->p)) < 0xDC00 || low > 0xDFFF)
                        return OTHER;
                x->p += 6;
                v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
        }
        if (v < 0x80)
                u[0] = (unsigned char) v, n = 1;
        else if (v < 0x800)
                u[0] = (unsigned char) (0xC0 | v >> 6), u[1] = (unsigned char) (0x80 | (v & 0x3F)), n = 2;
        else if (v < 0x10000)
                u[0] = (unsigned char) (0xE0 | v >> 12), u[1] = (unsigned char) (0x80 | (v >> 6 & 0x3F)),
                u[2] = (unsigned char) (0x80 | (v & 0x3F)), n = 3;
        else
                u[0] = (unsigned char) (0xF0 | v >> 18), u[1] = (unsigned char) (0x80 | (v >> 12 & 0x3F)),
                u[2] = (unsigned char) (0x80 | (v >> 6 & 0x3F)), u[3] = (unsigned char) (0x80 | (v & 0x3F)), n = 4;
        return text_append(x, (const char *) u, n);
}

static int lex_escape(Fast *x) {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *at;

        if (x->end - x->p < 2)
                return OTHER;
        if (x->p[1] == 'u')
                return lex_unicode(x);
        at = x->p[1] ? strchr(from, x->p[1]) : NULL;
        if (!at)
                return OTHER;
        x->p += 2;
        return text_append(x, &to[at - from], 1);
}

/* A string into x->text. */
static int lex_string(Fast *x) {
        int r;

        if (!take(x, '"'))
                return OTHER;
        x->text_len = 0;
        if ((r = text_append(x, "", 0)) < 0)
                return r;
        for (;;) {
                const char *start = x->p;
                while (x->p < x->end && (unsigned char) *x->p >= 0x20 && (unsigned char) *x->p < 0x80 && *x->p != '"' &&
                       *x->p != '\\')
                        x->p++;
                if ((r = text_append(x, start, (size_t) (x->p - start))) < 0)
                        return r;
                if (x->p >= x->end || (unsigned char) *x->p < 0x20)
                        return OTHER;
                if (*x->p == '"') {
                        x->p++;
                        return 0;
                }
                if (*x->p == '\\') {
                        if ((r = lex_escape(x)) != 0)
                                return r;
                        continue;
                }
                size_t n = utf8_sequence((const unsigned char *) x->p, (size_t) (x->end - x->p));
                if (n == 0)
                        return OTHER;
                if ((r = text_append(x, x->p, n)) < 0)
                        return r;
                x->p += n;
        }
}

/* An integer as jansson reads one: no leading zeros, no fraction or exponent, within int64. */
static int lex_integer(Fast *x, int64_t *ret) {
        const char *p = x->p;
        bool negative = p < x->end && *p == '-';
        uint64_t v = 0, limit;

        p += negative;
        limit = negative ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX;
        if (p >= x->end || *p < '0' || *p > '9')
                return OTHER;
        if (*p == '0')
                p++;
        else
                for (; p < x->end && *p >= '0' && *p <= '9'; p++) {
                        unsigned d = (unsigned) (*p - '0');
                        if (v > (limit - d) / 10)
                                return OTHER;
                        v = v * 10 + d;
                }
        if (p < x->end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E'))
                return OTHER;
        *ret = negative ? (v == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) v) : (int64_t) v;
        x->p = p;
        return 0;
}

/* ---- values, objects, arrays ---- */

/* A scalar of the field's kind, in its range; null where the field allows it. */
static int read_scalar(Fast *x, const FieldSpec *spec, Value *v) {
        int r;

        skip_space(x);
        v->present = true;
        if (x->p < x->end && *x->p == 'n') {
                v->null = true;
                return spec->nullable && take_word(x, "null", 4) ? 0 : OTHER;
        }
        switch (spec->kind) {
        case FIELD_INTEGER:
                r = lex_integer(x, &v->integer);
                if (r == 0 && (v->integer < spec->min || v->integer > spec->max))
                        return OTHER;
                return r;
        case FIELD_BOOLEAN:
                if (take_word(x, "true", 4))
                        v->boolean = true;
                else if (!take_word(x, "false", 5))
                        return OTHER;
                return 0;
        case FIELD_STRING:
                if ((r = lex_string(x)) != 0)
                        return r;
                v->string = strdup(x->text);
                return v->string ? 0 : -ENOMEM;
        default:
                return OTHER;
        }
}

/* An array or object field: read by the object's own function. */
typedef int (*ReadCompound)(Fast *x, size_t field);

/* An object of the table's fields, each at most once, every field that is not optional there:
 * scalars into values[], arrays and objects through compound(). */
static int read_object(Fast *x, const FieldSpec *specs, size_t n, Value *values, ReadCompound compound) {
        int r;

        if (!take(x, '{'))
                return OTHER;
        if (!take(x, '}'))
                for (;;) {
                        size_t i = 0;
                        if ((r = lex_string(x)) != 0)
                                return r;
                        while (i < n && !streq(specs[i].name, x->text))
                                i++;
                        if (i == n || values[i].present || !take(x, ':'))
                                return OTHER;
                        if (specs[i].kind == FIELD_ARRAY || specs[i].kind == FIELD_OBJECT) {
                                values[i].present = true;
                                r = next_is(x, specs[i].kind == FIELD_ARRAY ? '[' : '{') && compound ? compound(x, i) : OTHER;
                        } else
                                r = read_scalar(x, &specs[i], &values[i]);
                        if (r != 0)
                                return r;
                        if (take(x, ','))
                                continue;
                        if (take(x, '}'))
                                break;
                        return OTHER;
                }
        for (size_t i = 0; i < n; i++)
                if (!values[i].present && !specs[i].optional)
                        return OTHER;
        return 0;
}

/* An array of at most max elements, each read by element(x, index); its length in *ret_n. */
static int read_array(Fast *x, size_t max, int (*element)(Fast *x, size_t i), size_t *ret_n) {
        size_t n = 0;
        int r;

        if (!take(x, '['))
                return OTHER;
        if (!take(x, ']'))
                for (;;) {
                        if (n >= max)
                                return OTHER;
                        if ((r = element(x, n)) != 0)
                                return r;
                        n++;
                        if (take(x, ','))
                                continue;
                        if (take(x, ']'))
                                break;
                        return OTHER;
                }
        if (ret_n)
                *ret_n = n;
        return 0;
}

static uint64_t id_of(const Value *v) {
        return v->null ? 0 : (uint64_t) v->integer;
}

static const char *string_of(const Value *v) {
        return v->null ? NULL : v->string;
}

/* ---- filters ---- */

static int read_insn(Fast *x, size_t j) {
        static const int64_t max[4] = { UINT16_MAX, UINT8_MAX, UINT8_MAX, UINT32_MAX };
        int64_t v[4];
        int r;

        if (!take(x, '['))
                return OTHER;
        for (size_t k = 0; k < 4; k++) {
                if (k > 0 && !take(x, ','))
                        return OTHER;
                skip_space(x);
                if ((r = lex_integer(x, &v[k])) != 0)
                        return r;
                if (v[k] < 0 || v[k] > max[k])
                        return OTHER;
        }
        if (!take(x, ']'))
                return OTHER;
        x->insns[j] = (struct sock_filter) { .code = (uint16_t) v[0], .jt = (uint8_t) v[1], .jf = (uint8_t) v[2],
                                             .k = (uint32_t) v[3] };
        return 0;
}

static int filter_compound(Fast *x, size_t field) {
        return field == FILTER_PROGRAM ? read_array(x, SNAPSHOT_MAX_FILTER_INSNS, read_insn, &x->n_insns) : OTHER;
}

static int add_filter(Fast *x, size_t i, const Value *v) {
        SnapshotFilterFields f = {
                .id = (uint64_t) v[FILTER_ID].integer, .parent = id_of(&v[FILTER_PARENT]),
                .listener = id_of(&v[FILTER_LISTENER]), .length = (uint64_t) v[FILTER_LENGTH].integer,
                .insns = x->insns, .n_insns = x->n_insns, .log = v[FILTER_LOG].boolean,
                .wait_killable_recv = v[FILTER_WAIT_KILLABLE_RECV].boolean,
                .identity = identity_kind_from_string(v[FILTER_IDENTITY].string),
        };

        if (prog_digest_from_string(v[FILTER_DIGEST].string, f.digest) < 0 || f.identity < 0)
                return OTHER;
        return builder_result(snapshot_builder_add_filter(&x->b, i, &f, NULL));
}

static int read_filter(Fast *x, size_t i) {
        Value v[_FILTER_MAX] = {};
        int r = tick(x);

        x->n_insns = 0;
        if (r == 0)
                r = read_object(x, filter_fields, _FILTER_MAX, v, filter_compound);
        if (r == 0)
                r = add_filter(x, i, v);
        values_clear(v, _FILTER_MAX);
        return r;
}

/* ---- processes ---- */

static int read_arg(Fast *x, size_t j) {
        int r = lex_string(x);

        if (r != 0)
                return r;
        if ((r = grow((void **) &x->argv, &x->argv_size, x->n_argv, 2, sizeof(char *))) < 0)
                return r;
        x->argv[x->n_argv] = strdup(x->text);
        if (!x->argv[x->n_argv])
                return -ENOMEM;
        x->argv[++x->n_argv] = NULL;
        return 0;
}

static int read_thread(Fast *x, size_t j) {
        Value v[_THREAD_MAX] = {};
        int r = read_object(x, thread_fields, _THREAD_MAX, v, NULL);

        if (r == 0)
                r = grow((void **) &x->threads, &x->threads_size, x->n_threads, 1, sizeof(ThreadValue));
        if (r == 0) {
                x->threads[x->n_threads++] = (ThreadValue) {
                        .tid = (pid_t) v[THREAD_TID].integer,
                        .mode = task_mode_from_string(v[THREAD_MODE].string),
                        .filter = id_of(&v[THREAD_FILTER]),
                        .has_no_new_privs = v[THREAD_NO_NEW_PRIVS].present,
                        .no_new_privs = v[THREAD_NO_NEW_PRIVS].boolean,
                };
                if (x->threads[x->n_threads - 1].mode < 0)
                        r = OTHER;
        }
        values_clear(v, _THREAD_MAX);
        return r;
}

static int process_compound(Fast *x, size_t field) {
        switch (field) {
        case PROCESS_ARGV:
                return read_array(x, SNAPSHOT_MAX_ARGV_BYTES / 2, read_arg, NULL);
        case PROCESS_THREADS:
                return read_array(x, SIZE_MAX, read_thread, NULL);
        case PROCESS_EXITED_LEADER:
                return read_object(x, exited_leader_fields, _LEADER_MAX, x->leader, NULL);
        case PROCESS_UNITS:
                return read_object(x, units_fields, _UNITS_MAX, x->units, NULL);
        default:
                return OTHER;
        }
}

static int add_threads(Fast *x, Process *p, size_t i) {
        for (size_t j = 0; j < x->n_threads; j++) {
                const ThreadValue *t = &x->threads[j];
                if (++x->n_tasks > SNAPSHOT_MAX_TASKS)
                        return OTHER;
                int r = builder_result(snapshot_builder_add_thread(&x->b, p, i, j, t->tid, t->mode, t->filter, NULL));
                if (r != 0)
                        return r;
                if (t->has_no_new_privs)
                        task_set_no_new_privs(&p->threads[p->n_threads - 1], t->no_new_privs);
        }
        return 0;
}

static int add_leader_and_units(Fast *x, Process *p) {
        if (x->leader[LEADER_MODE].present) {
                TaskMode mode = task_mode_from_string(x->leader[LEADER_MODE].string);
                if (mode < 0)
                        return OTHER;
                process_set_exited_leader(p, mode, (unsigned) x->leader[LEADER_FILTERS].integer);
        }
        if (!x->units[UNITS_UNIT].present)
                return 0;
        if (x->b.version < SNAPSHOT_FORMAT_VERSION_UNITS)
                return OTHER;
        for (size_t k = 0; k < _UNITS_MAX; k++)
                if (!snapshot_unit_name_valid(string_of(&x->units[k])))
                        return OTHER;
        return process_set_units(p, string_of(&x->units[UNITS_UNIT]), string_of(&x->units[UNITS_USER_UNIT]),
                                 string_of(&x->units[UNITS_MACHINE]));
}

static int add_process(Fast *x, size_t i, const Value *v) {
        Process *p;
        int r = builder_result(snapshot_builder_add_process(&x->b, i, (pid_t) v[PROCESS_PID].integer, &p, NULL));

        if (r != 0)
                return r;
        p->ppid = (pid_t) v[PROCESS_PPID].integer;
        p->start_time = (uint64_t) v[PROCESS_START_TIME].integer;
        p->uid = (uid_t) v[PROCESS_UID].integer;
        p->gid = (gid_t) v[PROCESS_GID].integer;
        p->no_new_privs = v[PROCESS_NO_NEW_PRIVS].boolean;
        if ((r = builder_result(snapshot_builder_set_comm(p, i, v[PROCESS_COMM].string, NULL))) != 0 ||
            (r = process_set_exe(p, string_of(&v[PROCESS_EXE]))) < 0)
                return r;
        if (x->n_argv > 0) { /* the argv read, handed over whole; none: NULL, as jansson's reader leaves it */
                p->argv = TAKE_PTR(x->argv);
                x->n_argv = x->argv_size = 0;
        }
        if ((r = add_threads(x, p, i)) != 0)
                return r;
        return add_leader_and_units(x, p);
}

static int read_process(Fast *x, size_t i) {
        Value v[_PROCESS_MAX] = {};
        int r = tick(x);

        argv_clear(x);
        x->n_threads = 0;
        values_clear(x->leader, _LEADER_MAX);
        values_clear(x->units, _UNITS_MAX);
        if (r == 0)
                r = read_object(x, process_fields, _PROCESS_MAX, v, process_compound);
        if (r == 0)
                r = add_process(x, i, v);
        values_clear(v, _PROCESS_MAX);
        return r;
}

/* ---- listeners ---- */

static int read_holder(Fast *x, size_t j) {
        Value v[_HOLDER_MAX] = {};
        int r = read_object(x, holder_fields, _HOLDER_MAX, v, NULL);

        if (r == 0)
                r = grow((void **) &x->holders, &x->holders_size, x->n_holders_here, 1, sizeof(HolderValue));
        if (r == 0)
                x->holders[x->n_holders_here++] = (HolderValue) { .pid = (pid_t) v[HOLDER_PID].integer,
                                                                  .fd = (int) v[HOLDER_FD].integer };
        return r;
}

static int listener_compound(Fast *x, size_t field) {
        return field == LISTENER_HOLDERS ? read_array(x, SIZE_MAX, read_holder, NULL) : OTHER;
}

static int read_listener(Fast *x, size_t i) {
        Value v[_LISTENER_MAX] = {};
        Listener *l;
        int r = tick(x);

        x->n_holders_here = 0;
        if (r == 0)
                r = read_object(x, listener_fields, _LISTENER_MAX, v, listener_compound);
        if (r == 0)
                r = builder_result(snapshot_builder_add_listener(&x->b, i, (uint64_t) v[LISTENER_ID].integer,
                                                                 (uint64_t) v[LISTENER_FILTER].integer, &l, NULL));
        for (size_t j = 0; r == 0 && j < x->n_holders_here; j++)
                r = ++x->n_holders > SNAPSHOT_MAX_HOLDERS
                            ? OTHER
                            : builder_result(snapshot_builder_add_holder(&x->b, l, i, j, x->holders[j].pid,
                                                                         x->holders[j].fd, NULL));
        return r;
}

/* ---- the document ---- */

static bool version_known(const Fast *x) {
        const Value *v = &x->top[TOP_VERSION];
        return v->present && v->integer >= SNAPSHOT_FORMAT_VERSION_1 && v->integer <= SNAPSHOT_FORMAT_VERSION;
}

static int top_compound(Fast *x, size_t field) {
        switch (field) {
        case TOP_SNAPSHOT:
                return read_object(x, snapshot_fields, _INFO_MAX, x->info, NULL);
        case TOP_HOST:
                return read_object(x, host_fields, _HOST_MAX, x->host, NULL);
        case TOP_SOURCE:
                return read_object(x, source_fields, _SOURCE_MAX, x->source, NULL);
        case TOP_FILTERS:
                return read_array(x, SNAPSHOT_MAX_FILTERS, read_filter, NULL);
        case TOP_PROCESSES:
                if (!version_known(x)) /* a process's units need it */
                        return OTHER;
                x->b.version = (unsigned) x->top[TOP_VERSION].integer;
                return read_array(x, SNAPSHOT_MAX_PROCESSES, read_process, NULL);
        case TOP_LISTENERS:
                return read_array(x, SNAPSHOT_MAX_LISTENERS, read_listener, NULL);
        default:
                return OTHER;
        }
}

/* What jansson's reader takes from the top, "snapshot", "host" and "source". */
static int set_meta(Fast *x) {
        Forest *f = x->b.forest;
        int r;

        if (!streq(x->top[TOP_FORMAT].string, SNAPSHOT_FORMAT_NAME) || !version_known(x))
                return OTHER;
        f->snapshot.consistency = snapshot_consistency_from_string(x->info[INFO_CONSISTENCY].string);
        if (f->snapshot.consistency < 0)
                return OTHER;
        f->snapshot.taken_by_uid = (uint32_t) x->info[INFO_TAKEN_BY_UID].integer;
        if ((r = snapshot_info_set_name(&f->snapshot, string_of(&x->info[INFO_NAME]))) < 0)
                return r;
        if (snapshot_parse_time(x->top[TOP_CREATED_AT].string, &f->created_at_usec) < 0)
                return OTHER;
        f->identity = identity_kind_from_string(x->source[SOURCE_IDENTITY].string);
        if (f->identity < 0)
                return OTHER;
        f->backend = strdup(x->source[SOURCE_BACKEND].string);
        if (!f->backend)
                return -ENOMEM;
        f->root = (pid_t) x->top[TOP_ROOT].integer;
        return host_info_set(&f->host, string_of(&x->host[HOST_KERNEL]), string_of(&x->host[HOST_ARCH]),
                             string_of(&x->host[HOST_HOSTNAME]));
}

int snapshot_json_read_fast(const char *data, size_t size, const atomic_bool *cancel, Forest **ret) {
        Fast *x;
        int r;

        if (size > SNAPSHOT_MAX_FILE_SIZE)
                return OTHER;
        x = calloc(1, sizeof(Fast)); /* the program's room is 32 KiB */
        if (!x)
                return -ENOMEM;
        x->p = data;
        x->end = data + size;
        x->cancel = cancel;
        r = tick(x);
        if (r == 0)
                r = snapshot_builder_init(&x->b);
        if (r == 0)
                r = read_object(x, top_fields, _TOP_MAX, x->top, top_compound);
        if (r == 0) {
                skip_space(x);
                r = x->p == x->end ? set_meta(x) : OTHER;
        }
        if (r == 0)
                r = builder_result(snapshot_builder_finish(&x->b, ret, NULL));
        fast_done(x);
        free(x);
        return r;
}
