/* executor-reply.h: the frames the executor answers with on the socket it was given as stdin */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <unistd.h>

#include "controller.h"
#include "plan/plan-protocol.h"

/* The connected stream socket that carries the request and every reply. */
#define EXECUTOR_SOCKET_FD STDIN_FILENO

/* Sends doc as a frame of that type; a caller that left is logged at debug level only. */
int executor_reply_json(RestoreFrameType type, json_t *doc);
/* Logs and sends ERROR: the stage, message, and with c the failed step, its call and errno. */
int executor_reply_error(const char *stage, const char *message, const Controller *c);
/* Sends READY, then the fds it indexes in FDS frames. */
int executor_reply_ready(const Controller *c, bool unprivileged);
