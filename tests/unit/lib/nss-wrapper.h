/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/nss-wrapper.h: for the unit tests that look users up. meson runs them with
 * nss_wrapper preloaded and NSS_WRAPPER_PASSWD/_GROUP pointing into a folder of their own
 * (argv[1]), so that no host account matters; the test writes the files there.
 *
 *     if (!nss_wrapper_dir(argc, argv))
 *             return tap_done();
 *     nss_wrapper_write(argv[1], "root:x:0:0:root:/root:/bin/sh\n...", "root:x:0:\n...", 0);
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tap.h"

/* true with argv[1] made (if it was not there); false, with one skipped test point, when the
 * test runs without nss_wrapper (not through meson, or libnss-wrapper missing). */
static inline bool nss_wrapper_dir(int argc, char **argv) {
        if (argc < 2 || !getenv("NSS_WRAPPER_PASSWD")) {
                tap_skip("needs nss_wrapper (run through meson, libnss-wrapper installed)");
                return false;
        }
        if (mkdir(argv[1], 0700) < 0 && errno != EEXIST)
                tap_bail_errno(argv[1]);
        return true;
}

/* Write the users (dir/passwd) and the groups (dir/group) nss_wrapper serves: the texts as
 * given, then, when big_members > 0, group "big" (gid 2001) of big_members members
 * member0000, member0001, ... and bob last (3000 of them: one line of ~30 KiB, more than any
 * first buffer). */
static inline void nss_wrapper_write(const char *dir, const char *passwd, const char *group,
                                     unsigned big_members) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof path, "%s/passwd", dir);
        if (!(f = fopen(path, "w")))
                tap_bail_errno(path);
        fputs(passwd, f);
        fclose(f);
        snprintf(path, sizeof path, "%s/group", dir);
        if (!(f = fopen(path, "w")))
                tap_bail_errno(path);
        fputs(group, f);
        if (big_members > 0) {
                fputs("big:x:2001:", f);
                for (unsigned i = 0; i < big_members; i++)
                        fprintf(f, "%smember%04u", i ? "," : "", i);
                fputs(",bob\n", f);
        }
        fclose(f);
}
