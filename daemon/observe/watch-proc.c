/* watch-proc.c: the proc connector: a NETLINK_CONNECTOR socket subscribed to CN_IDX_PROC, whose
 * fork/exec/exit/comm messages become ProcEvents
 *
 * What the kernel asks of a listener (verified on 6.18): the socket is in the initial network
 * namespace (the connector exists there only) and the subscriber in the initial user and pid
 * namespaces (others are ignored without an answer). No capability is needed since Linux 6.6;
 * before that, binding to the group and PROC_CN_MCAST_LISTEN needed CAP_NET_ADMIN.
 *
 * Subscribing takes two messages. The first, a plain PROC_CN_MCAST_LISTEN, is acknowledged, which
 * tells us that the kernel listens to us at all. The second (6.6 and later; older kernels ignore
 * it) narrows what this socket receives to fork, exec, exit and comm: without it, every
 * PTRACE_SEIZE and detach of our own scans would come back as two events and fill the socket
 * during a pass. It is not acknowledged: the kernel's answer is itself an event this socket no
 * longer takes.
 */
#include "observe/watch-proc.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#define ACK_TIMEOUT_MSEC 1000
#define RCVBUF_DEFAULT (8U << 20) /* ~10,000 queued events; capped at net.core.rmem_max without CAP_NET_ADMIN */
#define RCVBUF_MIN 256U
#define MAX_DATAGRAMS_PER_DISPATCH 4096U /* then the loop serves others; the fd stays readable */

/* struct proc_input of linux/cn_proc.h since 6.6 (the build's headers may be older). */
typedef struct ProcInput {
        uint32_t mcast_op;
        uint32_t event_type;
} ProcInput;

#define WATCHED_EVENTS (PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_EXIT | PROC_EVENT_COMM)

struct ProcWatch {
        int fd;
        pid_t self;
        uint32_t seq;
        uint64_t lost;
        ProcEventHandler handler;
        void *userdata;
};

/* $SECTREE_PROC_CN_RCVBUF (bytes) replaces the socket's receive buffer size: tests make it tiny to
 * overflow it on purpose. */
static int set_rcvbuf(int fd) {
        const char *e = secure_getenv("SECTREE_PROC_CN_RCVBUF");
        uint64_t size = RCVBUF_DEFAULT;
        if (e) {
                int r = safe_atou64(e, &size);
                if (r < 0 || size < RCVBUF_MIN || size > INT32_MAX)
                        return log_error_errno(r < 0 ? r : -EINVAL, "Invalid $SECTREE_PROC_CN_RCVBUF: %s", e);
        }
        int v = (int) size;
        /* SO_RCVBUFFORCE passes net.core.rmem_max, with CAP_NET_ADMIN; SO_RCVBUF is capped by it. */
        if (!e && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) >= 0)
                return 0;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) < 0)
                return log_error_errno(-errno, "Failed to size the proc connector socket: %m");
        return 0;
}

static int send_op(ProcWatch *w, const void *op, size_t len) {
        struct {
                struct nlmsghdr nl;
                struct cn_msg cn;
                uint8_t data[sizeof(ProcInput)];
        } __attribute__((packed)) msg = {};

        msg.nl.nlmsg_len = (uint32_t) (sizeof(msg.nl) + sizeof(msg.cn) + len);
        msg.nl.nlmsg_type = NLMSG_DONE;
        msg.nl.nlmsg_pid = 0;
        msg.cn.id.idx = CN_IDX_PROC;
        msg.cn.id.val = CN_VAL_PROC;
        msg.cn.seq = ++w->seq;
        msg.cn.ack = w->seq; /* the kernel answers with ack + 1 (its answer's seq is not ours) */
        msg.cn.len = (uint16_t) len;
        memcpy(msg.data, op, len);
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(w->fd, &msg, msg.nl.nlmsg_len, 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
                return -errno;
        return 0;
}

/* One received datagram's connector payloads, in order. Returns the next cn_msg or NULL; *size is
 * what follows the cn_msg header. */
static const struct cn_msg *next_cn_msg(const struct nlmsghdr **h, size_t *left, size_t *size) {
        for (; NLMSG_OK(*h, *left); *h = NLMSG_NEXT(*h, *left)) {
                const struct nlmsghdr *cur = *h;
                if (cur->nlmsg_type == NLMSG_NOOP || cur->nlmsg_type == NLMSG_ERROR)
                        continue;
                if (cur->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg)))
                        continue;
                const struct cn_msg *cn = NLMSG_DATA(cur);
                if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC ||
                    cn->len > cur->nlmsg_len - NLMSG_LENGTH(sizeof(struct cn_msg)))
                        continue;
                *size = cn->len;
                *h = NLMSG_NEXT(*h, *left);
                return cn;
        }
        return NULL;
}

/* Receive one datagram from the kernel (others could forge events: they are dropped). Returns its
 * length, 0 for one to skip, -EAGAIN when none is waiting, -ENOBUFS when events were lost. */
static ssize_t receive(ProcWatch *w, void *buf, size_t size) {
        struct sockaddr_nl from = {};
        socklen_t from_len = sizeof(from);
        ssize_t n = recvfrom(w->fd, buf, size, MSG_DONTWAIT, (struct sockaddr *) &from, &from_len);
        if (n < 0)
                return errno == EINTR ? 0 : -errno;
        if (from_len < sizeof(from) || from.nl_pid != 0)
                return 0;
        return n;
}

static void copy_event(struct proc_event *ev, const struct cn_msg *cn, size_t size) {
        *ev = (struct proc_event) {};
        memcpy(ev, cn->data, size < sizeof(*ev) ? size : sizeof(*ev)); /* cn->data is not 8-aligned */
}

static int wait_for_ack(ProcWatch *w, uint32_t sent_ack) {
        uint64_t deadline = (now_usec(CLOCK_MONOTONIC) / 1000) + ACK_TIMEOUT_MSEC;
        uint8_t buf[4096] __attribute__((aligned(8)));

        for (uint64_t now; (now = (now_usec(CLOCK_MONOTONIC) / 1000)) < deadline;) {
                ssize_t n = receive(w, buf, sizeof(buf));
                if (n == -EAGAIN) {
                        struct pollfd p = { .fd = w->fd, .events = POLLIN };
                        (void) poll(&p, 1, (int) (deadline - now));
                        continue;
                }
                if (n < 0 && n != -ENOBUFS)
                        return (int) n;
                const struct nlmsghdr *h = (const struct nlmsghdr *) buf;
                size_t left = n > 0 ? (size_t) n : 0, size;
                for (const struct cn_msg *cn; (cn = next_cn_msg(&h, &left, &size));) {
                        struct proc_event ev;
                        copy_event(&ev, cn, size);
                        /* Events before the answer happened before the first pass: it sees their effect. */
                        if (ev.what == PROC_EVENT_NONE && cn->ack == sent_ack + 1)
                                return -(int) ev.event_data.ack.err;
                }
        }
        return -ETIMEDOUT;
}

static int subscribe(ProcWatch *w) {
        uint32_t op = PROC_CN_MCAST_LISTEN;
        int r = send_op(w, &op, sizeof(op));
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to the proc connector: %m");
        r = wait_for_ack(w, w->seq);
        if (r == -ETIMEDOUT)
                return log_error_errno(r, "The proc connector did not answer: it only serves the initial user, pid "
                                          "and network namespaces.");
        if (r < 0)
                return log_error_errno(r, "The proc connector refused the subscription: %m");
        ProcInput in = { .mcast_op = PROC_CN_MCAST_LISTEN, .event_type = WATCHED_EVENTS };
        r = send_op(w, &in, sizeof(in));
        if (r < 0)
                return log_error_errno(r, "Failed to narrow the proc connector's events: %m");
        return 0;
}

int proc_watch_new(ProcEventHandler handler, void *userdata, ProcWatch **ret) {
        _cleanup_(proc_watch_freep) ProcWatch *w = calloc(1, sizeof(ProcWatch));
        if (!w)
                return log_oom();
        *w = (ProcWatch) { .fd = -1, .self = getpid(), .handler = handler, .userdata = userdata };
        w->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (w->fd < 0)
                return log_error_errno(-errno, "Failed to open a NETLINK_CONNECTOR socket: %m");
        int r = set_rcvbuf(w->fd);
        if (r < 0)
                return r;
        struct sockaddr_nl addr = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        if (bind(w->fd, (struct sockaddr *) &addr, sizeof(addr)) < 0)
                return log_error_errno(-errno, "Failed to join the proc connector's group: %m");
        r = subscribe(w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

ProcWatch *proc_watch_free(ProcWatch *w) {
        if (!w)
                return NULL;
        if (w->fd >= 0) {
                /* Closing does not lower the kernel's listener count, which keeps it sending events. */
                uint32_t op = PROC_CN_MCAST_IGNORE;
                (void) send_op(w, &op, sizeof(op));
                close(w->fd);
        }
        free(w);
        return NULL;
}

int proc_watch_fd(ProcWatch *w) {
        return w->fd;
}

uint64_t proc_watch_lost(ProcWatch *w) {
        return w->lost;
}

/* Our own threads (the ptrace workers of every pass) are no one's business. */
static bool event_from_kernel(const ProcWatch *w, const struct proc_event *ev, ProcEvent *e) {
        switch (ev->what) {
        case PROC_EVENT_FORK:
                *e = (ProcEvent) {
                        .type = PROC_EVENT_TYPE_FORK,
                        .tid = ev->event_data.fork.child_pid,
                        .tgid = ev->event_data.fork.child_tgid,
                        .parent_tid = ev->event_data.fork.parent_pid,
                        .parent_tgid = ev->event_data.fork.parent_tgid,
                };
                break;
        case PROC_EVENT_EXEC:
                *e = (ProcEvent) { .type = PROC_EVENT_TYPE_EXEC, .tid = ev->event_data.exec.process_pid,
                                   .tgid = ev->event_data.exec.process_tgid };
                break;
        case PROC_EVENT_EXIT:
                *e = (ProcEvent) { .type = PROC_EVENT_TYPE_EXIT, .tid = ev->event_data.exit.process_pid,
                                   .tgid = ev->event_data.exit.process_tgid };
                break;
        case PROC_EVENT_COMM:
                *e = (ProcEvent) { .type = PROC_EVENT_TYPE_COMM, .tid = ev->event_data.comm.process_pid,
                                   .tgid = ev->event_data.comm.process_tgid };
                memcpy(e->comm, ev->event_data.comm.comm, sizeof(e->comm));
                e->comm[sizeof(e->comm) - 1] = 0;
                break;
        default:
                return false; /* the subscription's answers, and everything a pre-6.6 kernel sends */
        }
        return e->tgid > 0 && e->tgid != w->self;
}

static int dispatch_datagram(ProcWatch *w, const void *buf, size_t n) {
        const struct nlmsghdr *h = buf;
        size_t left = n, size;
        int handled = 0;

        for (const struct cn_msg *cn; (cn = next_cn_msg(&h, &left, &size));) {
                struct proc_event ev;
                ProcEvent e;
                copy_event(&ev, cn, size);
                if (!event_from_kernel(w, &ev, &e))
                        continue;
                int r = w->handler(&e, w->userdata);
                if (r < 0)
                        return r;
                handled++;
        }
        return handled;
}

int proc_watch_dispatch(ProcWatch *w) {
        uint8_t buf[8192] __attribute__((aligned(8)));
        int handled = 0;

        for (unsigned i = 0; i < MAX_DATAGRAMS_PER_DISPATCH; i++) {
                ssize_t n = receive(w, buf, sizeof(buf));
                if (n == -EAGAIN)
                        return handled;
                if (n == -ENOBUFS) {
                        w->lost++; /* the kernel dropped what did not fit; what follows is readable */
                        continue;
                }
                if (n < 0)
                        return log_error_errno((int) n, "Failed to read from the proc connector: %m");
                int r = dispatch_datagram(w, buf, (size_t) n);
                if (r < 0)
                        return r;
                handled += r;
        }
        return handled;
}
