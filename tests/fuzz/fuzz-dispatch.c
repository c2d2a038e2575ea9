/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-dispatch: libFuzzer harness of nsd's request validation and dispatch (issue 10,
 * item 5), through the real path a datagram takes: a connection of an unprivileged uid
 * (conn.c reads it, nsd_msg_check and the table's checks in requests.c validate it, the
 * handler answers), over a socketpair, against nsd's core library with a Server that has no
 * sockets, pins or probes (tests/unit/core-test.h). No privilege needed and none used: the
 * peer is uid 1000 on everyone's socket, whose "namespace" is the one the fuzzer runs in, so
 * JOIN, SHOW, RELEASE, HIDE, SESSION_* and STATUS/LIST all reach their handlers (HIDE stops
 * at "owner-private mounts need a kernel with..." since the Server probed no features).
 *
 * Input: byte 0 says how many descriptors ride along (bits 0-1: 0..2, of /dev/null, as
 * SCM_RIGHTS); the rest is one datagram as a client would send it (up to 8 KiB, so nsd's
 * oversize check is reached too). Each input gets a fresh connection, which is closed and
 * gone again before the next one.
 *
 * Build (clang, Debian's): a build folder of its own, e.g.
 *   CC=clang meson setup build-fuzz -Db_sanitize=address,undefined -Db_lundef=false
 * and in tests/fuzz/meson.build:
 *   executable('fuzz-dispatch', 'fuzz-dispatch.c',
 *     include_directories : include_directories('../unit'),
 *     dependencies : nsd_core_dep,
 *     c_args : ['-fsanitize=fuzzer-no-link'], link_args : ['-fsanitize=fuzzer'])
 * (the core library itself wants -fsanitize=fuzzer-no-link for coverage: add it to the
 * project's c_args in that build folder). Run: build-fuzz/tests/fuzz/fuzz-dispatch CORPUS.
 */
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core-test.h"
#include "log.h"

#define FUZZ_UID 1000
#define FUZZ_DATAGRAM_MAX 8192
#define FUZZ_TURNS_MAX 256

static Server *server;
static Config config;
static int devnull = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        signal(SIGPIPE, SIG_IGN);
        /* only crashes matter here, not nsd's warnings about bad input */
        log_setup(LOG_TARGET_STDERR, LOG_CRIT);
        config = core_test_config();
        server = core_test_server(&config);
        core_test_user_here(server, FUZZ_UID);
        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0)
                abort();
        return 0;
}

/* Run nsd's loop until nothing is pending, a bounded number of turns. */
static void run_loop(void) {
        for (unsigned i = 0; i < FUZZ_TURNS_MAX && g_main_context_pending(NULL); i++)
                g_main_context_iteration(NULL, FALSE);
}

static void drain(int fd) {
        for (;;) {
                CoreReply rep = core_test_recv(fd, 0);
                if (rep.type == 0 || rep.type == 0xdead)
                        return;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * 2)];
        } control;
        int fds[2] = { devnull, devnull };
        unsigned n_fds;
        struct iovec iov;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int fd;

        if (size < 1 || size - 1 > FUZZ_DATAGRAM_MAX)
                return -1;
        n_fds = data[0] & 3u;
        if (n_fds > 2)
                n_fds = 2;
        iov = (struct iovec) { .iov_base = (void *) (data + 1), .iov_len = size - 1 };
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

        /* a RELEASE of the last input took the user's namespace away: put it back, so that
         * no JOIN ever asks the core to create one (which would unshare, with privilege) */
        if (!user_get(server, FUZZ_UID))
                core_test_user_here(server, FUZZ_UID);
        fd = core_test_peer(server, CONN_KIND_USER, FUZZ_UID, getpid());
        (void) sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        run_loop();
        drain(fd);
        close(fd);
        /* the connection is gone before the next input (a request still waiting on a helper
         * or a lookup ends with it) */
        for (unsigned i = 0; i < FUZZ_TURNS_MAX && conn_manager_count(server->conns) > 0; i++)
                g_main_context_iteration(NULL, conn_manager_count(server->conns) > 0);
        return 0;
}
