/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/ns-here.h: a "user namespace" for the unit tests that is the one the test
 * runs in (its nsfs file and "/"), so that nothing is created or pinned. Header-only.
 */
#pragma once

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "store/userns.h"

/* uid's namespace, taken for pinned or not (nothing is pinned). */
static inline UserNs *test_ns_here(uid_t uid, bool pinned) {
        UserNs *ns = userns_new(uid);
        struct stat st;

        ns->ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        ns->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ns->ns_fd < 0 || ns->root_fd < 0 || fstat(ns->ns_fd, &st) < 0)
                abort();
        ns->ns_inode = st.st_ino;
        ns->pinned = pinned;
        return ns;
}
