/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libnsclient: the client side of nsd's protocol (nsd-protocol.h).
 *
 * One call = one request datagram, then reply datagrams until the answer is complete. Every
 * reply is checked with nsd_msg_check(), then for its sequence number and for being an
 * answer to the request that was sent. A connection on which the conversation went out of
 * step (bad reply, nsd closed it, a call abandoned halfway through a LIST or SHOW) is marked
 * broken: later calls on it fail with -ENOTCONN, and the caller reconnects.
 *
 * Never logs, never exits, never raises SIGPIPE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "nsclient.h"
#include "nsd-protocol.h"

/* the flag values of the public header are the protocol's */
_Static_assert(NSC_JOIN_NO_CREATE == NSD_JOIN_NO_CREATE, "join flags");
_Static_assert(NSC_NS_CREATED == NSD_NS_CREATED && NSC_NS_PINNED == NSD_NS_PINNED &&
               NSC_NS_ADOPTED == NSD_NS_ADOPTED, "namespace flags");
_Static_assert(NSC_FEATURE_SETNS_DIRFD == NSD_FEATURE_SETNS_DIRFD &&
               NSC_FEATURE_PROC_MOUNTS_ROOT == NSD_FEATURE_PROC_MOUNTS_ROOT &&
               NSC_FEATURE_FSPICK_CHECK == NSD_FEATURE_FSPICK_CHECK &&
               NSC_FEATURE_OWNER_PRIVATE == NSD_FEATURE_OWNER_PRIVATE &&
               NSC_FEATURE_PIN_NAMESPACE == NSD_FEATURE_PIN_NAMESPACE &&
               NSC_FEATURE_PRIVATE_MODE == NSD_FEATURE_PRIVATE_MODE &&
               NSC_FEATURE_PRIVATE_UNAVAILABLE == NSD_FEATURE_PRIVATE_UNAVAILABLE,
               "feature flags");
_Static_assert(NSC_HIDE_UNHIDE == NSD_HIDE_UNHIDE, "hide flags");
_Static_assert(NSC_RELEASE_FORCE == NSD_RELEASE_FORCE, "release flags");
_Static_assert(sizeof(((struct nsc_status *) 0)->version) == NSD_VERSION_MAX, "version size");
_Static_assert(sizeof(((struct nsc_ns_info *) 0)->pin) == NSD_PIN_PATH_MAX, "pin size");

/* The most SCM_RIGHTS descriptors one receive accepts into its control buffer; anything
 * beyond NSD_MSG_FDS_MAX is closed and the reply refused. A larger buffer than the protocol
 * needs, so that a misbehaving peer's extra descriptors reach us and get closed instead of
 * being cut off with MSG_CTRUNC. */
#define RECV_FDS_MAX 16

/* LIST: more entries than this in one answer is refused with -EFBIG. */
#define LIST_ENTRIES_MAX (1u << 20)

struct nsc_conn {
        pthread_mutex_t lock;
        int fd;
        int broken;       /* 0, or the error that put the conversation out of step */
        uint32_t seq;     /* of the last request sent */
        bool has_error_message;
        char error_message[NSD_ERROR_MESSAGE_MAX];
        /* one received datagram; one byte more than the protocol allows, see MSG_TRUNC */
        union {
                struct nsd_msg_header hdr;
                struct nsd_rep_join join;
                struct nsd_rep_session_open session_open;
                struct nsd_rep_session_close session_close;
                struct nsd_rep_status status;
                struct nsd_rep_list_entry list_entry;
                struct nsd_rep_list_end list_end;
                struct nsd_rep_error error;
                uint8_t bytes[NSD_MSG_SIZE_MAX + 1];
        } rx;
};

/* A received reply: its descriptors (owned until taken) and their number. */
struct reply_fds {
        int fd[NSD_MSG_FDS_MAX];
        size_t n;
};

static void reply_fds_close(struct reply_fds *f) {
        for (size_t i = 0; i < f->n; i++)
                cleanup_closep(&f->fd[i]);
        f->n = 0;
}

static void conn_lock(nsc_conn *c) {
        pthread_mutex_lock(&c->lock);
}
static void conn_unlock(nsc_conn **c) {
        if (*c)
                pthread_mutex_unlock(&(*c)->lock);
}
/* Lock c for the rest of the scope. */
#define CONN_LOCK_SCOPE(c) \
        __attribute__((cleanup(conn_unlock))) nsc_conn *_locked_ = (conn_lock(c), (c))

static int socket_set_timeout(int fd, uint64_t usec) {
        struct timeval tv = {
                .tv_sec = (time_t) (usec / 1000000),
                .tv_usec = (suseconds_t) (usec % 1000000),
        };

        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return NEG_ERRNO();
        return 0;
}

int nsc_connect(const char *socket_path, nsc_conn **ret_conn) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        size_t len;
        nsc_conn *c;
        int r;

        if (!ret_conn)
                return -EINVAL;
        if (!socket_path) {
                /* secure_getenv: a setuid program (su, login) running our PAM module must not
                 * be pointed at a socket of the invoking user's choosing */
                socket_path = secure_getenv("NSD_SOCKET");
                if (!socket_path || !*socket_path)
                        socket_path = NSD_SOCKET_PATH_DEFAULT;
        }
        len = strlen(socket_path);
        if (len == 0)
                return -EINVAL;
        if (len >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, socket_path, len + 1);

        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return NEG_ERRNO();
        /* SO_SNDTIMEO also bounds connect() to a listener whose backlog is full */
        r = socket_set_timeout(fd, NSC_TIMEOUT_DEFAULT_USEC);
        if (r < 0)
                return r;
        for (;;) {
                if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) >= 0)
                        break;
                if (errno == EINTR)
                        continue;
                if (errno == EISCONN) /* an interrupted connect that completed meanwhile */
                        break;
                if (errno == EAGAIN || errno == EINPROGRESS)
                        return -ETIMEDOUT;
                return NEG_ERRNO();
        }

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = pthread_mutex_init(&c->lock, NULL);
        if (r != 0) {
                free(c);
                return -r;
        }
        c->fd = TAKE_FD(fd);
        *ret_conn = c;
        return 0;
}

void nsc_disconnect(nsc_conn *conn) {
        if (!conn)
                return;
        cleanup_closep(&conn->fd);
        pthread_mutex_destroy(&conn->lock);
        free(conn);
}

int nsc_set_timeout(nsc_conn *conn, uint64_t usec) {
        if (!conn || usec / 1000000 > INT_MAX)
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        return socket_set_timeout(conn->fd, usec);
}

const char *nsc_last_error_message(nsc_conn *conn) {
        if (!conn)
                return NULL;
        return conn->has_error_message ? conn->error_message : NULL;
}

/* ---- transport --------------------------------------------------------------------------- */

/* Start a call: new sequence number, forget the last error message, send the request (and
 * pass_fd by SCM_RIGHTS when >= 0). The caller holds the lock. */
static int conn_send_request(nsc_conn *c, struct nsd_msg_header *req, int pass_fd) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        struct iovec iov = { .iov_base = req, .iov_len = req->length };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        c->has_error_message = false;
        c->error_message[0] = 0;
        if (c->broken)
                return -ENOTCONN;

        if (++c->seq == 0) /* 0 is never a request's: see conn_recv_reply() */
                c->seq = 1;
        req->seq = c->seq;

        if (pass_fd >= 0) {
                struct cmsghdr *cm;

                memset(&control, 0, sizeof(control));
                mh.msg_control = control.buf;
                mh.msg_controllen = sizeof(control.buf);
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
        }

        do
                n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                int r = NEG_ERRNO();

                if (r == -EPIPE || r == -ECONNRESET || r == -ECONNREFUSED || r == -ENOTCONN)
                        r = -ECONNRESET;
                else if (r == -EAGAIN)
                        r = -ETIMEDOUT;
                c->broken = r;
                return r;
        }
        if ((size_t) n != req->length) /* cannot happen with SOCK_SEQPACKET */
                return c->broken = -EIO;
        return 0;
}

/* Is type an answer to a request of type req_type (NSD_REP_ERROR aside)? */
static bool reply_answers(uint16_t type, uint16_t req_type) {
        switch (req_type) {
        case NSD_REQ_LIST:
                return type == NSD_REP_LIST_ENTRY || type == NSD_REP_LIST_END;
        case NSD_REQ_SHOW:
                return type == NSD_REP_SHOW_DATA || type == NSD_REP_SHOW_END;
        default:
                return type == (req_type | NSD_REPLY_BIT);
        }
}

/* Receive one datagram into c->rx with its descriptors. */
static int conn_recv_raw(nsc_conn *c, size_t *ret_size, struct reply_fds *ret_fds) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * RECV_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = c->rx.bytes, .iov_len = sizeof(c->rx.bytes) };
        struct msghdr mh;
        struct reply_fds fds = { .n = 0 };
        bool too_many = false;
        ssize_t n;

        for (;;) {
                mh = (struct msghdr) {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = sizeof(control.buf),
                };
                n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
                if (n >= 0 || errno != EINTR)
                        break;
        }
        if (n < 0) {
                int r = NEG_ERRNO();

                if (r == -ECONNRESET || r == -EPIPE || r == -ENOTCONN)
                        r = -ECONNRESET;
                else if (r == -EAGAIN) /* SO_RCVTIMEO ran out */
                        r = -ETIMEDOUT;
                return r;
        }

        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                size_t k;

                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        if (fds.n < NSD_MSG_FDS_MAX)
                                fds.fd[fds.n++] = fd;
                        else {
                                close(fd);
                                too_many = true;
                        }
                }
        }

        if (n == 0 && fds.n == 0 && !too_many) /* orderly shutdown by nsd */
                return -ECONNRESET;
        if (too_many || (mh.msg_flags & MSG_CTRUNC)) {
                reply_fds_close(&fds);
                return -EBADMSG;
        }
        if ((mh.msg_flags & MSG_TRUNC) || (size_t) n > NSD_MSG_SIZE_MAX) {
                reply_fds_close(&fds);
                return -EMSGSIZE;
        }
        *ret_size = (size_t) n;
        *ret_fds = fds;
        return 0;
}

/*
 * Receive the next reply part to a request of type req_type and check it. On success c->rx
 * holds a sound answer of a type that answers req_type; descriptors go to *ret_fds when
 * ret_fds is given (only JOIN passes it), else a reply carrying any is refused. An
 * NSD_REP_ERROR returns its (negative) error and keeps its message. Any other failure marks
 * the connection broken.
 */
static int conn_recv_reply(nsc_conn *c, uint16_t req_type, struct reply_fds *ret_fds) {
        struct reply_fds fds = { .n = 0 };
        const char *why;
        size_t size;
        int r;

        r = conn_recv_raw(c, &size, &fds);
        if (r < 0)
                goto broken;

        r = nsd_msg_check(c->rx.bytes, size, /* is_request= */ 0, &why);
        if (r < 0)
                goto broken_fds;
        r = -EBADMSG;
        /* nsd answers a request it could not read (or a connection it refuses before any
         * request, e.g. over the per-uid limit) with an error of seq 0 */
        if (c->rx.hdr.seq != c->seq && !(c->rx.hdr.type == NSD_REP_ERROR && c->rx.hdr.seq == 0))
                goto broken_fds;

        if (c->rx.hdr.type == NSD_REP_ERROR) {
                struct nsd_rep_error *e = &c->rx.error;

                /* an error reply must carry a real -errno */
                if (e->hdr.error >= 0 || e->hdr.error < -4095)
                        goto broken_fds;
                reply_fds_close(&fds);
                memcpy(c->error_message, e->message, sizeof(c->error_message));
                c->error_message[sizeof(c->error_message) - 1] = 0;
                c->has_error_message = c->error_message[0] != 0;
                return e->hdr.error;
        }

        if (!reply_answers(c->rx.hdr.type, req_type) || c->rx.hdr.error != 0)
                goto broken_fds;
        if (!ret_fds && fds.n > 0)
                goto broken_fds;
        if (ret_fds)
                *ret_fds = fds;
        return 0;

broken_fds:
        reply_fds_close(&fds);
broken:
        c->broken = r;
        return r;
}

/* A single-reply call: send req, receive the one answer into c->rx. */
static int conn_call(nsc_conn *c, struct nsd_msg_header *req, int pass_fd,
                     struct reply_fds *ret_fds) {
        int r;

        r = conn_send_request(c, req, pass_fd);
        if (r < 0)
                return r;
        return conn_recv_reply(c, req->type, ret_fds);
}

/* ---- JOIN -------------------------------------------------------------------------------- */

/* Are these the descriptors a JOIN promises: a directory, and the nsfs file of a mount
 * namespace whose inode the reply names? */
static int join_fds_check(int root_fd, int ns_fd, uint64_t ns_inode) {
        struct stat st;
        int type;

        if (fstat(root_fd, &st) < 0)
                return NEG_ERRNO();
        if (!S_ISDIR(st.st_mode))
                return -EBADMSG;
        if (fstat(ns_fd, &st) < 0)
                return NEG_ERRNO();
        if (st.st_ino != ns_inode)
                return -EBADMSG;
        type = ioctl(ns_fd, NS_GET_NSTYPE);
        if (type != CLONE_NEWNS)
                return -EBADMSG;
        return 0;
}

int nsc_join(nsc_conn *conn, uid_t uid, unsigned flags, struct nsc_join_result *ret) {
        struct nsd_req_join req;
        struct reply_fds fds = { .n = 0 };
        const struct nsd_rep_join *rep;
        int r;

        if (!conn || !ret || uid == (uid_t) -1 || (flags & ~NSC_JOIN_NO_CREATE))
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_JOIN, sizeof(req), 0);
        req.uid = uid;
        req.flags = flags;
        r = conn_call(conn, &req.hdr, -1, &fds);
        if (r < 0)
                return r;

        rep = &conn->rx.join;
        r = -EBADMSG;
        if (fds.n != 2 || rep->uid != uid)
                goto fail;
        r = join_fds_check(fds.fd[0], fds.fd[1], rep->ns_inode);
        if (r < 0)
                goto fail;

        *ret = (struct nsc_join_result) {
                .root_fd = fds.fd[0],
                .ns_fd = fds.fd[1],
                .uid = rep->uid,
                .ns_flags = rep->ns_flags,
                .ns_inode = rep->ns_inode,
                .created_usec = rep->created_usec,
        };
        return 0;

fail:
        reply_fds_close(&fds);
        conn->broken = r;
        return r;
}

int nsc_enter_setns(const struct nsc_join_result *j) {
        if (!j || j->ns_fd < 0)
                return -EINVAL;
        /* the kernel sets root and cwd to the namespace's root */
        if (setns(j->ns_fd, CLONE_NEWNS) < 0)
                return NEG_ERRNO();
        return 0;
}

int nsc_enter_chroot(const struct nsc_join_result *j, int *ret_used_setns) {
        if (!j || j->root_fd < 0)
                return -EINVAL;

        /* A kernel with our F1 patch joins the directory's namespace and makes it root and
         * cwd. A stock kernel refuses the descriptor: EINVAL for a directory opened for
         * reading, EBADF for an O_PATH one (setns() does not accept O_PATH descriptors). */
        if (setns(j->root_fd, CLONE_NEWNS) >= 0) {
                if (ret_used_setns)
                        *ret_used_setns = 1;
                return 0;
        }
        if (errno != EINVAL && errno != EBADF)
                return NEG_ERRNO();

        /* Lokier's way; fchdir() accepts O_PATH directories */
        if (fchdir(j->root_fd) < 0)
                return NEG_ERRNO();
        if (chroot(".") < 0)
                return NEG_ERRNO();
        if (chdir("/") < 0)
                return NEG_ERRNO();
        if (ret_used_setns)
                *ret_used_setns = 0;
        return 0;
}

/* ---- sessions ---------------------------------------------------------------------------- */

int nsc_session_open(nsc_conn *conn, uid_t uid, pid_t pid, const char *service,
                     uint64_t *ret_session_id, unsigned *ret_sessions) {
        struct nsd_req_session_open req;
        _cleanup_close_ int pidfd = -1;
        size_t len = 0;
        int r;

        if (!conn || uid == (uid_t) -1 || pid <= 0)
                return -EINVAL;
        if (service) {
                len = strnlen(service, NSD_SERVICE_MAX);
                if (len >= NSD_SERVICE_MAX)
                        return -EINVAL;
        }

        /* pidfd_open() descriptors are always close-on-exec */
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_SESSION_OPEN, sizeof(req), 0);
        req.uid = uid;
        req.pid = (uint32_t) pid;
        req.flags = pidfd >= 0 ? NSD_SESSION_PIDFD : 0;
        if (len > 0)
                memcpy(req.service, service, len);
        r = conn_call(conn, &req.hdr, pidfd, NULL);
        if (r < 0)
                return r;
        if (conn->rx.session_open.session_id == 0)
                return conn->broken = -EBADMSG;

        if (ret_session_id)
                *ret_session_id = conn->rx.session_open.session_id;
        if (ret_sessions)
                *ret_sessions = conn->rx.session_open.sessions;
        return 0;
}

int nsc_session_close(nsc_conn *conn, uid_t uid, pid_t pid, uint64_t session_id,
                      unsigned *ret_sessions_left) {
        struct nsd_req_session_close req;
        int r;

        if (!conn || uid == (uid_t) -1 || pid < 0 || (session_id == 0 && pid == 0))
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_SESSION_CLOSE, sizeof(req), 0);
        req.session_id = session_id;
        req.uid = uid;
        req.pid = (uint32_t) pid;
        r = conn_call(conn, &req.hdr, -1, NULL);
        if (r < 0)
                return r;
        if (ret_sessions_left)
                *ret_sessions_left = conn->rx.session_close.sessions;
        return 0;
}

/* ---- status and inspection --------------------------------------------------------------- */

int nsc_status(nsc_conn *conn, struct nsc_status *ret) {
        struct nsd_req_status req;
        const struct nsd_rep_status *rep;
        int r;

        if (!conn || !ret)
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_STATUS, sizeof(req), 0);
        r = conn_call(conn, &req.hdr, -1, NULL);
        if (r < 0)
                return r;
        rep = &conn->rx.status;
        if (!nsd_field_is_string(rep->version, sizeof(rep->version)))
                return conn->broken = -EBADMSG;

        *ret = (struct nsc_status) {
                .started_usec = rep->started_usec,
                .features = rep->features,
                .namespaces = rep->namespaces,
                .pinned = rep->pinned,
                .sessions = rep->sessions,
                .connections = rep->connections,
                .max_namespaces = rep->max_namespaces,
                .max_sessions_per_uid = rep->max_sessions_per_uid,
                .max_connections_per_uid = rep->max_connections_per_uid,
                .pid = (pid_t) rep->pid,
                .proto_major = rep->hdr.version_major,
                .proto_minor = rep->hdr.version_minor,
        };
        memcpy(ret->version, rep->version, sizeof(ret->version));
        return 0;
}

int nsc_list(nsc_conn *conn, struct nsc_ns_info **ret_entries, size_t *ret_n) {
        struct nsd_req_list req;
        _cleanup_free_ struct nsc_ns_info *v = NULL;
        size_t n = 0, allocated = 0;
        int r;

        if (!conn || !ret_entries || !ret_n)
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_LIST, sizeof(req), 0);
        r = conn_send_request(conn, &req.hdr, -1);
        if (r < 0)
                return r;

        for (;;) {
                const struct nsd_rep_list_entry *e;

                r = conn_recv_reply(conn, NSD_REQ_LIST, NULL);
                if (r < 0) {
                        /* an error after some entries leaves the stream in an unknown state */
                        if (n > 0)
                                conn->broken = r;
                        return r;
                }
                if (conn->rx.hdr.type == NSD_REP_LIST_END) {
                        if (conn->rx.list_end.count != n)
                                return conn->broken = -EBADMSG;
                        break;
                }

                e = &conn->rx.list_entry;
                if (!nsd_field_is_string(e->pin, sizeof(e->pin)))
                        return conn->broken = -EBADMSG;
                if (n >= LIST_ENTRIES_MAX)
                        return conn->broken = -EFBIG;
                if (n == allocated) {
                        size_t a = allocated ? allocated * 2 : 16;
                        struct nsc_ns_info *w = reallocarray(v, a, sizeof(*v));

                        if (!w)
                                return conn->broken = -ENOMEM;
                        v = w;
                        allocated = a;
                }
                v[n] = (struct nsc_ns_info) {
                        .uid = e->uid,
                        .ns_flags = e->ns_flags,
                        .sessions = e->sessions,
                        .mounts = e->mounts,
                        .ns_inode = e->ns_inode,
                        .created_usec = e->created_usec,
                };
                memcpy(v[n].pin, e->pin, sizeof(v[n].pin));
                n++;
        }

        if (!v) {
                /* no namespaces: still a valid pointer the caller may free() */
                v = calloc(1, sizeof(*v));
                if (!v)
                        return -ENOMEM;
        }
        *ret_entries = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int nsc_show(nsc_conn *conn, uid_t uid, char **ret_text, size_t *ret_len) {
        struct nsd_req_show req;
        _cleanup_free_ char *text = NULL;
        size_t len = 0, allocated = 0;
        int r;

        if (!conn || !ret_text || uid == (uid_t) -1)
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_SHOW, sizeof(req), 0);
        req.uid = uid;
        r = conn_send_request(conn, &req.hdr, -1);
        if (r < 0)
                return r;

        for (;;) {
                size_t part;

                r = conn_recv_reply(conn, NSD_REQ_SHOW, NULL);
                if (r < 0) {
                        if (len > 0)
                                conn->broken = r;
                        return r;
                }
                if (conn->rx.hdr.type == NSD_REP_SHOW_END)
                        break;

                part = conn->rx.hdr.length - sizeof(struct nsd_msg_header);
                if (part > NSD_SHOW_TEXT_MAX - len)
                        return conn->broken = -EFBIG;
                if (len + part + 1 > allocated) {
                        size_t a = allocated ? allocated : 4096;
                        char *t;

                        while (a < len + part + 1)
                                a *= 2;
                        t = realloc(text, a);
                        if (!t)
                                return conn->broken = -ENOMEM;
                        text = t;
                        allocated = a;
                }
                memcpy(text + len, conn->rx.bytes + sizeof(struct nsd_msg_header), part);
                len += part;
        }

        if (!text) {
                text = malloc(1);
                if (!text)
                        return -ENOMEM;
        }
        text[len] = 0;
        *ret_text = TAKE_PTR(text);
        if (ret_len)
                *ret_len = len;
        return 0;
}

int nsc_release(nsc_conn *conn, uid_t uid, unsigned flags) {
        struct nsd_req_release req;

        if (!conn || uid == (uid_t) -1 || (flags & ~NSC_RELEASE_FORCE))
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_RELEASE, sizeof(req), 0);
        req.uid = uid;
        req.flags = flags;
        return conn_call(conn, &req.hdr, -1, NULL);
}

/* ---- HIDE (1.1) ---------------------------------------------------------------------------- */

int nsc_hide(nsc_conn *conn, uid_t uid, const char *path, unsigned flags) {
        struct nsd_req_hide req;
        size_t n;

        if (!conn || uid == (uid_t) -1 || !path || path[0] != '/' || (flags & ~NSC_HIDE_UNHIDE))
                return -EINVAL;
        n = strlen(path);
        if (n >= sizeof(req.path))
                return -ENAMETOOLONG;

        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_HIDE, sizeof(req), 0);
        req.uid = uid;
        req.flags = flags;
        memcpy(req.path, path, n + 1);
        return conn_call(conn, &req.hdr, -1, NULL);
}
