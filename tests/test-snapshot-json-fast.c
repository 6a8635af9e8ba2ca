/* test-snapshot-json-fast.c: the one-pass JSON snapshot reader against jansson's: it takes what
 * sectree writes, and for every document (samples, edge cases, every byte of a sample changed)
 * snapshot_json_read() answers as jansson's reader does: the same forest, or the same refusal */
#include "core/forest-model.h"
#include "snapshot-samples.h"
#include "snapshot/snapshot-json-fast.h"
#include "snapshot/snapshot-json-read.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-units.h"
#include "tests-util.h"

static char *format_json(const Forest *f, SnapshotJsonFlags flags) {
        char *s = NULL;
        g_assert_cmpint(snapshot_json_format(f, flags, &s), ==, 0);
        return s;
}

/* snapshot_json_read() and snapshot_json_read_tree() on the same text: the same answer. */
static void assert_same_answer(const char *text, size_t size, const char *what) {
        g_autofree char *e1 = NULL, *e2 = NULL;
        Forest *f1 = NULL, *f2 = NULL;
        int r1 = snapshot_json_read(text, size, &f1, &e1), r2 = snapshot_json_read_tree(text, size, &f2, &e2);

        if (r1 != r2 || g_strcmp0(e1, e2) != 0)
                g_error("%s: the reader says %d (%s), jansson's %d (%s)", what, r1, e1 ?: "-", r2, e2 ?: "-");
        if (r1 == 0) {
                g_autofree char *j1 = format_json(f1, 0), *j2 = format_json(f2, 0);
                if (!g_str_equal(j1, j2))
                        g_error("%s: the forests differ:\n%s\n%s", what, j1, j2);
        }
        forest_free(f1);
        forest_free(f2);
}

/* The fast reader itself takes text, and makes jansson's reader's forest of it. */
static void assert_fast(const char *text, const char *what) {
        g_autofree char *error = NULL;
        Forest *f = NULL, *g = NULL;
        int r = snapshot_json_read_fast(text, strlen(text), NULL, &f);

        if (r != 0)
                g_error("%s: the fast reader left it (%d)", what, r);
        g_assert_cmpint(snapshot_json_read_tree(text, strlen(text), &g, &error), ==, 0);
        g_autofree char *j1 = format_json(f, 0), *j2 = format_json(g, 0);
        g_assert_cmpstr(j1, ==, j2);
        forest_free(f);
        forest_free(g);
}

static Forest *sample_with_strings(void) {
        Forest *f = sample_forest(SAMPLE_SUBTREE);
        static char *const argv[] = { "sh", "-c", "echo \"a\\b\"\t/x\n", "\x01\x1f\x7f", "gr\xc3\xbc\xc3\x9f", "\xe2\x82\xac",
                                      "\xf0\x9f\x98\x80", "", NULL };
        g_assert_nonnull(f);
        g_assert_cmpint(process_set_argv(f->processes[0], argv), ==, 0);
        g_assert_cmpint(process_set_exe(f->processes[0], "/usr/bin/\xc3\xa9t\xc3\xa9"), ==, 0);
        return f;
}

/* Whatever sectree writes, compact or indented, the fast reader takes. */
static void test_takes_what_is_written(void) {
        Forest *forests[_SAMPLE_MAX + 5] = {};
        size_t n = 0;

        for (SampleKind k = 0; k < _SAMPLE_MAX; k++)
                forests[n++] = sample_forest(k);
        forests[n++] = sample_forest_with_units();
        forests[n++] = sample_forest_variant(VARIANT_STRICT_101 | VARIANT_NEW_PROCESS);
        forests[n++] = sample_forest_many_filters(300);
        forests[n++] = sample_forest_long_argv(20, 4096);
        forests[n++] = sample_with_strings();
        for (size_t i = 0; i < n; i++) {
                g_assert_nonnull(forests[i]);
                for (int pretty = 0; pretty <= 1; pretty++) {
                        g_autofree char *text = format_json(forests[i], pretty ? SNAPSHOT_JSON_PRETTY : 0);
                        g_autofree char *what = g_strdup_printf("forest %zu%s", i, pretty ? ", indented" : "");
                        assert_fast(text, what);
                }
                forest_free(forests[i]);
        }
}

/* text with the first from replaced by to. */
static char *replace(const char *text, const char *from, const char *to) {
        const char *at = strstr(text, from);
        g_assert_nonnull(at);
        return g_strdup_printf("%.*s%s%s", (int) (at - text), text, to, at + strlen(from));
}

/* Documents at the edges of what either reader takes: each answered as jansson's reader answers. */
static void test_edges(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_SUBTREE);
        g_autofree char *doc = format_json(f, 0);
        static const struct {
                const char *from, *to;
        } edits[] = {
                { "\"version\":1,", " \"version\" : 1 , " },
                { "\"version\":1,", "\"version\":-0," },
                { "\"version\":1,", "\"version\":1.0," },
                { "\"version\":1,", "\"version\":1e0," },
                { "\"version\":1,", "\"version\":01," },
                { "\"version\":1,", "\"version\":2," },
                { "\"version\":1,", "\"version\":3," },
                { "\"version\":1,", "\"version\":9223372036854775807," },
                { "\"version\":1,", "\"version\":9223372036854775808," },
                { "\"version\":1,", "\"version\":-9223372036854775808," },
                { "\"version\":1,", "\"version\":-9223372036854775809," },
                { "\"version\":1,", "\"version\":1,\"version\":1," },
                { "\"version\":1,", "\"version\":1,\"extra\":1," },
                { "\"version\":1,", "\"\\u0076ersion\":1," },
                { "\"version\":1,", "" },
                { "\"version\":1,", "\"version\":true," },
                { "\"version\":1,", "\"version\":null," },
                { "\"version\":1,", "\"version\":\"1\"," },
                { "\"version\":1,", "\"version\":-," },
                { "\"version\":1,", "\"version\":1 ," },
                { "\"version\":1,", "\"version\":1,," },
                { "\"format\":", "\"for\\u006dat\":" },
                { "\"root\":", "\"root\" :" },
                { "\"name\":", "\"name\":null,\"x\":" },
                { "{", "\xef\xbb\xbf{" },
                { "{", "  \n\t\r{" },
                { "\"log\":false", "\"log\":fals" },
                { "\"log\":false", "\"log\":falsey" },
                { "\"log\":false", "\"log\":nul" },
                { "\"log\":false", "\"log\":null" },
                { "\"log\":false", "\"log\":0" },
                { "\"parent\":null", "\"parent\":0" },
                { "\"parent\":null", "\"parent\":1" },
                { "\"listener\":null", "\"listener\":nulll" },
                { "\"program\":[[", "\"program\":[ [" },
                { "\"program\":[[", "\"program\":[[-1," },
                { "\"program\":[[", "\"program\":[[65536," },
                { "\"program\":[[", "\"program\":[[1.5," },
                { "\"program\":[[", "\"program\":[[0,0,0,0,0],[" },
                { "\"program\":[[", "\"program\":[[0,0,0],[" },
                { "\"program\":[[", "\"program\":[{},[" },
                { "\"argv\":[", "\"argv\":[\"\\ud83d\\ude00\"," },
                { "\"argv\":[", "\"argv\":[\"\\ud83d\"," },
                { "\"argv\":[", "\"argv\":[\"\\ude00\"," },
                { "\"argv\":[", "\"argv\":[\"\\u0000\"," },
                { "\"argv\":[", "\"argv\":[\"\\u00e9\\u20AC\\u0041\\/\"," },
                { "\"argv\":[", "\"argv\":[\"\\u00g9\"," },
                { "\"argv\":[", "\"argv\":[\"\\x\"," },
                { "\"argv\":[", "\"argv\":[\"\xc3\"," },
                { "\"argv\":[", "\"argv\":[\"\xc0\x80\"," },
                { "\"argv\":[", "\"argv\":[\"\xed\xa0\x80\"," },
                { "\"argv\":[", "\"argv\":[\"\xf4\x90\x80\x80\"," },
                { "\"argv\":[", "\"argv\":[\"\xe0\x9f\xbf\"," },
                { "\"argv\":[", "\"argv\":[\"\t\"," },
                { "\"argv\":[", "\"argv\":[1," },
                { "\"argv\":[", "\"argv\":[null," },
                { "\"comm\":\"", "\"comm\":\"0123456789abcdefgh" },
                { "\"comm\":\"", "\"comm\":\"\\u00e9" },
                { "\"mode\":\"", "\"mode\":\"x" },
                { "\"identity\":\"", "\"identity\":\"x" },
                { "\"digest\":\"sha256:", "\"digest\":\"sha256:0" },
                { "\"threads\":[", "\"threads\":[{\"tid\":1,\"mode\":\"disabled\",\"filter\":null,\"no_new_privs\":true}," },
                { "\"threads\":[", "\"threads\":[{\"tid\":1,\"mode\":\"disabled\",\"filter\":null,\"no_new_privs\":null}," },
                { "\"threads\":[", "\"units\":{\"unit\":\"a.service\",\"user_unit\":null,\"machine\":null},\"threads\":[" },
                { "\"threads\":[", "\"exited_leader\":{\"mode\":\"filter\",\"filters\":1},\"threads\":[" },
                { "\"threads\":[", "\"exited_leader\":{\"mode\":\"filter\"},\"threads\":[" },
                { "\"holders\":[", "\"holders\":[{\"pid\":1,\"fd\":3}," },
                { "\"holders\":[", "\"holders\":[{\"pid\":1,\"fd\":3,\"fd\":3}," },
                { "\"consistency\":\"", "\"consistency\":\"x" },
                { "\"backend\":\"", "\"backend\":\"\\u0000" },
                { "\"created_at\":\"", "\"created_at\":\"x" },
                { "\"format\":\"sectree-snapshot\"", "\"format\":\"sectree-snapshoT\"" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(edits); i++) {
                g_autofree char *text = replace(doc, edits[i].from, edits[i].to);
                assert_same_answer(text, strlen(text), text);
        }
        /* "processes" before "version": left to jansson, read the same */
        g_autofree char *moved = replace(doc, "\"version\":1,", "");
        g_autofree char *late = g_strdup_printf("%.*s,\"version\":1}", (int) strlen(moved) - 1, moved);
        assert_same_answer(late, strlen(late), "version last");
        g_autofree char *trailing = g_strdup_printf("%s \n", doc), *garbage = g_strdup_printf("%s x", doc),
                        *twice = g_strdup_printf("%s%s", doc, doc);
        assert_same_answer(trailing, strlen(trailing), "trailing space");
        assert_same_answer(garbage, strlen(garbage), "trailing garbage");
        assert_same_answer(twice, strlen(twice), "two documents");
        assert_same_answer(doc, strlen(doc) + 1, "a NUL after it");
        for (size_t n = 0; n < strlen(doc); n += 7)
                assert_same_answer(doc, n, "truncated");
}

/* Every byte of two documents deleted, replaced or preceded by another: answered as jansson's
 * reader answers. */
static void test_every_byte(void) {
        g_autoptr(Forest) a = sample_forest(SAMPLE_BASIC), b = sample_forest_with_units();
        g_autofree char *texts[2] = { format_json(a, 0), format_json(b, SNAPSHOT_JSON_PRETTY) };
        static const char others[] = { ' ', '"', '\\', '0', '9', '-', 'x', '{', '}', '[', ']', ',', ':', 'n', '.', '\x00', '\xff', '\x80' };

        for (size_t k = 0; k < G_N_ELEMENTS(texts); k++) {
                size_t size = strlen(texts[k]);
                g_autofree char *buf = g_malloc(size + 1);
                for (size_t i = 0; i < size; i += k + 1) { /* the indented one's every other byte */
                        memcpy(buf, texts[k], i);
                        memcpy(buf + i, texts[k] + i + 1, size - i - 1);
                        assert_same_answer(buf, size - 1, "deleted");
                        for (size_t c = 0; c < G_N_ELEMENTS(others); c++) {
                                memcpy(buf, texts[k], size);
                                buf[i] = others[c];
                                assert_same_answer(buf, size, "replaced");
                                if (c % 4 == 0) {
                                        memcpy(buf, texts[k], i);
                                        buf[i] = others[c];
                                        memcpy(buf + i + 1, texts[k] + i, size - i);
                                        assert_same_answer(buf, size + 1, "inserted");
                                }
                        }
                }
        }
}

/* A refusal that only the whole forest shows (a validator's) is jansson's reader's message too. */
static void test_validator_refusals(void) {
        g_autoptr(Forest) f = sample_forest(SAMPLE_BASIC);
        g_autofree char *doc = format_json(f, 0);
        g_autofree char *cycle = replace(doc, "\"parent\":null", "\"parent\":1");
        g_autofree char *error = NULL;
        Forest *g = NULL;

        g_assert_cmpint(snapshot_json_read_fast(cycle, strlen(cycle), NULL, &g), ==, SNAPSHOT_JSON_FAST_OTHER);
        g_assert_cmpint(snapshot_json_read(cycle, strlen(cycle), &g, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "cycle"));
        assert_same_answer(cycle, strlen(cycle), "cycle");
}

static void test_cancel(void) {
        g_autoptr(Forest) f = sample_forest_many_filters(3000);
        g_autofree char *doc = format_json(f, 0);
        atomic_bool cancel = true;
        Forest *g = NULL;

        g_assert_cmpint(snapshot_json_read_fast(doc, strlen(doc), &cancel, &g), ==, -ECANCELED);
        g_assert_null(g);
        atomic_store(&cancel, false);
        g_assert_cmpint(snapshot_json_read_fast(doc, strlen(doc), &cancel, &g), ==, 0);
        forest_free(g);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/snapshot-json-fast/takes-what-is-written", test_takes_what_is_written);
        g_test_add_func("/snapshot-json-fast/edges", test_edges);
        g_test_add_func("/snapshot-json-fast/every-byte", test_every_byte);
        g_test_add_func("/snapshot-json-fast/validator-refusals", test_validator_refusals);
        g_test_add_func("/snapshot-json-fast/cancel", test_cancel);
        return g_test_run();
}
