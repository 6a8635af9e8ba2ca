/* plan-protocol.c: the restore executor's protocol: frames on a stream socket, with file
 * descriptors passed by SCM_RIGHTS */
#include "plan/plan-protocol.h"

#include <poll.h>
#include <sys/socket.h>

#include "core/util.h"

#define FRAME_MAGIC 0x53524631U /* "SRF1" */

typedef struct FrameHeader {
        uint32_t magic;
        uint32_t type;
        uint32_t size;
        uint32_t n_fds;
} FrameHeader;

static const char *const frame_type_table[_RESTORE_FRAME_MAX] = {
        [RESTORE_FRAME_REQUEST] = "request",
        [RESTORE_FRAME_READY] = "ready",
        [RESTORE_FRAME_FDS] = "fds",
        [RESTORE_FRAME_ERROR] = "error",
        [RESTORE_FRAME_START] = "start",
        [RESTORE_FRAME_STARTED] = "started",
        [RESTORE_FRAME_RELEASE] = "release",
        [RESTORE_FRAME_RELEASED] = "released",
};

const char *restore_frame_type_to_string(RestoreFrameType t) {
        return t > 0 && t < _RESTORE_FRAME_MAX ? frame_type_table[t] : NULL;
}

void restore_frame_done(RestoreFrame *f) {
        for (size_t i = 0; i < f->n_fds; i++)
                if (f->fds[i] >= 0)
                        close(f->fds[i]);
        free(f->fds);
        free(f->payload);
        *f = (RestoreFrame) {};
}

static int send_all(int sock, const void *buf, size_t size) {
        const uint8_t *p = buf;

        while (size > 0) {
                ssize_t n = send(sock, p, size, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

int restore_frame_send(int sock, RestoreFrameType type, const void *payload, size_t size, const int *fds,
                       size_t n_fds) {
        FrameHeader h = { .magic = FRAME_MAGIC, .type = type, .size = (uint32_t) size, .n_fds = (uint32_t) n_fds };
        char control[CMSG_SPACE(sizeof(int) * RESTORE_FRAME_MAX_FDS)] = {};
        struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (size > RESTORE_FRAME_MAX_PAYLOAD || n_fds > RESTORE_FRAME_MAX_FDS)
                return -EMSGSIZE;
        if (n_fds > 0) {
                struct cmsghdr *cm;
                mh.msg_control = control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
        }
        do
                n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t) n < sizeof(h)) {
                int r = send_all(sock, (uint8_t *) &h + n, sizeof(h) - (size_t) n);
                if (r < 0)
                        return r;
        }
        return size > 0 ? send_all(sock, payload, size) : 0;
}

static int wait_readable(int sock, uint64_t timeout_usec) {
        struct pollfd pfd = { .fd = sock, .events = POLLIN };
        int r;

        if (timeout_usec == 0)
                return 0;
        do
                r = poll(&pfd, 1, (int) ((timeout_usec + 999) / 1000));
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        return r == 0 ? -ETIMEDOUT : 0;
}

/* Keep the fds of every SCM_RIGHTS message in mh (closing them if more than expected came). */
static int take_fds(struct msghdr *mh, RestoreFrame *f, size_t expected) {
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
                size_t n;
                int *v;

                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                v = realloc(f->fds, (f->n_fds + n) * sizeof(int) ?: 1);
                if (!v) {
                        int *fds = (int *) CMSG_DATA(cm);
                        for (size_t i = 0; i < n; i++)
                                close(fds[i]);
                        return -ENOMEM;
                }
                f->fds = v;
                memcpy(f->fds + f->n_fds, CMSG_DATA(cm), n * sizeof(int));
                f->n_fds += n;
        }
        if ((mh->msg_flags & MSG_CTRUNC) || f->n_fds != expected)
                return -EBADMSG;
        return 0;
}

static int recv_exact(int sock, void *buf, size_t size, uint64_t timeout_usec, bool at_start) {
        uint8_t *p = buf;

        while (size > 0) {
                ssize_t n;
                int r = wait_readable(sock, timeout_usec);
                if (r < 0)
                        return r;
                n = recv(sock, p, size, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return at_start && p == buf ? -ECONNRESET : -EBADMSG;
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

/* The header, with the fds that ride on it. */
static int recv_header(int sock, uint64_t timeout_usec, FrameHeader *h, RestoreFrame *f) {
        char control[CMSG_SPACE(sizeof(int) * RESTORE_FRAME_MAX_FDS)];
        struct iovec iov = { .iov_base = h, .iov_len = sizeof(*h) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof(control) };
        ssize_t n;
        int r;

        r = wait_readable(sock, timeout_usec);
        if (r < 0)
                return r;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ECONNRESET;
        r = take_fds(&mh, f, 0);
        if (r == -ENOMEM)
                return r;
        if ((size_t) n < sizeof(*h)) {
                r = recv_exact(sock, (uint8_t *) h + n, sizeof(*h) - (size_t) n, timeout_usec, false);
                if (r < 0)
                        return r;
        }
        if (h->magic != FRAME_MAGIC || h->type == 0 || h->type >= _RESTORE_FRAME_MAX ||
            h->size > RESTORE_FRAME_MAX_PAYLOAD || h->n_fds > RESTORE_FRAME_MAX_FDS || f->n_fds != h->n_fds)
                return -EBADMSG;
        return 0;
}

int restore_frame_recv(int sock, uint64_t timeout_usec, RestoreFrame *ret) {
        RestoreFrame f = {};
        FrameHeader h;
        int r;

        r = recv_header(sock, timeout_usec, &h, &f);
        if (r >= 0 && h.size > 0) {
                f.payload = malloc(h.size + 1);
                if (!f.payload)
                        r = -ENOMEM;
                else
                        r = recv_exact(sock, f.payload, h.size, timeout_usec, false);
                if (r >= 0)
                        f.payload[h.size] = 0;
        }
        if (r < 0) {
                restore_frame_done(&f);
                return r;
        }
        f.type = h.type;
        f.size = h.size;
        *ret = f;
        return 0;
}
