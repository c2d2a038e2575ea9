/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-pidfd-util: common/pidfd-util.h, the one place nsd opens and reads pidfds. TAP. */
#include <fcntl.h>
#include <sys/wait.h>

#include "pidfd-util.h"
#include "tap.h"

int main(void) {
        int fd = pidfd_open_cloexec(getpid()), null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        pid_t pid = 0, child;
        int r;

        if (fd < 0 && errno == ENOSYS) {
                tap_skip("no pidfd_open on this kernel");
                return tap_done();
        }
        ok(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC), "a pidfd of this process, close-on-exec");
        r = pidfd_get_pid(fd, &pid);
        ok(r == 0 && pid == getpid(), "it names this pid (%d)", (int) pid);
        is_int(pidfd_exited(fd), 0, "and this process has not exited");
        is_int(pidfd_get_pid(null_fd, &pid), -EBADF, "another descriptor is no pidfd: EBADF");
        close(fd);

        child = fork();
        if (child == 0)
                _exit(0);
        fd = pidfd_open_cloexec(child);
        ok(fd >= 0, "a pidfd of a child");
        /* the child exits on its own; its pidfd becomes readable (waitid() reaps it then) */
        {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                (void) poll(&p, 1, 10000);
        }
        is_int(pidfd_exited(fd), 1, "once it exited, pidfd_exited() says so (a zombie too)");
        waitpid(child, NULL, 0);
        r = pidfd_get_pid(fd, &pid);
        ok(r == 0 && pid == -1, "reaped, the pidfd names no pid any more (-1)");
        is_int(pidfd_open_cloexec(child) < 0 ? errno : 0, ESRCH, "a pid that is gone: ESRCH");
        close(fd);
        close(null_fd);
        return tap_done();
}
