/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * userns.c: per-user mount namespaces: creating (and pinning) them, releasing them, reading
 * their mount tables. See userns.h, and pinstore.c for the pins.
 *
 * Helper processes. Every operation that must happen inside another mount namespace (create
 * one, pin into the pin namespace, unpin, read a table) runs in a helper child (helper.c):
 * clone(CLONE_VM | CLONE_VFORK | CLONE_FILES), so a descriptor it opens there is nsd's at once,
 * and setns()/unshare()/chroot() in it change nothing in nsd.
 */
#include "store/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "base/helper.h"
#include "base/log.h"
#include "cleanup.h"
#include "store/pinstore-internal.h"
#include "time-util.h"

/* ---- user namespaces --------------------------------------------------------------------- */

/* In a helper child: bind-mount ns_fd onto pin_name in the pin tmpfs (dir_fd) of the pin
 * namespace. A mount whose target lies in the pin namespace must be made from inside it
 * (check_mnt), and the pin namespace is older than the pinned one (mnt_ns_loop). Returns the
 * child's exit status. */
static int pin_child(struct helper_status *s, int pinns_fd, int dir_fd, int ns_fd,
                     const char *pin_name) {
        char src[32];

        if (setns(pinns_fd, CLONE_NEWNS) < 0)
                return helper_fail(s, HELPER_STEP_SETNS);
        if (fchdir(dir_fd) < 0)
                return helper_fail(s, HELPER_STEP_CHDIR);
        helper_fd_path(src, ns_fd);
        if (mount(src, pin_name, NULL, MS_BIND, NULL) < 0)
                return helper_fail(s, HELPER_STEP_PIN_MOUNT);
        return 0;
}

struct create_args {
        struct helper_status s;
        int cpu;
        bool propagation_private;
        int pinns_fd; /* -1: do not pin */
        int dir_fd;
        const char *pin_name;
        int ns_fd;
        int root_fd;
};

static int create_child(void *p) {
        struct create_args *a = p;
        int r;

        if ((r = helper_unshare_ns(&a->s, a->cpu, a->propagation_private ? MS_PRIVATE : MS_SLAVE)))
                return r;
        if ((r = helper_open_ns(&a->s, &a->ns_fd, &a->root_fd)))
                return r;
        if (a->pinns_fd < 0)
                return 0;
        return pin_child(&a->s, a->pinns_fd, a->dir_fd, a->ns_fd, a->pin_name);
}

UserNs *userns_new(uid_t uid) {
        UserNs *ns = calloc(1, sizeof *ns);
        if (!ns)
                return NULL;
        ns->uid = uid;
        ns->ns_fd = ns->root_fd = -1;
        return ns;
}

/* The new namespace as a UserNs (descriptors taken), or NULL without memory. */
static UserNs *userns_made(uid_t uid, int *ns_fd, int *root_fd) {
        UserNs *ns = userns_new(uid);
        struct stat st;

        if (!ns)
                return NULL;
        ns->ns_fd = TAKE_FD(*ns_fd);
        ns->root_fd = TAKE_FD(*root_fd);
        ns->created_usec = now_usec(CLOCK_REALTIME);
        if (fstat(ns->ns_fd, &st) >= 0)
                ns->ns_inode = (uint64_t) st.st_ino;
        return ns;
}

/* What both ways of creating do first: the arguments checked, the default setup where none is
 * given, and the pin of uid begun (with ps): -EAGAIN when one may exist, never a fresh
 * namespace in its place. */
static int userns_create_begin(PinStore *ps, uid_t uid, const NsSetup **setup, UserNs **ret) {
        static const NsSetup default_setup = {};
        int r;

        if (!ret || uid == (uid_t) -1)
                return -EINVAL;
        if (!*setup)
                *setup = &default_setup;
        r = ps ? pinstore_pin_begin(ps, uid) : 0;
        return r < 0 ? r : 0;
}

int userns_create(PinStore *ps, uid_t uid, const NsSetup *setup, UserNs **ret) {
        struct create_args a = { .ns_fd = -1, .root_fd = -1 };
        _cleanup_close_ int ns_fd = -1, root_fd = -1;
        bool pin_failed;
        size_t attempts, i;
        char name[16];
        UserNs *ns;
        int r;

        r = userns_create_begin(ps, uid, &setup, ret);
        if (r < 0)
                return r;
        snprintf(name, sizeof name, "%u", (unsigned) uid);

        /* Each CPU once, the one that worked last first, then once unbound. */
        attempts = ps ? ps->n_cpus + 1 : 1;
        for (i = 0; i < attempts; i++) {
                a = (struct create_args) {
                        .cpu = ps && i < ps->n_cpus ? pinstore_cpu(ps, i) : -1,
                        .propagation_private = setup->propagation_private,
                        .pinns_fd = ps ? ps->pinns_fd : -1,
                        .dir_fd = ps ? ps->dir_fd : -1,
                        .pin_name = name,
                        .ns_fd = -1,
                        .root_fd = -1,
                };
                r = helper_run(create_child, &a, &a.s);
                ns_fd = a.ns_fd;
                root_fd = a.root_fd;
                if (r >= 0)
                        break;
                if (a.s.step == HELPER_STEP_AFFINITY)
                        continue; /* a cpuset forbids this CPU: try the next one */
                if (a.s.step != HELPER_STEP_PIN_MOUNT)
                        break; /* no namespace: fail below */
                if (r != -EINVAL || i + 1 == attempts)
                        break; /* a namespace, but no pin */
                /* mnt_ns_loop() on 6.18: the new namespace got a smaller id than the pin
                 * namespace. Throw it away and make it again on another CPU. */
                log_debug("Pin of uid %u refused on CPU %d (namespace ids out of order), "
                          "retrying on another CPU",
                          (unsigned) uid, a.cpu);
                CLOSE_FD(ns_fd);
                CLOSE_FD(root_fd);
        }
        /* A pin that failed for a reason that may pass: the new namespace is empty, so
         * dropping it loses nothing, and the caller's retry gets one that survives a restart.
         * Only the kernel's refusal (EINVAL on every CPU) or another lasting error gives a
         * namespace alive by descriptor only. */
        pin_failed = r < 0 && a.s.step == HELPER_STEP_PIN_MOUNT;
        if (r < 0 && (!pin_failed || errno_may_pass(r))) {
                if (ps)
                        pinstore_pin_abandon(ps, uid);
                log_error_errno(r, "Failed to create the mount namespace of uid %u: %s: %m",
                                (unsigned) uid, helper_status_step(&a.s));
                return errno_may_pass(r) ? -EAGAIN : r;
        }
        if (ns_fd < 0 || root_fd < 0) {
                /* cannot happen: the child's last steps before pinning open both */
                if (ps)
                        pinstore_pin_abandon(ps, uid);
                return log_error_errno(EIO,
                                       "Failed to create the mount namespace of uid %u: "
                                       "the helper returned no descriptor",
                                       (unsigned) uid);
        }

        ns = userns_made(uid, &ns_fd, &root_fd);
        if (!ns) {
                if (ps)
                        pinstore_pin_abandon(ps, uid);
                return -ENOMEM;
        }

        if (ps && r >= 0) {
                ns->pinned = true;
                pinstore_pin_done(ps, uid, ns->created_usec, i, a.cpu >= 0);
        } else if (ps) {
                pinstore_pin_abandon(ps, uid);
                log_event(LOG_WARNING, r, uid, "pin-refused",
                          "Failed to pin the mount namespace of uid %u: %s: %m; it is kept "
                          "alive by descriptor only and will not survive an nsd restart",
                          (unsigned) uid,
                          r == -EINVAL ? "the kernel's mnt_ns_loop check "
                                         "refused it on every CPU"
                                       : helper_status_step(&a.s));
        }
        log_debug("Created mount namespace %" PRIu64 " of uid %u%s", ns->ns_inode, (unsigned) uid,
                  ns->pinned ? ", pinned" : ", NOT pinned");
        *ret = ns;
        return 0;
}

int userns_create_unpinned(PinStore *ps, uid_t uid, const NsSetup *setup, UserNs **ret) {
        struct create_args a;
        _cleanup_close_ int ns_fd = -1, root_fd = -1;
        size_t attempts;
        UserNs *ns;
        int r;

        r = userns_create_begin(ps, uid, &setup, ret);
        if (r < 0)
                return r;
        /* on the CPU that worked last for a pin (see userns_create()); the next one when a
         * cpuset forbids it, then unbound */
        attempts = ps ? ps->n_cpus + 1 : 1;
        for (size_t i = 0; i < attempts; i++) {
                a = (struct create_args) {
                        .cpu = ps && i < ps->n_cpus ? pinstore_cpu(ps, i) : -1,
                        .propagation_private = setup->propagation_private,
                        .pinns_fd = -1,
                        .dir_fd = -1,
                        .ns_fd = -1,
                        .root_fd = -1,
                };
                r = helper_run(create_child, &a, &a.s);
                ns_fd = a.ns_fd;
                root_fd = a.root_fd;
                if (r >= 0 || a.s.step != HELPER_STEP_AFFINITY)
                        break;
        }
        if (r >= 0 && (ns_fd < 0 || root_fd < 0))
                r = -EIO; /* cannot happen: the child's last steps open both */
        ns = r >= 0 ? userns_made(uid, &ns_fd, &root_fd) : NULL;
        if (!ns) {
                if (ps)
                        pinstore_pin_abandon(ps, uid);
                if (r >= 0)
                        return -ENOMEM;
                log_error_errno(r, "Failed to create the mount namespace of uid %u: %s: %m",
                                (unsigned) uid, helper_status_step(&a.s));
                return errno_may_pass(r) ? -EAGAIN : r;
        }
        log_debug("Created mount namespace %" PRIu64 " of uid %u, to set up before its pin",
                  ns->ns_inode, (unsigned) uid);
        *ret = ns;
        return 0;
}

void userns_abandon_created(PinStore *ps, UserNs *ns) {
        if (!ns)
                return;
        if (ps)
                pinstore_pin_abandon(ps, ns->uid);
        userns_free(ns);
}

void userns_free(UserNs *ns) {
        if (!ns)
                return;
        CLOSE_FD(ns->ns_fd);
        CLOSE_FD(ns->root_fd);
        free(ns);
}

int userns_unpin(PinStore *ps, UserNs *ns) {
        int r;

        if (!ns)
                return -EINVAL;
        if (!ps || !ns->pinned)
                return 0;
        /* only removes the pin if it still pins this very namespace */
        r = pinstore_unpin(ps, ns->uid, ns->ns_inode);
        if (r < 0)
                return r;
        ns->pinned = false;
        return 0;
}

int userns_release(PinStore *ps, UserNs *ns) {
        int r;

        if (!ns)
                return -EINVAL;
        r = userns_unpin(ps, ns);
        if (r < 0 && ps)
                /* the pin stays, and nsd no longer holds its namespace: the store adopts it
                 * again, so it is never lost nor replaced by a fresh one */
                pinstore_mark_pending(ps, ns->uid, r, "releasing it failed to unpin it");
        userns_free(ns);
        return r;
}

/* ---- adoption and pinning again ---------------------------------------------------------- */

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

/* One helper child enters each ns_fds[i] in turn and opens its root into root_fds[i] (-1 and
 * errs[i] set on failure). -errno when the child could not run at all (*s says why). */
static int userns_open_roots(const int *ns_fds, size_t n, int *root_fds, int *errs,
                             struct helper_status *s) {
        struct roots_args a = { .n = n, .ns_fds = ns_fds, .root_fds = root_fds, .errs = errs };
        int r;

        for (size_t i = 0; i < n; i++) {
                root_fds[i] = -1;
                errs[i] = 0;
        }
        if (n == 0)
                return 0;
        r = helper_run(roots_child, &a, &a.s);
        *s = a.s;
        return r;
}

int userns_adopt_fds(const uid_t *uids, int *ns_fds, size_t n, UserNs **ret, int *errs) {
        g_autofree int *root_fds = NULL;
        struct helper_status hs = { 0 };
        int r;

        if (n == 0)
                return 0;
        root_fds = g_new(int, n);
        for (size_t i = 0; i < n; i++)
                ret[i] = NULL;
        r = userns_open_roots(ns_fds, n, root_fds, errs, &hs);
        if (r < 0)
                return log_debug_errno(r, "Failed to enter %zu kept namespaces: %s: %m", n,
                                       helper_status_step(&hs));
        for (size_t i = 0; i < n; i++) {
                int t = fd_nstype(ns_fds[i]);
                if (t != CLONE_NEWNS) { /* setns() refused it anyway; say why */
                        CLOSE_FD(root_fds[i]);
                        errs[i] = t < 0 ? -t : EINVAL;
                }
        }
        for (size_t i = 0; i < n; i++) {
                struct stat st;
                UserNs *ns;

                if (root_fds[i] < 0)
                        continue;
                ns = userns_new(uids[i]);
                if (!ns) {
                        close(root_fds[i]);
                        errs[i] = ENOMEM;
                        continue;
                }
                ns->ns_fd = TAKE_FD(ns_fds[i]);
                ns->root_fd = root_fds[i];
                if (fstat(ns->ns_fd, &st) >= 0)
                        ns->ns_inode = (uint64_t) st.st_ino;
                ns->adopted = true;
                ret[i] = ns;
        }
        return 0;
}

struct repin_args {
        struct helper_status s;
        int pinns_fd;
        int dir_fd;
        int ns_fd;
        const char *pin_name;
};

static int repin_child(void *p) {
        struct repin_args *a = p;

        return pin_child(&a->s, a->pinns_fd, a->dir_fd, a->ns_fd, a->pin_name);
}

/* Pin ns, its pin file reserved already (pinstore_pin_begin()). again: a namespace that
 * lived without its pin (for the log). */
static int pin_reserved(PinStore *ps, UserNs *ns, bool again) {
        struct repin_args a = { .ns_fd = ns->ns_fd };
        char name[16];
        int r;

        snprintf(name, sizeof name, "%u", (unsigned) ns->uid);
        a.pinns_fd = ps->pinns_fd;
        a.dir_fd = ps->dir_fd;
        a.pin_name = name;
        r = helper_run(repin_child, &a, &a.s);
        if (r < 0) {
                pinstore_pin_abandon(ps, ns->uid);
                if (errno_may_pass(r))
                        return log_warning_errno(-EAGAIN,
                                                 "Failed to pin the namespace of uid %u%s, %s: "
                                                 "%s: %s",
                                                 (unsigned) ns->uid, again ? " again" : "",
                                                 again ? "retrying later" : "not handing it out",
                                                 helper_status_step(&a.s), g_strerror(-r));
                log_event(LOG_WARNING, r, ns->uid, "pin-refused",
                          "Failed to pin the namespace of uid %u%s: %s: %m; it stays alive by "
                          "descriptor (and the service manager's fd store) only",
                          (unsigned) ns->uid, again ? " again" : "",
                          r == -EINVAL ? "the kernel's mnt_ns_loop check refused it (the pin "
                                         "namespace is younger than it)"
                                       : helper_status_step(&a.s));
                return 0;
        }
        ns->pinned = true;
        pinstore_pin_done(ps, ns->uid, ns->created_usec, 0, false);
        return 0;
}

int userns_repin(PinStore *ps, UserNs *ns) {
        int r;

        if (!ps || !ns || ns->ns_fd < 0)
                return -EINVAL;
        if (ns->pinned)
                return 0;
        /* -EAGAIN when a pin of uid may exist (then it is adopted, never covered) */
        r = pinstore_pin_begin(ps, ns->uid);
        if (r < 0)
                return r;
        return pin_reserved(ps, ns, true);
}

int userns_pin_created(PinStore *ps, UserNs *ns) {
        if (!ns || ns->ns_fd < 0)
                return -EINVAL;
        if (!ps || ns->pinned)
                return 0;
        return pin_reserved(ps, ns, false);
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
                return helper_fail(&a->s, HELPER_STEP_OPEN_MOUNTINFO);
        if (setns(a->ns_fd, CLONE_NEWNS) < 0) {
                close(proc_fd);
                return helper_fail(&a->s, HELPER_STEP_SETNS);
        }
        /* the seq file takes namespace and root at open: the parent reads it */
        a->fd = openat(proc_fd, "mountinfo", O_RDONLY | O_CLOEXEC);
        close(proc_fd);
        if (a->fd < 0)
                return helper_fail(&a->s, HELPER_STEP_OPEN_MOUNTINFO);
        return 0;
}

int ns_open_mountinfo(int ns_fd, const char *whose) {
        struct mountinfo_args a = { .ns_fd = ns_fd, .fd = -1 };
        int r;

        r = helper_run(mountinfo_child, &a, &a.s);
        if (r < 0) {
                cleanup_closep(&a.fd);
                return log_error_errno(r, "Failed to read the mount table of %s: %s: %m", whose,
                                       helper_status_step(&a.s));
        }
        return a.fd;
}

static int mountinfo_open(const UserNs *ns) {
        char whose[32];

        snprintf(whose, sizeof whose, "uid %u", (unsigned) ns->uid);
        return ns_open_mountinfo(ns->ns_fd, whose);
}

int ns_read_mountinfo_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        if (fd < 0 || !ret)
                return -EINVAL;
        for (;;) {
                ssize_t n;

                if (cap - len < 4096) {
                        size_t ncap = cap ? cap * 2 : 16384;
                        char *nb;

                        if (ncap > max + 4097)
                                ncap = max + 4097;
                        if (ncap <= cap)
                                return -EFBIG;
                        nb = realloc(buf, ncap);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        cap = ncap;
                }
                n = pread(fd, buf + len, cap - len - 1, (off_t) len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max)
                        return -EFBIG;
        }
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        *ret = TAKE_PTR(buf);
        return 0;
}

int ns_read_mountinfo(int ns_fd, const char *whose, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;
        int r;

        if (ns_fd < 0 || !ret)
                return -EINVAL;

        fd = ns_open_mountinfo(ns_fd, whose);
        if (fd < 0)
                return fd;
        r = ns_read_mountinfo_fd(fd, max, ret, ret_len);
        if (r < 0 && r != -EFBIG && r != -ENOMEM)
                return log_error_errno(-r, "Failed to read the mount table of %s: %m", whose);
        return r;
}

int userns_read_mountinfo(const UserNs *ns, size_t max, char **ret, size_t *ret_len) {
        char whose[32];

        if (!ns || ns->ns_fd < 0 || !ret)
                return -EINVAL;
        snprintf(whose, sizeof whose, "uid %u", (unsigned) ns->uid);
        return ns_read_mountinfo(ns->ns_fd, whose, max, ret, ret_len);
}

int userns_count_mounts(const UserNs *ns) {
        _cleanup_close_ int fd = -1;
        long lines;

        if (!ns || ns->ns_fd < 0)
                return -EINVAL;
        fd = mountinfo_open(ns);
        if (fd < 0)
                return fd;
        lines = helper_count_lines(fd);
        if (lines < 0)
                return log_error_errno(errno, "Failed to read the mount table of uid %u: %m",
                                       (unsigned) ns->uid);
        return lines > INT_MAX ? INT_MAX : (int) lines;
}
