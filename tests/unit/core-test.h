/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/core-test.h: driving nsd's core library (a Server without pins or probes) over
 * socketpairs, for the unit tests of requests and policies. Header-only, like tap.h.
 *
 * Every wait runs nsd's GMainContext until the state is reached, with a generous deadline
 * that only fails the test (RUN_UNTIL). Nothing here creates a mount namespace.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "domain/user.h"
#include "nsd-protocol.h"
#include "server.h"
#include "socket-util.h"
#include "store/userns.h"
#include "transport/conn.h"

#define CORE_TEST_DEADLINE_MS 20000

static inline gboolean core_test_on_expire(gpointer p) {
        *(bool *) p = true;
        return G_SOURCE_REMOVE;
}

/* Run the main context until expr holds, or the deadline passed (then expr is false). */
#define RUN_UNTIL(expr)                                                                          \
        ({                                                                                       \
                bool _expired = false;                                                           \
                guint _t = g_timeout_add(CORE_TEST_DEADLINE_MS, core_test_on_expire, &_expired); \
                while (!(expr) && !_expired)                                                     \
                        g_main_context_iteration(NULL, TRUE);                                    \
                if (!_expired)                                                                   \
                        g_source_remove(_t);                                                     \
                (bool) (expr);                                                                   \
        })

static inline Config core_test_config(void) {
        Config c;

        config_init_defaults(&c);
        c.request_rate_per_user = 100000;
        c.request_burst_per_user = 100000;
        return c;
}

static inline Server *core_test_server(Config *c) {
        Server *s = NULL;

        if (server_new(c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s) < 0)
                abort();
        return s;
}

/* A connection of uid whose peer is pid, as a socketpair: returns the client end. */
static inline int core_test_peer(Server *s, ConnKind kind, uid_t uid, pid_t pid) {
        int sv[2];

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                abort();
        (void) conn_manager_add(s->conns, kind, sv[0], uid, pid);
        return sv[1];
}

/* A user uid whose "namespace" is the one this process is in (its nsfs file and "/"), taken
 * for pinned or not (nothing is pinned: the server has no pin store). */
static inline User *core_test_user_here_pinned(Server *s, uid_t uid, bool pinned) {
        UserNs *ns = userns_new(uid);
        struct stat st;

        ns->ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        ns->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ns->ns_fd < 0 || ns->root_fd < 0 || fstat(ns->ns_fd, &st) < 0)
                abort();
        ns->ns_inode = st.st_ino;
        ns->pinned = pinned;
        return user_add(s, ns, NULL, 0);
}

/* ... not pinned, as without a pin store */
static inline User *core_test_user_here(Server *s, uid_t uid) {
        return core_test_user_here_pinned(s, uid, false);
}

static inline int core_test_send(int fd, const void *msg, size_t len, int pass_fd) {
        ssize_t n = send_with_fds(fd, msg, len, &pass_fd, pass_fd >= 0 ? 1 : 0, MSG_NOSIGNAL);
        return n == (ssize_t) len ? 0 : n < 0 ? (int) n : -EIO;
}

static inline bool core_test_readable(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

typedef struct CoreReply {
        uint16_t type; /* 0 at EOF, 0xdead when nothing came */
        int error;
        char message[NSD_ERROR_MESSAGE_MAX];
        unsigned n_fds; /* descriptors it carried (closed) */
        union {
                struct nsd_msg_header hdr;
                uint8_t bytes[NSD_MSG_SIZE_MAX];
        } msg;
} CoreReply;

/* Read one reply from fd (blocking up to timeout_ms; no main loop: for a peer in a child
 * process, whose nsd runs in the parent). */
static inline CoreReply core_test_recv(int fd, int timeout_ms) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * NSD_MSG_FDS_MAX)];
        } control;
        CoreReply rep = { .type = 0xdead };
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
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
                        for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                int d;
                                memcpy(&d, CMSG_DATA(cm) + i * sizeof(int), sizeof d);
                                close(d);
                                rep.n_fds++;
                        }
        rep.type = rep.msg.hdr.type;
        rep.error = rep.msg.hdr.error;
        if (rep.type == NSD_REP_ERROR && n >= (ssize_t) sizeof(struct nsd_rep_error))
                g_strlcpy(rep.message, ((struct nsd_rep_error *) &rep.msg)->message,
                          sizeof rep.message);
        return rep;
}

/* The next reply, running nsd's loop (in this process) until it comes. */
static inline CoreReply core_test_next(int fd) {
        if (!RUN_UNTIL(core_test_readable(fd)))
                return (CoreReply) { .type = 0xdead };
        return core_test_recv(fd, 0);
}
