/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sending and receiving descriptors by SCM_RIGHTS, once for libnsclient, nsd and the tests.
 * Plain C, no GLib, no allocation and no logging, so a forked child may call it. Private. */
#pragma once

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* the most descriptors one send_with_fds() carries */
#define SEND_FDS_MAX 8

/* Put n_fds descriptors (at least one) into mh as one SCM_RIGHTS message, in control: the
 * caller's buffer of at least CMSG_SPACE(sizeof(int) * n_fds) bytes, aligned for a cmsghdr. */
static inline void cmsg_put_fds(struct msghdr *mh, void *control, const int *fds, size_t n_fds) {
        struct cmsghdr *cm;

        memset(control, 0, CMSG_SPACE(sizeof(int) * n_fds));
        mh->msg_control = control;
        mh->msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
        cm = CMSG_FIRSTHDR(mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
}

/* The descriptors that came with a received mh, in their order: the first max into fds, the
 * others closed (max 0: all closed). Returns how many came. */
static inline size_t cmsg_take_fds(const struct msghdr *mh, int *fds, size_t max) {
        size_t n = 0;

        for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm;
             cm = CMSG_NXTHDR((struct msghdr *) mh, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++, n++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
                        if (n < max)
                                fds[n] = fd;
                        else
                                close(fd);
                }
        }
        return n;
}

/* One sendmsg() of buf with n_fds descriptors (none when n_fds is 0) by SCM_RIGHTS. flags as
 * sendmsg()'s (MSG_NOSIGNAL, MSG_DONTWAIT). Returns the bytes sent or -errno; -EINVAL for
 * more than SEND_FDS_MAX descriptors. EINTR and EAGAIN are the caller's to retry. */
static inline ssize_t send_with_fds(int sock, const void *buf, size_t len, const int *fds,
                                    size_t n_fds, int flags) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * SEND_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (n_fds > SEND_FDS_MAX)
                return -EINVAL;
        if (n_fds > 0)
                cmsg_put_fds(&mh, control.buf, fds, n_fds);
        n = sendmsg(sock, &mh, flags);
        return n >= 0 ? n : errno > 0 ? -errno : -EIO;
}
