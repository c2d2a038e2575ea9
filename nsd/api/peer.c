/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * peer.c: a client process's view (mount namespace and root), see peer.h.
 */
#include "api/peer.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/helper.h"
#include "cleanup.h"
#include "pidfd-util.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

/* A view: the namespace (its nsfs inode) and the root (its mount, and that it is the root of
 * that mount: a mount has one root directory, so the two name the directory). */
typedef struct View {
        dev_t ns_dev;
        ino_t ns_ino;
        uint64_t root_mnt_id;
        bool root_is_mount_root;
} View;

static int view_of(int ns_fd, int root_fd, View *ret) {
        struct statx stx;
        struct stat st;

        if (fstat(ns_fd, &st) < 0)
                return -errno;
        /* mask 0 and DONT_SYNC: the file system is not asked (a hung FUSE root cannot stall
         * nsd); the mount id and STATX_ATTR_MOUNT_ROOT come from the VFS */
        if (statx(root_fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, 0, &stx) <
            0)
                return -errno;
        *ret = (View) {
                .ns_dev = st.st_dev,
                .ns_ino = st.st_ino,
                .root_mnt_id = stx.stx_mnt_id,
                .root_is_mount_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                                      (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT),
        };
        return 0;
}

static bool view_equal(const View *a, const View *b) {
        return a->ns_dev == b->ns_dev && a->ns_ino == b->ns_ino &&
               a->root_mnt_id == b->root_mnt_id && a->root_is_mount_root == b->root_is_mount_root;
}

/* nsd's own view, which never changes (nsd runs in the initial namespace, unchrooted) */
static int view_of_nsd(View *ret) {
        static View cached;
        static bool read; /* cached holds it; a failure is never kept: tried again next time */
        _cleanup_close_ int ns_fd = -1, root_fd = -1;
        int r;

        if (!read) {
                ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
                root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (ns_fd < 0 || root_fd < 0)
                        return -errno;
                r = view_of(ns_fd, root_fd, &cached);
                if (r < 0)
                        return r; /* a passing fstat failure must not refuse users for good */
                read = true;
        }
        *ret = cached;
        return 0;
}

struct peer_args {
        struct helper_status s;
        pid_t pid;
        uid_t uid;
        gid_t gid;
        int ns_fd;   /* out */
        int root_fd; /* out */
};

/* In a helper child (CLONE_FILES: what it opens is nsd's): the client's /proc files, with
 * the client's file system ids, so that ptrace access is the client's own (see peer.h). */
static int peer_open_child(void *p) {
        struct peer_args *a = p;
        char path[48];

        /* Needs CAP_SETGID and CAP_SETUID; without them the ids stay root's and the opens
         * below pass only with CAP_SYS_PTRACE: either way nothing is let through that the
         * kernel's ptrace access check would refuse the client itself. */
        (void) setfsgid(a->gid);
        (void) setfsuid(a->uid);
        helper_proc_path(path, a->pid, "/ns/mnt");
        a->ns_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (a->ns_fd < 0)
                return helper_fail(&a->s, HELPER_STEP_PEER_NS);
        helper_proc_path(path, a->pid, "/root");
        a->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->root_fd < 0)
                return helper_fail(&a->s, HELPER_STEP_PEER_ROOT);
        return 0;
}

int peer_view(pid_t pid, int pidfd, const struct ucred *sender, const UserNs *ns, PeerView *ret,
              char **ret_why) {
        struct peer_args a = { .pid = pid, .ns_fd = -1, .root_fd = -1 };
        _cleanup_close_ int ns_fd = -1, root_fd = -1;
        View peer, other;
        int r;

        g_assert(ret && ret_why);
        if (pid <= 0 || pidfd < 0)
                return why_set(ret_why, -EPERM,
                               "nsd holds no pidfd of the process that connected, so it cannot "
                               "tell where that process is");
        if (!sender || sender->pid != pid)
                return why_set(ret_why, -EPERM,
                               "the request came from pid %d, not from the process that connected "
                               "(pid %d)",
                               sender ? (int) sender->pid : 0, (int) pid);
        a.uid = sender->uid;
        a.gid = sender->gid;
        if (pidfd_exited(pidfd) != 0) /* exited, or poll() cannot tell: as good as gone */
                return why_set(ret_why, EPERM, "pid %d, which connected, has exited", (int) pid);
        r = helper_run(peer_open_child, &a, &a.s);
        ns_fd = a.ns_fd;
        root_fd = a.root_fd;
        /* nsd short of something (no process, descriptor or memory to spare, a deadline):
         * its own failure, for the client to retry; anything else (the kernel refused the
         * look, the process is gone, a child that died) stays a refusal of the client */
        if (r < 0 && errno_may_pass(r))
                return why_set(ret_why, errno_own_failure(r),
                               "nsd could not check where pid %d is right now (%s: %s)%s",
                               (int) pid, helper_status_step(&a.s), g_strerror(-r),
                               errno_retry_hint(r));
        if (r < 0)
                return why_set(ret_why, -EPERM, "nsd cannot see where pid %d is (%s: %s)",
                               (int) pid, helper_status_step(&a.s), g_strerror(-r));
        /* opened before this check: the files are of the process the pidfd names */
        if (pidfd_exited(pidfd) != 0)
                return why_set(ret_why, -EPERM, "pid %d, which connected, has exited", (int) pid);
        /* descriptors nsd holds: a failure to look at them is nsd's, never the client's */
        r = view_of(ns_fd, root_fd, &peer);
        if (r < 0)
                return why_set(ret_why, errno_own_failure(r),
                               "nsd could not check where pid %d is right now (look at its "
                               "namespace and root: %s)%s",
                               (int) pid, g_strerror(-r), errno_retry_hint(r));

        *ret = (PeerView) { 0 };
        r = view_of_nsd(&other);
        if (r < 0)
                ret->initial_err = r;
        else
                ret->initial = view_equal(&peer, &other);
        if (ns && ns->ns_fd >= 0 && ns->root_fd >= 0) {
                r = view_of(ns->ns_fd, ns->root_fd, &other);
                if (r < 0)
                        ret->inside_err = r;
                else
                        ret->inside = view_equal(&peer, &other);
        }
        return 0;
}
