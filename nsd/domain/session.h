/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * session.h: logins counted by nsd. A session belongs to a uid (and to its User, user.h, once
 * nsd holds that uid's namespace), has nsd's id, the leader's pid, start time and PAM
 * service, and a pidfd of the leader: when the leader dies without a close, the pidfd
 * becomes readable and the session ends.
 *
 * Sessions survive nsd restarts (issue 9): each is written to a state file session-<id>
 * (state.h: uid, pid, the leader's start time, service) and its pidfd is put into the
 * service manager's fd store as "session-<id>" (fdstore.h). At start, sessions_restore()
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

#include <stdint.h>
#include <sys/types.h>

#include "domain/user.h"
#include "nsd-protocol.h"
#include "server.h"

/* Without pidfd_open (kernel < 5.3): how often a session leader's pid is checked. */
#define SESSION_POLL_SEC 30

struct Session {
        Server *server;
        uint64_t id;
        uid_t uid;
        User *user; /* NULL while it waits for its uid's namespace (restored) */
        pid_t pid;
        uint64_t start_time; /* the leader's, clock ticks since boot; 0: unknown */
        char service[NSD_SERVICE_MAX];
        int pidfd;   /* -1 in poll mode */
        guint watch; /* pidfd watch or poll timer */
};

/* A session leader's pidfd, checked before anything is opened: *pidfd_io is the pidfd the
 * client sent (it must be of pid; taken: set to -1) or -1, then one is opened for pid. On
 * success *ret_pidfd is the pidfd (or -1 on a kernel without pidfd_open); the leader must
 * not have exited. Returns 0 or -errno with *ret_why (g_malloc()ed): -NSD_ERRNO_NOT_YET
 * when the check failed for a reason that may pass (EMFILE, ENOMEM, ...: retry). */
int session_leader_pidfd(pid_t pid, int *pidfd_io, int *ret_pidfd, char **ret_why);

/* Count a new session of u, leader pid, pidfd (taken; -1: poll the pid). Cannot fail once
 * the limits were checked by the caller (MaxSessionsPerUser=). Logs, notifies, writes its
 * state file and puts its pidfd into the fd store. */
Session *session_open(User *u, pid_t pid, const char *service, int pidfd);
/* The session of uid with id (when not 0) or else by pid; NULL when unknown. */
Session *session_find(Server *s, uid_t uid, uint64_t id, pid_t pid);
/* Live sessions of uid (held or waiting). */
unsigned sessions_of_uid(Server *s, uid_t uid);
/* A session is over: closed, or its leader died. Removes its state file and fd store entry;
 * arms its user's linger after the last one; never frees the user synchronously. */
void session_end(Session *sess);
/* A session dropped with its namespace (a forced release): as session_end() without linger. */
void session_discard(Session *sess);
/* The free function of server->sessions (memory and descriptors only). */
void session_free(gpointer p);

/* At start (server_new()), after the namespaces: the sessions of the state files, checked
 * against their leaders (see above). */
void sessions_restore(Server *s);
/* u's namespace is held now: the restored sessions that waited for it join it. */
void session_attach_waiting(Server *s, User *u);
