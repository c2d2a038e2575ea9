/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * request.h: the wire side of a request. ONE table (request.c) holds every request type of
 * the protocol: its name, its size (nsd_request_size() of nsd-protocol.h), which flags are
 * valid, which flag brings a descriptor and a check of its other fields. What nsd does with
 * a request is a handler table given to it (RequestHandlers: api/handlers.c's, bound by
 * server.c; fakes in the unit tests), as libfuse's lowlevel ops are given to its session. A
 * new request is one row here and one handler there.
 *
 * Lifecycle of a request (one per connection at a time, see conn.h):
 *  1. conn.c reads a datagram and hands it to request_conn_handler. The header
 *     (nsd_msg_check), the row's checks and the descriptor count are verified; a malformed
 *     message, or a type without a handler, gets an NSD_REP_ERROR saying why, a warning
 *     naming uid and pid, and its connection is closed.
 *  2. The handler runs. It answers at once (returns 0 after request_reply(), or -errno with
 *     r->why for an NSD_REP_ERROR: request_refuse(); the connection stays), or it returns
 *     REQUEST_PENDING and holds a reference until it continues on the loop (a lookup in the
 *     user database, a path-walk helper child), or it streams (LIST, SHOW): r->produce makes
 *     parts as the socket drains (request_stream()).
 *     Meanwhile the connection reads nothing more; every other connection is served.
 *  3. request_finish() sends the error (if any) and lets the connection read the next one.
 * A client that goes away meanwhile orphans its request (r->conn = NULL): a continuation
 * then does nothing (no namespace created, no session opened for nobody).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "base/nsd-forward.h"
#include "nsd-protocol.h"
#include "transport/conn.h"

#define REQUEST_PENDING 1

/* The most descriptors a request carries (SESSION_OPEN, JOIN_SESSION: a pidfd). */
#define REQUEST_FDS_MAX 1

typedef int (*RequestHandler)(Request *r);
/* A check of a request's fields beyond size and flags: 0, or -errno with *ret_why. */
typedef int (*RequestCheck)(const void *msg, char **ret_why);

typedef struct RequestType {
        uint16_t type;
        const char *name;
        size_t size;          /* sizeof its struct; == nsd_request_size(type) */
        size_t flags_offset;  /* offset of its uint32_t flags field, 0: none */
        uint32_t flags_valid; /* the flags it knows */
        uint32_t fd_flag;     /* with this flag set it carries one descriptor; 0: never */
        RequestCheck check;   /* reserved fields, strings, ... (NULL: nothing more) */
} RequestType;

/* Told of a well-formed request refused (error < 0, r->why), before its NSD_REP_ERROR goes
 * out: what the refusal means is the handlers' to say (a JOIN refused is a login refused). */
typedef void (*RequestRefused)(Request *r, int error);

/* What the requests of a ConnManager are served with: a handler per type (NULL: the type is
 * refused as unknown), what the handlers get as r->userdata, and who hears of refusals (NULL:
 * nobody; they are logged at debug level). */
typedef struct RequestHandlers {
        const RequestHandler *table; /* _NSD_REQ_MAX of them */
        void *userdata;
        RequestRefused refused;
} RequestHandlers;

/* The ConnHandler of requests: conn_manager_new(config, &request_conn_handler, handlers),
 * handlers being a const RequestHandlers * that outlives the ConnManager. */
extern const ConnHandler request_conn_handler;

struct Request {
        unsigned n_ref;
        void *userdata;         /* RequestHandlers.userdata */
        RequestRefused refused; /* RequestHandlers.refused */
        Conn *conn;             /* NULL once the client is gone */
        uid_t uid;              /* the caller, from SO_PEERCRED */
        pid_t pid;
        struct ucred sender; /* who sent this request (SCM_CREDENTIALS, conn_sender()) */
        const RequestType *type;
        uint32_t seq;
        uint64_t received_usec; /* CLOCK_MONOTONIC when it was read (METRICS' latency) */
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

/* The request's message as its struct. */
#define REQUEST_MSG(r, type) ((const type *) &(r)->msg)

/* The row of a request type, NULL for an unknown one. */
const RequestType *request_type_get(uint16_t type);
const char *request_type_name(uint16_t type); /* "unknown" */
/* Every row: for the unit tests (size == nsd_request_size(type), names). */
const RequestType *request_types(size_t *ret_n);

Request *request_ref(Request *r);
void request_unref(Request *r);
/* Send a reply part of the request (0 or -ECONNRESET, see conn_send()). */
int request_reply(Request *r, const void *msg, size_t len, const int *fds, size_t n_fds);
/* Refuse r: r->why is the message (printf format) for the NSD_REP_ERROR; returns -error, for
 * `return request_refuse(r, EPERM, "only root may ...");`. */
int request_refuse(Request *r, int error, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* The request is done: error < 0 sends an NSD_REP_ERROR (r->why or strerror). Once. */
void request_finish(Request *r, int error);
/* A handler continues: rv is what the continuation returned (REQUEST_PENDING: not done yet,
 * else request_finish(r, rv)). */
void request_continue(Request *r, int rv);
/* May a streaming reply send its next part now (the client is there, nothing queued)? */
bool request_can_send(const Request *r);
/* Answer r as a stream: produce(r) makes the parts it may now (request_can_send()) and says
 * true after the last; it runs now and again each time the socket drains. data (freed with
 * data_free when r goes) is its state. Returns what the handler returns: 0 when the stream
 * is over already, else REQUEST_PENDING. */
int request_stream(Request *r, void *data, void (*data_free)(void *data),
                   bool (*produce)(Request *r));
