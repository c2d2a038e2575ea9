/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/nss-wrapper.h: for the unit tests that look users up. meson runs them with
 * nss_wrapper preloaded and NSS_WRAPPER_PASSWD/_GROUP pointing into a folder of their own
 * (argv[1]), so that no host account matters; the test writes the files there.
 *
 *     if (!nss_wrapper_dir(argc, argv))
 *             return tap_done();
 *     write_files(argv[1]);
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
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
