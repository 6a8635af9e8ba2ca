/* ctl-run.c: sectreectl run by tests against the private bus of a BusFixture */
#include "ctl-run.h"

#include "tests-json.h"
#include "tests-util.h"

int ctl_run(BusFixture *b, bool as_nobody, const char *const *args, char **out, char **err) {
        g_autoptr(GPtrArray) argv = tests_argv_new(g_getenv("SECTREECTL"), args);
        return bus_fixture_run(b, as_nobody, (char **) argv->pdata, out, err);
}

char *ctl_run_ok(BusFixture *b, const char *const *args) {
        g_autofree char *out = NULL, *err = NULL, *cmd = g_strjoinv(" ", (char **) args);
        int status = ctl_run(b, false, args, &out, &err);
        if (status != 0 || !streq(err, ""))
                g_error("sectreectl %s: exit %d, stderr: %s", cmd, status, err);
        return g_steal_pointer(&out);
}

json_t *ctl_run_json(BusFixture *b, const char *const *args) {
        g_autoptr(GPtrArray) with_json = g_ptr_array_new();
        g_ptr_array_add(with_json, (char *) "--json");
        for (const char *const *a = args; *a; a++)
                g_ptr_array_add(with_json, (char *) *a);
        g_ptr_array_add(with_json, NULL);
        g_autofree char *out = ctl_run_ok(b, (const char *const *) with_json->pdata);
        g_autofree char *cmd = g_strjoinv(" ", (char **) args);
        return tests_json_parse_document(out, cmd);
}

char *ctl_run_fails(BusFixture *b, int want, const char *prefix, const char *const *args) {
        g_autofree char *out = NULL, *err = NULL, *cmd = g_strjoinv(" ", (char **) args);
        int status = ctl_run(b, false, args, &out, &err);
        if (status != want || !g_str_has_prefix(err, prefix))
                g_error("sectreectl %s: expected exit %d and '%s...', got exit %d, stdout '%s', stderr '%s'", cmd, want,
                        prefix, status, out, err);
        return g_steal_pointer(&err);
}
