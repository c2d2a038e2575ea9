/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * userns.h: the kernel side of nsd. Creating per-user mount namespaces, pinning them inside
 * nsd's pin namespace (pinstore.h), releasing, reading a namespace's mount table; kernel
 * probes are probe.h's. No policy here (who may ask, limits, linger): that is the domain's.
 * Every call is synchronous and short (a fork or two); the retries of what is pending run
 * later, on the GLib main loop (pending.h).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/nsd-forward.h"

struct UserNs {
        uid_t uid;
        int ns_fd;   /* nsfs descriptor: keeps the namespace alive */
        int root_fd; /* O_PATH|O_DIRECTORY root of the namespace */
        uint64_t ns_inode;
        uint64_t created_usec; /* CLOCK_REALTIME */
        bool pinned;           /* a pin exists in the pin namespace */
        bool adopted;          /* found at start, not created by this process */
};

/* What a new namespace gets from the kernel side, from nsd.conf (its contents, PrivateTmp=
 * included, are domain/setup.c's). */
typedef struct NsSetup {
        bool propagation_private; /* false: host mounts as slave (MS_SLAVE|MS_REC) */
} NsSetup;

/* Create uid's namespace from the initial namespace (nsd must run there), apply setup, and
 * pin it. ps may be NULL (no pin store): then nothing is pinned.
 *   0        *ret is the new namespace, pinned=true. When the kernel refuses the pin (a 6.18
 *            host's mnt_ns_loop ordering on every CPU, see DESIGN.md) or pinning fails for a
 *            reason that will not pass, it is still returned, alive by its descriptor, with
 *            pinned=false; the reason is logged.
 *   -EAGAIN  not now, retry later (the server answers JOIN with -NSD_ERRNO_NOT_YET): the pin
 *            store is not ready, uid is pending (pinstore_is_pending()), a pin of uid exists
 *            that nsd does not hold (uid becomes pending and pending.c adopts it: a fresh
 *            namespace never replaces a pinned one), or creating or pinning failed for a
 *            reason that may pass (errno_may_pass(); nothing is kept then).
 *   other    -errno of a failure that will not pass, logged. */
int userns_create(PinStore *ps, uid_t uid, const NsSetup *setup, UserNs **ret);

/* A namespace whose contents are set up before it is pinned (issue 22): the same as
 * userns_create(), but the new namespace is not pinned, only its pin file reserved
 * (pinstore_pin_begin(): an empty file, which a restart removes). Then, once it is set up,
 * userns_pin_created() pins it (0; 0 with pinned=false when the kernel refuses the pin or it
 * fails for a reason that will not pass: alive by descriptor only, logged; -EAGAIN for a
 * reason that may pass: nothing is pinned, the caller throws the namespace away), or, when
 * its setup failed, userns_abandon_created() gives up the reservation and frees it. A half
 * set-up namespace is never pinned, so a restart of nsd never finds it. */
int userns_create_unpinned(PinStore *ps, uid_t uid, const NsSetup *setup, UserNs **ret);
int userns_pin_created(PinStore *ps, UserNs *ns);
void userns_abandon_created(PinStore *ps, UserNs *ns);

/* Remove ns's pin, if it still pins this very namespace; ns stays as it is otherwise and
 * keeps the namespace alive while the caller holds it. 0: no pin left (ns->pinned false);
 * -errno: the pin is still there and ns unchanged (-EAGAIN: may pass; retry, or tell the
 * asker). The server calls this before forgetting a namespace it releases, so a release
 * that could not unpin is reported and changes nothing. */
int userns_unpin(PinStore *ps, UserNs *ns);
/* userns_unpin(), then free ns (closing its descriptors) whatever that returned. When the
 * unpin failed (returned), the pin stays and the store adopts its namespace again
 * (pinstore_is_pending() until then, and pending.c's adopt callback gets it back): a failed release
 * never loses the namespace, nor leaves a pin that blocks the uid. The namespace dies when the
 * last process in it and the last descriptor of it are gone. */
int userns_release(PinStore *ps, UserNs *ns);
void userns_free(UserNs *ns);
static inline void userns_freep(UserNs **ns) {
        userns_free(*ns);
}
/* Namespaces handed back by the service manager's fd store: for each i, a UserNs of uids[i]
 * for ns_fds[i] (taken then: set to -1) with its root opened from inside, adopted=true,
 * pinned=false, in ret[i]; or ret[i] NULL and errs[i] the errno (EINVAL: not a mount
 * namespace; one that may pass: try again later; ns_fds[i] stays the caller's). One helper
 * child for all. -errno when that child could not run (nothing taken). */
int userns_adopt_fds(const uid_t *uids, int *ns_fds, size_t n, UserNs **ret, int *errs);
/* Pin ns again (its pin was removed by hand, or refused when it was made): 0 and
 * ns->pinned true; 0 with ns->pinned false when the kernel refuses it, or pinning fails for
 * a reason that will not pass (logged: it stays alive by descriptor only); -EAGAIN not now
 * (the store is not ready, a pin of uid exists and will be adopted, or a passing error).
 * Never covers an existing pin. */
int userns_repin(PinStore *ps, UserNs *ns);
/* An empty UserNs for uid (descriptors -1), for the pin store's adoption; NULL: no memory. */
UserNs *userns_new(uid_t uid);

/* The namespace's /proc/self/mountinfo as seen from inside it (read by a forked child that
 * setns()es into it), at most max bytes (-EFBIG past that). *ret is malloc()ed and
 * NUL-terminated. */
int userns_read_mountinfo(const UserNs *ns, size_t max, char **ret, size_t *ret_len);
/* The same for any mount namespace's nsfs descriptor (whose: "the pin namespace", for
 * messages). */
int ns_read_mountinfo(int ns_fd, const char *whose, size_t max, char **ret, size_t *ret_len);
/* The same from a mountinfo descriptor already open (ns_open_mountinfo()'s), read from offset
 * 0 whatever was read before: 0, or -EFBIG (more than max bytes), -ENOMEM, -errno (not
 * logged). */
int ns_read_mountinfo_fd(int fd, size_t max, char **ret, size_t *ret_len);
/* /proc/self/mountinfo of a process inside the namespace ns_fd, opened for reading (a helper
 * child opens it there: the descriptor keeps that namespace's table, read it with pread from
 * 0, and poll() says POLLPRI when the table changed). The descriptor, or -errno (logged,
 * with whose). */
int ns_open_mountinfo(int ns_fd, const char *whose);
/* Number of lines of that mountinfo, or -errno. */
int userns_count_mounts(const UserNs *ns);
