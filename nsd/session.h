/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * session.h: logins counted by nsd. A session belongs to a user (user.h), has nsd's id, the
 * leader's pid and PAM service, and a pidfd of the leader: when the leader dies without a
 * close, the pidfd becomes readable and the session ends. Sessions live in memory only.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "nsd-protocol.h"
#include "server.h"
#include "user.h"

/* Without pidfd_open (kernel < 5.3): how often a session leader's pid is checked. */
#define SESSION_POLL_SEC 30

typedef struct Session {
        Server *server;
        uint64_t id;
        User *user;
        pid_t pid;
        char service[NSD_SERVICE_MAX];
        int pidfd;   /* -1 in poll mode */
        guint watch; /* pidfd watch or poll timer */
} Session;

/* A session leader's pidfd, checked before anything is opened: *pidfd_io is the pidfd the
 * client sent (it must be of pid; taken: set to -1) or -1, then one is opened for pid. On
 * success *ret_pidfd is the pidfd (or -1 on a kernel without pidfd_open); the leader must
 * not have exited. Returns 0 or -errno with *ret_why (g_malloc()ed). */
int session_leader_pidfd(pid_t pid, int *pidfd_io, int *ret_pidfd, char **ret_why);

/* Count a new session of u, leader pid, pidfd (taken; -1: poll the pid). Cannot fail once
 * the limits were checked by the caller (MaxSessionsPerUser=). Logs and notifies. */
Session *session_open(User *u, pid_t pid, const char *service, int pidfd);
/* The session with id (when not 0) or else by pid, of u; NULL when unknown. */
Session *session_find(Server *s, User *u, uint64_t id, pid_t pid);
/* A session is over: closed, or its leader died. Arms u's linger after the last one; never
 * frees u synchronously. */
void session_end(Session *sess);
/* The free function of server->sessions. */
void session_free(gpointer p);
