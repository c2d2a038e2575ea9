/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tiny cleanup helpers for the plain-C parts (libnsclient, pam_nsjoin, nsctl). Private. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_freep(void *p) {
        free(*(void **) p);
}
static inline void cleanup_closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))

/* Take ownership of a descriptor out of a _cleanup_close_ variable. */
#define TAKE_FD(fd)                       \
        ({                                \
                int _fd_ = (fd);          \
                (fd) = -1;                \
                _fd_;                     \
        })
#define TAKE_PTR(p)                       \
        ({                                \
                __typeof__(p) _p_ = (p);  \
                (p) = NULL;               \
                _p_;                      \
        })

/* libc's -1/errno to -errno, at the call */
#define NEG_ERRNO() (errno > 0 ? -errno : -EIO)
