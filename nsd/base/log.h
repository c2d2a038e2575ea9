/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsd's logging: to the journal when stderr is connected to it (or --log-target=journal),
 * otherwise to stderr with <N> syslog prefixes. Error helpers return -abs(error), so
 *     return log_error_errno(r, "Failed to pin namespace of uid %u: %m", uid);
 * logs and propagates in one line; %m prints strerror(abs(error)). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <syslog.h>

enum log_target { LOG_TARGET_AUTO, LOG_TARGET_STDERR, LOG_TARGET_JOURNAL };

void log_setup(enum log_target target, int max_level);
bool log_to_journal(void);
/* A descriptor for a program nsd runs (a namespace's init script) to write its output to:
 * a journal stream of its own (sd_journal_stream_fd(), identifier, LOG_INFO) when nsd logs
 * to the journal, else a copy of nsd's stderr. The caller closes it. -errno. */
int log_stream_fd(const char *identifier);

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* A structured event: MESSAGE plus USER_ID=uid (when uid != (uid_t)-1), NSD_EVENT=event,
 * MESSAGE_ID= when the event has one (log_event_ids()) and NSD_REASON=reason (when not NULL:
 * why a namespace was released, a login refused, a client dropped) in the journal; on stderr
 * the same message. Returns -abs(error) (0 when error is 0). */
int log_event_reason(int level, int error, uid_t uid, const char *event, const char *reason,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
#define log_event(level, error, uid, event, ...) \
        log_event_reason((level), (error), (uid), (event), NULL, __VA_ARGS__)

/*
 * The events that explain themselves: one fixed MESSAGE_ID per event type, which the
 * catalog (systemd/nsd.catalog, catalog(7)) describes, so `journalctl -x` says what happened
 * and what to do. An event not in the table carries no MESSAGE_ID. The ids never change
 * once released; a new event type gets a new one (`systemd-id128 new`).
 */
typedef struct LogEventId {
        const char *event;      /* NSD_EVENT= */
        const char *message_id; /* 32 lowercase hex digits */
} LogEventId;

/* Every row, for the unit test that holds the table and the catalog together. */
const LogEventId *log_event_ids(size_t *ret_n);
/* The MESSAGE_ID of event, NULL when it has none. */
const char *log_event_message_id(const char *event);

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, (error), __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)

/*
 * Rate limiting for messages that a client can cause (a refused connection, a dropped slow
 * reader, a throttled uid): at most `burst` lines per `interval_usec` for one RateLimit.
 * conn.c keeps one per uid and one for all uids, so neither one noisy uid nor a range of
 * thousands of them (a user's subuids) can flood the journal, which would slow nsd itself.
 *
 *     if (ratelimit_below(&u->log_rl, 10 * USEC, 5, &suppressed)) log_warning(...);
 *
 * ratelimit_below() is true while the line may be logged; *ret_suppressed (may be NULL)
 * then tells how many lines were held back in the previous interval (say so once).
 */
typedef struct RateLimit {
        int64_t begin_usec; /* CLOCK_MONOTONIC start of the current interval */
        unsigned n;         /* lines in it */
        unsigned suppressed;
} RateLimit;

bool ratelimit_below(RateLimit *rl, int64_t interval_usec, unsigned burst,
                     unsigned *ret_suppressed);

/*
 * Lines that a user causes outside conn.c (a request's events, mode private's handling of a
 * user's FUSE mounts, a user's path walks): cause is the uid whose action it was (0: root,
 * never limited). At most 5 lines per uid each 10 s and 50 for all uids together; the next
 * line that passes says how many were held back. log_event_by() is log_event() under that
 * limit (a line above the log level costs nothing); log_event_by_reason() with NSD_REASON=.
 */
bool log_user_ratelimit(uid_t cause, unsigned *ret_suppressed);
int log_event_by_reason(uid_t cause, int level, int error, uid_t uid, const char *event,
                        const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 7, 8)));
#define log_event_by(cause, level, error, uid, event, ...) \
        log_event_by_reason((cause), (level), (error), (uid), (event), NULL, __VA_ARGS__)
