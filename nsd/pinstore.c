/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pinstore.c: nsd's pin namespace and the pins in it, and re-adoption of pinned namespaces
 * after a restart. See pinstore.h for the layout and DESIGN.md "Lifetime and restarts" for
 * why. Operations inside the pin namespace run in helper children (helper.c).
 */
#include "pinstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "helper.h"
#include "log.h"
#include "pinstore-internal.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

/* Pins: one empty file (an inode) and one info file (an inode and a page) per user; room
 * for 16384 users. */
#define PINSTORE_TMPFS_OPTIONS "mode=0700,size=72m,nr_inodes=32800"
#define INFO_MAX 128

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

int pinstore_cpu(const PinStore *ps, size_t attempt) {
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

        if (!helper_bind_cpu(a->cpu))
                return helper_fail(&a->s, HELPER_STEP_AFFINITY);
        if (unshare(CLONE_NEWNS) < 0)
                return helper_fail(&a->s, HELPER_STEP_UNSHARE);
        /* Slave, not private: a filesystem the host unmounts (a USB stick) is unmounted here
         * too, so the pin namespace never keeps one busy. run_dir is private in the host, so
         * the tmpfs below and the pins on it are private. */
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return helper_fail(&a->s, HELPER_STEP_PROPAGATION);
        if (mount("nsd-pins", a->run_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  PINSTORE_TMPFS_OPTIONS) < 0)
                return helper_fail(&a->s, HELPER_STEP_PIN_TMPFS);
        a->dir_fd = open(a->run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->dir_fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_DIR);
        a->ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (a->ns_fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_NS);
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
        struct helper_enter_args a = {
                .ns_fd = ps->pinns_fd,
                .dir_fd = -1,
                .open_path = ps->run_dir,
                .open_flags = O_PATH | O_DIRECTORY,
                .ret_fd = -1,
        };
        struct statfs sfs;
        int r;

        r = helper_run(helper_enter_child, &a, &a.s);
        if (r < 0) {
                CLOSE_FD(a.ret_fd);
                return log_error_errno(r, "Failed to open '%s' in the pin namespace: %s: %m",
                                       ps->run_dir, helper_status_step(&a.s));
        }
        if (fstatfs(a.ret_fd, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC) {
                CLOSE_FD(a.ret_fd);
                return log_warning_errno(EUCLEAN, "'%s' in the pin namespace is not its tmpfs",
                                         ps->run_dir);
        }
        ps->dir_fd = a.ret_fd;
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
                a = (struct pinns_args) { .cpu = pinstore_cpu(ps, i), .run_dir = ps->run_dir,
                                          .ns_fd = -1, .dir_fd = -1 };
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
                        CLOSE_FD(ps->pinns_fd);
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
        CLOSE_FD(ps->pinns_fd);
        CLOSE_FD(ps->dir_fd);
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

/* ---- pin files --------------------------------------------------------------------------- */

/* Create the empty pin file <uid> (or reuse a stale one); -EEXIST when it pins a namespace. */
int pin_file_prepare(PinStore *ps, uid_t uid, const char *name) {
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

void pin_info_write(PinStore *ps, uid_t uid, const char *name, uint64_t created) {
        char path[32], text[INFO_MAX];
        _cleanup_close_ int fd = -1;
        ssize_t w;
        int n;

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
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
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
                                helper_status_step(&ra.s));
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
                CLOSE_FD(e[i].ns_fd);
                CLOSE_FD(e[i].root_fd);
        }
        free(e);
        free(ns_fds);
        free(root_fds);
        free(errs);
        return r;
}
