/* runtime-image.c: the plan as the restored tasks read it: one flat block without pointers, laid
 * out header, steps, tasks, processes, then each filter's program once and the exec paths */
#include "runtime-image.h"

#include <string.h>

#include "core/util.h"

#define IMAGE_ALIGN 8

static size_t align_up(size_t n) {
        return (n + IMAGE_ALIGN - 1) & ~(size_t) (IMAGE_ALIGN - 1);
}

/* Where everything goes: the arrays, then per snapshot filter the offset of its program (0: not
 * installed by any step), then per process the offset of its exec path. */
typedef struct Layout {
        size_t steps, tasks, processes, insns, paths, size;
} Layout;

static size_t layout(const Plan *p, char *const *exec_paths, Layout *l, bool *used) {
        size_t at;

        *l = (Layout) { .steps = align_up(sizeof(RuntimeImage)) };
        l->tasks = align_up(l->steps + p->n_steps * sizeof(RuntimeImageStep));
        l->processes = align_up(l->tasks + p->n_tasks * sizeof(RuntimeImageTask));
        l->insns = align_up(l->processes + p->n_processes * sizeof(RuntimeImageProcess));
        at = l->insns;
        for (size_t i = 0; i < p->n_steps; i++) {
                const Filter *f = p->steps[i].op == PLAN_OP_INSTALL ? p->steps[i].filter : NULL;
                if (!f || used[f->index])
                        continue;
                used[f->index] = true;
                at = align_up(at + f->len * sizeof(struct sock_filter));
        }
        l->paths = at;
        for (size_t pp = 0; exec_paths && pp < p->n_processes; pp++)
                if (exec_paths[pp])
                        at = align_up(at + strlen(exec_paths[pp]) + 1);
        l->size = at;
        return at;
}

int runtime_image_size(const Plan *plan, char *const *exec_paths, size_t *ret) {
        _cleanup_free_ bool *used = calloc(plan->snapshot->n_filters + 1, sizeof(bool));
        Layout l;

        if (!used)
                return -ENOMEM;
        if (layout(plan, exec_paths, &l, used) >= UINT32_MAX || plan->n_steps >= UINT32_MAX)
                return -E2BIG;
        *ret = l.size;
        return 0;
}

static uint32_t index32(size_t i) {
        return i == PLAN_NONE ? RUNTIME_IMAGE_NONE : (uint32_t) i;
}

void runtime_image_write(const Plan *p, char *const *exec_paths, bool stdio, void *buf, size_t size) {
        _cleanup_free_ uint32_t *program = calloc(p->snapshot->n_filters + 1, sizeof(uint32_t));
        _cleanup_free_ bool *used = calloc(p->snapshot->n_filters + 1, sizeof(bool));
        uint8_t *base = buf;
        RuntimeImage *m = buf;
        Layout l;
        size_t at;

        if (!program || !used || layout(p, exec_paths, &l, used) != size)
                return; /* runtime_image_size() said so first */
        *m = (RuntimeImage) {
                .size = size,
                .n_steps = (uint32_t) p->n_steps,
                .n_tasks = (uint32_t) p->n_tasks,
                .n_processes = (uint32_t) p->n_processes,
                .steps = (uint32_t) l.steps,
                .tasks = (uint32_t) l.tasks,
                .processes = (uint32_t) l.processes,
                .root_task = (uint32_t) p->processes[0].leader,
                .runtime_fd = p->runtime_fd,
                .pid_namespace = p->options.pid_namespace,
                .stdio = stdio,
                .calls_checked = p->options.check_syscalls,
        };
        for (size_t t = 0; t < p->n_tasks; t++)
                ((RuntimeImageTask *) (base + l.tasks))[t] = (RuntimeImageTask) {
                        .process = (uint32_t) p->tasks[t].process,
                        .first_step = RUNTIME_IMAGE_NONE,
                        .ns_tid = p->tasks[t].ns_tid,
                        .wait_first = (uint8_t) p->tasks[t].wait_first,
                };
        at = l.insns;
        for (size_t i = p->n_steps; i-- > 0;) { /* backwards: each task's next step is known */
                const PlanStep *st = &p->steps[i];
                RuntimeImageStep *x = (RuntimeImageStep *) (base + l.steps) + i;
                const Filter *f = st->op == PLAN_OP_INSTALL ? st->filter : NULL;

                *x = (RuntimeImageStep) {
                        .op = (uint8_t) st->op, .syscall = (uint8_t) st->syscall, .report = (uint8_t) st->report,
                        .wait = (uint8_t) st->wait, .exit = (uint8_t) st->exit, .flags = st->flags,
                        .task = index32(st->task), .target = index32(st->target), .arg = st->arg, .fd = st->fd,
                };
                RuntimeImageTask *task = (RuntimeImageTask *) (base + l.tasks) + st->task;
                x->next = task->first_step;
                task->first_step = (uint32_t) i;
                if (!f)
                        continue;
                if (!program[f->index]) {
                        program[f->index] = (uint32_t) at;
                        memcpy(base + at, f->insns, f->len * sizeof(struct sock_filter));
                        at = align_up(at + f->len * sizeof(struct sock_filter));
                }
                x->insns = program[f->index];
                x->n_insns = (uint32_t) f->len;
        }
        at = l.paths;
        for (size_t pp = 0; pp < p->n_processes; pp++) {
                const PlanProcess *x = &p->processes[pp];
                RuntimeImageProcess *y = (RuntimeImageProcess *) (base + l.processes) + pp;

                *y = (RuntimeImageProcess) { .exec = index32(x->exec), .exec_path = RUNTIME_IMAGE_NONE };
                if (x->snapshot) {
                        memcpy(y->comm, x->snapshot->comm, sizeof(y->comm));
                        y->comm[sizeof(y->comm) - 1] = 0;
                        y->uid = x->snapshot->uid;
                        y->gid = x->snapshot->gid;
                }
                if (exec_paths && exec_paths[pp]) {
                        size_t n = strlen(exec_paths[pp]) + 1;
                        y->exec_path = (uint32_t) at;
                        memcpy(base + at, exec_paths[pp], n);
                        at = align_up(at + n);
                }
        }
}

static bool array_inside(size_t size, uint32_t offset, uint32_t n, size_t elem) {
        return offset <= size && (size - offset) / elem >= n;
}

bool runtime_image_valid(const void *buf, size_t size) {
        const RuntimeImage *m = buf;

        if (size < sizeof(*m) || m->size != size || !array_inside(size, m->steps, m->n_steps, sizeof(RuntimeImageStep)) ||
            !array_inside(size, m->tasks, m->n_tasks, sizeof(RuntimeImageTask)) ||
            !array_inside(size, m->processes, m->n_processes, sizeof(RuntimeImageProcess)) ||
            m->root_task >= m->n_tasks)
                return false;
        for (size_t i = 0; i < m->n_steps; i++) {
                const RuntimeImageStep *s = runtime_image_step(m, i);
                bool spawn = s->op == PLAN_OP_SPAWN_THREAD || s->op == PLAN_OP_SPAWN_PROCESS;
                if (s->task >= m->n_tasks || (spawn && s->target >= m->n_tasks) ||
                    (s->next != RUNTIME_IMAGE_NONE && (s->next <= i || s->next >= m->n_steps)) ||
                    (s->n_insns && !array_inside(size, s->insns, s->n_insns, sizeof(struct sock_filter))))
                        return false;
        }
        for (size_t t = 0; t < m->n_tasks; t++) {
                const RuntimeImageTask *x = runtime_image_task(m, t);
                if (x->process >= m->n_processes || (x->first_step != RUNTIME_IMAGE_NONE && x->first_step >= m->n_steps))
                        return false;
        }
        for (size_t pp = 0; pp < m->n_processes; pp++) {
                uint32_t path = runtime_image_process(m, pp)->exec_path;
                if (path != RUNTIME_IMAGE_NONE && (path >= size || !memchr((const uint8_t *) buf + path, 0, size - path)))
                        return false;
        }
        return true;
}
