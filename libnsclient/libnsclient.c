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
 * Time: every call has one deadline (now + the connection's timeout), taken when it starts.
 * The socket stays blocking, but every send and receive is MSG_DONTWAIT and waits in
 * ppoll() for what is left of the deadline, so a call never outlives it, however many
 * datagrams it takes. connect() to an AF_UNIX listener whose backlog is full (a stopped nsd)
 * cannot be polled for (a non-blocking one just fails with EAGAIN); it is bounded by
 * SO_SNDTIMEO instead, which the kernel uses for exactly that wait.
 *
 * Never logs, never exits, never raises SIGPIPE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "nsclient.h"
#include "nsd-protocol.h"
#include "socket-util.h"
#include "time-util.h"

/* the flag values of the public header are the protocol's: NSC_<name> is NSD_<name>
 * (here and for the volumes' and shares' values further down) */
#define SAME(name) (NSC_##name == NSD_##name)
_Static_assert(SAME(JOIN_NO_CREATE), "join flags");
_Static_assert(SAME(NS_CREATED) && SAME(NS_PINNED) && SAME(NS_ADOPTED) && SAME(NS_STALE) &&
                       SAME(NS_ORPHANED),
               "namespace flags");
_Static_assert(SAME(FEATURE_SETNS_DIRFD) && SAME(FEATURE_PROC_MOUNTS_ROOT) &&
                       SAME(FEATURE_FSPICK_CHECK) && SAME(FEATURE_OWNER_PRIVATE) &&
                       SAME(FEATURE_OWNER_PRIVATE_NEW) && SAME(FEATURE_PIN_NAMESPACE) &&
                       SAME(FEATURE_PRIVATE_MODE) && SAME(FEATURE_PRIVATE_UNAVAILABLE),
               "feature flags");
_Static_assert(SAME(HIDE_UNHIDE), "hide flags");
_Static_assert(SAME(RELEASE_FORCE), "release flags");
_Static_assert(sizeof(((struct nsc_status *) 0)->version) == NSD_VERSION_MAX, "version size");
_Static_assert(SAME(METRICS_JOIN_OK) && SAME(METRICS_JOIN_REFUSED) &&
                       SAME(METRICS_JOIN_NOT_MANAGED) && SAME(METRICS_JOIN_NOT_YET) &&
                       SAME(METRICS_JOIN_TIMEOUT) && SAME(METRICS_JOIN_ERROR) &&
                       SAME(METRICS_JOINS),
               "metrics: joins");
_Static_assert(SAME(METRICS_RELEASE_ASKED) && SAME(METRICS_RELEASE_FORCED) &&
                       SAME(METRICS_RELEASE_LINGER) && SAME(METRICS_RELEASES),
               "metrics: releases");
_Static_assert(SAME(METRICS_LOOKUP_OK) && SAME(METRICS_LOOKUP_NOT_FOUND) &&
                       SAME(METRICS_LOOKUP_TIMEOUT) && SAME(METRICS_LOOKUP_ERROR) &&
                       SAME(METRICS_LOOKUPS),
               "metrics: lookups");
_Static_assert(SAME(METRICS_THROTTLE_RATE) && SAME(METRICS_THROTTLE_CONNECTIONS) &&
                       SAME(METRICS_THROTTLE_LOOKUP_QUEUE) && SAME(METRICS_THROTTLES),
               "metrics: throttles");
_Static_assert(SAME(METRICS_SOCKET_USER) && SAME(METRICS_SOCKET_ROOT) && SAME(METRICS_SOCKETS) &&
                       SAME(METRICS_LATENCY_BUCKETS),
               "metrics: sockets, buckets");
_Static_assert(sizeof(((struct nsc_ns_info *) 0)->pin) == NSD_PIN_PATH_MAX, "pin size");

/* The most SCM_RIGHTS descriptors one receive accepts into its control buffer; anything
 * beyond NSD_MSG_FDS_MAX is closed and the reply refused. A larger buffer than the protocol
 * needs, so that a misbehaving peer's extra descriptors reach us and get closed instead of
 * being cut off with MSG_CTRUNC. */
#define RECV_FDS_MAX 16

/* LIST: more entries than this in one answer is refused with -EFBIG. */
#define LIST_ENTRIES_MAX (1u << 20)
/* The most shares nsc_shares() takes (nsd's configuration has at most 32). */
#define SHARES_MAX 4096u

struct nsc_conn {
        pthread_mutex_t lock;
        int fd;
        int broken;            /* 0, or the error that put the conversation out of step */
        uint32_t seq;          /* of the last request sent */
        uint64_t timeout_usec; /* per call; 0 = forever */
        uint64_t deadline;     /* of the call in progress, CLOCK_MONOTONIC usec; 0 = none */
        bool no_join_session;  /* nsd < 1.2: JOIN_SESSION was refused, use the fallback */
        char path[sizeof(((struct sockaddr_un *) 0)->sun_path)]; /* for the fallback */
        bool has_error_message;
        char error_message[NSD_ERROR_MESSAGE_MAX];
        /* one received datagram; one byte more than the protocol allows, see MSG_TRUNC */
        union {
                struct nsd_msg_header hdr;
                struct nsd_rep_join join;
                struct nsd_rep_session_open session_open;
                struct nsd_rep_session_close session_close;
                struct nsd_rep_join_session join_session;
                struct nsd_rep_status status;
                struct nsd_rep_metrics metrics;
                struct nsd_rep_list_entry list_entry;
                struct nsd_rep_stream_end stream_end;
                struct nsd_rep_shares_entry shares_entry;
                struct nsd_rep_shares_members shares_members;
                struct nsd_rep_volumes_entry volumes_entry;
                struct nsd_rep_credential_give credential_give;
                struct nsd_rep_credential_unlock credential_unlock;
                struct nsd_rep_volume_ctl volume_ctl;
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

static uint64_t deadline_after(uint64_t usec);

/* Take the lock; a call starts, and with it its deadline. */
static void conn_lock(nsc_conn *c) {
        pthread_mutex_lock(&c->lock);
        c->deadline = deadline_after(c->timeout_usec);
}
static void conn_unlock(nsc_conn **c) {
        if (*c)
                pthread_mutex_unlock(&(*c)->lock);
}
/* Lock c for the rest of the scope: one call. */
#define CONN_LOCK_SCOPE(c) \
        __attribute__((cleanup(conn_unlock), unused)) nsc_conn *_locked_ = (conn_lock(c), (c))

/* The deadline of something that may take usec from now; 0 (= none) for usec 0. */
static uint64_t deadline_after(uint64_t usec) {
        return usec == 0 ? 0 : now_usec(CLOCK_MONOTONIC) + usec;
}

/* The time left until deadline (> 0), or -ETIMEDOUT; INT64_MAX for no deadline. */
static int64_t time_left(uint64_t deadline) {
        uint64_t now;

        if (deadline == 0)
                return INT64_MAX;
        now = now_usec(CLOCK_MONOTONIC);
        if (now >= deadline)
                return -ETIMEDOUT;
        return (int64_t) (deadline - now);
}

/* Connect a new socket to path (a sockaddr_un path that fits), the wait for a full backlog
 * bounded by deadline. Returns the descriptor or -errno; -ETIMEDOUT when time ran out. */
static int socket_connect(const char *path, uint64_t deadline) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return NEG_ERRNO();
        for (;;) {
                int64_t left = time_left(deadline);

                if (left < 0)
                        return -ETIMEDOUT;
                if (deadline != 0) {
                        /* a listener with a full backlog: connect() waits SO_SNDTIMEO, then
                         * fails with EAGAIN */
                        struct timeval tv = {
                                .tv_sec = (time_t) (left / 1000000),
                                .tv_usec = (suseconds_t) (left % 1000000),
                        };

                        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                                return NEG_ERRNO();
                }
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
        return TAKE_FD(fd);
}

/* Check a socket path the caller gave and copy it into buf (of sun_path's size). */
static int socket_path_check(const char *path, char *buf) {
        size_t len = strlen(path);

        if (len == 0)
                return -EINVAL;
        if (len >= sizeof(((struct sockaddr_un *) 0)->sun_path))
                return -ENAMETOOLONG;
        memcpy(buf, path, len + 1);
        return 0;
}

int nsc_connect_timeout(const char *socket_path, uint64_t usec, nsc_conn **ret_conn) {
        char path[sizeof(((struct sockaddr_un *) 0)->sun_path)];
        uint64_t deadline;
        _cleanup_close_ int fd = -1;
        nsc_conn *c;
        int r;

        if (!ret_conn || usec / 1000000 > INT_MAX)
                return -EINVAL;
        deadline = deadline_after(usec);
        if (socket_path) {
                r = socket_path_check(socket_path, path);
                if (r < 0)
                        return r;
                fd = socket_connect(path, deadline);
        } else {
                /* secure_getenv: a setuid program (su, login) running our PAM module must not
                 * be pointed at a socket of the invoking user's choosing */
                const char *e = secure_getenv("NSD_SOCKET");

                if (e && *e) {
                        r = socket_path_check(e, path);
                        if (r < 0)
                                return r;
                        fd = socket_connect(path, deadline);
                } else {
                        fd = -ENOENT;
                        /* root's own door (nsd >= 1.2); an older nsd has none */
                        if (geteuid() == 0) {
                                strcpy(path, NSD_ROOT_SOCKET_PATH_DEFAULT);
                                fd = socket_connect(path, deadline);
                        }
                        if (fd == -ENOENT) {
                                strcpy(path, NSD_SOCKET_PATH_DEFAULT);
                                fd = socket_connect(path, deadline);
                        }
                }
        }
        if (fd < 0)
                return fd;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = pthread_mutex_init(&c->lock, NULL);
        if (r != 0) {
                free(c);
                return -r;
        }
        c->fd = TAKE_FD(fd);
        c->timeout_usec = usec;
        memcpy(c->path, path, sizeof(c->path));
        *ret_conn = c;
        return 0;
}

int nsc_connect(const char *socket_path, nsc_conn **ret_conn) {
        return nsc_connect_timeout(socket_path, NSC_TIMEOUT_DEFAULT_USEC, ret_conn);
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
        conn->timeout_usec = usec;
        return 0;
}

const char *nsc_last_error_message(nsc_conn *conn) {
        if (!conn)
                return NULL;
        return conn->has_error_message ? conn->error_message : NULL;
}

/* ---- transport --------------------------------------------------------------------------- */

/* Wait until fd is ready for events or the call's deadline passes (-ETIMEDOUT). */
static int conn_wait(nsc_conn *c, short events) {
        for (;;) {
                struct pollfd p = { .fd = c->fd, .events = events };
                int64_t left = time_left(c->deadline);
                struct timespec ts;
                int n;

                if (left < 0)
                        return -ETIMEDOUT;
                ts = (struct timespec) {
                        .tv_sec = (time_t) (left / 1000000),
                        .tv_nsec = (long) (left % 1000000) * 1000,
                };
                n = ppoll(&p, 1, left == INT64_MAX ? NULL : &ts, NULL);
                if (n > 0)
                        return 0; /* ready, or an error/hangup that the next call reports */
                if (n < 0 && errno != EINTR)
                        return NEG_ERRNO();
        }
}

/* A send or receive on c failed with r: 0 to try again (EINTR; EAGAIN once the socket is
 * ready for events, within the call's deadline), else the error, a lost connection as
 * -ECONNRESET. */
static int conn_io_retry(nsc_conn *c, int r, short events) {
        if (r == -EINTR)
                return 0;
        if (r == -EAGAIN) {
                r = conn_wait(c, events);
                if (r >= 0)
                        return 0;
        }
        if (r == -EPIPE || r == -ECONNRESET || r == -ECONNREFUSED || r == -ENOTCONN)
                return -ECONNRESET;
        return r;
}

/* Start a call: new sequence number, forget the last error message, send the request (and
 * pass_fd by SCM_RIGHTS when >= 0). The caller holds the lock. */
static int conn_send_request(nsc_conn *c, struct nsd_msg_header *req, int pass_fd) {
        ssize_t n;

        c->has_error_message = false;
        c->error_message[0] = 0;
        if (c->broken)
                return -ENOTCONN;

        if (++c->seq == 0) /* 0 is never a request's: see conn_recv_reply() */
                c->seq = 1;
        req->seq = c->seq;

        for (;;) {
                int r;

                n = send_with_fds(c->fd, req, req->length, &pass_fd, pass_fd >= 0 ? 1 : 0,
                                  MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n >= 0)
                        break;
                /* EAGAIN: nsd's receive queue is full, wait for room */
                r = conn_io_retry(c, (int) n, POLLOUT);
                if (r < 0)
                        return c->broken = r;
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
        case NSD_REQ_SHARES:
                return type == NSD_REP_SHARES_ENTRY || type == NSD_REP_SHARES_MEMBERS ||
                       type == NSD_REP_SHARES_END;
        case NSD_REQ_VOLUMES:
                return type == NSD_REP_VOLUMES_ENTRY || type == NSD_REP_VOLUMES_END;
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
                int r;

                mh = (struct msghdr) {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = sizeof(control.buf),
                };
                n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
                if (n >= 0)
                        break;
                r = conn_io_retry(c, NEG_ERRNO(), POLLIN);
                if (r < 0)
                        return r;
        }

        fds.n = cmsg_take_fds(&mh, fds.fd, NSD_MSG_FDS_MAX);
        if (fds.n > NSD_MSG_FDS_MAX) { /* the others are closed */
                fds.n = NSD_MSG_FDS_MAX;
                too_many = true;
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

/* The requests that are a bare header: STATUS, METRICS, LIST and SHARES. */
_Static_assert(sizeof(struct nsd_req_status) == sizeof(struct nsd_msg_header) &&
                       sizeof(struct nsd_req_metrics) == sizeof(struct nsd_msg_header) &&
                       sizeof(struct nsd_req_list) == sizeof(struct nsd_msg_header) &&
                       sizeof(struct nsd_req_shares) == sizeof(struct nsd_msg_header),
               "bare requests");

/* Send a request of this type that is a bare header. The caller holds the lock. */
static int conn_send_bare(nsc_conn *c, uint16_t type) {
        struct nsd_msg_header req;

        nsd_msg_init(&req, type, sizeof(req), 0);
        return conn_send_request(c, &req, -1);
}

/* A single-reply call of a bare request: its answer in c->rx. */
static int conn_call_bare(nsc_conn *c, uint16_t type) {
        int r = conn_send_bare(c, type);

        return r < 0 ? r : conn_recv_reply(c, type, NULL);
}

/* The next part of a streamed reply (LIST, SHARES, SHOW) into c->rx. An error after some
 * parts (started) leaves the stream in an unknown state: the connection is broken then. */
static int conn_recv_part(nsc_conn *c, uint16_t req_type, bool started) {
        int r = conn_recv_reply(c, req_type, NULL);

        if (r < 0 && started)
                c->broken = r;
        return r;
}

/* v (*allocated elements of size bytes) with room for need elements, doubled from first as
 * often as it takes; NULL when out of memory, v still valid then. */
static void *array_reserve(void *v, size_t *allocated, size_t need, size_t first, size_t size) {
        size_t a = *allocated ? *allocated : first;
        void *w;

        if (need <= *allocated)
                return v;
        while (a < need)
                a *= 2;
        w = reallocarray(v, a, size);
        if (w)
                *allocated = a;
        return w;
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

/* The descriptors of a JOIN or JOIN_SESSION reply for uid, checked, into *ret; on failure
 * they are closed and the connection is broken. */
static int join_result_take(nsc_conn *c, struct reply_fds *fds, uid_t uid, uint32_t rep_uid,
                            uint32_t ns_flags, uint64_t ns_inode, uint64_t created_usec,
                            struct nsc_join_result *ret) {
        int r = -EBADMSG;

        if (fds->n != 2 || rep_uid != uid)
                goto fail;
        r = join_fds_check(fds->fd[0], fds->fd[1], ns_inode);
        if (r < 0)
                goto fail;
        *ret = (struct nsc_join_result) {
                .root_fd = fds->fd[0],
                .ns_fd = fds->fd[1],
                .uid = rep_uid,
                .ns_flags = ns_flags,
                .ns_inode = ns_inode,
                .created_usec = created_usec,
        };
        fds->n = 0;
        return 0;

fail:
        reply_fds_close(fds);
        c->broken = r;
        return r;
}

static int join_locked(nsc_conn *c, uid_t uid, unsigned flags, struct nsc_join_result *ret) {
        struct nsd_req_join req;
        struct reply_fds fds = { .n = 0 };
        const struct nsd_rep_join *rep = &c->rx.join;
        int r;

        nsd_msg_init(&req.hdr, NSD_REQ_JOIN, sizeof(req), 0);
        req.uid = uid;
        req.flags = flags;
        r = conn_call(c, &req.hdr, -1, &fds);
        if (r < 0)
                return r;
        return join_result_take(c, &fds, uid, rep->uid, rep->ns_flags, rep->ns_inode,
                                rep->created_usec, ret);
}

int nsc_join(nsc_conn *conn, uid_t uid, unsigned flags, struct nsc_join_result *ret) {
        if (!conn || !ret || uid == (uid_t) -1 || (flags & ~NSC_JOIN_NO_CREATE))
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        return join_locked(conn, uid, flags, ret);
}

int nsc_enter_setns(const struct nsc_join_result *j) {
        if (!j || j->ns_fd < 0)
                return -EINVAL;
        /* the kernel sets root and cwd to the namespace's root, or changes nothing */
        if (setns(j->ns_fd, CLONE_NEWNS) < 0)
                return NEG_ERRNO();
        return 0;
}

/* Put root and cwd back to the saved descriptors after a half-done chroot entry. */
static int chroot_restore(int saved_root, int saved_cwd, bool root_changed) {
        if (root_changed && (fchdir(saved_root) < 0 || chroot(".") < 0))
                return -ENOTRECOVERABLE;
        if (fchdir(saved_cwd) < 0)
                return -ENOTRECOVERABLE;
        return 0;
}

int nsc_enter_chroot(const struct nsc_join_result *j, int *ret_used_setns) {
        _cleanup_close_ int saved_root = -1, saved_cwd = -1;
        int r;

        if (!j || j->root_fd < 0)
                return -EINVAL;

        /* A kernel with our F1 patch joins the directory's namespace and makes it root and
         * cwd, or changes nothing. A stock kernel refuses the descriptor: EINVAL for a
         * directory opened for reading, EBADF for an O_PATH one (setns() does not accept
         * O_PATH descriptors). */
        if (setns(j->root_fd, CLONE_NEWNS) >= 0) {
                if (ret_used_setns)
                        *ret_used_setns = 1;
                return 0;
        }
        if (errno != EINVAL && errno != EBADF)
                return NEG_ERRNO();

        /* Lokier's way, in three steps; all or nothing: whatever fails, root and cwd go back
         * to what they were (the login must not be left half in the other namespace) */
        saved_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (saved_root < 0)
                return NEG_ERRNO();
        saved_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (saved_cwd < 0)
                return NEG_ERRNO();

        if (fchdir(j->root_fd) < 0) /* fchdir() accepts O_PATH directories */
                return NEG_ERRNO();
        if (chroot(".") < 0) {
                r = NEG_ERRNO();
                return chroot_restore(saved_root, saved_cwd, false) < 0 ? -ENOTRECOVERABLE : r;
        }
        if (chdir("/") < 0) {
                r = NEG_ERRNO();
                return chroot_restore(saved_root, saved_cwd, true) < 0 ? -ENOTRECOVERABLE : r;
        }
        if (ret_used_setns)
                *ret_used_setns = 0;
        return 0;
}

/* ---- sessions ---------------------------------------------------------------------------- */

/* A pidfd of pid, or -1 when the kernel has no pidfd_open (< 5.3); always close-on-exec. */
static int pidfd_of(pid_t pid) {
        return (int) syscall(SYS_pidfd_open, pid, 0);
}

static int service_check(const char *service, size_t *ret_len) {
        *ret_len = 0;
        if (service) {
                *ret_len = strnlen(service, NSD_SERVICE_MAX);
                if (*ret_len >= NSD_SERVICE_MAX)
                        return -EINVAL;
        }
        return 0;
}

static int session_open_locked(nsc_conn *c, uid_t uid, pid_t pid, const char *service,
                               size_t service_len, int pidfd, uint64_t *ret_session_id,
                               unsigned *ret_sessions) {
        struct nsd_req_session_open req;
        int r;

        nsd_msg_init(&req.hdr, NSD_REQ_SESSION_OPEN, sizeof(req), 0);
        req.uid = uid;
        req.pid = (uint32_t) pid;
        req.flags = pidfd >= 0 ? NSD_SESSION_PIDFD : 0;
        if (service_len > 0)
                memcpy(req.service, service, service_len);
        r = conn_call(c, &req.hdr, pidfd, NULL);
        if (r < 0)
                return r;
        if (c->rx.session_open.session_id == 0)
                return c->broken = -EBADMSG;

        if (ret_session_id)
                *ret_session_id = c->rx.session_open.session_id;
        if (ret_sessions)
                *ret_sessions = c->rx.session_open.sessions;
        return 0;
}

int nsc_session_open(nsc_conn *conn, uid_t uid, pid_t pid, const char *service,
                     uint64_t *ret_session_id, unsigned *ret_sessions) {
        _cleanup_close_ int pidfd = -1;
        size_t len;

        if (!conn || uid == (uid_t) -1 || pid <= 0 || service_check(service, &len) < 0)
                return -EINVAL;

        pidfd = pidfd_of(pid);

        CONN_LOCK_SCOPE(conn);
        return session_open_locked(conn, uid, pid, service, len, pidfd, ret_session_id,
                                   ret_sessions);
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

/* ---- JOIN_SESSION (1.2) -------------------------------------------------------------------- */

/* A new connection to the same socket, within the call's deadline, in place of the old
 * one (which an nsd < 1.2 closed after refusing JOIN_SESSION). */
static int conn_reconnect(nsc_conn *c) {
        int fd = socket_connect(c->path, c->deadline);

        if (fd < 0)
                return fd;
        cleanup_closep(&c->fd);
        c->fd = fd;
        c->broken = 0;
        return 0;
}

int nsc_join_session(nsc_conn *conn, uid_t uid, unsigned flags, pid_t pid, const char *service,
                     struct nsc_join_result *ret_join, uint64_t *ret_session_id,
                     unsigned *ret_sessions) {
        struct nsd_req_join_session req;
        struct reply_fds fds = { .n = 0 };
        struct nsc_join_result j;
        _cleanup_close_ int pidfd = -1;
        size_t len;
        int r;

        if (!conn || !ret_join || uid == (uid_t) -1 || (flags & ~NSC_JOIN_NO_CREATE) || pid <= 0 ||
            service_check(service, &len) < 0)
                return -EINVAL;

        pidfd = pidfd_of(pid);

        CONN_LOCK_SCOPE(conn);
        if (!conn->no_join_session) {
                const struct nsd_rep_join_session *rep = &conn->rx.join_session;

                nsd_msg_init(&req.hdr, NSD_REQ_JOIN_SESSION, sizeof(req), 0);
                req.uid = uid;
                req.flags = flags | (pidfd >= 0 ? NSD_JOIN_SESSION_PIDFD : 0);
                req.pid = (uint32_t) pid;
                if (len > 0)
                        memcpy(req.service, service, len);
                r = conn_call(conn, &req.hdr, pidfd, &fds);
                if (r != -EOPNOTSUPP) {
                        if (r < 0)
                                return r;
                        if (rep->session_id == 0) {
                                reply_fds_close(&fds);
                                return conn->broken = -EBADMSG;
                        }
                        r = join_result_take(conn, &fds, uid, rep->uid, rep->ns_flags,
                                             rep->ns_inode, rep->created_usec, &j);
                        if (r < 0)
                                return r;
                        if (ret_session_id)
                                *ret_session_id = rep->session_id;
                        if (ret_sessions)
                                *ret_sessions = rep->sessions;
                        *ret_join = j;
                        return 0;
                }
                /* nsd < 1.2: "unknown request type", and it closed the connection */
                conn->no_join_session = true;
                r = conn_reconnect(conn);
                if (r < 0)
                        return conn->broken = r;
        }

        /* the fallback: two requests, the same promise (nothing left open on failure) */
        r = join_locked(conn, uid, flags, &j);
        if (r < 0)
                return r;
        r = session_open_locked(conn, uid, pid, service, len, pidfd, ret_session_id, ret_sessions);
        if (r < 0) {
                cleanup_closep(&j.root_fd);
                cleanup_closep(&j.ns_fd);
                return r;
        }
        *ret_join = j;
        return 1;
}

/* ---- status and inspection --------------------------------------------------------------- */

int nsc_status(nsc_conn *conn, struct nsc_status *ret) {
        const struct nsd_rep_status *rep;
        int r;

        if (!conn || !ret)
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        r = conn_call_bare(conn, NSD_REQ_STATUS);
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

/* nsd's METRICS reply into *ret, size bytes of it (an older caller's struct is shorter). */
static int metrics_get(nsc_conn *conn, struct nsc_metrics *ret, size_t size) {
        const struct nsd_rep_metrics *rep;
        struct nsc_metrics m;
        int r;

        CONN_LOCK_SCOPE(conn);
        r = conn_call_bare(conn, NSD_REQ_METRICS);
        if (r < 0)
                return r;
        rep = &conn->rx.metrics;

        m = (struct nsc_metrics) {
                .namespaces = rep->namespaces,
                .pinned = rep->pinned,
                .sessions = rep->sessions,
                .fdstore_entries = rep->fdstore_entries,
                .join_latency_sum_usec = rep->join_latency_sum_usec,
                .created = rep->created,
                .setup_failures = rep->setup_failures,
                .path_walk_timeouts = rep->path_walk_timeouts,
        };
        memcpy(m.connections, rep->connections, sizeof(m.connections));
        memcpy(m.joins, rep->joins, sizeof(m.joins));
        memcpy(m.join_latency, rep->join_latency, sizeof(m.join_latency));
        memcpy(m.releases, rep->releases, sizeof(m.releases));
        memcpy(m.lookups, rep->lookups, sizeof(m.lookups));
        memcpy(m.throttled, rep->throttled, sizeof(m.throttled));
        memcpy(m.lookup_timeouts, rep->lookup_timeouts, sizeof(m.lookup_timeouts));
        memcpy(ret, &m, size < sizeof m ? size : sizeof m);
        /* a caller built against a newer header: its fields this library does not know are 0,
         * as an older nsd's are, not what the caller's memory held */
        if (size > sizeof m)
                memset((char *) ret + sizeof m, 0, size - sizeof m);
        return 0;
}

int nsc_metrics(nsc_conn *conn, struct nsc_metrics *ret) {
        if (!conn || !ret)
                return -EINVAL;
        return metrics_get(conn, ret, offsetof(struct nsc_metrics, lookup_timeouts));
}

int nsc_metrics_sized(nsc_conn *conn, struct nsc_metrics *ret, size_t size) {
        if (!conn || !ret ||
            size < offsetof(struct nsc_metrics, lookup_timeouts) + sizeof(ret->lookup_timeouts))
                return -EINVAL;
        return metrics_get(conn, ret, size);
}

/* A bare request whose answer is a stream of fixed-size entries and an end of type end that
 * counts them (LIST, VOLUMES): each entry (conn->rx) goes to take(entry, &(*ret)[n]), which
 * checks it (-EBADMSG) and fills one element of size bytes; *ret is a malloc()ed array, a
 * valid pointer also for none. The caller holds the lock. */
static int conn_read_entries(nsc_conn *conn, uint16_t type, uint16_t end, size_t size,
                             int (*take)(const void *entry, void *element), void **ret,
                             size_t *ret_n) {
        _cleanup_free_ void *v = NULL;
        size_t n = 0, allocated = 0;
        int r = conn_send_bare(conn, type);

        if (r < 0)
                return r;
        for (;;) {
                void *w;

                r = conn_recv_part(conn, type, n > 0);
                if (r < 0)
                        return r;
                if (conn->rx.hdr.type == end) {
                        if (conn->rx.stream_end.count != n)
                                return conn->broken = -EBADMSG;
                        break;
                }
                if (n >= LIST_ENTRIES_MAX)
                        return conn->broken = -EFBIG;
                w = array_reserve(v, &allocated, n + 1, 16, size);
                if (!w)
                        return conn->broken = -ENOMEM;
                v = w;
                r = take(&conn->rx, (char *) v + n * size);
                if (r < 0)
                        return conn->broken = r;
                n++;
        }
        if (!v) {
                /* none: still a valid pointer the caller may free() */
                v = calloc(1, size);
                if (!v)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/* A string field of an entry into the element's field of the same size (the _Static_asserts
 * say so): false, and the entry -EBADMSG, if the entry's field holds no NUL. */
static bool take_string(char *to, const char *from, size_t size) {
        if (!nsd_field_is_string(from, size))
                return false;
        memcpy(to, from, size);
        return true;
}

static int take_list_entry(const void *entry, void *element) {
        const struct nsd_rep_list_entry *e = entry;
        struct nsc_ns_info *i = element;

        *i = (struct nsc_ns_info) {
                .uid = e->uid,
                .ns_flags = e->ns_flags,
                .sessions = e->sessions,
                .mounts = e->mounts,
                .ns_inode = e->ns_inode,
                .created_usec = e->created_usec,
        };
        return take_string(i->pin, e->pin, sizeof(i->pin)) ? 0 : -EBADMSG;
}

int nsc_list(nsc_conn *conn, struct nsc_ns_info **ret_entries, size_t *ret_n) {
        if (!conn || !ret_entries || !ret_n)
                return -EINVAL;
        CONN_LOCK_SCOPE(conn);
        return conn_read_entries(conn, NSD_REQ_LIST, NSD_REP_LIST_END, sizeof(**ret_entries),
                                 take_list_entry, (void **) ret_entries, ret_n);
}

_Static_assert(sizeof(((struct nsc_volume_info *) 0)->name) == NSD_SHARE_NAME_MAX &&
                       sizeof(((struct nsc_volume_info *) 0)->type) == NSD_VOLUME_TYPE_MAX &&
                       sizeof(((struct nsc_volume_info *) 0)->source) == NSD_SHARE_PATH_MAX &&
                       sizeof(((struct nsc_volume_info *) 0)->where) == NSD_SHARE_PATH_MAX &&
                       sizeof(((struct nsc_volume_info *) 0)->why) == NSD_VOLUME_WHY_MAX &&
                       sizeof(((struct nsc_volume_info *) 0)->options) == NSD_VOLUME_OPTIONS_MAX,
               "nsc_volume_info's strings");
_Static_assert(SAME(VOLUME_MOUNTED) && SAME(VOLUME_FAILED) && SAME(VOLUME_NOT_TRIED) &&
                       SAME(VOLUME_UNKNOWN) && SAME(VOLUME_USER) && SAME(VOLUME_STOPPED),
               "NSC_VOLUME_*");

static int take_volumes_entry(const void *entry, void *element) {
        const struct nsd_rep_volumes_entry *e = entry;
        struct nsc_volume_info *v = element;

        if (e->error > 0 || e->reserved != 0)
                return -EBADMSG;
        *v = (struct nsc_volume_info) {
                .uid = e->uid,
                .state = e->state,
                .error = e->error,
                .loop = e->loop,
                .at_usec = e->at_usec,
                .flags = e->flags,
        };
        if (!take_string(v->name, e->name, sizeof(v->name)) ||
            !take_string(v->type, e->type, sizeof(v->type)) ||
            !take_string(v->source, e->source, sizeof(v->source)) ||
            !take_string(v->where, e->where, sizeof(v->where)) ||
            !take_string(v->why, e->why, sizeof(v->why)) ||
            !take_string(v->options, e->options, sizeof(v->options)))
                return -EBADMSG;
        return 0;
}

int nsc_volumes(nsc_conn *conn, struct nsc_volume_info **ret, size_t *ret_n) {
        if (!conn || !ret || !ret_n)
                return -EINVAL;
        CONN_LOCK_SCOPE(conn);
        return conn_read_entries(conn, NSD_REQ_VOLUMES, NSD_REP_VOLUMES_END, sizeof(**ret),
                                 take_volumes_entry, (void **) ret, ret_n);
}

_Static_assert(SAME(CREDENTIAL_MAX) && SAME(CREDENTIAL_HOLD_SEC) && SAME(CREDENTIAL_WAIT) &&
                       SAME(VOLUME_PASSWORD) && SAME(VOLUME_ASK) && SAME(VOLUME_ON_REQUEST) &&
                       SAME(VOLUME_NOW_KNOWN) && SAME(VOLUME_NOW_MOUNTED) && SAME(VOLUME_WAITING) &&
                       SAME(VOLUME_HELD) && SAME(VOLUME_AT_LOGIN) && SAME(VOLUME_RELEASE_LAST) &&
                       SAME(VOLUME_KEY_FILE) && SAME(NS_CREDENTIAL_WANTED),
               "the credential's constants");

int nsc_credential_give(nsc_conn *conn, uid_t uid, int memfd, unsigned *ret_waiting) {
        struct nsd_req_credential_give req;
        int r;

        if (!conn || uid == (uid_t) -1 || memfd < 0)
                return -EINVAL;
        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_CREDENTIAL_GIVE, sizeof(req), 0);
        req.uid = uid;
        req.flags = NSD_CREDENTIAL_FD;
        r = conn_call(conn, &req.hdr, memfd, NULL);
        if (r < 0)
                return r;
        if (ret_waiting)
                *ret_waiting = conn->rx.credential_give.waiting;
        return 0;
}

/* A volume's name for CREDENTIAL_TAKE, CREDENTIAL_UNLOCK, VOLUME_START and VOLUME_STOP: 1 to
 * NSD_SHARE_NAME_MAX - 1 bytes, its length in *ret_len; else -EINVAL. */
static int volume_check(const char *volume, size_t *ret_len) {
        size_t n = strnlen(volume, NSD_SHARE_NAME_MAX);

        if (n == 0 || n >= NSD_SHARE_NAME_MAX)
                return -EINVAL;
        *ret_len = n;
        return 0;
}

int nsc_credential_take(nsc_conn *conn, const char *volume, unsigned flags, int *ret_fd) {
        struct nsd_req_credential_take req;
        struct reply_fds fds = { .n = 0 };
        size_t n;
        int r;

        if (!conn || !volume || !ret_fd || (flags & ~NSC_CREDENTIAL_WAIT) ||
            volume_check(volume, &n) < 0)
                return -EINVAL;
        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_CREDENTIAL_TAKE, sizeof(req), 0);
        req.flags = flags;
        memcpy(req.volume, volume, n + 1);
        r = conn_call(conn, &req.hdr, -1, &fds);
        if (r < 0)
                return r;
        if (fds.n != 1) {
                reply_fds_close(&fds);
                return conn->broken = -EBADMSG;
        }
        *ret_fd = fds.fd[0];
        return 0;
}

int nsc_credential_unlock(nsc_conn *conn, const char *volume, int memfd, unsigned *ret_waiting) {
        struct nsd_req_credential_unlock req;
        size_t n;
        int r;

        if (!conn || !volume || memfd < 0 || volume_check(volume, &n) < 0)
                return -EINVAL;
        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, NSD_REQ_CREDENTIAL_UNLOCK, sizeof(req), 0);
        req.flags = NSD_CREDENTIAL_FD;
        memcpy(req.volume, volume, n + 1);
        r = conn_call(conn, &req.hdr, memfd, NULL);
        if (r < 0)
                return r;
        if (ret_waiting)
                *ret_waiting = conn->rx.credential_unlock.waiting;
        return 0;
}

/* ---- VOLUME_START, VOLUME_STOP (1.11) ------------------------------------------------------ */

/* One request of type (VOLUME_START or VOLUME_STOP) for uid's volume; its answer in *ret. */
static int volume_ctl(nsc_conn *conn, uint16_t type, uid_t uid, const char *volume,
                      struct nsc_volume_ctl *ret) {
        struct nsd_req_volume_ctl req;
        const struct nsd_rep_volume_ctl *rep;
        size_t n;
        int r;

        if (!conn || uid == (uid_t) -1 || !volume || volume_check(volume, &n) < 0)
                return -EINVAL;
        CONN_LOCK_SCOPE(conn);
        nsd_msg_init(&req.hdr, type, sizeof(req), 0);
        req.uid = uid;
        memcpy(req.volume, volume, n + 1);
        r = conn_call(conn, &req.hdr, -1, NULL);
        if (r < 0)
                return r;
        rep = &conn->rx.volume_ctl;
        if (rep->changed > 1 || rep->reserved != 0)
                return conn->broken = -EBADMSG;
        if (ret)
                *ret = (struct nsc_volume_ctl) {
                        .state = rep->state,
                        .loop = rep->loop,
                        .changed = rep->changed,
                };
        return 0;
}

int nsc_volume_start(nsc_conn *conn, uid_t uid, const char *volume, struct nsc_volume_ctl *ret) {
        return volume_ctl(conn, NSD_REQ_VOLUME_START, uid, volume, ret);
}

int nsc_volume_stop(nsc_conn *conn, uid_t uid, const char *volume, struct nsc_volume_ctl *ret) {
        return volume_ctl(conn, NSD_REQ_VOLUME_STOP, uid, volume, ret);
}

int nsc_credential_memfd(const void *secret, size_t n) {
        _cleanup_close_ int fd = -1;
        size_t done = 0;

        if (!secret || n == 0 || n > NSC_CREDENTIAL_MAX)
                return -EINVAL;
        fd = memfd_create("nsd-credential", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        while (done < n) {
                ssize_t k = write(fd, (const char *) secret + done, n - done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                done += (size_t) k;
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return -errno;
        return TAKE_FD(fd);
}

_Static_assert(sizeof(((struct nsc_share_info *) 0)->name) == NSD_SHARE_NAME_MAX,
               "nsc_share_info.name");
_Static_assert(sizeof(((struct nsc_share_info *) 0)->path) == NSD_SHARE_PATH_MAX,
               "nsc_share_info.path");
_Static_assert(SAME(SHARE_OWN_ONLY), "NSC_SHARE_OWN_ONLY");

void nsc_shares_free(struct nsc_share_info *shares, size_t n) {
        if (!shares)
                return;
        for (size_t i = 0; i < n; i++)
                free(shares[i].member);
        free(shares);
}

/* One more member part of the share being read: at most what its entry announced. */
static int shares_take_members(const struct nsd_rep_shares_members *m, struct nsc_share_info *sh,
                               size_t want) {
        if (m->n == 0 || m->n > NSD_SHARES_MEMBERS_PER_PART || m->n > want - sh->n_members)
                return -EBADMSG;
        for (uint32_t i = 0; i < m->n; i++)
                sh->member[sh->n_members++] = (struct nsc_share_member) {
                        .uid = m->members[i].uid,
                        .peer_group = m->members[i].peer_group,
                };
        return 0;
}

int nsc_shares(nsc_conn *conn, struct nsc_share_info **ret_shares, size_t *ret_n) {
        struct nsc_share_info *v = NULL;
        size_t n = 0, allocated = 0, want = 0; /* want: members the last entry announced */
        int r;

        if (!conn || !ret_shares || !ret_n)
                return -EINVAL;

        CONN_LOCK_SCOPE(conn);
        r = conn_send_bare(conn, NSD_REQ_SHARES);
        if (r < 0)
                return r;

        for (;;) {
                const struct nsd_rep_shares_entry *e;
                struct nsc_share_info *w;

                r = conn_recv_part(conn, NSD_REQ_SHARES, n > 0);
                if (r < 0)
                        goto fail;
                if (conn->rx.hdr.type == NSD_REP_SHARES_MEMBERS) {
                        if (n == 0) {
                                r = -EBADMSG;
                                goto broken;
                        }
                        r = shares_take_members(&conn->rx.shares_members, &v[n - 1], want);
                        if (r < 0)
                                goto broken;
                        continue;
                }
                /* an entry or the end: the share before has all its members */
                if (n > 0 && v[n - 1].n_members != want) {
                        r = -EBADMSG;
                        goto broken;
                }
                if (conn->rx.hdr.type == NSD_REP_SHARES_END) {
                        if (conn->rx.stream_end.count != n) {
                                r = -EBADMSG;
                                goto broken;
                        }
                        break;
                }

                e = &conn->rx.shares_entry;
                if (!nsd_field_is_string(e->name, sizeof(e->name)) ||
                    !nsd_field_is_string(e->path, sizeof(e->path))) {
                        r = -EBADMSG;
                        goto broken;
                }
                if (n >= SHARES_MAX || e->n_uids > LIST_ENTRIES_MAX) {
                        r = -EFBIG;
                        goto broken;
                }
                w = array_reserve(v, &allocated, n + 1, 8, sizeof(*v));
                if (!w) {
                        r = -ENOMEM;
                        goto broken;
                }
                v = w;
                v[n] = (struct nsc_share_info) {
                        .propagation = e->propagation,
                        .max_members = e->max_members,
                        .members = e->members,
                        .flags = e->flags,
                        .mounts = e->mounts,
                        .peer_group = e->peer_group,
                };
                memcpy(v[n].name, e->name, sizeof(v[n].name));
                memcpy(v[n].path, e->path, sizeof(v[n].path));
                want = e->n_uids;
                /* at least one element, so a share without members has a pointer too */
                v[n].member = calloc(want ? want : 1, sizeof(*v[n].member));
                n++;
                if (!v[n - 1].member) {
                        r = -ENOMEM;
                        goto broken;
                }
        }

        if (!v) {
                /* no shares: still a valid pointer the caller may nsc_shares_free() */
                v = calloc(1, sizeof(*v));
                if (!v)
                        return -ENOMEM;
        }
        *ret_shares = v;
        *ret_n = n;
        return 0;

broken:
        conn->broken = r;
fail:
        nsc_shares_free(v, n);
        return r;
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
                char *t;

                r = conn_recv_part(conn, NSD_REQ_SHOW, len > 0);
                if (r < 0)
                        return r;
                if (conn->rx.hdr.type == NSD_REP_SHOW_END)
                        break;

                part = conn->rx.hdr.length - sizeof(struct nsd_msg_header);
                if (part > NSD_SHOW_TEXT_MAX - len)
                        return conn->broken = -EFBIG;
                t = array_reserve(text, &allocated, len + part + 1, 4096, 1);
                if (!t)
                        return conn->broken = -ENOMEM;
                text = t;
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
