/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * helper.h: short-lived helper children for work nsd must not do in its own process (enter
 * another mount namespace, take another fsuid). See helper.c for how they are made.
 *
 * A child's argument struct starts with a struct helper_status; the child calls only plain
 * system calls and on failure returns helper_fail(status, step), step being one of enum
 * helper_step below (0: none). The parent turns the step into text (helper_step_text()) and
 * logs. One table for every file that runs helpers, so a step means the same everywhere.
 */
#pragma once

#include <errno.h>
#include <sys/types.h>

struct helper_status {
        int step; /* the step that failed (enum helper_step); 0: none */
        int err;  /* its errno */
};

/* Why a helper child failed: the step it was at. */
enum helper_step {
        HELPER_STEP_NONE,
        HELPER_STEP_AFFINITY,
        HELPER_STEP_UNSHARE,
        HELPER_STEP_PROPAGATION,
        HELPER_STEP_PIN_TMPFS,
        HELPER_STEP_OPEN_NS,
        HELPER_STEP_OPEN_ROOT,
        HELPER_STEP_OPEN_DIR,
        HELPER_STEP_SETNS,
        HELPER_STEP_CHDIR,
        HELPER_STEP_PIN_MOUNT,
        HELPER_STEP_UNPIN,
        HELPER_STEP_OPEN_MOUNTINFO,
        HELPER_STEP_CHROOT,
        HELPER_STEP_READ,
        HELPER_STEP_PROBE_MOUNT,
        /* mode private (private.c) */
        HELPER_STEP_FSUID,
        HELPER_STEP_IDENTITY,
        HELPER_STEP_OPEN_MOUNT_POINT,
        HELPER_STEP_STATX,
        HELPER_STEP_SETATTR,
        /* the descriptor policy (peer.c) */
        HELPER_STEP_PEER_NS,
        HELPER_STEP_PEER_ROOT,
        /* a new namespace's setup (setup.c) */
        HELPER_STEP_SETUP_RESOLVE,
        HELPER_STEP_SETUP_CHECK,
        HELPER_STEP_SETUP_MKDIR,
        HELPER_STEP_SETUP_OWNER,
        HELPER_STEP_SETUP_CLONE,
        HELPER_STEP_SETUP_ATTR,
        HELPER_STEP_SETUP_TMPFS,
        HELPER_STEP_SETUP_ATTACH,
        HELPER_STEP_SETUP_SPAWN,
        HELPER_STEP_SETUP_SCRIPT,
        HELPER_STEP_SETUP_PROPAGATION,
        /* MaxMountsPerUser= (share-bound.c) */
        HELPER_STEP_OPEN_ANCHOR,
        HELPER_STEP_DETACH,
        /* a volume (setup.c) */
        HELPER_STEP_SETUP_LOOP,
        HELPER_STEP_SETUP_MOUNT,
        _HELPER_STEP_MAX,
};

/* "bind-mount the namespace onto its pin" and so on; "run helper process" for
 * HELPER_STEP_NONE and anything unknown. */
const char *helper_step_text(int step);
/* The step of a finished helper, as text. */
static inline const char *helper_status_step(const struct helper_status *s) {
        return helper_step_text(s->step);
}

/* In the child: record step and errno (EIO if errno is unset); returns 1, the child's exit
 * status. */
static inline int helper_fail(struct helper_status *s, int step) {
        s->step = step;
        s->err = errno > 0 ? errno : EIO;
        return 1;
}

/* Run fn(arg) in a helper child and wait for it. Returns 0 when fn returned 0, -errno of the
 * failing step (recorded in *status) otherwise; a child that failed without recording one
 * (killed by a signal) gives -EPROTO with step 0. Never logs. */
int helper_run(int (*fn)(void *), void *arg, struct helper_status *status);

/* ---- for children (async-signal-safe, no allocation) ---------------------------------- */

/* v's digits in base (2..10) into buf, NUL-terminated; returns buf */
const char *helper_fmt_uint(char buf[static 24], unsigned long v, unsigned base);
/* openat2() of rel beneath dfd (O_CLOEXEC added): no symbolic link, no magic link, no ".."
 * out of dfd; -1 with errno */
int helper_open_beneath(int dfd, const char *rel, int flags);
/* Is fd the root of a mount? 1 (its device into *ret_dev), 0 no, -1 statx failed (errno).
 * AT_STATX_DONT_SYNC: nothing is asked of a FUSE daemon or a server mounted there. */
int helper_mount_root(int fd, dev_t *ret_dev);

/* "/proc/self/fd/<fd>" */
void helper_fd_path(char buf[static 32], int fd);
/* "<fd>" alone: its name relative to an open /proc/<pid>/fd directory */
void helper_fd_name(char buf[static 24], int fd);
/* "/proc/<pid><suffix>" into buf (size >= 24 + strlen(suffix)) */
void helper_proc_path(char *buf, pid_t pid, const char *suffix);
/* Bind the calling child to one CPU; cpu < 0: leave it. 0 on failure (errno set), 1 else. */
int helper_bind_cpu(int cpu);
/* In a child: a mount namespace of its own, made on CPU cpu (-1: any), whose mounts all get
 * propagation (MS_SLAVE or MS_PRIVATE). 0, or the child's exit status (helper_fail() at the
 * step that failed). */
int helper_unshare_ns(struct helper_status *s, int cpu, unsigned long propagation);
/* In a child: open the mount namespace it is in (/proc/self/ns/mnt, for setns()) into *ret_ns_fd
 * and, when ret_root_fd, its root directory (O_PATH) into *ret_root_fd. 0, or the child's exit
 * status (helper_fail() at the step that failed). */
int helper_open_ns(struct helper_status *s, int *ret_ns_fd, int *ret_root_fd);
/* The newlines in what is left of fd to read (a mount table's lines): >= 0, or -1 with errno
 * set when a read failed. Retries EINTR. Safe in a child and in nsd. */
long helper_count_lines(int fd);

/* Enter the mount namespace of ns_fd, then optionally fchdir(dir_fd), umount2(target,
 * MNT_DETACH | UMOUNT_NOFOLLOW) relative to it, and open(open_path, open_flags | O_CLOEXEC)
 * into ret_fd. Run with helper_run(helper_enter_child, &args, &args.s). */
struct helper_enter_args {
        struct helper_status s;
        int ns_fd;
        int dir_fd;            /* fchdir() here after entering, or -1 */
        const char *target;    /* umount2(target, MNT_DETACH) relative to dir_fd, or NULL */
        const char *open_path; /* open this after entering, or NULL */
        int open_flags;
        int ret_fd;
};
int helper_enter_child(void *p);
