/* restore-options.c: what a caller asks of a restore: its options, checked (root-only ones,
 * exec's processes), the caller's restores and the snapshot's size within limits, and the
 * executor's request made of them */
#include "service/restore-options.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/util.h"
#include "plan/plan-protocol.h"
#include "service/snapshots.h"

void restore_options_done(RestoreOptions *o) {
        for (size_t i = 0; i < o->n_exec; i++)
                strv_free(o->exec[i].argv);
        free(o->exec);
        o->exec = NULL;
        o->n_exec = 0;
        for (int k = 0; o->has_stdio && k < 3; k++)
                if (o->stdio[k] >= 0)
                        close(o->stdio[k]);
        o->has_stdio = false;
}

static size_t count_threads(const Forest *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_processes; i++)
                n += f->processes[i]->n_threads;
        return n;
}

int restore_check_limits(const Caller *c, size_t mine, const Forest *f, char **ret_message) {
        if (c->privileged)
                return 0;
        if (mine >= RESTORES_MAX_PER_UID) {
                snapshot_set_message(ret_message, "You have %zu restores already (at most %d): release one first.", mine,
                            RESTORES_MAX_PER_UID);
                return -EUSERS;
        }
        if (count_threads(f) > RESTORE_MAX_TASKS_PER_UID) {
                snapshot_set_message(ret_message, "The snapshot has %zu threads; a restore may have at most %d.", count_threads(f),
                            RESTORE_MAX_TASKS_PER_UID);
                return -EUSERS;
        }
        return 0;
}

int restore_check_options(const Caller *c, const RestoreOptions *o, const Forest *f, char **ret_message) {
        if (!c->privileged && (o->original_uids || o->pid_namespace)) {
                snapshot_set_message(ret_message, "Only root may restore %s.",
                            o->original_uids ? "with the snapshot's original uids" : "into a new pid namespace");
                return -EACCES;
        }
        if (o->has_stdio && o->n_exec == 0) {
                snapshot_set_message(ret_message, "stdio: only exec'd processes get it, and exec names none.");
                return -EINVAL;
        }
        for (size_t i = 0; i < o->n_exec; i++)
                if (!forest_find_process(f, o->exec[i].pid)) {
                        snapshot_set_message(ret_message, "exec: the snapshot has no process %d.", o->exec[i].pid);
                        return -EINVAL;
                }
        return 0;
}

json_t *restore_options_request(const RestoreOptions *o) {
        json_t *exec = json_array(), *doc;
        for (size_t i = 0; exec && i < o->n_exec; i++) {
                json_t *argv = json_array();
                for (char **a = o->exec[i].argv; argv && a && *a; a++)
                        json_array_append_new(argv, json_string(*a));
                json_array_append_new(exec, json_pack("{s:i, s:o*}", "pid", (int) o->exec[i].pid, "argv", argv));
        }
        doc = json_pack("{s:i, s:o*}", "version", RESTORE_PROTOCOL_VERSION, "exec", exec);
        if (doc && o->original_uids)
                json_object_set_new(doc, "original_ids", json_true());
        if (doc && o->pid_namespace)
                json_object_set_new(doc, "pid_namespace", json_true());
        if (doc && o->has_stdio)
                json_object_set_new(doc, "stdio", json_true());
        return doc;
}
