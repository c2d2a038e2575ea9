/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kernel ABI that libc headers may not have: what our patch series (kernel-patches/) adds,
 * and the few upstream constants newer than the oldest headers we build with. Userspace
 * probes for each at run time; nothing here is assumed to exist. */
#pragma once

/* statx(2) attribute, Linux 5.8; the attributes mask says whether the kernel knows it */
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

/* F4: owner-private mounts (mount_setattr attribute; kernel-patches/README.md). Bit 31, away
 * from the bits upstream assigns next (0x00400000 is the likely next one) and below 32, so that
 * fsmount(2) (32-bit attr_flags) refuses it instead of dropping it; series v2 used bit 32. A
 * stock kernel rejects unknown MOUNT_ATTR_ bits with EINVAL, but acceptance alone proves
 * nothing: probe what it does (set it as one fsuid, check that another fsuid cannot see the
 * mount). */
#ifndef MOUNT_ATTR_OWNER_PRIVATE
#define MOUNT_ATTR_OWNER_PRIVATE 0x80000000ULL
#endif
/* F4b: the policy that makes a mount attached below a mount carrying it born owner-private
 * for the attaching task's real uid ('fs: let mounts be born owner-private'). Probed by what
 * it does, as F4. */
#ifndef MOUNT_ATTR_OWNER_PRIVATE_NEW
#define MOUNT_ATTR_OWNER_PRIVATE_NEW 0x40000000ULL
#endif
