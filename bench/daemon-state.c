/* daemon-state.c: the daemon's chains (ListFilters, ListTasks) against a fresh bpf scan */
#include "daemon-state.h"

#include "bench.h"
#include "core/forest.h"
#include "observe/scanner.h"

#define DEST "org.sectree1"
#define PATH "/org/sectree1"
#define IFACE "org.sectree1.Manager"
#define RETRY_USEC (200 * 1000)

typedef struct BusFilter {
        uint64_t parent;
        char digest[PROG_DIGEST_STRING_MAX];
} BusFilter;

static void hashmap_free_values(Hashmap *h) {
        uint64_t key;
        void *value;
        for (size_t i = 0; hashmap_next(h, &i, &key, &value);)
                free(value);
        hashmap_deinit(h);
}

static int bus_call(sd_bus *bus, const char *method, sd_bus_message **ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(bus, DEST, PATH, IFACE, method, &error, ret, "");

        if (r < 0)
                log_error_errno(r, "%s failed: %s", method, error.message ?: strerror(-r));
        sd_bus_error_free(&error);
        return r;
}

/* id -> BusFilter from ListFilters. */
static int bus_filters(sd_bus *bus, Hashmap *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = bus_call(bus, "ListFilters", &reply);

        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ttusuas)");
        while (r >= 0) {
                uint64_t id, parent;
                uint32_t len, tasks;
                const char *digest;
                r = sd_bus_message_enter_container(reply, 'r', "ttusuas");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(reply, "ttusu", &id, &parent, &len, &digest, &tasks);
                if (r >= 0)
                        r = sd_bus_message_skip(reply, "as");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        break;
                BusFilter *f = calloc(1, sizeof(BusFilter));
                if (!f)
                        return log_oom();
                f->parent = parent;
                snprintf(f->digest, sizeof(f->digest), "%s", digest);
                r = hashmap_replace(ret, id, f);
                if (r < 0)
                        free(f);
        }
        return r < 0 ? log_error_errno(r, "Failed to read ListFilters' reply: %m") : 0;
}

/* "mode digest digest ..." of a chain given by its head, through lookup. */
static char *chain_string(const char *mode, uint64_t head, const Hashmap *filters, size_t max_depth) {
        char *s = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&s, &size);

        if (!f)
                return NULL;
        fputs(mode, f);
        for (uint64_t x = head; x && max_depth-- > 0;) {
                const BusFilter *bf = hashmap_get(filters, x);
                fprintf(f, " %s", bf ? bf->digest : "(unknown filter)");
                x = bf ? bf->parent : 0;
        }
        return fclose(f) == 0 ? s : NULL;
}

/* tid -> its chain ("filter sha256:... sha256:..."), malloc'ed strings. */
static int daemon_chains(sd_bus *bus, Hashmap *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(hashmap_free_values) Hashmap filters = {};
        int r = bus_filters(bus, &filters);

        if (r >= 0)
                r = bus_call(bus, "ListTasks", &reply);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(uuusstu)");
        while (r >= 0) {
                uint32_t tid, tgid, ppid, depth;
                const char *comm, *mode;
                uint64_t head;
                r = sd_bus_message_read(reply, "(uuusstu)", &tid, &tgid, &ppid, &comm, &mode, &head, &depth);
                if (r <= 0)
                        break;
                char *chain = chain_string(mode, head, &filters, hashmap_size(&filters) + 1);
                if (!chain)
                        return log_oom();
                r = hashmap_replace(ret, tid, chain);
                if (r < 0)
                        free(chain);
        }
        return r < 0 ? log_error_errno(r, "Failed to read the daemon's tasks: %m") : 0;
}

static void fresh_chain(const Task *t, char *buf, size_t size) {
        size_t k = (size_t) snprintf(buf, size, "%s", task_mode_to_string(t->mode));
        char digest[PROG_DIGEST_STRING_MAX];

        for (const Filter *x = t->filter; x && k < size; x = x->parent)
                k += (size_t) snprintf(buf + k, size - k, " %s", prog_digest_to_string(x->digest, digest));
}

static void diff_note(StateDiff *d, const char *format, pid_t tid, const char *a, const char *b) {
        if (!d->why[0])
                snprintf(d->why, sizeof(d->why), format, (int) tid, a, b);
}

static void compare(const Forest *fresh, const Hashmap *live, const pid_t *gone, size_t n_gone, StateDiff *d) {
        char chain[4096];

        *d = (StateDiff) {};
        for (size_t i = 0; i < fresh->n_processes; i++) {
                const Process *p = fresh->processes[i];
                for (size_t j = 0; j < p->n_threads; j++) {
                        const Task *t = &p->threads[j];
                        if (t->mode == TASK_MODE_DISABLED)
                                continue;
                        d->fresh_threads++;
                        fresh_chain(t, chain, sizeof(chain));
                        const char *l = hashmap_get(live, (uint64_t) t->tid);
                        if (!l) {
                                d->missing++;
                                diff_note(d, "tid %d: the daemon does not list it (%.120s%s)", t->tid, chain, "");
                        } else if (!streq(l, chain)) {
                                d->wrong++;
                                diff_note(d, "tid %d: the daemon has '%.90s', a fresh scan '%.90s'", t->tid, l, chain);
                        }
                }
        }
        for (size_t i = 0; i < n_gone; i++)
                if (gone[i] > 0 && hashmap_get(live, (uint64_t) gone[i])) {
                        d->stale++;
                        diff_note(d, "tid %d exited, the daemon still lists it%s%s", gone[i], "", "");
                }
}

static int compare_once(BpfScanner *scanner, sd_bus *bus, pid_t root, const pid_t *gone, size_t n_gone,
                        StateDiff *ret) {
        _cleanup_(forest_freep) Forest *fresh = NULL;
        _cleanup_(hashmap_free_values) Hashmap live = {};
        ScanOptions opts = { .root = root, .include_argv = false, .include_exe = false };
        /* The daemon first: whatever it lists was true when it answered, and a fresh scan after
         * that is at least as new. */
        int r = daemon_chains(bus, &live);

        if (r < 0)
                return r;
        r = bpf_scanner_scan(scanner, &opts, &fresh);
        if (r < 0)
                return log_error_errno(r, "The fresh scan failed: %m");
        compare(fresh, &live, gone, n_gone, ret);
        return 0;
}

int daemon_state_converge(sd_bus *bus, pid_t root, const pid_t *gone, size_t n_gone, unsigned timeout_ms,
                          StateDiff *ret) {
        _cleanup_(bpf_scanner_freep) BpfScanner *scanner = NULL;
        uint64_t end = now_nsec() + (uint64_t) timeout_ms * 1000000;
        int r = bpf_scanner_new(&scanner);

        if (r < 0)
                return log_error_errno(r, "Failed to set up a fresh bpf scanner: %m");
        for (;;) {
                r = compare_once(scanner, bus, root, gone, n_gone, ret);
                if (r < 0 || state_diff_equal(ret) || now_nsec() > end)
                        return r;
                usleep(RETRY_USEC);
        }
}
