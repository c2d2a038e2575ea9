/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/users-test.h: the stores a registry of users (nsd/domain/users.c) stands on,
 * for the tests that drive one without a Server (test-users.c, test-users-setup.c): the
 * configuration, an fd store without a service manager, a state directory and the pending
 * sessions; no pin store. Header-only, like tap.h.
 *
 *   users_test_open(state_dir);                  the stores (config is the test's to fill)
 *   reg = users_test_registry((UsersSetup) { .children = ... });   on them, not yet started
 *   users_test_close();
 */
#pragma once

#include "domain/users.h"
#include "store/fdstore.h"
#include "store/pending.h"
#include "store/state.h"
#include "tap.h"

static Config config;
static FdStore *fdstore;
static StateDir *state;
static Pending *pending;

static inline void users_test_open(const char *state_dir) {
        fdstore = fdstore_new(false);
        pending = pending_new(NULL, fdstore);
        if (state_open(state_dir, &state) < 0)
                tap_bail_errno("state_open");
}

static inline void users_test_close(void) {
        state_free(state);
        pending_free(pending);
        fdstore_free(fdstore);
        config_done(&config);
}

/* A registry on the test's stores; what else it needs (proc_dir, children) from setup. The
 * caller starts it (users_start()), after users_set_changed() if it listens. */
static inline Users *users_test_registry(UsersSetup setup) {
        setup.config = &config;
        setup.fdstore = fdstore;
        setup.state = state;
        setup.pending = pending;
        return users_new(&setup);
}
