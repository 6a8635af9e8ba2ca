/* snapshot-fd.h: all of an fd read into memory, all of a buffer written to an fd */
#pragma once

#include <stddef.h>

/* Read all of fd into a malloc'ed buffer (NUL-terminated, the NUL not counted), refusing more than
 * max bytes with -EFBIG. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size);
/* Write all of buf to fd, retrying short writes and EINTR. */
int write_full_fd(int fd, const void *buf, size_t size);
