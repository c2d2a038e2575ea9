/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/core-test.h: driving nsd's core library as a whole (a Server without pins or
 * probes) over socketpairs, for the tests of what needs one (the handlers, the fd store's
 * users, the fuzz harness of the dispatch). Header-only, like tap.h; the loop and the
 * socketpairs are loop-test.h's. Nothing here creates a mount namespace.
 */
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "domain/user.h"
#include "loop-test.h"
#include "server.h"
#include "store/userns.h"

static inline Server *core_test_server(Config *c) {
        Server *s = NULL;

        if (server_new(c, &(ServerSetup) { .user_fd = -1, .root_fd = -1 }, &s) < 0)
                abort();
        return s;
}

/* A connection of uid whose peer is pid, as a socketpair: returns the client end. */
static inline int core_test_peer(Server *s, ConnKind kind, uid_t uid, pid_t pid) {
        return loop_test_peer(s->conns, kind, uid, pid, 0, NULL);
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
