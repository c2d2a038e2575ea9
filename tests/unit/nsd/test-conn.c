/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-conn: nsd's transport alone (nsd/transport/conn.c), with a fake handler table bound
 * in place of nsd's requests, as libfuse's tests bind their own ops: no Server, no request,
 * no policy. Over socketpairs and sockets in a temp folder: one call in flight per
 * connection, a call whose client leaves, limits, timeouts, rate limits, queues, root's
 * socket, EMFILE backoff; budgets that count people (a subuid range's connections against
 * its owner, the slots reserved for MinUid..MaxUid, set-uid programs on root's socket per
 * real uid and their first request's deadline), a refused client reading the reason, and
 * SO_PEERPIDFD. TAP; no root needed (run as root, the peer that must not be root
 * drops to nobody in a child).
 *
 * Timeouts are set in milliseconds so the waits are short; every wait runs the loop until
 * the state is reached (loop-test.h).
 *
 * The fake handler answers a message at once with one reply of its seq (type
 * NSD_REP_STATUS, as large as STATUS's), except:
 *   NSD_REQ_LIST  a streaming call: stream_parts replies, made as the socket drains, then
 *                 NSD_REP_LIST_END;
 *   NSD_REQ_HIDE  a call held in flight until the test ends it (fake.held);
 *   anything shorter than a header: an error reply, then the connection is closed.
 */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>

#include "loop-test.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-conn.XXXXXX";

/* ---- the fake handler -------------------------------------------------------------------- */

typedef struct FakeCall {
        Conn *conn;
        uint32_t seq;
        unsigned left; /* stream parts still to make */
} FakeCall;

typedef struct Fake {
        unsigned messages;
        unsigned stream_parts;
        unsigned gone; /* calls whose connection went away */
        FakeCall *held;
} Fake;

static Fake fake;

static void fake_reply(Conn *c, uint16_t type, uint32_t seq) {
        struct nsd_rep_status rep = { 0 };

        nsd_msg_init(&rep.hdr, type, sizeof rep, seq);
        (void) conn_send(c, &rep, sizeof rep, NULL, 0);
}

/* As many parts as the socket takes now; true when the stream is over. */
static bool fake_produce(FakeCall *call) {
        while (call->left > 0 && conn_can_send(call->conn)) {
                fake_reply(call->conn, NSD_REP_LIST_ENTRY, call->seq);
                call->left--;
        }
        if (call->left > 0 || !conn_can_send(call->conn))
                return false;
        fake_reply(call->conn, NSD_REP_LIST_END, call->seq);
        return true;
}

static void fake_end(FakeCall *call) {
        conn_call_finished(call->conn);
        g_free(call);
}

static void fake_message(Conn *c, const void *buf, size_t n, int *fds, size_t n_fds, bool ctrunc,
                         void *userdata) {
        const struct nsd_msg_header *hdr = buf;
        Fake *f = userdata;
        FakeCall *call;

        f->messages++;
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);
        if (n < sizeof *hdr) {
                struct nsd_rep_error rep = { 0 };

                nsd_msg_init(&rep.hdr, NSD_REP_ERROR, sizeof rep, 0);
                rep.hdr.error = -EBADMSG;
                (void) conn_send(c, &rep, sizeof rep, NULL, 0);
                conn_log(c, LOG_WARNING, "test: a short message");
                conn_close_after_reply(c);
                return;
        }
        if (hdr->type != NSD_REQ_LIST && hdr->type != NSD_REQ_HIDE) {
                fake_reply(c, NSD_REP_STATUS, hdr->seq);
                return;
        }
        call = g_new0(FakeCall, 1);
        call->conn = c;
        call->seq = hdr->seq;
        conn_begin_call(c, call);
        if (hdr->type == NSD_REQ_HIDE) {
                f->held = call;
                return;
        }
        call->left = f->stream_parts;
        if (fake_produce(call))
                fake_end(call);
        else
                conn_want_drained(c);
}

static void fake_drained(void *p) {
        if (fake_produce(p))
                fake_end(p);
}

static void fake_gone(void *p) {
        if (fake.held == p)
                fake.held = NULL;
        fake.gone++;
        g_free(p);
}

static const ConnHandler fake_handler = {
        .message = fake_message,
        .drained = fake_drained,
        .gone = fake_gone,
};

/* ---- a manager for each test ------------------------------------------------------------- */

static Config config;

static ConnManager *manager_new(void) {
        fake = (Fake) { .stream_parts = 1000 };
        return conn_manager_new(&config, &fake_handler, &fake);
}

static void manager_free(ConnManager *m) {
        conn_manager_free(m);
        config_done(&config);
        config = loop_test_config();
}

/* The end of a test: close the client ends fds[] (up to a -1), then manager_free(m). */
static void manager_end_fds(ConnManager *m, const int *fds) {
        loop_test_close_fds(fds);
        manager_free(m);
}
#define manager_end(m, ...) manager_end_fds((m), LOOP_TEST_FDS(__VA_ARGS__))

static const ConnStats *stats(ConnManager *m) {
        return conn_manager_stats(m);
}

static int peer(ConnManager *m, ConnKind kind, uid_t uid) {
        return loop_test_peer(m, kind, uid, getpid(), 0, NULL);
}

static int ping(int fd, uint32_t seq) {
        return loop_test_send_type(fd, NSD_REQ_STATUS, seq);
}

static uint16_t next_type(int fd) {
        return loop_test_next(fd).type;
}

/* ---- calls ------------------------------------------------------------------------------- */

static void test_one_call_in_flight(void) {
        ConnManager *m = manager_new();
        int fd = peer(m, CONN_KIND_USER, 1000), other = peer(m, CONN_KIND_USER, 1001);
        TestReply rep;

        ping(fd, 42);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_STATUS && rep.seq == 42, "a message is handed to the handler, "
                                                        "which answers it");
        loop_test_send_type(fd, NSD_REQ_HIDE, 1);
        ping(fd, 2);
        ok(RUN_UNTIL(fake.held != NULL), "a call is in flight");
        ping(other, 3);
        is_int(next_type(other), NSD_REP_STATUS, "another connection is served meanwhile");
        loop_test_run_for(50);
        ok(!loop_test_readable(fd) && fake.messages == 3,
           "the message behind the call is not read while it is in flight");
        fake_reply(fake.held->conn, NSD_REP_HIDE, fake.held->seq);
        fake_end(g_steal_pointer(&fake.held));
        ok(next_type(fd) == NSD_REP_HIDE && (rep = loop_test_next(fd)).seq == 2,
           "once it is finished, the next message is read and answered, in order");

        loop_test_send_type(fd, NSD_REQ_HIDE, 4);
        ok(RUN_UNTIL(fake.held != NULL), "another call in flight");
        close(fd);
        ok(RUN_UNTIL(fake.gone == 1 && !fake.held),
           "its client leaves: the handler's gone() lets the call go");
        ok(RUN_UNTIL(conn_manager_count(m) == 1), "and the connection is gone");
        manager_end(m, other);
}

static void test_close_after_reply(void) {
        ConnManager *m = manager_new();
        int fd = peer(m, CONN_KIND_USER, 1000);
        TestReply rep;

        loop_test_send(fd, "bad", 3, -1);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EBADMSG,
           "the handler answers what it cannot read");
        ok(loop_test_at_eof(fd), "and conn_close_after_reply() closes the connection after it");
        is_int(stats(m)->dropped_bad, 1, "counted as a bad client");
        manager_end(m, fd);
}

/* ---- idle, slow readers, queues ---------------------------------------------------------- */

static void test_idle(void) {
        config.idle_timeout_usec = 100 * MSEC;
        ConnManager *m = manager_new();
        int fd = peer(m, CONN_KIND_USER, 1000), root = peer(m, CONN_KIND_ROOT, 0);

        ok(RUN_UNTIL(stats(m)->dropped_idle == 2),
           "an idle connection is dropped after IdleTimeoutSec= (root's too)");
        ok(loop_test_at_eof(fd) && loop_test_at_eof(root), "the clients see EOF");
        is_int(conn_manager_count(m), 0, "no connection left");
        close(fd);
        close(root);

        /* a connection that keeps asking is not idle (asking 20 times faster than the
         * timeout, so only a machine stalled for a whole second could fail this); the new
         * timeout applies after a reload */
        config.idle_timeout_usec = 1000 * MSEC;
        conn_manager_reconfigure(m);
        fd = peer(m, CONN_KIND_USER, 1000);
        for (int i = 0; i < 10; i++) {
                ping(fd, (uint32_t) i);
                (void) next_type(fd);
                loop_test_run_for(50);
        }
        is_int(stats(m)->dropped_idle, 2, "a connection asking every 50 ms is kept (1 s idle)");
        manager_end(m, fd);
}

/* A client of uid 1000 whose nsd end has a small send buffer sends up to 150 messages and
 * reads no reply: how many it sent (*ret_fd: its end). */
static int flood(ConnManager *m, int *ret_fd) {
        int sent = 0;

        *ret_fd = loop_test_peer(m, CONN_KIND_USER, 1000, getpid(), 4096, NULL);
        while (sent < 150 && ping(*ret_fd, (uint32_t) sent) == 0)
                sent++;
        return sent;
}

static void test_slow_reader(void) {
        config.reply_timeout_usec = 200 * MSEC;
        config.max_queued_replies = 1000;
        ConnManager *m = manager_new();
        int other = peer(m, CONN_KIND_USER, 1001), fd;
        int sent = flood(m, &fd);

        ok(sent > 20, "a client sends %d messages and reads no reply", sent);
        ok(RUN_UNTIL(stats(m)->dropped_slow == 1),
           "it is dropped after ReplyTimeoutSec= without progress");
        is_int(stats(m)->dropped_overflow, 0, "(not for an overflow: MaxQueuedReplies=1000)");
        ping(other, 9);
        is_int(next_type(other), NSD_REP_STATUS, "another uid is served");
        manager_end(m, fd, other);
}

static void test_queue_bound(void) {
        config.max_queued_replies = 4;
        config.reply_timeout_usec = 60000 * MSEC;
        ConnManager *m = manager_new();
        int fd, sent = flood(m, &fd);

        ok(RUN_UNTIL(stats(m)->dropped_overflow == 1),
           "a client pipelining %d messages without reading overflows MaxQueuedReplies=4 "
           "and is dropped",
           sent);
        is_int(conn_manager_count(m), 0, "its connection is closed");
        manager_end(m, fd);
}

static void test_stream(void) {
        config.max_queued_replies = 2;
        config.reply_timeout_usec = 1000 * MSEC;
        ConnManager *m = manager_new();
        int fd = loop_test_peer(m, CONN_KIND_ROOT, 0, getpid(), 4096, NULL), other;
        unsigned entries = 0, ends = 0;

        loop_test_send_type(fd, NSD_REQ_LIST, 5);
        other = peer(m, CONN_KIND_USER, 1001);
        ping(other, 1);
        is_int(next_type(other), NSD_REP_STATUS,
               "while a stream of 1000 parts waits to be read, another client is served");
        /* read what is there at each turn of the loop */
        ok(RUN_UNTIL(loop_test_drain_stream(fd, &entries, &ends) > 0),
           "the stream arrives to the end");
        is_int(entries, 1000, "with all 1000 parts");
        is_int(stats(m)->dropped_overflow, 0,
               "made as the socket drains (drained()): a 2-reply queue never overflows");

        /* the same stream, never read: dropped as a slow reader */
        loop_test_send_type(fd, NSD_REQ_LIST, 6);
        ok(RUN_UNTIL(stats(m)->dropped_slow == 1), "a stream never read: dropped after "
                                                   "ReplyTimeoutSec=");
        ok(RUN_UNTIL(fake.gone == 1), "and its call let go through gone()");
        manager_end(m, fd, other);
}

/* ---- limits ----------------------------------------------------------------------------- */

/* A connection of uid on kind's socket that must be refused: EUSERS naming what, then the
 * close. */
static void refused(ConnManager *m, ConnKind kind, uid_t uid, const char *what, const char *label) {
        int r, fd = loop_test_peer(m, kind, uid, getpid(), 0, &r);
        TestReply rep;

        is_int(r, -EUSERS, "%s: refused", label);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EUSERS && strstr(rep.message, what),
           "... with EUSERS naming %s (%s)", what, rep.message);
        ok(loop_test_at_eof(fd), "... and closed");
        close(fd);
}

static void test_limits(void) {
        config.max_connections = 4;
        config.max_connections_per_user = 2;
        config.max_root_connections = 3;
        ConnManager *m = manager_new();
        int fds[16], n = 0, r;
        TestReply rep;

        fds[n++] = loop_test_peer(m, CONN_KIND_USER, 1000, getpid(), 0, &r);
        fds[n++] = loop_test_peer(m, CONN_KIND_USER, 1000, getpid(), 0, &r);
        ok(r == 0, "uid 1000: two connections (MaxConnectionsPerUser=2)");
        refused(m, CONN_KIND_USER, 1000, "MaxConnectionsPerUser=", "uid 1000's third");

        /* a client that sent its request before nsd looked at it (libnsclient does: connect,
         * then send) reads the reason too, not a reset for the request left unread */
        {
                int sv[2];

                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                        abort();
                ping(sv[1], 1);
                ping(sv[1], 2);
                r = conn_manager_add(m, CONN_KIND_USER, sv[0], 1000, getpid());
                is_int(r, -EUSERS, "a third, with two requests already queued: refused");
                rep = loop_test_next(sv[1]);
                ok(rep.type == NSD_REP_ERROR && rep.error == -EUSERS &&
                           strstr(rep.message, "MaxConnectionsPerUser="),
                   "its first read is the reason, not ECONNRESET (%s)", rep.message);
                close(sv[1]);
        }

        fds[n++] = loop_test_peer(m, CONN_KIND_USER, 1001, getpid(), 0, &r);
        fds[n++] = loop_test_peer(m, CONN_KIND_USER, 1002, getpid(), 0, &r);
        ok(r == 0, "uids 1001, 1002: one each (4 in all, MaxConnections=4)");
        refused(m, CONN_KIND_USER, 1003, "MaxConnections=", "uid 1003, MaxConnections= reached");

        fds[n++] = loop_test_peer(m, CONN_KIND_ROOT, 0, getpid(), 0, &r);
        ok(r == 0, "root on its socket: accepted though MaxConnections= is reached");
        fds[n++] = loop_test_peer(m, CONN_KIND_USER, 0, getpid(), 0, &r);
        fds[n++] = loop_test_peer(m, CONN_KIND_ROOT, 0, getpid(), 0, &r);
        ok(r == 0, "root on either socket: three (MaxRootConnections=3)");
        refused(m, CONN_KIND_USER, 0,
                "MaxRootConnections=", "a fourth root connection on the user socket");
        is_int(conn_manager_count_uid(m, 0), 3, "root holds 3");
        is_int(conn_manager_count(m), 7, "7 in all");

        /* root's connections never counted against the users' */
        close(fds[0]);
        ok(RUN_UNTIL(conn_manager_count_uid(m, 1000) == 1), "uid 1000 closes one");
        fds[0] = loop_test_peer(m, CONN_KIND_USER, 1003, getpid(), 0, &r);
        ok(r == 0, "then uid 1003 gets the free slot");
        is_int(stats(m)->refused_limit, 4, "4 refused in all");
        is_int(fake.messages, 0, "the handler saw no message of a refused connection");
        for (int i = 0; i < n; i++)
                close(fds[i]);
        manager_free(m);
}

/* A listening socket in the temp folder, served by m as kind; its address in *sa. */
static void listen_on(ConnManager *m, ConnKind kind, const char *name, struct sockaddr_un *sa) {
        g_autofree char *path = g_build_filename(tmpdir, name, NULL);
        int lfd;

        *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        g_strlcpy(sa->sun_path, path, sizeof sa->sun_path);
        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (bind(lfd, (struct sockaddr *) sa, sizeof *sa) < 0 || listen(lfd, 16) < 0 ||
            chmod(path, 0666) < 0)
                abort();
        conn_manager_listen(m, kind, lfd);
}

/* A connection to sa made by a process that is not root, whoever runs the test (a child as
 * nobody when we are root, else ourselves): its descriptor, or -1. */
static int connect_not_root(const struct sockaddr_un *sa) {
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
        int sv[2], fd = -1;
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                abort();
        pid = fork();
        if (pid == 0) {
                close(sv[0]);
                if (getuid() == 0 &&
                    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                     setresuid(65534, 65534, 65534) < 0))
                        _exit(2);
                fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (connect(fd, (const struct sockaddr *) sa, sizeof *sa) < 0)
                        _exit(3);
                /* hand the connection to the parent and wait until it is done */
                loop_test_send(sv[1], "c", 1, fd);
                (void) read(sv[1], &b, 1);
                _exit(0);
        }
        close(sv[1]);
        if (recvmsg(sv[0], &mh, 0) == 1 && CMSG_FIRSTHDR(&mh))
                memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof fd);
        close(sv[0]);
        waitpid(pid, NULL, 0);
        if (fd >= 0)
                (void) fcntl(fd, F_SETFL, O_NONBLOCK);
        return fd;
}

static void test_root_socket(void) {
        config.max_root_connections = 1;
        ConnManager *m = manager_new();
        struct sockaddr_un sa;
        TestReply rep;
        int fd, root;

        listen_on(m, CONN_KIND_ROOT, "root.socket", &sa);
        fd = connect_not_root(&sa);
        ok(fd >= 0, "a client that is not root connects to root's socket (mode 0666 here)");
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EPERM, "nsd refuses it with EPERM (%s)",
           rep.message);
        ok(loop_test_at_eof(fd), "and closes it");
        is_int(stats(m)->refused_not_root, 1, "counted as a non-root peer on root's socket");
        close(fd);

        /* at MaxRootConnections=1 nsd stops accepting on root's socket: the next connection
         * waits in the backlog instead of being refused */
        root = peer(m, CONN_KIND_ROOT, 0);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        unsigned before = stats(m)->accepted + stats(m)->refused_not_root;
        connect(fd, (struct sockaddr *) &sa, sizeof sa);
        ok(RUN_UNTIL(!conn_manager_accepting(m, CONN_KIND_ROOT)),
           "root's socket is paused at MaxRootConnections=");
        is_int(stats(m)->accepted + stats(m)->refused_not_root, before,
               "the waiting connection is neither accepted nor refused");
        close(root);
        ok(RUN_UNTIL(stats(m)->accepted + stats(m)->refused_not_root == before + 1),
           "once root's connection closes, the waiting one is taken");
        ok(conn_manager_accepting(m, CONN_KIND_ROOT) || conn_manager_count_uid(m, 0) == 1,
           "and the socket accepts again (or is at the bound again)");
        manager_end(m, fd);
        unlink(sa.sun_path);
}

/* ---- people, not uids --------------------------------------------------------------------- */

/* uids 100000..165535: the subuid range of uid 1000 (as /etc/subuid would say) */
static uid_t test_person(uid_t uid, gid_t gid, void *userdata) {
        (*(unsigned *) userdata)++;
        return uid >= 100000 && uid < 165536 ? 1000 : uid;
}

static void test_people(void) {
        config.max_connections = 16;
        config.max_connections_per_user = 4;
        config.reserved_connections = 4;
        ConnManager *m = manager_new();
        unsigned asked = 0, accepted = 0, as_owner = 0;
        int fds[64], n = 0, r, fd;
        TestReply rep;

        conn_manager_set_person_fn(m, test_person, &asked);
        for (uid_t i = 0; i < 64; i++) {
                fd = loop_test_peer(m, CONN_KIND_USER, 100000 + i, getpid(), 0, &r);
                if (r == 0) {
                        fds[n++] = fd;
                        accepted++;
                        continue;
                }
                rep = loop_test_next(fd);
                as_owner += rep.type == NSD_REP_ERROR && rep.error == -EUSERS &&
                            strstr(rep.message, "counts as uid 1000, the owner of its "
                                                "subordinate id range") != NULL;
                close(fd);
        }
        is_int(accepted, 4,
               "64 uids of uid 1000's subuid range: 4 connections in all "
               "(MaxConnectionsPerUser=4 of their owner)");
        is_int(as_owner, 60, "the others are refused, naming the owner");
        ok(asked >= 64, "the person of each was asked");
        fds[n++] = fd = peer(m, CONN_KIND_USER, 1001);
        ping(fd, 7);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_STATUS && rep.seq == 7, "another user's STATUS is served");

        /* uids outside MinUid..MaxUid (not subuids) fill what is not reserved */
        for (uid_t i = 0; n < 12; i++) {
                fds[n++] = loop_test_peer(m, CONN_KIND_USER, 200000 + i, getpid(), 0, &r);
                if (r < 0)
                        break;
        }
        is_int(r, 0, "uids outside MinUid..MaxUid take 12 of MaxConnections=16");
        fd = loop_test_peer(m, CONN_KIND_USER, 300000, getpid(), 0, &r);
        rep = loop_test_next(fd);
        ok(r == -EUSERS && strstr(rep.message, "ReservedConnections=4"),
           "the next one is refused: the rest is reserved (%s)", rep.message);
        close(fd);
        fds[n++] = fd = peer(m, CONN_KIND_USER, 1002);
        ping(fd, 8);
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_STATUS && rep.seq == 8, "a uid inside MinUid..MaxUid gets one of "
                                                       "the reserved slots and is served");
        for (int i = 0; i < n; i++)
                close(fds[i]);
        manager_free(m);
}

/* A refused client that sends its request after nsd refused it (libnsclient: connect, send,
 * receive) reads the reason, not EPIPE. */
static void test_refused_reads_reason(void) {
        config.max_connections_per_user = 1;
        ConnManager *m = manager_new();
        int first = peer(m, CONN_KIND_USER, 1000), fd, r;
        TestReply rep;

        fd = loop_test_peer(m, CONN_KIND_USER, 1000, getpid(), 0, &r);
        is_int(r, -EUSERS, "uid 1000's second connection is refused (MaxConnectionsPerUser=1)");
        loop_test_run_for(20); /* nsd has answered; the client sends only now */
        is_int(ping(fd, 1), 0, "its request, sent after the refusal, is taken (not EPIPE)");
        rep = loop_test_next(fd);
        ok(rep.type == NSD_REP_ERROR && rep.error == -EUSERS &&
                   strstr(rep.message, "MaxConnectionsPerUser="),
           "it reads the reason (%s)", rep.message);
        ok(loop_test_at_eof(fd), "then the end");
        manager_end(m, fd, first);
}

/* A set-uid program (su) that a user runs connects to root's socket as uid 0, with its real
 * uid the user's. */
static void test_setuid(void) {
        config.max_setuid_connections_per_user = 2;
        config.setuid_request_timeout_usec = 200 * MSEC;
        ConnManager *m = manager_new();
        int fds[8], n = 0, r, fd;
        pid_t su;
        TestReply rep;

        if (geteuid() != 0) {
                for (int i = 0; i < 7; i++)
                        tap_skip("a set-uid program's peer needs root (setresuid)");
                manager_free(m);
                return;
        }
        int ready[2];
        char byte;
        if (pipe2(ready, O_CLOEXEC) < 0)
                abort();
        su = fork();
        if (su == 0) { /* real uid 1500, effective 0: what su is while it opens a session */
                if (setresuid(1500, 0, 0) < 0 || write(ready[1], "x", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(ready[1]);
        if (read(ready[0], &byte, 1) != 1)
                abort();
        close(ready[0]);
        fds[n++] = loop_test_peer(m, CONN_KIND_ROOT, 0, su, 0, &r);
        fds[n++] = loop_test_peer(m, CONN_KIND_ROOT, 0, su, 0, &r);
        is_int(r, 0, "a set-uid program of uid 1500: two connections to root's socket");
        fd = loop_test_peer(m, CONN_KIND_ROOT, 0, su, 0, &r);
        rep = loop_test_next(fd);
        ok(r == -EUSERS && strstr(rep.message, "uid 1500") &&
                   strstr(rep.message, "MaxSetuidConnectionsPerUser="),
           "a third is refused (%s)", rep.message);
        close(fd);
        for (int i = 0; i < 4; i++)
                fds[n++] = peer(m, CONN_KIND_ROOT, 0);
        is_int(conn_manager_count_uid(m, 0), 6, "real root is not bounded so (4 more)");
        ok(RUN_UNTIL(stats(m)->dropped_no_request == 2),
           "the set-uid program's two, which sent nothing, are dropped past "
           "SetuidRequestTimeoutSec=");
        fd = loop_test_peer(m, CONN_KIND_ROOT, 0, su, 0, &r);
        ping(fd, 3);
        rep = loop_test_next(fd);
        ok(r == 0 && rep.type == NSD_REP_STATUS, "one that sends its request at once is served");
        loop_test_run_for(300);
        is_int(stats(m)->dropped_no_request, 2, "and not dropped later");
        close(fd);
        for (int i = 0; i < n; i++)
                close(fds[i]);
        kill(su, SIGKILL);
        waitpid(su, NULL, 0);
        manager_free(m);
}

/* Where the kernel has SO_PEERPIDFD (6.5 on), the pidfd of a client comes from it. */
static void test_peerpidfd(void) {
        ConnManager *m = manager_new();
        struct sockaddr_un sa;
        int sv[2], probe = -1, fd;
        socklen_t len = sizeof probe;
        bool has;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                abort();
        has = getsockopt(sv[0], SOL_SOCKET, 77 /* SO_PEERPIDFD */, &probe, &len) == 0;
        if (probe >= 0)
                close(probe);
        close(sv[0]);
        close(sv[1]);
        listen_on(m, CONN_KIND_USER, "user.socket", &sa);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                abort();
        ok(RUN_UNTIL(stats(m)->accepted == 1), "a client connects through the socket");
        if (has)
                is_int(stats(m)->peer_pidfds, 1, "its pidfd came from SO_PEERPIDFD");
        else
                is_int(stats(m)->peer_pidfds, 0, "this kernel lacks SO_PEERPIDFD: pidfd_open()");
        manager_end(m, fd);
        unlink(sa.sun_path);
}

/* ---- rate limit ------------------------------------------------------------------------- */

static void test_rate_limit(void) {
        config.request_rate_per_user = 1; /* a second per token: the burst is all at once */
        config.request_burst_per_user = 3;
        ConnManager *m = manager_new();
        int fd = peer(m, CONN_KIND_USER, 1000), root = peer(m, CONN_KIND_ROOT, 0);
        unsigned got = 0, got_root = 0;

        for (int i = 0; i < 5; i++)
                ping(fd, (uint32_t) i);
        ok(RUN_UNTIL((got += loop_test_drain(fd, NSD_REP_STATUS)) >= 3 && stats(m)->throttled >= 1),
           "a uid sending 5 requests at once gets its burst (3) answered, then waits");
        is_int(got, 3, "exactly the burst before the wait");
        ok(RUN_UNTIL((got += loop_test_drain(fd, NSD_REP_STATUS)) == 5),
           "the rest follow at RequestRatePerUser= (not refused)");

        for (int i = 0; i < 20; i++)
                ping(root, (uint32_t) i);
        unsigned throttled = stats(m)->throttled;
        ok(RUN_UNTIL((got_root += loop_test_drain(root, NSD_REP_STATUS)) == 20),
           "root's 20 requests at once are all answered");
        is_int(stats(m)->throttled, throttled, "root is never throttled");

        /* one uid's limit is not another's */
        int other = peer(m, CONN_KIND_USER, 1001);
        ping(other, 1);
        is_int(next_type(other), NSD_REP_STATUS, "another uid is answered at once");
        manager_end(m, fd, root, other);
}

/* ---- EMFILE ------------------------------------------------------------------------------- */

static void test_emfile(void) {
        ConnManager *m = manager_new();
        struct rlimit saved, low;
        struct sockaddr_un sa;
        int client, fill[4096], n_fill = 0;

        listen_on(m, CONN_KIND_USER, "user.socket", &sa);
        client = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        getrlimit(RLIMIT_NOFILE, &saved);
        low = saved;
        low.rlim_cur = 256;
        if (setrlimit(RLIMIT_NOFILE, &low) < 0) {
                tap_skip("cannot lower RLIMIT_NOFILE: %s", strerror(errno));
                manager_free(m);
                return;
        }
        while (n_fill < (int) G_N_ELEMENTS(fill)) {
                int d = fcntl(0, F_DUPFD_CLOEXEC, 0);
                if (d < 0)
                        break;
                fill[n_fill++] = d;
        }
        connect(client, (struct sockaddr *) &sa, sizeof sa);
        ok(RUN_UNTIL(stats(m)->accept_backoffs >= 4),
           "with no descriptor left, accept() fails and the socket backs off");
        ok(!conn_manager_accepting(m, CONN_KIND_USER), "the socket is paused meanwhile");
        is_int(stats(m)->accepted, 0, "nothing was accepted");
        /* each retry is one failing accept(): 4 backoffs (10+20+40 ms between) are 4 tries,
         * not the thousands of a busy loop */
        is_int(stats(m)->accept_backoffs, 4, "one failing accept() per backoff, no spinning");

        for (int i = 0; i < n_fill; i++)
                close(fill[i]);
        setrlimit(RLIMIT_NOFILE, &saved);
        ok(RUN_UNTIL(stats(m)->accepted == 1), "descriptors free again: the client is accepted");
        ping(client, 1);
        is_int(next_type(client), NSD_REP_STATUS, "and served");
        manager_end(m, client);
        unlink(sa.sun_path);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0)
                abort();
        config = loop_test_config();
        test_one_call_in_flight();
        test_close_after_reply();
        test_idle();
        test_slow_reader();
        test_queue_bound();
        test_stream();
        test_limits();
        test_root_socket();
        test_people();
        test_refused_reads_reason();
        test_setuid();
        test_peerpidfd();
        test_rate_limit();
        test_emfile();
        config_done(&config);
        rmdir(tmpdir);
        return tap_done();
}
