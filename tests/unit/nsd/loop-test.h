/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/loop-test.h: running nsd's GLib loop in a test and talking to a ConnManager
 * over socketpairs, without a Server: for the tests of the transport (test-conn.c,
 * test-request.c) and, through core-test.h, of the rooms above it. Header-only, like tap.h.
 *
 * Every wait runs the thread-default GMainContext until the state is reached, with a generous
 * deadline that only fails the test (RUN_UNTIL). Nothing here creates a mount namespace.
 */
#pragma once

#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nsd-protocol.h"
#include "policy/conf.h"
#include "socket-util.h"
#include "transport/conn.h"

#define LOOP_TEST_DEADLINE_MS 20000
#define MSEC 1000ull

static inline gboolean loop_test_on_expire(gpointer p) {
        *(bool *) p = true;
        return G_SOURCE_REMOVE;
}

/* Run the main context until expr holds, or the deadline passed (then expr is false). */
#define RUN_UNTIL(expr)                                                                          \
        ({                                                                                       \
                bool _expired = false;                                                           \
                guint _t = g_timeout_add(LOOP_TEST_DEADLINE_MS, loop_test_on_expire, &_expired); \
                while (!(expr) && !_expired)                                                     \
                        g_main_context_iteration(NULL, TRUE);                                    \
                if (!_expired)                                                                   \
                        g_source_remove(_t);                                                     \
                (bool) (expr);                                                                   \
        })

/* Run the context for a while without a condition: only to show something does NOT happen
 * (the assertion after it never depends on timing to pass). */
static inline void loop_test_run_for(unsigned ms) {
        bool expired = false;

        g_timeout_add(ms, loop_test_on_expire, &expired);
        while (!expired)
                g_main_context_iteration(NULL, TRUE);
}

/* The defaults, with a rate limit no test meets by accident. */
/* Close a test's client ends, fds[] up to a -1 (LOOP_TEST_FDS(a, b, ...) makes such a list),
 * before its connection manager or server goes. */
static inline void loop_test_close_fds(const int *fds) {
        for (; *fds >= 0; fds++)
                close(*fds);
}
#define LOOP_TEST_FDS(...) ((const int[]) { __VA_ARGS__, -1 })

static inline Config loop_test_config(void) {
        Config c;

        config_init_defaults(&c);
        c.request_rate_per_user = 100000;
        c.request_burst_per_user = 100000;
        return c;
}

/* A connection of uid (on kind's socket) whose peer is pid, as a socketpair: returns the
 * client end; *ret_r (may be NULL) is what conn_manager_add() said. sndbuf > 0 shrinks nsd's
 * send buffer. */
static inline int loop_test_peer(ConnManager *m, ConnKind kind, uid_t uid, pid_t pid, int sndbuf,
                                 int *ret_r) {
        int sv[2], r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                abort();
        if (sndbuf > 0)
                (void) setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        r = conn_manager_add(m, kind, sv[0], uid, pid);
        if (ret_r)
                *ret_r = r;
        return sv[1];
}

/* Send one datagram (with pass_fd by SCM_RIGHTS, unless it is -1), never blocking: 0 or
 * -errno. */
static inline int loop_test_send(int fd, const void *msg, size_t len, int pass_fd) {
        ssize_t n = send_with_fds(fd, msg, len, &pass_fd, pass_fd >= 0 ? 1 : 0,
                                  MSG_NOSIGNAL | MSG_DONTWAIT);

        return n == (ssize_t) len ? 0 : n < 0 ? (int) n : -EIO;
}

/* A request of type with nothing but its header (STATUS, LIST: their whole message), seq. */
static inline int loop_test_send_type(int fd, uint16_t type, uint32_t seq) {
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX];
        } q = { 0 };
        size_t size = nsd_request_size(type);

        nsd_msg_init(&q.hdr, type, size, seq);
        return loop_test_send(fd, &q, size, -1);
}

static inline bool loop_test_readable(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

typedef struct TestReply {
        uint16_t type; /* 0 at EOF, 0xdead when nothing came */
        int error;
        uint32_t seq;
        size_t len;
        char message[NSD_ERROR_MESSAGE_MAX];
        unsigned n_fds; /* descriptors it carried (closed, or handed out: loop_test_recv_fds()) */
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX];
                uint64_t align; /* replies are read in place: struct nsd_rep_* hold 64-bit fields */
        } msg;
} TestReply;

/* Read one reply from fd (blocking up to timeout_ms; no main loop: for a peer in a child
 * process, whose nsd runs in the parent); the first max descriptors it carried into fds, the
 * others closed. */
static inline TestReply loop_test_recv_fds(int fd, int timeout_ms, int *fds, size_t max) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * NSD_MSG_FDS_MAX)];
        } control;
        TestReply rep = { .type = 0xdead };
        struct iovec iov = { .iov_base = &rep.msg, .iov_len = sizeof rep.msg };
        struct msghdr mh = { .msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = &control,
                             .msg_controllen = sizeof control };
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        if (poll(&p, 1, timeout_ms) <= 0)
                return rep;
        n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < (ssize_t) sizeof rep.msg.hdr) {
                rep.type = 0;
                return rep;
        }
        rep.n_fds += (unsigned) cmsg_take_fds(&mh, fds, max);
        rep.type = rep.msg.hdr.type;
        rep.error = rep.msg.hdr.error;
        rep.seq = rep.msg.hdr.seq;
        rep.len = (size_t) n;
        if (rep.type == NSD_REP_ERROR && n >= (ssize_t) sizeof(struct nsd_rep_error))
                g_strlcpy(rep.message, ((struct nsd_rep_error *) &rep.msg)->message,
                          sizeof rep.message);
        return rep;
}

/* The same, its descriptors closed. */
static inline TestReply loop_test_recv(int fd, int timeout_ms) {
        return loop_test_recv_fds(fd, timeout_ms, NULL, 0);
}

/* The next reply, running nsd's loop (in this process) until it comes. */
static inline TestReply loop_test_next(int fd) {
        if (!RUN_UNTIL(loop_test_readable(fd)))
                return (TestReply) { .type = 0xdead };
        return loop_test_recv(fd, 0);
}

/* Is the next thing fd reads EOF (nsd closed it)? */
static inline bool loop_test_at_eof(int fd) {
        return loop_test_next(fd).type == 0;
}

/* Read what is there now; count replies of type (or every reply with type 0). */
static inline unsigned loop_test_drain(int fd, uint16_t type) {
        unsigned n = 0;

        while (loop_test_readable(fd)) {
                TestReply rep = loop_test_recv(fd, 0);
                if (rep.type == 0)
                        break;
                if (type == 0 || rep.type == type)
                        n++;
        }
        return n;
}

/* Read what is there of a stream (LIST), up to its end: count its entries and ends; returns
 * the ends so far. */
static inline unsigned loop_test_drain_stream(int fd, unsigned *entries, unsigned *ends) {
        while (loop_test_readable(fd)) {
                TestReply rep = loop_test_recv(fd, 0);
                if (rep.type == 0)
                        break;
                *entries += rep.type == NSD_REP_LIST_ENTRY;
                if (rep.type == NSD_REP_LIST_END) {
                        (*ends)++;
                        break;
                }
        }
        return *ends;
}
