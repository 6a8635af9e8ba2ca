/* tracefs.h: making sure tracefs is mounted, so that tracepoints can be attached */
#pragma once

#define TRACEFS_PATH "/sys/kernel/tracing"

/* Mount tracefs at TRACEFS_PATH unless it is mounted there already. 0 or negative errno. */
int tracefs_ensure_mounted(void);
