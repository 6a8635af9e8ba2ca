/* snapshot.c: what both snapshot file formats share: format detection, reading any file, writing
 * into an fd, times and UTF-8 */
#include "snapshot/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot-sqlite.h"
#include "snapshot/snapshot-validate.h"

static const char *const snapshot_format_table[_SNAPSHOT_FORMAT_MAX] = {
        [SNAPSHOT_FORMAT_JSON] = "json",
        [SNAPSHOT_FORMAT_SQLITE] = "sqlite",
};
DEFINE_STRING_TABLE_LOOKUP(snapshot_format, SnapshotFormat, _SNAPSHOT_FORMAT_MAX);

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

/* Times */

int snapshot_format_time(uint64_t usec, char *buf, size_t len) {
        if (usec / 1000000 > (uint64_t) INT64_MAX)
                return -ERANGE;
        time_t sec = (time_t) (usec / 1000000);
        struct tm tm;
        if (!gmtime_r(&sec, &tm) || tm.tm_year + 1900 > 9999)
                return -ERANGE;
        size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
        if (n == 0 || (size_t) snprintf(buf + n, len - n, ".%06uZ", (unsigned) (usec % 1000000)) >= len - n)
                return -ENOBUFS;
        return 0;
}

/* n decimal digits at s, or -1. */
static int parse_digits(const char *s, size_t n) {
        int v = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        return v;
}

static int parse_fraction_usec(const char *s, const char **end) {
        int usec = 0, digits = 0;
        if (*s == '.') {
                for (s++; *s >= '0' && *s <= '9'; s++, digits++)
                        if (digits < 6)
                                usec = usec * 10 + (*s - '0');
                if (digits == 0 || digits > 9)
                        return -EINVAL;
                for (int i = digits; i < 6; i++)
                        usec *= 10;
        }
        *end = s;
        return usec;
}

int snapshot_parse_time(const char *s, uint64_t *ret) {
        /* YYYY-MM-DDTHH:MM:SS */
        if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
                return -EINVAL;
        struct tm tm = {
                .tm_year = parse_digits(s, 4) - 1900, .tm_mon = parse_digits(s + 5, 2) - 1,
                .tm_mday = parse_digits(s + 8, 2), .tm_hour = parse_digits(s + 11, 2),
                .tm_min = parse_digits(s + 14, 2), .tm_sec = parse_digits(s + 17, 2),
        };
        const struct tm want = tm;
        if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mday < 0 || tm.tm_hour < 0 || tm.tm_min < 0 || tm.tm_sec < 0)
                return -EINVAL;
        const char *end;
        int usec = parse_fraction_usec(s + 19, &end);
        if (usec < 0 || !streq(end, "Z"))
                return -EINVAL;
        time_t sec = timegm(&tm);
        /* timegm() normalises 2026-02-30 into March: a date that moved did not exist. */
        if (sec < 0 || tm.tm_year != want.tm_year || tm.tm_mon != want.tm_mon || tm.tm_mday != want.tm_mday ||
            tm.tm_hour != want.tm_hour || tm.tm_min != want.tm_min || tm.tm_sec != want.tm_sec)
                return -EINVAL;
        *ret = (uint64_t) sec * 1000000 + (uint64_t) usec;
        return 0;
}

/* UTF-8 */

/* Length of the valid UTF-8 sequence at p (1..4), or 0: no overlong forms, no surrogates, nothing
 * above U+10FFFF, as RFC 3629 and jansson have it. */
static size_t utf8_sequence_length(const unsigned char *p) {
        unsigned char c = p[0];
        unsigned char lo = 0x80, hi = 0xBF;
        size_t n;

        if (c < 0x80)
                return 1;
        if (c >= 0xC2 && c <= 0xDF)
                n = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
                n = 3;
                if (c == 0xE0)
                        lo = 0xA0;
                else if (c == 0xED)
                        hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
                n = 4;
                if (c == 0xF0)
                        lo = 0x90;
                else if (c == 0xF4)
                        hi = 0x8F;
        } else
                return 0;
        if (p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if (p[i] < 0x80 || p[i] > 0xBF)
                        return 0;
        return n;
}

bool snapshot_utf8_valid(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; p && *p;) {
                size_t n = utf8_sequence_length(p);
                if (n == 0)
                        return false;
                p += n;
        }
        return true;
}

char *snapshot_utf8_sanitize(const char *s) {
        if (!s)
                return NULL;
        /* Each invalid byte becomes the 3 bytes of U+FFFD. */
        char *out = malloc(strlen(s) * 3 + 1), *o = out;
        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                size_t n = utf8_sequence_length(p);
                if (n == 0) {
                        memcpy(o, "\xEF\xBF\xBD", 3);
                        o += 3;
                        p++;
                } else {
                        memcpy(o, p, n);
                        o += n;
                        p += n;
                }
        }
        *o = 0;
        return out;
}

/* s, or a copy in which every invalid UTF-8 sequence is U+FFFD, in place of *s. */
static int utf8_in_place(char **s) {
        if (!*s || snapshot_utf8_valid(*s))
                return 0;
        char *clean = snapshot_utf8_sanitize(*s);
        if (!clean)
                return -ENOMEM;
        free(*s);
        *s = clean;
        return 0;
}

/* What the kernel reports of a process (comm, exe, argv) is any bytes, and anyone may name their
 * process so; a snapshot holds UTF-8: invalid sequences become U+FFFD, as every export writes them,
 * and comm is cut to what fits, at the end of a character. */
int snapshot_process_make_utf8(Process *p) {
        if (!snapshot_utf8_valid(p->comm)) {
                _cleanup_free_ char *clean = snapshot_utf8_sanitize(p->comm);
                if (!clean)
                        return -ENOMEM;
                size_t n = strlen(clean);
                if (n >= sizeof(p->comm))
                        for (n = sizeof(p->comm) - 1; n > 0 && ((unsigned char) clean[n] & 0xC0) == 0x80; n--)
                                ;
                memset(p->comm, 0, sizeof(p->comm));
                memcpy(p->comm, clean, n);
        }
        int r = utf8_in_place(&p->exe);
        for (size_t j = 0; r >= 0 && p->argv && p->argv[j]; j++)
                r = utf8_in_place(&p->argv[j]);
        return r;
}
