/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * errno-util.h: errors. Which may pass, and the one way nsd says why something failed: a
 * function returns -errno and, for whoever asked, fills char **ret_why with a g_malloc()ed
 * message (sd_bus_error's errno plus text); why_set() does both in one line:
 *     return why_set(ret_why, EPERM, "only root may ask for uid %u", uid);
 * Callbacks hand a borrowed const char *why on.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>

/* Errors that may pass (a loaded machine: a pids cgroup limit, memory pressure, a full
 * descriptor table, a busy mount, a signal): EAGAIN, ENOMEM, EMFILE, ENFILE, EINTR, ETIMEDOUT,
 * EBUSY, ENOSPC, ENOBUFS. Such an error never removes or replaces anything (DESIGN.md "Never
 * lose"); what failed is retried. err may be positive or negative. */
static inline bool errno_may_pass(int err) {
        switch (err < 0 ? -err : err) {
        case EAGAIN:
        case ENOMEM:
        case EMFILE:
        case ENFILE:
        case EINTR:
        case ETIMEDOUT:
        case EBUSY:
        case ENOSPC:
        case ENOBUFS:
                return true;
        default:
                return false;
        }
}

/* The errno of a refusal because a call nsd made for the request failed with err (nsd's own
 * failure, not the client's: "nsd could not ..."): EAGAIN, which the client retries, when err
 * may pass; err itself otherwise (EIO for 0). err may be positive or negative; the result is
 * positive.
 * errno_retry_hint(err) is the message's tail to go with it: "; retry" or "". */
static inline int errno_own_failure(int err) {
        if (err == 0) /* never a success for a refusal */
                return EIO;
        return errno_may_pass(err) ? EAGAIN : (err < 0 ? -err : err);
}
static inline const char *errno_retry_hint(int err) {
        return errno_may_pass(err) ? "; retry" : "";
}

/* *why (freed first, when set) = the message; returns -abs(error). why may be NULL (then only
 * the error). */
int why_set(char **why, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int why_setv(char **why, int error, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));

/* For what is said once per reason while it is asked again (a refusal linger or a unit
 * repeats): is why (NULL: the trouble is over) not the *last one? *last becomes why. The
 * caller logs news at its level, the same reason again at debug. */
bool why_is_news(char **last, const char *why);
