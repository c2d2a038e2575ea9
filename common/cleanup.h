/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tiny cleanup helpers for the plain-C parts (libnsclient, pam_nsjoin, nsctl) and for
 * descriptors in nsd (GLib has no fd cleanup). Private. */
#pragma once

#include <dirent.h>
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

static inline void cleanup_closedirp(DIR **d) {
        if (*d) {
                int saved = errno;
                closedir(*d);
                errno = saved;
        }
}

#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))
#define _cleanup_closedir_ __attribute__((cleanup(cleanup_closedirp)))

/* Close a descriptor now and set it to -1 (for a _cleanup_close_ variable reused in a loop,
 * or a struct member). */
#define CLOSE_FD(fd)                   \
        do {                           \
                cleanup_closep(&(fd)); \
                (fd) = -1;             \
        } while (0)

/* Take ownership of a descriptor out of a _cleanup_close_ variable. */
#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -1;       \
                _fd_;            \
        })
#define TAKE_PTR(p)                      \
        ({                               \
                __typeof__(p) _p_ = (p); \
                (p) = NULL;              \
                _p_;                     \
        })

/* libc's -1/errno to -errno, at the call */
#define NEG_ERRNO() (errno > 0 ? -errno : -EIO)
