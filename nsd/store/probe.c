/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * probe.c: which of our kernel patches the running kernel has, found by trying them in
 * throwaway namespaces made by helper children (helper.c). See probe.h.
 */
#include "store/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/errno-util.h"
#include "base/helper.h"
#include "base/log.h"
#include "cleanup.h"
#include "kernel-abi.h"
#include "nsd-protocol.h"

struct probe_args {
        struct helper_status s;
        const char *dir; /* a directory to mount a probe tmpfs on */
        int root_fd;     /* out: root of the throwaway namespace */
        int ns_fd;       /* out: keeps it alive */
        int result;      /* 0 or errno of the probed call */
        long lines;
        bool owner_private; /* mount_setattr(MOUNT_ATTR_OWNER_PRIVATE) instead of keeping */
        bool born;          /* F4b instead: MOUNT_ATTR_OWNER_PRIVATE_NEW */
        char file[64];      /* F4: a file in the probe tmpfs (dir + "/nsd-probe") */
        const char *why;    /* F4: out: what the attribute did not do, NULL: all of it */
};

/* F4's owner: neither root nor anybody's usual uid (65534 is nobody) */
#define PROBE_OWNER ((uid_t) 65533)

static int probe_throwaway_ns(struct probe_args *a) {
        if (unshare(CLONE_NEWNS) < 0)
                return helper_fail(&a->s, HELPER_STEP_UNSHARE);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return helper_fail(&a->s, HELPER_STEP_PROPAGATION);
        return 0;
}

/* F1: setns() with a directory descriptor. nsd hands out O_PATH roots, so that is what
 * counts (errno in result); a plain O_RDONLY directory is tried too, for the log (errno in
 * lines). Stock kernels: EBADF for O_PATH (fdget() refuses it), EINVAL for a directory. */
static int probe_setns_child(void *p) {
        struct probe_args *a = p;
        int fd;

        if (probe_throwaway_ns(a))
                return 1;
        fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_ROOT);
        a->lines = setns(fd, CLONE_NEWNS) < 0 ? errno : 0;
        close(fd);
        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_ROOT);
        a->result = setns(fd, CLONE_NEWNS) < 0 ? errno : 0;
        close(fd);
        return 0;
}

/* helper_count_lines(), then close fd (keeping errno; the descriptor table is nsd's: the
 * helpers share it, CLONE_FILES) */
static long count_lines(int fd) {
        long lines = helper_count_lines(fd);

        cleanup_closep(&fd);
        return lines;
}

/* In the child: take fsuid uid. 0, or the child's exit status (the step recorded). */
static int take_fsuid(struct probe_args *a, uid_t uid) {
        (void) setfsuid(uid);
        if ((uid_t) setfsuid((uid_t) -1) == uid)
                return 0;
        errno = EPERM;
        return helper_fail(&a->s, HELPER_STEP_FSUID);
}

/* In the child: the lines of /proc/self/mountinfo into *ret (-1 with errno when reading
 * failed). 0, or the child's exit status when it cannot be opened. */
static int mountinfo_lines(struct probe_args *a, long *ret) {
        int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_MOUNTINFO);
        *ret = count_lines(fd);
        return 0;
}

/* F4, by what it does, not by whether mount_setattr() takes the bit (another attribute could
 * get the value upstream): the probe tmpfs on a->dir, with a file, made owner-private with
 * fsuid PROBE_OWNER. Then the owner must see the file and the mount in mountinfo, and root
 * must see neither: the mount point must be the directory it covers. a->result: errno of
 * mount_setattr() (0: it took the attribute); a->why: the first thing that did not hold. */
static int probe_owner_private(struct probe_args *a) {
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_OWNER_PRIVATE };
        struct stat covered, st;
        long owner_lines, root_lines;
        int fd, r;

        if (stat(a->dir, &covered) < 0)
                return helper_fail(&a->s, HELPER_STEP_PROBE_MOUNT);
        if (mount("nsd-probe", a->dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,nr_inodes=16,mode=0755") < 0)
                return helper_fail(&a->s, HELPER_STEP_PROBE_MOUNT);
        fd = open(a->file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
                return helper_fail(&a->s, HELPER_STEP_PROBE_MOUNT);
        close(fd);

        if ((r = take_fsuid(a, PROBE_OWNER)))
                return r;
        a->result = mount_setattr(AT_FDCWD, a->dir, 0, &attr, sizeof attr) < 0 ? errno : 0;
        if (a->result != 0)
                return 0;
        if (stat(a->file, &st) < 0) {
                a->why = "its owner cannot reach a file in it";
                return 0;
        }
        if ((r = mountinfo_lines(a, &owner_lines)) || (r = take_fsuid(a, 0)))
                return r;
        if (stat(a->file, &st) == 0 || errno != ENOENT) {
                a->why = "root still reaches a file in it";
                return 0;
        }
        if (stat(a->dir, &st) < 0 || st.st_dev != covered.st_dev || st.st_ino != covered.st_ino) {
                a->why = "its mount point is not the directory it covers for root";
                return 0;
        }
        if ((r = mountinfo_lines(a, &root_lines)))
                return r;
        if (owner_lines < 0 || root_lines < 0) {
                errno = EIO;
                return helper_fail(&a->s, HELPER_STEP_READ);
        }
        if (owner_lines != root_lines + 1)
                a->why = "mountinfo does not list it for its owner only";
        return 0;
}

/* F4b, by what it does: the policy MOUNT_ATTR_OWNER_PRIVATE_NEW on the probe tmpfs, then a
 * tmpfs mounted on a directory in it (a->file) by this child with real uid PROBE_OWNER and
 * effective uid 0, as fusermount3 runs: root must reach the directory it covers, its owner
 * the new mount. setresuid() raw, for this task alone (see private.c); with the effective and
 * saved uids 0 the child keeps its capabilities. a->result, a->why as for F4. */
static int probe_born_private(struct probe_args *a) {
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_OWNER_PRIVATE_NEW };
        struct stat covered, st;
        bool owner_reaches;
        int r, err;

        if (mkdir(a->file, 0755) < 0 || stat(a->file, &covered) < 0)
                return helper_fail(&a->s, HELPER_STEP_PROBE_MOUNT);
        a->result = mount_setattr(AT_FDCWD, a->dir, 0, &attr, sizeof attr) < 0 ? errno : 0;
        if (a->result != 0)
                return 0;
        if (syscall(SYS_setresuid, PROBE_OWNER, (uid_t) -1, (uid_t) -1) < 0)
                return helper_fail(&a->s, HELPER_STEP_IDENTITY);
        err = mount("nsd-probe-born", a->file, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    "size=4k,nr_inodes=16") < 0
                      ? errno
                      : 0;
        if (syscall(SYS_setresuid, (uid_t) 0, (uid_t) -1, (uid_t) -1) < 0)
                return helper_fail(&a->s, HELPER_STEP_IDENTITY);
        if (err != 0) {
                errno = err;
                return helper_fail(&a->s, HELPER_STEP_PROBE_MOUNT);
        }
        if (stat(a->file, &st) < 0 || st.st_dev != covered.st_dev || st.st_ino != covered.st_ino) {
                a->why = "root reaches a mount born below it";
                return 0;
        }
        if ((r = take_fsuid(a, PROBE_OWNER)))
                return r;
        owner_reaches = stat(a->file, &st) == 0 && st.st_dev != covered.st_dev;
        if ((r = take_fsuid(a, 0)))
                return r;
        if (!owner_reaches)
                a->why = "the real uid that mounted it does not reach it";
        return 0;
}

/* A throwaway namespace with a tmpfs on a->dir; F3, and F4 (F4b) when owner_private (born). */
static int probe_ns_child(void *p) {
        struct probe_args *a = p;

        if (probe_throwaway_ns(a))
                return 1;
        if (mount("nsd-probe", a->dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,nr_inodes=16") < 0)
                return helper_fail(&a->s, HELPER_STEP_PROBE_MOUNT);
        if (a->born)
                return probe_born_private(a);
        if (a->owner_private)
                return probe_owner_private(a);
        return helper_open_ns(&a->s, &a->ns_fd, &a->root_fd);
}

/* F2: chroot into the throwaway namespace's root, count /proc/self/mountinfo lines */
static int probe_chroot_child(void *p) {
        struct probe_args *a = p;
        int r;

        if (fchdir(a->root_fd) < 0)
                return helper_fail(&a->s, HELPER_STEP_CHDIR);
        if (chroot(".") < 0)
                return helper_fail(&a->s, HELPER_STEP_CHROOT);
        if ((r = mountinfo_lines(a, &a->lines)))
                return r;
        if (a->lines < 0)
                return helper_fail(&a->s, HELPER_STEP_READ);
        return 0;
}

/* A probe that could not run: its feature counts as absent. */
static void probe_failed(int r, const char *what, const struct probe_args *a) {
        log_warning_errno(r, "Kernel %s failed: %s: %m, assuming absent", what,
                          helper_status_step(&a->s));
}

/* Close the descriptors a child opened into *a, not one it was given (in's: the caller's). */
static void probe_close_opened(struct probe_args *a, const struct probe_args *in) {
        if (a->root_fd != in->root_fd)
                CLOSE_FD(a->root_fd);
        if (a->ns_fd != in->ns_fd)
                CLOSE_FD(a->ns_fd);
}

/* A probe that failed for a reason that may pass is made again (a feature found absent stays
 * absent until nsd restarts); a fresh copy of *a for each attempt. On failure, what the child
 * opened before the step that failed is closed. */
#define PROBE_ATTEMPTS 3
static int probe_run(int (*fn)(void *), struct probe_args *a) {
        const struct probe_args in = *a;
        int r = -EIO;

        for (int attempt = 0; attempt < PROBE_ATTEMPTS; attempt++) {
                if (attempt > 0) {
                        probe_close_opened(a, &in);
                        *a = in;
                        g_usleep(10000 << (2 * attempt)); /* 40 ms, 160 ms */
                }
                r = helper_run(fn, a, &a->s);
                /* the probed call itself may fail for such a reason too (a->result) */
                if (r >= 0 ? !errno_may_pass(a->result) &&
                                     !(fn == probe_setns_child && errno_may_pass((int) a->lines))
                           : !errno_may_pass(r))
                        break;
        }
        if (r < 0)
                probe_close_opened(a, &in);
        return r;
}

static const char *probe_dir(void) {
        static const char *const dirs[] = { "/tmp", "/mnt", "/run", "/var/tmp", "/dev" };
        struct stat st;

        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
                if (lstat(dirs[i], &st) >= 0 && S_ISDIR(st.st_mode))
                        return dirs[i];
        return NULL;
}

/* F4 (born false) or F4b (born true) by what it does, in a throwaway namespace with a tmpfs on
 * dir; the outcome logged. True when present. A bit the kernel takes but that does something
 * else (another attribute got the value upstream) counts as absent: nsd never sets it. */
static bool probe_by_effect(const char *dir, bool born) {
        const char *name = born ? "F4b" : "F4";
        const char *attr = born ? "MOUNT_ATTR_OWNER_PRIVATE_NEW" : "MOUNT_ATTR_OWNER_PRIVATE";
        struct probe_args a = {
                .dir = dir, .root_fd = -1, .ns_fd = -1, .owner_private = !born, .born = born
        };
        int r;

        g_snprintf(a.file, sizeof a.file, "%s/nsd-probe", dir);
        r = probe_run(probe_ns_child, &a);
        if (r < 0) {
                probe_failed(r,
                             born ? "probe F4b (mounts born owner-private)"
                                  : "probe F4 (owner-private mounts)",
                             &a);
                return false;
        }
        if (a.result != 0) {
                log_debug_errno(a.result, "Kernel probe %s: mount_setattr(%s) refused (%m): absent",
                                name, attr);
                return false;
        }
        if (a.why) {
                log_warning("Kernel probe %s: mount_setattr() takes %s (0x%llx) but %s: not what "
                            "nsd knows by that name, treating %s as absent",
                            name, attr,
                            born ? (unsigned long long) MOUNT_ATTR_OWNER_PRIVATE_NEW
                                 : (unsigned long long) MOUNT_ATTR_OWNER_PRIVATE,
                            a.why, name);
                return false;
        }
        log_debug("Kernel probe %s: %s: present", name,
                  born ? "a mount attached below the policy by a task with a user's real uid is "
                         "born owner-private for it"
                       : "a mount made owner-private is its owner's alone (file and mountinfo "
                         "line hidden from root)");
        return true;
}

uint32_t kernel_features_probe(void) {
        const char *dir = probe_dir();
        uint32_t features = 0;
        struct probe_args a;
        int r;

        /* F1 */
        a = (struct probe_args) { .root_fd = -1, .ns_fd = -1 };
        r = probe_run(probe_setns_child, &a);
        if (r < 0)
                probe_failed(r, "probe F1 (setns on a directory)", &a);
        else {
                if (a.result == 0)
                        features |= NSD_FEATURE_SETNS_DIRFD;
                log_debug("Kernel probe F1: setns() on an O_PATH directory: %s, on an O_RDONLY "
                          "directory: %s: %s",
                          a.result ? strerror(a.result) : "works",
                          a.lines ? strerror((int) a.lines) : "works",
                          a.result == 0 ? "present" : "absent");
                if (a.result != 0 && a.lines == 0)
                        log_notice("Kernel probe F1: setns() takes a directory but not an O_PATH "
                                   "one, which is what nsd hands out; treating F1 as absent");
        }

        if (!dir) {
                log_warning("Kernel probes F2-F4 skipped: no directory to mount a probe on");
                return features;
        }

        /* F2 and F3 share one throwaway namespace with a tmpfs on dir */
        a = (struct probe_args) { .dir = dir, .root_fd = -1, .ns_fd = -1 };
        r = probe_run(probe_ns_child, &a);
        if (r < 0)
                probe_failed(r, "probes F2, F3", &a);
        else {
                _cleanup_close_ int root_fd = a.root_fd, ns_fd = a.ns_fd;

                a = (struct probe_args) { .root_fd = root_fd, .ns_fd = -1 };
                r = probe_run(probe_chroot_child, &a);
                if (r < 0)
                        probe_failed(r, "probe F2 (mount table after chroot)", &a);
                else {
                        if (a.lines > 0)
                                features |= NSD_FEATURE_PROC_MOUNTS_ROOT;
                        log_debug("Kernel probe F2: a process chrooted into another namespace "
                                  "reads %ld mountinfo lines: %s",
                                  a.lines, a.lines > 0 ? "present" : "absent");
                }

                /* F3: fspick from nsd's namespace a mount of the throwaway one (ns_fd keeps
                 * that namespace alive until here) */
                int err = 0;
                for (int attempt = 0; attempt < PROBE_ATTEMPTS; attempt++) {
                        _cleanup_close_ int pfd = fspick(root_fd, dir + 1,
                                                         FSPICK_CLOEXEC | FSPICK_NO_AUTOMOUNT);
                        err = pfd < 0 ? errno : 0;
                        if (pfd >= 0 && fsconfig(pfd, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0)
                                err = errno;
                        if (!errno_may_pass(err))
                                break;
                }
                if (err == EINVAL)
                        features |= NSD_FEATURE_FSPICK_CHECK;
                else if (err != 0)
                        log_warning_errno(err, "Kernel probe F3 (fspick across namespaces) "
                                               "failed unexpectedly: %m, assuming absent");
                log_debug("Kernel probe F3: fspick reconfigure of another namespace's mount "
                          "%s",
                          err == 0        ? "succeeds: absent"
                          : err == EINVAL ? "refused: present"
                                          : "failed: absent");
        }

        /* F4, then F4b (which needs F4) */
        if (probe_by_effect(dir, false))
                features |= NSD_FEATURE_OWNER_PRIVATE;
        else
                return features;
        if (probe_by_effect(dir, true))
                features |= NSD_FEATURE_OWNER_PRIVATE_NEW;
        return features;
}
