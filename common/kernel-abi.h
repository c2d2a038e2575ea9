/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kernel ABI that our patch series (kernel-patches/) adds and libc headers do not have.
 * Userspace probes for each at run time; nothing here is assumed to exist. */
#pragma once

/* F4: owner-private mounts (mount_setattr attribute; kernel-patches/README.md). Bit 32, away
 * from the bits upstream assigns next (0x00400000 is the likely next one); a 64-bit constant:
 * struct mount_attr's attr_set is __u64. A stock kernel rejects unknown MOUNT_ATTR_ bits with
 * EINVAL, but acceptance alone proves nothing: probe what it does (set it as one fsuid, check
 * that another fsuid cannot see the mount). */
#ifndef MOUNT_ATTR_OWNER_PRIVATE
#define MOUNT_ATTR_OWNER_PRIVATE 0x100000000ULL
#endif
