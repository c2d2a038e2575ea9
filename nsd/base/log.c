/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "time-util.h"

/* One row per event type that explains itself; systemd/nsd.catalog has an entry for each
 * (tests/unit/nsd/test-log.c holds the two together). Generated once with
 * `systemd-id128 new`; never changed, never reused. */
static const LogEventId log_event_id_table[] = {
        { "namespace-created", "499146dc41e1426d9d47111a47b92a2b" },
        { "namespace-released", "7a6e429f642244e384dcbee3262dc62c" },
        { "release-failed", "c3862b18cf9b4ce9931348ac6dd8996e" },
        { "join-refused", "7cea993f4b9e4a45943b13b8020d2edb" },
        { "lookup-timeout", "7debd2818c134712a9643f1c0c7f0e40" },
        { "namespace-repinned", "ceb5cac339124f3290a609f4e65af0e9" },
        { "namespace-adopted", "74f20ee377bf43d286bacfcb99ca20e4" },
        { "pin-removed", "d0e54e7b6a814e9b9156d35bcff9d01b" },
        { "client-dropped", "f04736a3edd5459a95b351ee2c880055" },
        { "connection-refused", "f7c22af95a174671a468a8aa0d2fe5e7" },
        { "message-refused", "070045e5afa84638a65c0abed9442379" },
        { "setup-failed", "79776342b40c474cb1243cde4ec4c9bf" },
        { "setup-refused", "8b0b649e53ec40378a2d0f7fd62ec930" },
        { "fdstore-full", "fc6a0d00278c4e40bb3d746725051d2f" },
        { "volume-busy", "b1d5711c7b07488ba18dfc8d7b089653" },
};

const LogEventId *log_event_ids(size_t *ret_n) {
        *ret_n = sizeof log_event_id_table / sizeof log_event_id_table[0];
        return log_event_id_table;
}

const char *log_event_message_id(const char *event) {
        if (!event)
                return NULL;
        for (size_t i = 0; i < sizeof log_event_id_table / sizeof log_event_id_table[0]; i++)
                if (strcmp(log_event_id_table[i].event, event) == 0)
                        return log_event_id_table[i].message_id;
        return NULL;
}

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

int log_stream_fd(const char *identifier) {
        int fd;

        if (use_journal) {
                fd = sd_journal_stream_fd(identifier, LOG_INFO, false);
                if (fd >= 0) {
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        return fd;
                }
                /* no journal to talk to after all: nsd's own stderr */
        }
        fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        return fd >= 0 ? fd : -errno;
}

/* One journal field "NAME=value" formatted into buf (cut at size - 1), as an iovec. */
static struct iovec field(char *buf, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static struct iovec field(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        if (k < 0)
                k = 0;
        return (struct iovec) { .iov_base = buf,
                                .iov_len = (size_t) k >= size ? size - 1 : (size_t) k };
}

__attribute__((format(printf, 9, 0))) static void log_write(int level, int error, uid_t uid,
                                                            const char *event, const char *reason,
                                                            const char *file, int line,
                                                            const char *func, const char *fmt,
                                                            va_list ap) {
        static const char prefix[] = "MESSAGE=";
        char msg[sizeof prefix - 1 + 2048];
        char *text = msg + sizeof prefix - 1;

        errno = error < 0 ? -error : error; /* for %m */
        memcpy(msg, prefix, sizeof prefix - 1);
        vsnprintf(text, sizeof msg - (sizeof prefix - 1), fmt, ap);

        if (!use_journal) {
                fprintf(stderr, "<%d>%s\n", level, text);
                return;
        }

        /* Only the fields that exist, as systemd's log_struct(): no empty USER_ID= or ERRNO=
         * on every entry. */
        static char ident[] = "SYSLOG_IDENTIFIER=nsd";
        char prio[16], code_file[256], code_line[32], code_func[128], ev[64];
        char uidf[32], errf[32], midf[64], reasonf[1024];
        const char *mid = log_event_message_id(event);
        struct iovec iov[11];
        size_t n = 0;

        iov[n++] = (struct iovec) { .iov_base = msg, .iov_len = strlen(msg) };
        iov[n++] = field(prio, sizeof prio, "PRIORITY=%d", level);
        iov[n++] = (struct iovec) { .iov_base = ident, .iov_len = sizeof ident - 1 };
        if (file) {
                iov[n++] = field(code_file, sizeof code_file, "CODE_FILE=%s", file);
                iov[n++] = field(code_line, sizeof code_line, "CODE_LINE=%d", line);
        }
        if (func)
                iov[n++] = field(code_func, sizeof code_func, "CODE_FUNC=%s", func);
        if (event)
                iov[n++] = field(ev, sizeof ev, "NSD_EVENT=%s", event);
        if (mid)
                iov[n++] = field(midf, sizeof midf, "MESSAGE_ID=%s", mid);
        if (reason)
                iov[n++] = field(reasonf, sizeof reasonf, "NSD_REASON=%s", reason);
        if (uid != (uid_t) -1)
                iov[n++] = field(uidf, sizeof uidf, "USER_ID=%u", (unsigned) uid);
        if (error != 0)
                iov[n++] = field(errf, sizeof errf, "ERRNO=%d", error < 0 ? -error : error);
        sd_journal_sendv(iov, (int) n);
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *fmt, ...) {
        if (level <= max_level) {
                va_list ap;
                va_start(ap, fmt);
                log_write(level, error, (uid_t) -1, NULL, NULL, file, line, func, fmt, ap);
                va_end(ap);
        }
        return error == 0 ? 0 : -abs(error);
}

int log_event_reason(int level, int error, uid_t uid, const char *event, const char *reason,
                     const char *fmt, ...) {
        if (level <= max_level) {
                va_list ap;
                va_start(ap, fmt);
                log_write(level, error, uid, event, reason, NULL, 0, NULL, fmt, ap);
                va_end(ap);
        }
        return error == 0 ? 0 : -abs(error);
}

bool ratelimit_below(RateLimit *rl, int64_t interval_usec, unsigned burst,
                     unsigned *ret_suppressed) {
        int64_t now = (int64_t) now_usec(CLOCK_MONOTONIC);

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

/* ---- lines a user can cause, outside conn.c ------------------------------------------- */

/* Per uid: at most USER_LOG_BURST lines each USER_LOG_INTERVAL_USEC; all uids together at
 * most USER_LOG_BURST_ALL. A small open-addressed table: a slot whose interval is over is
 * reused, and a uid that finds no slot (thousands of uids at once) counts against the
 * limit of all uids only. */
#define USER_LOG_SLOTS 1024u
#define USER_LOG_PROBES 16u
#define USER_LOG_INTERVAL_USEC (10 * 1000000LL)
#define USER_LOG_BURST 5u
#define USER_LOG_BURST_ALL 50u

typedef struct UserLogSlot {
        bool used;
        uid_t uid;
        RateLimit rl;
} UserLogSlot;

static UserLogSlot user_log_slots[USER_LOG_SLOTS];
static RateLimit user_log_all;

static int64_t now_monotonic_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static RateLimit *user_log_slot(uid_t uid) {
        unsigned h = (unsigned) uid * 2654435761u;
        int64_t now = now_monotonic_usec();
        UserLogSlot *free_slot = NULL;

        for (unsigned i = 0; i < USER_LOG_PROBES; i++) {
                UserLogSlot *s = &user_log_slots[(h + i) % USER_LOG_SLOTS];
                if (s->used && s->uid == uid)
                        return &s->rl;
                if (!free_slot && (!s->used || now - s->rl.begin_usec >= USER_LOG_INTERVAL_USEC))
                        free_slot = s;
        }
        if (!free_slot)
                return NULL;
        *free_slot = (UserLogSlot) { .used = true, .uid = uid };
        return &free_slot->rl;
}

bool log_user_ratelimit(uid_t cause, unsigned *ret_suppressed) {
        RateLimit *rl;
        unsigned held_uid = 0, held_all = 0;

        if (ret_suppressed)
                *ret_suppressed = 0;
        if (cause == 0)
                return true;
        rl = user_log_slot(cause);
        if (rl && !ratelimit_below(rl, USER_LOG_INTERVAL_USEC, USER_LOG_BURST, &held_uid))
                return false;
        if (!ratelimit_below(&user_log_all, USER_LOG_INTERVAL_USEC, USER_LOG_BURST_ALL, &held_all))
                return false;
        if (ret_suppressed)
                *ret_suppressed = held_uid > held_all ? held_uid : held_all;
        return true;
}

int log_event_by_reason(uid_t cause, int level, int error, uid_t uid, const char *event,
                        const char *reason, const char *fmt, ...) {
        unsigned held = 0;
        char msg[2048];
        va_list ap;

        if (level > max_level || !log_user_ratelimit(cause, &held))
                return error == 0 ? 0 : -abs(error);
        errno = error < 0 ? -error : error; /* for %m */
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (held > 0)
                return log_event_reason(level, error, uid, event, reason,
                                        "%s (%u similar line%s suppressed)", msg, held,
                                        held == 1 ? "" : "s");
        return log_event_reason(level, error, uid, event, reason, "%s", msg);
}
