/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conn.c: sockets, peer credentials, reply queues, limits, timeouts and rate limits. See
 * conn.h for the rules; the ConnHandler given to conn_manager_new() says what happens to a
 * message once it is read.
 *
 * The loop (O(ready), not O(connections)): the connections wait in one epoll set per
 * priority (root's, everyone else's), each set one GSource of its own (ConnLoop) whose ready
 * time is the nearest deadline of its connections, kept in a sorted sequence. A wakeup costs
 * what is ready, however many connections sit idle: GLib's poll() sees two descriptors, not
 * one per connection. A connection's interest (EPOLLIN only while it may start a request,
 * EPOLLOUT only while replies wait or a stream has more) and its deadline (the nearest of:
 * reply deadline, idle deadline, end of a rate-limit wait, a set-uid program's first
 * request) change only when its state does. A dropped connection is closed at once (its slot
 * is free again) but its struct lives until an idle callback, so that code further up the
 * stack (or later in the same batch of events) that still holds it sees `dead` instead of
 * freed memory.
 *
 * Budgets count people: a connection counts against its "person", the owner of the subuid
 * range its uid is in (conn_manager_set_person_fn(); the uid itself when none). A refused
 * client is kept a moment (at most REFUSED_MAX of them, REFUSED_LINGER_MSEC each) so that the
 * request it sends after the refusal is read and dropped before the close: it then reads the
 * reason, not EPIPE or ECONNRESET.
 */
#include "transport/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/metrics.h"
#include "cleanup.h"
#include "nsd-protocol.h"
#include "pidfd-util.h"
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
/* events taken from an epoll set per dispatch: then GLib looks at higher priorities again */
#define EPOLL_BATCH 64
/* refused clients kept open until their first request is read (so they read the reason) */
#define REFUSED_MAX 64
#define REFUSED_LINGER_MSEC 1000
/* SO_PEERPIDFD (Linux 6.5): a pidfd of the process that connected, from the kernel */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

typedef struct OutMsg {
        size_t len;
        size_t n_fds;
        int fds[NSD_MSG_FDS_MAX];
        uint8_t data[];
} OutMsg;

/* What one person (a uid, or the owner of a subuid range) holds on the user socket, or what
 * one real uid holds of root's connections through set-uid programs (setuid). */
typedef struct UidState {
        uid_t uid;
        unsigned n_conns;
        unsigned n_setuid;   /* root connections whose real uid is this uid */
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

/* One epoll set and the deadlines of its connections, as one GSource. */
typedef struct ConnLoop {
        GSource base;
        ConnManager *m;
        int epfd;
        gpointer tag;
        GSequence *timers; /* Conn*, nearest deadline first */
} ConnLoop;

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
        UidState *per_uid; /* its person's, NULL for root */
        UidState *setuid;  /* root's connection of a set-uid program: its real uid's */
        ConnLoop *loop;
        uint32_t events;        /* the epoll interest now */
        int64_t deadline;       /* -1: none */
        GSequenceIter *timer;   /* in loop->timers while deadline >= 0 */
        int64_t first_deadline; /* set-uid: its first request by then; 0: none (or came) */
        bool refused;           /* kept only to read what it sent, then closed */
        GQueue out;             /* OutMsg*, oldest first */
        void *call;             /* the handler's call in flight, NULL: none */
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
        GHashTable *conns;  /* Conn* set */
        GHashTable *uids;   /* GUINT_TO_POINTER(uid) -> UidState* (owned) */
        ConnLoop *loops[2]; /* [1]: root's, at a higher priority */
        uid_t (*person)(uid_t uid, gid_t gid, void *userdata);
        void *person_userdata;
        unsigned n_user, n_root, n_refused;
        unsigned n_kind[_CONN_KIND_MAX]; /* served connections per socket (METRICS) */
        bool no_peerpidfd;               /* the kernel has no SO_PEERPIDFD (before 6.5) */
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

/* A line a client caused; with an event (NULL: none), it is one of the journal's events about
 * the client of uid (log_event_reason()). */
typedef struct ClientEvent {
        uid_t uid;
        const char *event;
        const char *reason;
} ClientEvent;

static void manager_vlog(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                         const ClientEvent *ev, const char *fmt, va_list ap)
        __attribute__((format(printf, 7, 0)));
static void manager_vlog(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                         const ClientEvent *ev, const char *fmt, va_list ap) {
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
        if (held_uid > 0 || held_all > 0) {
                unsigned held = MAX(held_uid, held_all);
                if (ev)
                        log_event_reason(level, 0, ev->uid, ev->event, ev->reason,
                                         "%s (%u similar message%s suppressed)", msg, held,
                                         held == 1 ? "" : "s");
                else
                        log_full_errno(level, 0, "%s (%u similar message%s suppressed)", msg, held,
                                       held == 1 ? "" : "s");
        } else if (ev)
                log_event_reason(level, 0, ev->uid, ev->event, ev->reason, "%s", msg);
        else
                log_full_errno(level, 0, "%s", msg);
}

static void manager_log(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                        const ClientEvent *ev, const char *fmt, ...)
        __attribute__((format(printf, 7, 8)));
static void manager_log(ConnManager *m, UidState *u, bool root, LogKind kind, int level,
                        const ClientEvent *ev, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        manager_vlog(m, u, root, kind, level, ev, fmt, ap);
        va_end(ap);
}

void conn_log_event(Conn *c, int level, const char *event, const char *reason, const char *fmt,
                    ...) {
        ClientEvent ev = { .uid = c->uid, .event = event, .reason = reason };
        va_list ap;

        va_start(ap, fmt);
        manager_vlog(c->m, c->per_uid, c->uid == 0, LOGK_BAD, level, event ? &ev : NULL, fmt, ap);
        va_end(ap);
}

/* ---- per-uid state ------------------------------------------------------------------------ */

static uid_t person_of(const ConnManager *m, uid_t uid, gid_t gid) {
        return m->person ? m->person(uid, gid, m->person_userdata) : uid;
}

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
                if (u->n_conns == 0 && u->n_setuid == 0 &&
                    now - u->last_usec > UID_STATE_KEEP_SEC * G_USEC_PER_SEC)
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
        DROP_BAD,        /* after a malformed message was answered */
        DROP_NOFD,       /* nsd could not duplicate a descriptor for the queue */
        DROP_NO_REQUEST, /* a set-uid program's connection sent nothing in time */
        DROP_REFUSED,    /* a refused client's first request was read (or it left) */
        DROP_SHUTDOWN,
} DropReason;

/* ---- the loop: one epoll set per priority ------------------------------------------------ */

static gint timer_cmp(gconstpointer a, gconstpointer b, gpointer userdata) {
        const Conn *x = a, *y = b;

        if (x->deadline != y->deadline)
                return x->deadline < y->deadline ? -1 : 1;
        return x < y ? -1 : x > y ? 1 : 0;
}

static void loop_update_ready(ConnLoop *l) {
        GSequenceIter *it = g_sequence_get_begin_iter(l->timers);

        g_source_set_ready_time(&l->base, g_sequence_iter_is_end(it)
                                                  ? -1
                                                  : ((const Conn *) g_sequence_get(it))->deadline);
}

static void conn_set_deadline(Conn *c, int64_t t) {
        if (t == c->deadline && (t < 0) == (c->timer == NULL))
                return;
        if (c->timer) {
                g_sequence_remove(c->timer);
                c->timer = NULL;
        }
        c->deadline = t;
        if (t >= 0)
                c->timer = g_sequence_insert_sorted(c->loop->timers, c, timer_cmp, NULL);
        loop_update_ready(c->loop);
}

static void conn_set_events(Conn *c, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = c };

        if (events == c->events)
                return;
        if (epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
                log_warning_errno(errno, "Cannot watch the connection of uid %u pid %u: %m",
                                  (unsigned) c->uid, (unsigned) c->pid);
        c->events = events;
}

/* Into its loop: 0, or -errno (then nothing was done). */
static int conn_watch(Conn *c, ConnLoop *loop, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = c };

        if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
                return -errno;
        c->loop = loop;
        c->events = events;
        c->deadline = -1;
        return 0;
}

static void conn_unwatch(Conn *c) {
        if (!c->loop)
                return;
        (void) epoll_ctl(c->loop->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        if (c->timer) {
                g_sequence_remove(c->timer);
                c->timer = NULL;
                loop_update_ready(c->loop);
        }
        c->loop = NULL;
}

/* Count and log a drop (a drop nobody needs to hear of is logged at debug). */
static void conn_drop_say(Conn *c, DropReason reason) {
        ConnManager *m = c->m;
        const Config *cfg = config_of(m);
        g_autofree char *why = NULL;
        LogKind kind = LOGK_SLOW;
        int level = LOG_WARNING;
        char t[32];

        switch (reason) {
        case DROP_IDLE:
                m->stats.dropped_idle++;
                kind = LOGK_IDLE;
                level = LOG_NOTICE;
                why = g_strdup_printf("idle for %s s (IdleTimeoutSec=)",
                                      config_usec_to_string(cfg->idle_timeout_usec, t, sizeof t));
                break;
        case DROP_SLOW:
                m->stats.dropped_slow++;
                why = g_strdup_printf("it does not read its replies (none taken for %s s, "
                                      "ReplyTimeoutSec=)",
                                      config_usec_to_string(cfg->reply_timeout_usec, t, sizeof t));
                break;
        case DROP_OVERFLOW:
                m->stats.dropped_overflow++;
                why = g_strdup_printf("more than %u replies wait unread (MaxQueuedReplies=)",
                                      cfg->max_queued_replies);
                break;
        case DROP_NOFD:
                why = g_strdup("no descriptor left to queue its reply");
                break;
        case DROP_BAD:
                m->stats.dropped_bad++;
                return; /* the refusal was logged already */
        case DROP_NO_REQUEST:
                m->stats.dropped_no_request++;
                /* rate limited as its real uid's */
                why = g_strdup_printf("no request within %s s (SetuidRequestTimeoutSec=)",
                                      config_usec_to_string(cfg->setuid_request_timeout_usec, t,
                                                            sizeof t));
                manager_log(m, c->setuid, true, LOGK_IDLE, LOG_NOTICE,
                            &(ClientEvent) { c->uid, "client-dropped", why },
                            "Dropping the connection of uid %u pid %u (a set-uid program of uid "
                            "%u): %s",
                            (unsigned) c->uid, (unsigned) c->pid,
                            (unsigned) (c->setuid ? c->setuid->uid : 0), why);
                return;
        case DROP_REFUSED: /* logged when it was refused */
        case DROP_GONE:
        case DROP_SHUTDOWN:
                log_debug("Connection of uid %u pid %u closed", (unsigned) c->uid,
                          (unsigned) c->pid);
                return;
        }
        manager_log(m, c->per_uid, c->uid == 0, kind, level,
                    &(ClientEvent) { c->uid, "client-dropped", why },
                    "Dropping the connection of uid %u pid %u: %s", (unsigned) c->uid,
                    (unsigned) c->pid, why);
}

static void conn_drop(Conn *c, DropReason reason) {
        ConnManager *m = c->m;
        const Config *cfg = config_of(m);
        bool root = c->uid == 0;

        if (c->dead)
                return;
        c->dead = true;
        conn_drop_say(c, reason);

        if (c->call)
                m->handler->gone(g_steal_pointer(&c->call));
        conn_unwatch(c);
        close(c->fd);
        c->fd = -1;
        if (c->pidfd >= 0)
                close(c->pidfd);
        c->pidfd = -1;
        g_queue_clear_full(&c->out, out_msg_free);

        if (!c->refused)
                m->n_kind[c->kind]--;
        if (c->refused)
                m->n_refused--;
        else if (root) {
                m->n_root--;
                if (c->setuid) {
                        c->setuid->n_setuid--;
                        c->setuid->last_usec = g_get_monotonic_time();
                }
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
        uint32_t ev = 0;
        int64_t t = -1;

        if (c->dead || c->refused)
                return;
        if (!c->call && !c->closing && !c->throttled)
                ev |= EPOLLIN;
        if (!g_queue_is_empty(&c->out) || c->producing)
                ev |= EPOLLOUT;
        conn_set_events(c, ev);

        if (!g_queue_is_empty(&c->out) && c->stall_since > 0)
                t = c->stall_since + (int64_t) cfg->reply_timeout_usec;
        if (c->throttled && (t < 0 || c->throttle_until < t))
                t = c->throttle_until;
        if (c->idle_since > 0) {
                int64_t i = c->idle_since + (int64_t) cfg->idle_timeout_usec;
                if (t < 0 || i < t)
                        t = i;
        }
        if (c->first_deadline > 0 && (t < 0 || c->first_deadline < t))
                t = c->first_deadline;
        conn_set_deadline(c, t);
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
                        metrics_count_throttled(NSD_METRICS_THROTTLE_RATE);
                        manager_log(c->m, c->per_uid, false, LOGK_THROTTLE, LOG_NOTICE, NULL,
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
        c->first_deadline = 0;
        c->m->stats.requests++;
        c->idle_since = 0;
        c->m->handler->message(c, &buf, (size_t) n, fds, n_fds, (mh.msg_flags & MSG_CTRUNC) != 0,
                               c->m->userdata);
}

/* Read and drop what a client queued (at most REFUSE_DRAIN_MAX datagrams; descriptors in
 * them are closed by the kernel): closing a unix socket with unread data resets the peer,
 * whose next recv() then reports ECONNRESET instead of the reply waiting for it. */
static void drain(int fd) {
        char sink[64];

        for (int i = 0; i < REFUSE_DRAIN_MAX; i++)
                if (recv(fd, sink, sizeof sink, MSG_DONTWAIT | MSG_TRUNC) < 0 && errno != EINTR)
                        break;
}

/* What became ready for c (events from epoll; 0: its deadline passed). */
static void conn_handle(Conn *c, uint32_t rev, int64_t now) {
        const Config *cfg = config_of(c->m);
        bool want_in = !c->call && !c->closing && !c->throttled;

        if (c->refused) {
                /* its request came (or it left, or its time is up): drop what it sent, close */
                drain(c->fd);
                conn_drop(c, DROP_REFUSED);
                return;
        }
        if (rev & EPOLLOUT)
                conn_flush(c, now);
        if (!c->dead && c->producing && c->call && conn_can_send(c))
                c->m->handler->drained(c->call);
        if (c->dead)
                return;

        if ((rev & EPOLLIN) && want_in)
                conn_read(c, now);
        else if (rev & (EPOLLHUP | EPOLLERR)) {
                /* the client left while a request is in flight or its input is paused */
                conn_drop(c, DROP_GONE);
                return;
        }
        if (c->dead)
                return;

        if (c->throttled && now >= c->throttle_until) {
                c->throttled = false; /* the next wakeup reads */
        }
        if (!g_queue_is_empty(&c->out) && c->stall_since > 0 &&
            now >= c->stall_since + (int64_t) cfg->reply_timeout_usec) {
                conn_drop(c, DROP_SLOW);
                return;
        }
        if (c->idle_since > 0 && now >= c->idle_since + (int64_t) cfg->idle_timeout_usec) {
                conn_drop(c, DROP_IDLE);
                return;
        }
        if (c->first_deadline > 0 && now >= c->first_deadline) {
                conn_drop(c, DROP_NO_REQUEST);
                return;
        }
        conn_update(c);
}

static gboolean loop_dispatch(GSource *src, GSourceFunc cb, gpointer userdata) {
        ConnLoop *l = (ConnLoop *) src;
        struct epoll_event ev[EPOLL_BATCH];
        int64_t now;
        int n;

        n = epoll_wait(l->epfd, ev, EPOLL_BATCH, 0);
        now = g_get_monotonic_time();
        for (int i = 0; i < n; i++) {
                Conn *c = ev[i].data.ptr;
                /* one dropped earlier in this batch is dead (freed only on the next idle) */
                if (!c->dead)
                        conn_handle(c, ev[i].events, now);
        }
        /* deadlines that passed, nearest first (a batch at most: then the next wakeup) */
        for (int i = 0; i < EPOLL_BATCH; i++) {
                GSequenceIter *it = g_sequence_get_begin_iter(l->timers);
                Conn *c;

                if (g_sequence_iter_is_end(it))
                        break;
                c = g_sequence_get(it);
                if (c->deadline > now)
                        break;
                g_sequence_remove(it);
                c->timer = NULL;
                c->deadline = -1;
                conn_handle(c, 0, now);
        }
        loop_update_ready(l);
        return G_SOURCE_CONTINUE;
}

static GSourceFuncs loop_source_funcs = {
        .dispatch = loop_dispatch,
};

static ConnLoop *loop_new(ConnManager *m, int priority, const char *name) {
        ConnLoop *l = (ConnLoop *) g_source_new(&loop_source_funcs, sizeof(ConnLoop));

        l->m = m;
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (l->epfd < 0)
                g_error("Cannot create an epoll set for nsd's connections: %s", g_strerror(errno));
        l->timers = g_sequence_new(NULL);
        l->tag = g_source_add_unix_fd(&l->base, l->epfd, G_IO_IN);
        g_source_set_priority(&l->base, priority);
        g_source_set_name(&l->base, name);
        g_source_attach(&l->base, g_main_context_get_thread_default());
        return l;
}

static void loop_free(ConnLoop *l) {
        if (!l)
                return;
        g_source_destroy(&l->base);
        g_sequence_free(l->timers);
        close(l->epfd);
        g_source_unref(&l->base);
}

/* Refuse a connection: one error reply (the socket is new, so it fits). The client is kept
 * open a moment (REFUSED_MAX of them at most) until its first request comes, which is read
 * and dropped before the close, so that it reads the reason: neither EPIPE (its send after
 * nsd's close) nor ECONNRESET (nsd's close with its request unread). */
static int conn_refuse(ConnManager *m, int fd, uid_t uid, pid_t pid, int error,
                       const char *message) {
        struct nsd_rep_error rep;

        metrics_count_throttled(NSD_METRICS_THROTTLE_CONNECTIONS);
        nsd_msg_init(&rep.hdr, NSD_REP_ERROR, sizeof rep, 0);
        rep.hdr.error = -abs(error);
        g_strlcpy(rep.message, message, sizeof rep.message);
        (void) send_datagram(fd, &rep, sizeof rep, NULL, 0);
        drain(fd); /* rate limited per person: a subuid range's refusals are its owner's */
        manager_log(m, uid == 0 ? NULL : uid_state_get(m, person_of(m, uid, (gid_t) -1)), uid == 0,
                    LOGK_REFUSED, LOG_WARNING,
                    &(ClientEvent) { uid, "connection-refused", message },
                    "Refusing a connection of uid %u pid %u: %s", (unsigned) uid, (unsigned) pid,
                    message);
        if (m->n_refused < REFUSED_MAX) {
                Conn *c = g_new0(Conn, 1);
                c->m = m;
                c->fd = fd;
                c->uid = uid;
                c->pid = pid;
                c->pidfd = -1;
                c->refused = true;
                g_queue_init(&c->out);
                if (conn_watch(c, m->loops[0], EPOLLIN) == 0) {
                        m->n_refused++;
                        g_hash_table_add(m->conns, c);
                        conn_set_deadline(c, g_get_monotonic_time() +
                                                     REFUSED_LINGER_MSEC * (int64_t) 1000);
                        return -abs(error);
                }
                g_free(c);
        }
        close(fd);
        return -abs(error);
}

/* The real uid of the process behind pidfd (pid): from /proc/PID/status, believed only if
 * that process is still the one pidfd names afterwards (so the pid was not reused between).
 * (uid_t) -1 when it cannot be told. */
static uid_t peer_real_uid(pid_t pid, int pidfd) {
        char path[64], buf[4096];
        unsigned long ruid;
        const char *p;
        ssize_t n;
        int fd;

        if (pid <= 0 || pidfd < 0)
                return (uid_t) -1;
        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return (uid_t) -1;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return (uid_t) -1;
        buf[n] = '\0';
        p = strstr(buf, "\nUid:");
        if (!p || sscanf(p + 5, "%lu", &ruid) != 1)
                return (uid_t) -1;
        /* still alive: then /proc/PID was this process (a pidfd's pid is not reused while the
         * process has not been reaped) */
        if (pidfd_exited(pidfd) != 0)
                return (uid_t) -1;
        return (uid_t) ruid;
}

static bool uid_inside(const Config *cfg, uid_t uid) {
        return uid >= cfg->min_uid && uid <= cfg->max_uid;
}

/* Add a connected socket (taken) whose peer is cred; pidfd (taken; -1: none) is the peer's
 * from SO_PEERPIDFD. */
static int conn_add(ConnManager *m, ConnKind kind, int fd, const struct ucred *cred, int pidfd) {
        const Config *cfg = config_of(m);
        uid_t uid = cred->uid, person = uid, ruid;
        pid_t pid = cred->pid;
        UidState *u = NULL, *setuid = NULL;
        Conn *c;
        int r;

        if (kind == CONN_KIND_ROOT && uid != 0) {
                m->stats.refused_not_root++;
                CLOSE_FD(pidfd);
                return conn_refuse(m, fd, uid, pid, EPERM,
                                   "this socket is root's (uid 0) only; everyone else "
                                   "uses " NSD_SOCKET_PATH_DEFAULT);
        }
        /* right after accept(): pid is the process that connected, unless it died in the
         * moment between its connect() and nsd's accept() and the pid came round again
         * (SO_PEERPIDFD, where the kernel has it, has no such moment) */
        if (pidfd < 0 && pid > 0) {
                pidfd = pidfd_open_cloexec(pid);
                if (pidfd < 0)
                        log_debug_errno(errno,
                                        "Cannot open a pidfd of uid %u pid %u, it gets "
                                        "no descriptors: %m",
                                        (unsigned) uid, (unsigned) pid);
        }
        if (uid == 0) {
                if (m->n_root >= cfg->max_root_connections) {
                        g_autofree char *msg =
                                g_strdup_printf("root has %u connections open, the most allowed "
                                                "(MaxRootConnections=)",
                                                m->n_root);
                        m->stats.refused_limit++;
                        CLOSE_FD(pidfd);
                        return conn_refuse(m, fd, uid, pid, EUSERS, msg);
                }
                /* a set-uid program (su, sudo) a user runs: bounded per real uid */
                ruid = peer_real_uid(pid, pidfd);
                CLOSE_FD(pidfd); /* root needs none */
                if (ruid != 0 && ruid != (uid_t) -1) {
                        setuid = uid_state_get(m, ruid);
                        if (setuid->n_setuid >= cfg->max_setuid_connections_per_user) {
                                g_autofree char *msg = g_strdup_printf(
                                        "uid %u has %u connections open as root through "
                                        "set-uid programs, the most allowed "
                                        "(MaxSetuidConnectionsPerUser=)",
                                        (unsigned) ruid, setuid->n_setuid);
                                m->stats.refused_setuid++;
                                return conn_refuse(m, fd, uid, pid, EUSERS, msg);
                        }
                }
        } else {
                unsigned limit = cfg->max_connections;
                bool inside = uid_inside(cfg, uid);
                person = person_of(m, uid, cred->gid);
                u = uid_state_get(m, person);
                if (!inside)
                        limit -= MIN(config_reserved_connections(cfg), limit);
                if (m->n_user >= limit) {
                        g_autofree char *msg =
                                inside ? g_strdup_printf("nsd serves at most %u connections of "
                                                         "unprivileged users at once "
                                                         "(MaxConnections=)",
                                                         cfg->max_connections)
                                       : g_strdup_printf("nsd serves at most %u connections of "
                                                         "uids "
                                                         "outside MinUid=%u..MaxUid=%u at once "
                                                         "(MaxConnections=%u less "
                                                         "ReservedConnections=%u)",
                                                         limit, (unsigned) cfg->min_uid,
                                                         (unsigned) cfg->max_uid,
                                                         cfg->max_connections,
                                                         config_reserved_connections(cfg));
                        m->stats.refused_limit++;
                        CLOSE_FD(pidfd);
                        return conn_refuse(m, fd, uid, pid, EUSERS, msg);
                }
                if (u->n_conns >= cfg->max_connections_per_user) {
                        g_autofree char *msg =
                                person == uid
                                        ? g_strdup_printf("uid %u has %u connections open, the "
                                                          "most allowed "
                                                          "(MaxConnectionsPerUser=)",
                                                          (unsigned) uid, u->n_conns)
                                        : g_strdup_printf("uid %u counts as uid %u, the owner of "
                                                          "its "
                                                          "subordinate id range (/etc/subuid, "
                                                          "/etc/subgid), which has %u connections "
                                                          "open, the most allowed "
                                                          "(MaxConnectionsPerUser=)",
                                                          (unsigned) uid, (unsigned) person,
                                                          u->n_conns);
                        m->stats.refused_limit++;
                        CLOSE_FD(pidfd);
                        return conn_refuse(m, fd, uid, pid, EUSERS, msg);
                }
        }

        c = g_new0(Conn, 1);
        c->m = m;
        c->kind = kind;
        c->fd = fd;
        c->uid = uid;
        c->pid = pid;
        c->pidfd = pidfd;
        c->sender.pid = 0;
        c->per_uid = u;
        /* every datagram names its sender (the handlers' descriptor policy asks who sent a
         * request, not only who connected); the listening socket has it too, so that
         * datagrams sent before this call carry it as well */
        (void) setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &(int) { 1 }, sizeof(int));
        g_queue_init(&c->out);
        c->idle_since = g_get_monotonic_time();
        r = conn_watch(c, m->loops[uid == 0 ? 1 : 0], EPOLLIN);
        if (r < 0) {
                log_warning_errno(r, "Cannot watch the connection of uid %u pid %u, closing it: %m",
                                  (unsigned) uid, (unsigned) pid);
                CLOSE_FD(c->pidfd);
                close(fd);
                g_free(c);
                return r;
        }
        if (setuid) {
                c->setuid = setuid;
                setuid->n_setuid++;
                c->first_deadline = c->idle_since + (int64_t) cfg->setuid_request_timeout_usec;
        }
        m->n_kind[kind]++;
        if (uid == 0)
                m->n_root++;
        else {
                m->n_user++;
                u->n_conns++;
        }
        g_hash_table_add(m->conns, c);
        m->stats.accepted++;
        conn_update(c);
        log_debug("Connection of uid %u pid %u on the %s socket%s", (unsigned) uid, (unsigned) pid,
                  kind_name[kind], setuid ? " (a set-uid program)" : "");
        return 0;
}

int conn_manager_add(ConnManager *m, ConnKind kind, int fd, uid_t uid, pid_t pid) {
        return conn_add(m, kind, fd, &(struct ucred) { .pid = pid, .uid = uid, .gid = (gid_t) -1 },
                        -1);
}

void conn_manager_set_person_fn(ConnManager *m, uid_t (*fn)(uid_t uid, gid_t gid, void *userdata),
                                void *userdata) {
        m->person = fn;
        m->person_userdata = userdata;
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

/* SO_PEERPIDFD: a pidfd of the very process that connected (Linux 6.5 on); -1 where the
 * kernel lacks it (then conn_add() opens one from the pid, as on 6.1). */
static int peer_pidfd(ConnManager *m, int fd) {
        socklen_t len = sizeof(int);
        int pidfd = -1;

        if (m->no_peerpidfd)
                return -1;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
                if (errno == ENOPROTOOPT || errno == EINVAL) {
                        m->no_peerpidfd = true;
                        log_debug("This kernel has no SO_PEERPIDFD: a client's pidfd is opened "
                                  "from its pid after accept()");
                }
                return -1;
        }
        m->stats.peer_pidfds++;
        return pidfd;
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
                (void) conn_add(m, l->kind, fd, &cred, peer_pidfd(m, fd));
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
        m->loops[0] = loop_new(m, conn_priority(false), "nsd connections");
        m->loops[1] = loop_new(m, conn_priority(true), "nsd root connections");
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
                g_clear_handle_id(&l->backoff_timer, g_source_remove);
                if (l->source) {
                        g_source_destroy(l->source);
                        g_source_unref(l->source);
                }
                if (l->fd >= 0)
                        close(l->fd);
        }
        g_clear_handle_id(&m->reap_source, g_source_remove);
        on_reap(m);
        loop_free(m->loops[0]);
        loop_free(m->loops[1]);
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

unsigned conn_manager_count_kind(const ConnManager *m, ConnKind kind) {
        return kind < _CONN_KIND_MAX ? m->n_kind[kind] : 0;
}

unsigned conn_manager_count_uid(const ConnManager *m, uid_t uid) {
        UidState *u;

        if (uid == 0)
                return m->n_root;
        u = g_hash_table_lookup(m->uids, GUINT_TO_POINTER(person_of(m, uid, (gid_t) -1)));
        return u ? u->n_conns : 0;
}

bool conn_manager_accepting(const ConnManager *m, ConnKind kind) {
        const Listener *l = &m->listeners[kind];

        return l->fd >= 0 && !l->paused_full && !l->backoff_timer;
}
