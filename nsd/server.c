/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * server.c: nsd's user table, sessions, client connections and the request handlers.
 *
 * Rules that hold everywhere here:
 *  - The caller's identity is SO_PEERCRED (uid, pid) taken at accept(); a uid in a request only
 *    names the namespace asked for. Root may name any uid; anyone else only their own.
 *  - A message that fails validation (nsd_msg_check, descriptor count, flags, reserved fields,
 *    strings) gets an NSD_REP_ERROR saying why, a warning in the log with the peer's uid and
 *    pid, and its connection is closed. A request that is well-formed but refused (permission,
 *    policy, limit) gets an NSD_REP_ERROR and the connection stays open.
 *  - Replies are sent with blocking semantics but a 1 s send timeout (SO_SNDTIMEO on the
 *    connection): a client that does not read its replies (LIST, SHOW) stalls nsd for at most
 *    one second and is then dropped. Reads are always non-blocking (MSG_DONTWAIT).
 *  - Linger: when a uid's last session ends, the namespace is kept (Linger=forever), or
 *    released after Linger= seconds, but only if it then has no sessions AND no more mounts
 *    than it had right after creation (the baseline). A namespace adopted after a restart has
 *    no known baseline and is never released by linger, only by RELEASE.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "config.h" /* generated: PACKAGE_VERSION, NSD_CONFIG_PATH */
#include "log.h"
#include "nsd-protocol.h"
#include "private.h"
#include "userns.h"

/* LIST computes each entry's mount count (a fork per namespace) only up to this many
 * entries; past it, mounts = -1 ("unknown"), so one LIST costs at most 256 forks. */
#define LIST_MOUNTS_MAX_ENTRIES 256
/* A JOIN of a namespace that has no session keeps it at least this long, so the
 * SESSION_OPEN that follows a JOIN finds it even with Linger=0. */
#define JOIN_GRACE_SEC 30
/* Without pidfd_open (kernel < 5.3): how often a session leader's pid is checked. */
#define SESSION_POLL_SEC 30
/* The most descriptors read from one message; more are discarded by the kernel (MSG_CTRUNC)
 * and the message is refused. */
#define RECV_FDS_MAX 8

typedef struct UserState UserState;

typedef struct Session {
        Server *server;
        uint64_t id;
        UserState *user;
        pid_t pid;
        char service[NSD_SERVICE_MAX];
        int pidfd;   /* -1 in poll mode */
        guint watch; /* pidfd watch or poll timer */
} Session;

struct UserState {
        Server *server;
        uid_t uid;
        UserNs *ns;
        GPtrArray *sessions; /* Session*, owned by server->sessions */
        guint linger_timer;
        int baseline_mounts; /* mounts right after creation; -1 unknown (adopted) */
};

typedef struct Conn {
        Server *server;
        int fd;
        uid_t uid;
        pid_t pid;
        guint watch;
        bool broken; /* a send failed: close after this request */
} Conn;

struct Server {
        Config config;
        char *config_path;
        char *run_dir;
        PinStore *pins; /* NULL: running without pins */
        uint32_t features;
        PrivateWatch *private_watch; /* mode private on ([Private] Enable=yes) */
        bool private_unavailable;    /* Enable=yes, refused: see server_private_mode_apply() */
        uint64_t started_usec;
        int listen_fd;
        guint listen_watch;
        GHashTable *users;         /* GUINT_TO_POINTER(uid) -> UserState* (owned) */
        GHashTable *sessions;      /* uint64_t* id -> Session* (owned) */
        GHashTable *conns;         /* Conn* -> Conn* (owned) */
        GHashTable *conns_per_uid; /* GUINT_TO_POINTER(uid) -> GUINT_TO_POINTER(count) */
        uint64_t next_session_id;
};

static uint64_t now_realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static const char *request_name(uint16_t type) {
        switch (type) {
        case NSD_REQ_JOIN: return "JOIN";
        case NSD_REQ_SESSION_OPEN: return "SESSION_OPEN";
        case NSD_REQ_SESSION_CLOSE: return "SESSION_CLOSE";
        case NSD_REQ_STATUS: return "STATUS";
        case NSD_REQ_LIST: return "LIST";
        case NSD_REQ_SHOW: return "SHOW";
        case NSD_REQ_RELEASE: return "RELEASE";
        case NSD_REQ_HIDE: return "HIDE";
        default: return "unknown";
        }
}

/* ---- status --------------------------------------------------------------------------- */

static unsigned count_pinned(Server *s) {
        GHashTableIter it;
        gpointer v;
        unsigned n = 0;

        g_hash_table_iter_init(&it, s->users);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((UserState *) v)->ns->pinned)
                        n++;
        return n;
}

void server_notify_status(Server *s) {
        sd_notifyf(0, "STATUS=%u namespaces, %u sessions%s", g_hash_table_size(s->users),
                   g_hash_table_size(s->sessions),
                   s->pins ? "" : " (no pin store: namespaces do not survive nsd)");
}

/* ---- users and sessions --------------------------------------------------------------- */

static UserState *user_get(Server *s, uid_t uid) {
        return g_hash_table_lookup(s->users, GUINT_TO_POINTER(uid));
}

static UserState *user_add(Server *s, UserNs *ns, int baseline_mounts) {
        UserState *u = g_new0(UserState, 1);

        u->server = s;
        u->uid = ns->uid;
        u->ns = ns;
        u->sessions = g_ptr_array_new();
        u->baseline_mounts = baseline_mounts;
        g_hash_table_replace(s->users, GUINT_TO_POINTER(u->uid), u);
        return u;
}

static void user_state_free(gpointer p) {
        UserState *u = p;

        if (u->linger_timer)
                g_source_remove(u->linger_timer);
        g_assert(u->sessions->len == 0);
        g_ptr_array_unref(u->sessions);
        if (u->ns)
                userns_free(u->ns); /* closes descriptors; the pin stays */
        g_free(u);
}

static void session_free(gpointer p) {
        Session *sess = p;

        if (sess->watch)
                g_source_remove(sess->watch);
        if (sess->pidfd >= 0)
                close(sess->pidfd);
        g_free(sess);
}

/* Release uid's namespace: unpin it, drop its sessions, forget it. */
static int user_release(UserState *u, const char *why) {
        Server *s = u->server;
        uid_t uid = u->uid;
        int r;

        while (u->sessions->len > 0) {
                Session *sess = g_ptr_array_index(u->sessions, u->sessions->len - 1);
                g_ptr_array_remove_index(u->sessions, u->sessions->len - 1);
                g_hash_table_remove(s->sessions, &sess->id);
        }
        /* userns_release() consumes ns whatever it returns; a failed unpin is logged: such
         * a pin is found again at the next start. */
        r = userns_release(s->pins, g_steal_pointer(&u->ns));
        if (r < 0)
                log_warning_errno(r, "Failed to release the namespace of uid %u cleanly: %m",
                                  (unsigned) uid);
        log_event(LOG_INFO, 0, uid, "namespace-released", "Released the namespace of uid %u (%s)",
                  (unsigned) uid, why);
        g_hash_table_remove(s->users, GUINT_TO_POINTER(uid));
        server_notify_status(s);
        return r;
}

/* The linger rule (see the top of this file). */
static void user_release_if_idle(UserState *u) {
        int n;

        if (u->sessions->len > 0)
                return;
        if (u->baseline_mounts < 0) {
                log_info("Keeping the namespace of uid %u: it was adopted after a restart, so "
                         "its own mounts cannot be told apart", (unsigned) u->uid);
                return;
        }
        n = userns_count_mounts(u->ns);
        if (n < 0) {
                log_warning_errno(n, "Cannot count the mounts of uid %u's namespace, keeping it: %m",
                                  (unsigned) u->uid);
                return;
        }
        if (n > u->baseline_mounts) {
                log_info("Keeping the namespace of uid %u: it holds %d mounts of its own",
                         (unsigned) u->uid, n - u->baseline_mounts);
                return;
        }
        user_release(u, "linger time over, no sessions, no mounts of its own");
}

static gboolean on_linger(gpointer userdata) {
        UserState *u = userdata;

        u->linger_timer = 0;
        user_release_if_idle(u); /* may free u */
        return G_SOURCE_REMOVE;
}

static void user_cancel_linger(UserState *u) {
        if (u->linger_timer) {
                g_source_remove(u->linger_timer);
                u->linger_timer = 0;
        }
}

static void user_arm_linger(UserState *u, int64_t min_sec) {
        int64_t sec = u->server->config.linger_sec;

        user_cancel_linger(u);
        if (sec == CONFIG_LINGER_FOREVER)
                return;
        if (sec < min_sec)
                sec = min_sec;
        /* g_timeout_add_seconds() may fire up to a second late (it batches wakeups): fine
         * for a linger time, but 0 means at once */
        u->linger_timer = sec == 0 ? g_idle_add(on_linger, u)
                                   : g_timeout_add_seconds((guint) sec, on_linger, u);
}

/* A session is over: closed, or its leader died. */
static void session_end(Session *sess) {
        Server *s = sess->server;
        UserState *u = sess->user;

        g_ptr_array_remove(u->sessions, sess);
        g_hash_table_remove(s->sessions, &sess->id); /* frees sess */
        if (u->sessions->len == 0) {
                char buf[64];
                log_debug("Last session of uid %u ended, %s", (unsigned) u->uid,
                          config_linger_to_string(&s->config, buf, sizeof buf));
                user_arm_linger(u, 0);
        }
        server_notify_status(s);
}

static gboolean on_session_leader_exit(int fd, GIOCondition cond, gpointer userdata) {
        Session *sess = userdata;

        log_event(LOG_INFO, 0, sess->user->uid, "session-ended",
                  "Session %" G_GUINT64_FORMAT " of uid %u (pid %u, '%s') ended without close",
                  sess->id, (unsigned) sess->user->uid, (unsigned) sess->pid, sess->service);
        sess->watch = 0;
        session_end(sess);
        return G_SOURCE_REMOVE;
}

static gboolean on_session_poll(gpointer userdata) {
        Session *sess = userdata;

        if (kill(sess->pid, 0) == 0 || errno != ESRCH)
                return G_SOURCE_CONTINUE;
        return on_session_leader_exit(-1, 0, sess);
}

/* ---- sending -------------------------------------------------------------------------- */

static int conn_send(Conn *c, const void *msg, size_t len, const int *fds, size_t n_fds) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * NSD_MSG_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        g_assert(len <= NSD_MSG_SIZE_MAX);
        g_assert(n_fds <= NSD_MSG_FDS_MAX);
        if (c->broken)
                return -EPIPE;
        if (n_fds > 0) {
                memset(&control, 0, sizeof control);
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
        }
        if (sendmsg(c->fd, &mh, MSG_NOSIGNAL) < 0) {
                int r = -errno;
                c->broken = true;
                if (r == -EAGAIN || r == -EWOULDBLOCK)
                        return log_warning_errno(-ETIMEDOUT,
                                                 "Client uid %u pid %u does not read its replies, "
                                                 "dropping it", (unsigned) c->uid,
                                                 (unsigned) c->pid);
                return log_debug_errno(r, "Failed to reply to uid %u pid %u: %m",
                                       (unsigned) c->uid, (unsigned) c->pid);
        }
        return 0;
}

static int conn_send_error(Conn *c, uint32_t seq, uint16_t request_type, int error,
                           const char *message) {
        struct nsd_rep_error rep;

        nsd_msg_init(&rep.hdr, NSD_REP_ERROR, sizeof rep, seq);
        rep.hdr.error = error < 0 ? error : -error;
        rep.request_type = request_type;
        g_strlcpy(rep.message, message ? message : g_strerror(abs(error)), sizeof rep.message);
        return conn_send(c, &rep, sizeof rep, NULL, 0);
}

/* ---- connections ---------------------------------------------------------------------- */

static unsigned conns_of_uid(Server *s, uid_t uid) {
        return GPOINTER_TO_UINT(g_hash_table_lookup(s->conns_per_uid, GUINT_TO_POINTER(uid)));
}

static void conn_free(gpointer p) {
        Conn *c = p;
        Server *s = c->server;
        unsigned n = conns_of_uid(s, c->uid);

        if (n <= 1)
                g_hash_table_remove(s->conns_per_uid, GUINT_TO_POINTER(c->uid));
        else
                g_hash_table_insert(s->conns_per_uid, GUINT_TO_POINTER(c->uid),
                                    GUINT_TO_POINTER(n - 1));
        if (c->watch)
                g_source_remove(c->watch);
        close(c->fd);
        g_free(c);
}

static void conn_close(Conn *c) {
        g_hash_table_remove(c->server->conns, c); /* conn_free */
}

/* Every request handler: 0 when the reply was sent, or -errno with *why (g_malloc()ed, may
 * stay NULL for strerror) for an NSD_REP_ERROR. */
typedef int (*handler_fn)(Conn *c, const void *msg, int *fds, size_t n_fds, char **why);

static bool may_ask_for(const Conn *c, uid_t uid) {
        return c->uid == 0 || c->uid == uid;
}

#define REFUSE(err, ...) (*why = g_strdup_printf(__VA_ARGS__), -(err))

/* ---- JOIN ----------------------------------------------------------------------------- */

static NsSetup config_ns_setup(const Config *cfg) {
        return (NsSetup) {
                .propagation_private = cfg->propagation_private,
                .private_tmp = cfg->private_tmp,
        };
}

static int handle_join(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_req_join *req = msg;
        Server *s = c->server;
        struct nsd_rep_join rep;
        uint32_t ns_flags = 0;
        UserState *u;
        int r;

        if (!may_ask_for(c, req->uid))
                return REFUSE(EPERM, "only root may ask for another user's namespace");
        if (!config_uid_managed(&s->config, req->uid, why))
                return -NSD_ERRNO_NOT_MANAGED;

        log_event(LOG_INFO, 0, req->uid, "join", "JOIN for uid %u by pid %u (uid %u)",
                  (unsigned) req->uid, (unsigned) c->pid, (unsigned) c->uid);

        u = user_get(s, req->uid);
        if (!u) {
                UserNs *ns = NULL;
                NsSetup setup = config_ns_setup(&s->config);

                if (req->flags & NSD_JOIN_NO_CREATE)
                        return REFUSE(ENOENT, "uid %u has no namespace yet", (unsigned) req->uid);
                if (g_hash_table_size(s->users) >= s->config.max_namespaces)
                        return REFUSE(EUSERS, "nsd keeps at most %u namespaces (MaxNamespaces=)",
                                      s->config.max_namespaces);
                r = userns_create(s->pins, req->uid, &setup, &ns);
                if (r < 0) {
                        log_error_errno(r, "Failed to create the namespace of uid %u: %m",
                                        (unsigned) req->uid);
                        return REFUSE(-r, "cannot create the namespace of uid %u: %s",
                                      (unsigned) req->uid, g_strerror(-r));
                }
                u = user_add(s, ns, userns_count_mounts(ns));
                ns_flags |= NSD_NS_CREATED;
                log_event(LOG_INFO, 0, req->uid, "namespace-created",
                          "Created the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "], %s, "
                          "%d mounts)", (unsigned) req->uid, ns->ns_inode,
                          ns->pinned ? "pinned" : "NOT pinned, alive by descriptor only",
                          u->baseline_mounts);
                server_notify_status(s);
        }
        /* a JOIN without a session restarts the linger countdown, with a grace period so
         * the SESSION_OPEN that follows finds the namespace */
        if (u->sessions->len == 0)
                user_arm_linger(u, JOIN_GRACE_SEC);

        nsd_msg_init(&rep.hdr, NSD_REP_JOIN, sizeof rep, req->hdr.seq);
        rep.uid = u->uid;
        rep.ns_flags = ns_flags | (u->ns->pinned ? NSD_NS_PINNED : 0) |
                       (u->ns->adopted ? NSD_NS_ADOPTED : 0);
        rep.ns_inode = u->ns->ns_inode;
        rep.created_usec = u->ns->created_usec;
        (void) conn_send(c, &rep, sizeof rep, (int[]) { u->ns->root_fd, u->ns->ns_fd }, 2);
        return 0;
}

/* ---- SESSION_OPEN / SESSION_CLOSE ------------------------------------------------------ */

/* The pid a pidfd refers to, from /proc/self/fdinfo ("Pid:" exists only for pidfds). */
static int pidfd_get_pid(int fd, pid_t *ret) {
        char path[64];
        g_autofree char *text = NULL;
        const char *p;

        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
        if (!g_file_get_contents(path, &text, NULL, NULL))
                return -EIO;
        p = strstr(text, "\nPid:");
        if (!p)
                return -EBADF;
        *ret = (pid_t) strtol(p + 5, NULL, 10);
        return 0;
}

static int handle_session_open(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_req_session_open *req = msg;
        Server *s = c->server;
        struct nsd_rep_session_open rep;
        int pidfd = -1;
        UserState *u;
        Session *sess;

        if (!may_ask_for(c, req->uid))
                return REFUSE(EPERM, "only root may open a session of another user");
        if (c->uid != 0 && (pid_t) req->pid != c->pid)
                return REFUSE(EPERM, "only root may name a session leader other than itself "
                                     "(pid %u)", (unsigned) c->pid);
        u = user_get(s, req->uid);
        if (!u)
                return REFUSE(ENOENT, "uid %u has no namespace (JOIN first)", (unsigned) req->uid);
        if (u->sessions->len >= s->config.max_sessions_per_user)
                return REFUSE(EUSERS, "uid %u has %u sessions, the most allowed "
                                      "(MaxSessionsPerUser=)", (unsigned) req->uid,
                              u->sessions->len);

        if (req->flags & NSD_SESSION_PIDFD) {
                pid_t p = 0;
                if (pidfd_get_pid(fds[0], &p) < 0)
                        return REFUSE(EBADF, "the descriptor sent is not a pidfd");
                if (p != (pid_t) req->pid)
                        return REFUSE(EINVAL, "the pidfd sent is of pid %d, not of pid %u",
                                      (int) p, (unsigned) req->pid);
                pidfd = fds[0];
                fds[0] = -1; /* taken */
        } else {
                pidfd = (int) syscall(SYS_pidfd_open, (pid_t) req->pid, 0);
                if (pidfd < 0 && errno != ENOSYS) {
                        int e = errno;
                        return REFUSE(e, "cannot watch pid %u: %s", (unsigned) req->pid,
                                      g_strerror(e));
                }
                if (pidfd >= 0)
                        (void) fcntl(pidfd, F_SETFD, FD_CLOEXEC); /* pidfd_open sets it */
        }
        if (pidfd >= 0) {
                struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
                if (poll(&pfd, 1, 0) > 0) {
                        close(pidfd);
                        return REFUSE(ESRCH, "pid %u has already exited", (unsigned) req->pid);
                }
        }

        sess = g_new0(Session, 1);
        sess->server = s;
        sess->id = s->next_session_id++;
        if (sess->id == 0)
                sess->id = s->next_session_id++;
        sess->user = u;
        sess->pid = (pid_t) req->pid;
        g_strlcpy(sess->service, req->service, sizeof sess->service);
        sess->pidfd = pidfd;
        if (pidfd >= 0)
                sess->watch = g_unix_fd_add(pidfd, G_IO_IN, on_session_leader_exit, sess);
        else /* no pidfd_open (kernel < 5.3): poll the pid; pid reuse may hide an exit */
                sess->watch = g_timeout_add_seconds(SESSION_POLL_SEC, on_session_poll, sess);
        g_hash_table_insert(s->sessions, &sess->id, sess);
        g_ptr_array_add(u->sessions, sess);
        user_cancel_linger(u);

        log_event(LOG_INFO, 0, u->uid, "session-opened",
                  "Session %" G_GUINT64_FORMAT " of uid %u opened (pid %u, '%s'), %u live",
                  sess->id, (unsigned) u->uid, (unsigned) sess->pid, sess->service,
                  u->sessions->len);
        server_notify_status(s);

        nsd_msg_init(&rep.hdr, NSD_REP_SESSION_OPEN, sizeof rep, req->hdr.seq);
        rep.session_id = sess->id;
        rep.sessions = u->sessions->len;
        (void) conn_send(c, &rep, sizeof rep, NULL, 0);
        return 0;
}

static int handle_session_close(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_req_session_close *req = msg;
        Server *s = c->server;
        struct nsd_rep_session_close rep;
        Session *sess = NULL;
        UserState *u;

        if (!may_ask_for(c, req->uid))
                return REFUSE(EPERM, "only root may close a session of another user");
        u = user_get(s, req->uid);
        if (req->session_id != 0) {
                sess = g_hash_table_lookup(s->sessions, &req->session_id);
                if (sess && (sess->user != u || (req->pid != 0 && (pid_t) req->pid != sess->pid)))
                        sess = NULL;
        } else if (u) {
                for (guint i = 0; i < u->sessions->len; i++) {
                        Session *t = g_ptr_array_index(u->sessions, i);
                        if (t->pid == (pid_t) req->pid) {
                                sess = t;
                                break;
                        }
                }
        }
        if (!sess) {
                /* normal after an nsd restart: sessions live in memory only */
                log_debug("SESSION_CLOSE of unknown session %" G_GUINT64_FORMAT
                          " (uid %u, pid %u) from pid %u", (uint64_t) req->session_id,
                          (unsigned) req->uid, (unsigned) req->pid, (unsigned) c->pid);
                return REFUSE(ENOENT, "no such session (nsd forgets sessions when it restarts)");
        }

        log_event(LOG_INFO, 0, u->uid, "session-closed",
                  "Session %" G_GUINT64_FORMAT " of uid %u closed (pid %u, '%s')", sess->id,
                  (unsigned) u->uid, (unsigned) sess->pid, sess->service);
        session_end(sess); /* may arm the linger timer, never frees u synchronously */

        nsd_msg_init(&rep.hdr, NSD_REP_SESSION_CLOSE, sizeof rep, req->hdr.seq);
        rep.sessions = u->sessions->len;
        (void) conn_send(c, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* ---- STATUS, LIST, SHOW ---------------------------------------------------------------- */

static int handle_status(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_msg_header *hdr = msg;
        Server *s = c->server;
        struct nsd_rep_status rep;

        nsd_msg_init(&rep.hdr, NSD_REP_STATUS, sizeof rep, hdr->seq);
        g_strlcpy(rep.version, PACKAGE_VERSION, sizeof rep.version);
        rep.started_usec = s->started_usec;
        rep.features = s->features | (s->pins ? NSD_FEATURE_PIN_NAMESPACE : 0) |
                       (s->private_watch ? NSD_FEATURE_PRIVATE_MODE : 0) |
                       (s->private_unavailable ? NSD_FEATURE_PRIVATE_UNAVAILABLE : 0);
        rep.namespaces = g_hash_table_size(s->users);
        rep.pinned = count_pinned(s);
        rep.sessions = g_hash_table_size(s->sessions);
        rep.connections = g_hash_table_size(s->conns);
        rep.max_namespaces = s->config.max_namespaces;
        rep.max_sessions_per_uid = s->config.max_sessions_per_user;
        rep.max_connections_per_uid = s->config.max_connections_per_user;
        rep.pid = (uint32_t) getpid();
        (void) conn_send(c, &rep, sizeof rep, NULL, 0);
        return 0;
}

static gint compare_uid(gconstpointer a, gconstpointer b) {
        const UserState *x = *(UserState *const *) a, *y = *(UserState *const *) b;
        return x->uid < y->uid ? -1 : x->uid > y->uid;
}

static int handle_list(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_msg_header *hdr = msg;
        Server *s = c->server;
        g_autoptr(GPtrArray) list = g_ptr_array_new();
        struct nsd_rep_list_end end;
        bool with_mounts;
        uint32_t sent = 0;

        if (c->uid == 0) {
                GHashTableIter it;
                gpointer v;
                g_hash_table_iter_init(&it, s->users);
                while (g_hash_table_iter_next(&it, NULL, &v))
                        g_ptr_array_add(list, v);
                g_ptr_array_sort(list, compare_uid);
        } else if (user_get(s, c->uid))
                g_ptr_array_add(list, user_get(s, c->uid));

        with_mounts = list->len <= LIST_MOUNTS_MAX_ENTRIES;
        for (guint i = 0; i < list->len && !c->broken; i++) {
                UserState *u = g_ptr_array_index(list, i);
                struct nsd_rep_list_entry e;

                nsd_msg_init(&e.hdr, NSD_REP_LIST_ENTRY, sizeof e, hdr->seq);
                e.uid = u->uid;
                e.ns_flags = (u->ns->pinned ? NSD_NS_PINNED : 0) |
                             (u->ns->adopted ? NSD_NS_ADOPTED : 0);
                e.sessions = u->sessions->len;
                e.mounts = with_mounts ? userns_count_mounts(u->ns) : -1;
                if (e.mounts < 0)
                        e.mounts = -1;
                e.ns_inode = u->ns->ns_inode;
                e.created_usec = u->ns->created_usec;
                if (s->pins && u->ns->pinned)
                        pinstore_pin_name(s->pins, u->uid, e.pin, sizeof e.pin);
                e.pin[sizeof e.pin - 1] = '\0';
                if (conn_send(c, &e, sizeof e, NULL, 0) == 0)
                        sent++;
        }
        nsd_msg_init(&end.hdr, NSD_REP_LIST_END, sizeof end, hdr->seq);
        end.count = sent;
        (void) conn_send(c, &end, sizeof end, NULL, 0);
        return 0;
}

static int handle_show(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_req_show *req = msg;
        Server *s = c->server;
        g_autofree char *text = NULL;
        size_t len = 0;
        struct nsd_msg_header end;
        UserState *u;
        int r;

        if (!may_ask_for(c, req->uid))
                return REFUSE(EPERM, "only root may see another user's namespace");
        u = user_get(s, req->uid);
        if (!u)
                return REFUSE(ENOENT, "uid %u has no namespace", (unsigned) req->uid);
        r = userns_read_mountinfo(u->ns, NSD_SHOW_TEXT_MAX, &text, &len);
        if (r < 0)
                return REFUSE(-r, "cannot read the mount table of uid %u's namespace: %s",
                              (unsigned) req->uid, g_strerror(-r));

        for (size_t off = 0; off < len && !c->broken;) {
                struct {
                        struct nsd_msg_header hdr;
                        char data[NSD_MSG_SIZE_MAX - sizeof(struct nsd_msg_header)];
                } part;
                size_t n = MIN(len - off, sizeof part.data);

                nsd_msg_init(&part.hdr, NSD_REP_SHOW_DATA, sizeof part.hdr + n, req->hdr.seq);
                memcpy(part.data, text + off, n);
                (void) conn_send(c, &part, sizeof part.hdr + n, NULL, 0);
                off += n;
        }
        nsd_msg_init(&end, NSD_REP_SHOW_END, sizeof end, req->hdr.seq);
        (void) conn_send(c, &end, sizeof end, NULL, 0);
        return 0;
}

/* ---- RELEASE ---------------------------------------------------------------------------- */

static int handle_release(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_req_release *req = msg;
        Server *s = c->server;
        struct nsd_msg_header rep;
        g_autofree char *reason = NULL;
        UserState *u;

        if (!may_ask_for(c, req->uid))
                return REFUSE(EPERM, "only root may release another user's namespace");
        if (c->uid != 0 && (req->flags & NSD_RELEASE_FORCE))
                return REFUSE(EPERM, "only root may force a release");
        u = user_get(s, req->uid);
        if (!u)
                return REFUSE(ENOENT, "uid %u has no namespace", (unsigned) req->uid);
        if (u->sessions->len > 0 && !(req->flags & NSD_RELEASE_FORCE))
                return REFUSE(EBUSY, "%u live session%s; use --force", u->sessions->len,
                              u->sessions->len == 1 ? "" : "s");

        reason = g_strdup_printf("asked by uid %u pid %u%s%s", (unsigned) c->uid,
                                 (unsigned) c->pid,
                                 (req->flags & NSD_RELEASE_FORCE) ? ", forced" : "",
                                 u->sessions->len > 0 ? ", sessions dropped" : "");
        (void) user_release(u, reason);

        nsd_msg_init(&rep, NSD_REP_RELEASE, sizeof rep, req->hdr.seq);
        (void) conn_send(c, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* ---- HIDE (owner-private mounts) ---------------------------------------------------------- */

static int handle_hide(Conn *c, const void *msg, int *fds, size_t n_fds, char **why) {
        const struct nsd_req_hide *req = msg;
        Server *s = c->server;
        bool unhide = req->flags & NSD_HIDE_UNHIDE;
        struct nsd_msg_header rep;
        const char *reason = NULL;
        uint64_t mnt_id = 0;
        int r;

        if (!may_ask_for(c, req->uid))
                return REFUSE(EPERM, "only root may %s a mount for another user",
                              unhide ? "unhide" : "hide");
        if (!config_uid_managed(&s->config, req->uid, why))
                return -NSD_ERRNO_NOT_MANAGED;
        if (private_supported(s->features, &reason) < 0)
                return REFUSE(EOPNOTSUPP, "%s", reason);
        r = private_hide(c->uid, req->uid, req->path, unhide, &mnt_id, why);
        if (r < 0)
                return r;
        /* the owner wants it visible: the watch must not hide it again */
        if (unhide)
                private_watch_exempt(s->private_watch, mnt_id);

        nsd_msg_init(&rep, NSD_REP_HIDE, sizeof rep, req->hdr.seq);
        (void) conn_send(c, &rep, sizeof rep, NULL, 0);
        return 0;
}

/* ---- validation and dispatch ----------------------------------------------------------- */

/* Per-type checks beyond nsd_msg_check(): flags, reserved fields, strings, descriptors.
 * Returns the number of descriptors the request must carry, or -errno with *why. */
static int request_validate(const void *msg, const char **why) {
        const struct nsd_msg_header *hdr = msg;

        if (hdr->flags != 0)
                return *why = "flags set in the header", -EINVAL;

        switch (hdr->type) {
        case NSD_REQ_JOIN: {
                const struct nsd_req_join *r = msg;
                if (r->flags & ~NSD_JOIN_NO_CREATE)
                        return *why = "unknown JOIN flags", -EINVAL;
                return 0;
        }
        case NSD_REQ_SESSION_OPEN: {
                const struct nsd_req_session_open *r = msg;
                if (r->flags & ~NSD_SESSION_PIDFD)
                        return *why = "unknown SESSION_OPEN flags", -EINVAL;
                if (r->reserved != 0)
                        return *why = "reserved field not zero", -EINVAL;
                if (!nsd_field_is_string(r->service, sizeof r->service))
                        return *why = "service name not NUL-terminated in its field", -EINVAL;
                if (r->pid == 0 || r->pid > INT32_MAX)
                        return *why = "invalid session leader pid", -EINVAL;
                return (r->flags & NSD_SESSION_PIDFD) ? 1 : 0;
        }
        case NSD_REQ_SESSION_CLOSE: {
                const struct nsd_req_session_close *r = msg;
                if (r->session_id == 0 && r->pid == 0)
                        return *why = "neither a session id nor a pid", -EINVAL;
                return 0;
        }
        case NSD_REQ_SHOW: {
                const struct nsd_req_show *r = msg;
                if (r->reserved != 0)
                        return *why = "reserved field not zero", -EINVAL;
                return 0;
        }
        case NSD_REQ_RELEASE: {
                const struct nsd_req_release *r = msg;
                if (r->flags & ~NSD_RELEASE_FORCE)
                        return *why = "unknown RELEASE flags", -EINVAL;
                return 0;
        }
        case NSD_REQ_HIDE: {
                const struct nsd_req_hide *r = msg;
                if (r->flags & ~NSD_HIDE_UNHIDE)
                        return *why = "unknown HIDE flags", -EINVAL;
                if (!nsd_field_is_string(r->path, sizeof r->path))
                        return *why = "path not NUL-terminated in its field", -EINVAL;
                if (r->path[0] != '/')
                        return *why = "path not absolute", -EINVAL;
                return 0;
        }
        case NSD_REQ_STATUS:
        case NSD_REQ_LIST:
                return 0;
        default:
                return *why = "unknown request type", -EOPNOTSUPP;
        }
}

static handler_fn request_handler(uint16_t type) {
        switch (type) {
        case NSD_REQ_JOIN: return handle_join;
        case NSD_REQ_SESSION_OPEN: return handle_session_open;
        case NSD_REQ_SESSION_CLOSE: return handle_session_close;
        case NSD_REQ_STATUS: return handle_status;
        case NSD_REQ_LIST: return handle_list;
        case NSD_REQ_SHOW: return handle_show;
        case NSD_REQ_RELEASE: return handle_release;
        case NSD_REQ_HIDE: return handle_hide;
        default: return NULL;
        }
}

/* A malformed message: error reply, warning, and the caller closes the connection. */
static void conn_refuse_message(Conn *c, const void *buf, size_t n, int error, const char *why) {
        const struct nsd_msg_header *hdr = buf;
        bool readable = n >= sizeof *hdr && hdr->magic == NSD_PROTO_MAGIC;
        uint16_t type = readable ? hdr->type : 0;
        size_t want = readable ? nsd_request_size(type) : 0;
        g_autofree char *text = NULL;

        if (n > NSD_MSG_SIZE_MAX)
                text = g_strdup_printf("%s (%zu bytes, at most %u)", why, n, NSD_MSG_SIZE_MAX);
        else if (want > 0 && n != want)
                text = g_strdup_printf("%s (%s: %zu bytes, expected %zu)", why,
                                       request_name(type), n, want);
        else if (readable && hdr->version_major != NSD_PROTO_MAJOR)
                text = g_strdup_printf("%s (%u, nsd speaks %u)", why,
                                       (unsigned) hdr->version_major, NSD_PROTO_MAJOR);
        else if (readable && want == 0)
                text = g_strdup_printf("%s (%u)", why, (unsigned) type);
        else
                text = g_strdup(why);

        log_warning("Refusing a message from uid %u pid %u: %s", (unsigned) c->uid,
                    (unsigned) c->pid, text);
        (void) conn_send_error(c, readable ? hdr->seq : 0, type, error, text);
}

static void close_fds(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

/* Read and answer one message. Returns false when the connection must be closed. */
static bool conn_process(Conn *c) {
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX + 1];
        } buf;
        union {
                struct cmsghdr h;
                char bytes[CMSG_SPACE(sizeof(int) * RECV_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = &buf, .iov_len = sizeof buf };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof control,
        };
        int fds[RECV_FDS_MAX];
        size_t n_fds = 0;
        const char *why = NULL;
        g_autofree char *refusal = NULL;
        ssize_t n;
        int r, want_fds;

        n = recvmsg(c->fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return true;
                log_debug_errno(errno, "Connection of uid %u pid %u failed: %m",
                                (unsigned) c->uid, (unsigned) c->pid);
                return false;
        }

        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k && n_fds < RECV_FDS_MAX; i++)
                        memcpy(&fds[n_fds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        }

        if (n == 0) { /* EOF (a zero-length datagram reads the same; both end the connection) */
                close_fds(fds, n_fds);
                return false;
        }

        r = nsd_msg_check(&buf, (size_t) n, 1, &why);
        if (r >= 0 && (mh.msg_flags & MSG_CTRUNC))
                r = -EBADMSG, why = "too many descriptors sent";
        if (r >= 0) {
                want_fds = request_validate(&buf, &why);
                if (want_fds < 0)
                        r = want_fds;
                else if ((size_t) want_fds != n_fds) {
                        refusal = g_strdup_printf("%zu descriptor%s sent with %s, expected %d",
                                                  n_fds, n_fds == 1 ? "" : "s",
                                                  request_name(buf.hdr.type), want_fds);
                        why = refusal;
                        r = -EBADMSG;
                }
        }
        if (r < 0) {
                close_fds(fds, n_fds);
                conn_refuse_message(c, &buf, (size_t) n, r, why);
                return false;
        }

        {
                g_autofree char *reason = NULL;
                handler_fn fn = request_handler(buf.hdr.type);

                log_debug("%s from uid %u pid %u", request_name(buf.hdr.type),
                          (unsigned) c->uid, (unsigned) c->pid);
                r = fn(c, &buf, fds, n_fds, &reason);
                close_fds(fds, n_fds); /* those the handler did not take */
                if (r < 0) {
                        log_debug("%s from uid %u pid %u refused: %s",
                                  request_name(buf.hdr.type), (unsigned) c->uid,
                                  (unsigned) c->pid, reason ? reason : g_strerror(-r));
                        (void) conn_send_error(c, buf.hdr.seq, buf.hdr.type, r, reason);
                }
        }
        return !c->broken;
}

static gboolean on_conn_io(int fd, GIOCondition cond, gpointer userdata) {
        Conn *c = userdata;

        if (conn_process(c))
                return G_SOURCE_CONTINUE;
        c->watch = 0;
        conn_close(c);
        return G_SOURCE_REMOVE;
}

static void accept_one(Server *s, int fd) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        struct timeval tv = { .tv_sec = 1 };
        Conn *c;
        int flags;

        c = g_new0(Conn, 1);
        c->server = s;
        c->fd = fd;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                log_warning_errno(errno, "Cannot read the credentials of a client, dropping it: %m");
                close(fd);
                g_free(c);
                return;
        }
        c->uid = cred.uid;
        c->pid = cred.pid;

        /* replies: blocking with a 1 s timeout (see the top of this file); reads stay
         * non-blocking through MSG_DONTWAIT */
        flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
                (void) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

        /* count it first, so conn_free() balances */
        g_hash_table_insert(s->conns_per_uid, GUINT_TO_POINTER(c->uid),
                            GUINT_TO_POINTER(conns_of_uid(s, c->uid) + 1));
        g_hash_table_add(s->conns, c);

        if (g_hash_table_size(s->conns) > s->config.max_connections) {
                g_autofree char *m = g_strdup_printf(
                        "nsd serves at most %u connections at once (MaxConnections=)",
                        s->config.max_connections);
                log_warning("Refusing a connection of uid %u pid %u: %s", (unsigned) c->uid,
                            (unsigned) c->pid, m);
                (void) conn_send_error(c, 0, 0, -EUSERS, m);
                conn_close(c);
                return;
        }
        /* root is exempt: every login's PAM module connects as root */
        if (c->uid != 0 && conns_of_uid(s, c->uid) > s->config.max_connections_per_user) {
                g_autofree char *m = g_strdup_printf(
                        "uid %u has %u connections open, the most allowed "
                        "(MaxConnectionsPerUser=)", (unsigned) c->uid,
                        s->config.max_connections_per_user);
                log_warning("Refusing a connection of uid %u pid %u: %s", (unsigned) c->uid,
                            (unsigned) c->pid, m);
                (void) conn_send_error(c, 0, 0, -EUSERS, m);
                conn_close(c);
                return;
        }
        c->watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_conn_io, c);
        log_debug("Connection of uid %u pid %u", (unsigned) c->uid, (unsigned) c->pid);
}

static gboolean on_listen_io(int fd, GIOCondition cond, gpointer userdata) {
        Server *s = userdata;

        for (int i = 0; i < 64; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning_errno(errno, "Failed to accept a connection, "
                                                         "ignoring: %m");
                        break;
                }
                accept_one(s, cfd);
        }
        return G_SOURCE_CONTINUE;
}

/* ---- setup ---------------------------------------------------------------------------- */

static void on_adopt(UserNs *ns, void *userdata) {
        Server *s = userdata;

        if (user_get(s, ns->uid)) {
                log_warning("Two pins for uid %u, keeping the first", (unsigned) ns->uid);
                userns_free(ns);
                return;
        }
        ns->adopted = true;
        user_add(s, ns, -1);
        log_event(LOG_DEBUG, 0, ns->uid, "namespace-adopted",
                  "Adopted the namespace of uid %u (mnt:[%" G_GUINT64_FORMAT "])",
                  (unsigned) ns->uid, ns->ns_inode);
}

static const char *yes_no(bool b) {
        return b ? "yes" : "no";
}

static bool private_uid_managed(uid_t uid, void *userdata) {
        Server *s = userdata;

        return config_uid_managed(&s->config, uid, NULL);
}

/* Start or stop mode private as [Private] Enable= says (at start and after a reload). On a
 * kernel without F4 the mode is refused with an error in the log and in `nsctl status`;
 * nsd goes on serving namespaces: refusing to start would refuse every PAM login. */
static void server_private_mode_apply(Server *s) {
        const char *why = NULL;
        int r;

        if (!s->config.private_mode) {
                s->private_unavailable = false;
                if (s->private_watch) {
                        private_watch_free(g_steal_pointer(&s->private_watch));
                        log_info("Mode private off: new FUSE mounts of users are no longer "
                                 "hidden (those hidden stay so)");
                }
                return;
        }
        if (s->private_watch)
                return;
        r = private_supported(s->features, &why);
        if (r < 0) {
                s->private_unavailable = true;
                log_error("Mode private ([Private] Enable=yes) is unavailable: %s. nsd serves "
                          "namespaces only; FUSE mounts in the initial namespace stay visible "
                          "to everyone", why);
                return;
        }
        r = private_watch_new(private_uid_managed, s, &s->private_watch);
        if (r < 0) {
                s->private_unavailable = true;
                log_error_errno(r, "Mode private ([Private] Enable=yes) is unavailable: cannot "
                                   "watch the mount table: %m");
                return;
        }
        s->private_unavailable = false;
        log_info("Mode private on: FUSE mounts of managed users in the initial namespace are "
                 "made owner-private (kernel patch F4)");
}

int server_new(Config *config, const char *config_path, const char *run_dir, int listen_fd,
               Server **ret) {
        Server *s = g_new0(Server, 1);
        int r;

        config_move(&s->config, config);
        s->config_path = g_strdup(config_path);
        s->run_dir = g_strdup(run_dir);
        s->listen_fd = listen_fd;
        s->started_usec = now_realtime_usec();
        s->next_session_id = ((uint64_t) g_random_int() << 32 | g_random_int()) | 1;
        s->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, user_state_free);
        s->sessions = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, session_free);
        s->conns = g_hash_table_new_full(g_direct_hash, g_direct_equal, conn_free, NULL);
        s->conns_per_uid = g_hash_table_new(g_direct_hash, g_direct_equal);

        s->features = kernel_features_probe();
        log_info("Kernel features: setns-dirfd=%s proc-mounts-root=%s fspick-check=%s "
                 "owner-private=%s",
                 yes_no(s->features & NSD_FEATURE_SETNS_DIRFD),
                 yes_no(s->features & NSD_FEATURE_PROC_MOUNTS_ROOT),
                 yes_no(s->features & NSD_FEATURE_FSPICK_CHECK),
                 yes_no(s->features & NSD_FEATURE_OWNER_PRIVATE));

        r = pinstore_open(run_dir, &s->pins);
        if (r < 0) {
                s->pins = NULL;
                log_warning_errno(r, "Cannot open the pin store in '%s', running without pins "
                                     "(namespaces will not survive an nsd restart): %m", run_dir);
        } else {
                r = pinstore_adopt_all(s->pins, on_adopt, s);
                if (r < 0)
                        log_warning_errno(r, "Failed to adopt pinned namespaces, ignoring: %m");
        }
        log_info("Adopted %u namespaces", g_hash_table_size(s->users));

        server_private_mode_apply(s);

        s->listen_watch = g_unix_fd_add(listen_fd, G_IO_IN, on_listen_io, s);
        *ret = s;
        return 0;
}

void server_free(Server *s) {
        if (!s)
                return;
        if (s->listen_watch)
                g_source_remove(s->listen_watch);
        private_watch_free(s->private_watch);
        g_hash_table_destroy(s->conns);
        g_hash_table_destroy(s->conns_per_uid);
        /* sessions first (they point into users); namespaces stay pinned */
        {
                GHashTableIter it;
                gpointer v;
                g_hash_table_iter_init(&it, s->users);
                while (g_hash_table_iter_next(&it, NULL, &v))
                        g_ptr_array_set_size(((UserState *) v)->sessions, 0);
        }
        g_hash_table_destroy(s->sessions);
        g_hash_table_destroy(s->users);
        if (s->pins)
                pinstore_free(s->pins);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        config_done(&s->config);
        g_free(s->config_path);
        g_free(s->run_dir);
        g_free(s);
}

int server_reload_config(Server *s) {
        Config c = { 0 };
        g_autofree char *error = NULL;
        bool missing = false;
        int r;

        r = config_load(s->config_path, &c, &missing, &error);
        if (r < 0)
                return log_error_errno(r, "Failed to reload the configuration, keeping the "
                                          "old one: %s", error ? error : g_strerror(-r));
        config_move(&s->config, &c);
        if (missing)
                log_info("Reloaded the configuration: no '%s', using defaults", s->config_path);
        else
                log_info("Reloaded the configuration from '%s'", s->config_path);
        /* a changed Linger= applies to countdowns that start from now on */
        server_private_mode_apply(s);
        return 0;
}
