/* output.c: how the client writes to the terminal: tty and UTF-8 detection, timestamps */
#include "output.h"

#include <langinfo.h>
#include <pwd.h>
#include <time.h>

#include "ctl-log.h"

#define USEC_PER_SEC UINT64_C(1000000)

/* Asked once: a pager (pager.c) may take stdout's place, and the output stays for a terminal. */
bool output_is_tty(void) {
        static int tty = -1;
        if (tty < 0)
                tty = isatty(STDOUT_FILENO);
        return tty;
}

bool locale_is_utf8(void) {
        const char *set = nl_langinfo(CODESET);
        return set && streq(set, "UTF-8");
}

bool output_use_unicode(void) {
        return output_is_tty() && locale_is_utf8();
}

const char *output_dash(void) {
        return locale_is_utf8() ? "—" : "-";
}

static bool local_tm(uint64_t usec, struct tm *tm) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        return localtime_r(&t, tm) != NULL;
}

char *format_timestamp(uint64_t usec, char *buf, size_t len) {
        struct tm tm;
        if (usec == 0 || !local_tm(usec, &tm))
                snprintf(buf, len, "never");
        else if (strftime(buf, len, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, len, "%" PRIu64, usec);
        return buf;
}

char *format_timestamp_us(uint64_t usec, char *buf, size_t len) {
        struct tm tm;
        char base[32];
        if (!local_tm(usec, &tm) || strftime(base, sizeof(base), "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(base, sizeof(base), "%" PRIu64, usec / USEC_PER_SEC);
        snprintf(buf, len, "%s.%06" PRIu64, base, usec % USEC_PER_SEC);
        return buf;
}

char *format_timestamp_rfc3339(uint64_t usec, char *buf, size_t len) {
        struct tm tm;
        time_t t = (time_t) (usec / USEC_PER_SEC);
        char base[32];
        if (!gmtime_r(&t, &tm) || strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                snprintf(base, sizeof(base), "1970-01-01T00:00:00");
        snprintf(buf, len, "%s.%06" PRIu64 "Z", base, usec % USEC_PER_SEC);
        return buf;
}

/* The two largest units of d seconds: "2d 3h", "5h 12min", "3min 4s", "9s". */
static void format_span(uint64_t d, char *buf, size_t len) {
        static const struct {
                const char *suffix;
                uint64_t seconds;
        } units[] = { { "d", 86400 }, { "h", 3600 }, { "min", 60 }, { "s", 1 } };
        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                if (d < units[i].seconds && i + 1 < ELEMENTSOF(units))
                        continue;
                uint64_t rest = i + 1 < ELEMENTSOF(units) ? d % units[i].seconds / units[i + 1].seconds : 0;
                if (rest > 0)
                        snprintf(buf, len, "%" PRIu64 "%s %" PRIu64 "%s", d / units[i].seconds, units[i].suffix, rest,
                                 units[i + 1].suffix);
                else
                        snprintf(buf, len, "%" PRIu64 "%s", d / units[i].seconds, units[i].suffix);
                return;
        }
}

char *format_timestamp_relative(uint64_t usec, uint64_t now, char *buf, size_t len) {
        char span[32];
        if (usec == 0) {
                snprintf(buf, len, "%s", "");
                return buf;
        }
        bool past = usec <= now;
        format_span((past ? now - usec : usec - now) / USEC_PER_SEC, span, sizeof(span));
        snprintf(buf, len, past ? "%s ago" : "in %s", span);
        return buf;
}

char *format_user(uint32_t uid, char *buf, size_t len) {
        struct passwd pw, *found = NULL;
        char scratch[1024];
        if (getpwuid_r((uid_t) uid, &pw, scratch, sizeof(scratch), &found) == 0 && found && found->pw_name[0])
                snprintf(buf, len, "%s", found->pw_name);
        else
                snprintf(buf, len, "%" PRIu32, uid);
        return buf;
}

int output_flush(void) {
        int r = fflush_errno(stdout);
        return r < 0 ? ctl_error_errno(r, "Failed to write the output: %m") : 0;
}
