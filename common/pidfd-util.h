/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidfd-util.h: pidfds (Linux >= 5.3), written once (systemd's src/basic/pidfd-util.c): open
 * one, the pid it refers to, has its process exited. Plain C, header-only, private. The
 * syscall goes through syscall(SYS_pidfd_open), which the fault shim (tests/fault) counts.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "cleanup.h"
#include "io-util.h"

/* A pidfd of pid, close-on-exec; -1 with errno (ENOSYS before Linux 5.3, ESRCH: no such
 * process). */
static inline int pidfd_open_cloexec(pid_t pid) {
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);

        if (fd >= 0)
                (void) fcntl(fd, F_SETFD, FD_CLOEXEC); /* pidfd_open sets it already */
        return fd;
}

/* The pid a pidfd refers to, from /proc/self/fdinfo ("Pid:" exists only for pidfds; -1 once
 * the process is gone). 0 and *ret; -EBADF: not a pidfd; another -errno: could not be read
 * (may pass). */
static inline int pidfd_get_pid(int fd, pid_t *ret) {
        char path[64], buf[4096];
        _cleanup_close_ int f = -1;
        const char *p;
        ssize_t n;

        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
        f = open(path, O_RDONLY | O_CLOEXEC);
        if (f < 0)
                return errno == ENOENT ? -EBADF : -errno;
        n = read_full(f, buf, sizeof buf - 1);
        if (n < 0)
                return (int) n;
        buf[n] = '\0';
        p = strstr(buf, "\nPid:");
        if (!p)
                return -EBADF;
        *ret = (pid_t) strtol(p + 5, NULL, 10);
        return 0;
}

/* Has the process of pidfd exited (it is readable then; a zombie too)? 1 yes, 0 no, -errno
 * when poll() cannot tell (the caller says what that means for it). */
static inline int pidfd_exited(int pidfd) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        int r = poll(&pfd, 1, 0);

        return r < 0 ? -errno : r > 0;
}
