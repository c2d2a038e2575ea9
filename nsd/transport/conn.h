/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conn.h: nsd's sockets and client connections. Nothing here ever blocks.
 *
 * Two doors (DESIGN.md "The login path is sacred"):
 *   user socket (/run/nsd/socket, mode 0666): everyone; unprivileged callers share
 *     MaxConnections= and each uid has MaxConnectionsPerUser= and a request rate limit
 *     (RequestRatePerUser=, RequestBurstPerUser=: a token bucket; a uid past it is not
 *     refused but read more slowly, its requests wait in its own socket);
 *   root socket (/run/nsd/root.socket, mode 0600): uid 0 only; any other peer is refused
 *     (SO_PEERCRED), even if the file mode let it in. pam_nsjoin uses it.
 * Root's connections (on either socket) count against MaxRootConnections= only and are not
 * rate limited; at that bound nsd stops accepting on the root socket until one closes (the
 * next login waits in the listen backlog rather than failing) and refuses further root
 * connections on the user socket. Root's sockets and connections are served at a higher
 * GLib priority than everyone else's, so no unprivileged client takes root's slots or time.
 *
 * Every connection:
 *   - is non-blocking; replies that the socket does not take at once wait in a queue of at
 *     most MaxQueuedReplies= messages (descriptors in it are duplicates, so a namespace
 *     released meanwhile cannot turn into another descriptor);
 *   - has at most one call in flight (request.h): the next message is read only when the
 *     previous call has finished; a streaming call (LIST, SHOW) makes its parts as the socket
 *     drains;
 *   - is dropped when its queue would overflow, when its replies make no progress for
 *     ReplyTimeoutSec=, or when it sits idle (no request in flight, nothing to send) for
 *     IdleTimeoutSec=. Drops and refusals are logged naming uid and pid, rate limited per
 *     uid and in all, each kind (refused, idle, slow, throttled, malformed) on its own, so
 *     thousands of one kind cannot hide another.
 * accept() failing with EMFILE/ENFILE pauses that socket with a growing delay (10 ms up to
 * 2 s) and one log line, instead of spinning.
 *
 * Timers use one GSource per connection (its ready time), so thousands of idle connections
 * cost no timer wheel.
 */
/*
 * What a message becomes is not this file's business: the transport hands every datagram to
 * the ConnHandler it was given at creation (as libfuse's fuse_session_new() takes its ops),
 * and knows the call that follows only as an opaque pointer. transport/request.c is the
 * handler nsd binds (server.c); the unit tests bind fakes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "base/nsd-forward.h"
#include "policy/conf.h"

typedef enum ConnKind {
        CONN_KIND_USER, /* the socket for everyone */
        CONN_KIND_ROOT, /* root's own socket */
        _CONN_KIND_MAX,
} ConnKind;

/* Counters, for tests and for nsd's log. */
typedef struct ConnStats {
        unsigned accepted;
        unsigned refused_limit; /* MaxConnections=, MaxConnectionsPerUser=, MaxRootConnections= */
        unsigned refused_not_root; /* a peer other than uid 0 on the root socket */
        unsigned refused_setuid;   /* MaxSetuidConnectionsPerUser= */
        unsigned dropped_idle;
        unsigned dropped_slow;       /* replies made no progress for ReplyTimeoutSec= */
        unsigned dropped_overflow;   /* more than MaxQueuedReplies= waiting */
        unsigned dropped_bad;        /* a malformed message */
        unsigned dropped_no_request; /* a set-uid program's, past SetuidRequestTimeoutSec= */
        unsigned peer_pidfds;        /* pidfds from SO_PEERPIDFD (Linux 6.5 on) */
        unsigned throttled;          /* times a connection waited for its uid's rate limit */
        unsigned accept_backoffs;    /* times a socket paused on EMFILE/ENFILE */
        unsigned requests;           /* requests read */
} ConnStats;

/* config: the one in force (a reload refills the same struct, then calls
 * conn_manager_reconfigure()); s: what requests are dispatched with. */
/* What becomes of a connection's messages. Each is called on the loop. */
typedef struct ConnHandler {
        /* One datagram of n bytes (n may exceed NSD_MSG_SIZE_MAX after MSG_TRUNC) with n_fds
         * descriptors (taken: the handler closes or keeps them), ctrunc when the kernel
         * dropped descriptors. The handler answers with conn_send() and, when its answer
         * takes longer, makes it a call in flight: conn_begin_call(). userdata: the one given
         * to conn_manager_new(). */
        void (*message)(Conn *c, const void *buf, size_t n, int *fds, size_t n_fds, bool ctrunc,
                        void *userdata);
        /* The socket drained while the call in flight asked for it (conn_want_drained()). */
        void (*drained)(void *call);
        /* The connection is gone while call was in flight: the call lets go of it (it never
         * calls conn_call_finished() then). */
        void (*gone)(void *call);
} ConnHandler;

/* config: the one in force (a reload refills the same struct, then calls
 * conn_manager_reconfigure()); handler (kept, not copied) and its userdata: what becomes of
 * the messages. */
ConnManager *conn_manager_new(const Config *config, const ConnHandler *handler, void *userdata);
void conn_manager_free(ConnManager *m);

/* Serve the listening socket fd (taken; non-blocking) as kind. */
int conn_manager_listen(ConnManager *m, ConnKind kind, int fd);

/* A connected socket (taken) whose peer is uid/pid: what accept() does after SO_PEERCRED;
 * unit tests call it with socketpairs and any uid. The limits apply: a refused connection
 * gets an NSD_REP_ERROR and is closed (returns -EUSERS or -EPERM); else 0. */
int conn_manager_add(ConnManager *m, ConnKind kind, int fd, uid_t uid, pid_t pid);

/* Whose connections count together against MaxConnectionsPerUser= (and its rate limit):
 * fn(uid, gid) says the person, the owner of the subordinate id range the peer's uid (or,
 * outside MinUid..MaxUid, its gid) lies in, or uid itself (gid -1: not known). NULL: uid. */
void conn_manager_set_person_fn(ConnManager *m, uid_t (*fn)(uid_t uid, gid_t gid, void *userdata),
                                void *userdata);

/* The config changed (reload): bounds and timeouts apply from now on. */
void conn_manager_reconfigure(ConnManager *m);

const ConnStats *conn_manager_stats(const ConnManager *m);
unsigned conn_manager_count(const ConnManager *m); /* every connection */
/* the connections of one socket (METRICS) */
unsigned conn_manager_count_kind(const ConnManager *m, ConnKind kind);
/* root's connections, or those of uid's person (all the subuids of its owner) */
unsigned conn_manager_count_uid(const ConnManager *m, uid_t uid);
/* Is nsd accepting on this socket now (false while paused: EMFILE backoff, root bound)? */
bool conn_manager_accepting(const ConnManager *m, ConnKind kind);

/* For the handler. */
uid_t conn_uid(const Conn *c);
pid_t conn_pid(const Conn *c);
/* A pidfd of conn_pid(), opened when the connection was added (non-root peers only; -1:
 * none), so that the pid names the connecting process for as long as it lives. */
int conn_pidfd(const Conn *c);
/* Who sent the datagram being served: SCM_CREDENTIALS, which the kernel fills in (a sender
 * can name another pid only with CAP_SYS_ADMIN over its pid namespace, and only a pid of
 * that namespace). pid 0: not known. */
struct ucred conn_sender(const Conn *c);
ConnKind conn_kind(const Conn *c);
/* Send a reply (len <= NSD_MSG_SIZE_MAX, at most NSD_MSG_FDS_MAX descriptors, which stay
 * the caller's): at once, or queued. Returns 0, or -ECONNRESET when the connection is gone
 * or was dropped by this call (overflow, a failed send). */
int conn_send(Conn *c, const void *msg, size_t len, const int *fds, size_t n_fds);
/* May a streaming reply send its next part now (nothing queued, connection alive)? */
bool conn_can_send(const Conn *c);
/* call is in flight now: nothing more is read from c until conn_call_finished(); when c is
 * dropped meanwhile, the handler's gone(call) says so. */
void conn_begin_call(Conn *c, void *call);
/* The call in flight has finished: read the next message when there is one. */
void conn_call_finished(Conn *c);
/* The call in flight has more to send: the handler's drained(call) when the socket drains. */
void conn_want_drained(Conn *c);
/* A warning about a malformed message, rate limited per uid and in all (at most 5 per uid
 * and 50 in all each 10 s, counted apart from conn.c's refusals, drops and throttles; the
 * next line says how many were suppressed). */
void conn_log_event(Conn *c, int level, const char *event, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
/* ... as the journal's event (log_event_reason(): NSD_EVENT=, MESSAGE_ID=, USER_ID= the
 * client's uid, NSD_REASON=); conn_log() without one. */
#define conn_log(c, level, ...) conn_log_event((c), (level), NULL, NULL, __VA_ARGS__)
/* A malformed message was answered: close once the error reply is sent. */
void conn_close_after_reply(Conn *c);
