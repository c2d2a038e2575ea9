/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * userns.h: the kernel side of nsd. Creating per-user mount namespaces, pinning them inside
 * nsd's pin namespace (pinstore.h), releasing, reading a namespace's mount table; kernel
 * probes are probe.h's. No policy here (who may ask, limits, linger): that is server.c's. No
 * GLib main loop here: every call is synchronous and short (a fork or two).
 *
 * This header includes pinstore.h and probe.h, so the server needs only this one.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pinstore.h"
#include "probe.h"

struct UserNs {
        uid_t uid;
        int ns_fd;             /* nsfs descriptor: keeps the namespace alive */
        int root_fd;           /* O_PATH|O_DIRECTORY root of the namespace */
        uint64_t ns_inode;
        uint64_t created_usec; /* CLOCK_REALTIME */
        bool pinned;           /* a pin exists in the pin namespace */
        bool adopted;          /* found at start, not created by this process */
};

/* What a new namespace gets, from nsd.conf. */
typedef struct NsSetup {
        bool propagation_private; /* false: host mounts as slave (MS_SLAVE|MS_REC) */
        bool private_tmp;         /* a fresh tmpfs on /tmp, owned by nobody special (1777) */
} NsSetup;

/* Create uid's namespace from the initial namespace (nsd must run there), apply setup, and
 * pin it. When pinning is refused (a 6.18 host's mnt_ns_loop ordering, see DESIGN.md), the
 * namespace is still returned, alive by its descriptor, with pinned=false; the reason is
 * logged. ps may be NULL (no pin store): then nothing is pinned. */
int userns_create(PinStore *ps, uid_t uid, const NsSetup *setup, UserNs **ret);

/* Remove uid's pin (if any) and free ns (closing its descriptors). ns is freed whatever
 * this returns; a failed unpin is reported by the return value. The namespace dies when
 * the last process in it and the last descriptor of it are gone. */
int userns_release(PinStore *ps, UserNs *ns);
void userns_free(UserNs *ns);
/* An empty UserNs for uid (descriptors -1), for the pin store's adoption; NULL: no memory. */
UserNs *userns_new(uid_t uid);

/* The namespace's /proc/self/mountinfo as seen from inside it (read by a forked child that
 * setns()es into it), at most max bytes (-EFBIG past that). *ret is malloc()ed and
 * NUL-terminated. */
int userns_read_mountinfo(const UserNs *ns, size_t max, char **ret, size_t *ret_len);
/* Number of lines of that mountinfo, or -errno. */
int userns_count_mounts(const UserNs *ns);
