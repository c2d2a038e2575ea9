/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * volume-release.c: a namespace's block volumes unmounted before it goes, see
 * volume-release.h. The child runs in a forked copy of nsd: plain system calls only, no
 * allocation, no stdio (child.h).
 */
#include "domain/volume-release.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "base/child.h"
#include "base/helper.h"
#include "kernel-abi.h"
#include "store/mounts.h"

/* ---- the child ------------------------------------------------------------------------- */

typedef struct ReleaseArgs {
        VolumeRelease rel;
        int ns_fd;
} ReleaseArgs;

/* Append s to buf (size n) as far as it goes. */
static void append(char *buf, size_t n, const char *s) {
        size_t l = strnlen(buf, n);

        while (*s && l + 1 < n)
                buf[l++] = *s++;
        buf[l < n ? l : n - 1] = '\0';
}

static int item_failed(VolumeReleaseItem *it, int call) {
        it->step = VOLUME_RELEASE_FAILED;
        it->err = errno;
        it->failed_call = call;
        return -1;
}

/* Where= (absolute) opened beneath root, no link followed: the directory there now. */
static int open_where(int root, const VolumeReleaseItem *it) {
        return helper_open_beneath(root, it->where + 1, O_PATH | O_DIRECTORY);
}

/* open_where() for a look at the mount on Where=: -1 with it->step NOT_MOUNTED when there is
 * no such directory (gone, or a symbolic link now), FAILED when it cannot be opened for
 * another reason. */
static int open_where_or_step(int root, VolumeReleaseItem *it) {
        int fd = open_where(root, it);

        if (fd >= 0)
                return fd;
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) {
                it->step = VOLUME_RELEASE_NOT_MOUNTED;
                return -1;
        }
        return item_failed(it, VOLUME_RELEASE_CALL_OPEN);
}

/* An image whose loop device nsd did not record (its name could not be read when the volume
 * was found mounted): the device of the mount on Where= when it is a loop device backed by
 * Source= (the string /sys gives, as mounts_loop_backs() compares it), its number recorded in
 * it->loop; NOT_MOUNTED otherwise. */
static int unrecorded_loop(int root, VolumeReleaseItem *it, dev_t *ret) {
        dev_t d;
        int fd, r, idx;

        fd = open_where_or_step(root, it);
        if (fd < 0)
                return -1;
        r = helper_mount_root(fd, &d);
        close(fd);
        if (r < 0)
                return item_failed(it, VOLUME_RELEASE_CALL_OPEN);
        if (r > 0) {
                r = mounts_loop_backs(d, it->source);
                if (r < 0) {
                        errno = -r;
                        return item_failed(it, VOLUME_RELEASE_CALL_DEVICE);
                }
        }
        if (r == 0) {
                it->step = VOLUME_RELEASE_NOT_MOUNTED;
                return -1;
        }
        idx = mounts_loop_index(d);
        it->loop = idx >= 0 ? (uint32_t) idx + 1 : 0;
        *ret = d;
        return 0;
}

/* The device number the volume's file system is on: /dev/loopN's or Source='s (a block
 * device under /dev), or for an image on a loop device nsd did not record, the one on Where=
 * (unrecorded_loop(): the image's path is never walked, a directory on the way could be a
 * user's FUSE mount). */
static int volume_dev(int root, VolumeReleaseItem *it, dev_t *ret) {
        char path[48] = "/dev/loop", num[24];
        struct stat st;

        if (!it->loop && strncmp(it->source, "/dev/", 5) != 0)
                return unrecorded_loop(root, it, ret);
        if (it->loop)
                append(path, sizeof path, helper_fmt_uint(num, it->loop - 1, 10));
        if (stat(it->loop ? path : it->source, &st) < 0)
                return item_failed(it, VOLUME_RELEASE_CALL_DEVICE);
        if (!S_ISBLK(st.st_mode)) {
                errno = ENOTBLK;
                return item_failed(it, VOLUME_RELEASE_CALL_DEVICE);
        }
        *ret = st.st_rdev;
        return 0;
}

/* Is fd the root of a mount of dev? 1 yes, 0 no, -1 statx failed (errno). DONT_SYNC: nothing
 * is asked of a FUSE daemon the user may have mounted there. */
static int mount_of(int fd, dev_t dev) {
        dev_t d;
        int r = helper_mount_root(fd, &d);

        return r <= 0 ? r : d == dev;
}

/* Where= as a descriptor of the root of a mount of dev, or -1 (it->step NOT_MOUNTED when
 * something else is there, FAILED when it cannot be opened for another reason). */
static int volume_mount(int root, VolumeReleaseItem *it, dev_t dev) {
        int fd, r;

        fd = open_where_or_step(root, it);
        if (fd < 0)
                return -1;
        r = mount_of(fd, dev);
        if (r < 0)
                (void) item_failed(it, VOLUME_RELEASE_CALL_OPEN);
        else if (r == 0)
                it->step = VOLUME_RELEASE_NOT_MOUNTED;
        if (r <= 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* An error of a look at a process that says nothing of its holding: it is gone, or the entry
 * is (a kernel thread has no executable, a descriptor closed meanwhile), or nsd may not look
 * (EACCES, EPERM: a process of another user namespace's; the unmount's EBUSY is the last
 * word on the mount itself, and a loop device left attached is reported). Any other error
 * (no descriptor, no memory, ...) sets *bad: the process may hold the volume. */
static void look_failed(int *bad) {
        if (errno != ENOENT && errno != ESRCH && errno != EACCES && errno != EPERM && !*bad)
                *bad = errno;
}

/* Is dir_fd/name on one of devs[] that is wanted (the index, or -1)? The device comes from
 * the superblock: AT_STATX_DONT_SYNC asks no FUSE daemon or NFS server anything (a hostile
 * daemon of another user's, holding a file of its own, cannot stall this look). */
static int on_dev(int dir_fd, const char *name, const dev_t *devs, const bool *want, size_t n,
                  int *bad) {
        struct statx stx;
        dev_t dev;

        if (statx(dir_fd, name, AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0) {
                look_failed(bad);
                return -1;
        }
        dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        for (size_t i = 0; i < n; i++)
                if (want[i] && dev == devs[i])
                        return (int) i;
        return -1;
}

/* Each entry of /proc/PID/<sub> (fd, map_files) checked against devs: found[] counts. */
static void scan_dir(int pid_fd, const char *sub, const dev_t *devs, const bool *want, size_t n,
                     bool *found, int *bad) {
        char buf[4096];
        int d = openat(pid_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (d < 0) {
                look_failed(bad);
                return;
        }
        for (;;) {
                long k = syscall(SYS_getdents64, d, buf, sizeof buf);

                if (k < 0)
                        look_failed(bad);
                if (k <= 0)
                        break;
                for (long off = 0; off < k;) {
                        struct dirent64 *e = (struct dirent64 *) (buf + off);
                        int i;

                        off += e->d_reclen;
                        if (e->d_name[0] == '.')
                                continue;
                        i = on_dev(d, e->d_name, devs, want, n, bad);
                        if (i >= 0)
                                found[i] = true;
                }
        }
        close(d);
}

/* Name pid (its comm) as a holder of item i. */
static void add_holder(VolumeReleaseItem *it, int pid_fd, const char *pid) {
        char comm[32] = "";
        int fd = openat(pid_fd, "comm", O_RDONLY | O_CLOEXEC);

        if (fd >= 0) {
                ssize_t k = read(fd, comm, sizeof comm - 1);

                comm[k > 0 ? k : 0] = '\0';
                if (k > 0 && comm[k - 1] == '\n')
                        comm[k - 1] = '\0';
                close(fd);
        }
        if (++it->n_holders > VOLUME_RELEASE_HOLDERS_SHOWN)
                return;
        if (it->holders[0])
                append(it->holders, sizeof it->holders, ", ");
        append(it->holders, sizeof it->holders, "pid ");
        append(it->holders, sizeof it->holders, pid);
        append(it->holders, sizeof it->holders, " (");
        append(it->holders, sizeof it->holders, comm);
        append(it->holders, sizeof it->holders, ")");
}

/* Every process but this one whose working directory, root, executable, open or mapped
 * files lie on devs[i] (want[i]) is named in items[i]. The number of volumes held, or -1
 * when /proc, or a process in it, could not be looked at: nothing may be said to hold
 * nothing then. */
static int find_holders(VolumeReleaseItem *items, const dev_t *devs, const bool *want, size_t n) {
        char buf[4096], self[24];
        const char *me = helper_fmt_uint(self, (unsigned long) getpid(), 10);
        int held = 0, bad = 0;
        int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (proc < 0)
                return -1;
        for (;;) {
                long k = syscall(SYS_getdents64, proc, buf, sizeof buf);

                if (k < 0)
                        look_failed(&bad);
                if (k <= 0)
                        break;
                for (long off = 0; off < k;) {
                        struct dirent64 *e = (struct dirent64 *) (buf + off);
                        bool found[SETUP_MAX_VOLUMES] = { false };
                        static const char *const links[] = { "cwd", "root", "exe" };
                        int p;

                        off += e->d_reclen;
                        if (e->d_name[0] < '0' || e->d_name[0] > '9' || strcmp(e->d_name, me) == 0)
                                continue;
                        p = openat(proc, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (p < 0) {
                                look_failed(&bad); /* gone meanwhile, or not looked at */
                                continue;
                        }
                        for (size_t l = 0; l < G_N_ELEMENTS(links); l++) {
                                int i = on_dev(p, links[l], devs, want, n, &bad);

                                if (i >= 0)
                                        found[i] = true;
                        }
                        scan_dir(p, "fd", devs, want, n, found, &bad);
                        scan_dir(p, "map_files", devs, want, n, found, &bad);
                        for (size_t i = 0; i < n; i++)
                                if (found[i]) {
                                        if (items[i].n_holders == 0)
                                                held++;
                                        add_holder(&items[i], p, e->d_name);
                                }
                        close(p);
                }
        }
        close(proc);
        if (held == 0 && bad) {
                errno = bad;
                return -1;
        }
        return held;
}

/* Is /dev/loop<nr> cleared (no backing file), waiting up to half a second for the kernel? 1
 * yes, 0 no, -1 not known (no sysfs in the namespace). */
static int loop_cleared(uint32_t nr) {
        char path[64] = "/sys/block/loop", num[24];
        struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
        size_t dev_len;

        append(path, sizeof path, helper_fmt_uint(num, nr, 10));
        dev_len = strlen(path);
        append(path, sizeof path, "/loop/backing_file");
        for (int i = 0; i < 25; i++) {
                if (access(path, F_OK) < 0 && errno == ENOENT) {
                        path[dev_len] = '\0'; /* the device itself must be there to say so */
                        return access(path, F_OK) == 0 ? 1 : -1;
                }
                (void) nanosleep(&ts, NULL);
        }
        return 0;
}

/* A volume left in a staging directory of run_dir by a child killed between its move and
 * its unmount (nsd stopped, the deadline): put back onto Where= (want: its device). True
 * when it was. */
static bool recover_staged(int root, const char *run_dir, VolumeReleaseItem *it, dev_t dev) {
        char buf[4096];
        bool moved = false;
        int d = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (d < 0)
                return false;
        for (;;) {
                long k = syscall(SYS_getdents64, d, buf, sizeof buf);

                if (k <= 0 || moved)
                        break;
                for (long off = 0; off < k && !moved;) {
                        struct dirent64 *e = (struct dirent64 *) (buf + off);
                        int fd, to;

                        off += e->d_reclen;
                        if (strncmp(e->d_name, VOLUME_RELEASE_STAGING_PREFIX,
                                    strlen(VOLUME_RELEASE_STAGING_PREFIX)) != 0)
                                continue;
                        fd = openat(d, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd < 0)
                                continue;
                        if (mount_of(fd, dev) == 1) {
                                to = open_where(root, it);
                                if (to >= 0 && move_mount(fd, "", to, "",
                                                          MOVE_MOUNT_F_EMPTY_PATH |
                                                                  MOVE_MOUNT_T_EMPTY_PATH) == 0) {
                                        moved = true;
                                        (void) unlinkat(d, e->d_name, AT_REMOVEDIR);
                                }
                                if (to >= 0)
                                        close(to);
                        }
                        close(fd);
                }
        }
        close(d);
        return moved;
}

static int release_child(void *p, int *ret_fd) {
        ReleaseArgs *a = p;
        VolumeRelease *rel = &a->rel;
        dev_t devs[SETUP_MAX_VOLUMES];
        int fds[SETUP_MAX_VOLUMES];
        bool want[SETUP_MAX_VOLUMES] = { false };
        char staging[SETUP_PATH_MAX + 32] = "", num[24];
        bool failed = false;
        int root, to;

        (void) ret_fd;
        for (size_t i = 0; i < SETUP_MAX_VOLUMES; i++)
                fds[i] = -1;
        if (setns(a->ns_fd, CLONE_NEWNS) < 0) {
                rel->err = errno;
                rel->failed_call = VOLUME_RELEASE_CALL_SETNS;
                return 1;
        }
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        /* 1. each volume's mount, by its device */
        for (size_t i = 0; i < rel->n; i++) {
                VolumeReleaseItem *it = &rel->items[i];

                if (root < 0) {
                        (void) item_failed(it, VOLUME_RELEASE_CALL_OPEN);
                        failed = true;
                        continue;
                }
                if (volume_dev(root, it, &devs[i]) < 0) {
                        if (it->step == VOLUME_RELEASE_FAILED)
                                failed = true;
                        continue;
                }
                fds[i] = volume_mount(root, it, devs[i]);
                if (fds[i] < 0 && it->step == VOLUME_RELEASE_NOT_MOUNTED &&
                    recover_staged(root, rel->run_dir, it, devs[i])) {
                        it->recovered = true;
                        it->step = VOLUME_RELEASE_NOT_TRIED;
                        fds[i] = volume_mount(root, it, devs[i]);
                }
                want[i] = fds[i] >= 0;
                if (fds[i] < 0 && it->step == VOLUME_RELEASE_FAILED)
                        failed = true;
        }
        /* 2. nothing is unmounted while anything holds one of them */
        if (!failed) {
                int held = find_holders(rel->items, devs, want, rel->n);

                for (size_t i = 0; i < rel->n; i++)
                        if (held < 0 && want[i]) {
                                failed = item_failed(&rel->items[i], VOLUME_RELEASE_CALL_PROC) < 0;
                                break;
                        } else if (held > 0 && rel->items[i].n_holders > 0) {
                                rel->items[i].step = VOLUME_RELEASE_BUSY;
                                failed = true;
                        }
        }
        /* 3. moved by descriptor to a directory of root's, unmounted there, last first */
        if (!failed) {
                struct timespec now = { 0 };

                /* a name never used before: a directory left by a child killed in the middle
                 * may still be the mount point of a volume in another user's namespace, and
                 * is never removed from here (an rmdir would detach that mount) */
                (void) clock_gettime(CLOCK_MONOTONIC, &now);
                append(staging, sizeof staging, rel->run_dir);
                append(staging, sizeof staging, "/" VOLUME_RELEASE_STAGING_PREFIX);
                append(staging, sizeof staging, helper_fmt_uint(num, (unsigned long) getpid(), 10));
                append(staging, sizeof staging, ".");
                append(staging, sizeof staging,
                       helper_fmt_uint(num,
                                       (unsigned long) now.tv_sec * 1000000000UL +
                                               (unsigned long) now.tv_nsec,
                                       10));
                if (mkdir(staging, 0700) < 0) {
                        for (size_t i = 0; i < rel->n; i++)
                                if (fds[i] >= 0) {
                                        (void) item_failed(&rel->items[i],
                                                           VOLUME_RELEASE_CALL_STAGING);
                                        break;
                                }
                        failed = true;
                }
        }
        for (size_t i = rel->n; i-- > 0 && !failed;) {
                VolumeReleaseItem *it = &rel->items[i];

                if (fds[i] < 0)
                        continue;
                if (move_mount(fds[i], "", AT_FDCWD, staging, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
                        failed = item_failed(it, VOLUME_RELEASE_CALL_MOVE) < 0;
                        break;
                }
                close(fds[i]); /* a descriptor of the mount keeps it busy */
                fds[i] = -1;
                if (umount2(staging, UMOUNT_NOFOLLOW) == 0) {
                        it->step = VOLUME_RELEASE_UNMOUNTED;
                        it->loop_cleared = it->loop ? loop_cleared(it->loop - 1) : -1;
                        continue;
                }
                failed = true;
                if (errno != EBUSY) {
                        (void) item_failed(it, VOLUME_RELEASE_CALL_UMOUNT);
                } else {
                        it->step = VOLUME_RELEASE_BUSY;
                        it->err = EBUSY;
                        for (size_t j = 0; j < rel->n; j++) /* its own holders only */
                                want[j] = j == i;
                        (void) find_holders(rel->items, devs, want, rel->n);
                }
                /* back onto Where= (the directory there now, no link followed) */
                to = open_where(root, it);
                if (to >= 0 && move_mount(AT_FDCWD, staging, to, "", MOVE_MOUNT_T_EMPTY_PATH) == 0)
                        it->moved_back = true;
                else if (it->step == VOLUME_RELEASE_BUSY)
                        it->failed_call = VOLUME_RELEASE_CALL_MOVE_BACK;
                if (to >= 0)
                        close(to);
        }
        for (size_t i = 0; i < rel->n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        if (staging[0])
                (void) rmdir(staging);
        return failed ? 1 : 0;
}

/* ---- in nsd ---------------------------------------------------------------------------- */

typedef struct ReleaseRun {
        VolumeReleaseDone done;
        void *userdata;
} ReleaseRun;

static void on_release_done(int r, const void *result, int fd, void *userdata) {
        ReleaseRun *run = userdata;
        const ReleaseArgs *a = result;

        if (fd >= 0)
                close(fd);
        run->done(r, a ? &a->rel : NULL, run->userdata);
        g_free(run);
}

int volume_release_start(Children *set, uid_t uid, ChildClass cls, int ns_fd,
                         const VolumeRelease *rel, VolumeReleaseDone done, void *userdata) {
        g_autofree ReleaseArgs *a = g_new0(ReleaseArgs, 1);
        ReleaseRun *run;
        int r;

        g_return_val_if_fail(set && ns_fd >= 0 && rel && rel->n <= SETUP_MAX_VOLUMES && done,
                             -EINVAL);
        a->rel = *rel;
        a->ns_fd = ns_fd;
        run = g_new0(ReleaseRun, 1);
        run->done = done;
        run->userdata = userdata;
        r = child_start_keep(set, uid, cls, release_child, a, sizeof *a, &ns_fd, 1,
                             VOLUME_RELEASE_TIMEOUT_USEC, on_release_done, run);
        if (r < 0)
                g_free(run);
        return r;
}

static const char *call_name(int call) {
        switch (call) {
        case VOLUME_RELEASE_CALL_SETNS:
                return "entering the namespace";
        case VOLUME_RELEASE_CALL_DEVICE:
                return "finding its device";
        case VOLUME_RELEASE_CALL_OPEN:
                return "opening its mount point";
        case VOLUME_RELEASE_CALL_STAGING:
                return "making the directory it is unmounted from";
        case VOLUME_RELEASE_CALL_MOVE:
                return "moving its mount away from the user's paths";
        case VOLUME_RELEASE_CALL_UMOUNT:
                return "unmounting it";
        case VOLUME_RELEASE_CALL_MOVE_BACK:
                return "putting it back on its mount point";
        case VOLUME_RELEASE_CALL_PROC:
                return "looking for the processes that hold it (/proc)";
        default:
                return "a step";
        }
}

char *volume_release_why(const VolumeReleaseItem *it) {
        switch ((VolumeReleaseStep) it->step) {
        case VOLUME_RELEASE_BUSY:
                return g_strdup_printf(
                        "volume '%s' on %s is in use by %s%s%s: it is not unmounted while "
                        "anything holds it%s",
                        it->name, it->where,
                        it->holders[0] ? it->holders : "something nsd cannot name",
                        it->n_holders > VOLUME_RELEASE_HOLDERS_SHOWN ? " and more" : "",
                        it->n_holders > 0 ? "" : " (a submount, or a mount made meanwhile)",
                        it->failed_call == VOLUME_RELEASE_CALL_MOVE_BACK
                                ? "; it could not be put back on its mount point and stays "
                                  "mounted where nsd moved it"
                                : "");
        case VOLUME_RELEASE_FAILED:
                return g_strdup_printf(
                        "volume '%s' on %s: %s failed: %s%s", it->name, it->where,
                        call_name(it->failed_call), g_strerror(it->err),
                        it->failed_call == VOLUME_RELEASE_CALL_UMOUNT && !it->moved_back
                                ? "; it could not be put back on its mount point and stays "
                                  "mounted where nsd moved it (the next release puts it back)"
                                : "");
        default:
                return NULL;
        }
}
