/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* errno-util.h: which errors may pass. */
#pragma once

#include <errno.h>
#include <stdbool.h>

/* Errors that may pass (a loaded machine: a pids cgroup limit, memory pressure, a full
 * descriptor table, a busy mount, a signal): EAGAIN, ENOMEM, EMFILE, ENFILE, EINTR, ETIMEDOUT,
 * EBUSY, ENOSPC, ENOBUFS. Such an error never removes or replaces anything (DESIGN.md "Never
 * lose"); what failed is retried. err may be positive or negative. */
static inline bool errno_may_pass(int err) {
        switch (err < 0 ? -err : err) {
        case EAGAIN:
        case ENOMEM:
        case EMFILE:
        case ENFILE:
        case EINTR:
        case ETIMEDOUT:
        case EBUSY:
        case ENOSPC:
        case ENOBUFS:
                return true;
        default:
                return false;
        }
}
