/* plan-protocol.h: the restore executor's protocol (docs/restore.md, "The executor"): frames on
 * the stream socket that is sectree-restore's stdin, with file descriptors passed by SCM_RIGHTS */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* A frame: a header (type, payload length, number of fds), the fds riding on the header's bytes,
 * then the payload (JSON text, UTF-8). */
typedef enum RestoreFrameType {
        RESTORE_FRAME_REQUEST = 1, /* caller -> executor: options; one fd: the snapshot file */
        RESTORE_FRAME_READY,       /* executor -> caller: every task parked; the mapping */
        RESTORE_FRAME_FDS,         /* executor -> caller: pidfds and listener fds, in READY's order */
        RESTORE_FRAME_ERROR,       /* executor -> caller: refused or failed; every task is gone */
        RESTORE_FRAME_START,       /* caller -> executor: run the exec steps */
        RESTORE_FRAME_STARTED,     /* executor -> caller: the commands were exec'd */
        RESTORE_FRAME_RELEASE,     /* caller -> executor: end every stub (closing the socket does too) */
        RESTORE_FRAME_RELEASED,    /* executor -> caller: they are gone; the executor exits */
        _RESTORE_FRAME_MAX,
} RestoreFrameType;

const char *restore_frame_type_to_string(RestoreFrameType t);

#define RESTORE_PROTOCOL_VERSION 1
#define RESTORE_FRAME_MAX_PAYLOAD (64u * 1024 * 1024)
#define RESTORE_FRAME_MAX_FDS 250 /* below the kernel's SCM_MAX_FD (253) */

typedef struct RestoreFrame {
        RestoreFrameType type;
        char *payload; /* NUL-terminated (the NUL not counted), NULL when empty */
        size_t size;
        int *fds;      /* received with O_CLOEXEC */
        size_t n_fds;
} RestoreFrame;

void restore_frame_done(RestoreFrame *f);

/* Send one frame; payload may be NULL. Retries short writes and EINTR. -EMSGSIZE when the payload
 * or the fds are over the limits. */
int restore_frame_send(int sock, RestoreFrameType type, const void *payload, size_t size, const int *fds,
                       size_t n_fds);
/* Receive one frame, waiting at most timeout_usec (0: forever) for each part. -ECONNRESET on end
 * of stream before a frame starts, -EBADMSG for a malformed header or a frame cut short,
 * -ETIMEDOUT. */
int restore_frame_recv(int sock, uint64_t timeout_usec, RestoreFrame *ret);
