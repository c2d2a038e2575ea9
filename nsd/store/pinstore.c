/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pinstore.c: nsd's pin namespace and the pins in it, and which of them nsd does not hold
 * (their adoption is pending.c's). See pinstore.h for the layout and the durability rules, DESIGN.md
 * "Lifetime and restarts" for why. Operations inside the pin namespace run in helper children
 * (helper.c).
 *
 * Everything that could remove a pin goes through pin_look(), which says what a pin file is
 * from what the kernel reports about it, never from an error: an error is PIN_UNKNOWN, and
 * PIN_UNKNOWN is never removed. Removal happens in three places only: pin_remove() (provably
 * dead or empty pins, logged with the reason), pinstore_unpin() (a release) and the host pin
 * of a pin namespace that is provably not one (pinstore_try_ready()).
 */
#include "store/pinstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/helper.h"
#include "base/log.h"
#include "cleanup.h"
#include "kernel-abi.h"
#include "store/pinstore-internal.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

/* Pins: one empty file (an inode) and one info file (an inode and a page) per user; room
 * for 16384 users. */
#define PINSTORE_TMPFS_OPTIONS "mode=0700,size=72m,nr_inodes=32800"
#define INFO_MAX 128
/* pinstore_open(): attempts at once for what may pass, before going not ready */
#define OPEN_ATTEMPTS 3

/* ---- small helpers ----------------------------------------------------------------------- */

/* A uid from a pin file name: decimal, no sign, no leading zeros, not (uid_t) -1. */
static bool parse_uid(const char *s, uid_t *ret) {
        uint64_t v = 0;

        if (!s[0] || (s[0] == '0' && s[1]))
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                v = v * 10 + (uint64_t) (*s - '0');
                if (v >= UINT32_MAX)
                        return false;
        }
        *ret = (uid_t) v;
        return true;
}

static void pin_file_name(char buf[static 16], uid_t uid) {
        snprintf(buf, 16, "%u", (unsigned) uid);
}

/* 1: fd is the root of a mount (something is mounted there), 0: not, -errno. dir_fd: the
 * directory it was opened from, for kernels without STATX_ATTR_MOUNT_ROOT (before 5.8). */
static int fd_is_mount_root(int fd, int dir_fd) {
        struct statx sx;
        struct stat a, b;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0)
                return -errno;
        if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
                return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
        if (fstat(fd, &a) < 0 || fstat(dir_fd, &b) < 0)
                return -errno;
        return a.st_dev != b.st_dev;
}

static int path_is_mount_root(const char *path) {
        _cleanup_close_ int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        g_autofree char *parent = NULL;
        _cleanup_close_ int pfd = -1;

        if (fd < 0)
                return -errno;
        parent = g_strdup_printf("%s/..", path);
        pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return -errno;
        return fd_is_mount_root(fd, pfd);
}

/* The CPUs nsd may run on, lowest first (at most PIN_CPUS_MAX). */
static void pinstore_load_cpus(PinStore *ps) {
        cpu_set_t set;

        ps->n_cpus = 0;
        if (sched_getaffinity(0, sizeof set, &set) < 0)
                return;
        for (int c = 0; c < CPU_SETSIZE && ps->n_cpus < PIN_CPUS_MAX; c++)
                if (CPU_ISSET(c, &set))
                        ps->cpus[ps->n_cpus++] = c;
}

int pinstore_cpu(const PinStore *ps, size_t attempt) {
        if (!ps || ps->n_cpus == 0)
                return -1;
        return ps->cpus[(ps->cpu_idx + attempt) % ps->n_cpus];
}

/* ---- what a pin file is ------------------------------------------------------------------ */

enum pin_state {
        PIN_NONE,    /* nothing there */
        PIN_EMPTY,   /* a plain file, nothing mounted on it: pins nothing */
        PIN_LIVE,    /* a mount namespace is pinned there (fd) */
        PIN_DEAD,    /* provably no mount namespace pin (why) */
        PIN_UNKNOWN, /* cannot tell now (err): leave it alone */
};

struct pin_look {
        enum pin_state state;
        int fd;         /* PIN_LIVE: nsfs descriptor, the caller's to close */
        int err;        /* PIN_UNKNOWN: errno */
        bool mount;     /* PIN_DEAD: something is mounted there: unmount before unlinking */
        bool directory; /* PIN_DEAD: a directory, which is left alone */
        char why[96];   /* PIN_DEAD: what it is */
};

static const char *file_type_name(mode_t m) {
        return S_ISDIR(m)    ? "a directory"
               : S_ISLNK(m)  ? "a symbolic link"
               : S_ISFIFO(m) ? "a FIFO"
               : S_ISSOCK(m) ? "a socket"
                             : "a device node";
}

/* What dir_fd/name is, from what the kernel says about it. Lookups through dir_fd cross the
 * mounts of the namespace dir_fd's mount belongs to, so for the pin tmpfs this sees the
 * pins in the pin namespace. */
static void pin_look(int dir_fd, const char *name, struct pin_look *ret) {
        _cleanup_close_ int fd = -1;
        struct statfs sfs;
        struct stat st;
        int t, r;

        *ret = (struct pin_look) { .state = PIN_UNKNOWN, .fd = -1 };
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        ret->state = PIN_NONE;
                else
                        ret->err = errno;
                return;
        }
        if (!S_ISREG(st.st_mode)) {
                ret->state = PIN_DEAD;
                ret->directory = S_ISDIR(st.st_mode);
                snprintf(ret->why, sizeof ret->why, "%s", file_type_name(st.st_mode));
                return;
        }
        fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        ret->state = PIN_NONE;
                else
                        ret->err = errno;
                return;
        }
        if (fstatfs(fd, &sfs) < 0) {
                ret->err = errno;
                return;
        }
        if (sfs.f_type == NSFS_MAGIC) {
                t = fd_nstype(fd);
                if (t == CLONE_NEWNS) {
                        ret->state = PIN_LIVE;
                        ret->fd = TAKE_FD(fd);
                } else if (t >= 0) {
                        ret->state = PIN_DEAD;
                        ret->mount = true;
                        snprintf(ret->why, sizeof ret->why,
                                 "a namespace of another type "
                                 "(0x%x)",
                                 (unsigned) t);
                } else
                        ret->err = -t;
                return;
        }
        r = fd_is_mount_root(fd, dir_fd);
        if (r < 0) {
                ret->err = -r;
                return;
        }
        if (r > 0) {
                ret->state = PIN_DEAD;
                ret->mount = true;
                snprintf(ret->why, sizeof ret->why,
                         "a mount of a file system of type 0x%lx, "
                         "not of a namespace",
                         (unsigned long) sfs.f_type);
                return;
        }
        ret->state = PIN_EMPTY;
}

/* Unmount whatever is mounted on the pin file name, inside the pin namespace. */
static int pin_unmount(PinStore *ps, const char *name) {
        struct helper_enter_args a = {
                .ns_fd = ps->pinns_fd, .dir_fd = ps->dir_fd, .target = name, .ret_fd = -1
        };

        return helper_run(helper_enter_child, &a, &a.s);
}

static void pin_unlink_info(PinStore *ps, const char *name) {
        char info[32];

        snprintf(info, sizeof info, "%s.info", name);
        if (unlinkat(ps->dir_fd, info, 0) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove '%s:%s', ignoring: %m", ps->pins_path,
                                  info);
}

/* Remove a pin file that pin_look() found empty or dead; logged with the reason. */
static int pin_remove(PinStore *ps, uid_t uid, const char *name, const struct pin_look *l) {
        int r;

        if (l->state == PIN_DEAD && l->directory) {
                log_warning("'%s:%s' is a directory, not a pin; leaving it", ps->pins_path, name);
                return 0;
        }
        if (l->state == PIN_DEAD && l->mount) {
                r = pin_unmount(ps, name);
                if (r < 0)
                        return log_warning_errno(r,
                                                 "Failed to unmount the dead pin '%s:%s' "
                                                 "(%s), leaving it: %m",
                                                 ps->pins_path, name, l->why);
        }
        if (unlinkat(ps->dir_fd, name, 0) < 0 && errno != ENOENT)
                return log_warning_errno(errno,
                                         "Failed to remove the pin file '%s:%s', "
                                         "leaving it: %m",
                                         ps->pins_path, name);
        pin_unlink_info(ps, name);
        if (l->state == PIN_DEAD)
                log_event(LOG_WARNING, 0, uid, "pin-removed",
                          "Removed the pin '%s:%s' of uid %u: it is %s, not a pinned mount "
                          "namespace",
                          ps->pins_path, name, (unsigned) uid, l->why);
        else
                log_event(LOG_NOTICE, 0, uid, "pin-removed",
                          "Removed the pin file '%s:%s' of uid %u: it pins nothing (an "
                          "interrupted create)",
                          ps->pins_path, name, (unsigned) uid);
        return 0;
}

/* ---- the pin namespace ------------------------------------------------------------------- */

struct pinns_args {
        struct helper_status s;
        int cpu;
        const char *run_dir;
        int ns_fd;
        int dir_fd;
};

static int pinns_child(void *p) {
        struct pinns_args *a = p;
        int r;

        /* Slave, not private: a filesystem the host unmounts (a USB stick) is unmounted here
         * too, so the pin namespace never keeps one busy. run_dir is private in the host, so
         * the tmpfs below and the pins on it are private. */
        if ((r = helper_unshare_ns(&a->s, a->cpu, MS_SLAVE)))
                return r;
        if (mount("nsd-pins", a->run_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  PINSTORE_TMPFS_OPTIONS) < 0)
                return helper_fail(&a->s, HELPER_STEP_PIN_TMPFS);
        a->dir_fd = open(a->run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->dir_fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_DIR);
        return helper_open_ns(&a->s, &a->ns_fd, NULL);
}

/* run_dir must be a private mount: an nsfs bind mount cannot be propagated to peers, so the
 * kernel refuses one on a shared mount (/run is shared under systemd). */
static int run_dir_make_private(const char *run_dir) {
        int r = path_is_mount_root(run_dir);
        if (r < 0)
                return log_error_errno(r, "Failed to check whether '%s' is a mount point: %m",
                                       run_dir);
        if (r == 0 && mount(run_dir, run_dir, NULL, MS_BIND, NULL) < 0)
                return log_error_errno(errno, "Failed to bind-mount '%s' onto itself: %m", run_dir);
        if (mount(NULL, run_dir, NULL, MS_PRIVATE, NULL) < 0)
                return log_error_errno(errno, "Failed to make '%s' a private mount: %m", run_dir);
        return 0;
}

/* The pin tmpfs, seen from the pin namespace: run_dir there. */
static int pinstore_open_dir(PinStore *ps) {
        struct helper_enter_args a = {
                .ns_fd = ps->pinns_fd,
                .dir_fd = -1,
                .open_path = ps->run_dir,
                .open_flags = O_PATH | O_DIRECTORY,
                .ret_fd = -1,
        };
        _cleanup_close_ int fd = -1;
        struct statfs sfs;
        int r;

        r = helper_run(helper_enter_child, &a, &a.s);
        fd = a.ret_fd;
        if (r < 0)
                return log_error_errno(r, "Failed to open '%s' in the pin namespace: %s: %m",
                                       ps->run_dir, helper_status_step(&a.s));
        if (fstatfs(fd, &sfs) < 0)
                return log_error_errno(errno, "Failed to check '%s' in the pin namespace: %m",
                                       ps->run_dir);
        if (sfs.f_type != TMPFS_MAGIC)
                /* Not the layout nsd makes; its pins (if any) cannot be found, and replacing
                 * the namespace could lose them: an administrator decides. */
                return log_error_errno(EUCLEAN,
                                       "'%s' in the pin namespace on '%s' is not its "
                                       "tmpfs; refusing to replace that namespace (umount "
                                       "'%s' by hand if nothing in it is needed)",
                                       ps->run_dir, ps->pins_path, ps->pins_path);
        ps->dir_fd = TAKE_FD(fd);
        return 0;
}

static int pinstore_create(PinStore *ps) {
        struct pinns_args a = { .ns_fd = -1, .dir_fd = -1 };
        size_t attempts = ps->n_cpus + 1, i;
        _cleanup_close_ int fd = -1;
        char src[32];
        int r = -EIO;

        fd = open(ps->pins_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create '%s': %m", ps->pins_path);
        CLOSE_FD(fd);

        /* Each CPU once, then once unbound. The host pin is refused (EINVAL, mnt_ns_loop) when
         * nsd's own namespace has a larger id than the new one: never for the initial
         * namespace, but on 6.18 it can happen when nsd runs in a namespace of its own (tests)
         * and the two were made on different CPUs. */
        for (i = 0; i < attempts; i++) {
                a = (struct pinns_args) { .cpu = pinstore_cpu(ps, i),
                                          .run_dir = ps->run_dir,
                                          .ns_fd = -1,
                                          .dir_fd = -1 };
                if (i == ps->n_cpus)
                        a.cpu = -1;
                r = helper_run(pinns_child, &a, &a.s);
                if (r < 0) {
                        CLOSE_FD(a.ns_fd);
                        CLOSE_FD(a.dir_fd);
                        if (a.s.step == HELPER_STEP_AFFINITY)
                                continue;
                        return log_error_errno(r, "Failed to create the pin namespace: %s: %m",
                                               helper_status_step(&a.s));
                }
                helper_fd_path(src, a.ns_fd);
                if (mount(src, ps->pins_path, NULL, MS_BIND, NULL) >= 0)
                        break;
                r = -errno;
                CLOSE_FD(a.ns_fd);
                CLOSE_FD(a.dir_fd);
                if (r != -EINVAL)
                        break;
                log_debug("Pin of the pin namespace refused on CPU %d (namespace ids out of "
                          "order), retrying on another CPU",
                          a.cpu);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to pin the pin namespace on '%s': %m",
                                       ps->pins_path);
        if (a.cpu >= 0 && ps->n_cpus > 0)
                ps->cpu_idx = i % ps->n_cpus;
        ps->pinns_fd = a.ns_fd;
        ps->dir_fd = a.dir_fd;
        ps->created = true;
        ps->pinns_found = true;
        log_debug("Created the pin namespace on '%s'", ps->pins_path);
        return 0;
}

/* The pin namespace the service manager kept (ps->hint_fd) becomes the store's: pinned
 * again on pins_path when pin (there is nothing there) and taken as pinns_fd. */
static int pinstore_use_hint(PinStore *ps, bool pin) {
        char src[32];
        int r;

        if (pin) {
                _cleanup_close_ int fd = -1;

                r = run_dir_make_private(ps->run_dir);
                if (r >= 0) {
                        fd = open(ps->pins_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                        r = fd < 0 ? -errno : 0;
                }
                if (r >= 0) {
                        helper_fd_path(src, ps->hint_fd);
                        r = mount(src, ps->pins_path, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
                }
                if (r < 0)
                        log_warning_errno(r,
                                          "Failed to pin the pin namespace kept in the service "
                                          "manager's fd store on '%s' again, using it from there "
                                          "(it lasts while nsd runs or the store holds it): %m",
                                          ps->pins_path);
                else
                        log_notice("Pinned the pin namespace on '%s' again from the service "
                                   "manager's fd store: its pin was gone",
                                   ps->pins_path);
        }
        ps->pinns_fd = TAKE_FD(ps->hint_fd);
        ps->pinns_found = true;
        ps->pinns_from_hint = true;
        return pinstore_open_dir(ps);
}

/* Is the hint (if any) a mount namespace? Drop it if not. */
static bool pinstore_hint_ok(PinStore *ps) {
        int t;

        if (ps->hint_fd < 0)
                return false;
        t = fd_nstype(ps->hint_fd);
        if (t == CLONE_NEWNS)
                return true;
        log_warning("The fd store's '"
                    "pinns"
                    "' is not a mount namespace, ignoring it");
        CLOSE_FD(ps->hint_fd);
        return false;
}

/* Find or make the pin namespace and open its tmpfs. 0, or -errno with *ret_final telling
 * whether that is final (no pin namespace exists, and making one failed for a reason that
 * will not pass) or worth retrying. Never replaces a mount namespace on pins_path. */
static int pinstore_find(PinStore *ps, bool *ret_final) {
        _cleanup_close_ int run_fd = -1;
        struct pin_look l;
        int mkdir_err = 0, r;

        *ret_final = false;
        if (ps->pinns_fd >= 0)
                /* found earlier, its tmpfs not opened yet: that is all that is left */
                return pinstore_open_dir(ps);

        if (mkdir(ps->run_dir, 0755) < 0 && errno != EEXIST)
                mkdir_err = errno;
        run_fd = open(ps->run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (run_fd < 0) {
                r = -errno;
                if (r == -ENOENT && mkdir_err) {
                        /* no run_dir, so no pin namespace either */
                        *ret_final = !errno_may_pass(mkdir_err);
                        return log_error_errno(mkdir_err, "Failed to create '%s': %m", ps->run_dir);
                }
                return log_error_errno(r, "Failed to open '%s': %m", ps->run_dir);
        }

        /* An existing pin namespace from an earlier nsd? */
        pin_look(run_fd, "pins", &l);
        switch (l.state) {
        case PIN_LIVE:
                if (pinstore_hint_ok(ps)) {
                        struct stat a, b;
                        if (fstat(l.fd, &a) >= 0 && fstat(ps->hint_fd, &b) >= 0 &&
                            a.st_ino == b.st_ino) {
                                /* the same: keep the fd store's descriptor, which the store
                                 * holds already */
                                close(l.fd);
                                return pinstore_use_hint(ps, false);
                        }
                        log_error("The service manager's fd store holds another pin namespace "
                                  "(mnt:[%llu]) than the one pinned on '%s' (mnt:[%llu]); using "
                                  "the pinned one. The other stays in the fd store untouched, "
                                  "with whatever pins it holds",
                                  (unsigned long long) b.st_ino, ps->pins_path,
                                  (unsigned long long) a.st_ino);
                        CLOSE_FD(ps->hint_fd);
                }
                ps->pinns_fd = l.fd;
                ps->pinns_found = true;
                r = pinstore_open_dir(ps);
                if (r >= 0)
                        log_debug("Adopted the pin namespace on '%s'", ps->pins_path);
                return r;
        case PIN_UNKNOWN:
                if (pinstore_hint_ok(ps)) {
                        log_warning_errno(l.err,
                                          "Cannot look at '%s' (%m); using the pin "
                                          "namespace kept in the service manager's fd store",
                                          ps->pins_path);
                        return pinstore_use_hint(ps, false);
                }
                /* it may be our pin namespace: never make another on top of it */
                return log_error_errno(l.err,
                                       "Failed to look at '%s', it may be the pin "
                                       "namespace: %m",
                                       ps->pins_path);
        case PIN_DEAD:
                if (l.directory) {
                        *ret_final = true;
                        return log_error_errno(EISDIR,
                                               "'%s' is a directory, not nsd's pin; "
                                               "refusing to touch it",
                                               ps->pins_path);
                }
                if (l.mount && umount2(ps->pins_path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        return log_error_errno(errno,
                                               "Failed to unmount '%s' (%s, not a pin "
                                               "namespace): %m",
                                               ps->pins_path, l.why);
                if (!l.mount && unlink(ps->pins_path) < 0 && errno != ENOENT)
                        return log_error_errno(errno, "Failed to remove '%s' (%s): %m",
                                               ps->pins_path, l.why);
                log_warning("Removed '%s': it was %s, not nsd's pin namespace", ps->pins_path,
                            l.why);
                break;
        case PIN_NONE:
        case PIN_EMPTY: /* a plain file left from an earlier boot's layout: reuse it */
                break;
        }

        /* no pin namespace on pins_path: the one the fd store kept, if any, before a new one */
        if (pinstore_hint_ok(ps))
                return pinstore_use_hint(ps, true);
        r = run_dir_make_private(ps->run_dir);
        if (r >= 0)
                r = pinstore_create(ps);
        if (r < 0)
                *ret_final = !errno_may_pass(r);
        return r;
}

/* ---- listing and pending ----------------------------------------------------------------- */

void pinstore_mark_pending(PinStore *ps, uid_t uid, int err, const char *why) {
        if (g_hash_table_contains(ps->pending, GUINT_TO_POINTER(uid)))
                return;
        g_hash_table_add(ps->pending, GUINT_TO_POINTER(uid));
        if (ps->pending_cb)
                ps->pending_cb(ps->pending_userdata); /* its owner retries soon */
        log_event(LOG_WARNING, err, uid, "adopt-pending",
                  "The pinned namespace of uid %u is not adopted yet (%s%s%s); it is kept, "
                  "retried, and a JOIN for uid %u answers 'not yet available' meanwhile",
                  (unsigned) uid, why, err ? ": " : "", err ? g_strerror(abs(err)) : "",
                  (unsigned) uid);
}

/* List the pins: every live (or possibly live) one becomes pending, dead ones are removed. */
static int pinstore_list(PinStore *ps) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        fd = openat(ps->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open the pin directory '%s': %m",
                                       ps->pins_path);
        d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return log_error_errno(r, "Failed to read the pin directory '%s': %m",
                                       ps->pins_path);
        }
        while ((errno = 0, de = readdir(d))) {
                struct pin_look l;
                uid_t uid;

                if (!parse_uid(de->d_name, &uid))
                        continue;
                pin_look(ps->dir_fd, de->d_name, &l);
                switch (l.state) {
                case PIN_LIVE:
                        close(l.fd);
                        g_hash_table_add(ps->pending, GUINT_TO_POINTER(uid));
                        break;
                case PIN_UNKNOWN:
                        pinstore_mark_pending(ps, uid, l.err, "its pin cannot be looked at");
                        break;
                case PIN_EMPTY:
                case PIN_DEAD:
                        (void) pin_remove(ps, uid, de->d_name, &l);
                        break;
                case PIN_NONE:
                        break;
                }
        }
        if (errno != 0)
                return log_error_errno(errno, "Failed to read the pin directory '%s': %m",
                                       ps->pins_path);
        ps->listed = true;
        return 0;
}

/* Ready: pin namespace open and its pins listed. */
static int pinstore_try_ready(PinStore *ps, bool *ret_final) {
        int r;

        *ret_final = false;
        if (ps->dir_fd < 0) {
                r = pinstore_find(ps, ret_final);
                if (r < 0)
                        return r;
        }
        if (!ps->listed)
                return pinstore_list(ps);
        return 0;
}

/* ---- adoption ---------------------------------------------------------------------------- */

static uint64_t pin_info_read(PinStore *ps, const char *name) {
        char path[32], text[INFO_MAX];
        _cleanup_close_ int fd = -1;
        uint64_t v = 0;
        ssize_t n;

        snprintf(path, sizeof path, "%s.info", name);
        fd = openat(ps->dir_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                log_debug_errno(errno, "Failed to open '%s:%s', creation time unknown: %m",
                                ps->pins_path, path);
                return 0;
        }
        n = read(fd, text, sizeof text - 1);
        if (n <= 0)
                return 0;
        text[n] = '\0';
        if (sscanf(text, "created_usec=%" SCNu64, &v) != 1) {
                log_debug("'%s:%s' has no created_usec=, ignoring", ps->pins_path, path);
                return 0;
        }
        return v;
}

int pinstore_take_pin(PinStore *ps, uid_t uid, int *ret_ns_fd, uint64_t *ret_created_usec) {
        struct pin_look l;
        char name[16];

        if (!g_hash_table_contains(ps->pending, GUINT_TO_POINTER(uid)))
                return 0;
        pin_file_name(name, uid);
        pin_look(ps->dir_fd, name, &l);
        switch (l.state) {
        case PIN_LIVE:
                *ret_ns_fd = l.fd;
                *ret_created_usec = pin_info_read(ps, name);
                return 1;
        case PIN_NONE:
                log_info("The pin of uid %u is gone, nothing to adopt", (unsigned) uid);
                g_hash_table_remove(ps->pending, GUINT_TO_POINTER(uid));
                return 0;
        case PIN_EMPTY:
        case PIN_DEAD:
                if (pin_remove(ps, uid, name, &l) < 0)
                        return -EAGAIN;
                g_hash_table_remove(ps->pending, GUINT_TO_POINTER(uid));
                return 0;
        case PIN_UNKNOWN:
                break;
        }
        return log_debug_errno(l.err, "Cannot look at the pin of uid %u yet: %m", (unsigned) uid);
}

void pinstore_adopted(PinStore *ps, uid_t uid) {
        g_hash_table_remove(ps->pending, GUINT_TO_POINTER(uid));
}

uid_t *pinstore_pending_uids(const PinStore *ps, size_t *ret_n) {
        guint n = 0;
        g_autofree gpointer *keys = g_hash_table_get_keys_as_array(ps->pending, &n);
        uid_t *uids = g_new(uid_t, n + 1);

        for (guint i = 0; i < n; i++)
                uids[i] = GPOINTER_TO_UINT(keys[i]);
        *ret_n = n;
        return uids;
}

int pinstore_retry_ready(PinStore *ps, unsigned retries) {
        bool final;
        int r;

        if (pinstore_is_ready(ps))
                return 0;
        r = pinstore_try_ready(ps, &final);
        if (r < 0)
                return log_full_errno(retries % 12 == 0 ? LOG_WARNING : LOG_DEBUG, r,
                                      "The pin store on '%s' is not available yet (%u retries): "
                                      "%m; every JOIN answers 'not yet available' until it is",
                                      ps->pins_path, retries);
        log_notice("The pin store on '%s' is available, %u pins to adopt", ps->pins_path,
                   g_hash_table_size(ps->pending));
        if (ps->ready_cb)
                ps->ready_cb(ps->ready_userdata);
        return 1;
}

/* ---- the API ----------------------------------------------------------------------------- */

int pinstore_open(const char *run_dir, PinStore **ret) {
        return pinstore_open_full(run_dir, -1, ret);
}

int pinstore_open_full(const char *run_dir, int pinns_fd, PinStore **ret) {
        PinStore *ps;
        bool final = false;
        int r = 0;

        if (!run_dir || run_dir[0] != '/' || !ret) {
                if (pinns_fd >= 0)
                        close(pinns_fd);
                return -EINVAL;
        }

        ps = g_new0(PinStore, 1);
        ps->pinns_fd = ps->dir_fd = -1;
        ps->hint_fd = pinns_fd;
        ps->run_dir = g_strdup(run_dir);
        ps->pins_path = g_strdup_printf("%s/pins", run_dir);
        ps->pending = g_hash_table_new(g_direct_hash, g_direct_equal);
        pinstore_load_cpus(ps);

        for (int attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
                if (attempt > 0)
                        g_usleep(10000 << (2 * attempt)); /* 40 ms, 160 ms */
                r = pinstore_try_ready(ps, &final);
                if (r >= 0 || final || !errno_may_pass(r))
                        break;
        }
        if (r < 0 && final) {
                pinstore_free(ps);
                return r;
        }
        if (r < 0) {
                log_error_errno(r,
                                "The pin store on '%s' is not available yet: %m; nsd keeps "
                                "retrying, and every JOIN answers 'not yet available' until it "
                                "is",
                                ps->pins_path);
        }
        *ret = ps;
        return 0;
}

void pinstore_free(PinStore *ps) {
        if (!ps)
                return;
        /* The pins stay: they are what survives a restart. */
        CLOSE_FD(ps->pinns_fd);
        CLOSE_FD(ps->dir_fd);
        CLOSE_FD(ps->hint_fd);
        g_hash_table_unref(ps->pending);
        g_free(ps->run_dir);
        g_free(ps->pins_path);
        g_free(ps);
}

void pinstore_pin_name(const PinStore *ps, uid_t uid, char *buf, size_t size) {
        if (!buf || size == 0)
                return;
        if (!ps)
                buf[0] = '\0';
        else
                snprintf(buf, size, "%s:%u", ps->pins_path, (unsigned) uid);
}

void pinstore_set_ready_cb(PinStore *ps, void (*cb)(void *userdata), void *userdata) {
        ps->ready_cb = cb;
        ps->ready_userdata = userdata;
}

void pinstore_set_pending_cb(PinStore *ps, void (*cb)(void *userdata), void *userdata) {
        ps->pending_cb = cb;
        ps->pending_userdata = userdata;
}

int pinstore_pinns_fd(const PinStore *ps, bool *ret_from_fdstore) {
        if (ret_from_fdstore)
                *ret_from_fdstore = ps && ps->pinns_from_hint;
        return ps ? ps->pinns_fd : -1;
}

const char *pinstore_run_dir(const PinStore *ps) {
        return ps ? ps->run_dir : NULL;
}

int pinstore_dir_fd(const PinStore *ps) {
        return ps ? ps->dir_fd : -1;
}

bool pinstore_is_ready(const PinStore *ps) {
        return ps && ps->dir_fd >= 0 && ps->listed;
}

bool pinstore_is_pending(const PinStore *ps, uid_t uid) {
        if (!ps)
                return false;
        return !pinstore_is_ready(ps) || g_hash_table_contains(ps->pending, GUINT_TO_POINTER(uid));
}

size_t pinstore_n_pending(const PinStore *ps) {
        return ps ? g_hash_table_size(ps->pending) : 0;
}

/* ---- pins, for userns.c ------------------------------------------------------------------ */

int pinstore_pin_begin(PinStore *ps, uid_t uid) {
        _cleanup_close_ int fd = -1;
        struct pin_look l;
        char name[16];
        int r;

        if (!pinstore_is_ready(ps)) {
                log_debug("Not creating a namespace for uid %u: the pin store is not available "
                          "yet",
                          (unsigned) uid);
                return -EAGAIN;
        }
        if (g_hash_table_contains(ps->pending, GUINT_TO_POINTER(uid))) {
                log_debug("Not creating a namespace for uid %u: its pinned namespace is not "
                          "adopted yet",
                          (unsigned) uid);
                return -EAGAIN;
        }

        pin_file_name(name, uid);
        pin_look(ps->dir_fd, name, &l);
        switch (l.state) {
        case PIN_LIVE:
                /* a pin nsd does not hold: adopt it, never a fresh namespace in its place */
                close(l.fd);
                pinstore_mark_pending(ps, uid, 0, "a pin exists that nsd does not hold");
                return -EAGAIN;
        case PIN_UNKNOWN:
                log_warning_errno(l.err, "Cannot look at the pin file '%s:%s' of uid %u: %m",
                                  ps->pins_path, name, (unsigned) uid);
                return errno_may_pass(l.err) ? -EAGAIN : -l.err;
        case PIN_EMPTY:
                return 0; /* stale empty file from an interrupted create: reuse it */
        case PIN_DEAD:
                r = pin_remove(ps, uid, name, &l);
                if (r < 0)
                        return errno_may_pass(r) ? -EAGAIN : r;
                break;
        case PIN_NONE:
                break;
        }
        fd = openat(ps->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = -errno;
                log_error_errno(r, "Failed to create pin file '%s:%s': %m", ps->pins_path, name);
                return r == -EEXIST || errno_may_pass(r) ? -EAGAIN : r;
        }
        return 0;
}

void pinstore_pin_abandon(PinStore *ps, uid_t uid) {
        struct pin_look l;
        char name[16];

        pin_file_name(name, uid);
        pin_look(ps->dir_fd, name, &l);
        switch (l.state) {
        case PIN_EMPTY:
                if (unlinkat(ps->dir_fd, name, 0) < 0 && errno != ENOENT)
                        log_debug_errno(errno, "Failed to remove pin file '%s:%s': %m",
                                        ps->pins_path, name);
                break;
        case PIN_LIVE:
                /* the pin was made after all (a helper killed after its last step) */
                close(l.fd);
                pinstore_mark_pending(ps, uid, 0,
                                      "a create was reported failed after its pin "
                                      "was made");
                break;
        case PIN_NONE:
        case PIN_DEAD:
        case PIN_UNKNOWN:
                break; /* the next create or start looks again */
        }
}

void pinstore_pin_done(PinStore *ps, uid_t uid, uint64_t created_usec, size_t attempt,
                       bool cpu_bound) {
        char name[16], path[32], text[INFO_MAX];
        _cleanup_close_ int fd = -1;
        ssize_t w;
        int n;

        if (cpu_bound && ps->n_cpus > 0)
                ps->cpu_idx = (ps->cpu_idx + attempt) % ps->n_cpus;

        pin_file_name(name, uid);
        snprintf(path, sizeof path, "%s.info", name);
        n = snprintf(text, sizeof text, "created_usec=%" PRIu64 "\n", created_usec);
        fd = openat(ps->dir_fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                log_warning_errno(errno,
                                  "Failed to write '%s:%s' of uid %u, its creation time "
                                  "will be unknown after a restart: %m",
                                  ps->pins_path, path, (unsigned) uid);
                return;
        }
        w = write(fd, text, (size_t) n);
        if (w != n)
                log_warning_errno(w < 0 ? errno : EIO,
                                  "Failed to write '%s:%s' of uid %u, "
                                  "ignoring: %m",
                                  ps->pins_path, path, (unsigned) uid);
}

int pinstore_unpin(PinStore *ps, uid_t uid, uint64_t ns_inode) {
        struct pin_look l;
        struct stat st;
        char name[16];
        int r;

        if (!pinstore_is_ready(ps))
                return -EAGAIN;
        pin_file_name(name, uid);
        pin_look(ps->dir_fd, name, &l);
        switch (l.state) {
        case PIN_NONE:
                log_debug("The pin of uid %u is already gone", (unsigned) uid);
                return 0;
        case PIN_UNKNOWN:
                return log_error_errno(l.err,
                                       "Failed to look at the pin '%s:%s' of uid %u, "
                                       "keeping it: %m",
                                       ps->pins_path, name, (unsigned) uid);
        case PIN_EMPTY:
        case PIN_DEAD:
                return pin_remove(ps, uid, name, &l);
        case PIN_LIVE:
                break;
        }

        r = fstat(l.fd, &st) < 0 ? -errno : 0;
        close(l.fd);
        if (r < 0)
                return log_error_errno(r,
                                       "Failed to look at the pin '%s:%s' of uid %u, keeping "
                                       "it: %m",
                                       ps->pins_path, name, (unsigned) uid);
        if ((uint64_t) st.st_ino != ns_inode) {
                log_warning("Pin '%s:%s' does not pin namespace %" PRIu64 " of uid %u but %" PRIu64
                            ", leaving it",
                            ps->pins_path, name, ns_inode, (unsigned) uid, (uint64_t) st.st_ino);
                pinstore_mark_pending(ps, uid, 0, "its pin holds another namespace");
                return 0;
        }

        r = pin_unmount(ps, name);
        if (r < 0)
                return log_error_errno(r,
                                       "Failed to unpin the mount namespace of uid %u, it "
                                       "stays pinned: %m",
                                       (unsigned) uid);
        if (unlinkat(ps->dir_fd, name, 0) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove '%s:%s', ignoring: %m", ps->pins_path,
                                  name);
        pin_unlink_info(ps, name);
        log_debug("Unpinned mount namespace %" PRIu64 " of uid %u", ns_inode, (unsigned) uid);
        return 0;
}
