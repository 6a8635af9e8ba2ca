/* forest-json.c: the forest (live or a snapshot's) as JSON for `tree --json` and `graph --json` */
#include "forest-json.h"

#include "core/forest-print.h"
#include "json-out.h"

static json_t *filter_flags_json(const Filter *x) {
        json_t *a = json_array();
        if (a && x->log)
                json_array_append_new(a, json_string("log"));
        if (a && x->wait_killable_recv)
                json_array_append_new(a, json_string("wait_killable_recv"));
        if (a && x->has_listener)
                json_array_append_new(a, json_string("listener"));
        return a;
}

static json_t *filter_json(const Filter *x, size_t chain_tasks) {
        char digest[PROG_DIGEST_STRING_MAX];
        return json_pack("{s:I, s:o, s:I, s:s, s:I, s:I, s:I, s:o, s:o}",
                         "id", (json_int_t) x->id, "parent", json_id_or_null(x->parent_id),
                         "length", (json_int_t) x->len, "digest", prog_digest_to_string(x->digest, digest),
                         "depth", (json_int_t) x->depth, "tasks", (json_int_t) x->n_tasks,
                         "chain_tasks", (json_int_t) chain_tasks, "flags", filter_flags_json(x),
                         "listener", json_id_or_null(x->listener_id));
}

static json_t *listener_json(const Listener *l) {
        json_t *holders = json_array();
        for (size_t i = 0; holders && i < l->n_holders; i++)
                if (json_array_append_new(holders, json_pack("{s:i, s:i}", "pid", (int) l->holders[i].pid, "fd",
                                                             l->holders[i].fd)) < 0)
                        json_decref(TAKE_PTR(holders));
        return json_pack("{s:I, s:I, s:o}", "id", (json_int_t) l->id, "filter", (json_int_t) l->filter_id,
                         "holders", holders);
}

static json_t *thread_json(const Task *t) {
        return json_pack("{s:i, s:s, s:o, s:I}", "tid", (int) t->tid, "mode", task_mode_to_string(t->mode),
                         "filter", json_id_or_null(t->filter_id), "depth", (json_int_t) t->filter_count);
}

static json_t *process_json(const Process *p) {
        json_t *threads = json_array();
        for (size_t i = 0; threads && i < p->n_threads; i++)
                if (json_array_append_new(threads, thread_json(&p->threads[i])) < 0) {
                        json_decref(threads);
                        return NULL;
                }
        return json_pack("{s:i, s:i, s:s, s:o}", "pid", (int) p->pid, "ppid", (int) p->ppid, "comm", p->comm,
                         "threads", threads);
}

json_t *forest_to_json(const Forest *f) {
        _cleanup_free_ size_t *chain_tasks = calloc(f->n_filters + 1, sizeof(size_t));
        json_t *filters = json_array(), *processes = json_array(), *listeners = json_array();
        if (!chain_tasks) {
                json_decref(filters);
                json_decref(processes);
                json_decref(listeners);
                return NULL;
        }
        forest_count_chain_tasks(f, chain_tasks);
        for (size_t i = 0; filters && i < f->n_filters; i++)
                if (json_array_append_new(filters, filter_json(f->filters[i], chain_tasks[i])) < 0)
                        json_decref(TAKE_PTR(filters));
        for (size_t i = 0; processes && i < f->n_processes; i++)
                if (json_array_append_new(processes, process_json(f->processes[i])) < 0)
                        json_decref(TAKE_PTR(processes));
        for (size_t i = 0; listeners && i < f->n_listeners; i++)
                if (json_array_append_new(listeners, listener_json(f->listeners[i])) < 0)
                        json_decref(TAKE_PTR(listeners));
        return json_pack("{s:s?, s:s, s:i, s:o, s:o, s:o}", "backend", f->backend,
                         "identity", identity_kind_to_string(f->identity), "root", (int) f->root,
                         "filters", filters, "processes", processes, "listeners", listeners);
}
