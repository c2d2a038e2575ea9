/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/nsd/run-tmpfs.h: a directory nsd trusts as it trusts its configuration, for the
 * tests of what nsd reads only from there (a volume's KeyFile=): the test leaves the host's
 * mount namespace for a private one of its own and mounts a tmpfs of root's, mode 0755, on
 * /run there, so "/" and "/run" are root's and writable by nobody else, whatever the host's
 * /tmp and the build folder are. The host's /run is never touched. Header-only.
 */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <unistd.h>

#include "tap.h"

/* Once, as the test's last part (what comes after runs in the private namespace): true when
 * /run is the test's own tmpfs now; false without root or without unshare(2), one test point
 * skipped then, for what. */
static inline bool test_private_run(const char *what) {
        if (geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
            mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
            mount("nsd-test-run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") == 0)
                return true;
        tap_skip("%s: needs root and a mount namespace of the test's own", what);
        return false;
}
