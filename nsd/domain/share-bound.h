/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * share-bound.h: [Share] MaxMountsPerUser= (issue 24, item 3). One FUSE mount a user makes
 * under a share is copied into the share's anchor (setup.h) and every member's namespace;
 * this bounds how many one uid has there.
 *
 * Watching: the anchors are in nsd's pin namespace (pinstore.h). A helper child enters it and
 * opens /proc/self/mountinfo there (userns.h ns_open_mountinfo()): that descriptor keeps the
 * pin namespace's table, and poll() says POLLPRI on every change to it. nsd watches it on its
 * loop while the configuration has a share with an anchor (not Propagation=per-user) and the
 * pin namespace is there (again after a restart, once the pin store is ready); a change
 * starts a short timer (SHARE_BOUND_DEBOUNCE_MSEC), so a burst of mounts costs one read.
 *
 * Counting: store/mounts.h mounts_share_use(): FUSE mounts with user_id=U (U != 0) on or
 * under each anchor; root's mounts are not counted. A uid over the limit loses its newest
 * ones (the last in mountinfo; mount ids are reused) beyond it.
 *
 * Detaching, safely against a user who changes paths meanwhile: in a watched child (child.h,
 * with PathWalkTimeoutSec= as deadline, counted against the mount's owner: a walk can hang in
 * that user's FUSE daemon) that enters the pin namespace: the anchor opened from / without
 * following symbolic links (run_dir is root's), then the mount point below it with
 * openat2(anchor, relative path, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS, O_PATH); statx() (no attribute asked for, AT_STATX_DONT_SYNC: no
 * FUSE request) must give exactly the mount id and device read in mountinfo, at the mount's
 * root; only then umount2() of that descriptor (through the child's /proc/<pid>/fd, opened
 * before entering) with MNT_DETACH. The unmount propagates from the anchor to every member's
 * copy. Anything else (a symbolic link, a path that leaves the anchor, another mount there
 * now, a helper that failed or ran past its deadline) detaches nothing, and the table is
 * read again after SHARE_BOUND_RETRY_MSEC, doubling up to SHARE_BOUND_RETRY_MAX_MSEC while
 * detaches keep failing (and at every change): waiting for the next change alone left the
 * mount in place for good when none came. Every detach changes the table,
 * so a thousand mounts made at once go as fast as helpers are free (a scan after
 * SHARE_BOUND_RETRY_MSEC when none was). Nothing else of the pin namespace
 * (pins, other anchors, root's mounts) can be reached: the path is resolved beneath the
 * anchor and the mount must be the one that was counted.
 *
 * Each detach is a warning (event "share-mount-detached", limited per uid as every line a
 * user causes) naming the share, the uid, the limit, the mount id and the mount point
 * (escaped: a user chose it).
 */
#pragma once

#include "base/nsd-forward.h"

#define SHARE_BOUND_DEBOUNCE_MSEC 200
/* No helper free for a detach (MaxPathWalks=, or the uid's walks stuck): look again after. */
#define SHARE_BOUND_RETRY_MSEC 1000
/* A detach that keeps failing is tried again at most this often (one helper a minute). */
#define SHARE_BOUND_RETRY_MAX_MSEC 60000

/* config: the one in force (read again by share_bound_apply()); pins may be NULL (nothing is
 * watched); set: where the detaching children run. All the caller's, outliving it. */
ShareBound *share_bound_new(const Config *config, PinStore *pins, Children *set);
/* Children still running end without it (their callbacks find it gone). */
void share_bound_free(ShareBound *b);
/* Watch or stop watching as the configuration and the pin store say: at start, when the pin
 * store is ready, after a reload (a scan follows at once). */
void share_bound_apply(ShareBound *b);
/* Detaches done since start (for tests and the log). */
unsigned share_bound_detached(const ShareBound *b);
