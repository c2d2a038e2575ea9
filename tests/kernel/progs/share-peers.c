/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/kernel/progs/share-peers.c: the mount propagation that nsd's shares (issue 24) rely
 * on, asserted on every kernel image of the kernel suite (tests/kernel/run-suite runs it as
 * root in the VM). TAP.
 *
 * nsd keeps an "anchor" mount, MS_SHARED, in a mount namespace of its own (the pin namespace,
 * P) and gives each member's namespace a clone of it: a child process joins P, clones the
 * anchor (open_tree(OPEN_TREE_CLONE)), joins the member's namespace and attaches the clone
 * there (move_mount()). The kernel rule relied on: a clone of a shared mount joins the
 * source's peer group, so a mount made under the share in one member reaches the others and P.
 *
 * Namespaces: I, the one the program starts in (the VM's initial namespace); P, made from I
 * with its root rslave (it receives from I, never sends to it); members M1, M2, M3, made from
 * I with their root rslave, as nsd makes a user's namespace. Everything happens on a tmpfs W,
 * mounted in I under the working folder and shared there (as systemd makes / shared):
 *
 *   W/anchor    P: a tmpfs, MS_PRIVATE then MS_SHARED: the anchor, of P only
 *   W/share     M1, M2, M3: clones of P's W/anchor
 *   W/host      I: a folder; P binds it at W/anchor2, MS_SLAVE then MS_SHARED
 *   W/share2    M1, M2: clones of P's W/anchor2
 *
 * Checks: (a) the clones attach, by path (M1) and by an openat2() descriptor (M2, M3); (b) a
 * mount under the share in M1 reaches M2 and P, and so does its unmount; (c) every clone is
 * "shared:N" with the anchor's N; (d) I sees nothing of P's anchor; (e) a mount in I under
 * W/host reaches the members through W/anchor2's clones, one made in a member does not reach
 * I; (f) whether the kernel lets a detached clone's propagation be changed, printed as
 * "# detached MS_SHARED: errno N" (a pass either way: newer kernels refuse it); (g) a clone
 * made later, by a child holding nothing but P's and the member's nsfs descriptors (as nsd
 * after a restart, with P from its fd store), joins the same peer group.
 */
#include <sys/mman.h>

#include "share-ns.h"

/* (f): in a child, as in share_clone() up to the attach, try to make the detached clone
 * MS_SHARED with mount(2) and with mount_setattr(2); ret: their errno (0: allowed). */
static void detached_shared(int ns_pin, int ns_member, const char *anchor, int ret[2]) {
        int *res = mmap(NULL, sizeof(int[2]), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
        pid_t pid;

        if (res == MAP_FAILED)
                child_fail("mmap");
        res[0] = res[1] = -1;
        pid = tap_fork();
        if (pid == 0) {
                struct mount_attr attr = { .propagation = MS_SHARED };
                char path[64];
                int tree;

                tree = clone_in_pin(ns_pin, ns_member, anchor);
                snprintf(path, sizeof path, "/proc/self/fd/%d", tree);
                res[0] = mount(NULL, path, NULL, MS_SHARED, NULL) < 0 ? errno : 0;
                res[1] = mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ? errno : 0;
                _exit(0);
        }
        (void) waitpid(pid, NULL, 0);
        ret[0] = res[0];
        ret[1] = res[1];
        munmap(res, sizeof(int[2]));
}

static const char *errno_name(int e) {
        return e == 0 ? "0 (allowed)" : strerrorname_np(e) ? strerrorname_np(e) : "?";
}

int main(void) {
        const char *dirs[] = { "anchor", "share", "host", "host/y", "host/z", "anchor2", "share2" };
        const char *anchor_dirs[] = { "anchor/x" };
        struct mnt anchor, anchor2, m;
        int ns_pin, m1, m2, m3, fd, f[2];
        struct utsname u;
        dev_t d1;

        w_setup("share-peers", dirs, sizeof dirs / sizeof *dirs, &u);

        /* P and its two anchors */
        ns_pin = ns_new(true);
        anchor_new(ns_pin, "anchor", anchor_dirs, sizeof anchor_dirs / sizeof *anchor_dirs);
        enter(ns_pin);
        if (mount(at("host"), at("anchor2"), NULL, MS_BIND, NULL) < 0 ||
            mount(NULL, at("anchor2"), NULL, MS_SLAVE, NULL) < 0 ||
            mount(NULL, at("anchor2"), NULL, MS_SHARED, NULL) < 0)
                tap_bail_errno("the slave and shared anchor in P");
        if (!mount_at(at("anchor"), &anchor) || !mount_at(at("anchor2"), &anchor2))
                tap_bail_errno("the anchors in P's mountinfo");
        enter(ns_init);
        printf("# anchor shared:%u; anchor2 shared:%u master:%u\n", anchor.shared, anchor2.shared,
               anchor2.master);

        m1 = ns_new(true);
        m2 = ns_new(true);

        /* (a) */
        ok(share_clone(ns_pin, m1, at("anchor"), at("share"), false),
           "a: the anchor's clone attaches in M1 (move_mount to a path)");
        ok(share_clone(ns_pin, m2, at("anchor"), at("share"), true),
           "a: the anchor's clone attaches in M2 (move_mount to an openat2 descriptor)");

        /* (c) */
        ok(anchor.shared != 0, "c: the anchor is shared in P");
        is_int(mount_in(m1, at("share"), &m) ? m.shared : 0, anchor.shared,
               "c: M1's clone is in the anchor's peer group");
        is_int(mount_in(m2, at("share"), &m) ? m.shared : 0, anchor.shared,
               "c: M2's clone is in the anchor's peer group");

        /* (d) */
        ok(!mount_in(ns_init, at("anchor"), NULL) &&
                   dev_in(ns_init, at("anchor")) == dev_in(ns_init, w),
           "d: the initial namespace does not see P's anchor");
        ok(!mount_in(ns_init, at("share"), NULL), "d: nor the members' clones");

        /* (b) */
        ok(tmpfs_in(m1, at("share/x")), "b: a tmpfs mounted at share/x in M1");
        d1 = dev_in(m1, at("share/x"));
        enter(m1);
        fd = open(at("share/x/from-m1"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        enter(ns_init);
        if (fd >= 0)
                close(fd);
        ok(mount_in(m2, at("share/x"), NULL) && dev_in(m2, at("share/x")) == d1,
           "b: it is mounted at share/x in M2, the same file system");
        enter(m2);
        ok(access(at("share/x/from-m1"), F_OK) == 0, "b: M2 sees the file M1 made in it");
        enter(ns_init);
        ok(mount_in(ns_pin, at("anchor/x"), NULL) && dev_in(ns_pin, at("anchor/x")) == d1,
           "b: it is mounted at anchor/x in P");
        ok(!mount_in(ns_init, at("anchor/x"), NULL) && !mount_in(ns_init, at("share/x"), NULL),
           "d: the initial namespace does not see it");
        ok(umount_in(m1, at("share/x")), "b: unmounted in M1");
        ok(!mount_in(m2, at("share/x"), NULL), "b: the unmount reaches M2");
        ok(!mount_in(ns_pin, at("anchor/x"), NULL), "b: the unmount reaches P");

        /* (e) */
        ok(anchor2.shared != 0 && anchor2.master != 0, "e: anchor2 is slave and shared in P");
        ok(share_clone(ns_pin, m1, at("anchor2"), at("share2"), false) &&
                   share_clone(ns_pin, m2, at("anchor2"), at("share2"), true),
           "e: anchor2's clones attach in M1 and M2");
        ok(mount_in(m1, at("share2"), &m) && m.shared == anchor2.shared &&
                   mount_in(m2, at("share2"), &m) && m.shared == anchor2.shared,
           "e: the clones are in anchor2's peer group");
        ok(tmpfs_in(ns_init, at("host/y")),
           "e: a tmpfs mounted at host/y in the initial namespace");
        d1 = dev_in(ns_init, at("host/y"));
        ok(mount_in(m1, at("share2/y"), NULL) && dev_in(m1, at("share2/y")) == d1,
           "e: it reaches M1's share2/y");
        ok(mount_in(m2, at("share2/y"), NULL) && dev_in(m2, at("share2/y")) == d1,
           "e: it reaches M2's share2/y");
        ok(tmpfs_in(m1, at("share2/z")), "e: a tmpfs mounted at share2/z in M1");
        ok(mount_in(m2, at("share2/z"), NULL), "e: it reaches M2");
        ok(!mount_in(ns_init, at("host/z"), NULL) &&
                   dev_in(ns_init, at("host/z")) == dev_in(ns_init, w),
           "e: it does not reach the initial namespace");

        /* (f) */
        detached_shared(ns_pin, m1, at("anchor"), f);
        printf("# detached MS_SHARED: errno %s (mount(2) on /proc/self/fd/N)\n", errno_name(f[0]));
        printf("# detached MS_SHARED: errno %s (mount_setattr(2))\n", errno_name(f[1]));
        ok(f[0] >= 0 && f[1] >= 0,
           "f: a detached clone's propagation change tried (recorded above)");

        /* (g) */
        m3 = ns_new(true);
        ok(share_clone(ns_pin, m3, at("anchor"), at("share"), true),
           "g: a later clone attaches in M3, found by its path in P alone");
        is_int(mount_in(m3, at("share"), &m) ? m.shared : 0, anchor.shared,
               "g: M3's clone is in the anchor's peer group");
        ok(tmpfs_in(m3, at("share/x")), "g: a tmpfs mounted at share/x in M3");
        ok(mount_in(m1, at("share/x"), NULL) && mount_in(m2, at("share/x"), NULL) &&
                   mount_in(ns_pin, at("anchor/x"), NULL),
           "g: it reaches M1, M2 and P");
        enter(m1);
        if (mkdir(at("share/x/x"), 0755) < 0)
                printf("# mkdir share/x/x in M1: %s\n", strerror(errno));
        enter(ns_init);
        ok(tmpfs_in(m1, at("share/x/x")), "g: a tmpfs mounted at share/x/x in M1");
        ok(mount_in(m3, at("share/x/x"), NULL), "g: a mount made in M1 reaches M3");

        close(m1);
        close(m2);
        close(m3);
        close(ns_pin);
        if (umount2(at("host/y"), MNT_DETACH) < 0 || umount2(w, MNT_DETACH) < 0)
                printf("# cleanup: %s\n", strerror(errno));
        return tap_done();
}
