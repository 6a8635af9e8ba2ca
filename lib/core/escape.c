/* escape.c: strings from processes, the daemon and snapshot files made safe to print on a terminal */
#include "core/escape.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ESCAPE_MAX 5 /* "\xNN" and a NUL */

/* The length of the valid UTF-8 sequence at s that is not a C1 control (U+0080..U+009F), or 0. */
static size_t utf8_printable_length(const unsigned char *s) {
        size_t n;
        uint32_t cp, min;
        if (s[0] < 0xc2 || s[0] > 0xf4)
                return 0;
        if (s[0] < 0xe0)
                n = 2, cp = s[0] & 0x1f, min = 0x80;
        else if (s[0] < 0xf0)
                n = 3, cp = s[0] & 0x0f, min = 0x800;
        else
                n = 4, cp = s[0] & 0x07, min = 0x10000;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0)
                return 0;
        if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
                return 0; /* a bidirectional control: it reorders the rest of the terminal's line */
        return n;
}

static bool ascii_only;

void escape_set_ascii_only(bool on) {
        ascii_only = on;
}

/* The escape of the byte c, or NULL (into buf) when it is printed as it is. */
static const char *escape_byte(unsigned char c, char buf[static ESCAPE_MAX]) {
        switch (c) {
        case '\033':
                return "\\e";
        case '\n':
                return "\\n";
        case '\r':
                return "\\r";
        case '\t':
                return "\\t";
        case '\\':
                return "\\\\";
        }
        if (c >= 0x20 && c < 0x7f)
                return NULL;
        snprintf(buf, ESCAPE_MAX, "\\x%02x", c);
        return buf;
}

/* The length of the piece at p printed as it is (a printable ASCII byte, or a printable UTF-8
 * sequence), or 0 when it is escaped (or the end). */
static size_t plain_length(const unsigned char *p) {
        if (*p >= 0x20 && *p < 0x7f && *p != '\\')
                return 1;
        return *p >= 0x80 && !ascii_only ? utf8_printable_length(p) : 0;
}

/* Walk s: call emit for each piece, a run of bytes copied as they are or one escape. Stops
 * early when emit returns false. */
static void escape_walk(const char *s, bool (*emit)(const char *p, size_t n, void *userdata), void *userdata) {
        const unsigned char *p = (const unsigned char *) s;
        char buf[ESCAPE_MAX];
        while (*p) {
                const unsigned char *run = p;
                for (size_t n; (n = plain_length(p)) > 0;)
                        p += n;
                if (p > run && !emit((const char *) run, (size_t) (p - run), userdata))
                        return;
                if (!*p)
                        return;
                const char *e = escape_byte(*p, buf);
                if (!emit(e, strlen(e), userdata))
                        return;
                p++;
        }
}

static bool emit_detect(const char *p, size_t n, void *userdata) {
        bool *changed = userdata;
        /* a piece that is an escape starts with a backslash the input did not have there */
        if (p[0] == '\\') {
                *changed = true;
                return false;
        }
        return true;
}

bool str_needs_escape(const char *s) {
        bool changed = false;
        if (s)
                escape_walk(s, emit_detect, &changed);
        return changed;
}

typedef struct BufSink {
        char *buf;
        size_t size, len;
} BufSink;

static bool emit_buf(const char *p, size_t n, void *userdata) {
        BufSink *b = userdata;
        if (b->len + n < b->size) {
                memcpy(b->buf + b->len, p, n);
                b->len += n;
                return true;
        }
        /* What fits of a run of bytes printed as they are, cut between two of its characters; an
         * escape (it starts with a backslash, which a run never has) is never cut. */
        for (size_t m; p[0] != '\\' && n > 0 && (m = plain_length((const unsigned char *) p)) > 0 &&
                       b->len + m < b->size;
             p += m, n -= m) {
                memcpy(b->buf + b->len, p, m);
                b->len += m;
        }
        return false;
}

size_t str_escape_into(const char *s, char *buf, size_t size) {
        BufSink b = { .buf = buf, .size = size };
        if (s)
                escape_walk(s, emit_buf, &b);
        buf[b.len] = 0;
        return b.len;
}

char *str_escape_buf(const char *s, char *buf, size_t size) {
        (void) str_escape_into(s, buf, size);
        return buf;
}

char *str_escape(const char *s) {
        if (!s)
                return NULL;
        size_t size = strlen(s) * 4 + 1; /* the longest escape of one byte is four characters */
        char *buf = malloc(size);
        return buf ? str_escape_buf(s, buf, size) : NULL;
}

static bool emit_file(const char *p, size_t n, void *userdata) {
        return fwrite(p, 1, n, userdata) == n;
}

int fputs_escaped(const char *s, FILE *out) {
        if (s)
                escape_walk(s, emit_file, out);
        return ferror(out) ? -EIO : 0;
}
