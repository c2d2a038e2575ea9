/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * private.c: mode private and HIDE, see private.h.
 *
 * Helper children. setfsuid() changes the credentials of the calling thread only, and nsd
 * must not walk paths or set attributes with a user's fsuid by accident, so every step that
 * needs another fsuid runs in a helper child with its own credentials that calls only plain
 * system calls and reports through its argument struct. The user database is never asked
 * in a child: nsd has other threads (policy.c's), and a child cloned while one of them held
 * a lock (malloc's, NSS's, nscd's socket) would wait for it for good. A user's groups are
 * looked up before its walk starts, by policy_uid_identity() (LookupTimeoutSec=), and the
 * child gets them in its argument.
 *
 * The walk (step 1) can hang in a FUSE file system, so it runs in a watched child (child.c)
 * with a deadline and hands the O_PATH descriptor back by SCM_RIGHTS; the attribute (step 3)
 * in a vfork()ed one (helper.c), which shares nsd's descriptor table.
 *
 * How a mount is found and hidden, safely against a user who changes paths under nsd:
 *  1. resolve: openat2(path, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) with the
 *     walking fsuid (root, or the asking user), then statx(fd, "", AT_EMPTY_PATH, mask 0)
 *     for the mount id and STATX_ATTR_MOUNT_ROOT. Mask 0 because FUSE refuses getattr to
 *     every process but the mounting user's (fuse_allow_current_process()) unless nothing is
 *     asked for; the mount id and the attribute come from the VFS.
 *  2. check: the watch compares the mount id with the one it read in mountinfo (a user who
 *     unmounted and put something else there in between gets nothing hidden); HIDE looks the
 *     id up in root's mountinfo for the file system type and user_id=.
 *  3. set: setfsuid(uid) (checked: without CAP_SETUID it silently keeps the old fsuid, which
 *     would make root the owner) and mount_setattr(fd, "", AT_EMPTY_PATH, OWNER_PRIVATE).
 */
#include "domain/private.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib.h>
#include <libmount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/child.h"
#include "base/errno-util.h"
#include "base/helper.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/table.h"
#include "cleanup.h"
#include "kernel-abi.h"
#include "libmount-cleanup.h"
#include "nsd-protocol.h"
#include "store/mounts.h"

#define MOUNTINFO_PATH "/proc/self/mountinfo"
/* any uid that is neither 0 nor a real user's: for the CAP_SETUID probe */
#define PROBE_FSUID ((uid_t) 65534)

/* ---- helper children --------------------------------------------------------------------- */

struct op {
        struct helper_status s;
        /* in */
        uid_t fsuid; /* run with this fsuid; 0: stay root */
        /* resolve: become fsuid wholly (uid, gid and groups, looked up before the child
         * started), not only its fsuid */
        bool identity;
        gid_t gid;
        const gid_t *gids; /* in nsd's memory, which the child has a copy of */
        size_t n_gids;
        const char *path;
        int fd; /* set: the mount to change; resolve: out */
        bool unhide;
        /* out */
        uint64_t mnt_id;
        bool mount_root;
        uid_t probed_fsuid;
};

static int op_take_fsuid(struct op *o) {
        if (o->fsuid == 0)
                return 0;
        (void) setfsuid(o->fsuid);
        if ((uid_t) setfsuid((uid_t) -1) != o->fsuid) {
                errno = EPERM;
                return helper_fail(&o->s, HELPER_STEP_FSUID);
        }
        return 0;
}

/* 32-bit ids: where the plain calls take 16-bit ones (i386, arm) the *32 calls are libc's */
#ifdef SYS_setresuid32
#define NR_SETGROUPS SYS_setgroups32
#define NR_SETRESGID SYS_setresgid32
#define NR_SETRESUID SYS_setresuid32
#else
#define NR_SETGROUPS SYS_setgroups
#define NR_SETRESGID SYS_setresgid
#define NR_SETRESUID SYS_setresuid
#endif

/* The user's whole identity, as a login of the user would have it: its groups (o->gids, from
 * the user database), then setgroups, setresgid, setresuid. Raw system calls, for this
 * thread alone: libc's set*id() would signal every thread of nsd it believes this child to
 * have (its thread list is nsd's, stale here) and take libc's locks. Afterwards the child
 * holds no capability, so the walk below searches directories exactly as the user's own
 * processes would. */
static int op_take_identity(struct op *o) {
        uid_t ru, eu, su;

        if (syscall(NR_SETGROUPS, o->n_gids, o->gids) < 0 ||
            syscall(NR_SETRESGID, o->gid, o->gid, o->gid) < 0 ||
            syscall(NR_SETRESUID, o->fsuid, o->fsuid, o->fsuid) < 0)
                return helper_fail(&o->s, HELPER_STEP_IDENTITY);
        if (getresuid(&ru, &eu, &su) < 0 || ru != o->fsuid || eu != o->fsuid || su != o->fsuid ||
            (uid_t) setfsuid((uid_t) -1) != o->fsuid) {
                errno = EPERM;
                return helper_fail(&o->s, HELPER_STEP_IDENTITY);
        }
        return 0;
}

/* resolve: see the top of this file, step 1. Runs in a watched child (child.h). */
static int resolve_child(void *p, int *ret_fd) {
        struct op *o = p;
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        struct statx stx;

        if (o->identity && o->fsuid != 0 ? op_take_identity(o) : op_take_fsuid(o))
                return 1;
        o->fd = (int) syscall(SYS_openat2, AT_FDCWD, o->path, &how, sizeof how);
        if (o->fd < 0)
                return helper_fail(&o->s, HELPER_STEP_OPEN_MOUNT_POINT);
        if (statx(o->fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, 0, &stx) < 0)
                return helper_fail(&o->s, HELPER_STEP_STATX);
        o->mnt_id = stx.stx_mnt_id;
        o->mount_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                        (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
        *ret_fd = o->fd;
        return 0;
}

/* The result of a watched child: 0 with the descriptor in o->fd, or -errno (of the failing
 * step in o->s, or -ETIMEDOUT). */
static int op_result(int r, const void *result, int fd, struct op *o) {
        if (result)
                memcpy(o, result, sizeof *o);
        o->fd = fd;
        if (r == -EPROTO && result)
                return -(o->s.err > 0 ? o->s.err : EIO);
        if (r < 0) {
                o->s.step = HELPER_STEP_NONE;
                o->s.err = -r;
                CLOSE_FD(o->fd);
                return r;
        }
        if (fd < 0) { /* exit 0 without a descriptor: cannot be, say so */
                o->s.step = HELPER_STEP_OPEN_MOUNT_POINT;
                o->s.err = EPROTO;
                return -EPROTO;
        }
        return 0;
}

/* set: step 3 */
static int setattr_child(void *p) {
        struct op *o = p;
        struct mount_attr attr = { 0 };

        if (op_take_fsuid(o))
                return 1;
        if (o->unhide)
                attr.attr_clr = MOUNT_ATTR_OWNER_PRIVATE;
        else
                attr.attr_set = MOUNT_ATTR_OWNER_PRIVATE;
        if (mount_setattr(o->fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return helper_fail(&o->s, HELPER_STEP_SETATTR);
        return 0;
}

static int probe_fsuid_child(void *p) {
        struct op *o = p;

        (void) setfsuid(PROBE_FSUID);
        o->probed_fsuid = (uid_t) setfsuid((uid_t) -1);
        return 0;
}

/* Run fn(o) in a helper child and wait; 0, or -errno of the failing step (in o). */
static int run_op(int (*fn)(void *), struct op *o) {
        return helper_run(fn, o, &o->s);
}

static const char *op_step(const struct op *o) {
        return helper_status_step(&o->s);
}

/* ---- support ------------------------------------------------------------------------------ */

int private_supported(uint32_t features, char **ret_why) {
        static int cached = 1; /* 1: not probed yet */
        struct op o = { .fd = -1 };

        if (!(features & NSD_FEATURE_OWNER_PRIVATE))
                return why_set(ret_why, EOPNOTSUPP,
                               "owner-private mounts need a kernel with MOUNT_ATTR_OWNER_PRIVATE "
                               "(kernel-patches/, 'fs: add MOUNT_ATTR_OWNER_PRIVATE'); this "
                               "kernel lacks it");
        if (cached == 1)
                cached = run_op(probe_fsuid_child, &o) == 0 && o.probed_fsuid == PROBE_FSUID
                                 ? 0
                                 : -EOPNOTSUPP;
        if (cached < 0)
                return why_set(ret_why, cached,
                               "nsd cannot take a user's fsuid (setfsuid needs CAP_SETUID, which "
                               "nsd does not hold), so it cannot make a mount owner-private for "
                               "a user");
        return 0;
}

/* ---- born private ------------------------------------------------------------------------- */

static int policy_child(void *p) {
        struct op *o = p;
        struct mount_attr attr = { 0 };

        if (o->unhide)
                attr.attr_clr = MOUNT_ATTR_OWNER_PRIVATE_NEW;
        else
                attr.attr_set = MOUNT_ATTR_OWNER_PRIVATE_NEW;
        if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE | AT_NO_AUTOMOUNT, &attr, sizeof attr) < 0)
                return helper_fail(&o->s, HELPER_STEP_SETATTR);
        return 0;
}

int private_born_apply(bool on, char **ret_why) {
        struct op o = { .fd = -1, .unhide = !on };
        int r = run_op(policy_child, &o);

        if (r < 0)
                return why_set(ret_why, r,
                               "cannot %s the born-private policy on the mounts of "
                               "the initial namespace: %s: %s",
                               on ? "set" : "clear", op_step(&o), strerror(-r));
        return 0;
}

/* ---- mount tables ------------------------------------------------------------------------- */

/* nsd's (root's) view of its mount table */
static int mount_table_read(struct libmnt_table **ret) {
        _cleanup_mnt_table_ struct libmnt_table *tb = mnt_new_table();
        int r;

        if (!tb)
                return -ENOMEM;
        r = mnt_table_parse_file(tb, MOUNTINFO_PATH);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(tb);
        return 0;
}

static struct libmnt_fs *mount_table_find_id(struct libmnt_table *tb, uint64_t id) {
        _cleanup_mnt_iter_ struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs = NULL;

        if (!it)
                return NULL;
        while (mnt_table_next_fs(tb, it, &fs) == 0)
                if ((uint64_t) mnt_fs_get_id(fs) == id)
                        return fs;
        return NULL;
}

/* ---- hiding one mount --------------------------------------------------------------------- */

/* Set or clear the attribute on the mount fd refers to, with owner uid. On failure the step
 * and its errno are in *ret_status. */
static int mount_set_owner_private(int fd, uid_t uid, bool unhide,
                                   struct helper_status *ret_status) {
        struct op o = { .fsuid = uid, .fd = fd, .unhide = unhide };
        int r;

        g_assert(uid != 0);
        r = run_op(setattr_child, &o);
        *ret_status = o.s;
        return r;
}

typedef struct HideOp {
        Children *set;
        uid_t caller, uid;
        gid_t caller_gid;
        gid_t gid, *gids; /* the caller's identity (caller != 0), once looked up */
        size_t n_gids;
        char *path;
        bool unhide;
        PrivateHideDone done;
        void *userdata;
        uint64_t timeout_usec;
} HideOp;

static void hide_op_free(HideOp *h) {
        g_free(h->gids);
        g_free(h->path);
        g_free(h);
}

/* Steps 2 and 3 of a HIDE, once the walk came back. Returns 0 or -errno with *ret_why. */
static int hide_resolved(HideOp *h, struct op *o, uint64_t *ret_mnt_id, char **ret_why) {
        _cleanup_mnt_table_ struct libmnt_table *tb = NULL;
        struct libmnt_fs *fs;
        struct helper_status st = { 0 };
        const char *fstype = "?";
        uid_t owner = (uid_t) -1;
        bool fuse = false;
        int r;

        if (!o->mount_root) {
                *ret_why = g_strdup_printf("'%s' is not a mount point", h->path);
                return -EINVAL;
        }

        /* root's view: a mount already hidden (for anyone) is not in it */
        r = mount_table_read(&tb);
        if (r < 0) {
                *ret_why = g_strdup_printf("cannot read nsd's mount table: %s", g_strerror(-r));
                return r;
        }
        fs = mount_table_find_id(tb, o->mnt_id);
        if (fs) {
                fuse = mounts_fuse_owner(fs, &owner);
                fstype = mnt_fs_get_fstype(fs) ?: "?";
        }
        /* Who may change it (hide or unhide alike): root, or its owner. A mount in root's
         * view is plain (not owner-private): its owner is the FUSE user_id=. One not in it is
         * owner-private already, for the uid that hid it (nsd recorded it as the kernel's
         * owner): the kernel lets only that fsuid set or clear the attribute (EPERM), and the
         * caller's walk reached it, so it is the caller's. Unhiding a plain mount of another
         * uid's used to pass (clearing an attribute that is not set) and then exempted it
         * from mode private's watch: refused here like a hide. */
        if (h->caller != 0 && fs && !(fuse && owner == h->caller)) {
                *ret_why = g_strdup_printf("'%s' is not a FUSE mount of uid %u; only its owner "
                                           "or root may %s it",
                                           h->path, (unsigned) h->caller,
                                           h->unhide ? "unhide" : "hide");
                return -EPERM;
        }

        r = mount_set_owner_private(o->fd, h->uid, h->unhide, &st);
        if (r < 0) {
                if (r == -EPERM && st.step == HELPER_STEP_SETATTR)
                        *ret_why = g_strdup_printf("'%s' is owner-private for another uid; "
                                                   "only its owner may change it",
                                                   h->path);
                else if (r == -EINVAL && st.step == HELPER_STEP_SETATTR)
                        *ret_why = g_strdup_printf("the kernel refused the owner-private "
                                                   "attribute on '%s'",
                                                   h->path);
                else
                        *ret_why = g_strdup_printf("cannot %s '%s': %s: %s",
                                                   h->unhide ? "unhide" : "hide", h->path,
                                                   helper_status_step(&st), g_strerror(-r));
                return r;
        }
        log_event_by(h->caller, LOG_INFO, 0, h->uid, h->unhide ? "mount-unhidden" : "mount-hidden",
                     "%s mount %" G_GUINT64_FORMAT " on '%s' (%s) %s uid %u, asked by uid %u",
                     h->unhide ? "Made" : "Hid", o->mnt_id, h->path, fstype,
                     h->unhide ? "visible again, was owner-private for" : "from everyone but",
                     (unsigned) h->uid, (unsigned) h->caller);
        *ret_mnt_id = o->mnt_id;
        return 0;
}

static void on_hide_walked(int r, const void *result, int fd, void *userdata) {
        HideOp *h = userdata;
        g_autofree char *why = NULL;
        struct op o = { .fd = -1 };
        uint64_t mnt_id = 0;
        char t[32];

        r = op_result(r, result, fd, &o);
        _cleanup_close_ int mount_fd = o.fd; /* the walk's O_PATH descriptor, if any */
        if (r == -ETIMEDOUT)
                why = g_strdup_printf("resolving '%s' took longer than %s s "
                                      "(PathWalkTimeoutSec=): a file system on the way does "
                                      "not answer (a hung FUSE daemon?)",
                                      h->path, config_usec_to_string(h->timeout_usec, t, sizeof t));
        else if (r == -ECANCELED)
                why = g_strdup("nsd is stopping");
        else if (r < 0 && o.s.step == HELPER_STEP_FSUID)
                why = g_strdup_printf("nsd cannot take uid %u's fsuid to resolve the path",
                                      (unsigned) o.fsuid);
        else if (r < 0 && o.s.step == HELPER_STEP_IDENTITY)
                why = g_strdup_printf("nsd cannot take uid %u's identity to resolve the path "
                                      "(%s): %s",
                                      (unsigned) o.fsuid, op_step(&o), g_strerror(-r));
        else if (r < 0)
                why = g_strdup_printf("cannot resolve '%s'%s: %s", h->path,
                                      r == -ELOOP ? " (symbolic links are refused)" : "",
                                      g_strerror(-r));
        else
                r = hide_resolved(h, &o, &mnt_id, &why);
        if (r == -ETIMEDOUT) {
                metrics_count_path_walk_timeout();
                log_event_by(h->caller, LOG_WARNING, r, h->uid, "mount-hide-timeout",
                             "HIDE of '%s' for uid %u, asked by uid %u: %s", h->path,
                             (unsigned) h->uid, (unsigned) h->caller, why);
        }
        h->done(r, mnt_id, why, h->userdata);
        hide_op_free(h);
}

/* Step 1 of a HIDE: the walk, in a watched child. 0, or -errno with *ret_why. */
static int hide_walk_start(HideOp *h, char **ret_why) {
        /* walk as the asking user; root unhiding walks as the owner (root cannot see it) */
        uid_t fsuid = h->caller != 0 ? h->caller : h->unhide ? h->uid : 0;
        /* a user's walk counts against the user; root's against the mount's owner, from
         * the reserve that no user takes */
        uid_t whose = h->caller != 0 ? h->caller : h->uid;
        struct op o = {
                .fd = -1,
                .fsuid = fsuid,
                /* a user's walk is the user's own, wholly (root's unhide only takes the
                 * owner's fsuid, to see the mount) */
                .identity = h->caller != 0,
                .gid = h->gid,
                .gids = h->gids,
                .n_gids = h->n_gids,
                .path = h->path,
        };
        unsigned stuck;
        int r;

        r = child_start(h->set, whose, h->caller != 0 ? CHILD_USER : CHILD_SYSTEM, resolve_child,
                        &o, sizeof o, h->timeout_usec, on_hide_walked, h);
        if (r == -EAGAIN && (stuck = children_stuck(h->set, whose)) > 0) {
                *ret_why = g_strdup_printf(
                        "uid %u has %u path walk%s stuck in a file system that does not answer "
                        "(killed past PathWalkTimeoutSec=, still waiting in the kernel, e.g. for "
                        "a hung FUSE daemon): its %s are refused until %s, when that file "
                        "system answers or its daemon goes",
                        (unsigned) whose, stuck, stuck == 1 ? "" : "s",
                        h->caller != 0 ? "HIDEs" : "walks", stuck == 1 ? "it ends" : "they end");
                return -EBUSY;
        }
        if (r < 0) {
                *ret_why = r == -EAGAIN
                                   ? g_strdup("too many path walks in progress (MaxPathWalks=, "
                                              "a quarter of them per uid, a quarter kept for "
                                              "root and mode private); try again later")
                                   : g_strdup_printf("cannot start a helper process: %s",
                                                     g_strerror(-r));
                return r == -EAGAIN ? -EBUSY : r;
        }
        return 0;
}

/* The caller's identity is known (or not): now the walk. */
static void on_hide_identity(int r, const PolicyIdentity *id, const char *why, void *userdata) {
        HideOp *h = userdata;
        g_autofree char *walk_why = NULL;

        if (r == 0) {
                h->gid = id->gid;
                h->gids = g_memdup2(id->gids, id->n_gids * sizeof(gid_t));
                h->n_gids = id->n_gids;
        } else if (r == -ENOENT && h->caller_gid != (gid_t) -1) {
                /* no entry: the caller's gid alone */
                h->gid = h->caller_gid;
                h->gids = g_memdup2(&h->caller_gid, sizeof(gid_t));
                h->n_gids = 1;
        } else {
                /* (a timeout is logged by policy.c, rate limited) */
                if (r == -ENOENT)
                        r = -EPERM; /* and the request said no gid */
                walk_why = r == -ECANCELED
                                   ? g_strdup("nsd is stopping")
                                   : g_strdup_printf("nsd cannot take uid %u's identity to "
                                                     "resolve the path (its groups from the "
                                                     "user database): %s",
                                                     (unsigned) h->caller,
                                                     why ? why : g_strerror(-r));
                h->done(r, 0, walk_why, h->userdata);
                hide_op_free(h);
                return;
        }
        r = hide_walk_start(h, &walk_why);
        if (r < 0) {
                h->done(r, 0, walk_why, h->userdata);
                hide_op_free(h);
        }
}

int private_hide_start(Policy *policy, Children *set, uint64_t timeout_usec, uid_t caller,
                       gid_t caller_gid, uid_t uid, const char *path, bool unhide,
                       PrivateHideDone done, void *userdata, char **ret_why) {
        HideOp *h = g_new0(HideOp, 1);
        int r;

        h->set = set;
        h->caller = caller;
        h->caller_gid = caller_gid;
        h->uid = uid;
        h->path = g_strdup(path);
        h->unhide = unhide;
        h->done = done;
        h->userdata = userdata;
        h->timeout_usec = timeout_usec;
        if (caller == 0) /* root walks as root (or the owner's fsuid): no groups to look up */
                r = hide_walk_start(h, ret_why);
        else {
                r = policy_uid_identity(policy, caller, caller, on_hide_identity, h);
                if (r == -EINPROGRESS)
                        return 0;
                *ret_why = g_strdup_printf("nsd cannot look up uid %u's groups: %s",
                                           (unsigned) caller, g_strerror(-r));
        }
        if (r < 0)
                hide_op_free(h);
        return r;
}

/* ---- the watch ---------------------------------------------------------------------------- */

struct PrivateWatch {
        int fd; /* /proc/self/mountinfo, for POLLPRI */
        guint watch;
        guint retry_idle; /* a scan for the mounts in retry, once a walk slot freed */
        Policy *policy;
        Children *children;
        const Config *config;
        GHashTable *seen;    /* mount ids (uint64_t*) already looked at */
        GHashTable *exempt;  /* mount ids unhidden on request: left alone */
        GHashTable *pending; /* WatchItem* waiting for the policy or a walk */
        GHashTable *retry;   /* mount ids (uint64_t*) seen but not walked: no slot was free */
        PrivateWatchStats stats;
};

/* One new FUSE mount on its way to being hidden. */
typedef struct WatchItem {
        PrivateWatch *w; /* NULL once the watch is gone */
        uint64_t id;
        uid_t uid;
        char *target;
        char *fstype;
} WatchItem;

static void watch_item_free(WatchItem *it) {
        if (it->w)
                g_hash_table_remove(it->w->pending, it);
        g_free(it->target);
        g_free(it->fstype);
        g_free(it);
}

/* No walk slot for this mount now: the scan after the next slot frees looks at it again
 * (children_set_on_free()). A mark of its own, not the absence from `seen`: a scan that is
 * under way installs a new `seen` that holds the id. */
static void watch_retry_later(PrivateWatch *w, uint64_t id) {
        uint64_t *key = g_new(uint64_t, 1);

        *key = id;
        g_hash_table_add(w->retry, key);
        w->stats.retries++;
}

static void on_watch_walked(int r, const void *result, int fd, void *userdata) {
        WatchItem *it = userdata;
        struct op o = { .fd = -1 };
        struct helper_status st = { 0 };
        char t[32];

        r = op_result(r, result, fd, &o);
        _cleanup_close_ int mount_fd = o.fd; /* the walk's O_PATH descriptor, if any */
        if (!it->w) {
                watch_item_free(it);
                return;
        }
        if (r == -ETIMEDOUT) {
                metrics_count_path_walk_timeout();
                log_event_by(it->uid, LOG_WARNING, r, it->uid, "mount-hide-failed",
                             "Cannot hide the %s mount of uid %u on '%s': resolving the path took "
                             "longer than %s s (PathWalkTimeoutSec=), ignoring",
                             it->fstype, (unsigned) it->uid, it->target,
                             config_usec_to_string(it->w->config->path_walk_timeout_usec, t,
                                                   sizeof t));
                watch_item_free(it);
                return;
        }
        if (r < 0) {
                log_event_by(it->uid, LOG_WARNING, r, it->uid, "mount-hide-failed",
                             "Cannot hide the %s mount of uid %u on '%s': %s: %s, ignoring",
                             it->fstype, (unsigned) it->uid, it->target, op_step(&o),
                             g_strerror(-r));
                watch_item_free(it);
                return;
        }
        if (!o.mount_root || o.mnt_id != it->id) {
                log_debug("The %s mount %" G_GUINT64_FORMAT " of uid %u on '%s' is gone (the "
                          "path now leads to mount %" G_GUINT64_FORMAT "), not hiding",
                          it->fstype, it->id, (unsigned) it->uid, it->target, o.mnt_id);
                watch_item_free(it);
                return;
        }
        r = mount_set_owner_private(mount_fd, it->uid, false, &st);
        if (r < 0)
                log_event_by(it->uid, LOG_WARNING, r, it->uid, "mount-hide-failed",
                             "Cannot hide the %s mount %" G_GUINT64_FORMAT " of uid %u on '%s': "
                             "%s: %s, ignoring",
                             it->fstype, it->id, (unsigned) it->uid, it->target,
                             helper_status_step(&st), g_strerror(-r));
        else
                log_event(LOG_INFO, 0, it->uid, "mount-hidden",
                          "Hid the %s mount %" G_GUINT64_FORMAT " on '%s' from everyone but "
                          "uid %u",
                          it->fstype, it->id, it->target, (unsigned) it->uid);
        watch_item_free(it);
}

/* A managed uid's new FUSE mount: walk to it (as root) in a watched child. */
static void watch_walk(WatchItem *it) {
        PrivateWatch *w = it->w;
        struct op o = { .path = it->target, .fd = -1 };
        int r;

        r = child_start(w->children, it->uid, CHILD_SYSTEM, resolve_child, &o, sizeof o,
                        w->config->path_walk_timeout_usec, on_watch_walked, it);
        if (r == 0)
                w->stats.walks++;
        if (r == -EAGAIN) {
                log_debug("No helper process free to hide mount %" G_GUINT64_FORMAT " of uid "
                          "%u now (MaxPathWalks=, or %u walks of that uid stuck), trying again "
                          "when one frees",
                          it->id, (unsigned) it->uid, children_stuck(w->children, it->uid));
                watch_retry_later(w, it->id);
                watch_item_free(it);
        } else if (r < 0) {
                log_event_by(it->uid, LOG_WARNING, r, it->uid, "mount-hide-failed",
                             "Cannot hide the %s mount of uid %u on '%s': cannot start a "
                             "helper process: %s, ignoring",
                             it->fstype, (unsigned) it->uid, it->target, g_strerror(-r));
                watch_item_free(it);
        }
}

static void on_watch_managed(int managed, const char *why, void *userdata) {
        WatchItem *it = userdata;

        if (!it->w || managed == 0) {
                watch_item_free(it);
                return;
        }
        if (managed < 0) {
                log_event_by(it->uid, LOG_WARNING, managed, it->uid, "mount-hide-failed",
                             "Cannot tell whether nsd manages uid %u, so its %s mount on '%s' "
                             "is not hidden: %s",
                             (unsigned) it->uid, it->fstype, it->target,
                             why ? why : g_strerror(-managed));
                watch_item_free(it);
                return;
        }
        watch_walk(it);
}

static void watch_consider(PrivateWatch *w, uint64_t id, const char *target, const char *fstype,
                           uid_t uid) {
        WatchItem *it = g_new0(WatchItem, 1);
        int r;

        it->w = w;
        it->id = id;
        it->uid = uid;
        it->target = g_strdup(target);
        it->fstype = g_strdup(fstype);
        g_hash_table_add(w->pending, it);
        r = policy_uid_managed(w->policy, uid, 0, NULL, on_watch_managed, it);
        if (r == -EINPROGRESS)
                return;
        on_watch_managed(r, NULL, it);
}

static void forget_gone(GHashTable *ids, GHashTable *now) {
        GHashTableIter hi;
        gpointer k;

        g_hash_table_iter_init(&hi, ids);
        while (g_hash_table_iter_next(&hi, &k, NULL))
                if (!g_hash_table_contains(now, k))
                        g_hash_table_iter_remove(&hi);
}

static void watch_scan(PrivateWatch *w) {
        _cleanup_mnt_table_ struct libmnt_table *tb = NULL;
        _cleanup_mnt_iter_ struct libmnt_iter *iter = NULL;
        struct libmnt_fs *fs;
        GHashTable *now;
        int r;

        r = mount_table_read(&tb);
        if (r < 0) {
                log_warning_errno(r, "Cannot read %s, ignoring this change: %m", MOUNTINFO_PATH);
                return;
        }
        iter = mnt_new_iter(MNT_ITER_FORWARD);
        if (!iter)
                return;
        now = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        while (mnt_table_next_fs(tb, iter, &fs) == 0) {
                uint64_t id = (uint64_t) mnt_fs_get_id(fs);
                uint64_t *key = g_new(uint64_t, 1);
                uid_t uid;

                *key = id;
                g_hash_table_add(now, key);
                /* seen before: skipped, unless it waits for a walk slot */
                if (g_hash_table_contains(w->seen, &id) && !g_hash_table_remove(w->retry, &id))
                        continue;
                if (g_hash_table_contains(w->exempt, &id))
                        continue;
                if (!mounts_fuse_owner(fs, &uid) || uid == 0)
                        continue;
                watch_consider(w, id, mnt_fs_get_target(fs), mnt_fs_get_fstype(fs), uid);
        }

        /* forget mounts that left root's view (unmounted or hidden): a reused id is new */
        forget_gone(w->exempt, now);
        forget_gone(w->retry, now);
        g_hash_table_unref(w->seen);
        w->seen = now;
}

static gboolean on_watch_retry(gpointer userdata) {
        PrivateWatch *w = userdata;

        w->retry_idle = 0;
        watch_scan(w);
        return G_SOURCE_REMOVE;
}

/* A walk slot freed: the mounts that waited for one get their scan (once, on the loop, not
 * inside child.c's bookkeeping). */
static void on_walk_slot_free(void *userdata) {
        PrivateWatch *w = userdata;

        if (g_hash_table_size(w->retry) > 0 && !w->retry_idle)
                w->retry_idle = g_idle_add(on_watch_retry, w);
}

static gboolean on_mountinfo_change(int fd, GIOCondition cond, gpointer userdata) {
        PrivateWatch *w = userdata;

        watch_scan(w);
        return G_SOURCE_CONTINUE;
}

int private_watch_new(Policy *policy, Children *set, const Config *config, PrivateWatch **ret) {
        PrivateWatch *w;
        int fd;

        fd = open(MOUNTINFO_PATH, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open %s to watch for user mounts: %m",
                                       MOUNTINFO_PATH);
        w = g_new0(PrivateWatch, 1);
        w->fd = fd;
        w->policy = policy;
        w->children = set;
        w->config = config;
        w->seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        w->exempt = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        w->pending = g_hash_table_new(g_direct_hash, g_direct_equal);
        w->retry = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        children_set_on_free(set, on_walk_slot_free, w);
        /* POLLPRI (and POLLERR) when the namespace's mount table changed; POLLIN always */
        w->watch = g_unix_fd_add(fd, G_IO_PRI | G_IO_ERR, on_mountinfo_change, w);
        watch_scan(w); /* the mounts that exist now */
        *ret = w;
        return 0;
}

void private_watch_free(PrivateWatch *w) {
        if (!w)
                return;
        g_clear_handle_id(&w->watch, g_source_remove);
        g_clear_handle_id(&w->retry_idle, g_source_remove);
        children_set_on_free(w->children, NULL, NULL);
        /* items still waiting for the policy or a walk end on their own, without the watch */
        TABLE_DESTROY_ORPHANING(w->pending, WatchItem, w);
        close(w->fd);
        g_hash_table_unref(w->seen);
        g_hash_table_unref(w->exempt);
        g_hash_table_unref(w->retry);
        g_free(w);
}

const PrivateWatchStats *private_watch_stats(const PrivateWatch *w) {
        return &w->stats;
}

void private_watch_exempt(PrivateWatch *w, uint64_t mnt_id) {
        uint64_t *key;

        if (!w)
                return;
        key = g_new(uint64_t, 1);
        *key = mnt_id;
        g_hash_table_add(w->exempt, key);
}
