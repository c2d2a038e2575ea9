/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * session.h: one login counted by nsd. A session belongs to a uid (and to its User, user.h, once
 * nsd holds that uid's namespace), has nsd's id, the leader's pid, start time and PAM
 * service, and a pidfd of the leader: when the leader dies without a close, the pidfd
 * becomes readable and the session tells its owner (on_exit); the registry (users.h) keeps
 * the sessions, attaches them to their users, and ends them.
 *
 * Sessions survive nsd restarts (issue 9): each is written to a state file session-<id>
 * (state.h: uid, pid, the leader's start time, service) and its pidfd is put into the
 * service manager's fd store as "session-<id>" (fdstore.h). At start, session_restore()
 * takes each state file back and checks it against its leader:
 *   - with the pidfd from the fd store: the pidfd must still be of that pid and not
 *     readable (the leader alive);
 *   - without one (no service manager, the store was flushed by a stop, or its budget left
 *     no room for sessions: fdstore.h): a new pidfd_open() of the pid, and the leader's start
 *     time (/proc/PID/stat) must be the one recorded, so a pid reused by another process is
 *     not taken for the leader. This misses only a pid reused within the same clock tick of
 *     the boot, never in practice; a session whose start time is unknown (0: it could not be
 *     read when the session opened) is taken for ended. The new pidfd is put into the store
 *     again, if the budget has room.
 * A session whose leader is gone ended while nsd was not running ("session-ended", its file
 * removed). A restored session of a uid whose namespace is pending waits for it (counted in
 * STATUS, closable by SESSION_CLOSE) and joins it when it is adopted. Sessions, like the
 * state files, do not outlive a reboot.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"
#include "nsd-protocol.h"

/* Without pidfd_open (kernel < 5.3): how often a session leader's pid is checked. */
#define SESSION_POLL_SEC 30

/* The leader of sess is gone (its pidfd became readable, or its pid no longer exists): the
 * owner ends the session. Called on the loop. */
typedef void (*SessionExitFn)(Session *sess, void *userdata);

struct Session {
        uint64_t id;
        uid_t uid;
        User *user; /* NULL while it waits for its uid's namespace (restored) */
        pid_t pid;
        uint64_t start_time; /* the leader's, clock ticks since boot; 0: unknown */
        char service[NSD_SERVICE_MAX];
        int pidfd;        /* -1 in poll mode */
        guint watch;      /* pidfd watch or poll timer */
        FdStore *fdstore; /* where its pidfd is kept (never NULL) */
        StateDir *state;  /* where its state file is (NULL: none) */
        SessionExitFn on_exit;
        void *userdata;
};

/* A session leader's pidfd, checked before anything is opened: *pidfd_io is the pidfd the
 * client sent (it must be of pid; taken: set to -1) or -1, then one is opened for pid. On
 * success *ret_pidfd is the pidfd (or -1 on a kernel without pidfd_open); the leader must
 * not have exited. Returns 0 or -errno with *ret_why (g_malloc()ed): -NSD_ERRNO_NOT_YET
 * when the check failed for a reason that may pass (EMFILE, ENOMEM, ...: retry). */
int session_leader_pidfd(pid_t pid, int *pidfd_io, int *ret_pidfd, char **ret_why);
/* The leader's start time (clock ticks since boot), if it is still alive now; 0: unknown. */
uint64_t session_leader_start_time(pid_t pid, int pidfd);

/* A session object, watched (on_exit(sess, userdata) when its leader goes; pidfd taken, -1:
 * poll the pid), kept in fdstore and state (the caller's). Attached to nothing, persisted
 * nowhere yet. */
Session *session_new(uint64_t id, uid_t uid, pid_t pid, uint64_t start_time, const char *service,
                     int pidfd, FdStore *fdstore, StateDir *state, SessionExitFn on_exit,
                     void *userdata);
/* Memory and descriptors only. */
void session_free(Session *sess);
/* Write its state file and put its pidfd into the fd store (if the budget has room). */
void session_persist(Session *sess);
/* Remove its state file and its pidfd from the fd store. */
void session_unpersist(Session *sess);

/* At start: the state file name (session-<id>) as its id; false for anything else. */
bool session_id_from_name(const char *name, uint64_t *ret_id);
/* At start: the session of state file name, checked against its leader (see above), watched
 * as session_new() does. 1 and *ret: alive (its pidfd back in the fd store); 0: it ended while
 * nsd was not running (logged, its files removed); -errno: cannot tell now (logged; its file
 * is kept for the next start). */
int session_restore(const char *name, uint64_t id, FdStore *fdstore, StateDir *state,
                    SessionExitFn on_exit, void *userdata, Session **ret);
