/* executor-request.c: the REQUEST frame that starts a restore, read into its options, checked */
#include <jansson.h>

#include "executor-request.h"

#include "core/util.h"
#include "snapshot/snapshot.h"

void executor_request_done(ExecutorRequest *r) {
        for (size_t i = 0; i < r->n_exec; i++)
                strv_free(r->exec[i].argv);
        free(r->exec);
        if (r->snapshot_fd >= 0)
                close(r->snapshot_fd);
        for (int k = 0; k < 3; k++)
                if (r->stdio[k] >= 0)
                        close(r->stdio[k]);
}

static int parse_exec_entry(json_t *e, PlanExec *ret) {
        json_t *argv, *x;
        json_int_t pid;
        size_t i, n;

        if (json_unpack(e, "{s:I, s:o !}", "pid", &pid, "argv", &argv) < 0 || !json_is_array(argv) || pid <= 0 ||
            pid > SNAPSHOT_MAX_PID || json_array_size(argv) == 0)
                return -EINVAL;
        n = json_array_size(argv);
        ret->pid = (pid_t) pid;
        ret->argv = calloc(n + 1, sizeof(char *));
        if (!ret->argv)
                return -ENOMEM;
        json_array_foreach(argv, i, x) {
                if (!json_is_string(x) || !(ret->argv[i] = strdup(json_string_value(x))))
                        return -EINVAL;
        }
        return 0;
}

int executor_request_parse(const RestoreFrame *f, ExecutorRequest *r, char **error) {
        json_error_t je;
        json_auto_t *doc = NULL;
        json_t *exec = NULL, *e;
        json_int_t version = 0, timeout = 0;
        int check = 1, original_ids = 0, pid_namespace = 0, stdio = 0;
        size_t i;

        if (f->type != RESTORE_FRAME_REQUEST || f->n_fds < 1 || !f->payload)
                return asprintf(error, "expected a request frame with one fd (the snapshot)") < 0 ? -ENOMEM : -EINVAL;
        doc = json_loads(f->payload, 0, &je);
        if (!doc)
                return asprintf(error, "request: %s", je.text) < 0 ? -ENOMEM : -EINVAL;
        if (json_unpack_ex(doc, &je, JSON_STRICT, "{s:I, s?o, s?I, s?b, s?b, s?b, s?b}", "version", &version, "exec",
                           &exec, "step_timeout_usec", &timeout, "check_syscalls", &check, "original_ids", &original_ids,
                           "pid_namespace", &pid_namespace, "stdio", &stdio) < 0)
                return asprintf(error, "request: %s", je.text) < 0 ? -ENOMEM : -EINVAL;
        if (f->n_fds != (stdio ? 4U : 1U))
                return asprintf(error, "request: expected %s, not %zu fds",
                                stdio ? "4 fds (the snapshot, stdin, stdout, stderr)" : "one fd (the snapshot)",
                                (size_t) f->n_fds) < 0 ? -ENOMEM : -EINVAL;
        if (version != RESTORE_PROTOCOL_VERSION)
                return asprintf(error, "request: version %lld is not %d", (long long) version, RESTORE_PROTOCOL_VERSION) < 0
                               ? -ENOMEM : -EINVAL;
        if (timeout < 0)
                return asprintf(error, "request: step_timeout_usec must not be negative") < 0 ? -ENOMEM : -EINVAL;
        r->step_timeout_usec = timeout ? (uint64_t) timeout : EXECUTOR_DEFAULT_STEP_TIMEOUT_USEC;
        r->check_syscalls = check;
        r->original_ids = original_ids;
        r->pid_namespace = pid_namespace;
        if ((original_ids || pid_namespace) && geteuid() != 0)
                return asprintf(error, "request: %s needs an executor running as root",
                                original_ids ? "original_ids" : "pid_namespace") < 0 ? -ENOMEM : -EINVAL;
        if (exec && !json_is_array(exec))
                return asprintf(error, "request: exec must be an array") < 0 ? -ENOMEM : -EINVAL;
        r->exec = calloc(json_array_size(exec) ?: 1, sizeof(PlanExec));
        if (!r->exec)
                return -ENOMEM;
        json_array_foreach(exec, i, e) {
                int k = parse_exec_entry(e, &r->exec[i]);
                r->n_exec = i + 1;
                if (k < 0)
                        return k == -ENOMEM ? k : (asprintf(error, "request: exec[%zu]: expected {\"pid\": N, \"argv\": "
                                                           "[\"command\", ...]}", i) < 0 ? -ENOMEM : -EINVAL);
        }
        return 0;
}

int executor_request_take(RestoreFrame *f, ExecutorRequest *r, char **error) {
        int k = executor_request_parse(f, r, error);

        if (k < 0)
                return k;
        r->snapshot_fd = TAKE_FD(f->fds[0]);
        for (unsigned i = 0; i < 3 && f->n_fds == 4; i++)
                r->stdio[i] = TAKE_FD(f->fds[i + 1]);
        return 0;
}
