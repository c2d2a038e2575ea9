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
 * No policy here beyond "whose FUSE mount is it": server.c decides who may ask.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct PrivateWatch PrivateWatch;

/* Does nsd manage uid (config_uid_managed)? Asked for every new FUSE mount. */
typedef bool (*PrivateManagedFn)(uid_t uid, void *userdata);

/* Can this nsd make owner-private mounts? features: the probed NSD_FEATURE_* bits. Returns 0,
 * or -EOPNOTSUPP with *ret_why (a static string) saying why not: the kernel lacks F4, or nsd
 * cannot take a user's fsuid (CAP_SETUID dropped). Runs a helper child the first time. */
int private_supported(uint32_t features, const char **ret_why);

/* Start watching the initial namespace's mount table: hides the FUSE mounts of managed uids
 * that exist now, then each new one as it appears. Runs on the GLib main context. */
int private_watch_new(PrivateManagedFn managed, void *userdata, PrivateWatch **ret);
void private_watch_free(PrivateWatch *w);
/* Do not hide this mount again (its owner asked for it to be visible). */
void private_watch_exempt(PrivateWatch *w, uint64_t mnt_id);

/* A HIDE request: set (or with unhide clear) the owner-private attribute with owner uid on
 * the mount whose root is path (absolute; symlinks refused). caller is the asking uid: for
 * one other than root the path is resolved with the caller's fsuid and the mount must be a
 * FUSE mount of the caller's (user_id=caller). Returns 0 and the mount's id in *ret_mnt_id,
 * or -errno with *ret_why (g_malloc()ed) for the client. Logs the event. */
int private_hide(uid_t caller, uid_t uid, const char *path, bool unhide, uint64_t *ret_mnt_id,
                 char **ret_why);
