/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/core-test.h: driving nsd's core library as a whole (a Server without pins or
 * probes) over socketpairs, for the tests of what needs one (the handlers, the fd store's
 * users, the fuzz harness of the dispatch). Header-only, like tap.h; the loop and the
 * socketpairs are loop-test.h's. Nothing here creates a mount namespace.
 */
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include "domain/user.h"
#include "domain/users.h"
#include "loop-test.h"
#include "ns-here.h"
#include "server.h"
#include "store/userns.h"

static inline Server *core_test_server(Config *c) {
        Server *s = NULL;

        if (server_new(c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s) < 0)
                abort();
        return s;
}

/* A server of loop_test_config(), as most tests want one */
static inline Server *core_test_loop_server(void) {
        Config c = loop_test_config();

        return core_test_server(&c);
}

/* The end of a test: close the client ends fds[] (up to a -1), then free s. */
static inline void core_test_end_fds(Server *s, const int *fds) {
        loop_test_close_fds(fds);
        server_free(s);
}
#define core_test_end(s, ...) core_test_end_fds((s), LOOP_TEST_FDS(__VA_ARGS__))

/* A connection of uid whose peer is pid, as a socketpair: returns the client end. */
static inline int core_test_peer(Server *s, ConnKind kind, uid_t uid, pid_t pid) {
        return loop_test_peer(s->conns, kind, uid, pid, 0, NULL);
}

/* A user uid whose "namespace" is the one this process is in (ns-here.h), taken for pinned
 * or not (nothing is pinned: the server has no pin store). */
static inline User *core_test_user_here_pinned(Server *s, uid_t uid, bool pinned) {
        return users_add(s->users, test_ns_here(uid, pinned), NULL, 0);
}

/* ... not pinned, as without a pin store */
static inline User *core_test_user_here(Server *s, uid_t uid) {
        return core_test_user_here_pinned(s, uid, false);
}
