/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuse-stall.h: a FUSE file system served by the test itself, on its GLib loop, that answers
 * INIT and never a LOOKUP. A process that looks a name up in it waits in the kernel; once the
 * request was read (it is, at once) even SIGKILL does not end that wait: the process is
 * "stuck", as nsd's path-walk children are in a user's hung FUSE daemon; so are the processes
 * that wait behind it for the folder (without FUSE_PARALLEL_DIROPS, FUSE serialises the
 * lookups in a folder with a mutex that no signal breaks). fuse_stall_end()
 * closes the device: every request fails (ENOTCONN) and the stuck processes end.
 *
 * Needs root and /dev/fuse, and a mount namespace of the test's own (fuse_stall_sandbox():
 * unshare(CLONE_NEWNS), everything private): nothing is mounted on the host. The mount's
 * user_id= is the caller's choice (mode private's watch looks for it in mountinfo).
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib.h>
#include <linux/fuse.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct FuseStall {
        int fd;
        guint watch;
        unsigned lookups; /* read and left unanswered */
        char *dir;
} FuseStall;

/* A mount namespace of this process's own, nothing propagating out: false (and why) when
 * the test cannot have one (not root). */
static inline bool fuse_stall_sandbox(const char **ret_why) {
        if (geteuid() != 0) {
                *ret_why = "needs root (a mount namespace and a FUSE mount of its own)";
                return false;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                *ret_why = "cannot make a private mount namespace";
                return false;
        }
        if (access("/dev/fuse", R_OK | W_OK) < 0) {
                *ret_why = "no /dev/fuse";
                return false;
        }
        return true;
}

static inline void fuse_stall_reply(int fd, uint64_t unique, int error, const void *arg,
                                    size_t len) {
        struct fuse_out_header h = {
                .len = (uint32_t) (sizeof h + len),
                .error = error,
                .unique = unique,
        };
        struct iovec iov[2] = { { &h, sizeof h }, { (void *) arg, len } };

        (void) writev(fd, iov, len ? 2 : 1);
}

static inline gboolean fuse_stall_on_request(int fd, GIOCondition cond, gpointer userdata) {
        FuseStall *f = userdata;
        static uint8_t buf[FUSE_MIN_READ_BUFFER + 131072];
        const struct fuse_in_header *in = (const void *) buf;
        ssize_t n = read(fd, buf, sizeof buf);

        if (n < (ssize_t) sizeof *in) {
                if (n < 0 && (errno == EAGAIN || errno == EINTR || errno == ENOENT))
                        return G_SOURCE_CONTINUE; /* ENOENT: a request that was interrupted */
                f->watch = 0;
                return G_SOURCE_REMOVE;
        }
        switch (in->opcode) {
        case FUSE_INIT: {
                const struct fuse_init_in *ii = (const void *) (in + 1);
                struct fuse_init_out out = {
                        .major = FUSE_KERNEL_VERSION,
                        .minor = FUSE_KERNEL_MINOR_VERSION,
                        .max_readahead = ii->max_readahead,
                        .max_write = 4096,
                };
                fuse_stall_reply(fd, in->unique, 0, &out, sizeof out);
                break;
        }
        case FUSE_LOOKUP:
                f->lookups++; /* never answered */
                break;
        case FUSE_INTERRUPT:
        case FUSE_FORGET:
        case FUSE_BATCH_FORGET:
                break; /* no reply expected (an interrupt may go unanswered) */
        default:
                fuse_stall_reply(fd, in->unique, -ENOSYS, NULL, 0);
                break;
        }
        return G_SOURCE_CONTINUE;
}

/* Mount it on dir (which exists) with user_id=uid: 0, or -errno. */
static inline int fuse_stall_mount(FuseStall *f, const char *dir, uid_t uid) {
        char opts[128];

        memset(f, 0, sizeof *f);
        f->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (f->fd < 0)
                return -errno;
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40755,user_id=%u,group_id=%u", f->fd,
                 (unsigned) uid, (unsigned) uid);
        if (mount("fuse-stall", dir, "fuse.stall", MS_NOSUID | MS_NODEV, opts) < 0) {
                int e = errno;
                close(f->fd);
                f->fd = -1;
                return -e;
        }
        f->dir = g_strdup(dir);
        f->watch = g_unix_fd_add(f->fd, G_IO_IN, fuse_stall_on_request, f);
        return 0;
}

/* The daemon goes: every request it holds fails, and the mount is detached. */
static inline void fuse_stall_end(FuseStall *f) {
        if (f->watch)
                g_source_remove(f->watch);
        f->watch = 0;
        if (f->fd >= 0)
                close(f->fd);
        f->fd = -1;
        if (f->dir)
                (void) umount2(f->dir, MNT_DETACH);
        g_free(f->dir);
        f->dir = NULL;
}
