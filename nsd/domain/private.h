/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * private.h: mode private (DESIGN.md "The fallback mode (owner-private mounts)"). With kernel
 * patch F4 a mount can carry MOUNT_ATTR_OWNER_PRIVATE: only processes whose fsuid is its owner
 * see it in mountinfo and walk into it; everyone else, root included, sees the directory it
 * covers. The owner is the fsuid of whoever sets the attribute, so nsd sets it from a helper
 * child that took the user's fsuid (setfsuid(), which needs CAP_SETUID).
 *
 *  - the watch: nsd's own (the initial) /proc/self/mountinfo, polled for POLLPRI; every FUSE
 *    mount (fuse, fuse.*, fuseblk) that appears with user_id=UID of a uid nsd manages gets the
 *    attribute for UID;
 *  - HIDE requests (nsctl hide): one mount, named by path, for one uid.
 * No policy here beyond "whose FUSE mount is it": api/handlers.c decides who may ask.
 *
 * Path walks (resolving a HIDE path, a new mount's mount point) can hang in a user's FUSE
 * file system, so they run in helper children the loop watches (child.h) with a deadline,
 * PathWalkTimeoutSec=; a HIDE past it gets -ETIMEDOUT, a mount of the watch is left as it
 * is (logged). A user's walk runs with the user's groups, which are looked up before the
 * child starts (policy.h), never in it. Setting the attribute on a resolved mount cannot hang (no file system
 * callback) and runs in a vfork()ed helper (helper.h).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/child.h"
#include "base/nsd-forward.h"
#include "policy/conf.h"
#include "policy/policy.h"

/* Can this nsd make owner-private mounts? features: the probed NSD_FEATURE_* bits. Returns 0,
 * or -EOPNOTSUPP with *ret_why (g_malloc()ed) saying why not: the kernel lacks F4, or nsd
 * cannot take a user's fsuid (CAP_SETUID dropped). Runs a helper child the first time. */
int private_supported(uint32_t features, char **ret_why);

/* F4b ([Private] BornPrivate=): set (on) or clear the policy MOUNT_ATTR_OWNER_PRIVATE_NEW on
 * every mount of nsd's (the initial) namespace, recursively from "/": from then on a mount
 * that a task whose real uid is not 0 attaches below any of them (fusermount3, a user's mount
 * of a "user" fstab entry) is born owner-private for that uid, with no instant in which
 * anyone else could reach it; mounts attached below carry the policy on. Runs a helper
 * child (mount_setattr() walks no path a user controls and calls no file system). Returns 0,
 * or -errno with *ret_why (g_malloc()ed). The caller checks NSD_FEATURE_OWNER_PRIVATE_NEW. */
int private_born_apply(bool on, char **ret_why);

/* Start watching the initial namespace's mount table: hides the FUSE mounts of managed uids
 * (policy) that exist now, then each new one as it appears. Runs on the GLib main context;
 * walks run in children of set, with config's PathWalkTimeoutSec= (config is read when a
 * walk starts, so a reload applies). */
int private_watch_new(Policy *policy, Children *set, const Config *config, PrivateWatch **ret);
void private_watch_free(PrivateWatch *w);
/* A mount the watch could not walk at once (no walk slot: MaxPathWalks=, or its owner's
 * stuck walks) is walked when a slot frees: the watch takes set's on-free callback
 * (children_set_on_free()), so one watch per set. */
typedef struct PrivateWatchStats {
        unsigned walks;   /* walks started */
        unsigned retries; /* times a mount waited for a slot */
} PrivateWatchStats;
const PrivateWatchStats *private_watch_stats(const PrivateWatch *w);
/* Do not hide this mount again (its owner asked for it to be visible). */
void private_watch_exempt(PrivateWatch *w, uint64_t mnt_id);

/* A HIDE request: set (or with unhide clear) the owner-private attribute with owner uid on
 * the mount whose root is path (absolute; symlinks refused). caller is the asking uid: for
 * one other than root the path is resolved with the caller's whole identity (uid, its
 * primary gid and groups from the user database, or without an entry there caller_gid
 * alone) and the mount must be the caller's: a FUSE mount with user_id=caller, or one
 * owner-private for the caller already (then the kernel checks the owner). Hide and unhide
 * alike. The groups are looked up first, through policy (policy_uid_identity(): its threads,
 * LookupTimeoutSec=), never in the walk's child; then the walk runs, PathWalkTimeoutSec=. So
 * a HIDE takes at most LookupTimeoutSec= + PathWalkTimeoutSec= (and a helper for step 3).
 * Returns 0 when started: done() follows on the loop with 0 and the mount's id, or -errno
 * and why (for the client; -ETIMEDOUT past either deadline, -EBUSY past MaxPathWalks=);
 * logs the event. Or returns -errno at once, with *ret_why (g_malloc()ed). */
typedef void (*PrivateHideDone)(int r, uint64_t mnt_id, const char *why, void *userdata);
int private_hide_start(Policy *policy, Children *set, uint64_t timeout_usec, uid_t caller,
                       gid_t caller_gid, uid_t uid, const char *path, bool unhide,
                       PrivateHideDone done, void *userdata, char **ret_why);
