/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading a descriptor to its end, once for nsd, its plain-C helpers and the tests. Plain C,
 * header-only, no allocation and no logging, so a forked child may call it. Private. */
#pragma once

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

/* Read fd into buf until its end or until size bytes are in (EINTR retried): the number of
 * bytes read (less than size: the end came first), or -errno. */
static inline ssize_t read_full(int fd, void *buf, size_t size) {
        size_t len = 0;

        while (len < size) {
                ssize_t n = read(fd, (char *) buf + len, size - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        return (ssize_t) len;
}
