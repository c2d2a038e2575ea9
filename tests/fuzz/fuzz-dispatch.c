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
 * Input: byte 0 says what rides along and what the harness fills in:
 *   bits 0-1  how many descriptors come by SCM_RIGHTS (0..2; 3 counts as 2);
 *   bit 2     they are pidfds of this process (else /dev/null), as NSD_SESSION_PIDFD and
 *             NSD_JOIN_SESSION_PIDFD send;
 *   bit 3     the pid field of a SESSION_OPEN, SESSION_CLOSE or JOIN_SESSION is set to this
 *             process's pid (a client names itself; an input cannot know the fuzzer's pid);
 * the rest is one datagram as a client would send it (up to 8 KiB, so nsd's oversize check
 * is reached too). Each input gets a fresh connection, which is closed and gone again before
 * the next one, and the sessions it opened are dropped, so an input does the same alone as
 * in a campaign. Seeds: corpus/dispatch/, written by gen-dispatch-corpus.
 *
 * Properties besides the sanitizers' (any failure aborts):
 *   - every reply is one nsd_msg_check() takes as a reply, with the request's seq (or 0:
 *     nsd could not read it), an error exactly when it is NSD_REP_ERROR, and descriptors
 *     exactly when it is a JOIN or JOIN_SESSION reply (two);
 *   - the connection is gone once its peer closed (no request outlives it);
 *   - no descriptor leaked: as many are open after the input as before (what the datagram
 *     carried, the connection's, pidfds of sessions and of a session leader checked).
 *
 * Built by tests/fuzz/meson.build with the core's sources compiled in (so that libFuzzer's
 * coverage sees them): fuzz-dispatch (-Dfuzz=enabled), fuzz-dispatch-standalone (suite unit).
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core-test.h"
#include "fuzz.h"
#include "log.h"
#include "session.h"

#define FUZZ_UID 1000
#define FUZZ_DATAGRAM_MAX 8192
#define FUZZ_TURNS_MAX 256
/* byte 0 of an input */
#define FUZZ_FDS_MASK 0x3u
#define FUZZ_FDS_PIDFD 0x4u
#define FUZZ_OWN_PID 0x8u

static Server *server;
static Config config;
static int devnull = -1, pidfd = -1;
static uint8_t datagram[FUZZ_DATAGRAM_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        /* GLib's slice allocator would hide leaks from LeakSanitizer (GLib < 2.76) */
        setenv("G_SLICE", "always-malloc", 1);
        signal(SIGPIPE, SIG_IGN);
        /* only crashes matter here, not nsd's warnings about bad input */
        log_setup(LOG_TARGET_STDERR, LOG_CRIT);
        config = core_test_config();
        server = core_test_server(&config);
        core_test_user_here(server, FUZZ_UID);
        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        pidfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (devnull < 0 || pidfd < 0)
                abort();
        return 0;
}

/* Where the request of type has its session leader's pid, or 0. */
static size_t pid_offset(uint16_t type) {
        switch (type) {
        case NSD_REQ_SESSION_OPEN:
                return offsetof(struct nsd_req_session_open, pid);
        case NSD_REQ_SESSION_CLOSE:
                return offsetof(struct nsd_req_session_close, pid);
        case NSD_REQ_JOIN_SESSION:
                return offsetof(struct nsd_req_join_session, pid);
        default:
                return 0;
        }
}

/* Run nsd's loop until nothing is pending, a bounded number of turns. */
static void run_loop(void) {
        for (unsigned i = 0; i < FUZZ_TURNS_MAX && g_main_context_pending(NULL); i++)
                g_main_context_iteration(NULL, FALSE);
}

static unsigned count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;

        if (!d)
                abort();
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* Read every reply nsd sent; each must be sound (see the top). */
static void drain(int fd, uint32_t seq) {
        for (;;) {
                CoreReply rep = core_test_recv(fd, 0);
                const char *why = NULL;
                unsigned want_fds;

                if (rep.type == 0 || rep.type == 0xdead)
                        return;
                fuzz_assert(nsd_msg_check(&rep.msg, rep.msg.hdr.length, 0, &why) == 0,
                            "reply type 0x%x, length %u: %s", rep.type,
                            (unsigned) rep.msg.hdr.length, why);
                fuzz_assert(rep.msg.hdr.seq == seq || rep.msg.hdr.seq == 0,
                            "reply type 0x%x has seq %u, the request %u", rep.type,
                            (unsigned) rep.msg.hdr.seq, (unsigned) seq);
                fuzz_assert((rep.type == NSD_REP_ERROR) == (rep.error < 0),
                            "reply type 0x%x with error %d", rep.type, rep.error);
                want_fds = rep.type == NSD_REP_JOIN || rep.type == NSD_REP_JOIN_SESSION ? 2 : 0;
                fuzz_assert(rep.n_fds == want_fds, "reply type 0x%x carried %u descriptors",
                            rep.type, rep.n_fds);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct nsd_msg_header hdr = { 0 };
        unsigned n_fds, fds_before;
        Session *sess;
        size_t n, at;
        int sent, fd;

        if (size < 1 || size - 1 > FUZZ_DATAGRAM_MAX)
                return -1;
        n = size - 1;
        memcpy(datagram, data + 1, n);
        if (n >= sizeof hdr)
                memcpy(&hdr, datagram, sizeof hdr);
        at = pid_offset(hdr.type);
        if ((data[0] & FUZZ_OWN_PID) && at > 0 && n >= at + sizeof(uint32_t))
                memcpy(datagram + at, &(uint32_t) { (uint32_t) getpid() }, sizeof(uint32_t));
        n_fds = data[0] & FUZZ_FDS_MASK;
        if (n_fds > 2)
                n_fds = 2;
        sent = (data[0] & FUZZ_FDS_PIDFD) ? pidfd : devnull;

        fds_before = count_fds();
        fd = core_test_peer(server, CONN_KIND_USER, FUZZ_UID, getpid());
        (void) send_with_fds(fd, datagram, n, (int[]) { sent, sent }, n_fds,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
        run_loop();
        drain(fd, hdr.seq);
        close(fd);
        /* the connection is gone before the next input (a request still waiting on a helper
         * or a lookup ends with it) */
        for (unsigned i = 0; i < FUZZ_TURNS_MAX && conn_manager_count(server->conns) > 0; i++)
                g_main_context_iteration(NULL, conn_manager_count(server->conns) > 0);
        fuzz_assert(conn_manager_count(server->conns) == 0, "a connection outlived its peer");
        /* ... and so are the sessions it opened (of this pid: the only leader uid 1000 may
         * name) */
        while ((sess = session_find(server, FUZZ_UID, 0, getpid())))
                session_discard(sess);
        /* a RELEASE took the user's namespace away: put it back, so that no JOIN ever asks
         * the core to create one (which would unshare, with privilege) */
        if (!user_get(server, FUZZ_UID))
                core_test_user_here(server, FUZZ_UID);
        fuzz_assert(count_fds() == fds_before, "%u descriptors open before the input, %u after",
                    fds_before, count_fds());
        return 0;
}
