/* snapshots.c: snapshots for bus callers stored in the state database: listed, found and deleted,
 * within each user's quota (taken: snapshot-scan.c; taken, exported and imported:
 * snapshot-transfers.c) */
#include "service/snapshots.h"

#include <stdarg.h>
#include <stdio.h>

int snapshot_set_message(char **ret_message, const char *format, ...) {
        if (!ret_message)
                return 0;
        va_list ap;
        va_start(ap, format);
        int k = vasprintf(ret_message, format, ap);
        va_end(ap);
        if (k < 0)
                *ret_message = NULL;
        return 0;
}

const StoreSnapshotQuota *snapshot_quota_for(const Caller *c) {
        static const StoreSnapshotQuota user_quota = {
                .snapshots = SNAPSHOTS_MAX_PER_UID,
                .threads = SNAPSHOTS_MAX_THREADS_PER_UID,
                .instructions = SNAPSHOTS_MAX_INSNS_PER_UID,
                .bytes = SNAPSHOTS_MAX_BYTES_PER_UID,
        };
        return c->privileged ? NULL : &user_quota;
}

int snapshot_quota_message(char **ret_message) {
        return snapshot_set_message(ret_message,
                                    "You hold as many snapshots as you may (at most %d, with %d threads, %u filter "
                                    "instructions and %llu MiB stored in all): delete some first.",
                                    SNAPSHOTS_MAX_PER_UID, SNAPSHOTS_MAX_THREADS_PER_UID, SNAPSHOTS_MAX_INSNS_PER_UID,
                                    SNAPSHOTS_MAX_BYTES_PER_UID >> 20);
}

/* Listing and deleting */

static bool may_see(const Caller *c, const StoredSnapshot *s) {
        return c->privileged || s->owner_uid == c->uid;
}

int manager_snapshot_list(Manager *m, Caller *c, StoredSnapshot **ret, size_t *ret_n) {
        StoredSnapshot *l;
        size_t n, k = 0;
        int r = store_snapshot_list(m->store, &l, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (may_see(c, &l[i]))
                        l[k++] = l[i];
                else
                        stored_snapshot_done(&l[i]);
        }
        *ret = l;
        *ret_n = k;
        return 0;
}

/* The row of a snapshot the caller may see; another's is -ENOENT too. */
int snapshot_find(Manager *m, Caller *c, uint64_t id, StoredSnapshot *ret) {
        int r = store_snapshot_get(m->store, id, ret);
        if (r < 0)
                return r;
        if (!may_see(c, ret)) {
                stored_snapshot_done(ret);
                return -ENOENT;
        }
        return 0;
}

int manager_snapshot_delete(Manager *m, Caller *c, uint64_t id) {
        StoredSnapshot s;
        int r = snapshot_find(m, c, id, &s);
        if (r < 0)
                return r;
        stored_snapshot_done(&s);
        r = store_snapshot_delete(m->store, id);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        (void) manager_send_snapshot_deleted(m, id);
        return 0;
}
