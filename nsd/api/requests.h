/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * requests.h: what nsd answers. ONE table (requests.c) holds every request type: its name,
 * its size (nsd_request_size() of nsd-protocol.h), which flags are valid, which flag brings
 * a descriptor, a check of its other fields, and its handler. A new request is one row.
 *
 * Lifecycle of a request (one per connection at a time, see conn.h):
 *  1. conn.c reads a datagram and calls request_dispatch(). The header (nsd_msg_check), the
 *     row's checks and the descriptor count are verified; a malformed message gets an
 *     NSD_REP_ERROR saying why, a warning naming uid and pid, and its connection is closed.
 *  2. The handler runs. It answers at once (returns 0 after request_reply(), or -errno with
 *     r->why for an NSD_REP_ERROR; the connection stays), or it returns REQUEST_PENDING:
 *       - waiting on the user database (policy.c, LookupTimeoutSec=): request_need_managed()
 *         continues the request in the loop when the answer comes, or fails it with
 *         -ETIMEDOUT;
 *       - waiting on a path-walk helper child (child.c, PathWalkTimeoutSec=): HIDE;
 *       - streaming (LIST, SHOW): request_produce() makes parts as the socket drains.
 *     Meanwhile the connection reads nothing more; every other connection is served.
 *  3. request_finish() sends the error (if any) and lets the connection read the next one.
 * A client that goes away meanwhile orphans its request (r->conn = NULL): a continuation
 * then does nothing (no namespace created, no session opened for nobody).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nsd-protocol.h"
#include "server.h"
#include "transport/conn.h"

#define REQUEST_PENDING 1

/* The most descriptors a request carries (SESSION_OPEN, JOIN_SESSION: a pidfd). */
#define REQUEST_FDS_MAX 1

typedef int (*RequestHandler)(Request *r);
typedef int (*RequestCheck)(const void *msg, const char **ret_why);

typedef struct RequestType {
        uint16_t type;
        const char *name;
        size_t size;          /* sizeof its struct; == nsd_request_size(type) */
        size_t flags_offset;  /* offset of its uint32_t flags field, 0: none */
        uint32_t flags_valid; /* the flags it knows */
        uint32_t fd_flag;     /* with this flag set it carries one descriptor; 0: never */
        RequestCheck check;   /* reserved fields, strings, ... (NULL: nothing more) */
        RequestHandler handler;
} RequestType;

struct Request {
        unsigned n_ref;
        Server *server;
        Conn *conn; /* NULL once the client is gone */
        uid_t uid;  /* the caller, from SO_PEERCRED */
        pid_t pid;
        struct ucred sender; /* who sent this request (SCM_CREDENTIALS, conn_sender()) */
        const RequestType *type;
        uint32_t seq;
        int fds[REQUEST_FDS_MAX];
        size_t n_fds;
        char *why; /* g_malloc()ed reason for an NSD_REP_ERROR */
        bool finished;
        /* a handler's continuation and its state */
        RequestHandler next;
        bool (*produce)(Request *r); /* streaming: true when the last part was sent */
        void *data;
        void (*data_free)(void *data);
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX];
        } msg;
};

/* The row of a request type, NULL for an unknown one. */
const RequestType *request_type_get(uint16_t type);
const char *request_type_name(uint16_t type); /* "unknown" */
/* Every row: for the unit tests (size == nsd_request_size(type), names, handlers). */
const RequestType *request_types(size_t *ret_n);

/* conn.c: one datagram of n bytes (n may exceed NSD_MSG_SIZE_MAX after MSG_TRUNC) with
 * n_fds descriptors (fds are taken: closed or kept by the request), ctrunc when the kernel
 * dropped descriptors. Starts a request, or refuses the message (see the top). */
void request_dispatch(Conn *c, Server *s, const void *buf, size_t n, int *fds, size_t n_fds,
                      bool ctrunc);

Request *request_ref(Request *r);
void request_unref(Request *r);
/* The client left: the request goes on without a connection, replies go nowhere. */
void request_orphan(Request *r);
/* Send a reply part of the request (0 or -ECONNRESET, see conn_send()). */
int request_reply(Request *r, const void *msg, size_t len, const int *fds, size_t n_fds);
/* The request is done: error < 0 sends an NSD_REP_ERROR (r->why or strerror). Once. */
void request_finish(Request *r, int error);
/* conn.c: the socket drained; make more parts of a streaming reply. */
void request_produce(Request *r);

/* Continue with next(r) once the policy says uid is managed (at once when no NSS lookup is
 * needed or the answer is cached); -ENXIO (not managed, with the reason), -ETIMEDOUT or the
 * lookup's error otherwise. Returns what next() returned, or REQUEST_PENDING. */
int request_need_managed(Request *r, uid_t uid, RequestHandler next);
