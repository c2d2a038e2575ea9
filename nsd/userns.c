/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * userns.c: per-user mount namespaces, their pins in nsd's pin namespace, re-adoption after a
 * restart, mount tables, kernel feature probes. See userns.h for the layout and DESIGN.md
 * "Lifetime and restarts" for why.
 *
 * Helper processes. Every operation that must happen inside another mount namespace (create
 * one, pin into the pin namespace, unpin, read a table) runs in a helper child (helper.c):
 * clone(CLONE_VM | CLONE_VFORK | CLONE_FILES), so a descriptor it opens there is nsd's at once,
 * and setns()/unshare()/chroot() in it change nothing in nsd.
 */
#include "userns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "helper.h"
#include "kernel-abi.h"
#include "log.h"
#include "nsd-protocol.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

/* Pins: one empty file (an inode) and one info file (an inode and a page) per user; room
 * for 16384 users. */
#define PINSTORE_TMPFS_OPTIONS "mode=0700,size=72m,nr_inodes=32800"
/* CPUs tried for one create (see pin_cpus below) */
#define PIN_CPUS_MAX 16
#define INFO_MAX 128

struct PinStore {
        char *run_dir;
        char *pins_path;  /* <run_dir>/pins: the one host mount */
        int pinns_fd;     /* nsfs descriptor of the pin namespace */
        int dir_fd;       /* O_PATH: the pin tmpfs (run_dir inside the pin namespace) */
        bool created;     /* this process made the pin namespace */
        /* Linux 6.18 hands out namespace ids from per-CPU batches, so only namespaces made on
         * one CPU are ordered by age, and mnt_ns_loop() refuses a pin whose namespace has a
         * smaller id than the pinning one. We create the pin namespace and every user
         * namespace bound to the same CPU, and on a refusal try the other CPUs in turn. */
        int cpus[PIN_CPUS_MAX];
        size_t n_cpus;
        size_t cpu_idx; /* the CPU that worked last */
};

/* ---- helper children --------------------------------------------------------------------- */

enum step {
        STEP_NONE,
        STEP_AFFINITY,
        STEP_UNSHARE,
        STEP_PROPAGATION,
        STEP_PRIVATE_TMP,
        STEP_PIN_TMPFS,
        STEP_OPEN_NS,
        STEP_OPEN_ROOT,
        STEP_OPEN_DIR,
        STEP_SETNS,
        STEP_CHDIR,
        STEP_PIN_MOUNT,
        STEP_UNPIN,
        STEP_OPEN_MOUNTINFO,
        STEP_CHROOT,
        STEP_READ,
        STEP_PROBE_MOUNT,
        _STEP_MAX,
};

static const char *const step_text[_STEP_MAX] = {
        [STEP_NONE] = "run helper process",
        [STEP_AFFINITY] = "bind helper to a CPU",
        [STEP_UNSHARE] = "unshare the mount namespace",
        [STEP_PROPAGATION] = "set propagation of /",
        [STEP_PRIVATE_TMP] = "mount a private tmpfs on /tmp",
        [STEP_PIN_TMPFS] = "mount the pin tmpfs",
        [STEP_OPEN_NS] = "open /proc/self/ns/mnt",
        [STEP_OPEN_ROOT] = "open the namespace's root directory",
        [STEP_OPEN_DIR] = "open the pin directory",
        [STEP_SETNS] = "enter the namespace (setns)",
        [STEP_CHDIR] = "change to the pin directory",
        [STEP_PIN_MOUNT] = "bind-mount the namespace onto its pin",
        [STEP_UNPIN] = "unmount the pin",
        [STEP_OPEN_MOUNTINFO] = "open /proc/self/mountinfo",
        [STEP_CHROOT] = "chroot",
        [STEP_READ] = "read",
        [STEP_PROBE_MOUNT] = "mount a probe tmpfs",
};

/* Async-signal-safe "/proc/self/fd/<fd>" for a child. */
static void format_fd_path(char buf[static 32], int fd) {
        static const char prefix[] = "/proc/self/fd/";
        char digits[12];
        size_t n = 0, i = 0;

        memcpy(buf, prefix, sizeof prefix - 1);
        i = sizeof prefix - 1;
        do {
                digits[n++] = (char) ('0' + fd % 10);
                fd /= 10;
        } while (fd > 0 && n < sizeof digits);
        while (n > 0)
                buf[i++] = digits[--n];
        buf[i] = '\0';
}

static const char *child_step(const struct helper_status *s) {
        return s->step >= 0 && s->step < _STEP_MAX && step_text[s->step] ? step_text[s->step] :
                                                                            "run helper process";
}

static void close_fdp(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
                *fd = -1;
        }
}

static bool bind_cpu(int cpu) {
        cpu_set_t set;

        if (cpu < 0 || cpu >= CPU_SETSIZE)
                return true;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return sched_setaffinity(0, sizeof set, &set) >= 0;
}

/* Enter the namespace of nsfs descriptor fd; used by children. */
struct enter_args {
        struct helper_status s;
        int ns_fd;
        int dir_fd;         /* fchdir() here after entering, or -1 */
        const char *target; /* umount2(target, MNT_DETACH) relative to dir_fd, or NULL */
        const char *open_path; /* open this after entering, or NULL */
        int open_flags;
        int ret_fd;
};

static int enter_child(void *p) {
        struct enter_args *a = p;

        if (setns(a->ns_fd, CLONE_NEWNS) < 0)
                return helper_fail(&a->s, STEP_SETNS);
        if (a->dir_fd >= 0 && fchdir(a->dir_fd) < 0)
                return helper_fail(&a->s, STEP_CHDIR);
        if (a->target && umount2(a->target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                return helper_fail(&a->s, STEP_UNPIN);
        if (a->open_path) {
                a->ret_fd = open(a->open_path, a->open_flags | O_CLOEXEC);
                if (a->ret_fd < 0)
                        return helper_fail(&a->s, STEP_OPEN_DIR);
        }
        return 0;
}

/* ---- small helpers ----------------------------------------------------------------------- */

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* CLONE_NEWNS, another CLONE_NEW* or -errno (-ENOTTY: not an nsfs file). */
static int fd_nstype(int fd) {
        int t = ioctl(fd, NS_GET_NSTYPE);
        return t < 0 ? -errno : t;
}

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

static int path_is_mount_root(const char *path) {
        struct statx sx;
        struct stat a, b;
        char *parent;
        int r;

        if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0)
                return -errno;
        if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
                return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
        /* before Linux 5.8: a different device than the parent */
        if (asprintf(&parent, "%s/..", path) < 0)
                return -ENOMEM;
        r = stat(path, &a) < 0 || stat(parent, &b) < 0 ? -errno : a.st_dev != b.st_dev;
        free(parent);
        return r;
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

static int pinstore_cpu(const PinStore *ps, size_t attempt) {
        if (!ps || ps->n_cpus == 0)
                return -1;
        return ps->cpus[(ps->cpu_idx + attempt) % ps->n_cpus];
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

        if (!bind_cpu(a->cpu))
                return helper_fail(&a->s, STEP_AFFINITY);
        if (unshare(CLONE_NEWNS) < 0)
                return helper_fail(&a->s, STEP_UNSHARE);
        /* Slave, not private: a filesystem the host unmounts (a USB stick) is unmounted here
         * too, so the pin namespace never keeps one busy. run_dir is private in the host, so
         * the tmpfs below and the pins on it are private. */
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return helper_fail(&a->s, STEP_PROPAGATION);
        if (mount("nsd-pins", a->run_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  PINSTORE_TMPFS_OPTIONS) < 0)
                return helper_fail(&a->s, STEP_PIN_TMPFS);
        a->dir_fd = open(a->run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->dir_fd < 0)
                return helper_fail(&a->s, STEP_OPEN_DIR);
        a->ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (a->ns_fd < 0)
                return helper_fail(&a->s, STEP_OPEN_NS);
        return 0;
}

/* run_dir must be a private mount: an nsfs bind mount cannot be propagated to peers, so the
 * kernel refuses one on a shared mount (/run is shared under systemd). */
static int run_dir_make_private(const char *run_dir) {
        int r = path_is_mount_root(run_dir);
        if (r < 0)
                return log_error_errno(r, "Failed to check whether '%s' is a mount point: %m",
                                       run_dir);
        if (r == 0 && mount(run_dir, run_dir, NULL, MS_BIND, NULL) < 0)
                return log_error_errno(errno, "Failed to bind-mount '%s' onto itself: %m",
                                       run_dir);
        if (mount(NULL, run_dir, NULL, MS_PRIVATE, NULL) < 0)
                return log_error_errno(errno, "Failed to make '%s' a private mount: %m",
                                       run_dir);
        return 0;
}

/* The pin tmpfs, seen from the pin namespace: run_dir there. */
static int pinstore_open_dir(PinStore *ps) {
        struct enter_args a = {
                .ns_fd = ps->pinns_fd,
                .dir_fd = -1,
                .open_path = ps->run_dir,
                .open_flags = O_PATH | O_DIRECTORY,
                .ret_fd = -1,
        };
        struct statfs sfs;
        int r;

        r = helper_run(enter_child, &a, &a.s);
        if (r < 0) {
                close_fdp(&a.ret_fd);
                return log_error_errno(r, "Failed to open '%s' in the pin namespace: %s: %m",
                                       ps->run_dir, child_step(&a.s));
        }
        if (fstatfs(a.ret_fd, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC) {
                close_fdp(&a.ret_fd);
                return log_warning_errno(EUCLEAN, "'%s' in the pin namespace is not its tmpfs",
                                         ps->run_dir);
        }
        ps->dir_fd = a.ret_fd;
        return 0;
}

static int pinstore_create(PinStore *ps) {
        struct pinns_args a = { .ns_fd = -1, .dir_fd = -1 };
        size_t attempts = ps->n_cpus + 1, i;
        char src[32];
        int r = -EIO, fd;

        fd = open(ps->pins_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create '%s': %m", ps->pins_path);
        close(fd);

        /* Each CPU once, then once unbound. The host pin is refused (EINVAL, mnt_ns_loop) when
         * nsd's own namespace has a larger id than the new one: never for the initial
         * namespace, but on 6.18 it can happen when nsd runs in a namespace of its own (tests)
         * and the two were made on different CPUs. */
        for (i = 0; i < attempts; i++) {
                a = (struct pinns_args) { .cpu = pinstore_cpu(ps, i), .run_dir = ps->run_dir,
                                          .ns_fd = -1, .dir_fd = -1 };
                if (i == ps->n_cpus)
                        a.cpu = -1;
                r = helper_run(pinns_child, &a, &a.s);
                if (r < 0) {
                        close_fdp(&a.ns_fd);
                        close_fdp(&a.dir_fd);
                        if (a.s.step == STEP_AFFINITY)
                                continue;
                        return log_error_errno(r, "Failed to create the pin namespace: %s: %m",
                                               child_step(&a.s));
                }
                format_fd_path(src, a.ns_fd);
                if (mount(src, ps->pins_path, NULL, MS_BIND, NULL) >= 0)
                        break;
                r = -errno;
                close_fdp(&a.ns_fd);
                close_fdp(&a.dir_fd);
                if (r != -EINVAL)
                        break;
                log_debug("Pin of the pin namespace refused on CPU %d (namespace ids out of "
                          "order), retrying on another CPU", a.cpu);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to pin the pin namespace on '%s': %m",
                                       ps->pins_path);
        if (a.cpu >= 0 && ps->n_cpus > 0)
                ps->cpu_idx = i % ps->n_cpus;
        ps->pinns_fd = a.ns_fd;
        ps->dir_fd = a.dir_fd;
        ps->created = true;
        return 0;
}

int pinstore_open(const char *run_dir, PinStore **ret) {
        PinStore *ps;
        int fd, r;

        if (!run_dir || run_dir[0] != '/' || !ret)
                return -EINVAL;

        ps = calloc(1, sizeof *ps);
        if (!ps)
                return -ENOMEM;
        ps->pinns_fd = ps->dir_fd = -1;
        ps->run_dir = strdup(run_dir);
        if (!ps->run_dir || asprintf(&ps->pins_path, "%s/pins", run_dir) < 0) {
                ps->pins_path = NULL;
                r = -ENOMEM;
                goto fail;
        }
        pinstore_load_cpus(ps);

        if (mkdir(run_dir, 0755) < 0 && errno != EEXIST) {
                r = log_error_errno(errno, "Failed to create '%s': %m", run_dir);
                goto fail;
        }

        /* An existing pin namespace from an earlier nsd? */
        fd = open(ps->pins_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
                r = fd_nstype(fd);
                if (r == CLONE_NEWNS) {
                        ps->pinns_fd = fd;
                        r = pinstore_open_dir(ps);
                        if (r >= 0) {
                                log_debug("Adopted the pin namespace on '%s'", ps->pins_path);
                                *ret = ps;
                                return 0;
                        }
                        log_warning("The pin namespace on '%s' is unusable, replacing it; "
                                    "pins in it are lost", ps->pins_path);
                        close_fdp(&ps->pinns_fd);
                        if (umount2(ps->pins_path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                                log_warning_errno(errno, "Failed to unmount '%s', ignoring: %m",
                                                  ps->pins_path);
                } else {
                        close(fd);
                        if (r >= 0) {
                                r = log_error_errno(EEXIST, "'%s' pins a namespace that is not "
                                                    "a mount namespace (type 0x%x), refusing "
                                                    "to touch it", ps->pins_path, (unsigned) r);
                                goto fail;
                        }
                        /* ENOTTY: a plain file left from an earlier boot's layout; reuse */
                }
        } else if (errno != ENOENT) {
                r = log_error_errno(errno, "Failed to open '%s': %m", ps->pins_path);
                goto fail;
        }

        r = run_dir_make_private(run_dir);
        if (r < 0)
                goto fail;
        r = pinstore_create(ps);
        if (r < 0)
                goto fail;
        log_debug("Created the pin namespace on '%s'", ps->pins_path);
        *ret = ps;
        return 0;
fail:
        pinstore_free(ps);
        return r;
}

void pinstore_free(PinStore *ps) {
        if (!ps)
                return;
        /* The pins stay: they are what survives a restart. */
        close_fdp(&ps->pinns_fd);
        close_fdp(&ps->dir_fd);
        free(ps->run_dir);
        free(ps->pins_path);
        free(ps);
}

void pinstore_pin_name(const PinStore *ps, uid_t uid, char *buf, size_t size) {
        if (!buf || size == 0)
                return;
        if (!ps)
                buf[0] = '\0';
        else
                snprintf(buf, size, "%s:%u", ps->pins_path, (unsigned) uid);
}

/* ---- user namespaces --------------------------------------------------------------------- */

struct create_args {
        struct helper_status s;
        int cpu;
        bool propagation_private;
        bool private_tmp;
        int pinns_fd; /* -1: do not pin */
        int dir_fd;
        const char *pin_name;
        int ns_fd;
        int root_fd;
};

static int create_child(void *p) {
        struct create_args *a = p;
        char src[32];

        if (!bind_cpu(a->cpu))
                return helper_fail(&a->s, STEP_AFFINITY);
        if (unshare(CLONE_NEWNS) < 0)
                return helper_fail(&a->s, STEP_UNSHARE);
        if (mount(NULL, "/", NULL, MS_REC | (a->propagation_private ? MS_PRIVATE : MS_SLAVE),
                  NULL) < 0)
                return helper_fail(&a->s, STEP_PROPAGATION);
        if (a->private_tmp &&
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
                return helper_fail(&a->s, STEP_PRIVATE_TMP);
        a->ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (a->ns_fd < 0)
                return helper_fail(&a->s, STEP_OPEN_NS);
        a->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->root_fd < 0)
                return helper_fail(&a->s, STEP_OPEN_ROOT);
        if (a->pinns_fd < 0)
                return 0;

        /* The pin: a mount whose target lies in the pin namespace must be made from inside
         * it (check_mnt), and the pin namespace is older than this one (mnt_ns_loop). */
        if (setns(a->pinns_fd, CLONE_NEWNS) < 0)
                return helper_fail(&a->s, STEP_SETNS);
        if (fchdir(a->dir_fd) < 0)
                return helper_fail(&a->s, STEP_CHDIR);
        format_fd_path(src, a->ns_fd);
        if (mount(src, a->pin_name, NULL, MS_BIND, NULL) < 0)
                return helper_fail(&a->s, STEP_PIN_MOUNT);
        return 0;
}

/* Create the empty pin file <uid> (or reuse a stale one); -EEXIST when it pins a namespace. */
static int pin_file_prepare(PinStore *ps, uid_t uid, const char *name) {
        int fd, t;

        fd = openat(ps->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
                close(fd);
                return 0;
        }
        if (errno != EEXIST)
                return log_error_errno(errno, "Failed to create pin file '%s:%s': %m",
                                       ps->pins_path, name);
        fd = openat(ps->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open pin file '%s:%s': %m",
                                       ps->pins_path, name);
        t = fd_nstype(fd);
        close(fd);
        if (t >= 0)
                return log_error_errno(EEXIST, "uid %u already has a pinned namespace at "
                                       "'%s:%s', refusing to replace it", (unsigned) uid,
                                       ps->pins_path, name);
        return 0; /* stale empty file from an interrupted create: reuse it */
}

static void pin_info_write(PinStore *ps, uid_t uid, const char *name, uint64_t created) {
        char path[32], text[INFO_MAX];
        int fd, n;
        ssize_t w;

        snprintf(path, sizeof path, "%s.info", name);
        n = snprintf(text, sizeof text, "created_usec=%" PRIu64 "\n", created);
        fd = openat(ps->dir_fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                log_warning_errno(errno, "Failed to write '%s:%s' of uid %u, its creation time "
                                  "will be unknown after a restart: %m", ps->pins_path, path,
                                  (unsigned) uid);
                return;
        }
        w = write(fd, text, (size_t) n);
        if (w != n)
                log_warning_errno(w < 0 ? errno : EIO, "Failed to write '%s:%s' of uid %u, "
                                  "ignoring: %m", ps->pins_path, path, (unsigned) uid);
        close(fd);
}

static UserNs *userns_new(uid_t uid) {
        UserNs *ns = calloc(1, sizeof *ns);
        if (!ns)
                return NULL;
        ns->uid = uid;
        ns->ns_fd = ns->root_fd = -1;
        return ns;
}

int userns_create(PinStore *ps, uid_t uid, const NsSetup *setup, UserNs **ret) {
        static const NsSetup default_setup = {};
        char name[16];
        struct create_args a = { .ns_fd = -1, .root_fd = -1 };
        struct stat st;
        size_t attempts, i;
        UserNs *ns;
        int r = -EIO;

        if (!ret || uid == (uid_t) -1)
                return -EINVAL;
        if (!setup)
                setup = &default_setup;

        snprintf(name, sizeof name, "%u", (unsigned) uid);
        if (ps) {
                r = pin_file_prepare(ps, uid, name);
                if (r < 0)
                        return r;
        }

        /* Each CPU once, the one that worked last first, then once unbound. */
        attempts = ps ? ps->n_cpus + 1 : 1;
        for (i = 0; i < attempts; i++) {
                a = (struct create_args) {
                        .cpu = ps && i < ps->n_cpus ? pinstore_cpu(ps, i) : -1,
                        .propagation_private = setup->propagation_private,
                        .private_tmp = setup->private_tmp,
                        .pinns_fd = ps ? ps->pinns_fd : -1,
                        .dir_fd = ps ? ps->dir_fd : -1,
                        .pin_name = name,
                        .ns_fd = -1,
                        .root_fd = -1,
                };
                r = helper_run(create_child, &a, &a.s);
                if (r >= 0)
                        break;
                if (a.s.step == STEP_AFFINITY)
                        continue; /* a cpuset forbids this CPU: try the next one */
                if (a.s.step != STEP_PIN_MOUNT)
                        break;    /* no namespace: fail below */
                if (r != -EINVAL || i + 1 == attempts)
                        break;    /* a namespace, but no pin */
                /* mnt_ns_loop() on 6.18: the new namespace got a smaller id than the pin
                 * namespace. Throw it away and make it again on another CPU. */
                log_debug("Pin of uid %u refused on CPU %d (namespace ids out of order), "
                          "retrying on another CPU", (unsigned) uid, a.cpu);
                close_fdp(&a.ns_fd);
                close_fdp(&a.root_fd);
        }
        if (r < 0 && a.s.step != STEP_PIN_MOUNT) {
                close_fdp(&a.ns_fd);
                close_fdp(&a.root_fd);
                if (ps)
                        (void) unlinkat(ps->dir_fd, name, 0);
                return log_error_errno(r, "Failed to create the mount namespace of uid %u: "
                                       "%s: %m", (unsigned) uid, child_step(&a.s));
        }

        ns = userns_new(uid);
        if (!ns) {
                close_fdp(&a.ns_fd);
                close_fdp(&a.root_fd);
                if (ps)
                        (void) unlinkat(ps->dir_fd, name, 0);
                return -ENOMEM;
        }
        ns->ns_fd = a.ns_fd;
        ns->root_fd = a.root_fd;
        ns->created_usec = now_usec();
        if (fstat(ns->ns_fd, &st) >= 0)
                ns->ns_inode = (uint64_t) st.st_ino;

        if (ps && r >= 0) {
                ns->pinned = true;
                if (ps->n_cpus > 0 && a.cpu >= 0)
                        ps->cpu_idx = (ps->cpu_idx + i) % ps->n_cpus;
                pin_info_write(ps, uid, name, ns->created_usec);
        } else if (ps) {
                if (unlinkat(ps->dir_fd, name, 0) < 0 && errno != ENOENT)
                        log_debug_errno(errno, "Failed to remove pin file '%s:%s': %m",
                                        ps->pins_path, name);
                log_event(LOG_WARNING, r, uid, "pin-refused",
                          "Failed to pin the mount namespace of uid %u: %s: %m; it is kept "
                          "alive by descriptor only and will not survive an nsd restart",
                          (unsigned) uid, r == -EINVAL ? "the kernel's mnt_ns_loop check "
                          "refused it on every CPU" : child_step(&a.s));
        }
        log_debug("Created mount namespace %" PRIu64 " of uid %u%s", ns->ns_inode,
                  (unsigned) uid, ns->pinned ? ", pinned" : ", NOT pinned");
        *ret = ns;
        return 0;
}

void userns_free(UserNs *ns) {
        if (!ns)
                return;
        close_fdp(&ns->ns_fd);
        close_fdp(&ns->root_fd);
        free(ns);
}

int userns_release(PinStore *ps, UserNs *ns) {
        char name[16], info[32];
        struct stat st;
        int fd, r = 0;

        if (!ns)
                return -EINVAL;
        if (!ps || !ns->pinned)
                goto done;

        snprintf(name, sizeof name, "%u", (unsigned) ns->uid);
        snprintf(info, sizeof info, "%s.info", name);

        /* Only remove the pin if it still pins this very namespace. */
        fd = openat(ps->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                r = errno == ENOENT ? 0 : log_warning_errno(errno, "Failed to open pin '%s:%s', "
                                                            "ignoring: %m", ps->pins_path, name);
                goto done;
        }
        if (fstat(fd, &st) < 0 || fd_nstype(fd) != CLONE_NEWNS ||
            (uint64_t) st.st_ino != ns->ns_inode) {
                close(fd);
                log_warning("Pin '%s:%s' does not pin namespace %" PRIu64 " of uid %u, "
                            "leaving it", ps->pins_path, name, ns->ns_inode, (unsigned) ns->uid);
                goto done;
        }
        close(fd);

        struct enter_args a = { .ns_fd = ps->pinns_fd, .dir_fd = ps->dir_fd, .target = name,
                                .ret_fd = -1 };
        r = helper_run(enter_child, &a, &a.s);
        if (r < 0) {
                log_error_errno(r, "Failed to unpin the mount namespace of uid %u: %s: %m",
                                (unsigned) ns->uid, child_step(&a.s));
                goto done;
        }
        if (unlinkat(ps->dir_fd, name, 0) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove '%s:%s', ignoring: %m", ps->pins_path,
                                  name);
        if (unlinkat(ps->dir_fd, info, 0) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove '%s:%s', ignoring: %m", ps->pins_path,
                                  info);
        log_debug("Unpinned mount namespace %" PRIu64 " of uid %u", ns->ns_inode,
                  (unsigned) ns->uid);
done:
        userns_free(ns);
        return r;
}

/* ---- adoption ---------------------------------------------------------------------------- */

/* One child enters every namespace in turn and opens its root. */
struct roots_args {
        struct helper_status s;
        size_t n;
        const int *ns_fds;
        int *root_fds; /* -1 and errs[i] set on failure */
        int *errs;
};

static int roots_child(void *p) {
        struct roots_args *a = p;

        for (size_t i = 0; i < a->n; i++) {
                if (setns(a->ns_fds[i], CLONE_NEWNS) < 0) {
                        a->errs[i] = errno;
                        continue;
                }
                a->root_fds[i] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (a->root_fds[i] < 0)
                        a->errs[i] = errno;
        }
        return 0;
}

static uint64_t pin_info_read(PinStore *ps, const char *name) {
        char path[32], text[INFO_MAX];
        uint64_t v = 0;
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "%s.info", name);
        fd = openat(ps->dir_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                log_debug_errno(errno, "Failed to open '%s:%s', creation time unknown: %m",
                                ps->pins_path, path);
                return 0;
        }
        n = read(fd, text, sizeof text - 1);
        close(fd);
        if (n <= 0)
                return 0;
        text[n] = '\0';
        if (sscanf(text, "created_usec=%" SCNu64, &v) != 1) {
                log_debug("'%s:%s' has no created_usec=, ignoring", ps->pins_path, path);
                return 0;
        }
        return v;
}

struct pin_entry {
        uid_t uid;
        int ns_fd;
        int root_fd;
        int err;
};

int pinstore_adopt_all(PinStore *ps, void (*cb)(UserNs *ns, void *userdata), void *userdata) {
        struct pin_entry *e = NULL;
        size_t n = 0, cap = 0;
        int *ns_fds = NULL, *root_fds = NULL, *errs = NULL;
        struct dirent *de;
        DIR *d;
        int fd, r = 0, adopted = 0;

        if (!ps || !cb)
                return -EINVAL;

        fd = openat(ps->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open the pin directory '%s': %m",
                                       ps->pins_path);
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return log_error_errno(errno, "Failed to read the pin directory '%s': %m",
                                       ps->pins_path);
        }
        while ((errno = 0, de = readdir(d))) {
                uid_t uid;
                int t, nfd;

                if (!parse_uid(de->d_name, &uid))
                        continue;
                nfd = openat(ps->dir_fd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0) {
                        log_warning_errno(errno, "Failed to open pin '%s:%s', skipping: %m",
                                          ps->pins_path, de->d_name);
                        continue;
                }
                t = fd_nstype(nfd);
                if (t != CLONE_NEWNS) {
                        close(nfd);
                        if (t == -ENOTTY) {
                                /* an empty file from an interrupted create: nothing pinned */
                                log_warning("Pin '%s:%s' pins nothing, removing it",
                                            ps->pins_path, de->d_name);
                                (void) unlinkat(ps->dir_fd, de->d_name, 0);
                        } else
                                log_warning_errno(t < 0 ? t : EINVAL, "Pin '%s:%s' is not a "
                                                  "mount namespace, skipping: %m",
                                                  ps->pins_path, de->d_name);
                        continue;
                }
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 64;
                        struct pin_entry *ne = realloc(e, ncap * sizeof *e);
                        if (!ne) {
                                close(nfd);
                                r = -ENOMEM;
                                goto finish;
                        }
                        e = ne;
                        cap = ncap;
                }
                e[n++] = (struct pin_entry) { .uid = uid, .ns_fd = nfd, .root_fd = -1 };
        }
        if (errno != 0) {
                r = log_error_errno(errno, "Failed to read the pin directory '%s': %m",
                                    ps->pins_path);
                goto finish;
        }
        if (n == 0)
                goto finish;

        ns_fds = calloc(n, sizeof *ns_fds);
        root_fds = calloc(n, sizeof *root_fds);
        errs = calloc(n, sizeof *errs);
        if (!ns_fds || !root_fds || !errs) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < n; i++) {
                ns_fds[i] = e[i].ns_fd;
                root_fds[i] = -1;
        }
        struct roots_args ra = { .n = n, .ns_fds = ns_fds, .root_fds = root_fds, .errs = errs };
        r = helper_run(roots_child, &ra, &ra.s);
        for (size_t i = 0; i < n; i++) {
                e[i].root_fd = root_fds[i];
                e[i].err = root_fds[i] < 0 ? (errs[i] ? errs[i] : EIO) : 0;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to open the roots of pinned namespaces: %s: %m",
                                child_step(&ra.s));
                goto finish;
        }

        for (size_t i = 0; i < n; i++) {
                char name[16];
                struct stat st;
                UserNs *ns;

                if (e[i].err) {
                        log_warning_errno(e[i].err, "Failed to enter the pinned namespace of "
                                          "uid %u, skipping: %m", (unsigned) e[i].uid);
                        continue;
                }
                ns = userns_new(e[i].uid);
                if (!ns) {
                        r = -ENOMEM;
                        goto finish;
                }
                ns->ns_fd = e[i].ns_fd;
                ns->root_fd = e[i].root_fd;
                e[i].ns_fd = e[i].root_fd = -1;
                if (fstat(ns->ns_fd, &st) >= 0)
                        ns->ns_inode = (uint64_t) st.st_ino;
                snprintf(name, sizeof name, "%u", (unsigned) ns->uid);
                ns->created_usec = pin_info_read(ps, name);
                ns->pinned = ns->adopted = true;
                log_debug("Adopted mount namespace %" PRIu64 " of uid %u", ns->ns_inode,
                          (unsigned) ns->uid);
                adopted++;
                cb(ns, userdata);
        }
        r = adopted;
finish:
        for (size_t i = 0; i < n; i++) {
                close_fdp(&e[i].ns_fd);
                close_fdp(&e[i].root_fd);
        }
        free(e);
        free(ns_fds);
        free(root_fds);
        free(errs);
        closedir(d);
        return r;
}

/* ---- mount tables ------------------------------------------------------------------------ */

struct mountinfo_args {
        struct helper_status s;
        int ns_fd;
        int fd;
};

static int mountinfo_child(void *p) {
        struct mountinfo_args *a = p;
        int proc_fd;

        /* /proc from the caller's namespace: the user may have none of their own. */
        proc_fd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
                return helper_fail(&a->s, STEP_OPEN_MOUNTINFO);
        if (setns(a->ns_fd, CLONE_NEWNS) < 0) {
                close(proc_fd);
                return helper_fail(&a->s, STEP_SETNS);
        }
        /* the seq file takes namespace and root at open: the parent reads it */
        a->fd = openat(proc_fd, "mountinfo", O_RDONLY | O_CLOEXEC);
        close(proc_fd);
        if (a->fd < 0)
                return helper_fail(&a->s, STEP_OPEN_MOUNTINFO);
        return 0;
}

/* /proc/self/mountinfo of a process inside ns, opened for reading. */
static int mountinfo_open(const UserNs *ns) {
        struct mountinfo_args a = { .ns_fd = ns->ns_fd, .fd = -1 };
        int r;

        r = helper_run(mountinfo_child, &a, &a.s);
        if (r < 0) {
                close_fdp(&a.fd);
                return log_error_errno(r, "Failed to read the mount table of uid %u: %s: %m",
                                       (unsigned) ns->uid, child_step(&a.s));
        }
        return a.fd;
}

int userns_read_mountinfo(const UserNs *ns, size_t max, char **ret, size_t *ret_len) {
        struct mountinfo_args a = { .fd = -1 };
        size_t len = 0, cap = 0;
        char *buf = NULL;
        int r;

        if (!ns || ns->ns_fd < 0 || !ret)
                return -EINVAL;

        a.fd = mountinfo_open(ns);
        if (a.fd < 0)
                return a.fd;
        for (;;) {
                ssize_t n;

                if (cap - len < 4096) {
                        size_t ncap = cap ? cap * 2 : 16384;
                        char *nb;

                        if (ncap > max + 4097)
                                ncap = max + 4097;
                        if (ncap <= cap) {
                                r = -EFBIG;
                                goto fail;
                        }
                        nb = realloc(buf, ncap);
                        if (!nb) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        buf = nb;
                        cap = ncap;
                }
                n = read(a.fd, buf + len, cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = log_error_errno(errno, "Failed to read the mount table of uid %u: %m",
                                            (unsigned) ns->uid);
                        goto fail;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max) {
                        r = -EFBIG;
                        goto fail;
                }
        }
        close_fdp(&a.fd);
        buf[len] = '\0';
        *ret = buf;
        if (ret_len)
                *ret_len = len;
        return 0;
fail:
        close_fdp(&a.fd);
        free(buf);
        return r;
}

int userns_count_mounts(const UserNs *ns) {
        char buf[16384];
        int fd, lines = 0;
        ssize_t n;

        if (!ns || ns->ns_fd < 0)
                return -EINVAL;
        fd = mountinfo_open(ns);
        if (fd < 0)
                return fd;
        while ((n = read(fd, buf, sizeof buf)) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = log_error_errno(errno, "Failed to read the mount table of uid "
                                                "%u: %m", (unsigned) ns->uid);
                        close(fd);
                        return r;
                }
                for (ssize_t i = 0; i < n; i++)
                        lines += buf[i] == '\n';
        }
        close(fd);
        return lines;
}

/* ---- kernel feature probes --------------------------------------------------------------- */

struct probe_args {
        struct helper_status s;
        const char *dir; /* a directory to mount a probe tmpfs on */
        int root_fd;     /* out: root of the throwaway namespace */
        int ns_fd;       /* out: keeps it alive */
        int result;      /* 0 or errno of the probed call */
        long lines;
        bool owner_private; /* mount_setattr(MOUNT_ATTR_OWNER_PRIVATE) instead of keeping */
};

static int probe_throwaway_ns(struct probe_args *a) {
        if (unshare(CLONE_NEWNS) < 0)
                return helper_fail(&a->s, STEP_UNSHARE);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return helper_fail(&a->s, STEP_PROPAGATION);
        return 0;
}

/* F1: setns() with a directory descriptor. nsd hands out O_PATH roots, so that is what
 * counts; a plain O_RDONLY directory is tried too, for the log. Stock kernels: EBADF for
 * O_PATH (fdget() refuses it), EINVAL for a directory. */
static int probe_setns_child(void *p) {
        struct probe_args *a = p;
        int fd;

        if (probe_throwaway_ns(a))
                return 1;
        fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return helper_fail(&a->s, STEP_OPEN_ROOT);
        a->lines = setns(fd, CLONE_NEWNS) < 0 ? errno : 0;
        close(fd);
        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return helper_fail(&a->s, STEP_OPEN_ROOT);
        a->result = setns(fd, CLONE_NEWNS) < 0 ? errno : 0;
        close(fd);
        return 0;
}

/* A throwaway namespace with a tmpfs on a->dir; F3, and F4 when owner_private. */
static int probe_ns_child(void *p) {
        struct probe_args *a = p;

        if (probe_throwaway_ns(a))
                return 1;
        if (mount("nsd-probe", a->dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,nr_inodes=16") < 0)
                return helper_fail(&a->s, STEP_PROBE_MOUNT);
        if (a->owner_private) {
                struct mount_attr attr = { .attr_set = MOUNT_ATTR_OWNER_PRIVATE };
                a->result = mount_setattr(AT_FDCWD, a->dir, 0, &attr, sizeof attr) < 0 ? errno : 0;
                return 0;
        }
        a->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->root_fd < 0)
                return helper_fail(&a->s, STEP_OPEN_ROOT);
        a->ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (a->ns_fd < 0)
                return helper_fail(&a->s, STEP_OPEN_NS);
        return 0;
}

/* F2: chroot into the throwaway namespace's root, count /proc/self/mountinfo lines */
static int probe_chroot_child(void *p) {
        struct probe_args *a = p;
        char buf[4096];
        ssize_t n;
        int fd;

        if (fchdir(a->root_fd) < 0)
                return helper_fail(&a->s, STEP_CHDIR);
        if (chroot(".") < 0)
                return helper_fail(&a->s, STEP_CHROOT);
        fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return helper_fail(&a->s, STEP_OPEN_MOUNTINFO);
        a->lines = 0;
        while ((n = read(fd, buf, sizeof buf)) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        close(fd);
                        return helper_fail(&a->s, STEP_READ);
                }
                for (ssize_t i = 0; i < n; i++)
                        a->lines += buf[i] == '\n';
        }
        close(fd);
        return 0;
}

static const char *probe_dir(void) {
        static const char *const dirs[] = { "/tmp", "/mnt", "/run", "/var/tmp", "/dev" };
        struct stat st;

        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
                if (lstat(dirs[i], &st) >= 0 && S_ISDIR(st.st_mode))
                        return dirs[i];
        return NULL;
}

uint32_t kernel_features_probe(void) {
        const char *dir = probe_dir();
        uint32_t features = 0;
        struct probe_args a;
        int r;

        /* F1 */
        a = (struct probe_args) { .root_fd = -1, .ns_fd = -1 };
        r = helper_run(probe_setns_child, &a, &a.s);
        if (r < 0)
                log_warning_errno(r, "Kernel probe F1 (setns on a directory) failed: %s: %m, "
                                  "assuming absent", child_step(&a.s));
        else {
                if (a.result == 0)
                        features |= NSD_FEATURE_SETNS_DIRFD;
                log_debug("Kernel probe F1: setns() on an O_PATH directory: %s, on an O_RDONLY "
                          "directory: %s: %s", a.result ? strerror(a.result) : "works",
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
        r = helper_run(probe_ns_child, &a, &a.s);
        if (r < 0)
                log_warning_errno(r, "Kernel probes F2, F3 failed: %s: %m, assuming absent",
                                  child_step(&a.s));
        else {
                int root_fd = a.root_fd, ns_fd = a.ns_fd;

                a = (struct probe_args) { .root_fd = root_fd, .ns_fd = -1 };
                r = helper_run(probe_chroot_child, &a, &a.s);
                if (r < 0)
                        log_warning_errno(r, "Kernel probe F2 (mount table after chroot) "
                                          "failed: %s: %m, assuming absent", child_step(&a.s));
                else {
                        if (a.lines > 0)
                                features |= NSD_FEATURE_PROC_MOUNTS_ROOT;
                        log_debug("Kernel probe F2: a process chrooted into another namespace "
                                  "reads %ld mountinfo lines: %s", a.lines,
                                  a.lines > 0 ? "present" : "absent");
                }

                /* F3: fspick from nsd's namespace a mount of the throwaway one (ns_fd keeps
                 * that namespace alive until here) */
                int pfd = fspick(root_fd, dir + 1, FSPICK_CLOEXEC | FSPICK_NO_AUTOMOUNT);
                int err = pfd < 0 ? errno : 0;
                if (pfd >= 0) {
                        if (fsconfig(pfd, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0)
                                err = errno;
                        close(pfd);
                }
                if (err == EINVAL)
                        features |= NSD_FEATURE_FSPICK_CHECK;
                else if (err != 0)
                        log_warning_errno(err, "Kernel probe F3 (fspick across namespaces) "
                                          "failed unexpectedly: %m, assuming absent");
                log_debug("Kernel probe F3: fspick reconfigure of another namespace's mount "
                          "%s", err == 0 ? "succeeds: absent" :
                                err == EINVAL ? "refused: present" : "failed: absent");
                close(root_fd);
                close(ns_fd);
        }

        /* F4 */
        a = (struct probe_args) { .dir = dir, .root_fd = -1, .ns_fd = -1, .owner_private = true };
        r = helper_run(probe_ns_child, &a, &a.s);
        if (r < 0)
                log_warning_errno(r, "Kernel probe F4 (owner-private mounts) failed: %s: %m, "
                                  "assuming absent", child_step(&a.s));
        else {
                if (a.result == 0)
                        features |= NSD_FEATURE_OWNER_PRIVATE;
                log_debug_errno(a.result, "Kernel probe F4: MOUNT_ATTR_OWNER_PRIVATE %s (%m)",
                                a.result == 0 ? "accepted: present" : "refused: absent");
        }
        return features;
}
