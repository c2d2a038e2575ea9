/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * helper.h: short-lived helper children for work nsd must not do in its own process (enter
 * another mount namespace, take another fsuid). See helper.c for how they are made.
 *
 * A child's argument struct starts with a struct helper_status; the child calls only plain
 * system calls and on failure returns helper_fail(status, step), step being a number from the
 * caller's own table (0: none). The parent turns the step into text and logs.
 */
#pragma once

#include <errno.h>

struct helper_status {
        int step; /* the caller's step that failed; 0: none */
        int err;  /* its errno */
};

/* In the child: record step and errno (EIO if errno is unset); returns 1, the child's exit
 * status. */
static inline int helper_fail(struct helper_status *s, int step) {
        s->step = step;
        s->err = errno > 0 ? errno : EIO;
        return 1;
}

/* Run fn(arg) in a helper child and wait for it. Returns 0 when fn returned 0, -errno of the
 * failing step (recorded in *status) otherwise; a child that failed without recording one
 * (killed by a signal) gives -EPROTO with step 0. Never logs. */
int helper_run(int (*fn)(void *), void *arg, struct helper_status *status);
