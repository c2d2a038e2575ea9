/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * private.c: mode private and HIDE, see private.h.
 *
 * Helper children. setfsuid() changes the credentials of the calling thread only, and nsd
 * must not walk paths or set attributes with a user's fsuid by accident, so every step that
 * needs another fsuid runs in a helper child (helper.c), as userns.c's do: it shares nsd's
 * descriptor table (a descriptor it opens is nsd's at once), has its own credentials, calls
 * only plain system calls and reports through its argument struct.
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
#include "private.h"

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

#include "helper.h"
#include "kernel-abi.h"
#include "log.h"
#include "nsd-protocol.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

#define MOUNTINFO_PATH "/proc/self/mountinfo"
/* any uid that is neither 0 nor a real user's: for the CAP_SETUID probe */
#define PROBE_FSUID ((uid_t) 65534)

/* ---- helper children --------------------------------------------------------------------- */

enum step {
        STEP_NONE,
        STEP_FSUID,
        STEP_OPEN,
        STEP_STATX,
        STEP_SETATTR,
        _STEP_MAX,
};

static const char *const step_text[_STEP_MAX] = {
        [STEP_NONE] = "run helper process",
        [STEP_FSUID] = "take the user's fsuid (setfsuid, needs CAP_SETUID)",
        [STEP_OPEN] = "open the mount point",
        [STEP_STATX] = "statx the mount point",
        [STEP_SETATTR] = "set the owner-private attribute (mount_setattr)",
};

struct op {
        struct helper_status s;
        /* in */
        uid_t fsuid; /* run with this fsuid; 0: stay root */
        const char *path;
        int fd;      /* set: the mount to change; resolve: out */
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
                return helper_fail(&o->s, STEP_FSUID);
        }
        return 0;
}

/* resolve: see the top of this file, step 1 */
static int resolve_child(void *p) {
        struct op *o = p;
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        struct statx stx;

        if (op_take_fsuid(o))
                return 1;
        o->fd = (int) syscall(SYS_openat2, AT_FDCWD, o->path, &how, sizeof how);
        if (o->fd < 0)
                return helper_fail(&o->s, STEP_OPEN);
        if (statx(o->fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, 0, &stx) < 0)
                return helper_fail(&o->s, STEP_STATX);
        o->mnt_id = stx.stx_mnt_id;
        o->mount_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                        (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
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
                return helper_fail(&o->s, STEP_SETATTR);
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
        return o->s.step > STEP_NONE && o->s.step < _STEP_MAX ? step_text[o->s.step] :
                                                               step_text[0];
}

/* ---- support ------------------------------------------------------------------------------ */

int private_supported(uint32_t features, const char **ret_why) {
        static int cached = 1; /* 1: not probed yet */
        struct op o = { .fd = -1 };

        if (!(features & NSD_FEATURE_OWNER_PRIVATE)) {
                *ret_why = "owner-private mounts need a kernel with MOUNT_ATTR_OWNER_PRIVATE "
                           "(kernel-patches/0003); this kernel lacks it";
                return -EOPNOTSUPP;
        }
        if (cached == 1)
                cached = run_op(probe_fsuid_child, &o) == 0 && o.probed_fsuid == PROBE_FSUID ?
                                 0 : -EOPNOTSUPP;
        if (cached < 0) {
                *ret_why = "nsd cannot take a user's fsuid (setfsuid needs CAP_SETUID, which "
                           "nsd does not hold), so it cannot make a mount owner-private for a "
                           "user";
                return cached;
        }
        return 0;
}

/* ---- mount tables ------------------------------------------------------------------------- */

static bool fstype_is_fuse(const char *t) {
        return t && (strcmp(t, "fuse") == 0 || strcmp(t, "fuseblk") == 0 ||
                     strncmp(t, "fuse.", 5) == 0);
}

/* The user_id= of a FUSE mount: true and *ret, or false (not FUSE, no or a bad user_id). */
static bool fuse_owner(struct libmnt_fs *fs, uid_t *ret) {
        char *value = NULL, buf[16], *end;
        size_t size = 0;
        unsigned long v;

        if (!fstype_is_fuse(mnt_fs_get_fstype(fs)))
                return false;
        if (mnt_fs_get_option(fs, "user_id", &value, &size) != 0 || !value || size == 0 ||
            size >= sizeof buf)
                return false;
        memcpy(buf, value, size);
        buf[size] = '\0';
        if (!g_ascii_isdigit(buf[0]))
                return false;
        errno = 0;
        v = strtoul(buf, &end, 10);
        if (errno != 0 || *end != '\0' || v >= (uid_t) -1)
                return false;
        *ret = (uid_t) v;
        return true;
}

/* nsd's (root's) view of its mount table */
static int mount_table_read(struct libmnt_table **ret) {
        struct libmnt_table *tb = mnt_new_table();
        int r;

        if (!tb)
                return -ENOMEM;
        r = mnt_table_parse_file(tb, MOUNTINFO_PATH);
        if (r < 0) {
                mnt_unref_table(tb);
                return r;
        }
        *ret = tb;
        return 0;
}

static struct libmnt_fs *mount_table_find_id(struct libmnt_table *tb, uint64_t id) {
        struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs = NULL, *found = NULL;

        if (!it)
                return NULL;
        while (mnt_table_next_fs(tb, it, &fs) == 0)
                if ((uint64_t) mnt_fs_get_id(fs) == id) {
                        found = fs;
                        break;
                }
        mnt_free_iter(it);
        return found;
}

/* ---- hiding one mount --------------------------------------------------------------------- */

/* Set or clear the attribute on the mount fd refers to, with owner uid. */
static int mount_set_owner_private(int fd, uid_t uid, bool unhide, const char **ret_step) {
        struct op o = { .fsuid = uid, .fd = fd, .unhide = unhide };
        int r;

        g_assert(uid != 0);
        r = run_op(setattr_child, &o);
        if (r < 0)
                *ret_step = op_step(&o);
        return r;
}

int private_hide(uid_t caller, uid_t uid, const char *path, bool unhide, uint64_t *ret_mnt_id,
                 char **ret_why) {
        struct libmnt_table *tb = NULL;
        struct libmnt_fs *fs;
        const char *step = NULL, *fstype = "?";
        uid_t owner = (uid_t) -1;
        bool fuse = false;
        /* walk as the asking user; root unhiding walks as the owner (root cannot see it) */
        struct op o = { .path = path, .fd = -1,
                        .fsuid = caller != 0 ? caller : unhide ? uid : 0 };
        int r;

        r = run_op(resolve_child, &o);
        if (r < 0) {
                if (o.fd >= 0)
                        close(o.fd);
                if (o.s.step == STEP_FSUID)
                        *ret_why = g_strdup_printf("nsd cannot take uid %u's fsuid to resolve "
                                                   "the path", (unsigned) o.fsuid);
                else
                        *ret_why = g_strdup_printf("cannot resolve '%s'%s: %s", path,
                                                   r == -ELOOP ? " (symbolic links are "
                                                                 "refused)" : "",
                                                   g_strerror(-r));
                return r;
        }
        if (!o.mount_root) {
                close(o.fd);
                *ret_why = g_strdup_printf("'%s' is not a mount point", path);
                return -EINVAL;
        }

        /* root's view: a mount already hidden (for anyone) is not in it */
        r = mount_table_read(&tb);
        if (r < 0) {
                close(o.fd);
                *ret_why = g_strdup_printf("cannot read nsd's mount table: %s", g_strerror(-r));
                return r;
        }
        fs = mount_table_find_id(tb, o.mnt_id);
        if (fs) {
                fuse = fuse_owner(fs, &owner);
                fstype = mnt_fs_get_fstype(fs) ?: "?";
        }
        if (caller != 0 && !unhide && fs && !(fuse && owner == caller)) {
                close(o.fd);
                *ret_why = g_strdup_printf("'%s' is not a FUSE mount of uid %u (%s%s); only "
                                           "root may hide it", path, (unsigned) caller,
                                           fstype, fuse ? ", another user's" : "");
                mnt_unref_table(tb);
                return -EPERM;
        }
        /* Not in root's view: already owner-private. Setting it again is allowed to its owner
         * only, and the kernel decides that (EPERM for anyone else). */

        r = mount_set_owner_private(o.fd, uid, unhide, &step);
        close(o.fd);
        if (r < 0) {
                if (r == -EPERM && step == step_text[STEP_SETATTR])
                        *ret_why = g_strdup_printf("'%s' is owner-private for another uid; "
                                                   "only its owner may change it", path);
                else if (r == -EINVAL && step == step_text[STEP_SETATTR])
                        *ret_why = g_strdup_printf("the kernel refused the owner-private "
                                                   "attribute on '%s'", path);
                else
                        *ret_why = g_strdup_printf("cannot %s '%s': %s: %s",
                                                   unhide ? "unhide" : "hide", path, step,
                                                   g_strerror(-r));
                mnt_unref_table(tb);
                return r;
        }
        log_event(LOG_INFO, 0, uid, unhide ? "mount-unhidden" : "mount-hidden",
                  "%s mount %" G_GUINT64_FORMAT " on '%s' (%s) %s uid %u, asked by uid %u",
                  unhide ? "Made" : "Hid", o.mnt_id, path, fstype,
                  unhide ? "visible again, was owner-private for" : "from everyone but",
                  (unsigned) uid, (unsigned) caller);
        mnt_unref_table(tb);
        *ret_mnt_id = o.mnt_id;
        return 0;
}

/* ---- the watch ---------------------------------------------------------------------------- */

struct PrivateWatch {
        int fd; /* /proc/self/mountinfo, for POLLPRI */
        guint watch;
        PrivateManagedFn managed;
        void *userdata;
        GHashTable *seen;   /* mount ids (uint64_t*) already looked at */
        GHashTable *exempt; /* mount ids unhidden on request: left alone */
};

/* A new FUSE mount of uid at target, id id in root's mountinfo: hide it. */
static void watch_hide(PrivateWatch *w, uint64_t id, const char *target, const char *fstype,
                       uid_t uid) {
        struct op o = { .path = target, .fd = -1 };
        const char *step = NULL;
        int r;

        r = run_op(resolve_child, &o);
        if (r < 0) {
                if (o.fd >= 0)
                        close(o.fd);
                log_warning_errno(r, "Cannot hide the %s mount of uid %u on '%s': %s: %m, "
                                  "ignoring", fstype, (unsigned) uid, target, op_step(&o));
                return;
        }
        if (!o.mount_root || o.mnt_id != id) {
                close(o.fd);
                log_debug("The %s mount %" G_GUINT64_FORMAT " of uid %u on '%s' is gone (the "
                          "path now leads to mount %" G_GUINT64_FORMAT "), not hiding",
                          fstype, id, (unsigned) uid, target, o.mnt_id);
                return;
        }
        r = mount_set_owner_private(o.fd, uid, false, &step);
        close(o.fd);
        if (r < 0) {
                log_event(LOG_WARNING, r, uid, "mount-hide-failed",
                          "Cannot hide the %s mount %" G_GUINT64_FORMAT " of uid %u on '%s': "
                          "%s: %s, ignoring", fstype, id, (unsigned) uid, target, step,
                          g_strerror(-r));
                return;
        }
        log_event(LOG_INFO, 0, uid, "mount-hidden",
                  "Hid the %s mount %" G_GUINT64_FORMAT " on '%s' from everyone but uid %u",
                  fstype, id, target, (unsigned) uid);
}

static void watch_scan(PrivateWatch *w) {
        struct libmnt_table *tb = NULL;
        struct libmnt_iter *it;
        struct libmnt_fs *fs;
        GHashTable *now;
        int r;

        r = mount_table_read(&tb);
        if (r < 0) {
                log_warning_errno(r, "Cannot read %s, ignoring this change: %m", MOUNTINFO_PATH);
                return;
        }
        it = mnt_new_iter(MNT_ITER_FORWARD);
        if (!it) {
                mnt_unref_table(tb);
                return;
        }
        now = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        while (mnt_table_next_fs(tb, it, &fs) == 0) {
                uint64_t id = (uint64_t) mnt_fs_get_id(fs);
                uint64_t *key = g_new(uint64_t, 1);
                uid_t uid;

                *key = id;
                g_hash_table_add(now, key);
                if (g_hash_table_contains(w->seen, &id) || g_hash_table_contains(w->exempt, &id))
                        continue;
                if (!fuse_owner(fs, &uid) || uid == 0 || !w->managed(uid, w->userdata))
                        continue;
                watch_hide(w, id, mnt_fs_get_target(fs), mnt_fs_get_fstype(fs), uid);
        }
        mnt_free_iter(it);
        mnt_unref_table(tb);

        /* forget mounts that left root's view (unmounted or hidden): a reused id is new */
        {
                GHashTableIter hi;
                gpointer k;
                g_hash_table_iter_init(&hi, w->exempt);
                while (g_hash_table_iter_next(&hi, &k, NULL))
                        if (!g_hash_table_contains(now, k))
                                g_hash_table_iter_remove(&hi);
        }
        g_hash_table_unref(w->seen);
        w->seen = now;
}

static gboolean on_mountinfo_change(int fd, GIOCondition cond, gpointer userdata) {
        PrivateWatch *w = userdata;

        watch_scan(w);
        return G_SOURCE_CONTINUE;
}

int private_watch_new(PrivateManagedFn managed, void *userdata, PrivateWatch **ret) {
        PrivateWatch *w;
        int fd;

        fd = open(MOUNTINFO_PATH, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open %s to watch for user mounts: %m",
                                       MOUNTINFO_PATH);
        w = g_new0(PrivateWatch, 1);
        w->fd = fd;
        w->managed = managed;
        w->userdata = userdata;
        w->seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        w->exempt = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        /* POLLPRI (and POLLERR) when the namespace's mount table changed; POLLIN always */
        w->watch = g_unix_fd_add(fd, G_IO_PRI | G_IO_ERR, on_mountinfo_change, w);
        watch_scan(w); /* the mounts that exist now */
        *ret = w;
        return 0;
}

void private_watch_free(PrivateWatch *w) {
        if (!w)
                return;
        if (w->watch)
                g_source_remove(w->watch);
        close(w->fd);
        g_hash_table_unref(w->seen);
        g_hash_table_unref(w->exempt);
        g_free(w);
}

void private_watch_exempt(PrivateWatch *w, uint64_t mnt_id) {
        uint64_t *key;

        if (!w)
                return;
        key = g_new(uint64_t, 1);
        *key = mnt_id;
        g_hash_table_add(w->exempt, key);
}
