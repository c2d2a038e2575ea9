/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * userns.h: the kernel side of nsd. Creating per-user mount namespaces, pinning them inside
 * nsd's pin namespace, re-adopting pins at start, releasing, reading a namespace's mount
 * table, and probing kernel features. No policy here (who may ask, limits, linger): that is
 * server.c's. No GLib main loop here: every call is synchronous and short (a fork or two).
 *
 * Layout (DESIGN.md "Lifetime and restarts"):
 *   <run_dir>            e.g. /run/nsd, made a private bind mount of itself in the host
 *   <run_dir>/pins       a file; nsfs bind mount of the PIN NAMESPACE (the one host mount)
 *   inside the pin namespace, a private tmpfs on <run_dir> holds one file per user:
 *       <uid>            nsfs bind mount of that user's namespace
 *       <uid>.info       small text: created_usec=..., for re-adoption
 * The pin namespace is created before any user namespace, so it is older than all of them
 * (the kernel's mnt_ns_loop check requires that).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct PinStore PinStore;

typedef struct UserNs {
        uid_t uid;
        int ns_fd;             /* nsfs descriptor: keeps the namespace alive */
        int root_fd;           /* O_PATH|O_DIRECTORY root of the namespace */
        uint64_t ns_inode;
        uint64_t created_usec; /* CLOCK_REALTIME */
        bool pinned;           /* a pin exists in the pin namespace */
        bool adopted;          /* found at start, not created by this process */
} UserNs;

/* What a new namespace gets, from nsd.conf. */
typedef struct NsSetup {
        bool propagation_private; /* false: host mounts as slave (MS_SLAVE|MS_REC) */
        bool private_tmp;         /* a fresh tmpfs on /tmp, owned by nobody special (1777) */
} NsSetup;

/* Open the pin store under run_dir: adopt the existing pin namespace if run_dir/pins is one,
 * else create it (and make run_dir a private mount if it is not already one). When the pin
 * namespace cannot be had at all, returns an error; the caller may then run without pins. */
int pinstore_open(const char *run_dir, PinStore **ret);
void pinstore_free(PinStore *ps);
/* "/run/nsd/pins:1000"-style text naming where a uid's pin lives, for nsctl list. */
void pinstore_pin_name(const PinStore *ps, uid_t uid, char *buf, size_t size);

/* Call cb once per pinned user namespace found in the store (at start, after a restart or a
 * crash). The callback takes ownership of the UserNs (userns_free). Broken pins are logged
 * and skipped. Returns the number adopted or -errno. */
int pinstore_adopt_all(PinStore *ps, void (*cb)(UserNs *ns, void *userdata), void *userdata);

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

/* The namespace's /proc/self/mountinfo as seen from inside it (read by a forked child that
 * setns()es into it), at most max bytes (-EFBIG past that). *ret is malloc()ed and
 * NUL-terminated. */
int userns_read_mountinfo(const UserNs *ns, size_t max, char **ret, size_t *ret_len);
/* Number of lines of that mountinfo, or -errno. */
int userns_count_mounts(const UserNs *ns);

/* Probe the running kernel (NSD_FEATURE_* bits of nsd-protocol.h, never by version number):
 * F1 setns() on a directory fd, F2 /proc mounts following a chrooted root, F3 fspick check,
 * F4 owner-private mount attribute. Runs forked children in throwaway namespaces; changes
 * nothing outside them. */
uint32_t kernel_features_probe(void);
