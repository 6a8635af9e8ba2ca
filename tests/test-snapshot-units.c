/* test-snapshot-units.c: the processes' units in snapshots (format version 2): both formats carry
 * them, a snapshot without any is still written as version 1 and version 1 files still load, and
 * hostile units are refused with the field named */
#include <jansson.h>
#include <sqlite3.h>

#include "snapshot-samples.h"
#include "snapshot/snapshot-diff.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite-read.h"
#include "snapshot/snapshot-sqlite.h"
#include "snapshot/snapshot-units.h"
#include "snapshot/snapshot-validate.h"
#include "snapshot/snapshot.h"
#include "tests-util.h"

static char *format_json(const Forest *f) {
        char *s = NULL;
        g_assert_cmpint(snapshot_json_format(f, 0, &s), ==, 0);
        return s;
}

/* SAMPLE_BASIC with units: its first process in sshd.service, its second a user unit of uid 1000
 * inside a container; the third has none. */
static Forest *forest_with_units(void) {
        Forest *f = sample_forest_with_units();
        g_assert_nonnull(f);
        return f;
}

static void assert_units(const Forest *f, const Forest *g) {
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i], *q = forest_find_process(g, p->pid);
                g_assert_nonnull(q);
                g_assert_cmpstr(p->unit, ==, q->unit);
                g_assert_cmpstr(p->user_unit, ==, q->user_unit);
                g_assert_cmpstr(p->machine, ==, q->machine);
        }
}

static void test_round_trip(void) {
        g_autoptr(Forest) f = forest_with_units();
        g_assert_cmpstr(f->processes[0]->unit, ==, "sshd.service");
        g_assert_null(f->processes[0]->machine); /* "" is none */
        g_autofree char *json = format_json(f), *error = NULL;
        g_assert_nonnull(strstr(json, "\"version\":2,"));
        g_assert_nonnull(strstr(json, "\"units\":{\"unit\":\"sshd.service\",\"user_unit\":null,\"machine\":null}"));

        g_autoptr(Forest) g = NULL;
        if (snapshot_json_read(json, strlen(json), &g, &error) < 0)
                g_error("json: %s", error);
        assert_units(f, g);
        g_autofree char *again = format_json(g);
        g_assert_cmpstr(json, ==, again);

        /* pretty JSON, and SQLite */
        g_autofree char *pretty = NULL;
        g_autoptr(Forest) h = NULL;
        g_assert_cmpint(snapshot_json_format(f, SNAPSHOT_JSON_PRETTY, &pretty), ==, 0);
        g_assert_cmpint(snapshot_json_read(pretty, strlen(pretty), &h, NULL), ==, 0);
        assert_units(f, h);
        g_autofree void *image = NULL;
        size_t size;
        g_autoptr(Forest) s = NULL;
        g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
        g_assert_cmpuint(size, >, 64);
        g_assert_cmpuint(((uint8_t *) image)[63], ==, 2); /* user_version, big-endian at 60 */
        if (snapshot_sqlite_read_data(image, size, &s, &error) < 0)
                g_error("sqlite: %s", error);
        assert_units(f, s);
        g_autofree char *from_sqlite = format_json(s);
        g_assert_cmpstr(json, ==, from_sqlite);
}

/* Nothing recorded: written as version 1, exactly as before units existed, and read back. */
static void test_old_format(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        g_autofree char *json = format_json(f), *error = NULL;
        g_assert_nonnull(strstr(json, "\"version\":1,"));
        g_assert_null(strstr(json, "\"units\""));
        g_autoptr(Forest) g = NULL;
        if (snapshot_json_read(json, strlen(json), &g, &error) < 0)
                g_error("json: %s", error);
        g_assert_null(g->processes[0]->unit);

        g_autofree void *image = NULL;
        size_t size;
        g_autoptr(Forest) s = NULL;
        g_assert_cmpint(snapshot_sqlite_format(f, &image, &size), ==, 0);
        g_assert_cmpuint(((uint8_t *) image)[63], ==, 1);
        if (snapshot_sqlite_read_data(image, size, &s, &error) < 0)
                g_error("sqlite: %s", error);
        g_autofree char *again = format_json(s);
        g_assert_cmpstr(json, ==, again);

        /* a version 1 document as an older sectree wrote it, by hand */
        static const char v1[] =
                "{\"format\":\"sectree-snapshot\",\"version\":1,\"created_at\":\"2026-01-02T03:04:05.000006Z\","
                "\"snapshot\":{\"name\":null,\"taken_by_uid\":0,\"consistency\":\"iterator\"},"
                "\"host\":{\"kernel\":\"6.18.0\",\"arch\":\"x86_64\",\"hostname\":\"h\"},"
                "\"source\":{\"backend\":\"bpf\",\"identity\":\"exact\"},\"root\":0,"
                "\"filters\":[{\"id\":1,\"parent\":null,\"length\":1,\"program\":[[6,0,0,2147418112]],"
                "\"digest\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\",\"log\":false,"
                "\"wait_killable_recv\":false,\"listener\":null,\"identity\":\"exact\"}],"
                "\"processes\":[{\"pid\":7,\"ppid\":1,\"start_time\":5,\"comm\":\"x\",\"exe\":null,\"argv\":[],"
                "\"uid\":0,\"gid\":0,\"no_new_privs\":true,\"threads\":[{\"tid\":7,\"mode\":\"filter\",\"filter\":1}]}],"
                "\"listeners\":[]}";
        g_autoptr(Forest) old = NULL;
        g_autofree char *why = NULL;
        int r = snapshot_json_read(v1, strlen(v1), &old, &why);
        /* the digest above is not the program's: the reader says so, which shows it read version 1 */
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_nonnull(strstr(why, "digest"));
        g_autofree char *fixed = NULL;
        {
                g_autoptr(Forest) one = forest_new();
                Filter *flt;
                struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, 0x7fff0000);
                g_assert_cmpint(forest_add_filter(one, 1, 0, &allow, 1, &flt), ==, 0);
                char digest[PROG_DIGEST_STRING_MAX];
                prog_digest_to_string(flt->digest, digest);
                g_autoptr(GString) text = g_string_new(v1);
                g_string_replace(text, "sha256:0000000000000000000000000000000000000000000000000000000000000000", digest, 1);
                fixed = g_string_free(g_steal_pointer(&text), FALSE);
        }
        g_autoptr(Forest) loaded = NULL;
        g_autofree char *why2 = NULL;
        if (snapshot_json_read(fixed, strlen(fixed), &loaded, &why2) < 0)
                g_error("version 1: %s", why2);
        g_assert_cmpuint(loaded->n_processes, ==, 1);
        g_assert_null(loaded->processes[0]->unit);
}

/* The cleaning the daemon applies to names read from a cgroup. */
static void test_clean(void) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { NULL, NULL }, { "", NULL }, { "sshd.service", "sshd.service" },
                { "a\x1b[31mb", "a?[31mb" }, { "bad\xff", "bad\xef\xbf\xbd" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *out = NULL;
                g_assert_cmpint(snapshot_unit_name_clean(cases[i].in, &out), ==, 0);
                g_assert_cmpstr(out, ==, cases[i].out);
                g_assert_true(snapshot_unit_name_valid(out));
        }
        g_autofree char *long_name = g_strnfill(400, 'x'), *cut = NULL;
        g_assert_cmpint(snapshot_unit_name_clean(long_name, &cut), ==, 0);
        g_assert_cmpuint(strlen(cut), ==, SNAPSHOT_MAX_UNIT);
        /* a cut never splits a character */
        g_autofree char *wide = g_strnfill(254, 'x'), *wide2 = g_strconcat(wide, "\xc3\xa9", NULL), *cut2 = NULL;
        g_assert_cmpint(snapshot_unit_name_clean(wide2, &cut2), ==, 0);
        g_assert_cmpuint(strlen(cut2), ==, 254);
        g_assert_false(snapshot_unit_name_valid(""));
        g_assert_false(snapshot_unit_name_valid(long_name));
        g_assert_false(snapshot_unit_name_valid("a\tb"));
}

/* Hostile JSON: a document edited as text. */
typedef struct JsonCase {
        const char *name;
        const char *from, *to; /* the first from in the version 2 document becomes to */
        const char *expect;
} JsonCase;

static const JsonCase json_cases[] = {
        { "units-in-v1", "\"version\":2,", "\"version\":1,", "processes[0].units: not a field of format version 1" },
        { "version-3", "\"version\":2,", "\"version\":3,", "version: 3 is not supported" },
        { "control", "\"sshd.service\"", "\"ss\\u001bhd\"", "processes[0].units.unit: not a name" },
        { "empty", "\"sshd.service\"", "\"\"", "processes[0].units.unit: not a name" },
        { "number", "\"sshd.service\"", "7", "processes[0].units.unit" },
        { "extra-key", "\"machine\":null}", "\"machine\":null,\"cgroup\":\"/\"}", "processes[0].units" },
        { "missing-key", ",\"machine\":null}", "}", "processes[0].units" },
        { "not-object", "\"units\":{\"unit\":\"sshd.service\",\"user_unit\":null,\"machine\":null}", "\"units\":[]",
          "processes[0].units" },
};

static void test_reject_json(const void *data) {
        const JsonCase *c = data;
        g_autoptr(Forest) f = forest_with_units();
        g_autofree char *json = format_json(f), *error = NULL;
        g_autoptr(GString) s = g_string_new(json);
        g_assert_nonnull(strstr(json, c->from));
        g_string_replace(s, c->from, c->to, 1);
        g_autoptr(Forest) g = NULL;
        int r = snapshot_json_read(s->str, s->len, &g, &error);
        if (r >= 0)
                g_error("%s: accepted", c->name);
        g_assert_cmpint(r, ==, -EINVAL);
        if (!strstr(error, c->expect))
                g_error("%s: \"%s\" does not say \"%s\"", c->name, error, c->expect);
        g_assert_null(g);
}

static void test_reject_long_json(void) {
        g_autoptr(Forest) f = forest_with_units();
        g_autofree char *json = format_json(f), *error = NULL, *name = g_strnfill(SNAPSHOT_MAX_UNIT + 1, 'a');
        g_autofree char *quoted = g_strdup_printf("\"%s\"", name);
        g_autoptr(GString) s = g_string_new(json);
        g_string_replace(s, "\"sshd.service\"", quoted, 1);
        g_autoptr(Forest) g = NULL;
        g_assert_cmpint(snapshot_json_read(s->str, s->len, &g, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "processes[0].units.unit: not a name (1 to 255 bytes"));
}

/* Hostile SQLite: the version 2 file changed with SQL. */
typedef struct SqlCase {
        const char *name, *sql, *expect;
} SqlCase;

static const SqlCase sql_cases[] = {
        { "control", "UPDATE units SET unit = 'a' || char(27) || 'b' WHERE process = 0", "processes[0].units: not a name" },
        { "too-long", "UPDATE units SET unit = printf('%.300c', 'x') WHERE process = 0",
          "processes[0].units.unit: 300 bytes, more than the limit of 255" },
        { "empty", "UPDATE units SET machine = '' WHERE process = 1", "processes[1].units: not a name" },
        { "blob", "UPDATE units SET unit = x'41' WHERE process = 0", "processes[0].units.unit" },
        { "nul", "UPDATE units SET unit = 'a' || char(0) || 'b' WHERE process = 0", "contains a NUL byte" },
        { "no-process", "UPDATE units SET process = 9 WHERE process = 1", "units.process" },
        { "negative", "UPDATE units SET process = -1 WHERE process = 1", "units.process" },
        { "v1-with-table", "PRAGMA user_version = 1", "SQLite schema: unexpected table \"units\"" },
        { "v2-without-table", "DROP TABLE units", "SQLite schema: missing table \"units\"" },
        { "meta-version", "UPDATE meta SET version = 1", "meta.version: 1 is not the file's user_version 2" },
        { "extra-column", "ALTER TABLE units ADD COLUMN cgroup TEXT", "table \"units\" has more columns" },
};

static void *units_image_mutate(const char *sql, size_t *ret_size) {
        g_autoptr(Forest) f = forest_with_units();
        return tests_snapshot_sqlite_mutated(f, sql, ret_size);
}

static void test_reject_sqlite(const void *data) {
        const SqlCase *c = data;
        size_t size;
        g_autofree void *image = units_image_mutate(c->sql, &size);
        g_autofree char *error = NULL;
        g_autoptr(Forest) g = NULL;
        int r = snapshot_sqlite_read_data(image, size, &g, &error);
        if (r >= 0)
                g_error("%s: accepted", c->name);
        g_assert_cmpint(r, ==, -EINVAL);
        if (!strstr(error, c->expect))
                g_error("%s: \"%s\" does not say \"%s\"", c->name, error, c->expect);
}

/* The validator every forest goes through before it is written or stored refuses them too. */
static void test_validate(void) {
        g_autoptr(Forest) f = forest_with_units();
        g_autofree char *error = NULL;
        g_assert_cmpint(snapshot_validate(f, &error), ==, 0);
        g_assert_cmpint(process_set_units(f->processes[1], "ok.service", "a\nb", NULL), ==, 0);
        g_assert_cmpint(snapshot_validate(f, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "processes[1] (pid"));
        g_assert_nonnull(strstr(error, ".units.user_unit: not a name"));
}

static char *diff_text(const Forest *a, const Forest *b) {
        char *text = sample_diff_text(a, b);
        g_assert_nonnull(text);
        return text;
}

/* A process that moved to another unit is a difference (text and JSON, its name escaped in the
 * text); between a snapshot that records units and one that does not (version 1), it is not. */
static void test_diff(void) {
        g_autoptr(Forest) a = forest_with_units();
        g_autoptr(Forest) b = forest_with_units();
        g_autofree char *same = diff_text(a, b);
        g_assert_cmpstr(same, ==, "no differences\n");

        g_assert_cmpint(process_set_units(b->processes[0], "other\e.service", NULL, "box"), ==, 0);
        g_autofree char *text = diff_text(a, b);
        g_autofree char *line = g_strdup_printf("  ~ process %d (start time %" PRIu64 ", comm \"%s\"): unit sshd.service -> "
                                                "unit other\\e.service machine box\n",
                                                (int) a->processes[0]->pid, a->processes[0]->start_time, a->processes[0]->comm);
        if (!strstr(text, "processes: 0 added, 0 removed, 1 in other units\n") || !strstr(text, line))
                g_error("diff of a process in another unit:\n%s\nwanted the line:\n%s", text, line);
        _cleanup_(snapshot_diff_freep) SnapshotDiff *d = NULL;
        g_autofree char *json = NULL;
        g_assert_cmpint(snapshot_diff(a, b, &d), ==, 0);
        g_assert_cmpint(snapshot_diff_format_json(d, &json), ==, 0);
        g_assert_nonnull(strstr(json, "\"change\":\"changed\""));
        g_assert_nonnull(strstr(json, "\"units\":{\"a\":{\"unit\":\"sshd.service\",\"user_unit\":null,\"machine\":null},"
                                      "\"b\":{\"unit\":\"other\\u001B.service\",\"user_unit\":null,\"machine\":\"box\"}}"));

        g_autoptr(Forest) old = forest_with_units();
        for (size_t i = 0; i < old->n_processes; i++)
                g_assert_cmpint(process_set_units(old->processes[i], NULL, NULL, NULL), ==, 0);
        g_assert_false(forest_has_units(old));
        g_autofree char *versions = diff_text(old, a);
        g_assert_cmpstr(versions, ==, "no differences\n");
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/snapshot-units/round-trip", test_round_trip);
        g_test_add_func("/snapshot-units/old-format", test_old_format);
        g_test_add_func("/snapshot-units/clean", test_clean);
        g_test_add_func("/snapshot-units/validate", test_validate);
        g_test_add_func("/snapshot-units/diff", test_diff);
        g_test_add_func("/snapshot-units/reject/json-long", test_reject_long_json);
        for (size_t i = 0; i < G_N_ELEMENTS(json_cases); i++) {
                g_autofree char *name = g_strdup_printf("/snapshot-units/reject/json/%s", json_cases[i].name);
                g_test_add_data_func(name, &json_cases[i], test_reject_json);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(sql_cases); i++) {
                g_autofree char *name = g_strdup_printf("/snapshot-units/reject/sqlite/%s", sql_cases[i].name);
                g_test_add_data_func(name, &sql_cases[i], test_reject_sqlite);
        }
        return g_test_run();
}
