/* test-json.c: the snapshot JSON writer emits exactly the documented version 1 document */
#include <jansson.h>
#include <linux/seccomp.h>

#include "snapshot/snapshot-json.h"
#include "tests-json.h"
#include "tests-util.h"

static const struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
static const struct sock_filter deny[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 165, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

/* Two processes: 100 (thread 100 on filter 7, thread 101 on 9) and its child 200 (thread 200 on
 * 9, thread 201 in strict mode: the mode is per thread), filter 9 stacked on 7, and a listener on
 * 9 held by 100 and 200. Ids are deliberately not 1..n and not added parents-first. */
static Forest *make_forest(void) {
        Forest *f = forest_new();
        Filter *a, *b;
        Process *p, *q;
        Task *t;
        Listener *l;

        g_assert_cmpint(forest_add_filter(f, 9, 7, deny, G_N_ELEMENTS(deny), &b), ==, 0);
        g_assert_cmpint(forest_add_filter(f, 7, 0, allow, G_N_ELEMENTS(allow), &a), ==, 0);
        b->log = true;
        b->has_listener = true;
        g_assert_cmpint(forest_add_process(f, 200, &q), ==, 0);
        g_assert_cmpint(forest_add_process(f, 100, &p), ==, 0);
        p->ppid = 1;
        q->ppid = 100;
        strcpy(p->comm, "parent");
        strcpy(q->comm, "child \"q\"");
        g_assert_cmpint(process_set_exe(p, "/usr/bin/parent"), ==, 0);
        char *argv[] = { (char *) "parent", (char *) "--flag", NULL };
        g_assert_cmpint(process_set_argv(p, argv), ==, 0);
        p->uid = 1000, p->gid = 100, p->no_new_privs = true, p->start_time = 4242;
        g_assert_cmpint(process_add_thread(p, 101, &t), ==, 0);
        t->mode = TASK_MODE_FILTER, t->filter_id = 9;
        g_assert_cmpint(process_add_thread(p, 100, &t), ==, 0);
        t->mode = TASK_MODE_FILTER, t->filter_id = 7;
        g_assert_cmpint(process_add_thread(q, 200, &t), ==, 0);
        t->mode = TASK_MODE_FILTER, t->filter_id = 9;
        g_assert_cmpint(process_add_thread(q, 201, &t), ==, 0);
        t->mode = TASK_MODE_STRICT;
        g_assert_cmpint(forest_add_listener(f, 5, 9, &l), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 100, 3), ==, 0);
        g_assert_cmpint(listener_add_holder(l, 200, 4), ==, 0);
        f->backend = g_strdup("bpf");
        f->created_at_usec = 1764745249123456ULL; /* 2025-12-03T07:00:49.123456Z */
        g_assert_cmpint(host_info_set(&f->host, "6.18.0", "x86_64", "box"), ==, 0);
        g_assert_cmpint(forest_link(f, NULL), ==, 0);
        return f;
}

static json_t *dump(Forest *f) {
        g_autofree char *s = NULL;
        g_assert_cmpint(snapshot_json_format(f, 0, &s), ==, 0);
        json_error_t e;
        json_t *doc = json_loads(s, 0, &e);
        if (!doc)
                g_error("writer produced invalid JSON: %s", e.text);
        return doc;
}

static void test_top_level(void) {
        g_autoptr(Forest) f = make_forest();
        g_assert_cmpint(forest_renumber(f), ==, 0);
        json_t *doc = dump(f);
        static const char *const top[] = { "format", "version", "created_at", "snapshot", "host", "source",
                                           "root", "filters", "processes", "listeners", NULL };
        tests_json_assert_keys(doc, top);
        g_assert_cmpstr(json_string_value(json_object_get(doc, "format")), ==, "sectree-snapshot");
        g_assert_cmpint(json_integer_value(json_object_get(doc, "version")), ==, 1);
        g_assert_cmpstr(json_string_value(json_object_get(doc, "created_at")), ==, "2025-12-03T07:00:49.123456Z");
        json_t *host = json_object_get(doc, "host"), *src = json_object_get(doc, "source");
        g_assert_cmpstr(json_string_value(json_object_get(host, "kernel")), ==, "6.18.0");
        g_assert_cmpstr(json_string_value(json_object_get(host, "hostname")), ==, "box");
        g_assert_cmpstr(json_string_value(json_object_get(src, "backend")), ==, "bpf");
        g_assert_cmpstr(json_string_value(json_object_get(src, "identity")), ==, "exact");
        g_assert_cmpint(json_integer_value(json_object_get(doc, "root")), ==, 0);
        json_decref(doc);
}

static void test_filters(void) {
        g_autoptr(Forest) f = make_forest();
        g_assert_cmpint(forest_renumber(f), ==, 0);
        json_t *doc = dump(f), *filters = json_object_get(doc, "filters");
        static const char *const keys[] = { "id", "parent", "length", "program", "digest", "log",
                                            "wait_killable_recv", "listener", "identity", NULL };
        g_assert_cmpuint(json_array_size(filters), ==, 2);
        json_t *root = json_array_get(filters, 0), *child = json_array_get(filters, 1);
        tests_json_assert_keys(root, keys);
        /* renumbered parents-first: the old 7 is 1, the old 9 is 2 */
        g_assert_cmpint(json_integer_value(json_object_get(root, "id")), ==, 1);
        g_assert_true(json_is_null(json_object_get(root, "parent")));
        g_assert_cmpint(json_integer_value(json_object_get(child, "parent")), ==, 1);
        g_assert_cmpint(json_integer_value(json_object_get(child, "length")), ==, 4);
        g_assert_true(json_is_true(json_object_get(child, "log")));
        g_assert_cmpint(json_integer_value(json_object_get(child, "listener")), ==, 1);
        json_t *insn = json_array_get(json_object_get(child, "program"), 2);
        g_assert_cmpint(json_integer_value(json_array_get(insn, 0)), ==, BPF_RET | BPF_K);
        g_assert_cmpint(json_integer_value(json_array_get(insn, 3)), ==, SECCOMP_RET_ERRNO | 1);
        insn = json_array_get(json_object_get(child, "program"), 1);
        g_assert_cmpint(json_integer_value(json_array_get(insn, 1)), ==, 0);
        g_assert_cmpint(json_integer_value(json_array_get(insn, 2)), ==, 1);

        g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
        g_checksum_update(sum, (const guchar *) allow, sizeof(allow)); /* x86_64: the in-memory layout is the le layout */
        g_autofree char *want = g_strconcat("sha256:", g_checksum_get_string(sum), NULL);
        g_assert_cmpstr(json_string_value(json_object_get(root, "digest")), ==, want);
        json_decref(doc);
}

static void test_processes_and_listeners(void) {
        g_autoptr(Forest) f = make_forest();
        g_assert_cmpint(forest_renumber(f), ==, 0);
        json_t *doc = dump(f), *procs = json_object_get(doc, "processes");
        static const char *const keys[] = { "pid", "ppid", "start_time", "comm", "exe", "argv", "uid", "gid",
                                            "no_new_privs", "threads", NULL };
        g_assert_cmpuint(json_array_size(procs), ==, 2);
        json_t *p = json_array_get(procs, 0), *q = json_array_get(procs, 1);
        tests_json_assert_keys(p, keys);
        g_assert_cmpint(json_integer_value(json_object_get(p, "pid")), ==, 100);
        g_assert_cmpint(json_integer_value(json_object_get(p, "start_time")), ==, 4242);
        g_assert_cmpstr(json_string_value(json_object_get(p, "exe")), ==, "/usr/bin/parent");
        g_assert_cmpstr(json_string_value(json_array_get(json_object_get(p, "argv"), 1)), ==, "--flag");
        g_assert_cmpstr(json_string_value(json_object_get(q, "comm")), ==, "child \"q\"");
        g_assert_true(json_is_null(json_object_get(q, "exe")));
        g_assert_cmpuint(json_array_size(json_object_get(q, "argv")), ==, 0);
        json_t *threads = json_object_get(p, "threads");
        g_assert_cmpint(json_integer_value(json_object_get(json_array_get(threads, 0), "tid")), ==, 100);
        g_assert_cmpint(json_integer_value(json_object_get(json_array_get(threads, 0), "filter")), ==, 1);
        g_assert_cmpint(json_integer_value(json_object_get(json_array_get(threads, 1), "filter")), ==, 2);
        json_t *strict = json_array_get(json_object_get(q, "threads"), 1);
        g_assert_cmpstr(json_string_value(json_object_get(strict, "mode")), ==, "strict");
        g_assert_true(json_is_null(json_object_get(strict, "filter")));

        json_t *l = json_array_get(json_object_get(doc, "listeners"), 0);
        g_assert_cmpint(json_integer_value(json_object_get(l, "filter")), ==, 2);
        g_assert_cmpuint(json_array_size(json_object_get(l, "holders")), ==, 2);
        g_assert_cmpint(json_integer_value(json_object_get(json_array_get(json_object_get(l, "holders"), 1), "fd")), ==, 4);
        json_decref(doc);
}

static void test_unlinked_refused(void) {
        g_autoptr(Forest) f = forest_new();
        g_assert_cmpint(forest_add_filter(f, 1, 2, allow, 1, NULL), ==, 0);
        char *s = NULL;
        g_assert_cmpint(snapshot_json_format(f, 0, &s), ==, -EINVAL);
        g_assert_null(s);
        g_autofree char *error = NULL;
        g_assert_cmpint(forest_link(f, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "parent 2 does not exist"));
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/json/top-level", test_top_level);
        g_test_add_func("/json/filters", test_filters);
        g_test_add_func("/json/processes-and-listeners", test_processes_and_listeners);
        g_test_add_func("/json/unlinked-refused", test_unlinked_refused);
        return g_test_run();
}
