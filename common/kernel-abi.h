/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kernel ABI that our patch series (kernel-patches/) adds and libc headers do not have.
 * Userspace probes for each at run time; nothing here is assumed to exist. */
#pragma once

/* F4: owner-private mounts (mount_setattr attribute). A stock kernel rejects unknown
 * MOUNT_ATTR_ bits with EINVAL, which is how support is detected. */
#ifndef MOUNT_ATTR_OWNER_PRIVATE
#define MOUNT_ATTR_OWNER_PRIVATE 0x00400000
#endif
