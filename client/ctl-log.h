/* ctl-log.h: sectreectl's error lines, each starting "sectreectl: " */
#pragma once

#include "core/util.h"

#define ctl_error_errno(r, fmt, ...) log_error_errno((r), "sectreectl: " fmt, ##__VA_ARGS__)
#define ctl_error(fmt, ...) log_error("sectreectl: " fmt, ##__VA_ARGS__)
