/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linger.h: how long a namespace outlives its last session (Linger= not forever). When a
 * uid's last session ends, the countdown of Linger= starts (linger_arm()); a JOIN or a
 * SESSION_OPEN meanwhile stops it (linger_cancel()). When it is over, the namespace is
 * released only if it is EMPTY:
 *   - no session,
 *   - no process inside it (nsprocs.h: a tmux server, a nohup job, systemd --user), and
 *   - no mount in it that the user made (mounts.h: told apart from the host's by what each
 *     mount is, against the baseline taken at creation; a namespace without a known baseline
 *     is kept).
 * A namespace that is not empty is looked at again after Linger= (at least
 * LINGER_RECHECK_SEC); "Keeping the namespace of uid N: ..." says why, at info level the first
 * time. An empty one is handed to the owner's release callback; a release that fails (its pin
 * cannot be removed: everything stays as it is) is tried again after LINGER_RELEASE_RETRY_SEC.
 *
 * The countdowns are keyed by uid. Linger knows users only through its owner (LingerOps: the
 * registry, users.h), never frees one and never calls up: it asks and reports.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"

/* A JOIN of a namespace that has no session keeps it at least this long, so the
 * SESSION_OPEN that follows a JOIN finds it even with Linger=0. Also the least time an
 * adopted namespace without sessions is kept after nsd starts. */
#define LINGER_JOIN_GRACE_SEC 30
/* A namespace linger kept (a process, a mount) is looked at again after at least this. */
#define LINGER_RECHECK_SEC 10
/* A release that could not unpin is tried again after this. */
#define LINGER_RELEASE_RETRY_SEC 5

typedef struct LingerOps {
        /* uid's user, NULL when nsd holds no namespace of uid (any more). */
        User *(*lookup)(uid_t uid, void *userdata);
        /* u is empty: release it (why: for the log). 0, or -errno when it stays. */
        int (*release)(User *u, const char *why, void *userdata);
        /* Tests: u's mount table (as userns_read_mountinfo()); NULL: the real one. */
        int (*read_mountinfo)(const UserNs *ns, size_t max, char **ret, size_t *ret_len);
} LingerOps;

/* config: the one in force (Linger=, read whenever a countdown starts); proc_dir: where the
 * scan for processes looks ("/proc"; a test's fake). ops and userdata: the owner. */
Linger *linger_new(const Config *config, const char *proc_dir, const LingerOps *ops,
                   void *userdata);
/* Stop every countdown; a scan of /proc under way reports to nobody. */
void linger_free(Linger *l);

/* Start (or restart) uid's countdown: Linger=, at least min_sec; nothing with
 * Linger=forever. */
void linger_arm(Linger *l, uid_t uid, int64_t min_sec);
/* Stop uid's countdown (a session or a JOIN came). */
void linger_cancel(Linger *l, uid_t uid);
/* uid's namespace is gone: forget what linger knew of it. */
void linger_forget(Linger *l, uid_t uid);
/* Is a countdown of uid under way (tests, status)? */
bool linger_armed(const Linger *l, uid_t uid);
