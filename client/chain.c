/* chain.c: one task's filter chain in full: fetched from the daemon (GetTaskChain, then GetFilter
 * for each), or taken from a snapshot's forest */
#include "chain.h"

#include "context.h"
#include "core/util.h"
#include "ctl-log.h"
#include "snapshot-load.h"

void chain_done(Chain *ch) {
        for (size_t i = 0; i < ch->n; i++)
                filter_detail_done(&ch->filters[i]);
        free(ch->filters);
        *ch = (Chain) {};
}

int chain_fetch(sd_bus *bus, uint32_t tid, Chain *ret) {
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n;
        int r = manager_get_task_chain(bus, tid, &ids, &n);
        if (r < 0)
                return r;
        ret->tid = tid;
        ret->filters = calloc(n + 1, sizeof(FilterDetail));
        if (!ret->filters)
                return log_oom();
        for (; ret->n < n; ret->n++) {
                r = manager_get_filter(bus, ids[ret->n], &ret->filters[ret->n]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static char **filter_flags_strv(const Filter *x) {
        const char *flags[4];
        size_t n = 0;
        if (x->log)
                flags[n++] = "log";
        if (x->wait_killable_recv)
                flags[n++] = "wait_killable_recv";
        if (x->has_listener || x->listener_id)
                flags[n++] = "listener";
        flags[n] = NULL;
        return strv_copy((char **) flags);
}

int filter_detail_from_filter(const Filter *x, FilterDetail *ret) {
        char digest[PROG_DIGEST_STRING_MAX];
        _cleanup_(filter_detail_done) FilterDetail d = {
                .meta = { .id = x->id, .parent = x->parent_id, .length = (uint32_t) x->len,
                          .tasks = (uint32_t) x->n_tasks },
        };
        d.meta.digest = strdup(prog_digest_to_string(x->digest, digest));
        d.meta.flags = filter_flags_strv(x);
        d.identity = strdup(identity_kind_to_string(x->identity));
        d.program = malloc((x->len + 1) * sizeof(struct sock_filter));
        if (!d.meta.digest || !d.meta.flags || !d.identity || !d.program)
                return -ENOMEM;
        memcpy_safe(d.program, x->insns, x->len * sizeof(struct sock_filter));
        d.n_program = x->len;
        *ret = d;
        d = (FilterDetail) {};
        return 0;
}

int chain_from_forest(const Forest *f, pid_t tid, Chain *ret, TaskMode *ret_mode) {
        const Task *t = forest_find_task(f, tid, NULL);
        if (!t)
                return -ENOENT;
        size_t n = t->filter ? t->filter->depth : 0;
        _cleanup_free_ const Filter **chain = calloc(n + 1, sizeof(Filter *));
        ret->tid = (uint32_t) tid;
        ret->filters = calloc(n + 1, sizeof(FilterDetail));
        if (!chain || !ret->filters)
                return log_oom();
        filter_chain(t->filter, chain, n);
        for (; ret->n < n; ret->n++)
                if (filter_detail_from_filter(chain[ret->n], &ret->filters[ret->n]) < 0)
                        return log_oom();
        *ret_mode = t->mode;
        return 0;
}

/* The live task's chain, and (when it has none) its mode as ListTasks says it. */
static int chain_fetch_task(Context *c, uint32_t tid, Chain *ch, TaskMode *ret_mode) {
        sd_bus *bus;
        int r = context_bus(c, &bus);
        if (r < 0)
                return r;
        r = chain_fetch(bus, tid, ch);
        if (r < 0)
                return r;
        *ret_mode = ch->n > 0 ? TASK_MODE_FILTER : TASK_MODE_DISABLED;
        if (ch->n > 0)
                return 0;
        _cleanup_(task_list_done) TaskList tasks = {};
        r = manager_list_tasks(bus, &tasks);
        if (r < 0)
                return r;
        const TaskRecord *t = task_list_find(&tasks, tid);
        if (t && streq(t->mode, "strict"))
                *ret_mode = TASK_MODE_STRICT;
        return 0;
}

static int chain_read_task(Context *c, uint32_t tid, Chain *ch, TaskMode *ret_mode) {
        _cleanup_(forest_freep) Forest *f = NULL;
        int r = snapshot_file_load(c->file, &f, NULL);
        if (r < 0)
                return r;
        r = chain_from_forest(f, (pid_t) tid, ch, ret_mode);
        if (r == -ENOENT)
                return ctl_error_errno(r, "No task %" PRIu32 " in snapshot %s", tid, c->file);
        return r;
}

int chain_get(Context *c, uint32_t tid, Chain *ret) {
        TaskMode mode;
        sd_bus *bus;
        if (c->file)
                return chain_read_task(c, tid, ret, &mode);
        int r = context_bus(c, &bus);
        return r < 0 ? r : chain_fetch(bus, tid, ret);
}

int chain_load_task(Context *c, uint32_t tid, Chain *ret, TaskMode *ret_mode) {
        return c->file ? chain_read_task(c, tid, ret, ret_mode) : chain_fetch_task(c, tid, ret, ret_mode);
}

int chain_programs(const Chain *ch, ChainProgram *progs) {
        for (size_t i = 0; i < ch->n; i++) {
                _cleanup_free_ char *why = NULL;
                const FilterDetail *d = &ch->filters[i];
                if (filter_detail_lacks_program(d))
                        return ctl_error_errno(-ENODATA, "The program of filter %" PRIu64 " was not kept: the uid that "
                                               "installed it is over sectreed's filter budget.", d->meta.id);
                if (prog_validate(d->program, d->n_program, &why) < 0)
                        return ctl_error_errno(-EBADMSG, "The program of filter %" PRIu64 " is not valid: %s",
                                               d->meta.id, why ? why : "?");
                progs[i] = (ChainProgram) { .insns = d->program, .len = d->n_program };
        }
        return 0;
}
