/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/kernel/progs/share-private.c: an owner-private mount (F4, MOUNT_ATTR_OWNER_PRIVATE of
 * kernel-patches/<base>/, "fs: add MOUNT_ATTR_OWNER_PRIVATE") inside one of nsd's shares
 * (issue 24, item 4), on every image of the kernel suite (tests/kernel/run-suite runs it as
 * root in the VM). TAP.
 *
 * The share as share-peers.c sets it up (share-ns.h): an anchor, shared, in nsd's pin
 * namespace P; clones of it at W/share in the member namespaces M1 and M2 (made from I with
 * their root rslave), all in the anchor's peer group. A mount made under the share in M1 is
 * copied by propagation into M2 and P, and those copies are peers of it.
 *
 * What the series does with such a mount (read in the patch, fs/namespace.c):
 * mount_setattr_owner_private() walks, for the named mount, propagation_group_top() (up the
 * ->mnt_master chain) and then propagation_group_next() over every peer and slave, in every
 * namespace, checking all of them (owner_private_may_change()) before setting the attribute
 * and its owner, the caller's fsuid (current_fsuid()), on each (owner_private_commit()). So
 * the attribute is not refused in a peer group: set in M1 it reaches M2's and P's copies, as
 * issue 24 says. The owner is a uid, not a namespace: uid A walks into every copy, in every
 * member's namespace and in P; every other fsuid, ROOT INCLUDED, stops at the covered
 * directory (__follow_mount_rcu(), __traverse_mounts(): the marker gets ENOENT), and
 * mountinfo opened by them leaves the copy out (m_show()). Existence shows: root mounting on
 * the copy gets EBUSY (do_lock_mount()), root's umount2() or mount_setattr() by path gets
 * EINVAL (the path is the covered directory). Clones made later inherit it (clone_mnt():
 * mnt_owner), so a member that joins after it was set gets an owner-private copy.
 *
 * uid A = 4001 (the owner), uid B = 4002 (another member); their processes are children that
 * join the namespace and drop every id to the uid. Checks:
 *   (a) the share: clones in M1 and M2, a tmpfs with a marker at share/x in M1 reaches M2
 *       and P (every image);
 *   (b) the kernel has the attribute (a detached tmpfs takes it), or is no image of the series
 *       (its release does not end in -nsd-patched or -nsd-debug);
 *   (c) set after attach: fsuid A, in M1, on share/x: M2's copy is listed for A with
 *       owner_private=A (it exists, propagated) and not for B or root; B and root in M2 get
 *       ENOENT for the marker, A reads it; root in P and in M1 too; root cannot mount on or
 *       unmount M2's copy (EBUSY, EINVAL) nor clear the attribute (EINVAL);
 *   (d) set before attach, as nsd's nsctl would: a tmpfs fsmount()ed in M2, the attribute set
 *       on the detached mount with fsuid A, moved to share/y: M1's and P's copies private;
 *   (e) a member that joins later (M3, a clone of the anchor made now): its copies private;
 *   (f) the owner clears it from M2's copy: root and B read the marker in M1 and M3 again;
 *   (g) the owner unmounts share/y in M1 (CAP_SYS_ADMIN and fsuid A): gone in M2 and P.
 * A kernel without the attribute (stock: mount_setattr() rejects the unknown bit with EINVAL)
 * runs (a) and the guard (b) and skips every other check with the reason ("# SKIP ...").
 */
#include <grp.h>
#include <sys/fsuid.h>

#include "kernel-abi.h"
#include "share-ns.h"

#define UID_A 4001 /* the owner */
#define UID_B 4002 /* another member */
#define MARKER "made in M1\n"

/* Why the checks of the attribute are skipped (the kernel lacks it), NULL when they run. */
static const char *lacks;

/* One test point on the attribute: ok(), or a skip saying why when the kernel lacks it. */
__attribute__((format(printf, 2, 3))) static bool check(bool pass, const char *fmt, ...) {
        char directive[160];
        va_list ap;

        va_start(ap, fmt);
        if (lacks) {
                snprintf(directive, sizeof directive, "SKIP %s", lacks);
                tap_vline(true, directive, fmt, ap);
        } else {
                tap_vline(pass, NULL, fmt, ap);
        }
        va_end(ap);
        return pass || lacks;
}

static const char *errno_name(int e) {
        return e == 0 ? "0" : e < 0 ? "(child failed)" : strerrorname_np(e) ?: "?";
}

/* mount_setattr() of MOUNT_ATTR_OWNER_PRIVATE (set, or clear) on dfd/path with fsuid uid, in
 * the current namespace: 0 or the errno. */
static int owner_private(int dfd, const char *path, bool set, uid_t uid) {
        struct mount_attr attr = { 0 };
        int r, e;

        if (set)
                attr.attr_set = MOUNT_ATTR_OWNER_PRIVATE;
        else
                attr.attr_clr = MOUNT_ATTR_OWNER_PRIVATE;
        (void) setfsuid(uid);
        if ((uid_t) setfsuid((uid_t) -1) != uid)
                tap_bail_errno("setfsuid");
        r = mount_setattr(dfd, path, path[0] ? 0 : AT_EMPTY_PATH, &attr, sizeof attr);
        e = errno;
        (void) setfsuid(0);
        return r < 0 ? e : 0;
}

/* owner_private() in namespace ns. */
static int owner_private_in(int ns, const char *path, bool set, uid_t uid) {
        int r;

        enter(ns);
        r = owner_private(AT_FDCWD, path, set, uid);
        enter(ns_init);
        return r;
}

/* What a child may do: 0 or an errno (below 200). */
static int read_marker(const char *path) {
        char buf[64] = { 0 };
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return errno;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n < 0)
                return errno;
        return strcmp(buf, MARKER) == 0 ? 0 : EBADMSG;
}

/* How mountinfo, opened by the caller, lists the mount at path. */
enum { LISTED_NOT = 100, LISTED_PLAIN, LISTED_OWN, LISTED_OTHER };

static int listed(const char *path) {
        struct mnt m;

        if (!mount_at(path, &m))
                return LISTED_NOT;
        if (m.owner_private < 0)
                return LISTED_PLAIN;
        return m.owner_private == (long) geteuid() ? LISTED_OWN : LISTED_OTHER;
}

/* In a child: join ns, become uid (every id, no supplementary groups; 0 stays root), and
 * answer what(path); -1 when the child could not get there. */
static int as_in(int ns, uid_t uid, int (*what)(const char *), const char *path) {
        pid_t pid = tap_fork();
        int status;

        if (pid == 0) {
                if (setns(ns, CLONE_NEWNS) < 0 ||
                    (uid != 0 && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                                  setresuid(uid, uid, uid) < 0))) {
                        printf("# child as uid %u: %s\n", (unsigned) uid, strerror(errno));
                        fflush(stdout);
                        _exit(255);
                }
                _exit(what(path));
        }
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) == 255)
                return -1;
        return WEXITSTATUS(status);
}

/* An answer of as_in(): 0, an errno, LISTED_*. */
static const char *answer_name(int l) {
        static const char *const listed[] = {
                [LISTED_NOT - LISTED_NOT] = "not listed",
                [LISTED_PLAIN - LISTED_NOT] = "listed without owner_private=",
                [LISTED_OWN - LISTED_NOT] = "listed with owner_private=<its uid>",
                [LISTED_OTHER - LISTED_NOT] = "listed with owner_private=<another uid>",
        };

        return l >= LISTED_NOT && l <= LISTED_OTHER ? listed[l - LISTED_NOT] : errno_name(l);
}

/* check() that an answer (0, an errno, LISTED_*) is the one expected, naming both when they
 * differ. */
#define check_is(got, want, ...)                                                               \
        ({                                                                                     \
                int _g = (got), _w = (want);                                                   \
                bool _p = check(_g == _w, __VA_ARGS__);                                        \
                if (!_p)                                                                       \
                        printf("#   got %s, expected %s\n", answer_name(_g), answer_name(_w)); \
                _p;                                                                            \
        })

/* One question to a process: what uid, in namespace ns, gets from what(W/rel), and the
 * answer expected (0, an errno, LISTED_*). */
struct expect {
        int ns;
        uid_t uid;
        int (*what)(const char *);
        const char *rel;
        int want;
        const char *says;
};

/* check_is() each of e[n], in order. */
static void check_all(const struct expect *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                check_is(as_in(e[i].ns, e[i].uid, e[i].what, at(e[i].rel)), e[i].want, "%s",
                         e[i].says);
}

/* A file with MARKER at path in namespace ns (as root). */
static bool marker_in(int ns, const char *path) {
        int fd;
        bool r;

        enter(ns);
        fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        r = fd >= 0 && write(fd, MARKER, strlen(MARKER)) == (ssize_t) strlen(MARKER);
        if (!r)
                printf("# marker at %s: %s\n", path, strerror(errno));
        if (fd >= 0)
                close(fd);
        enter(ns_init);
        return r;
}

/* The errno (0: none) of root's mount(2) of a tmpfs, or umount2(2), at path in namespace ns. */
static int root_mount_in(int ns, const char *path, bool umount) {
        int r, e;

        enter(ns);
        r = umount ? umount2(path, 0) : mount("tmpfs", path, "tmpfs", 0, "size=1m");
        e = errno;
        enter(ns_init);
        return r < 0 ? e : 0;
}

/* A tmpfs made with fsopen() and fsmount(), attached nowhere: its mount descriptor, the
 * file system's in *ret_fsfd. */
static int detached_tmpfs(int *ret_fsfd) {
        int fsfd, mfd;

        fsfd = fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fsfd < 0 || fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                tap_bail_errno("fsopen tmpfs");
        mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, 0);
        if (mfd < 0)
                tap_bail_errno("fsmount");
        *ret_fsfd = fsfd;
        return mfd;
}

/* (b): a detached tmpfs takes the attribute with fsuid A: 0, or the errno. */
static int probe(void) {
        int fsfd, mfd = detached_tmpfs(&fsfd), r;

        r = owner_private(mfd, "", true, UID_A);
        close(mfd);
        close(fsfd);
        return r;
}

/* (d): in ns, a tmpfs made detached with the marker, the attribute set with fsuid A, moved to
 * target: the errno of mount_setattr(), or -1 when the mount did not attach. */
static int private_before_attach(int ns, const char *target) {
        int fsfd, mfd, fd, r;

        enter(ns);
        mfd = detached_tmpfs(&fsfd);
        fd = openat(mfd, "marker", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, MARKER, strlen(MARKER)) != (ssize_t) strlen(MARKER))
                tap_bail_errno("the marker in the detached tmpfs");
        close(fd);
        r = owner_private(mfd, "", true, UID_A);
        if (move_mount(mfd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
                printf("# move_mount to %s: %s\n", target, strerror(errno));
                r = -1;
        }
        close(mfd);
        close(fsfd);
        enter(ns_init);
        return r;
}

int main(void) {
        const char *dirs[] = { "anchor", "share" }, *anchor_dirs[] = { "anchor/x", "anchor/y" };
        int ns_pin, m1, m2, m3, e;
        char why[128];
        struct utsname u = { 0 };
        struct mnt m;
        bool series;

        w_setup("share-private", dirs, sizeof dirs / sizeof *dirs, &u);

        /* (a) the share */
        ns_pin = ns_new(true);
        anchor_new(ns_pin, "anchor", anchor_dirs, sizeof anchor_dirs / sizeof *anchor_dirs);
        m1 = ns_new(true);
        m2 = ns_new(true);
        ok(share_clone(ns_pin, m1, at("anchor"), at("share"), false) &&
                   share_clone(ns_pin, m2, at("anchor"), at("share"), true),
           "a: the anchor's clones attach in M1 and M2");
        ok(tmpfs_in(m1, at("share/x")) && marker_in(m1, at("share/x/marker")),
           "a: a tmpfs with a marker at share/x in M1");
        ok(mount_in(m1, at("share/x"), &m) && m.shared != 0, "a: M1's share/x is shared");
        printf("# share/x: shared:%u\n", m.shared);
        is_int(as_in(m2, 0, read_marker, at("share/x/marker")), 0,
               "a: it reaches M2: root reads the marker there");
        is_int(as_in(ns_pin, 0, read_marker, at("anchor/x/marker")), 0,
               "a: it reaches P: root reads the marker at anchor/x");

        /* (b) the attribute, or a stock kernel */
        e = probe();
        series = strstr(u.release, "-nsd-patched") || strstr(u.release, "-nsd-debug");
        if (e == EINVAL) {
                snprintf(why, sizeof why,
                         "kernel lacks MOUNT_ATTR_OWNER_PRIVATE (mount_setattr: EINVAL)");
                lacks = why;
        }
        printf("# mount_setattr(MOUNT_ATTR_OWNER_PRIVATE) of a detached tmpfs: %s\n",
               errno_name(e));
        ok(e == 0 || (e == EINVAL && !series),
           "b: the kernel has MOUNT_ATTR_OWNER_PRIVATE, or is no image of the series (%s)",
           u.release);

        /* (c) set after attach, by fsuid A in M1: the whole peer group */
        check_is(owner_private_in(m1, at("share/x"), true, UID_A), 0,
                 "c: fsuid A makes M1's share/x owner-private (a mount in a peer group)");
        /* every copy in the peer group (M1, M2, P) as A, B and root list and read it */
        const struct expect after_attach[] = {
                { m1, UID_A, listed, "share/x", LISTED_OWN,
                  "c: M1's mountinfo, opened by A, lists share/x with owner_private=A" },
                { m2, UID_A, listed, "share/x", LISTED_OWN,
                  "c: M2's copy exists: listed for A with owner_private=A" },
                { ns_pin, UID_A, listed, "anchor/x", LISTED_OWN,
                  "c: P's copy: listed for A with owner_private=A" },
                { m2, UID_B, listed, "share/x", LISTED_NOT,
                  "c: M2's mountinfo, opened by B, leaves the copy out" },
                { m2, 0, listed, "share/x", LISTED_NOT,
                  "c: M2's mountinfo, opened by root, leaves the copy out" },
                { m2, UID_B, read_marker, "share/x/marker", ENOENT,
                  "c: B in M2 cannot read the marker (ENOENT: the covered directory)" },
                { m2, UID_A, read_marker, "share/x/marker", 0, "c: A in M2 reads the marker" },
                { m2, 0, read_marker, "share/x/marker", ENOENT,
                  "c: root in M2 cannot read the marker" },
                { ns_pin, 0, read_marker, "anchor/x/marker", ENOENT,
                  "c: root in P cannot read the marker at anchor/x" },
                { ns_pin, UID_A, read_marker, "anchor/x/marker", 0, "c: A in P reads it" },
                { m1, 0, read_marker, "share/x/marker", ENOENT,
                  "c: root in M1, where it was mounted, cannot read it" },
                { m1, UID_B, read_marker, "share/x/marker", ENOENT, "c: B in M1 cannot read it" },
                { m1, UID_A, read_marker, "share/x/marker", 0, "c: A in M1 reads it" },
        };
        check_all(after_attach, sizeof after_attach / sizeof *after_attach);
        check_is(root_mount_in(m2, at("share/x"), false), EBUSY,
                 "c: root cannot mount on M2's copy (EBUSY)");
        check_is(root_mount_in(m2, at("share/x"), true), EINVAL,
                 "c: root cannot unmount M2's copy by path (EINVAL)");
        check_is(owner_private_in(m2, at("share/x"), false, 0), EINVAL,
                 "c: root (fsuid 0) cannot clear the attribute in M2 (EINVAL)");
        check_is(owner_private_in(m2, at("share/x"), true, UID_B), EINVAL,
                 "c: fsuid B cannot take it over in M2 (EINVAL: B's walk stops short too)");

        /* (d) set before attach, in M2 */
        check_is(private_before_attach(m2, at("share/y")), 0,
                 "d: a detached tmpfs made owner-private by fsuid A, attached at M2's share/y");
        check_is(as_in(m1, UID_A, listed, at("share/y")), LISTED_OWN,
                 "d: M1's copy is listed for A with owner_private=A");
        check_is(as_in(m1, UID_B, read_marker, at("share/y/marker")), ENOENT,
                 "d: B in M1 cannot read its marker");
        check_is(as_in(m1, 0, read_marker, at("share/y/marker")), ENOENT,
                 "d: root in M1 cannot read it");
        check_is(as_in(m1, UID_A, read_marker, at("share/y/marker")), 0, "d: A in M1 reads it");
        check_is(as_in(ns_pin, 0, read_marker, at("anchor/y/marker")), ENOENT,
                 "d: root in P cannot read it");

        /* (e) a member that joins later */
        m3 = ns_new(true);
        ok(share_clone(ns_pin, m3, at("anchor"), at("share"), true),
           "e: a later clone of the anchor attaches in M3");
        check_is(as_in(m3, UID_A, listed, at("share/x")), LISTED_OWN,
                 "e: M3's share/x is listed for A with owner_private=A");
        check_is(as_in(m3, 0, read_marker, at("share/x/marker")), ENOENT,
                 "e: root in M3 cannot read share/x/marker");
        check_is(as_in(m3, UID_B, read_marker, at("share/y/marker")), ENOENT,
                 "e: B in M3 cannot read share/y/marker");
        check_is(as_in(m3, UID_A, read_marker, at("share/x/marker")), 0,
                 "e: A in M3 reads share/x/marker");

        /* (f) the owner clears it, from M2's copy */
        check_is(owner_private_in(m2, at("share/x"), false, UID_A), 0,
                 "f: fsuid A clears the attribute on M2's share/x");
        check_is(as_in(m1, 0, read_marker, at("share/x/marker")), 0,
                 "f: root in M1 reads the marker again");
        check_is(as_in(m1, UID_B, read_marker, at("share/x/marker")), 0,
                 "f: B in M1 reads it again");
        check_is(as_in(m3, UID_B, read_marker, at("share/x/marker")), 0,
                 "f: B in M3 (the later clone) reads it again");
        check_is(as_in(m2, 0, listed, at("share/x")), LISTED_PLAIN,
                 "f: M2's mountinfo, opened by root, lists share/x, plain");

        /* (g) the owner unmounts share/y in M1 */
        enter(m1);
        (void) setfsuid(UID_A);
        e = umount2(at("share/y"), 0) < 0 ? errno : 0;
        (void) setfsuid(0);
        enter(ns_init);
        check_is(e, 0, "g: CAP_SYS_ADMIN with fsuid A unmounts M1's share/y");
        check_is(as_in(m2, UID_A, listed, at("share/y")), LISTED_NOT,
                 "g: the unmount reaches M2 (not listed for A)");
        check_is(as_in(ns_pin, UID_A, listed, at("anchor/y")), LISTED_NOT,
                 "g: the unmount reaches P");

        close(m1);
        close(m2);
        close(m3);
        close(ns_pin);
        if (umount2(w, MNT_DETACH) < 0)
                printf("# cleanup: %s\n", strerror(errno));
        return tap_done();
}
