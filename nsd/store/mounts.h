/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mounts.h: which mounts of a user's namespace the user made, for linger (domain/linger.h). Told apart
 * from the host's by what each mount is, never by counting (issue 9: a host unmount and a
 * mount of the user's balance out in a count):
 *
 *   - A mount that is a slave of a peer group ("master:N" in mountinfo) was received by
 *     propagation: it exists in the namespace it came from (the host) too, so releasing the
 *     user's namespace loses nothing of it. That is every host mount the namespace got from a
 *     shared host mount, at creation or later (USB sticks, NFS), and a FUSE mount another user
 *     (or this one, outside nsd) made in the host.
 *   - Every other mount was either copied from a private host mount when the namespace was
 *     made, or made inside it since. The first kind is in the namespace's BASELINE: a
 *     fingerprint of each such mount (mount id, device, root, mount point, type, source),
 *     taken right after creation and kept in nsd's state file (state.h). A mount the user
 *     made (FUSE through fusermount3, which makes a private mount under a slave one; a
 *     tmpfs root mounted after entering) is in neither: it is the user's. A mount id the
 *     kernel reuses (Linux 6.1 hands out the lowest free id) gets a new device and type with
 *     its new mount, so its fingerprint differs.
 * A namespace whose baseline is unknown (made by an nsd before 0.3, or with more than
 * MOUNTS_BASELINE_MAX such mounts) cannot be told apart and is kept.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Fingerprints kept per namespace, at most. */
#define MOUNTS_BASELINE_MAX 1024

struct libmnt_fs;

/* Is t a FUSE file system type (fuse, fuseblk, fuse.SUBTYPE)? */
bool mounts_fstype_is_fuse(const char *t);
/* The user_id= of a FUSE mount, from its super options only (a mount option cannot say it):
 * true and *ret, or false (not FUSE, no user_id=, or not a uid). */
bool mounts_fuse_owner(struct libmnt_fs *fs, uid_t *ret);

/* The fingerprints of the mounts of a mountinfo text that were not received from a peer
 * group, sorted: a GArray of guint64 (*ret), or -errno (-E2BIG: more than
 * MOUNTS_BASELINE_MAX). */
int mounts_baseline(const char *mountinfo, GArray **ret);
/* "a1b2...,c3d4..." and back (-EINVAL for anything else); the empty string is an empty set. */
char *mounts_baseline_to_string(const GArray *baseline);
int mounts_baseline_from_string(const char *s, GArray **ret);

/* The mount on path (the last one there: on top): its fingerprint (for a baseline), its
 * device and its file system type (empty when longer than the buffer). 0, or -ENOENT
 * (nothing mounted on path), -errno when the text does not parse. */
typedef struct MountOn {
        uint64_t fingerprint;
        dev_t dev;
        char fstype[64];
} MountOn;
int mounts_on(const char *mountinfo, const char *path, MountOn *ret);
/* Is the device dev (a mount's, from mountinfo) the volume source names: a loop device whose
 * backing file is source (as /sys names it: the path from this process's root, compared as a
 * string, so a file renamed since does not match and nothing on the way is walked), or the
 * block device source is under /dev? 1 yes, 0 no, -errno when it cannot be looked at. */
#define MOUNTS_LOOP_MAJOR 7
int mounts_device_is(dev_t dev, const char *source);
/* Is dev a loop device whose backing file is source (as mounts_device_is() compares it)? 1
 * yes, 0 no (another device, none, cleared), -errno when /sys cannot be read. Async-signal-
 * safe: the release child calls it. */
int mounts_loop_backs(dev_t dev, const char *source);
/* The number N of the loop device /dev/loopN that dev is, as /sys/dev/block names it (a
 * loop device's minor is N only while loop.max_part is 0): N >= 0, -ENODEV when dev is no
 * whole loop device, -errno when /sys cannot be read. Async-signal-safe (no allocation, no
 * stdio): helper children call it. */
int mounts_loop_index(dev_t dev);
/* The fingerprint of the mount on path (the last one there: on top), for a baseline: 0, or
 * -ENOENT (nothing mounted on path), -errno when the text does not parse. nsd's own mount
 * made after the namespace (a volume it started) joins the baseline so: it is not the user's. */
int mounts_fingerprint_on(const char *mountinfo, const char *path, uint64_t *ret);
/* The mounts of mountinfo the user made: neither received from a peer group nor in baseline.
 * Returns their number (>= 0) and, when there are any, *ret_first (g_malloc()ed, may be
 * NULL) describes the first one for the log: "fuse.bindfs on /home/alice/mnt (FUSE of uid
 * 1001)". -errno when the text does not parse. */
int mounts_user_made(const char *mountinfo, const GArray *baseline, char **ret_first);

/* The mount on path in mountinfo (the last one there) and what is mounted below it: the
 * number of mounts under path (*ret_count) and its peer group ("shared:N", 0: not shared).
 * For the anchors of shares (setup.h). -ENOENT when nothing is mounted on path, -errno when
 * the text does not parse. */
int mounts_under(const char *mountinfo, const char *path, int *ret_count, unsigned *ret_peer_group);

/*
 * The FUSE mounts users made under a share's anchor (setup.h), for its MaxMountsPerUser=
 * (domain/share-bound.h). A mount is uid U's when it is a FUSE mount (fuse, fuseblk,
 * fuse.*) whose super options say user_id=U with U != 0; root's mounts and every other
 * type are not counted. Under the anchor: its mount point is the anchor's path (stacked on
 * it) or below it; the anchor itself (the first mount on the path) never counts.
 */
typedef struct MountsUidCount {
        uid_t uid;
        unsigned count;
} MountsUidCount;

/* One mount of a uid beyond its limit, and what to detach for it. */
typedef struct MountsExcess {
        uid_t uid;
        uint64_t mnt_id; /* the mount beyond the limit */
        char *target;    /* its mount point, as mountinfo says (unescaped: any byte but NUL) */
        /* What to detach: the mount itself, or when it sits inside FUSE mounts (root cannot
         * walk into a FUSE mount that is not allow_other), the outermost FUSE mount of the
         * same uid around it, which takes it along. */
        uint64_t detach_id;
        char *detach_target;
        unsigned detach_major, detach_minor; /* its device, checked again before the detach */
} MountsExcess;

void mounts_excess_free(MountsExcess *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(MountsExcess, mounts_excess_free)

/* The FUSE mounts under the mount on anchor (an absolute path without a trailing '/'), per
 * uid: *ret_counts (GArray of MountsUidCount, by uid; uids with none are absent) and, for
 * every uid with more than limit, its mounts beyond it, the newest (the last in mountinfo, the order they were made: mount ids are reused) first:
 * *ret_excess (GPtrArray of MountsExcess*, by uid, may be empty). -ENOENT when nothing is
 * mounted on anchor, -errno when the text does not parse. Either ret may be NULL. A kernel
 * that reuses mount ids (6.1: the lowest free one) may make an older mount look newer: the
 * uid keeps limit mounts either way. */
int mounts_share_use(const char *mountinfo, const char *anchor, unsigned limit, GArray **ret_counts,
                     GPtrArray **ret_excess);
