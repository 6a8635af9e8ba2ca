/* restore-fds.c: see restore-fds.h */
#include "restore-fds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/util.h"

/* fd copied to the end of *v. */
static int push_fd(int **v, size_t *n, int fd) {
        int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3), *grown;
        if (copy < 0)
                return -errno;
        grown = realloc(*v, (*n + 1) * sizeof(int));
        if (!grown) {
                close(copy);
                return -ENOMEM;
        }
        grown[(*n)++] = copy;
        *v = grown;
        return 0;
}

static int push_id(uint64_t **v, size_t n, uint64_t id) {
        uint64_t *grown = realloc(*v, (n + 1) * sizeof(uint64_t));
        if (!grown)
                return -ENOMEM;
        grown[n] = id;
        *v = grown;
        return 0;
}

/* The pidfds of one batch, copied to the end of *pidfds. */
static int read_pidfd_batch(sd_bus_message *m, int **pidfds, size_t *n_pidfds) {
        int fd, r = sd_bus_message_enter_container(m, 'a', "h");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "h", &fd)) > 0) {
                r = push_fd(pidfds, n_pidfds, fd);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* The listeners of one batch, their ids and copies of their fds to the ends of the two arrays. */
static int read_listener_batch(sd_bus_message *m, uint64_t **listener_ids, int **listener_fds, size_t *n_listeners) {
        uint64_t lid;
        int fd, r = sd_bus_message_enter_container(m, 'a', "(th)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(th)", &lid, &fd)) > 0) {
                r = push_id(listener_ids, *n_listeners, lid);
                if (r < 0)
                        return r;
                r = push_fd(listener_fds, n_listeners, fd);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* One batch: (ah pidfds, a(th) listeners, u left). */
static int read_batch(sd_bus_message *m, int **pidfds, size_t *n_pidfds, uint64_t **listener_ids, int **listener_fds,
                      size_t *n_listeners, uint32_t *ret_left) {
        int r = read_pidfd_batch(m, pidfds, n_pidfds);
        if (r < 0)
                return r;
        r = read_listener_batch(m, listener_ids, listener_fds, n_listeners);
        if (r < 0)
                return r;
        return sd_bus_message_read(m, "u", ret_left);
}

int restore_fds_take(sd_bus *bus, uint64_t id, int **pidfds, size_t *n_pidfds, uint64_t **listener_ids,
                     int **listener_fds, size_t *n_listeners) {
        for (uint32_t left = 1; left > 0;) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                int r = sd_bus_call_method(bus, "org.sectree1", "/org/sectree1", "org.sectree1.Manager",
                                           "TakeRestoreFds", &error, &reply, "t", id);
                if (r < 0)
                        return log_error_errno(r, "Failed to take the fds of restore %" PRIu64 ": %s", id,
                                               error.message ?: strerror(-r));
                r = read_batch(reply, pidfds, n_pidfds, listener_ids, listener_fds, n_listeners, &left);
                if (r < 0)
                        return log_error_errno(r, "Failed to read the fds of restore %" PRIu64 ": %m", id);
        }
        return 0;
}
