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
#include <stdint.h>
#include <sys/types.h>

/* Fingerprints kept per namespace, at most. */
#define MOUNTS_BASELINE_MAX 1024

/* The fingerprints of the mounts of a mountinfo text that were not received from a peer
 * group, sorted: a GArray of guint64 (*ret), or -errno (-E2BIG: more than
 * MOUNTS_BASELINE_MAX). */
int mounts_baseline(const char *mountinfo, GArray **ret);
/* "a1b2...,c3d4..." and back (-EINVAL for anything else); the empty string is an empty set. */
char *mounts_baseline_to_string(const GArray *baseline);
int mounts_baseline_from_string(const char *s, GArray **ret);

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
