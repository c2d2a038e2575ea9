/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * helper.c: helper children, see helper.h.
 *
 * Every operation that must happen inside another mount namespace or with another fsuid runs
 * in a short-lived child made with clone(CLONE_VM | CLONE_VFORK | CLONE_FILES), the way
 * glibc's posix_spawn() makes its children:
 *   - CLONE_FILES: the child shares nsd's descriptor table, so a descriptor it opens inside a
 *     namespace (/proc/self/ns/mnt, "/") is nsd's at once: no SCM_RIGHTS round trip, no
 *     /proc/<pid> lookups, nothing to leak when the child dies (the arguments record every
 *     descriptor it opened).
 *   - CLONE_VM | CLONE_VFORK: no copy of nsd's page tables (fork cost grows with nsd's size,
 *     10,000 namespaces make it big); the calling thread sleeps until the child exits, and the
 *     child reports through the argument struct.
 *   - no CLONE_FS: the child has its own root, cwd and fs_struct, so setns()/unshare()/chroot()
 *     there change nothing in nsd (setns(CLONE_NEWNS) requires an unshared fs_struct anyway).
 *   - its own credentials: setfsuid() there changes nothing in nsd.
 *   - exit signal 0: GLib's SIGCHLD handling never sees these children; we reap them with
 *     __WCLONE.
 * The child runs on a stack in the caller's frame, with every signal blocked, and calls only
 * plain system calls (no malloc, no stdio, no logging): it stores the failing step and errno,
 * and the parent logs them.
 */
#include "base/helper.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel-abi.h"

#define CHILD_STACK_SIZE (64 * 1024)

int helper_run(int (*fn)(void *), void *arg, struct helper_status *status) {
        /* The child's stack: the caller sleeps (CLONE_VFORK) while the child uses it. */
        _Alignas(16) char stack[CHILD_STACK_SIZE];
        sigset_t all, saved;
        int wstatus, r;
        pid_t pid;

        status->step = 0;
        status->err = 0;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid = clone(fn, stack + sizeof stack, CLONE_VM | CLONE_VFORK | CLONE_FILES, arg);
        r = pid < 0 ? -errno : 0;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0) {
                status->err = -r;
                return r;
        }

        while (waitpid(pid, &wstatus, __WCLONE) < 0)
                if (errno != EINTR) {
                        status->err = errno;
                        return -status->err;
                }
        if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
                return 0;
        if (status->err == 0) {
                status->step = 0;
                status->err = EPROTO;
        }
        return -status->err;
}

static const char *const step_text[_HELPER_STEP_MAX] = {
        [HELPER_STEP_NONE] = "run helper process",
        [HELPER_STEP_AFFINITY] = "bind helper to a CPU",
        [HELPER_STEP_UNSHARE] = "unshare the mount namespace",
        [HELPER_STEP_PROPAGATION] = "set propagation of /",
        [HELPER_STEP_PIN_TMPFS] = "mount the pin tmpfs",
        [HELPER_STEP_OPEN_NS] = "open /proc/self/ns/mnt",
        [HELPER_STEP_OPEN_ROOT] = "open the namespace's root directory",
        [HELPER_STEP_OPEN_DIR] = "open the pin directory",
        [HELPER_STEP_SETNS] = "enter the namespace (setns)",
        [HELPER_STEP_CHDIR] = "change to the pin directory",
        [HELPER_STEP_PIN_MOUNT] = "bind-mount the namespace onto its pin",
        [HELPER_STEP_UNPIN] = "unmount the pin",
        [HELPER_STEP_OPEN_MOUNTINFO] = "open /proc/self/mountinfo",
        [HELPER_STEP_CHROOT] = "chroot",
        [HELPER_STEP_READ] = "read",
        [HELPER_STEP_PROBE_MOUNT] = "mount a probe tmpfs",
        [HELPER_STEP_FSUID] = "take the user's fsuid (setfsuid, needs CAP_SETUID)",
        [HELPER_STEP_IDENTITY] = "take the user's identity (setgroups with its groups from the "
                                 "user database, setresgid, setresuid: needs CAP_SETGID, "
                                 "CAP_SETUID)",
        [HELPER_STEP_OPEN_MOUNT_POINT] = "open the mount point",
        [HELPER_STEP_STATX] = "statx the mount point",
        [HELPER_STEP_SETATTR] = "set the owner-private attribute (mount_setattr)",
        [HELPER_STEP_PEER_NS] = "open the client's /proc/PID/ns/mnt",
        [HELPER_STEP_PEER_ROOT] = "open the client's /proc/PID/root",
        [HELPER_STEP_SETUP_RESOLVE] = "resolve the path without following symbolic links "
                                      "(openat2)",
        [HELPER_STEP_SETUP_CHECK] = "check the directory's owner and mode",
        [HELPER_STEP_SETUP_MKDIR] = "make the directory (mkdirat)",
        [HELPER_STEP_SETUP_OWNER] = "give the instance directory its owner and mode",
        [HELPER_STEP_SETUP_CLONE] = "clone the mount to bind (open_tree)",
        [HELPER_STEP_SETUP_ATTR] = "make the mount nosuid,nodev (mount_setattr)",
        [HELPER_STEP_SETUP_TMPFS] = "make the tmpfs (fsopen, fsconfig, fsmount)",
        [HELPER_STEP_SETUP_ATTACH] = "attach the mount (move_mount)",
        [HELPER_STEP_SETUP_SPAWN] = "start the init script",
        [HELPER_STEP_SETUP_SCRIPT] = "run the init script",
        [HELPER_STEP_SETUP_PROPAGATION] = "set the anchor's propagation (mount_setattr)",
        [HELPER_STEP_OPEN_ANCHOR] = "open the share's anchor in the pin namespace",
        [HELPER_STEP_DETACH] = "detach the mount (umount2 MNT_DETACH)",
        [HELPER_STEP_SETUP_LOOP] = "attach the image to a loop device (LOOP_CONFIGURE)",
        [HELPER_STEP_SETUP_MOUNT] = "mount the volume (fsopen, fsconfig, fsmount)",
};

const char *helper_step_text(int step) {
        return step >= 0 && step < _HELPER_STEP_MAX && step_text[step] ? step_text[step]
                                                                       : step_text[0];
}

/* ---- for children --------------------------------------------------------------------- */

const char *helper_fmt_uint(char buf[static 24], unsigned long v, unsigned base) {
        char digits[24];
        size_t n = 0, i = 0;

        do {
                digits[n++] = (char) ('0' + v % base);
                v /= base;
        } while (v > 0 && n < sizeof digits - 1);
        while (n > 0)
                buf[i++] = digits[--n];
        buf[i] = '\0';
        return buf;
}

int helper_open_beneath(int dfd, const char *rel, int flags) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
        };

        return (int) syscall(SYS_openat2, dfd, rel, &how, sizeof how);
}

int helper_mount_root(int fd, dev_t *ret_dev) {
        struct statx stx;

        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0)
                return -1;
        if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
            !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return 0;
        *ret_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        return 1;
}

/* prefix, v in decimal, suffix into buf; no allocation, no locale (a child may call it). */
static void put_path(char *buf, const char *prefix, unsigned long v, const char *suffix) {
        char digits[24];
        size_t i = strlen(prefix), n = strlen(helper_fmt_uint(digits, v, 10));

        memcpy(buf, prefix, i);
        memcpy(buf + i, digits, n);
        strcpy(buf + i + n, suffix);
}

void helper_fd_path(char buf[static 32], int fd) {
        put_path(buf, "/proc/self/fd/", fd > 0 ? (unsigned long) fd : 0, "");
}

void helper_fd_name(char buf[static 24], int fd) {
        put_path(buf, "", fd > 0 ? (unsigned long) fd : 0, "");
}

void helper_proc_path(char *buf, pid_t pid, const char *suffix) {
        put_path(buf, "/proc/", pid > 0 ? (unsigned long) pid : 0, suffix);
}

int helper_bind_cpu(int cpu) {
        cpu_set_t set;

        if (cpu < 0 || cpu >= CPU_SETSIZE)
                return 1;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return sched_setaffinity(0, sizeof set, &set) >= 0;
}

int helper_unshare_ns(struct helper_status *s, int cpu, unsigned long propagation) {
        if (!helper_bind_cpu(cpu))
                return helper_fail(s, HELPER_STEP_AFFINITY);
        if (unshare(CLONE_NEWNS) < 0)
                return helper_fail(s, HELPER_STEP_UNSHARE);
        if (mount(NULL, "/", NULL, MS_REC | propagation, NULL) < 0)
                return helper_fail(s, HELPER_STEP_PROPAGATION);
        return 0;
}

int helper_open_ns(struct helper_status *s, int *ret_ns_fd, int *ret_root_fd) {
        *ret_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (*ret_ns_fd < 0)
                return helper_fail(s, HELPER_STEP_OPEN_NS);
        if (!ret_root_fd)
                return 0;
        *ret_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (*ret_root_fd < 0)
                return helper_fail(s, HELPER_STEP_OPEN_ROOT);
        return 0;
}

long helper_count_lines(int fd) {
        char buf[8192]; /* a child's stack is CHILD_STACK_SIZE */
        long lines = 0;
        ssize_t n;

        while ((n = read(fd, buf, sizeof buf)) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                for (ssize_t i = 0; i < n; i++)
                        lines += buf[i] == '\n';
        }
        return lines;
}

int helper_enter_child(void *p) {
        struct helper_enter_args *a = p;

        if (setns(a->ns_fd, CLONE_NEWNS) < 0)
                return helper_fail(&a->s, HELPER_STEP_SETNS);
        if (a->dir_fd >= 0 && fchdir(a->dir_fd) < 0)
                return helper_fail(&a->s, HELPER_STEP_CHDIR);
        if (a->target && umount2(a->target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                return helper_fail(&a->s, HELPER_STEP_UNPIN);
        if (a->open_path) {
                a->ret_fd = open(a->open_path, a->open_flags | O_CLOEXEC);
                if (a->ret_fd < 0)
                        return helper_fail(&a->s, HELPER_STEP_OPEN_DIR);
        }
        return 0;
}
