/* rate-floor.c: sectree-rate-floor, the floor of the daemon's CPU per event at a given rate: a tiny
 * process doing, per event, the kind of work the daemon does for an install (a wake-up, one
 * transaction of the state database's settings, three messages on a socket), paced at that rate;
 * what the machine itself charges for the same work at a low rate and a high one */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "core/util.h"

/*
 * sectree-rate-floor RATE EVENTS DIR: in a new database DIR/floor.db (WAL, synchronous=NORMAL, as
 * the store opens it), EVENTS events at RATE per second, each woken by the clock at its time
 * (clock_nanosleep(), the cheapest wake-up there is), then one transaction that inserts a row of
 * ROW_BYTES into an indexed table and deletes the row of KEEP_ROWS events before, then
 * MESSAGES_PER_EVENT messages of MESSAGE_BYTES on a socket whose other end a child reads (the
 * signals through the bus). Half a second of events comes first, untimed. Writes "cpu_ns N" (the
 * process's CPU time over the timed events, the reader's not included) and exits.
 */

#define ROW_BYTES 600          /* what the state database grows by per event (figure 3) */
#define KEEP_ROWS 1000
#define MESSAGES_PER_EVENT 3   /* FilterAttached and the changes of the task and its process */
#define MESSAGE_BYTES 200
#define MAX_RATE 100000
#define MAX_EVENTS 10000000

static uint64_t cpu_nsec(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void timespec_add(struct timespec *t, uint64_t nsec) {
        t->tv_nsec += (long) nsec;
        while (t->tv_nsec >= 1000000000L) {
                t->tv_nsec -= 1000000000L;
                t->tv_sec++;
        }
}

/* The reader of the messages: a child, so that its CPU is not the floor's. */
static int start_reader(int *ret_fd, pid_t *ret_pid) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                char buf[65536];
                close(sv[0]);
                while (read(sv[1], buf, sizeof(buf)) > 0)
                        ;
                _exit(0);
        }
        close(sv[1]);
        *ret_fd = sv[0];
        *ret_pid = pid;
        return 0;
}

static int open_db(const char *dir, sqlite3 **ret) {
        _cleanup_free_ char *path = NULL;
        sqlite3 *db = NULL;
        if (asprintf(&path, "%s/floor.db", dir) < 0)
                return -ENOMEM;
        if (sqlite3_open(path, &db) != SQLITE_OK ||
            sqlite3_exec(db,
                         "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                         "CREATE TABLE events (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v BLOB);"
                         "CREATE INDEX events_k ON events (k);",
                         NULL, NULL, NULL) != SQLITE_OK) {
                fprintf(stderr, "sectree-rate-floor: %s: %s\n", path, db ? sqlite3_errmsg(db) : "cannot open");
                sqlite3_close(db);
                return -EIO;
        }
        *ret = db;
        return 0;
}

typedef struct Floor {
        sqlite3 *db;
        sqlite3_stmt *insert, *delete;
        int sock;
} Floor;

static int one_event(Floor *f, int64_t i) {
        static const char row[ROW_BYTES] = { 1 };
        static const char message[MESSAGE_BYTES] = { 2 };

        if (sqlite3_exec(f->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_bind_int64(f->insert, 1, i) != SQLITE_OK ||
            sqlite3_bind_blob(f->insert, 2, row, sizeof(row), SQLITE_STATIC) != SQLITE_OK ||
            sqlite3_step(f->insert) != SQLITE_DONE || sqlite3_reset(f->insert) != SQLITE_OK ||
            sqlite3_bind_int64(f->delete, 1, i - KEEP_ROWS) != SQLITE_OK ||
            sqlite3_step(f->delete) != SQLITE_DONE || sqlite3_reset(f->delete) != SQLITE_OK ||
            sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
                fprintf(stderr, "sectree-rate-floor: %s\n", sqlite3_errmsg(f->db));
                return -EIO;
        }
        for (unsigned m = 0; m < MESSAGES_PER_EVENT; m++)
                if (send(f->sock, message, sizeof(message), MSG_NOSIGNAL) != (ssize_t) sizeof(message))
                        return -errno;
        return 0;
}

int main(int argc, char **argv) {
        uint64_t rate, events;
        Floor f = { .sock = -1 };
        pid_t reader = -1;
        int r;

        if (argc != 4 || safe_atou64(argv[1], &rate) < 0 || rate == 0 || rate > MAX_RATE ||
            safe_atou64(argv[2], &events) < 0 || events == 0 || events > MAX_EVENTS) {
                fprintf(stderr, "Usage: sectree-rate-floor RATE EVENTS DIR (RATE 1-%d, EVENTS 1-%d)\n", MAX_RATE,
                        MAX_EVENTS);
                return 2;
        }
        r = open_db(argv[3], &f.db);
        if (r >= 0 && (sqlite3_prepare_v2(f.db, "INSERT INTO events (k, v) VALUES (?, ?)", -1, &f.insert, NULL) != SQLITE_OK ||
                       sqlite3_prepare_v2(f.db, "DELETE FROM events WHERE k = ?", -1, &f.delete, NULL) != SQLITE_OK))
                r = -EIO;
        if (r >= 0)
                r = start_reader(&f.sock, &reader);

        uint64_t period = 1000000000ULL / rate, start_cpu = 0;
        int64_t warmup = rate / 2;
        struct timespec next;
        (void) clock_gettime(CLOCK_MONOTONIC, &next);
        for (int64_t i = -warmup; r >= 0 && i < (int64_t) events; i++) {
                if (i == 0)
                        start_cpu = cpu_nsec();
                timespec_add(&next, period);
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
                        ;
                r = one_event(&f, i);
        }
        uint64_t used = cpu_nsec() - start_cpu;

        sqlite3_finalize(f.insert);
        sqlite3_finalize(f.delete);
        sqlite3_close(f.db);
        closep(&f.sock);
        if (reader > 0)
                (void) waitpid(reader, NULL, 0);
        if (r < 0) {
                fprintf(stderr, "sectree-rate-floor: %s\n", strerror(-r));
                return 1;
        }
        printf("cpu_ns %" PRIu64 "\n", used);
        return 0;
}
