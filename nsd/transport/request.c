/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * request.c: the wire side of requests: the table of request types and their checks,
 * references, replies, refusals, and the ConnHandler that turns a datagram into a request
 * for the handler table it is given. See request.h for the life of a request. Nothing here
 * knows what a request does.
 */
#include "transport/request.h"

#include <errno.h>
#include <glib.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/log.h"
#include "time-util.h"

/* ---- references, replies, the end ----------------------------------------------------- */

Request *request_ref(Request *r) {
        r->n_ref++;
        return r;
}

void request_unref(Request *r) {
        if (!r || --r->n_ref > 0)
                return;
        for (size_t i = 0; i < r->n_fds; i++)
                if (r->fds[i] >= 0)
                        close(r->fds[i]);
        if (r->data_free)
                r->data_free(r->data);
        g_free(r->why);
        g_free(r);
}

int request_reply(Request *r, const void *msg, size_t len, const int *fds, size_t n_fds) {
        if (!r->conn)
                return -ECONNRESET;
        return conn_send(r->conn, msg, len, fds, n_fds);
}

int request_refuse(Request *r, int error, const char *fmt, ...) {
        va_list ap;
        int rv;

        va_start(ap, fmt);
        rv = why_setv(&r->why, error, fmt, ap);
        va_end(ap);
        return rv;
}

static int send_error(Conn *c, uint32_t seq, uint16_t request_type, int error,
                      const char *message) {
        struct nsd_rep_error rep;

        nsd_msg_init(&rep.hdr, NSD_REP_ERROR, sizeof rep, seq);
        rep.hdr.error = -abs(error);
        rep.request_type = request_type;
        g_strlcpy(rep.message, message ? message : g_strerror(abs(error)), sizeof rep.message);
        return conn_send(c, &rep, sizeof rep, NULL, 0);
}

void request_finish(Request *r, int error) {
        Conn *c = r->conn;

        if (r->finished)
                return;
        r->finished = true;
        if (!c)
                return; /* orphaned: the connection already let go of it */
        if (error < 0) {
                log_debug("%s from uid %u pid %u refused: %s", r->type->name, (unsigned) r->uid,
                          (unsigned) r->pid, r->why ? r->why : g_strerror(-error));
                if (r->refused)
                        r->refused(r, error);
                (void) send_error(c, r->seq, r->type->type, error, r->why);
        }
        if (!r->conn)
                return; /* the error reply dropped the connection (gone() released it) */
        r->conn = NULL;
        conn_call_finished(c);
        request_unref(r); /* the connection's reference: r may be gone */
}

void request_continue(Request *r, int rv) {
        if (rv != REQUEST_PENDING)
                request_finish(r, rv);
}

bool request_can_send(const Request *r) {
        return r->conn && conn_can_send(r->conn);
}

int request_stream(Request *r, void *data, void (*data_free)(void *data),
                   bool (*produce)(Request *r)) {
        r->data = data;
        r->data_free = data_free;
        r->produce = produce;
        if (produce(r))
                return 0;
        if (r->conn)
                conn_want_drained(r->conn);
        return REQUEST_PENDING;
}

/* ConnHandler.drained: make more parts of a streaming reply. */
static void request_drained(void *call) {
        Request *r = call, *keep = request_ref(r);

        if (!r->finished && r->produce && r->conn && r->produce(r))
                request_finish(r, 0);
        request_unref(keep);
}

/* ConnHandler.gone: the client left; the request goes on without a connection, replies go
 * nowhere. */
static void request_gone(void *call) {
        Request *r = call;

        r->conn = NULL;
        request_unref(r); /* the connection's reference */
}

/* ---- checks beyond size and flags ----------------------------------------------------- */

/* The session fields SESSION_OPEN and JOIN_SESSION share (their order differs). */
static int check_session_fields(uint32_t reserved, const char *service, size_t service_size,
                                uint32_t pid, char **why) {
        if (reserved != 0)
                return why_set(why, EINVAL, "reserved field not zero");
        if (!nsd_field_is_string(service, service_size))
                return why_set(why, EINVAL, "service name not NUL-terminated in its field");
        /* it goes into log lines and state files: a newline or an escape in it would forge
         * a line of nsd's own ("x\n<0>nsd: ..." on a plain stderr log) */
        for (size_t i = 0; service[i]; i++)
                if ((unsigned char) service[i] < 0x20 || (unsigned char) service[i] > 0x7e)
                        return why_set(why, EINVAL,
                                       "service name is not printable ASCII (byte %zu is 0x%02x; "
                                       "0x20 to 0x7e only)",
                                       i, (unsigned) (unsigned char) service[i]);
        if (pid == 0 || pid > INT32_MAX)
                return why_set(why, EINVAL, "invalid session leader pid");
        return 0;
}

static int check_session_open(const void *msg, char **why) {
        const struct nsd_req_session_open *r = msg;

        return check_session_fields(r->reserved, r->service, sizeof r->service, r->pid, why);
}

static int check_join_session(const void *msg, char **why) {
        const struct nsd_req_join_session *r = msg;

        return check_session_fields(r->reserved, r->service, sizeof r->service, r->pid, why);
}

static int check_session_close(const void *msg, char **why) {
        const struct nsd_req_session_close *r = msg;

        if (r->session_id == 0 && r->pid == 0)
                return why_set(why, EINVAL, "neither a session id nor a pid");
        return 0;
}

static int check_credential_give(const void *msg, char **why) {
        const struct nsd_req_credential_give *r = msg;

        if (!(r->flags & NSD_CREDENTIAL_FD))
                return why_set(why, EINVAL, "the password must come as a descriptor");
        return 0;
}

/* TAKE's, UNLOCK's and VOLUME_START's/STOP's fields after the flags or uid: the same layout */
static int check_credential_volume(uint32_t reserved, const char *volume, size_t size, char **why) {
        if (reserved != 0)
                return why_set(why, EINVAL, "reserved field not zero");
        if (!nsd_field_is_string(volume, size) || volume[0] == '\0')
                return why_set(why, EINVAL, "volume name empty or not terminated");
        return 0;
}

static int check_credential_take(const void *msg, char **why) {
        const struct nsd_req_credential_take *r = msg;

        return check_credential_volume(r->reserved, r->volume, sizeof r->volume, why);
}

static int check_credential_unlock(const void *msg, char **why) {
        const struct nsd_req_credential_unlock *r = msg;

        if (!(r->flags & NSD_CREDENTIAL_FD))
                return why_set(why, EINVAL, "the password must come as a descriptor");
        return check_credential_volume(r->reserved, r->volume, sizeof r->volume, why);
}

static int check_volume_ctl(const void *msg, char **why) {
        const struct nsd_req_volume_ctl *r = msg;

        return check_credential_volume(r->reserved, r->volume, sizeof r->volume, why);
}

static int check_show(const void *msg, char **why) {
        const struct nsd_req_show *r = msg;

        if (r->reserved != 0)
                return why_set(why, EINVAL, "reserved field not zero");
        return 0;
}

static int check_hide(const void *msg, char **why) {
        const struct nsd_req_hide *r = msg;

        if (!nsd_field_is_string(r->path, sizeof r->path))
                return why_set(why, EINVAL, "path not NUL-terminated in its field");
        if (r->path[0] != '/')
                return why_set(why, EINVAL, "path not absolute");
        return 0;
}

/* ---- the table -------------------------------------------------------------------------- */

#define ROW(t, n, st, fl_off, fl_valid, fd_fl, chk) \
        [t] = { .type = t,                          \
                .name = n,                          \
                .size = sizeof(struct st),          \
                .flags_offset = fl_off,             \
                .flags_valid = fl_valid,            \
                .fd_flag = fd_fl,                   \
                .check = chk }

static const RequestType request_table[_NSD_REQ_MAX] = {
        ROW(NSD_REQ_JOIN, "JOIN", nsd_req_join, offsetof(struct nsd_req_join, flags),
            NSD_JOIN_NO_CREATE, 0, NULL),
        ROW(NSD_REQ_SESSION_OPEN, "SESSION_OPEN", nsd_req_session_open,
            offsetof(struct nsd_req_session_open, flags), NSD_SESSION_PIDFD, NSD_SESSION_PIDFD,
            check_session_open),
        ROW(NSD_REQ_SESSION_CLOSE, "SESSION_CLOSE", nsd_req_session_close, 0, 0, 0,
            check_session_close),
        ROW(NSD_REQ_STATUS, "STATUS", nsd_req_status, 0, 0, 0, NULL),
        ROW(NSD_REQ_LIST, "LIST", nsd_req_list, 0, 0, 0, NULL),
        ROW(NSD_REQ_SHOW, "SHOW", nsd_req_show, 0, 0, 0, check_show),
        ROW(NSD_REQ_RELEASE, "RELEASE", nsd_req_release, offsetof(struct nsd_req_release, flags),
            NSD_RELEASE_FORCE, 0, NULL),
        ROW(NSD_REQ_HIDE, "HIDE", nsd_req_hide, offsetof(struct nsd_req_hide, flags),
            NSD_HIDE_UNHIDE, 0, check_hide),
        ROW(NSD_REQ_JOIN_SESSION, "JOIN_SESSION", nsd_req_join_session,
            offsetof(struct nsd_req_join_session, flags),
            NSD_JOIN_NO_CREATE | NSD_JOIN_SESSION_PIDFD, NSD_JOIN_SESSION_PIDFD,
            check_join_session),
        ROW(NSD_REQ_METRICS, "METRICS", nsd_req_metrics, 0, 0, 0, NULL),
        ROW(NSD_REQ_SHARES, "SHARES", nsd_req_shares, 0, 0, 0, NULL),
        ROW(NSD_REQ_VOLUMES, "VOLUMES", nsd_req_volumes, 0, 0, 0, NULL),
        ROW(NSD_REQ_CREDENTIAL_GIVE, "CREDENTIAL_GIVE", nsd_req_credential_give,
            offsetof(struct nsd_req_credential_give, flags), NSD_CREDENTIAL_FD, NSD_CREDENTIAL_FD,
            check_credential_give),
        ROW(NSD_REQ_CREDENTIAL_TAKE, "CREDENTIAL_TAKE", nsd_req_credential_take,
            offsetof(struct nsd_req_credential_take, flags), NSD_CREDENTIAL_WAIT, 0,
            check_credential_take),
        ROW(NSD_REQ_CREDENTIAL_UNLOCK, "CREDENTIAL_UNLOCK", nsd_req_credential_unlock,
            offsetof(struct nsd_req_credential_unlock, flags), NSD_CREDENTIAL_FD, NSD_CREDENTIAL_FD,
            check_credential_unlock),
        ROW(NSD_REQ_VOLUME_START, "VOLUME_START", nsd_req_volume_ctl, 0, 0, 0, check_volume_ctl),
        ROW(NSD_REQ_VOLUME_STOP, "VOLUME_STOP", nsd_req_volume_ctl, 0, 0, 0, check_volume_ctl),
};
#undef ROW

const RequestType *request_type_get(uint16_t type) {
        if (type >= G_N_ELEMENTS(request_table) || !request_table[type].name)
                return NULL;
        return &request_table[type];
}

const char *request_type_name(uint16_t type) {
        const RequestType *t = request_type_get(type);
        return t ? t->name : "unknown";
}

const RequestType *request_types(size_t *ret_n) {
        *ret_n = G_N_ELEMENTS(request_table);
        return request_table;
}

/* The table's checks; returns the number of descriptors the message must carry, or -errno
 * with *why. */
static int request_check(const RequestType *t, const void *msg, char **why) {
        const struct nsd_msg_header *hdr = msg;
        uint32_t flags = 0;
        int r;

        if (hdr->flags != 0)
                return why_set(why, EINVAL, "flags set in the header");
        if (t->flags_offset > 0) {
                memcpy(&flags, (const uint8_t *) msg + t->flags_offset, sizeof flags);
                if (flags & ~t->flags_valid)
                        return why_set(why, EINVAL, "unknown %s flags (%#x)", t->name,
                                       flags & ~t->flags_valid);
        }
        if (t->check && (r = t->check(msg, why)) < 0)
                return r;
        return (flags & t->fd_flag) ? 1 : 0;
}

/* A malformed message: error reply, warning (rate limited per uid), and its connection is
 * closed once the reply is out. */
static void refuse_message(Conn *c, const void *buf, size_t n, int error, const char *why) {
        const struct nsd_msg_header *hdr = buf;
        bool readable = n >= sizeof *hdr && hdr->magic == NSD_PROTO_MAGIC;
        uint16_t type = readable ? hdr->type : 0;
        size_t want = readable ? nsd_request_size(type) : 0;
        g_autofree char *text = NULL;

        if (n > NSD_MSG_SIZE_MAX)
                text = g_strdup_printf("%s (%zu bytes, at most %u)", why, n, NSD_MSG_SIZE_MAX);
        else if (want > 0 && n != want)
                text = g_strdup_printf("%s (%s: %zu bytes, expected %zu)", why,
                                       request_type_name(type), n, want);
        else if (readable && hdr->version_major != NSD_PROTO_MAJOR)
                text = g_strdup_printf("%s (%u, nsd speaks %u)", why, (unsigned) hdr->version_major,
                                       NSD_PROTO_MAJOR);
        else if (readable && want == 0)
                text = g_strdup_printf("%s (%u)", why, (unsigned) type);
        else
                text = g_strdup(why);

        conn_log_event(c, LOG_WARNING, "message-refused", text,
                       "Refusing a message from uid %u pid %u: %s", (unsigned) conn_uid(c),
                       (unsigned) conn_pid(c), text);
        (void) send_error(c, readable ? hdr->seq : 0, type, error, text);
        conn_close_after_reply(c);
}

/* ConnHandler.message: one datagram; starts a request, or refuses the message. */
static void request_message(Conn *c, const void *buf, size_t n, int *fds, size_t n_fds, bool ctrunc,
                            void *userdata) {
        const RequestHandlers *h = userdata;
        const struct nsd_msg_header *hdr = buf;
        const RequestType *t = NULL;
        RequestHandler handler = NULL;
        const char *msg_why = NULL;
        g_autofree char *why = NULL;
        Request *r;
        int rv, want_fds = 0;

        rv = nsd_msg_check(buf, n, 1, &msg_why);
        if (rv < 0)
                why = g_strdup(msg_why);
        else if (ctrunc)
                rv = why_set(&why, EBADMSG, "too many descriptors sent");
        else if (!(t = request_type_get(hdr->type)) || !(handler = h->table[hdr->type]))
                rv = why_set(&why, EOPNOTSUPP, "unknown request type");
        if (rv >= 0) {
                want_fds = request_check(t, buf, &why);
                if (want_fds < 0)
                        rv = want_fds;
                else if ((size_t) want_fds != n_fds)
                        rv = why_set(&why, EBADMSG, "%zu descriptor%s sent with %s, expected %d",
                                     n_fds, n_fds == 1 ? "" : "s", t->name, want_fds);
        }
        if (rv < 0) {
                for (size_t i = 0; i < n_fds; i++)
                        close(fds[i]);
                refuse_message(c, buf, n, rv, why);
                return;
        }

        r = g_new0(Request, 1);
        r->n_ref = 1; /* the connection's */
        r->userdata = h->userdata;
        r->refused = h->refused;
        r->conn = c;
        r->uid = conn_uid(c);
        r->pid = conn_pid(c);
        r->type = t;
        r->seq = hdr->seq;
        r->received_usec = now_usec(CLOCK_MONOTONIC);
        r->sender = conn_sender(c);
        memcpy(&r->msg, buf, n);
        for (size_t i = 0; i < n_fds; i++)
                r->fds[r->n_fds++] = fds[i];
        conn_begin_call(c, r);

        log_debug("%s from uid %u pid %u", t->name, (unsigned) r->uid, (unsigned) r->pid);
        request_ref(r);
        request_continue(r, handler(r));
        request_unref(r);
}

const ConnHandler request_conn_handler = {
        .message = request_message,
        .drained = request_drained,
        .gone = request_gone,
};
