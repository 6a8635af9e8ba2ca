/* snapshot-fd.c: all of an fd read into memory, all of a buffer written to an fd */
#include "snapshot/snapshot-fd.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, allocated = 0;
        struct stat st;

        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t) st.st_size > max)
                return -EFBIG;
        for (;;) {
                if (n + 1 >= allocated) {
                        size_t want = allocated ? allocated * 2 : 64 * 1024;
                        if (want > max + 2)
                                want = max + 2; /* room for one byte too many, and the NUL */
                        if (want <= n + 1)
                                return -EFBIG;
                        char *p = realloc(buf, want);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        allocated = want;
                }
                ssize_t k = read(fd, buf + n, allocated - n - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max)
                        return -EFBIG;
        }
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        *ret_size = n;
        return 0;
}

int write_full_fd(int fd, const void *buf, size_t size) {
        const char *p = buf;
        while (size > 0) {
                ssize_t k = write(fd, p, size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO;
                p += k;
                size -= (size_t) k;
        }
        return 0;
}
