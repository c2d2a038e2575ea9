/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tests/fault/fault-util.h: what the fault drivers (fault-client, pinstore-driver) share. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>

/* A uid argument: decimal, not 0 (root is never managed), not (uid_t) -1. 0 or -EINVAL. */
static inline int parse_uid(const char *s, uid_t *ret) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);

        if (!*s || *end || v == 0 || v >= (uid_t) -1)
                return -EINVAL;
        *ret = (uid_t) v;
        return 0;
}
