/* test-coalesce.c: the bpf source's events at low rates: what follows the first event after a
 * quiet time comes in the same batch (one transaction, one wake-up); and a burst larger than one
 * dispatch is read to its end without another wake-up */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "core/live.h"
#include "observe/source.h"
#include "tests-util.h"

#define CHILDREN 5
#define CHILD_PAUSE_USEC 1000    /* between the child's filter and its exit */
#define QUIET_USEC (30 * 1000)   /* between children: the source is idle again */
#define WAIT_USEC (TESTS_PATIENCE_MS * 1000ULL) /* for a child's exit to arrive */

#define BURST 1500 /* children, each a filter event: about three dispatches' worth */

typedef struct Sink {
        Live *live;
        unsigned n_batches;
        unsigned burst_filters; /* filter events of children of this process */
        pid_t child;
        unsigned filter_batch, exit_batch; /* the batch (from 1) the child's events came in, 0: none */
} Sink;

static int sink_apply(void *userdata, const LiveBatch *batch) {
        Sink *k = userdata;
        k->n_batches++;
        for (size_t i = 0; i < batch->n; i++) {
                const LiveEvent *e = &batch->events[i];
                k->burst_filters += e->type == LIVE_EVENT_FILTER && e->task.ppid == getpid();
                if (e->task.tid != k->child)
                        continue;
                if (e->type == LIVE_EVENT_FILTER && !k->filter_batch)
                        k->filter_batch = k->n_batches;
                if (e->type == LIVE_EVENT_EXIT)
                        k->exit_batch = k->n_batches;
        }
        return 0;
}

static int sink_replace(void *userdata, Forest *pass, const char *reason) {
        forest_free(pass);
        return 0;
}

static void sink_resync(void *userdata, const char *reason) {
}

static const Live *sink_live(void *userdata) {
        return ((Sink *) userdata)->live;
}

/* A child that installs an allow-all filter, waits CHILD_PAUSE_USEC and exits. */
static pid_t child_filter_then_exit(void) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                struct sock_filter insns[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
                struct sock_fprog prog = { .len = 1, .filter = insns };
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(1);
                usleep(CHILD_PAUSE_USEC);
                _exit(0);
        }
        return pid;
}

static void run_for(sd_event *e, uint64_t usec) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + usec;
        for (uint64_t now; (now = now_usec(CLOCK_MONOTONIC)) < end;)
                g_assert_cmpint(sd_event_run(e, end - now), >=, 0);
}

/* A bpf source on a loop of its own, its batches into k, once it was quiet for a while. Every
 * wake-up waits: the other events of a shared machine must not make the source busy. */
static void sink_source_start(Sink *k, Source **ret_src, sd_event **ret_e) {
        tests_ensure_tracefs();
        g_assert_cmpint(setenv("SECTREE_COALESCE_IDLE_USEC", "0", 1), ==, 0);
        g_assert_cmpint(live_new(NULL, &k->live), ==, 0);
        g_assert_cmpint(source_new(&(SourceOptions) { .backend = BACKEND_BPF }, ret_src), ==, 0);
        g_assert_cmpint(sd_event_new(ret_e), >=, 0);
        SourceSink sink = { .apply = sink_apply, .replace = sink_replace, .resync = sink_resync, .live = sink_live,
                            .userdata = k };
        g_assert_cmpint(source_start(*ret_src, *ret_e, &sink), ==, 0);
        run_for(*ret_e, QUIET_USEC);
}

/* A child's filter and its exit, a millisecond apart, come in one batch. */
static void test_low_rate_one_batch(void) {
        _cleanup_(source_freep) Source *src = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Sink k = {};
        unsigned together = 0;

        if (!tests_require_root())
                return;
        sink_source_start(&k, &src, &e);

        for (unsigned i = 0; i < CHILDREN; i++) {
                int status;
                k.filter_batch = k.exit_batch = 0;
                k.child = child_filter_then_exit();
                uint64_t end = now_usec(CLOCK_MONOTONIC) + WAIT_USEC;
                while (!k.exit_batch && now_usec(CLOCK_MONOTONIC) < end)
                        g_assert_cmpint(sd_event_run(e, 10 * 1000), >=, 0);
                g_assert_cmpint(waitpid(k.child, &status, 0), ==, k.child);
                g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                g_assert_cmpuint(k.filter_batch, >, 0);
                g_assert_cmpuint(k.exit_batch, >, 0);
                together += k.filter_batch == k.exit_batch;
                g_test_message("child %u: filter in batch %u, exit in batch %u", i, k.filter_batch, k.exit_batch);
                run_for(e, QUIET_USEC);
        }
        /* Most of them at least: a loaded machine may hold a child up past the wait. */
        g_assert_cmpuint(together, >=, CHILDREN - 2);
        live_free(k.live);
}

/* A child that installs an allow-all filter, says so on ready and waits for hold to close. */
static pid_t child_filter_then_hold(int ready, int hold, int hold_writer) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(hold_writer); /* so that its end is the parent's close */
                struct sock_filter insns[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
                struct sock_fprog prog = { .len = 1, .filter = insns };
                char c = 0;
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 || write(ready, &c, 1) != 1)
                        _exit(1);
                (void) read(hold, &c, 1);
                _exit(0);
        }
        return pid;
}

/* Events queued while the loop did not run, more than one dispatch takes: the ring buffer wakes
 * its reader once (for the first record after it caught up) and the io source is edge-triggered,
 * so the source must read on by itself; nothing else comes to wake it. */
static void test_burst_read_on(void) {
        _cleanup_(source_freep) Source *src = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_free_ pid_t *pids = calloc(BURST, sizeof(pid_t));
        int ready[2], hold[2];
        Sink k = {};

        if (!tests_require_root())
                return;
        sink_source_start(&k, &src, &e);
        k.burst_filters = 0;

        g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(hold, O_CLOEXEC), ==, 0);
        for (unsigned i = 0; i < BURST; i++)
                pids[i] = child_filter_then_hold(ready[1], hold[0], hold[1]);
        for (unsigned i = 0; i < BURST; i++) {
                char c;
                g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
        }
        /* Every filter is in the ring buffer now; the loop has not read any of them. */
        uint64_t end = now_usec(CLOCK_MONOTONIC) + WAIT_USEC;
        while (k.burst_filters < BURST && now_usec(CLOCK_MONOTONIC) < end)
                g_assert_cmpint(sd_event_run(e, 10 * 1000), >=, 0);
        g_test_message("%u of %u filters read, in %u batches", k.burst_filters, BURST, k.n_batches);
        g_assert_cmpuint(k.burst_filters, ==, BURST);

        closep(&hold[1]);
        for (unsigned i = 0; i < BURST; i++)
                g_assert_cmpint(waitpid(pids[i], NULL, 0), ==, pids[i]);
        closep(&hold[0]);
        closep(&ready[0]);
        closep(&ready[1]);
        live_free(k.live);
}

int main(int argc, char **argv) {
        tests_init(&argc, &argv);
        g_test_add_func("/coalesce/low-rate-one-batch", test_low_rate_one_batch);
        g_test_add_func("/coalesce/burst-read-on", test_burst_read_on);
        return g_test_run();
}
