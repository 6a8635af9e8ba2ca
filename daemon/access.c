/* access.c: who may see what: a bus caller sees the tasks it could ptrace itself */
#include "access.h"

#include <stdio.h>
#include <sys/stat.h>

#include "procinfo.h"

int caller_from_message(sd_bus_message *m, Caller *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        int r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_EGID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r < 0)
                return r;
        *ret = (Caller) {};
        r = sd_bus_creds_get_euid(creds, &ret->uid);
        if (r < 0)
                return r;
        ret->has_gid = sd_bus_creds_get_egid(creds, &ret->gid) >= 0;
        ret->privileged = ret->uid == 0;
        return 0;
}

void caller_deinit(Caller *c) {
        hashmap_deinit(&c->seen);
}

static bool process_matches(const Caller *c, pid_t tgid) {
        ProcStatus st;
        if (proc_read_status(tgid, &st) < 0)
                return false;
        if (st.uid != c->uid || st.euid != c->uid)
                return false;
        if (c->has_gid && (st.gid != c->gid || st.egid != c->gid))
                return false;
        char path[32];
        struct stat sb;
        snprintf(path, sizeof(path), "/proc/%d", tgid);
        return stat(path, &sb) == 0 && sb.st_uid == c->uid; /* root-owned when not dumpable */
}

bool caller_may_see_process(Caller *c, pid_t tgid) {
        if (c->privileged)
                return true;
        uintptr_t v = (uintptr_t) hashmap_get(&c->seen, (uint64_t) tgid);
        if (v == 0) {
                v = process_matches(c, tgid) ? 1 : 2;
                (void) hashmap_put(&c->seen, (uint64_t) tgid, (void *) v);
        }
        return v == 1;
}

int caller_visible_filters(Caller *c, const Forest *f, Hashmap *ret) {
        *ret = (Hashmap) {};
        for (size_t i = 0; i < f->n_processes; i++) {
                const Process *p = f->processes[i];
                if (!caller_may_see_process(c, p->pid))
                        continue;
                for (size_t j = 0; j < p->n_threads; j++)
                        for (Filter *x = p->threads[j].filter; x; x = x->parent) {
                                int r = hashmap_put(ret, x->id, x);
                                if (r == -EEXIST)
                                        break; /* the rest of the chain is in already */
                                if (r < 0)
                                        return r;
                        }
        }
        if (c->privileged)
                for (size_t i = 0; i < f->n_filters; i++)
                        (void) hashmap_replace(ret, f->filters[i]->id, f->filters[i]);
        return 0;
}
