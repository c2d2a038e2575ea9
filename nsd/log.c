/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

static bool use_journal;
static int max_level = LOG_INFO;

/* systemd sets JOURNAL_STREAM=dev:ino when stderr is connected to the journal. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == dev && st.st_ino == ino;
}

void log_setup(enum log_target target, int level) {
        max_level = level;
        use_journal = target == LOG_TARGET_JOURNAL ||
                      (target == LOG_TARGET_AUTO && stderr_is_journal());
}

bool log_to_journal(void) {
        return use_journal;
}

static void log_write(int level, int error, uid_t uid, const char *event, const char *file,
                      int line, const char *func, const char *fmt, va_list ap) {
        char msg[2048];

        errno = error < 0 ? -error : error; /* for %m */
        vsnprintf(msg, sizeof msg, fmt, ap);

        if (!use_journal) {
                fprintf(stderr, "<%d>%s\n", level, msg);
                return;
        }
        char uidf[32] = "", errf[32] = "";
        if (uid != (uid_t) -1)
                snprintf(uidf, sizeof uidf, "USER_ID=%u", (unsigned) uid);
        if (error != 0)
                snprintf(errf, sizeof errf, "ERRNO=%d", error < 0 ? -error : error);
        /* sd_journal_send stops at the first NULL: keep optional fields last, filled or "" */
        sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", level, "SYSLOG_IDENTIFIER=nsd",
                        "CODE_FILE=%s", file ? file : "", "CODE_LINE=%d", line,
                        "CODE_FUNC=%s", func ? func : "", "NSD_EVENT=%s", event ? event : "",
                        "%s", uidf[0] ? uidf : "USER_ID=", "%s", errf[0] ? errf : "ERRNO=", NULL);
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *fmt, ...) {
        if (level <= max_level) {
                va_list ap;
                va_start(ap, fmt);
                log_write(level, error, (uid_t) -1, NULL, file, line, func, fmt, ap);
                va_end(ap);
        }
        return error == 0 ? 0 : -abs(error);
}

int log_event(int level, int error, uid_t uid, const char *event, const char *fmt, ...) {
        if (level <= max_level) {
                va_list ap;
                va_start(ap, fmt);
                log_write(level, error, uid, event, NULL, 0, NULL, fmt, ap);
                va_end(ap);
        }
        return error == 0 ? 0 : -abs(error);
}

bool ratelimit_below(RateLimit *rl, int64_t interval_usec, unsigned burst,
                     unsigned *ret_suppressed) {
        struct timespec ts;
        int64_t now;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
        if (ret_suppressed)
                *ret_suppressed = 0;
        if (rl->begin_usec == 0 || now - rl->begin_usec >= interval_usec) {
                if (ret_suppressed)
                        *ret_suppressed = rl->suppressed;
                rl->begin_usec = now;
                rl->n = 0;
                rl->suppressed = 0;
        }
        if (rl->n < burst) {
                rl->n++;
                return true;
        }
        rl->suppressed++;
        return false;
}
