/* planner.c: the planner's state shared by its files: lists of indices, refusals naming a
 * process */
#include <stdarg.h>
#include <stdio.h>

#include "plan/planner.h"

int idxvec_push(IdxVec *l, size_t x) {
        if (GROW(l->v, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->v[l->n++] = x;
        return 0;
}

void idxvec_array_free(IdxVec *a, size_t n) {
        if (!a)
                return;
        for (size_t i = 0; i < n; i++)
                free(a[i].v);
        free(a);
}

int plan_refuse(Planner *p, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = plan_verror(p->error, -EINVAL, format, ap);
        va_end(ap);
        return r;
}

const char *plan_process_name(const Planner *p, size_t process, char *buf, size_t size) {
        if (process == p->root)
                snprintf(buf, size, "the restore root");
        else
                snprintf(buf, size, "process %d (%s)", p->s->processes[process]->pid, p->s->processes[process]->comm);
        return buf;
}
