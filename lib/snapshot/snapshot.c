/* snapshot.c: snapshot files of either format: detection, reading any file, writing into an fd */
#include "snapshot/snapshot.h"

#include <fcntl.h>

#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite-read.h"
#include "snapshot/snapshot-sqlite.h"
#include "snapshot/snapshot-validate.h"

SnapshotFormat snapshot_detect_format(const void *data, size_t size) {
        static const char magic[] = SNAPSHOT_SQLITE_MAGIC; /* 16 bytes with its NUL */
        if (size >= sizeof(magic) && memcmp(data, magic, sizeof(magic)) == 0)
                return SNAPSHOT_FORMAT_SQLITE;
        return SNAPSHOT_FORMAT_JSON;
}

int snapshot_read_data(const void *data, size_t size, Forest **ret, char **error) {
        if (error)
                *error = NULL;
        if (size > SNAPSHOT_MAX_FILE_SIZE)
                return snapshot_error(error, "snapshot: %zu bytes, more than the limit of %u (64 MiB)", size,
                                      SNAPSHOT_MAX_FILE_SIZE);
        if (snapshot_detect_format(data, size) == SNAPSHOT_FORMAT_SQLITE)
                return snapshot_sqlite_read_data(data, size, ret, error);
        return snapshot_json_read(data, size, ret, error);
}

int snapshot_read_any(int fd, Forest **ret, char **error) {
        _cleanup_free_ char *data = NULL;
        size_t size;

        if (error)
                *error = NULL;
        int r = read_full_fd(fd, SNAPSHOT_MAX_FILE_SIZE, &data, &size);
        if (r == -EFBIG)
                return snapshot_error(error, "snapshot: more than the limit of %u bytes (64 MiB)", SNAPSHOT_MAX_FILE_SIZE);
        if (r < 0)
                return r;
        return snapshot_read_data(data, size, ret, error);
}

int snapshot_read_path(const char *path, Forest **ret, char **error) {
        if (error)
                *error = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return snapshot_read_any(fd, ret, error);
}

int snapshot_write_fd(const Forest *f, SnapshotFormat format, int fd) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r;

        switch (format) {
        case SNAPSHOT_FORMAT_JSON:
                r = snapshot_json_format_buffer(f, 0, &data, &size);
                if (r < 0)
                        return r;
                data[size++] = '\n'; /* the buffer has room for it */
                return write_full_fd(fd, data, size);
        case SNAPSHOT_FORMAT_SQLITE:
                r = snapshot_sqlite_format(f, (void **) &data, &size);
                return r < 0 ? r : write_full_fd(fd, data, size);
        default:
                return -EINVAL;
        }
}
