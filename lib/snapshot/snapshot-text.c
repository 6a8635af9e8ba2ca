/* snapshot-text.c: the strings of a snapshot: times as text, and UTF-8 made of what the kernel
 * reports */
#include "snapshot/snapshot-text.h"

#include <time.h>

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
