/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-conn: nsd's connection layer (nsd/transport/conn.c) and request lifecycle (nsd/api/requests.c),
 * through the core library, over socketpairs and sockets in a temp folder. TAP; no root
 * needed (run as root, the peer that must not be root drops to nobody in a child).
 *
 * Every wait runs nsd's GMainContext until the state is reached, with a generous deadline
 * that only fails the test (RUN_UNTIL); timeouts are set in milliseconds so the waits are
 * short. Nothing here creates a mount namespace: the server has no pin store and no
 * probed features, and the requests sent are those that refuse or answer without one.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/requests.h"
#include "base/child.h"
#include "domain/user.h"
#include "nsd-protocol.h"
#include "policy/policy.h"
#include "server.h"
#include "socket-util.h"
#include "store/userns.h"
#include "tap.h"
#include "transport/conn.h"

#define DEADLINE_MS 20000
#define MSEC 1000ull

static char tmpdir[] = "/tmp/test-conn.XXXXXX";

static gboolean on_expire(gpointer p) {
        *(bool *) p = true;
        return G_SOURCE_REMOVE;
}

/* Run the main context until expr holds, or the deadline passed (then expr is false). */
#define RUN_UNTIL(expr)                                                      \
        ({                                                                   \
                bool _expired = false;                                       \
                guint _t = g_timeout_add(DEADLINE_MS, on_expire, &_expired); \
                while (!(expr) && !_expired)                                 \
                        g_main_context_iteration(NULL, TRUE);                \
                if (!_expired)                                               \
                        g_source_remove(_t);                                 \
                (bool) (expr);                                               \
        })

/* Run the context for a while without a condition: only to show something does NOT happen
 * (the assertion after it never depends on timing to pass). */
static void run_for(unsigned ms) {
        bool expired = false;
        g_timeout_add(ms, on_expire, &expired);
        while (!expired)
                g_main_context_iteration(NULL, TRUE);
}

static Config test_config(void) {
        Config c;

        config_init_defaults(&c);
        c.request_rate_per_user = 100000;
        c.request_burst_per_user = 100000;
        return c;
}

static Server *server_start(Config *c) {
        Server *s = NULL;

        if (server_new(c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s) < 0)
                abort();
        return s;
}

static const ConnStats *stats(Server *s) {
        return conn_manager_stats(s->conns);
}

/* A connection from uid (on kind's socket) as a socketpair: returns the client end; *ret_r
 * is what conn_manager_add() said. sndbuf > 0 shrinks nsd's send buffer. */
static int peer_full(Server *s, ConnKind kind, uid_t uid, int sndbuf, int *ret_r) {
        int sv[2], r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                abort();
        if (sndbuf > 0)
                (void) setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        r = conn_manager_add(s->conns, kind, sv[0], uid, getpid());
        if (ret_r)
                *ret_r = r;
        return sv[1];
}

static int peer(Server *s, ConnKind kind, uid_t uid) {
        return peer_full(s, kind, uid, 0, NULL);
}

static int send_msg(int fd, const void *msg, size_t len, int pass_fd) {
        ssize_t n = send_with_fds(fd, msg, len, &pass_fd, pass_fd >= 0 ? 1 : 0,
                                  MSG_NOSIGNAL | MSG_DONTWAIT);

        return n < 0 ? (int) n : (size_t) n == len ? 0 : -EIO;
}

static int send_status(int fd, uint32_t seq) {
        struct nsd_req_status q;

        nsd_msg_init(&q.hdr, NSD_REQ_STATUS, sizeof q, seq);
        return send_msg(fd, &q, sizeof q, -1);
}

static int send_join(int fd, uid_t uid, uint32_t flags) {
        struct nsd_req_join q;

        nsd_msg_init(&q.hdr, NSD_REQ_JOIN, sizeof q, 7);
        q.uid = uid;
        q.flags = flags;
        return send_msg(fd, &q, sizeof q, -1);
}

/* One reply, non-blocking: its size, 0 at EOF, -EAGAIN when none is there. */
static ssize_t recv_msg(int fd, void *buf, size_t size) {
        ssize_t n = recv(fd, buf, size, MSG_DONTWAIT);
        return n < 0 ? -errno : n;
}

static bool readable(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

/* Read what is there; count replies of type (or every reply with type 0). */
static unsigned drain(int fd, uint16_t type) {
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX];
        } buf;
        unsigned n = 0;

        while (recv_msg(fd, &buf, sizeof buf) >= (ssize_t) sizeof buf.hdr)
                if (type == 0 || buf.hdr.type == type)
                        n++;
        return n;
}

/* Read what is there of a LIST: count entries and ends; returns the ends so far. */
static unsigned drain_list(int fd, unsigned *entries, unsigned *ends) {
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX];
        } buf;

        while (recv_msg(fd, &buf, sizeof buf) >= (ssize_t) sizeof buf.hdr) {
                *entries += buf.hdr.type == NSD_REP_LIST_ENTRY;
                *ends += buf.hdr.type == NSD_REP_LIST_END;
        }
        return *ends;
}

/* The next reply's type and error (waiting for it); type 0 at EOF. */
static uint16_t next_reply(int fd, int *ret_error, char *ret_message, size_t size) {
        union {
                struct nsd_msg_header hdr;
                struct nsd_rep_error err;
                uint8_t bytes[NSD_MSG_SIZE_MAX];
        } buf;
        ssize_t n;

        if (!RUN_UNTIL(readable(fd)))
                return 0xdead;
        n = recv_msg(fd, &buf, sizeof buf);
        if (n < (ssize_t) sizeof buf.hdr)
                return 0;
        if (ret_error)
                *ret_error = buf.hdr.error;
        if (ret_message && size > 0)
                g_strlcpy(ret_message,
                          buf.hdr.type == NSD_REP_ERROR && n >= (ssize_t) sizeof buf.err
                                  ? buf.err.message
                                  : "",
                          size);
        return buf.hdr.type;
}

static bool at_eof(int fd) {
        char b[64];
        return RUN_UNTIL(readable(fd)) && recv(fd, b, sizeof b, MSG_DONTWAIT) == 0;
}

/* ---- the table ----------------------------------------------------------------------------- */

static void test_table(void) {
        size_t n;
        const RequestType *t = request_types(&n);
        bool sizes = true, all = true;

        for (uint16_t type = NSD_REQ_JOIN; type < _NSD_REQ_MAX; type++) {
                const RequestType *row = request_type_get(type);
                if (!row) {
                        all = false;
                        continue;
                }
                if (row->type != type || row->size != nsd_request_size(type) || !row->name)
                        sizes = false;
        }
        ok(all, "every request type of nsd-protocol.h (1..%d) has a row", _NSD_REQ_MAX - 1);
        ok(sizes, "every row's size is nsd_request_size() of its type");
        ok(n == _NSD_REQ_MAX && !request_type_get(0) && !request_type_get(_NSD_REQ_MAX) &&
                   !request_type_get(NSD_REP_JOIN),
           "no row for type 0, past the last request or for a reply type");
        is_str(request_type_name(NSD_REQ_JOIN_SESSION), "JOIN_SESSION", "JOIN_SESSION's name");
        is_int(request_type_get(NSD_REQ_JOIN_SESSION)->fd_flag, NSD_JOIN_SESSION_PIDFD,
               "JOIN_SESSION's pidfd rides on NSD_JOIN_SESSION_PIDFD");
        (void) t;
}

/* ---- basics -------------------------------------------------------------------------------- */

static void test_status(void) {
        Config c = test_config();
        Server *s = server_start(&c);
        struct nsd_rep_status rep;
        int fd = peer(s, CONN_KIND_USER, 1000), fd2 = peer(s, CONN_KIND_USER, 1000);
        int root = peer(s, CONN_KIND_ROOT, 0);

        send_status(fd, 42);
        ok(RUN_UNTIL(readable(fd)) && recv_msg(fd, &rep, sizeof rep) == sizeof rep &&
                   rep.hdr.type == NSD_REP_STATUS && rep.hdr.seq == 42,
           "STATUS is answered (seq echoed)");
        is_int(rep.connections, 2, "a user's STATUS counts its own connections only");
        is_int(rep.max_namespaces_config, 10000, "max_namespaces_config: MaxNamespaces=");
        ok(rep.max_namespaces <= rep.max_namespaces_config && rep.max_namespaces > 0,
           "max_namespaces: the effective limit (%u)", rep.max_namespaces);
        send_status(root, 1);
        ok(RUN_UNTIL(readable(root)) && recv_msg(root, &rep, sizeof rep) == sizeof rep &&
                   rep.connections == 3,
           "root's STATUS counts every connection (3)");
        close(fd);
        close(fd2);
        close(root);
        ok(RUN_UNTIL(conn_manager_count(s->conns) == 0), "closed connections are gone");
        server_free(s);
}

static void test_bad_message(void) {
        Config c = test_config();
        Server *s = server_start(&c);
        struct nsd_req_join q;
        char msg[256] = "";
        int fd = peer(s, CONN_KIND_USER, 1000), err = 0;

        nsd_msg_init(&q.hdr, NSD_REQ_JOIN, sizeof q, 3);
        q.flags = 0x80;
        send_msg(fd, &q, sizeof q, -1);
        is_int(next_reply(fd, &err, msg, sizeof msg), NSD_REP_ERROR,
               "unknown JOIN flags: an error reply");
        ok(err == -EINVAL && strstr(msg, "unknown JOIN flags"), "-EINVAL naming it (%s)", msg);
        ok(at_eof(fd), "and the connection is closed");
        is_int(stats(s)->dropped_bad, 1, "counted as a bad client");
        close(fd);

        fd = peer(s, CONN_KIND_USER, 1000);
        send_msg(fd, "garbage, not a message", 22, -1);
        is_int(next_reply(fd, &err, msg, sizeof msg), NSD_REP_ERROR, "garbage: an error reply");
        ok(err == -EBADMSG && at_eof(fd), "-EBADMSG, then closed");
        close(fd);
        server_free(s);
}

/* ---- idle, slow readers, queues ---------------------------------------------------------- */

static void test_idle(void) {
        Config c = test_config();
        c.idle_timeout_usec = 100 * MSEC;
        Server *s = server_start(&c);
        int fd = peer(s, CONN_KIND_USER, 1000), root = peer(s, CONN_KIND_ROOT, 0);

        ok(RUN_UNTIL(stats(s)->dropped_idle == 2),
           "an idle connection is dropped after IdleTimeoutSec= (root's too)");
        ok(at_eof(fd) && at_eof(root), "the clients see EOF");
        is_int(conn_manager_count(s->conns), 0, "no connection left");
        close(fd);
        close(root);

        /* a connection that keeps asking is not idle (asking 20 times faster than the
         * timeout, so only a machine stalled for a whole second could fail this) */
        Config c2 = test_config();
        c2.idle_timeout_usec = 1000 * MSEC;
        server_apply_config(s, &c2);
        fd = peer(s, CONN_KIND_USER, 1000);
        for (int i = 0; i < 10; i++) {
                send_status(fd, (uint32_t) i);
                (void) next_reply(fd, NULL, NULL, 0);
                run_for(50);
        }
        is_int(stats(s)->dropped_idle, 2, "a connection asking every 50 ms is kept (1 s idle)");
        close(fd);
        server_free(s);
}

static void test_slow_reader(void) {
        Config c = test_config();
        c.reply_timeout_usec = 200 * MSEC;
        c.max_queued_replies = 1000;
        Server *s = server_start(&c);
        int fd = peer_full(s, CONN_KIND_USER, 1000, 4096, NULL),
            other = peer(s, CONN_KIND_USER, 1001);
        int sent = 0;

        for (int i = 0; i < 150 && send_status(fd, (uint32_t) i) == 0; i++)
                sent++;
        ok(sent > 20, "a client sends %d requests and reads no reply", sent);
        ok(RUN_UNTIL(stats(s)->dropped_slow == 1),
           "it is dropped after ReplyTimeoutSec= without progress");
        is_int(stats(s)->dropped_overflow, 0, "(not for an overflow: MaxQueuedReplies=1000)");
        send_status(other, 9);
        is_int(next_reply(other, NULL, NULL, 0), NSD_REP_STATUS, "another uid is served");
        close(fd);
        close(other);
        server_free(s);
}

static void test_queue_bound(void) {
        Config c = test_config();
        c.max_queued_replies = 4;
        c.reply_timeout_usec = 60000 * MSEC;
        Server *s = server_start(&c);
        int fd = peer_full(s, CONN_KIND_USER, 1000, 4096, NULL);
        int sent = 0;

        for (int i = 0; i < 150 && send_status(fd, (uint32_t) i) == 0; i++)
                sent++;
        ok(RUN_UNTIL(stats(s)->dropped_overflow == 1),
           "a client pipelining %d requests without reading overflows MaxQueuedReplies=4 "
           "and is dropped",
           sent);
        is_int(conn_manager_count(s->conns), 0, "its connection is closed");
        close(fd);
        server_free(s);
}

/* fake users, so root's LIST has many entries; their descriptors are just "/" */
static void add_fake_users(Server *s, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                UserNs *ns = calloc(1, sizeof *ns);
                ns->uid = 100000 + i;
                ns->ns_fd = open("/", O_PATH | O_CLOEXEC);
                ns->root_fd = open("/", O_PATH | O_CLOEXEC);
                ns->ns_inode = 4026531840u + i;
                user_add(s, ns, NULL, 0);
        }
}

static void test_stream(void) {
        Config c = test_config();
        c.max_queued_replies = 2;
        c.reply_timeout_usec = 1000 * MSEC;
        Server *s = server_start(&c);
        int fd = peer_full(s, CONN_KIND_ROOT, 0, 4096, NULL), other;
        struct nsd_req_list q;
        unsigned entries = 0, ends = 0;

        add_fake_users(s, 1000);
        nsd_msg_init(&q.hdr, NSD_REQ_LIST, sizeof q, 5);
        send_msg(fd, &q, sizeof q, -1);
        other = peer(s, CONN_KIND_USER, 1001);
        send_status(other, 1);
        ok(RUN_UNTIL(readable(other)) && drain(other, NSD_REP_STATUS) == 1,
           "while root's LIST of 1000 entries waits to be read, another client is served");
        /* read what is there at each turn of nsd's loop */
        ok(RUN_UNTIL(drain_list(fd, &entries, &ends) > 0), "root's LIST arrives to the end");
        is_int(entries, 1000, "with all 1000 entries");
        is_int(stats(s)->dropped_overflow, 0,
               "made as the socket drains: a 2-reply queue never overflows");

        /* the same LIST, never read: dropped as a slow reader */
        send_msg(fd, &q, sizeof q, -1);
        ok(RUN_UNTIL(stats(s)->dropped_slow == 1), "a LIST never read: dropped after "
                                                   "ReplyTimeoutSec=");
        close(fd);
        close(other);
        server_free(s);
}

/* ---- limits ----------------------------------------------------------------------------- */

static void test_limits(void) {
        Config c = test_config();
        c.max_connections = 4;
        c.max_connections_per_user = 2;
        c.max_root_connections = 3;
        Server *s = server_start(&c);
        int fds[16], n = 0, r, err = 0, fd;
        char msg[256] = "";

        fds[n++] = peer_full(s, CONN_KIND_USER, 1000, 0, &r);
        fds[n++] = peer_full(s, CONN_KIND_USER, 1000, 0, &r);
        ok(r == 0, "uid 1000: two connections (MaxConnectionsPerUser=2)");
        fd = peer_full(s, CONN_KIND_USER, 1000, 0, &r);
        is_int(r, -EUSERS, "a third is refused");
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EUSERS &&
                   strstr(msg, "MaxConnectionsPerUser="),
           "with EUSERS naming MaxConnectionsPerUser= (%s)", msg);
        ok(at_eof(fd), "and closed");
        close(fd);

        /* a client that sent its request before nsd looked at it (libnsclient does: connect,
         * then send) reads the reason too, not a reset for the request left unread */
        {
                int sv[2];

                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                        abort();
                send_status(sv[1], 1);
                send_status(sv[1], 2);
                r = conn_manager_add(s->conns, CONN_KIND_USER, sv[0], 1000, getpid());
                is_int(r, -EUSERS, "a third, with two requests already queued: refused");
                msg[0] = 0;
                ok(next_reply(sv[1], &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EUSERS &&
                           strstr(msg, "MaxConnectionsPerUser="),
                   "its first read is the reason, not ECONNRESET (%s)", msg);
                close(sv[1]);
        }

        fds[n++] = peer_full(s, CONN_KIND_USER, 1001, 0, &r);
        fds[n++] = peer_full(s, CONN_KIND_USER, 1002, 0, &r);
        ok(r == 0, "uids 1001, 1002: one each (4 in all, MaxConnections=4)");
        fd = peer_full(s, CONN_KIND_USER, 1003, 0, &r);
        is_int(r, -EUSERS, "uid 1003: refused, MaxConnections= is reached");
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && strstr(msg, "MaxConnections="),
           "naming MaxConnections= (%s)", msg);
        close(fd);

        fds[n++] = peer_full(s, CONN_KIND_ROOT, 0, 0, &r);
        ok(r == 0, "root on its socket: accepted though MaxConnections= is reached");
        fds[n++] = peer_full(s, CONN_KIND_USER, 0, 0, &r);
        fds[n++] = peer_full(s, CONN_KIND_ROOT, 0, 0, &r);
        ok(r == 0, "root on either socket: three (MaxRootConnections=3)");
        fd = peer_full(s, CONN_KIND_USER, 0, 0, &r);
        is_int(r, -EUSERS, "a fourth root connection on the user socket is refused");
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR &&
                   strstr(msg, "MaxRootConnections="),
           "naming MaxRootConnections= (%s)", msg);
        close(fd);
        is_int(conn_manager_count_uid(s->conns, 0), 3, "root holds 3");
        is_int(conn_manager_count(s->conns), 7, "7 in all");

        /* root's connections never counted against the users' */
        close(fds[0]);
        ok(RUN_UNTIL(conn_manager_count_uid(s->conns, 1000) == 1), "uid 1000 closes one");
        fds[0] = peer_full(s, CONN_KIND_USER, 1003, 0, &r);
        ok(r == 0, "then uid 1003 gets the free slot");
        is_int(stats(s)->refused_limit, 4, "4 refused in all");
        for (int i = 0; i < n; i++)
                close(fds[i]);
        server_free(s);
}

static void test_root_socket(void) {
        Config c = test_config();
        c.max_root_connections = 1;
        Server *s = server_start(&c);
        g_autofree char *path = g_build_filename(tmpdir, "root.socket", NULL);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int lfd, root, err = 0;
        char msg[256] = "";
        pid_t pid;

        g_strlcpy(sa.sun_path, path, sizeof sa.sun_path);
        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (bind(lfd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(lfd, 16) < 0 ||
            chmod(path, 0666) < 0)
                abort();
        conn_manager_listen(s->conns, CONN_KIND_ROOT, lfd);

        /* a peer that is not root, whoever runs the test: a child as nobody when we are
         * root, else ourselves */
        int sv[2];
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
        pid = fork();
        if (pid == 0) {
                int fd;
                close(sv[0]);
                if (getuid() == 0 &&
                    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                     setresuid(65534, 65534, 65534) < 0))
                        _exit(2);
                fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                        _exit(3);
                /* hand the connection to the parent and wait until it is done */
                send_msg(sv[1], "c", 1, fd);
                char b;
                (void) read(sv[1], &b, 1);
                _exit(0);
        }
        close(sv[1]);
        {
                char b;
                struct iovec iov = { .iov_base = &b, .iov_len = 1 };
                union {
                        struct cmsghdr h;
                        char buf[CMSG_SPACE(sizeof(int))];
                } control;
                struct msghdr mh = { .msg_iov = &iov,
                                     .msg_iovlen = 1,
                                     .msg_control = &control,
                                     .msg_controllen = sizeof control };
                int fd = -1;
                if (recvmsg(sv[0], &mh, 0) == 1 && CMSG_FIRSTHDR(&mh))
                        memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof fd);
                ok(fd >= 0, "a client that is not root connects to root's socket (mode 0666 here)");
                (void) fcntl(fd, F_SETFL, O_NONBLOCK);
                ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EPERM,
                   "nsd refuses it with EPERM (%s)", msg);
                ok(at_eof(fd), "and closes it");
                is_int(stats(s)->refused_not_root, 1,
                       "counted as a non-root peer on root's socket");
                close(fd);
        }
        close(sv[0]);
        waitpid(pid, NULL, 0);

        /* at MaxRootConnections=1 nsd stops accepting on root's socket: the next connection
         * waits in the backlog instead of being refused */
        root = peer(s, CONN_KIND_ROOT, 0);
        {
                int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                unsigned before = stats(s)->accepted + stats(s)->refused_not_root;
                connect(fd, (struct sockaddr *) &sa, sizeof sa);
                ok(RUN_UNTIL(!conn_manager_accepting(s->conns, CONN_KIND_ROOT)),
                   "root's socket is paused at MaxRootConnections=");
                is_int(stats(s)->accepted + stats(s)->refused_not_root, before,
                       "the waiting connection is neither accepted nor refused");
                close(root);
                ok(RUN_UNTIL(stats(s)->accepted + stats(s)->refused_not_root == before + 1),
                   "once root's connection closes, the waiting one is taken");
                ok(conn_manager_accepting(s->conns, CONN_KIND_ROOT) ||
                           conn_manager_count_uid(s->conns, 0) == 1,
                   "and the socket accepts again (or is at the bound again)");
                close(fd);
        }
        server_free(s);
        unlink(path);
}

/* ---- rate limit ------------------------------------------------------------------------- */

static void test_rate_limit(void) {
        Config c = test_config();
        c.request_rate_per_user = 1; /* a second per token: the burst is all there is at once */
        c.request_burst_per_user = 3;
        Server *s = server_start(&c);
        int fd = peer(s, CONN_KIND_USER, 1000), root = peer(s, CONN_KIND_ROOT, 0);
        unsigned got = 0, got_root = 0;

        for (int i = 0; i < 5; i++)
                send_status(fd, (uint32_t) i);
        ok(RUN_UNTIL((got += drain(fd, NSD_REP_STATUS)) >= 3 && stats(s)->throttled >= 1),
           "a uid sending 5 requests at once gets its burst (3) answered, then waits");
        is_int(got, 3, "exactly the burst before the wait");
        ok(RUN_UNTIL((got += drain(fd, NSD_REP_STATUS)) == 5),
           "the rest follow at RequestRatePerUser= (not refused)");

        for (int i = 0; i < 20; i++)
                send_status(root, (uint32_t) i);
        unsigned throttled = stats(s)->throttled;
        ok(RUN_UNTIL((got_root += drain(root, NSD_REP_STATUS)) == 20),
           "root's 20 requests at once are all answered");
        is_int(stats(s)->throttled, throttled, "root is never throttled");

        /* one uid's limit is not another's */
        int other = peer(s, CONN_KIND_USER, 1001);
        send_status(other, 1);
        is_int(next_reply(other, NULL, NULL, 0), NSD_REP_STATUS, "another uid is answered at once");
        close(fd);
        close(root);
        close(other);
        server_free(s);
}

/* ---- EMFILE ------------------------------------------------------------------------------- */

static void test_emfile(void) {
        Config c = test_config();
        Server *s = server_start(&c);
        g_autofree char *path = g_build_filename(tmpdir, "user.socket", NULL);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct rlimit saved, low;
        int lfd, client, fill[4096], n_fill = 0;

        g_strlcpy(sa.sun_path, path, sizeof sa.sun_path);
        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (bind(lfd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(lfd, 16) < 0)
                abort();
        conn_manager_listen(s->conns, CONN_KIND_USER, lfd);
        client = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        getrlimit(RLIMIT_NOFILE, &saved);
        low = saved;
        low.rlim_cur = 256;
        if (setrlimit(RLIMIT_NOFILE, &low) < 0) {
                tap_skip("cannot lower RLIMIT_NOFILE: %s", strerror(errno));
                server_free(s);
                return;
        }
        while (n_fill < (int) G_N_ELEMENTS(fill)) {
                int d = fcntl(0, F_DUPFD_CLOEXEC, 0);
                if (d < 0)
                        break;
                fill[n_fill++] = d;
        }
        connect(client, (struct sockaddr *) &sa, sizeof sa);
        ok(RUN_UNTIL(stats(s)->accept_backoffs >= 4),
           "with no descriptor left, accept() fails and the socket backs off");
        ok(!conn_manager_accepting(s->conns, CONN_KIND_USER), "the socket is paused meanwhile");
        is_int(stats(s)->accepted, 0, "nothing was accepted");
        /* each retry is one failing accept(): 4 backoffs (10+20+40 ms between) are 4 tries,
         * not the thousands of a busy loop */
        is_int(stats(s)->accept_backoffs, 4, "one failing accept() per backoff, no spinning");

        for (int i = 0; i < n_fill; i++)
                close(fill[i]);
        setrlimit(RLIMIT_NOFILE, &saved);
        ok(RUN_UNTIL(stats(s)->accepted == 1), "descriptors free again: the client is accepted");
        send_status(client, 1);
        is_int(next_reply(client, NULL, NULL, 0), NSD_REP_STATUS, "and served");
        close(client);
        server_free(s);
        unlink(path);
}

/* ---- requests that wait: the user database --------------------------------------------- */

static GMutex lookup_lock;
static GCond lookup_cond;
static bool lookup_release;
static int lookup_running, lookup_running_max, lookup_calls;

/* a user database whose lookups hang until released; then "not managed" */
static int blocking_lookup(const Config *c, uid_t uid, char **ret_why) {
        g_mutex_lock(&lookup_lock);
        lookup_calls++;
        lookup_running++;
        lookup_running_max = MAX(lookup_running, lookup_running_max);
        while (!lookup_release)
                g_cond_wait(&lookup_cond, &lookup_lock);
        lookup_running--;
        g_mutex_unlock(&lookup_lock);
        *ret_why = g_strdup_printf("uid %u: test database says no", (unsigned) uid);
        return 0;
}

static int lookups_running(void) {
        int n;
        g_mutex_lock(&lookup_lock);
        n = lookup_running;
        g_mutex_unlock(&lookup_lock);
        return n;
}

static void test_slow_lookup(void) {
        Config c = test_config();
        g_strfreev(c.users);
        c.users = g_strsplit("someone", " ", -1); /* names: every check needs NSS */
        c.lookup_timeout_usec = 300 * MSEC;
        c.max_lookup_threads = 2;
        Server *s = server_start(&c);
        int a = peer(s, CONN_KIND_USER, 2000), a2 = peer(s, CONN_KIND_USER, 2000);
        int b = peer(s, CONN_KIND_USER, 2001), d = peer(s, CONN_KIND_USER, 2002);
        int e = peer(s, CONN_KIND_USER, 2003), other = peer(s, CONN_KIND_USER, 2004);
        int err = 0;
        char msg[256] = "";

        policy_set_lookup_fn(s->policy, blocking_lookup);
        send_join(a, 2000, NSD_JOIN_NO_CREATE);
        ok(RUN_UNTIL(lookups_running() == 1), "uid 2000's JOIN waits for the user database");
        unsigned reqs = stats(s)->requests;
        send_join(a2, 2000, NSD_JOIN_NO_CREATE);
        RUN_UNTIL(stats(s)->requests > reqs);
        is_int(policy_stats(s->policy)->lookups, 1, "a second JOIN of uid 2000 shares its lookup");
        send_status(other, 1);
        ok(next_reply(other, NULL, NULL, 0) == NSD_REP_STATUS && lookups_running() == 1,
           "another client is served while the lookup hangs");
        /* a STATUS behind the waiting JOIN: if the connection read it meanwhile, its reply
         * would come first */
        send_status(a, 2);
        send_join(b, 2001, NSD_JOIN_NO_CREATE);
        send_join(d, 2002, NSD_JOIN_NO_CREATE);
        send_join(e, 2003, NSD_JOIN_NO_CREATE);
        ok(next_reply(a, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -ETIMEDOUT,
           "past LookupTimeoutSec= the JOIN gets ETIMEDOUT (%s)", msg);
        ok(strstr(msg, "LookupTimeoutSec=") != NULL, "naming LookupTimeoutSec=");
        ok(next_reply(a2, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT,
           "so does the one that shared the lookup");
        is_int(next_reply(a, NULL, NULL, 0), NSD_REP_STATUS,
               "then the connection reads its next request");
        ok(next_reply(b, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT &&
                   next_reply(d, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT &&
                   next_reply(e, &err, NULL, 0) == NSD_REP_ERROR && err == -ETIMEDOUT,
           "three more uids time out too, behind the stuck threads");
        is_int(lookup_running_max, 2, "never more than MaxLookupThreads=2 threads in NSS");

        g_mutex_lock(&lookup_lock);
        lookup_release = true;
        g_cond_broadcast(&lookup_cond);
        g_mutex_unlock(&lookup_lock);
        ok(RUN_UNTIL(policy_stats(s->policy)->running == 0),
           "released, the late lookups come back");
        int calls = lookup_calls;
        send_join(a, 2000, NSD_JOIN_NO_CREATE);
        ok(next_reply(a, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -ENXIO &&
                   strstr(msg, "test database says no"),
           "the late answer was cached: the next JOIN gets ENXIO at once (%s)", msg);
        is_int(lookup_calls, calls, "without asking the database again");

        /* a reload empties the cache */
        Config c2 = test_config();
        g_strfreev(c2.users);
        c2.users = g_strsplit("someone", " ", -1);
        server_apply_config(s, &c2);
        send_join(a, 2000, NSD_JOIN_NO_CREATE);
        ok(next_reply(a, &err, NULL, 0) == NSD_REP_ERROR && err == -ENXIO &&
                   lookup_calls == calls + 1,
           "after a reload the database is asked again");

        close(a);
        close(a2);
        close(b);
        close(d);
        close(e);
        close(other);
        server_free(s);
        lookup_release = false;
}

static void test_join_session_refusals(void) {
        Config c = test_config();
        Server *s = server_start(&c);
        struct nsd_req_join_session q;
        int fd = peer(s, CONN_KIND_USER, 1000), err = 0;
        char msg[256] = "";

        nsd_msg_init(&q.hdr, NSD_REQ_JOIN_SESSION, sizeof q, 11);
        q.uid = 1000;
        q.pid = (uint32_t) getpid() + 1;
        g_strlcpy(q.service, "test", sizeof q.service);
        send_msg(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EPERM,
           "JOIN_SESSION naming another pid as leader: EPERM (%s)", msg);
        q.pid = (uint32_t) getpid();
        q.uid = 999;
        send_msg(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EPERM,
           "for another uid: EPERM");
        close(fd);

        fd = peer(s, CONN_KIND_ROOT, 0);
        send_msg(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -ENXIO,
           "root, for unmanaged uid 999: ENXIO (%s)", msg);
        q.uid = 1000;
        q.flags = NSD_JOIN_SESSION_PIDFD;
        send_msg(fd, &q, sizeof q, -1);
        ok(next_reply(fd, &err, msg, sizeof msg) == NSD_REP_ERROR && err == -EBADMSG &&
                   strstr(msg, "0 descriptors sent with JOIN_SESSION, expected 1"),
           "the pidfd flag without a descriptor: EBADMSG (%s)", msg);
        ok(at_eof(fd), "and closed");
        is_int(g_hash_table_size(s->users) + g_hash_table_size(s->sessions), 0,
               "nothing was opened");
        close(fd);
        server_free(s);
}

/* ---- helper children ---------------------------------------------------------------------- */

typedef struct ChildArg {
        int mode; /* 0: hang, 1: hand back a descriptor, 2: fail */
        int value;
} ChildArg;

static int test_child_fn(void *p, int *ret_fd) {
        ChildArg *a = p;

        if (a->mode == 0)
                for (;;)
                        pause();
        if (a->mode == 2) {
                a->value = 42;
                return 1;
        }
        *ret_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        a->value = 7;
        return 0;
}

typedef struct ChildResult {
        bool done;
        int r, value, fd;
} ChildResult;

static void on_test_child(int r, const void *result, int fd, void *userdata) {
        ChildResult *cr = userdata;

        cr->done = true;
        cr->r = r;
        cr->value = result ? ((const ChildArg *) result)->value : -1;
        cr->fd = fd;
}

static void test_children(void) {
        Config c = test_config();
        Server *s = server_start(&c);
        Children *set = children_new(4);
        ChildResult hang = { 0 }, good = { 0 }, bad = { 0 }, busy = { 0 };
        int other = peer(s, CONN_KIND_USER, 1000);
        struct stat st;

        is_int(child_start(set, 1000, test_child_fn, &(ChildArg) { .mode = 0 }, sizeof(ChildArg),
                           300 * MSEC, on_test_child, &hang),
               0, "a helper child that hangs is started");
        is_int(child_start(set, 1000, test_child_fn, &(ChildArg) { .mode = 1 }, sizeof(ChildArg),
                           300 * MSEC, on_test_child, &busy),
               -EAGAIN, "a second one for the same uid waits (a quarter of 4 per uid)");
        is_int(child_start(set, 1001, test_child_fn, &(ChildArg) { .mode = 1 }, sizeof(ChildArg),
                           5000 * MSEC, on_test_child, &good),
               0, "another uid's child starts");
        send_status(other, 1);
        is_int(next_reply(other, NULL, NULL, 0), NSD_REP_STATUS,
               "the loop serves clients while children run");
        ok(RUN_UNTIL(good.done), "the good child reports");
        ok(good.r == 0 && good.value == 7 && good.fd >= 0 && fstat(good.fd, &st) == 0 &&
                   S_ISCHR(st.st_mode),
           "with its result and the descriptor it handed back");
        if (good.fd >= 0)
                close(good.fd);
        ok(RUN_UNTIL(hang.done), "the hanging child's deadline comes");
        is_int(hang.r, -ETIMEDOUT, "it reports ETIMEDOUT");
        ok(RUN_UNTIL(children_alive(set) == 0), "the killed child is reaped");

        child_start(set, 1002, test_child_fn, &(ChildArg) { .mode = 2 }, sizeof(ChildArg),
                    5000 * MSEC, on_test_child, &bad);
        ok(RUN_UNTIL(bad.done) && bad.r == -EPROTO && bad.value == 42,
           "a child that fails says so, with its result");
        children_free(set);
        close(other);
        server_free(s);
}

/* ---- the effective namespace limit -------------------------------------------------------- */

static void test_effective_limit(void) {
        Config c;
        g_autofree char *why = NULL;
        unsigned n;

        config_init_defaults(&c);
        n = server_effective_max_namespaces(&c, 524288, 100000, &why);
        ok(n == 10000 && !why, "plenty of descriptors: MaxNamespaces= stands (%u)", n);
        n = server_effective_max_namespaces(&c, 1024, 100000, &why);
        ok(n == (1024 - 64 - 480) / 3 && why && strstr(why, "RLIMIT_NOFILE=1024"),
           "RLIMIT_NOFILE=1024: %u, and why (%s)", n, why);
        g_clear_pointer(&why, g_free);
        n = server_effective_max_namespaces(&c, 524288, 5000, &why);
        ok(n == 5000 - 64 && why && strstr(why, "max_mnt_namespaces=5000"),
           "user.max_mnt_namespaces=5000: %u (%s)", n, why);
        g_clear_pointer(&why, g_free);
        n = server_effective_max_namespaces(&c, 524288, 0, &why);
        ok(n == 10000 && !why, "max_mnt_namespaces unknown: not a cap");
        n = server_effective_max_namespaces(&c, 10, 0, &why);
        is_int(n, 0, "a tiny RLIMIT_NOFILE: none, said plainly");
        config_done(&c);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
                abort();
        test_table();
        test_status();
        test_bad_message();
        test_idle();
        test_slow_reader();
        test_queue_bound();
        test_stream();
        test_limits();
        test_root_socket();
        test_rate_limit();
        test_emfile();
        test_slow_lookup();
        test_join_session_refusals();
        test_children();
        test_effective_limit();
        rmdir(tmpdir);
        return tap_done();
}
