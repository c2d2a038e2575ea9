/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/kernel/progs/share-ns.h: the namespaces and helpers of the share programs
 * (share-peers.c, share-private.c), as nsd sets up a share (issue 24).
 *
 * Namespaces: I, the one the program starts in (the VM's initial namespace); P, made from I
 * with its root rslave (nsd's pin namespace: it receives from I, never sends to it); members
 * made from I with their root rslave, as nsd makes a user's namespace. Everything happens on
 * a tmpfs W, mounted in I under the working folder and shared there (as systemd makes /
 * shared). An anchor is a tmpfs in P, MS_PRIVATE then MS_SHARED; nsd gives each member a
 * clone of it (share_clone()).
 *
 *   w_setup(name, dirs, n, &u)     as root only (else a TAP skip, exit 4); the kernel release in
 *                                  u (and printed); W = <cwd>/name, its folders; I's nsfs
 *                                  descriptor
 *   at("rel")                      W/rel (four at a time)
 *   ns_new(slave)                  a namespace made from I, back in I
 *   enter(ns)                      setns(), bails out on failure
 *   anchor_new(ns_pin, "rel", dirs, n)
 *                                  a tmpfs at W/rel in P, MS_PRIVATE then MS_SHARED, with the
 *                                  folders dirs[n] (paths in W) made in it
 *   share_clone(P, M, anchor, target, by_fd)   nsd's clone of the anchor, attached in M
 *   mount_at(path, &m), mount_in(ns, path, &m) the topmost mount at path (mountinfo)
 *   dev_in, tmpfs_in, umount_in    the same in namespace ns
 *
 * Header-only (static functions, some unused by one program), one program per header user.
 */
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "tap.h"

/* One line of /proc/self/mountinfo, the fields the checks read. */
struct mnt {
        unsigned shared;    /* peer group ("shared:N"), 0 when not shared */
        unsigned master;    /* "master:N", 0 when not a slave */
        long owner_private; /* "owner_private=UID" among the per-mount options, -1 without */
};

static int ns_init = -1;      /* I */
static char w[PATH_MAX - 64]; /* W, absolute: setns() moves the working folder to / */

__attribute__((unused)) static const char *at(const char *rel) {
        static char buf[4][PATH_MAX];
        static unsigned n;
        char *p = buf[n++ % 4];

        snprintf(p, PATH_MAX, "%s/%s", w, rel);
        return p;
}

__attribute__((unused)) static void enter(int ns) {
        if (setns(ns, CLONE_NEWNS) < 0)
                tap_bail_errno("setns");
}

/* W at <cwd>/name in I: a tmpfs in its own peer group, shared, with the folders dirs[n]. */
__attribute__((unused)) static void w_setup(const char *name, const char *const *dirs, size_t n,
                                            struct utsname *u) {
        char cwd[PATH_MAX - 128];

        if (geteuid() != 0) {
                printf("1..0 # SKIP needs root (the kernel suite runs it as root in the VM)\n");
                exit(4);
        }
        if (uname(u) == 0)
                printf("# kernel %s\n", u->release);
        if (!getcwd(cwd, sizeof cwd))
                tap_bail_errno("getcwd");
        snprintf(w, sizeof w, "%s/%s", cwd, name);
        ns_init = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (ns_init < 0)
                tap_bail_errno("open /proc/self/ns/mnt");
        if (mkdir(w, 0755) < 0 || mount("tmpfs", w, "tmpfs", 0, "size=1m") < 0 ||
            mount(NULL, w, NULL, MS_PRIVATE, NULL) < 0 || mount(NULL, w, NULL, MS_SHARED, NULL) < 0)
                tap_bail_errno("tmpfs W in I");
        for (size_t i = 0; i < n; i++)
                if (mkdir(at(dirs[i]), 0755) < 0)
                        tap_bail_errno("mkdir in W");
}

/* A new namespace made from I (its root rslave when slave), as an nsfs descriptor; back in I. */
__attribute__((unused)) static int ns_new(bool slave) {
        int fd;

        if (unshare(CLONE_NEWNS) < 0)
                tap_bail_errno("unshare(CLONE_NEWNS)");
        if (slave && mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                tap_bail_errno("make / rslave");
        fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                tap_bail_errno("open /proc/self/ns/mnt");
        enter(ns_init);
        return fd;
}

/* nsd's anchor in P: a tmpfs at W/rel, MS_PRIVATE then MS_SHARED, with the folders dirs[n]
 * (paths in W, below rel) made in it; back in I. */
__attribute__((unused)) static void anchor_new(int ns_pin, const char *rel, const char *const *dirs,
                                               size_t n) {
        enter(ns_pin);
        if (mount("tmpfs", at(rel), "tmpfs", 0, "size=1m") < 0 ||
            mount(NULL, at(rel), NULL, MS_PRIVATE, NULL) < 0 ||
            mount(NULL, at(rel), NULL, MS_SHARED, NULL) < 0)
                tap_bail_errno("the anchor in P");
        for (size_t i = 0; i < n; i++)
                if (mkdir(at(dirs[i]), 0755) < 0)
                        tap_bail_errno("mkdir in the anchor");
        enter(ns_init);
}

/* The topmost mount at the absolute path in the current namespace (as the opener of
 * mountinfo, the caller, may see it): true and *ret, or false. */
__attribute__((unused)) static bool mount_at(const char *path, struct mnt *ret) {
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[4096], mp[PATH_MAX], opts[1024];
        bool found = false;

        if (!f)
                tap_bail_errno("open /proc/self/mountinfo");
        while (fgets(line, sizeof line, f)) {
                struct mnt m = { .owner_private = -1 };
                const char *o;
                int n = 0;
                char *tok, *save;

                if (sscanf(line, "%*d %*d %*s %*s %4095s %1023s %n", mp, opts, &n) != 2 || n == 0 ||
                    strcmp(mp, path) != 0)
                        continue;
                o = strstr(opts, "owner_private=");
                if (o)
                        m.owner_private = strtol(o + strlen("owner_private="), NULL, 10);
                for (tok = strtok_r(line + n, " \n", &save); tok && strcmp(tok, "-") != 0;
                     tok = strtok_r(NULL, " \n", &save)) {
                        sscanf(tok, "shared:%u", &m.shared);
                        sscanf(tok, "master:%u", &m.master);
                }
                *ret = m;
                found = true;
        }
        fclose(f);
        return found;
}

/* mount_at() in namespace ns. */
__attribute__((unused)) static bool mount_in(int ns, const char *path, struct mnt *ret) {
        struct mnt m;
        bool r;

        enter(ns);
        r = mount_at(path, ret ? ret : &m);
        enter(ns_init);
        return r;
}

/* st_dev of the path in namespace ns, 0 when it cannot be stat()ed. */
__attribute__((unused)) static dev_t dev_in(int ns, const char *path) {
        struct stat st;
        int r;

        enter(ns);
        r = stat(path, &st);
        enter(ns_init);
        return r < 0 ? 0 : st.st_dev;
}

__attribute__((unused)) static bool tmpfs_in(int ns, const char *path) {
        int r;

        enter(ns);
        r = mount("tmpfs", path, "tmpfs", 0, "size=1m");
        if (r < 0)
                printf("# mount tmpfs at %s: %s\n", path, strerror(errno));
        enter(ns_init);
        return r == 0;
}

__attribute__((unused)) static bool umount_in(int ns, const char *path) {
        int r;

        enter(ns);
        r = umount2(path, 0);
        if (r < 0)
                printf("# umount %s: %s\n", path, strerror(errno));
        enter(ns_init);
        return r == 0;
}

/* In a child: say what failed and exit 1 (its parent's test point fails). */
__attribute__((noreturn, unused)) static void child_fail(const char *what) {
        printf("# %s: %s\n", what, strerror(errno));
        fflush(stdout);
        _exit(1);
}

/* Close every descriptor but 0-2, a and b. */
__attribute__((unused)) static void close_all_but(int a, int b) {
        int lo = a < b ? a : b, hi = a < b ? b : a;

        if (lo > 3)
                close_range(3, (unsigned) lo - 1, 0);
        if (hi > lo + 1)
                close_range((unsigned) lo + 1, (unsigned) hi - 1, 0);
        close_range((unsigned) hi + 1, ~0U, 0);
}

/* In a child, as nsd: join P, clone the anchor at its path (detached), join the member's
 * namespace; the clone. */
__attribute__((unused)) static int clone_in_pin(int ns_pin, int ns_member, const char *anchor) {
        int tree;

        if (setns(ns_pin, CLONE_NEWNS) < 0)
                child_fail("setns to P");
        tree = open_tree(AT_FDCWD, anchor, OPEN_TREE_CLONE | AT_RECURSIVE | OPEN_TREE_CLOEXEC);
        if (tree < 0)
                child_fail("open_tree(OPEN_TREE_CLONE) of the anchor");
        if (setns(ns_member, CLONE_NEWNS) < 0)
                child_fail("setns to the member's namespace");
        return tree;
}

/* nsd's clone, in a child: join P, clone the anchor at its path, join the member's namespace
 * and attach the clone at target, by path or (by_fd) at an openat2() descriptor. The child
 * holds nothing but the two nsfs descriptors. True when it attached. */
__attribute__((unused)) static bool share_clone(int ns_pin, int ns_member, const char *anchor,
                                                const char *target, bool by_fd) {
        pid_t pid = tap_fork();
        int status;

        if (pid == 0) {
                int tree, tfd;

                close_all_but(ns_pin, ns_member);
                tree = clone_in_pin(ns_pin, ns_member, anchor);
                if (by_fd) {
                        struct open_how how = {
                                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
                        };

                        tfd = (int) syscall(SYS_openat2, AT_FDCWD, target, &how, sizeof how);
                        if (tfd < 0)
                                child_fail("openat2 of the target");
                        if (move_mount(tree, "", tfd, "",
                                       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                                child_fail("move_mount(MOVE_MOUNT_T_EMPTY_PATH)");
                } else if (move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
                        child_fail("move_mount to a path");
                }
                fflush(stdout);
                _exit(0);
        }
        return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
