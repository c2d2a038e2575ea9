/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * volume-release.h: a namespace's block volumes unmounted by nsd before the namespace goes,
 * in the reverse order of their mounting, never lazily (issue 25, "released only when nothing
 * is left").
 *
 * A watched child (child.h, CHILD_SYSTEM, a deadline) enters the namespace and, for each
 * block volume the setup mounted (an image on a loop device, or a block device):
 *   1. finds its mount: Where= opened as root from / with no symbolic or magic link on the
 *      way, and taken only if that descriptor is the root of a mount of the volume's device
 *      (statx: the mount root flag and the device number of /dev/loopN or of Source=): a
 *      Where= the user renamed away or replaced is "not mounted there any more", never
 *      someone else's mount. An image whose loop device nsd did not record (its name could
 *      not be read when the volume was found mounted) is the loop device mounted on Where=
 *      if /sys names Source= as its backing file (the image's path is never walked); such a
 *      volume left in a staging directory is not looked for there;
 *   2. looks for holders, for all the volumes first: every process (any namespace) whose
 *      working directory, root, executable, open file or mapped file lies on that device.
 *      One holder refuses the whole release, before anything is unmounted: the report names
 *      up to VOLUME_RELEASE_HOLDERS_SHOWN of them per volume as "pid N (comm)";
 *   3. moves the mount by its descriptor (move_mount, MOVE_MOUNT_F_EMPTY_PATH: no path the
 *      user controls is resolved again) to a directory of its own under nsd's run directory
 *      (root's, in the namespace's copy of /run), and unmounts it there without MNT_DETACH.
 *      A mount busy all the same (a holder that came meanwhile) is moved back onto Where=
 *      and the release stops: its holders are named, the volumes after it are not tried;
 *      A child killed between the move and the unmount (nsd stopped, the deadline) leaves
 *      the volume mounted in its staging directory, out of the user's sight: the next
 *      release's child finds it there by its device and puts it back on Where= first. A
 *      staging directory is never removed by another child (it may be another namespace's
 *      mount point: an rmdir would detach that mount);
 *   4. for a loop device, waits a little for the kernel to clear it (LO_FLAGS_AUTOCLEAR)
 *      and says whether it did: a loop device still attached means the file system lives on
 *      elsewhere (a copy of the mount in another namespace).
 * The child allocates nothing (child.h): every string travels in VolumeRelease.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/child.h"
#include "base/nsd-forward.h"
#include "policy/setup-conf.h"

/* What the child did with one volume. */
typedef enum VolumeReleaseStep {
        VOLUME_RELEASE_NOT_TRIED = 0, /* not reached: an earlier volume stopped the release */
        VOLUME_RELEASE_UNMOUNTED,     /* unmounted (loop_cleared says what became of the loop) */
        VOLUME_RELEASE_NOT_MOUNTED,   /* Where= is not the root of a mount of its device now */
        VOLUME_RELEASE_BUSY,          /* holders (holders[]): nothing was unmounted for it */
        VOLUME_RELEASE_FAILED,        /* a call failed: step, err */
} VolumeReleaseStep;

/* Holders named per volume, at most. */
#define VOLUME_RELEASE_HOLDERS_SHOWN 4
#define VOLUME_RELEASE_HOLDERS_MAX 256 /* their text, with the NUL */

typedef struct VolumeReleaseItem {
        /* in: */
        char name[SETUP_NAME_MAX];
        char where[SETUP_PATH_MAX];  /* absolute, expanded */
        char source[SETUP_PATH_MAX]; /* a block device's path when loop is 0 */
        uint32_t loop;               /* /dev/loop<loop - 1>; 0: Source= is the device */
        /* out: */
        int32_t step;         /* VolumeReleaseStep */
        int32_t err;          /* errno of the call that failed (FAILED, BUSY), else 0 */
        int32_t failed_call;  /* VOLUME_RELEASE_CALL_* of that call */
        int32_t loop_cleared; /* 1: the loop device was cleared, 0: it stays, -1: n/a */
        uint32_t n_holders;   /* holders found (may be more than those named) */
        bool moved_back;      /* BUSY at the unmount: put back on Where= */
        bool recovered;       /* found in a staging directory an earlier child left (killed between
                         * its move and its unmount): put back on Where= first */
        char holders[VOLUME_RELEASE_HOLDERS_MAX]; /* "pid 42 (less), pid 7 (bash)" */
} VolumeReleaseItem;

/* Which call failed (FAILED). */
enum {
        VOLUME_RELEASE_CALL_NONE = 0,
        VOLUME_RELEASE_CALL_SETNS,
        VOLUME_RELEASE_CALL_DEVICE,  /* stat() of the loop device or Source= */
        VOLUME_RELEASE_CALL_OPEN,    /* opening Where= */
        VOLUME_RELEASE_CALL_STAGING, /* making the staging directory */
        VOLUME_RELEASE_CALL_MOVE,    /* move_mount() to the staging directory */
        VOLUME_RELEASE_CALL_UMOUNT,
        VOLUME_RELEASE_CALL_MOVE_BACK,
        VOLUME_RELEASE_CALL_PROC, /* opening /proc to look for holders */
};

typedef struct VolumeRelease {
        uint32_t n;
        int32_t err; /* the child's own failure (setns), with failed_call */
        int32_t failed_call;
        char run_dir[SETUP_PATH_MAX]; /* nsd's run directory: the staging directory's parent */
        VolumeReleaseItem items[SETUP_MAX_VOLUMES];
} VolumeRelease;

/* The report, in the loop: r as child.h's ChildDone (0: every volume unmounted or not
 * mounted; -EPROTO: see the items; -ETIMEDOUT ...), rel the child's copy (NULL when it sent
 * none: killed). */
typedef void (*VolumeReleaseDone)(int r, const VolumeRelease *rel, void *userdata);

/* The staging directories' names in the run directory: PREFIX<pid>.<monotonic ns>. */
#define VOLUME_RELEASE_STAGING_PREFIX ".volume-release."

/* How long the child may take. */
#define VOLUME_RELEASE_TIMEOUT_USEC (15ULL * 1000000ULL)

/* Start the child for uid's namespace ns_fd (kept open by the caller until done ran) with
 * rel's items filled in (the caller's; copied), as cls (child.h: CHILD_USER when the user
 * asked for its own release). 0: done runs later, once; -errno: it never will. */
int volume_release_start(Children *set, uid_t uid, ChildClass cls, int ns_fd,
                         const VolumeRelease *rel, VolumeReleaseDone done, void *userdata);

/* One line for the log and the client: why the release of item stopped (BUSY, FAILED), or
 * NULL for the other steps. g_malloc()ed. */
char *volume_release_why(const VolumeReleaseItem *item);
