/* snapshot-load.c: the snapshots the client reads with lib/: a file (or stdin), or a stored
 * snapshot fetched from the daemon with ExportSnapshot */
#include "snapshot-load.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ctl-args.h"
#include "ctl-log.h"
#include "manager-snapshots.h"
#include "snapshot/snapshot-validate.h"

static int open_input(const char *path) {
        if (streq(path, "-"))
                return fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
}

/* Read fd to the end and build the forest from its bytes. */
static int read_fd(int fd, Forest **ret, SnapshotFileInfo *ret_info, char **ret_error) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_full_fd(fd, SNAPSHOT_MAX_FILE_SIZE, &data, &size);
        if (r == -EFBIG)
                return snapshot_error(ret_error, "snapshot: more than the limit of %u bytes (64 MiB)",
                                      SNAPSHOT_MAX_FILE_SIZE);
        if (r < 0)
                return r;
        if (ret_info)
                *ret_info = (SnapshotFileInfo) { .format = snapshot_detect_format(data, size), .size = size };
        return snapshot_read_data(data, size, ret, ret_error);
}

int snapshot_file_read(const char *path, Forest **ret, SnapshotFileInfo *ret_info, char **ret_error) {
        *ret_error = NULL;
        _cleanup_close_ int fd = open_input(path);
        if (fd < 0)
                return -errno;
        int r = read_fd(fd, ret, ret_info, ret_error);
        if (r < 0 && r != -EINVAL) {
                free(*ret_error);
                *ret_error = NULL;
        }
        return r;
}

static const char *input_name(const char *path) {
        return streq(path, "-") ? "(stdin)" : path;
}

int snapshot_file_load(const char *path, Forest **ret, SnapshotFileInfo *ret_info) {
        _cleanup_free_ char *error = NULL;
        int r = snapshot_file_read(path, ret, ret_info, &error);
        if (r == -EINVAL && error)
                return ctl_error_errno(r, "Invalid snapshot %s: %s", input_name(path), error);
        if (r < 0)
                return ctl_error_errno(r, "Failed to read %s: %m", input_name(path));
        return 0;
}

int snapshot_fetch(sd_bus *bus, uint64_t id, Forest **ret) {
        _cleanup_close_ int fd = memfd_create("sectree-snapshot", MFD_CLOEXEC);
        _cleanup_free_ char *error = NULL;
        if (fd < 0)
                return ctl_error_errno(-errno, "Failed to create a memfd: %m");
        int r = manager_export_snapshot(bus, id, fd, "sqlite");
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return ctl_error_errno(-errno, "Failed to rewind the export of snapshot %" PRIu64 ": %m", id);
        r = read_fd(fd, ret, NULL, &error);
        if (r == -EINVAL && error)
                return ctl_error_errno(r, "Invalid snapshot %" PRIu64 " from the daemon: %s", id, error);
        if (r < 0)
                return ctl_error_errno(r, "Failed to read the export of snapshot %" PRIu64 ": %m", id);
        return 0;
}

static bool all_digits(const char *s) {
        return *s && strspn(s, "0123456789") == strlen(s);
}

int snapshot_load_operand(Context *c, const char *arg, Forest **ret) {
        struct stat st;
        if (!all_digits(arg) || stat(arg, &st) == 0)
                return snapshot_file_load(arg, ret, NULL);
        uint64_t id;
        sd_bus *bus;
        int r = parse_snapshot_id_arg(arg, &id);
        if (r < 0)
                return r;
        r = context_bus(c, &bus);
        if (r < 0)
                return r;
        return snapshot_fetch(bus, id, ret);
}
