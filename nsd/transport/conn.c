/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conn.c: sockets, peer credentials, reply queues, limits, timeouts and rate limits. See
 * conn.h for the rules; the ConnHandler given to conn_manager_new() says what happens to a
 * message once it is read.
 *
 * A connection's life is driven by one GSource: its descriptor (G_IO_IN only while it may
 * start a request, G_IO_OUT only while replies wait or a stream has more) and its ready time
 * (the nearest of: reply deadline, idle deadline, end of a rate-limit wait). A dropped
 * connection is closed at once (its slot is free again) but its struct lives until an idle
 * callback, so that code further up the stack that still holds it sees `dead` instead of
 * freed memory.
 */
#include "transport/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "nsd-protocol.h"
#include "socket-util.h"

/* accept() at most this many connections per wakeup of a listening socket. */
#define ACCEPT_BATCH 32
/* EMFILE/ENFILE backoff: first delay, and the longest. */
#define BACKOFF_FIRST_MSEC 10u
#define BACKOFF_MAX_MSEC 2000u
/* The most descriptors read from one message; more are discarded by the kernel (MSG_CTRUNC)
 * and the message is refused. */
#define RECV_FDS_MAX 8
/* at most this many datagrams a refused client queued are read and dropped before the close */
#define REFUSE_DRAIN_MAX 16
/* Log lines a client can cause: per uid, and for all uids together. */
#define LOG_INTERVAL_USEC (10 * G_USEC_PER_SEC)
#define LOG_BURST_PER_UID 5u
#define LOG_BURST_ALL 50u
/* What a log line a client causes is about: each kind has its own limits, so that one kind
 * (thousands of idle drops) cannot hide another (a slow reader). */
typedef enum LogKind {
        LOGK_REFUSED,
        LOGK_IDLE,
        LOGK_SLOW, /* slow readers, overflows */
        LOGK_THROTTLE,
        LOGK_BAD, /* malformed messages (the handler's conn_log()) */
        _LOGK_MAX,
} LogKind;
/* Per-uid state (rate limit, log limit) is forgotten this long after its last connection. */
#define UID_STATE_KEEP_SEC 60

typedef struct OutMsg {
        size_t len;
        size_t n_fds;
        int fds[NSD_MSG_FDS_MAX];
        uint8_t data[];
} OutMsg;

typedef struct UidState {
        uid_t uid;
        unsigned n_conns;
        double tokens;       /* the request rate limit's bucket */
        int64_t refill_usec; /* 0: full, never used */
        int64_t last_usec;   /* last connection closed */
        RateLimit log_rl[_LOGK_MAX];
} UidState;

typedef struct Listener {
        ConnManager *m;
        ConnKind kind;
        int fd; /* -1: none */
        GSource *source;
        gpointer tag;
        bool paused_full; /* root's socket at MaxRootConnections= */
        guint backoff_timer;
        unsigned backoff_msec;
        RateLimit log_rl;
} Listener;

typedef struct ConnSource {
        GSource base;
        Conn *conn;
} ConnSource;

typedef struct ListenerSource {
        GSource base;
        Listener *listener;
} ListenerSource;

struct Conn {
        ConnManager *m;
        ConnKind kind;
        int fd;
        uid_t uid;
        pid_t pid;
        /* non-root peers: a pidfd of pid, opened when the connection was accepted (-1: none),
         * so that pid names the process that connected for as long as it lives */
        int pidfd;
        /* who sent the datagram being served (SCM_CREDENTIALS; pid 0: not known) */
        struct ucred sender;
        UidState *per_uid; /* NULL for root */
        GSource *source;
        gpointer tag;
        GQueue out; /* OutMsg*, oldest first */
        void *call; /* the handler's call in flight, NULL: none */
        bool dead;
        bool closing;        /* close once the queue has drained */
        bool throttled;      /* waiting for a rate-limit token */
        bool producing;      /* the call in flight wants drained() */
        int64_t stall_since; /* replies wait since (monotonic), progress resets it; 0: none */
        int64_t idle_since;  /* nothing to do since; 0: busy */
        int64_t throttle_until;
};

struct ConnManager {
        const Config *config;
        const ConnHandler *handler;
        void *userdata;
        Listener listeners[_CONN_KIND_MAX];
        GHashTable *conns; /* Conn* set */
        GHashTable *uids;  /* GUINT_TO_POINTER(uid) -> UidState* (owned) */
        unsigned n_user, n_root;
        ConnStats stats;
        RateLimit log_rl[_LOGK_MAX];      /* unprivileged callers, all together */
        RateLimit log_rl_root[_LOGK_MAX]; /* root's (not an attack, never a flood either) */
        GPtrArray *dead;                  /* Conn* dropped, to free */
        guint reap_source;
        guint sweep_timer;
};

static const char *const kind_name[_CONN_KIND_MAX] = {
        [CONN_KIND_USER] = "user",
        [CONN_KIND_ROOT] = "root",
};

static int conn_priority(bool root) {
        return root ? G_PRIORITY_HIGH : G_PRIORITY_DEFAULT;
}

static const Config *config_of(const ConnManager *m) {
        return m->config;
}

/* ---- logging a client can cause ------------------------------------------------------- */

static void manager_vlog(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                         const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));
static void manager_vlog(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                         const char *fmt, va_list ap) {
        g_autofree char *msg = NULL;
        unsigned held_uid = 0, held_all = 0;

        if (level >= LOG_DEBUG) {
                msg = g_strdup_vprintf(fmt, ap);
                log_debug("%s", msg);
                return;
        }
        if (u &&
            !ratelimit_below(&u->log_rl[kind], LOG_INTERVAL_USEC, LOG_BURST_PER_UID, &held_uid))
                return;
        if (!ratelimit_below(root ? &m->log_rl_root[kind] : &m->log_rl[kind], LOG_INTERVAL_USEC,
                             LOG_BURST_ALL, &held_all))
                return;
        msg = g_strdup_vprintf(fmt, ap);
        if (held_uid > 0 || held_all > 0)
                log_full_errno(level, 0, "%s (%u similar message%s suppressed)", msg,
                               MAX(held_uid, held_all), MAX(held_uid, held_all) == 1 ? "" : "s");
        else
                log_full_errno(level, 0, "%s", msg);
}

static void manager_log(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void manager_log(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                        const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        manager_vlog(m, u, root, kind, level, fmt, ap);
        va_end(ap);
}

void conn_log(Conn *c, int level, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        manager_vlog(c->m, c->per_uid, c->uid == 0, LOGK_BAD, level, fmt, ap);
        va_end(ap);
}

/* ---- per-uid state ------------------------------------------------------------------------ */

static UidState *uid_state_get(ConnManager *m, uid_t uid) {
        UidState *u = g_hash_table_lookup(m->uids, GUINT_TO_POINTER(uid));

        if (!u) {
                u = g_new0(UidState, 1);
                u->uid = uid;
                u->last_usec = g_get_monotonic_time();
                g_hash_table_insert(m->uids, GUINT_TO_POINTER(uid), u);
        }
        return u;
}

static void uid_refill(const Config *c, UidState *u, int64_t now) {
        double burst = c->request_burst_per_user;

        if (u->refill_usec == 0)
                u->tokens = burst;
        else
                u->tokens = MIN(burst, u->tokens + (double) (now - u->refill_usec) *
                                                           c->request_rate_per_user / 1e6);
        u->refill_usec = now;
}

/* 0 when a request may be read now, else how long until the next token (usec). */
static int64_t uid_token_wait(const Config *c, UidState *u, int64_t now) {
        uid_refill(c, u, now);
        if (u->tokens >= 1.0)
                return 0;
        return (int64_t) ((1.0 - u->tokens) * 1e6 / c->request_rate_per_user) + 1;
}

static gboolean on_sweep(gpointer userdata) {
        ConnManager *m = userdata;
        int64_t now = g_get_monotonic_time();
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, m->uids);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                UidState *u = v;
                if (u->n_conns == 0 && now - u->last_usec > UID_STATE_KEEP_SEC * G_USEC_PER_SEC)
                        g_hash_table_iter_remove(&it);
        }
        return G_SOURCE_CONTINUE;
}

/* ---- the queue -------------------------------------------------------------------------- */

static void out_msg_free(gpointer p) {
        OutMsg *o = p;

        for (size_t i = 0; i < o->n_fds; i++)
                if (o->fds[i] >= 0)
                        close(o->fds[i]);
        g_free(o);
}

/* One datagram, never blocking: 0, -EAGAIN, or the error of a connection that is gone. */
static int send_datagram(int fd, const void *msg, size_t len, const int *fds, size_t n_fds) {
        ssize_t n;

        g_assert(len <= NSD_MSG_SIZE_MAX);
        g_assert(n_fds <= NSD_MSG_FDS_MAX && n_fds <= SEND_FDS_MAX);
        do
                n = send_with_fds(fd, msg, len, fds, n_fds, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n == -EINTR);
        return n < 0 ? (int) n : 0;
}

/* ---- connections ------------------------------------------------------------------------ */

static void listener_update(Listener *l);

static gboolean on_reap(gpointer userdata) {
        ConnManager *m = userdata;

        m->reap_source = 0;
        for (guint i = 0; i < m->dead->len; i++)
                g_free(g_ptr_array_index(m->dead, i));
        g_ptr_array_set_size(m->dead, 0);
        return G_SOURCE_REMOVE;
}

typedef enum DropReason {
        DROP_GONE, /* EOF, a failed send or receive: the client left */
        DROP_IDLE,
        DROP_SLOW,
        DROP_OVERFLOW,
        DROP_BAD,  /* after a malformed message was answered */
        DROP_NOFD, /* nsd could not duplicate a descriptor for the queue */
        DROP_SHUTDOWN,
} DropReason;

static void conn_drop(Conn *c, DropReason reason) {
        ConnManager *m = c->m;
        const Config *cfg = config_of(m);
        bool root = c->uid == 0;
        char t[32];

        if (c->dead)
                return;
        c->dead = true;

        switch (reason) {
        case DROP_IDLE:
                m->stats.dropped_idle++;
                manager_log(m, c->per_uid, root, LOGK_IDLE, LOG_NOTICE,
                            "Dropping the connection of uid %u pid %u: idle for %s s "
                            "(IdleTimeoutSec=)",
                            (unsigned) c->uid, (unsigned) c->pid,
                            config_usec_to_string(cfg->idle_timeout_usec, t, sizeof t));
                break;
        case DROP_SLOW:
                m->stats.dropped_slow++;
                manager_log(m, c->per_uid, root, LOGK_SLOW, LOG_WARNING,
                            "Dropping the connection of uid %u pid %u: it does not read its "
                            "replies (none taken for %s s, ReplyTimeoutSec=)",
                            (unsigned) c->uid, (unsigned) c->pid,
                            config_usec_to_string(cfg->reply_timeout_usec, t, sizeof t));
                break;
        case DROP_OVERFLOW:
                m->stats.dropped_overflow++;
                manager_log(m, c->per_uid, root, LOGK_SLOW, LOG_WARNING,
                            "Dropping the connection of uid %u pid %u: more than %u replies wait "
                            "unread (MaxQueuedReplies=)",
                            (unsigned) c->uid, (unsigned) c->pid, cfg->max_queued_replies);
                break;
        case DROP_NOFD:
                manager_log(m, c->per_uid, root, LOGK_SLOW, LOG_WARNING,
                            "Dropping the connection of uid %u pid %u: no descriptor left to queue "
                            "its reply",
                            (unsigned) c->uid, (unsigned) c->pid);
                break;
        case DROP_BAD:
                m->stats.dropped_bad++;
                /* the refusal was logged already */
                break;
        case DROP_GONE:
        case DROP_SHUTDOWN:
                log_debug("Connection of uid %u pid %u closed", (unsigned) c->uid,
                          (unsigned) c->pid);
                break;
        }

        if (c->call)
                m->handler->gone(g_steal_pointer(&c->call));
        if (c->source) {
                g_source_destroy(c->source);
                g_source_unref(c->source);
                c->source = NULL;
        }
        close(c->fd);
        c->fd = -1;
        if (c->pidfd >= 0)
                close(c->pidfd);
        c->pidfd = -1;
        g_queue_clear_full(&c->out, out_msg_free);

        if (root) {
                m->n_root--;
                Listener *l = &m->listeners[CONN_KIND_ROOT];
                if (l->paused_full && m->n_root < cfg->max_root_connections) {
                        l->paused_full = false;
                        listener_update(l);
                }
        } else {
                m->n_user--;
                c->per_uid->n_conns--;
                c->per_uid->last_usec = g_get_monotonic_time();
        }
        g_hash_table_remove(m->conns, c);
        g_ptr_array_add(m->dead, c);
        if (!m->reap_source && reason != DROP_SHUTDOWN)
                m->reap_source = g_idle_add_full(G_PRIORITY_HIGH, on_reap, m, NULL);
}

static void conn_update(Conn *c) {
        const Config *cfg = config_of(c->m);
        GIOCondition ev = 0;
        int64_t t = -1;

        if (c->dead)
                return;
        if (!c->call && !c->closing && !c->throttled)
                ev |= G_IO_IN;
        if (!g_queue_is_empty(&c->out) || c->producing)
                ev |= G_IO_OUT;
        g_source_modify_unix_fd(c->source, c->tag, ev);

        if (!g_queue_is_empty(&c->out) && c->stall_since > 0)
                t = c->stall_since + (int64_t) cfg->reply_timeout_usec;
        if (c->throttled && (t < 0 || c->throttle_until < t))
                t = c->throttle_until;
        if (c->idle_since > 0) {
                int64_t i = c->idle_since + (int64_t) cfg->idle_timeout_usec;
                if (t < 0 || i < t)
                        t = i;
        }
        g_source_set_ready_time(c->source, t);
}

/* Nothing in flight and nothing to send: idle from now (or closed, when it was asked). */
static void conn_maybe_idle(Conn *c, int64_t now) {
        if (c->dead || c->call || !g_queue_is_empty(&c->out))
                return;
        if (c->closing) {
                conn_drop(c, DROP_BAD);
                return;
        }
        if (c->idle_since == 0)
                c->idle_since = now;
}

static void conn_flush(Conn *c, int64_t now) {
        OutMsg *o;

        while ((o = g_queue_peek_head(&c->out))) {
                int r = send_datagram(c->fd, o->data, o->len, o->fds, o->n_fds);
                if (r == -EAGAIN)
                        return;
                if (r < 0) {
                        log_debug_errno(r, "Failed to reply to uid %u pid %u: %m",
                                        (unsigned) c->uid, (unsigned) c->pid);
                        conn_drop(c, DROP_GONE);
                        return;
                }
                out_msg_free(g_queue_pop_head(&c->out));
                c->stall_since = now; /* progress */
        }
        c->stall_since = 0;
        conn_maybe_idle(c, now);
}

int conn_send(Conn *c, const void *msg, size_t len, const int *fds, size_t n_fds) {
        const Config *cfg = config_of(c->m);
        OutMsg *o;
        int r;

        if (c->dead)
                return -ECONNRESET;
        if (g_queue_is_empty(&c->out)) {
                r = send_datagram(c->fd, msg, len, fds, n_fds);
                if (r == 0)
                        return 0;
                if (r != -EAGAIN) {
                        log_debug_errno(r, "Failed to reply to uid %u pid %u: %m",
                                        (unsigned) c->uid, (unsigned) c->pid);
                        conn_drop(c, DROP_GONE);
                        return -ECONNRESET;
                }
        }
        if (g_queue_get_length(&c->out) >= cfg->max_queued_replies) {
                conn_drop(c, DROP_OVERFLOW);
                return -ECONNRESET;
        }
        o = g_malloc(sizeof *o + len);
        o->len = len;
        memcpy(o->data, msg, len);
        o->n_fds = 0;
        for (size_t i = 0; i < n_fds; i++) {
                int d = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
                if (d < 0) {
                        out_msg_free(o);
                        conn_drop(c, DROP_NOFD);
                        return -ECONNRESET;
                }
                o->fds[o->n_fds++] = d;
        }
        g_queue_push_tail(&c->out, o);
        if (c->stall_since == 0)
                c->stall_since = g_get_monotonic_time();
        c->idle_since = 0;
        conn_update(c);
        return 0;
}

bool conn_can_send(const Conn *c) {
        return !c->dead && c->out.length == 0;
}

uid_t conn_uid(const Conn *c) {
        return c->uid;
}

pid_t conn_pid(const Conn *c) {
        return c->pid;
}

int conn_pidfd(const Conn *c) {
        return c->pidfd;
}

struct ucred conn_sender(const Conn *c) {
        return c->sender;
}

ConnKind conn_kind(const Conn *c) {
        return c->kind;
}

void conn_begin_call(Conn *c, void *call) {
        g_assert(!c->call && call);
        c->call = call;
        c->idle_since = 0;
        conn_update(c);
}

void conn_call_finished(Conn *c) {
        c->call = NULL;
        c->producing = false;
        conn_maybe_idle(c, g_get_monotonic_time());
        conn_update(c);
}

void conn_want_drained(Conn *c) {
        if (c->dead)
                return;
        c->producing = true;
        conn_update(c);
}

void conn_close_after_reply(Conn *c) {
        if (c->dead)
                return;
        c->closing = true;
        conn_maybe_idle(c, g_get_monotonic_time()); /* closes now when nothing waits */
        conn_update(c);
}

/* Read one message and start its request. */
static void conn_read(Conn *c, int64_t now) {
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX + 1];
        } buf;
        union {
                struct cmsghdr h;
                char bytes[CMSG_SPACE(sizeof(int) * RECV_FDS_MAX) +
                           CMSG_SPACE(sizeof(struct ucred))];
        } control;
        struct iovec iov = { .iov_base = &buf, .iov_len = sizeof buf };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof control,
        };
        const Config *cfg = config_of(c->m);
        int fds[RECV_FDS_MAX];
        size_t n_fds = 0;
        ssize_t n;

        if (c->per_uid) {
                int64_t wait = uid_token_wait(cfg, c->per_uid, now);
                if (wait > 0) {
                        c->throttled = true;
                        c->throttle_until = now + wait;
                        c->idle_since = 0;
                        c->m->stats.throttled++;
                        manager_log(c->m, c->per_uid, false, LOGK_THROTTLE, LOG_NOTICE,
                                    "uid %u (pid %u) sends more than %u requests a second "
                                    "(RequestRatePerUser=, RequestBurstPerUser=%u), reading it "
                                    "more slowly",
                                    (unsigned) c->uid, (unsigned) c->pid,
                                    cfg->request_rate_per_user, cfg->request_burst_per_user);
                        return;
                }
        }

        n = recvmsg(c->fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                log_debug_errno(errno, "Connection of uid %u pid %u failed: %m", (unsigned) c->uid,
                                (unsigned) c->pid);
                conn_drop(c, DROP_GONE);
                return;
        }
        c->sender = (struct ucred) { .pid = 0, .uid = (uid_t) -1, .gid = (gid_t) -1 };
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS &&
                    cm->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
                        memcpy(&c->sender, CMSG_DATA(cm), sizeof c->sender);
                        continue;
                }
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k && n_fds < RECV_FDS_MAX; i++)
                        memcpy(&fds[n_fds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        }
        if (n == 0) { /* EOF (a zero-length datagram reads the same; both end the connection) */
                for (size_t i = 0; i < n_fds; i++)
                        close(fds[i]);
                conn_drop(c, DROP_GONE);
                return;
        }
        if (c->per_uid)
                c->per_uid->tokens -= 1.0;
        c->m->stats.requests++;
        c->idle_since = 0;
        c->m->handler->message(c, &buf, (size_t) n, fds, n_fds, (mh.msg_flags & MSG_CTRUNC) != 0,
                               c->m->userdata);
}

static gboolean conn_source_dispatch(GSource *src, GSourceFunc cb, gpointer userdata) {
        Conn *c = ((ConnSource *) src)->conn;
        const Config *cfg = config_of(c->m);
        GIOCondition rev = g_source_query_unix_fd(src, c->tag);
        int64_t now = g_get_monotonic_time();
        bool want_in = !c->call && !c->closing && !c->throttled;

        if (rev & G_IO_OUT)
                conn_flush(c, now);
        if (!c->dead && c->producing && c->call && conn_can_send(c))
                c->m->handler->drained(c->call);
        if (c->dead)
                return G_SOURCE_CONTINUE;

        if ((rev & G_IO_IN) && want_in)
                conn_read(c, now);
        else if (rev & (G_IO_HUP | G_IO_ERR)) {
                /* the client left while a request is in flight or its input is paused */
                conn_drop(c, DROP_GONE);
                return G_SOURCE_CONTINUE;
        }
        if (c->dead)
                return G_SOURCE_CONTINUE;

        if (c->throttled && now >= c->throttle_until) {
                c->throttled = false; /* the next dispatch reads */
        }
        if (!g_queue_is_empty(&c->out) && c->stall_since > 0 &&
            now >= c->stall_since + (int64_t) cfg->reply_timeout_usec) {
                conn_drop(c, DROP_SLOW);
                return G_SOURCE_CONTINUE;
        }
        if (c->idle_since > 0 && now >= c->idle_since + (int64_t) cfg->idle_timeout_usec) {
                conn_drop(c, DROP_IDLE);
                return G_SOURCE_CONTINUE;
        }
        conn_update(c);
        return G_SOURCE_CONTINUE;
}

static GSourceFuncs conn_source_funcs = {
        .dispatch = conn_source_dispatch,
};

/* Refuse a connection: one error reply (the socket is new, so it fits), then close. What the
 * client has already queued is read and dropped first (descriptors in it are closed by the
 * kernel): closing a unix socket with unread data resets the peer, whose next recv() then
 * reports ECONNRESET instead of the reason. A request sent after the close still meets EPIPE. */
static int conn_refuse(ConnManager *m, int fd, uid_t uid, pid_t pid, int error,
                       const char *message) {
        struct nsd_rep_error rep;
        char sink[64];

        nsd_msg_init(&rep.hdr, NSD_REP_ERROR, sizeof rep, 0);
        rep.hdr.error = -abs(error);
        g_strlcpy(rep.message, message, sizeof rep.message);
        (void) send_datagram(fd, &rep, sizeof rep, NULL, 0);
        for (int i = 0; i < REFUSE_DRAIN_MAX; i++)
                if (recv(fd, sink, sizeof sink, MSG_DONTWAIT | MSG_TRUNC) < 0 && errno != EINTR)
                        break;
        close(fd);
        manager_log(m, uid == 0 ? NULL : uid_state_get(m, uid), uid == 0, LOGK_REFUSED, LOG_WARNING,
                    "Refusing a connection of uid %u pid %u: %s", (unsigned) uid, (unsigned) pid,
                    message);
        return -abs(error);
}

int conn_manager_add(ConnManager *m, ConnKind kind, int fd, uid_t uid, pid_t pid) {
        const Config *cfg = config_of(m);
        UidState *u = NULL;
        ConnSource *src;
        Conn *c;

        if (kind == CONN_KIND_ROOT && uid != 0) {
                m->stats.refused_not_root++;
                return conn_refuse(m, fd, uid, pid, EPERM,
                                   "this socket is root's (uid 0) only; everyone else "
                                   "uses " NSD_SOCKET_PATH_DEFAULT);
        }
        if (uid == 0) {
                if (m->n_root >= cfg->max_root_connections) {
                        g_autofree char *msg =
                                g_strdup_printf("root has %u connections open, the most allowed "
                                                "(MaxRootConnections=)",
                                                m->n_root);
                        m->stats.refused_limit++;
                        return conn_refuse(m, fd, uid, pid, EUSERS, msg);
                }
        } else {
                u = uid_state_get(m, uid);
                if (m->n_user >= cfg->max_connections) {
                        g_autofree char *msg = g_strdup_printf("nsd serves at most %u connections "
                                                               "of unprivileged users at "
                                                               "once (MaxConnections=)",
                                                               cfg->max_connections);
                        m->stats.refused_limit++;
                        return conn_refuse(m, fd, uid, pid, EUSERS, msg);
                }
                if (u->n_conns >= cfg->max_connections_per_user) {
                        g_autofree char *msg =
                                g_strdup_printf("uid %u has %u connections open, the most allowed "
                                                "(MaxConnectionsPerUser=)",
                                                (unsigned) uid, u->n_conns);
                        m->stats.refused_limit++;
                        return conn_refuse(m, fd, uid, pid, EUSERS, msg);
                }
        }

        c = g_new0(Conn, 1);
        c->m = m;
        c->kind = kind;
        c->fd = fd;
        c->uid = uid;
        c->pid = pid;
        c->pidfd = -1;
        c->sender.pid = 0;
        c->per_uid = u;
        /* every datagram names its sender (the handlers' descriptor policy asks who sent a
         * request, not only who connected); the listening socket has it too, so that
         * datagrams sent before this call carry it as well */
        (void) setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &(int) { 1 }, sizeof(int));
        /* right after accept(): pid is the process that connected, unless it died in the
         * moment between its connect() and nsd's accept() and the pid came round again */
        if (uid != 0 && pid > 0) {
                c->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
                if (c->pidfd < 0)
                        log_debug_errno(errno,
                                        "Cannot open a pidfd of uid %u pid %u, it gets "
                                        "no descriptors: %m",
                                        (unsigned) uid, (unsigned) pid);
        }
        g_queue_init(&c->out);
        c->idle_since = g_get_monotonic_time();
        if (uid == 0)
                m->n_root++;
        else {
                m->n_user++;
                u->n_conns++;
        }
        src = (ConnSource *) g_source_new(&conn_source_funcs, sizeof(ConnSource));
        src->conn = c;
        c->source = &src->base;
        g_source_set_priority(c->source, conn_priority(uid == 0));
        g_source_set_name(c->source, "nsd connection");
        c->tag = g_source_add_unix_fd(c->source, fd, G_IO_IN);
        g_source_attach(c->source, g_main_context_get_thread_default());
        g_hash_table_add(m->conns, c);
        m->stats.accepted++;
        conn_update(c);
        log_debug("Connection of uid %u pid %u on the %s socket", (unsigned) uid, (unsigned) pid,
                  kind_name[kind]);
        return 0;
}

/* ---- listening sockets ------------------------------------------------------------------ */

static void listener_update(Listener *l) {
        if (!l->source)
                return;
        g_source_modify_unix_fd(l->source, l->tag,
                                l->paused_full || l->backoff_timer ? 0 : G_IO_IN);
}

static gboolean on_backoff_over(gpointer userdata) {
        Listener *l = userdata;

        l->backoff_timer = 0;
        listener_update(l);
        return G_SOURCE_REMOVE;
}

static void listener_backoff(Listener *l, int error) {
        ConnManager *m = l->m;
        unsigned held = 0;

        l->backoff_msec = l->backoff_msec == 0 ? BACKOFF_FIRST_MSEC
                                               : MIN(l->backoff_msec * 2, BACKOFF_MAX_MSEC);
        m->stats.accept_backoffs++;
        if (ratelimit_below(&l->log_rl, 30 * G_USEC_PER_SEC, 1, &held))
                log_warning_errno(error,
                                  "Cannot accept connections on the %s socket: %m; "
                                  "pausing it for %u ms (and longer while this lasts)%s",
                                  kind_name[l->kind], l->backoff_msec,
                                  held ? ", this happened again meanwhile" : "");
        l->backoff_timer = g_timeout_add_full(conn_priority(l->kind == CONN_KIND_ROOT),
                                              l->backoff_msec, on_backoff_over, l, NULL);
        listener_update(l);
}

static gboolean listener_source_dispatch(GSource *src, GSourceFunc cb, gpointer userdata) {
        Listener *l = ((ListenerSource *) src)->listener;
        ConnManager *m = l->m;

        for (int i = 0; i < ACCEPT_BATCH; i++) {
                struct ucred cred;
                socklen_t len = sizeof cred;
                int fd;

                if (l->kind == CONN_KIND_ROOT && m->n_root >= config_of(m)->max_root_connections) {
                        /* root's next connection waits in the backlog, not refused */
                        l->paused_full = true;
                        listener_update(l);
                        break;
                }
                fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) {
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                break;
                        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                                continue;
                        /* EMFILE, ENFILE, ENOBUFS, ENOMEM, or anything else that would
                         * come back at once: wait instead of spinning */
                        listener_backoff(l, errno);
                        break;
                }
                l->backoff_msec = 0;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                        log_warning_errno(errno, "Cannot read the credentials of a client, "
                                                 "dropping it: %m");
                        close(fd);
                        continue;
                }
                (void) conn_manager_add(m, l->kind, fd, cred.uid, cred.pid);
        }
        return G_SOURCE_CONTINUE;
}

static GSourceFuncs listener_source_funcs = {
        .dispatch = listener_source_dispatch,
};

int conn_manager_listen(ConnManager *m, ConnKind kind, int fd) {
        Listener *l = &m->listeners[kind];
        ListenerSource *src;

        g_assert(kind < _CONN_KIND_MAX);
        g_assert(l->fd < 0);
        l->fd = fd;
        /* accepted sockets inherit it: every datagram carries its sender's credentials */
        if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &(int) { 1 }, sizeof(int)) < 0)
                log_warning_errno(errno,
                                  "Cannot set SO_PASSCRED on the %s socket, ignoring: "
                                  "%m",
                                  kind_name[kind]);
        src = (ListenerSource *) g_source_new(&listener_source_funcs, sizeof(ListenerSource));
        src->listener = l;
        l->source = &src->base;
        g_source_set_priority(l->source, conn_priority(kind == CONN_KIND_ROOT));
        g_source_set_name(l->source, "nsd listener");
        l->tag = g_source_add_unix_fd(l->source, fd, G_IO_IN);
        g_source_attach(l->source, g_main_context_get_thread_default());
        return 0;
}

/* ---- the manager ------------------------------------------------------------------------ */

ConnManager *conn_manager_new(const Config *config, const ConnHandler *handler, void *userdata) {
        ConnManager *m = g_new0(ConnManager, 1);

        m->config = config;
        m->handler = handler;
        m->userdata = userdata;
        for (int k = 0; k < _CONN_KIND_MAX; k++) {
                m->listeners[k].m = m;
                m->listeners[k].kind = (ConnKind) k;
                m->listeners[k].fd = -1;
        }
        m->conns = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->uids = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        m->dead = g_ptr_array_new();
        m->sweep_timer = g_timeout_add_seconds(UID_STATE_KEEP_SEC, on_sweep, m);
        return m;
}

void conn_manager_free(ConnManager *m) {
        GList *all;

        if (!m)
                return;
        all = g_hash_table_get_keys(m->conns);
        for (GList *l = all; l; l = l->next)
                conn_drop(l->data, DROP_SHUTDOWN);
        g_list_free(all);
        for (int i = 0; i < _CONN_KIND_MAX; i++) {
                Listener *l = &m->listeners[i];
                if (l->backoff_timer)
                        g_source_remove(l->backoff_timer);
                if (l->source) {
                        g_source_destroy(l->source);
                        g_source_unref(l->source);
                }
                if (l->fd >= 0)
                        close(l->fd);
        }
        if (m->reap_source)
                g_source_remove(m->reap_source);
        on_reap(m);
        g_ptr_array_unref(m->dead);
        g_source_remove(m->sweep_timer);
        g_hash_table_destroy(m->conns);
        g_hash_table_destroy(m->uids);
        g_free(m);
}

void conn_manager_reconfigure(ConnManager *m) {
        Listener *l = &m->listeners[CONN_KIND_ROOT];
        GHashTableIter it;
        gpointer k;

        if (l->paused_full && m->n_root < config_of(m)->max_root_connections) {
                l->paused_full = false;
                listener_update(l);
        }
        g_hash_table_iter_init(&it, m->conns);
        while (g_hash_table_iter_next(&it, &k, NULL))
                conn_update(k);
}

const ConnStats *conn_manager_stats(const ConnManager *m) {
        return &m->stats;
}

unsigned conn_manager_count(const ConnManager *m) {
        return m->n_user + m->n_root;
}

unsigned conn_manager_count_uid(const ConnManager *m, uid_t uid) {
        UidState *u;

        if (uid == 0)
                return m->n_root;
        u = g_hash_table_lookup(m->uids, GUINT_TO_POINTER(uid));
        return u ? u->n_conns : 0;
}

bool conn_manager_accepting(const ConnManager *m, ConnKind kind) {
        const Listener *l = &m->listeners[kind];

        return l->fd >= 0 && !l->paused_full && !l->backoff_timer;
}
